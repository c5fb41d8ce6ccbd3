//! Fuzz the stored-format parsers and the importer: arbitrary UTF-8 through
//! `Credential::parse` and every `parse_as`, arbitrary bytes through `import`. Parsed
//! credentials cheap enough to verify are verified too, so the KDF crates see the
//! parameters our parsers let through (a parser that passes an invalid parameter would
//! panic there).
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_hash::{Cost, Credential, Format, Peppers, import};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let mut parsed = Vec::new();
        if let Ok(c) = Credential::parse(s) {
            parsed.push(c);
        }
        for f in Format::ALL {
            if let Ok(c) = Credential::parse_as(s, f) {
                parsed.push(c);
            }
        }
        for c in parsed {
            let _ = c.batch_key();
            let _ = c.algorithm();
            if c.cost() <= Cost::Work(200_000) {
                let _ = c.verify(b"password", &Peppers::new());
            }
        }
    }
    let report = import::import(data, None);
    assert!(report.accepted.len() + report.rejected.len() <= data.len() + 1);
});
