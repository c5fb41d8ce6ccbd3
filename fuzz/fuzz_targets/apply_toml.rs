//! Fuzz `portcullis apply`'s file parser (issue 27): any bytes as the declaring TOML
//! file, with references resolved against a directory that does not exist (so a file
//! reference fails as unreadable, never reads the machine's files). Every input is a
//! value or an error; an error never quotes the file's lines (a secret pasted where a
//! reference belongs must not reach a terminal or a CI log).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use portcullis_server::apply::Desired;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = Desired::parse(text, Path::new("/nonexistent/portcullis-fuzz")) {
        // A line of the input longer than any message fragment must not be echoed.
        let msg = e.to_string();
        for line in text.lines().filter(|l| l.len() >= 24 && l.contains("= \"")) {
            assert!(!msg.contains(line), "error quotes the input: {msg}");
        }
    }
});
