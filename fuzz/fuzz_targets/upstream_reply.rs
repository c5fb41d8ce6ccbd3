//! Fuzz what an upstream LDAP server sends back (issue 40): any bytes as the answer to a
//! bind and to a search. The client ends with an answer or an error, never a panic, and
//! never waits past its timeout.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    portcullis_upstream::fuzzing::server_reply(data);
});
