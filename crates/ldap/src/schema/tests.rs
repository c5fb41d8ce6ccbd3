//! Matching rules against the syntaxes of RFC 4517 and RFC 4530 and the registry's names.

use super::*;

#[test]
fn types_are_found_by_any_name_in_any_case_or_oid() {
    for name in [
        "cn",
        "CN",
        "commonName",
        "2.5.4.3",
        "cn;lang-en",
        "OID.2.5.4.3",
    ] {
        assert_eq!(lookup(name).map(|t| t.name()), Some("cn"), "{name}");
    }
    assert_eq!(lookup("rfc822mailbox").map(|t| t.name()), Some("mail"));
    assert!(lookup("nosuchattribute").is_none());
    assert_eq!(
        attribute_type("nosuchattribute").equality,
        Some(Equality::CaseIgnore)
    );
    assert_eq!(canonical_key("GivenName;Lang-EN"), "givenname;lang-en");
    assert_eq!(canonical_key("2.5.4.42"), "givenname");
}

#[test]
fn each_attribute_has_the_rules_its_rfc_gives() {
    let rule = |n: &str| attribute_type(n).equality;
    assert_eq!(rule("uid"), Some(Equality::CaseIgnore)); // RFC 4519 2.39
    assert_eq!(rule("mail"), Some(Equality::CaseIgnoreIa5)); // RFC 4524 2.16
    assert_eq!(rule("memberUid"), Some(Equality::CaseExactIa5)); // RFC 2307
    assert_eq!(rule("homeDirectory"), Some(Equality::CaseExactIa5));
    assert_eq!(rule("uidNumber"), Some(Equality::Integer));
    assert_eq!(
        attribute_type("gidNumber").ordering,
        Some(Ordering::Integer)
    );
    assert_eq!(rule("member"), Some(Equality::DistinguishedName));
    assert_eq!(rule("entryUUID"), Some(Equality::Uuid)); // RFC 4530
    assert_eq!(rule("objectClass"), Some(Equality::ObjectIdentifier));
    assert_eq!(rule("vendorName"), None); // RFC 3045: no equality rule
    assert_eq!(attribute_type("memberOf").usage, Usage::Operational);
    assert_eq!(attribute_type("cn").usage, Usage::User);
}

#[test]
fn integer_syntax_of_rfc4517_3_3_16() {
    for good in ["0", "1000", "-1", "123456789012345678901234567890"] {
        assert!(parse_integer(good).is_some(), "{good}");
    }
    for bad in ["", "-", "-0", "007", "+5", " 5", "5 ", "1e3", "0x10"] {
        assert!(parse_integer(bad).is_none(), "{bad}");
    }
    let cmp = |a: &str, b: &str| Ordering::Integer.compare(a, b);
    assert_eq!(cmp("999", "1000"), Some(std::cmp::Ordering::Less));
    assert_eq!(cmp("-1000", "-999"), Some(std::cmp::Ordering::Less));
    assert_eq!(cmp("-1", "0"), Some(std::cmp::Ordering::Less));
    assert_eq!(
        cmp(
            "123456789012345678901234567891",
            "123456789012345678901234567890"
        ),
        Some(std::cmp::Ordering::Greater)
    );
    assert_eq!(cmp("12", "x"), None);
}

#[test]
fn uuid_syntax_of_rfc4530() {
    // RFC 4530 section 2.1's example.
    let uuid = "597ae2f6-16a6-1027-98f4-d28b5365dc14";
    assert_eq!(
        Equality::Uuid.matches(&uuid.to_uppercase(), [uuid]),
        Some(true)
    );
    assert_eq!(
        Equality::Uuid.matches("597ae2f616a6102798f4d28b5365dc14", [uuid]),
        None
    );
    assert_eq!(
        Equality::Uuid.matches("597ae2f6-16a6-1027-98f4-d28b5365dc15", [uuid]),
        Some(false)
    );
}

#[test]
fn case_rules_and_ia5() {
    assert_eq!(
        Equality::CaseIgnore.matches("  ALICE   liddell ", ["Alice Liddell"]),
        Some(true)
    );
    assert_eq!(
        Equality::CaseExact.matches("alice liddell", ["Alice Liddell"]),
        Some(false)
    );
    assert_eq!(
        Equality::CaseExact.matches(" Alice  Liddell", ["Alice Liddell"]),
        Some(true)
    );
    assert_eq!(
        Equality::CaseIgnoreIa5.matches("ALICE@EXAMPLE.COM", ["alice@example.com"]),
        Some(true)
    );
    // A non-IA5 assertion is invalid for the IA5 rules: Undefined.
    assert_eq!(
        Equality::CaseIgnoreIa5.matches("ä@example.com", ["a@example.com"]),
        None
    );
    assert_eq!(Equality::CaseIgnore.matches("ÄRGER", ["ärger"]), Some(true));
}

#[test]
fn object_identifiers_match_by_descriptor_or_oid() {
    let classes = ["top", "inetOrgPerson"];
    assert_eq!(
        Equality::ObjectIdentifier.matches("INETORGPERSON", classes),
        Some(true)
    );
    assert_eq!(
        Equality::ObjectIdentifier.matches("2.16.840.1.113730.3.2.2", classes),
        Some(true)
    );
    assert_eq!(
        Equality::ObjectIdentifier.matches("person", classes),
        Some(false)
    );
    assert_eq!(
        Equality::ObjectIdentifier.matches("not an oid", classes),
        None
    );
    assert!(
        is_numeric_oid("1.3.6.1")
            && !is_numeric_oid("1.03")
            && !is_numeric_oid("1")
            && !is_numeric_oid("1..2")
    );
}

#[test]
fn dn_values_match_as_dns() {
    let members = ["uid=alice,ou=people,dc=example,dc=com"];
    assert_eq!(
        Equality::DistinguishedName.matches("UID=Alice, OU=People, DC=example, DC=com", members),
        Some(true)
    );
    assert_eq!(
        Equality::DistinguishedName.matches("uid=bob,ou=people,dc=example,dc=com", members),
        Some(false)
    );
    assert_eq!(
        Equality::DistinguishedName.matches("not a dn", members),
        None
    );
    assert_eq!(
        Equality::from_rule_id("2.5.13.1"),
        Some(Equality::DistinguishedName)
    );
    assert_eq!(
        Equality::from_rule_id("caseExactMatch"),
        Some(Equality::CaseExact)
    );
    assert_eq!(Equality::from_rule_id("1.2.840.113556.1.4.803"), None);
}
