//! Fuzz the configuration file (`portcullis serve --config`, issue 15): any text through
//! TOML parsing and validation into the typed configuration, RADIUS, audit and log
//! sections included. A bad file is an error naming the problem, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = portcullis_server::Config::parse(text);
    }
});
