//! Fuzz what the lab's LDAP driver reads from a server (issue 39): any octets through the
//! response decoder (BER framing with size and depth limits, then LDAPv3 messages), and any
//! text through the filter templates a scenario names with a user name filled in. A bad
//! response is an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = portcullis_lab::ldap::wire::decode_all(data);
    if data.first() == Some(&b'(')
        && let Ok(text) = std::str::from_utf8(data)
        && let Ok(f) = portcullis_lab::ldap::parse_filter(text)
    {
        let _ = portcullis_lab::ldap::fill_filter(&f, "user1)(uid=*", "uid=user1,dc=x");
    }
});
