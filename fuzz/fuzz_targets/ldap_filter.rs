//! Fuzz the RFC 4515 filter parser and the filter evaluator (issue 39): a configured or
//! hostile filter string parsed, bounded, evaluated against a fixed entry, printed and
//! parsed again; and the same text as an RFC 4514 DN. Any panic is a bug; so is a printed
//! filter or DN that does not read back as the same one, or an evaluation that changes when
//! the filter is printed and read back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_ldap::filter::{self, Limits};
use portcullis_ldap::{Dn, Entry};
use std::sync::OnceLock;

fn entry() -> &'static Entry {
    static ENTRY: OnceLock<Entry> = OnceLock::new();
    ENTRY.get_or_init(|| {
        let dn = Dn::parse("uid=alice,ou=people,dc=example,dc=com").unwrap_or_default();
        Entry::new(dn)
            .with("objectClass", ["top", "inetOrgPerson", "posixAccount"])
            .with("uid", ["alice"])
            .with("cn", ["Alice  Liddell", "Ally"])
            .with("mail", ["alice@example.com"])
            .with("uidNumber", ["1000"])
            .with("memberUid", ["alice"])
            .with("member", ["uid=bob,ou=people,dc=example,dc=com"])
            .with("entryUUID", ["597ae2f6-16a6-1027-98f4-d28b5365dc14"])
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The same text as a DN: printing it gives a DN that parses back equal.
    if let Ok(dn) = Dn::parse(text) {
        let printed = dn.to_string();
        let again =
            Dn::parse(&printed).unwrap_or_else(|e| panic!("{printed:?} does not read back: {e}"));
        assert_eq!(again, dn, "{printed:?}");
        assert_eq!(again.normalized(), dn.normalized());
    }
    let Ok(parsed) = filter::parse(text) else {
        return;
    };
    let Ok(checked) = filter::check(&parsed, &Limits::default()) else {
        return;
    };
    let value = checked.evaluate(entry());
    let printed = filter::to_string(&parsed);
    let again =
        filter::parse(&printed).unwrap_or_else(|e| panic!("{printed:?} does not read back: {e}"));
    assert_eq!(again, parsed, "{printed:?}");
    let checked_again = filter::check(&again, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(checked_again.evaluate(entry()), value);
});
