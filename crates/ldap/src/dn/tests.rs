//! DNs against RFC 4514's examples (section 4) and escaping rules (section 2.4).

use super::*;

fn dn(s: &str) -> Dn {
    Dn::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn values(d: &Dn) -> Vec<Vec<(String, String)>> {
    d.rdns
        .iter()
        .map(|r| {
            r.avas
                .iter()
                .map(|a| (a.attribute.clone(), a.value.clone()))
                .collect()
        })
        .collect()
}

fn pair(a: &str, v: &str) -> (String, String) {
    (a.to_owned(), v.to_owned())
}

#[test]
fn rfc4514_section4_examples() {
    assert_eq!(
        values(&dn("UID=jsmith,DC=example,DC=net")),
        [
            vec![pair("uid", "jsmith")],
            vec![pair("dc", "example")],
            vec![pair("dc", "net")]
        ]
    );
    let multi = dn("OU=Sales+CN=J.  Smith,DC=example,DC=net");
    assert_eq!(
        values(&multi)[0],
        [pair("ou", "Sales"), pair("cn", "J.  Smith")]
    );
    let quoted = dn(r#"CN=James \"Jim\" Smith\, III,DC=example,DC=net"#);
    assert_eq!(
        values(&quoted)[0],
        [pair("cn", r#"James "Jim" Smith, III"#)]
    );
    assert_eq!(
        values(&dn(r"CN=Before\0dAfter,DC=example,DC=net"))[0],
        [pair("cn", "Before\rAfter")]
    );
    assert_eq!(
        values(&dn("1.3.6.1.4.1.1466.0=#04024869,DC=example,DC=com"))[0],
        [pair("1.3.6.1.4.1.1466.0", "Hi")]
    );
    assert_eq!(
        values(&dn(r"CN=Lu\C4\8Di\C4\87"))[0],
        [pair("cn", "Lu\u{10d}i\u{107}")]
    );
}

#[test]
fn the_root_and_spaces_around_separators() {
    assert!(dn("").is_root());
    assert!(dn("  ").is_root());
    let spaced = dn("uid = alice , ou=people,  dc=example ,dc=com");
    assert_eq!(spaced, dn("uid=alice,ou=people,dc=example,dc=com"));
    assert_eq!(values(&spaced)[0], [pair("uid", "alice")]);
    // An escaped space at either end is part of the value.
    assert_eq!(values(&dn(r"cn=\ a b\ ,dc=x"))[0], [pair("cn", " a b ")]);
}

#[test]
fn malformed_dns_are_refused() {
    for bad in [
        "uid",
        "uid=a,",
        "=a",
        "uid=a,,dc=x",
        "1uid=a",
        "uid=a\\",
        "uid=a\\zz",
        "uid=a\"b",
        "cn=#zz",
        "cn=#0402486",
        "uid=\\ff",
    ] {
        assert!(Dn::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn equality_follows_each_attributes_matching_rule() {
    let a = dn("uid=Alice,ou=People,dc=Example,dc=COM");
    assert_eq!(a, dn("UID=alice,OU=people,DC=example,DC=com"));
    assert_eq!(
        a,
        dn("0.9.2342.19200300.100.1.1=alice,ou=people,dc=example,dc=com")
    );
    assert_eq!(a, dn("userid=  alice ,ou=people,dc=example,dc=com"));
    assert_ne!(a, dn("uid=alice2,ou=people,dc=example,dc=com"));
    // The AVAs of a multi-valued RDN in either order; inner spaces collapse under caseIgnore.
    assert_eq!(
        dn("cn=J.  Smith+ou=Sales,dc=x"),
        dn("OU=sales+CN=j. smith,DC=X")
    );
    // uidNumber is integerMatch: RDN values compare as numbers are written canonically.
    assert_eq!(dn("uidNumber=1000,dc=x"), dn("UIDNUMBER=1000,dc=x"));
    assert_eq!(dn("cn=a\\2cb,dc=x"), dn("cn=a\\,b,dc=x"));
    assert_eq!(
        dn("cn=a\\2cb,dc=x").normalized(),
        dn("CN=A\\,B,DC=X").normalized()
    );
    // OpenLDAP's normalised form: lower-case names, values folded, single spaces.
    let n = dn("CN=Alice  Liddell, OU=People,DC=Example,DC=COM").normalized();
    assert_eq!(n, "cn=alice liddell,ou=people,dc=example,dc=com");
}

#[test]
fn scopes_follow_rfc4511_section_4_5_1_2() {
    let base = dn("ou=people,dc=example,dc=com");
    let child = dn("uid=alice,ou=people,dc=example,dc=com");
    let grandchild = dn("cn=x,uid=alice,ou=people,dc=example,dc=com");
    let elsewhere = dn("uid=alice,ou=groups,dc=example,dc=com");
    let cases = [
        (LdapSearchScope::Base, [true, false, false, false]),
        (LdapSearchScope::OneLevel, [false, true, false, false]),
        (LdapSearchScope::Subtree, [true, true, true, false]),
        (LdapSearchScope::Children, [false, true, true, false]),
    ];
    for (scope, expected) in cases {
        let got = [&base, &child, &grandchild, &elsewhere].map(|d| d.is_within(&base, &scope));
        assert_eq!(got, expected, "{scope:?}");
    }
    assert!(child.is_within(&Dn::root(), &LdapSearchScope::Subtree));
    assert!(!base.is_within(&child, &LdapSearchScope::Subtree));
    assert!(
        dn("UID=ALICE,OU=People,DC=Example,DC=com").is_within(&base, &LdapSearchScope::OneLevel)
    );
}

#[test]
fn escaping_follows_rfc4514_section_2_4() {
    assert_eq!(
        escape_value(r#"a"b+c,d;e<f>g\h"#),
        r#"a\"b\+c\,d\;e\<f\>g\\h"#
    );
    assert_eq!(escape_value("#lead"), r"\#lead");
    assert_eq!(escape_value("in#side"), "in#side");
    assert_eq!(escape_value(" both "), r"\ both\ ");
    assert_eq!(escape_value("nul\0"), r"nul\00");
    assert_eq!(escape_value("Lučić"), "Lučić");
}

#[test]
fn templates_keep_hostile_names_inside_one_value() {
    let t = "uid={user},ou=people,dc=example,dc=com";
    let d = from_template(t, "alice,ou=admins").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.rdns.len(), 4);
    assert_eq!(values(&d)[0], [pair("uid", "alice,ou=admins")]);
    for hostile in ["a+cn=x", " #x ", "a\\", "x=y", "a\"b", "\0"] {
        let d = from_template(t, hostile).unwrap_or_else(|e| panic!("{hostile:?}: {e}"));
        assert_eq!(values(&d)[0], [pair("uid", hostile)], "{hostile:?}");
    }
    assert_eq!(
        from_template("uid=x,dc=y", "a"),
        Err(DnError::NoPlaceholder)
    );
}

#[test]
fn display_escapes_and_parses_back_to_an_equal_dn() {
    let d = dn(r#"CN=James \"Jim\" Smith\, III+ou=\#x,DC=example,DC=net"#);
    assert_eq!(
        d.to_string(),
        r#"cn=James \"Jim\" Smith\, III+ou=\#x,dc=example,dc=net"#
    );
    assert_eq!(dn(&d.to_string()), d);
    assert_eq!(d.parent(), dn("dc=example,dc=net"));
}
