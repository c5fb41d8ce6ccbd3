//! Fuzz the load lab's scenario files (`portcullis lab run FILE`, issue 15): any text
//! through parsing and validation (durations, address ranges, groups, thresholds). A bad
//! file is an error naming the problem, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = portcullis_lab::Scenario::parse(text, None);
    }
});
