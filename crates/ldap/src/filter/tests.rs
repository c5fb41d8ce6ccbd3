//! Filters: RFC 4515 section 4's examples, RFC 4511 4.5.1.7's three-valued logic.

use super::*;
use crate::dn::Dn;

fn entry() -> Entry {
    Entry::new(Dn::parse("uid=alice,ou=people,dc=example,dc=com").unwrap_or_default())
        .with("objectClass", ["top", "inetOrgPerson", "posixAccount"])
        .with("uid", ["alice"])
        .with("cn", ["Alice  Liddell", "Ally"])
        .with("sn", ["Liddell"])
        .with("mail", ["Alice@Example.com"])
        .with("uidNumber", ["1000"])
        .with("homeDirectory", ["/home/alice"])
        .with("memberOf", ["cn=staff,ou=groups,dc=example,dc=com"])
        .with("entryUUID", ["597ae2f6-16a6-1027-98f4-d28b5365dc14"])
}

fn eval(text: &str) -> Tri {
    let filter = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    check(&filter, &Limits::default())
        .map(|c| c.evaluate(&entry()))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn rfc4515_section4_examples_parse() {
    let ext = |rule: Option<&str>, t: Option<&str>, v: &str, dn: bool| {
        LdapFilter::Extensible(LdapMatchingRuleAssertion {
            matching_rule: rule.map(Into::into),
            type_: t.map(Into::into),
            match_value: v.into(),
            dn_attributes: dn,
        })
    };
    let eq = |a: &str, v: &str| LdapFilter::Equality(a.into(), v.into());
    let sub = |a: &str, i: Option<&str>, any: &[&str], f: Option<&str>| {
        let any = any.iter().map(|s| s.to_string()).collect();
        LdapFilter::Substring(
            a.into(),
            LdapSubstringFilter {
                initial: i.map(Into::into),
                any,
                final_: f.map(Into::into),
            },
        )
    };
    let cases = [
        ("(cn=Babs Jensen)", eq("cn", "Babs Jensen")),
        (
            "(!(cn=Tim Howes))",
            LdapFilter::Not(Box::new(eq("cn", "Tim Howes"))),
        ),
        (
            "(&(objectClass=Person)(|(sn=Jensen)(cn=Babs J*)))",
            LdapFilter::And(vec![
                eq("objectClass", "Person"),
                LdapFilter::Or(vec![
                    eq("sn", "Jensen"),
                    sub("cn", Some("Babs J"), &[], None),
                ]),
            ]),
        ),
        (
            "(o=univ*of*mich*)",
            sub("o", Some("univ"), &["of", "mich"], None),
        ),
        ("(seeAlso=)", eq("seeAlso", "")),
        (
            "(cn:caseExactMatch:=Fred Flintstone)",
            ext(Some("caseExactMatch"), Some("cn"), "Fred Flintstone", false),
        ),
        (
            "(cn:=Betty Rubble)",
            ext(None, Some("cn"), "Betty Rubble", false),
        ),
        (
            "(sn:dn:2.4.6.8.10:=Barney Rubble)",
            ext(Some("2.4.6.8.10"), Some("sn"), "Barney Rubble", true),
        ),
        (
            "(o:dn:=Ace Industry)",
            ext(None, Some("o"), "Ace Industry", true),
        ),
        (
            "(:1.2.3:=Wilma Flintstone)",
            ext(Some("1.2.3"), None, "Wilma Flintstone", false),
        ),
        (
            "(:DN:2.4.6.8.10:=Dino)",
            ext(Some("2.4.6.8.10"), None, "Dino", true),
        ),
        (
            "(o=Parens R Us \\28for all your parenthetical needs\\29)",
            eq("o", "Parens R Us (for all your parenthetical needs)"),
        ),
        ("(cn=*\\2A*)", sub("cn", None, &["*"], None)),
        ("(filename=C:\\5cMyFile)", eq("filename", "C:\\MyFile")),
        ("(sn=Lu\\c4\\8di\\c4\\87)", eq("sn", "Lu\u{10d}i\u{107}")),
        (
            "(1.3.6.1.4.1.1466.0=\\04\\02\\48\\69)",
            eq("1.3.6.1.4.1.1466.0", "\u{4}\u{2}Hi"),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse(text).as_ref(), Ok(&expected), "{text}");
        // Printing gives a string that reads back as the same filter.
        assert_eq!(parse(&to_string(&expected)), Ok(expected), "{text}");
    }
}

/// Why this crate has its own string parser: ldap3_proto's reads RFC 4515's examples
/// differently (no `\XX` escapes, spaces trimmed, OID attributes refused).
#[test]
fn ldap3_protos_string_parser_is_not_rfc4515() {
    let theirs = |s: &str| ldap3_proto::parse_ldap_filter_str(s).ok();
    assert_ne!(
        theirs("(filename=C:\\5cMyFile)"),
        parse("(filename=C:\\5cMyFile)").ok()
    );
    assert_eq!(theirs("(1.3.6.1.4.1.1466.0=\\04\\02\\48\\69)"), None);
    assert_ne!(theirs("(cn= padded )"), parse("(cn= padded )").ok());
}

#[test]
fn malformed_filters_are_refused() {
    for bad in [
        "",
        "(",
        "()",
        "(cn=a",
        "cn=a)",
        "(cn=a))",
        "(cn=a\\2)",
        "(cn=a\\zz)",
        "(cn=(x))",
        "(!(a=b)(c=d))",
        "(&(a=b)",
        "(=a)",
        "(1cn=a)",
        "(cn>=a*)",
        "(cn~=*)",
        "(cn:=a*b)",
        "(:=a)",
        "(cn:dn:x:y:=a)",
        "(cn=\\ff)",
        "(cn;=a)",
        "(cn=a)(cn=b)",
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn lenient_forms_for_configuration() {
    assert_eq!(parse("uid=alice"), parse("(uid=alice)"));
    assert_eq!(parse(" (& (a=b)\n  (c=d) ) "), parse("(&(a=b)(c=d))"));
    assert_eq!(parse("(&)"), Ok(LdapFilter::And(vec![])));
    assert_eq!(eval("(&)"), Tri::True);
    assert_eq!(eval("(|)"), Tri::False);
}

#[test]
fn nesting_is_bounded_when_parsing_and_checking() {
    let deep = format!("{}(a=b){}", "(!".repeat(40), ")".repeat(40));
    assert!(parse(&deep).is_err());
    let limits = Limits {
        max_depth: 64,
        max_nodes: 1024,
    };
    let Ok(filter) = string::parse_with(&deep, &limits) else {
        panic!()
    };
    assert_eq!(
        check(&filter, &Limits::default()).err(),
        Some(FilterError::TooDeep(32))
    );
    let wide = LdapFilter::Or(
        (0..2000)
            .map(|_| LdapFilter::Present("cn".into()))
            .collect(),
    );
    assert_eq!(
        check(&wide, &Limits::default()).err(),
        Some(FilterError::TooLarge(1024))
    );
}

#[test]
fn escaping_follows_rfc4515_section_3() {
    assert_eq!(escape_value("a*b(c)d\\e\0"), "a\\2ab\\28c\\29d\\5ce\\00");
    assert_eq!(escape_value("Lučić"), "Lučić");
    let f = filter_template("(&(objectClass=person)(uid={user}))", "*)(uid=*")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f,
        LdapFilter::And(vec![
            LdapFilter::Equality("objectClass".into(), "person".into()),
            LdapFilter::Equality("uid".into(), "*)(uid=*".into()),
        ])
    );
    assert!(filter_template("(uid=x)", "a").is_err());
}

#[test]
fn items_follow_each_attributes_rules() {
    assert_eq!(eval("(uid=ALICE)"), Tri::True);
    assert_eq!(eval("(cn=alice liddell)"), Tri::True);
    assert_eq!(eval("(cn~=ally)"), Tri::True);
    assert_eq!(eval("(mail=alice@example.COM)"), Tri::True);
    assert_eq!(eval("(homeDirectory=/HOME/alice)"), Tri::False);
    assert_eq!(eval("(objectClass=PosixAccount)"), Tri::True);
    assert_eq!(eval("(objectClass=1.3.6.1.1.1.2.0)"), Tri::True);
    assert_eq!(
        eval("(memberOf=CN=Staff,OU=Groups,DC=Example,DC=Com)"),
        Tri::True
    );
    assert_eq!(
        eval("(entryUUID=597AE2F6-16A6-1027-98F4-D28B5365DC14)"),
        Tri::True
    );
    assert_eq!(eval("(uidNumber=1000)"), Tri::True);
    assert_eq!(eval("(uidNumber>=999)"), Tri::True);
    assert_eq!(eval("(uidNumber>=1001)"), Tri::False);
    assert_eq!(eval("(uidNumber<=1000)"), Tri::True);
    assert_eq!(eval("(uidNumber<=99)"), Tri::False);
    assert_eq!(eval("(sn=*)"), Tri::True);
    assert_eq!(eval("(givenName=*)"), Tri::False);
    assert_eq!(
        eval("(unknownAttr=x)"),
        Tri::False,
        "unknown types match as caseIgnore"
    );
}

#[test]
fn substrings_use_prepared_values() {
    assert_eq!(eval("(cn=ali*)"), Tri::True);
    assert_eq!(eval("(cn=*LIDDELL)"), Tri::True);
    assert_eq!(
        eval("(cn=*ce l*)"),
        Tri::True,
        "inner double space is insignificant"
    );
    assert_eq!(eval("(cn=al*ce*dd*ll)"), Tri::True);
    assert_eq!(eval("(cn=al*dd*ce)"), Tri::False);
    assert_eq!(eval("(cn=lid*)"), Tri::False);
    assert_eq!(eval("(mail=*@example.com)"), Tri::True);
    assert_eq!(
        eval("(uidNumber=10*)"),
        Tri::Undefined,
        "integer has no substrings rule"
    );
}

#[test]
fn undefined_items_and_three_valued_logic() {
    // Invalid assertions and missing rules are Undefined (RFC 4511 4.5.1.7).
    assert_eq!(eval("(uidNumber=abc)"), Tri::Undefined);
    assert_eq!(eval("(uidNumber>=abc)"), Tri::Undefined);
    assert_eq!(eval("(mail=ä@example.com)"), Tri::Undefined);
    assert_eq!(eval("(cn>=a)"), Tri::Undefined, "cn has no ordering rule");
    assert_eq!(eval("(vendorName=x)"), Tri::Undefined);
    // NOT of Undefined is Undefined: the entry is not returned either way.
    assert_eq!(eval("(!(uidNumber=abc))"), Tri::Undefined);
    assert_eq!(eval("(&(uid=alice)(uidNumber=abc))"), Tri::Undefined);
    assert_eq!(eval("(&(uid=bob)(uidNumber=abc))"), Tri::False);
    assert_eq!(eval("(|(uid=alice)(uidNumber=abc))"), Tri::True);
    assert_eq!(eval("(|(uid=bob)(uidNumber=abc))"), Tri::Undefined);
    assert_eq!(eval("(!(uid=bob))"), Tri::True);
}

#[test]
fn extensible_matches_only_when_trivially_supported() {
    assert_eq!(eval("(cn:=ally)"), Tri::True);
    assert_eq!(eval("(cn:caseExactMatch:=ally)"), Tri::False);
    assert_eq!(eval("(cn:2.5.13.5:=Ally)"), Tri::True);
    assert_eq!(eval("(uidNumber:integerMatch:=1000)"), Tri::True);
    assert_eq!(eval("(uid:dn:=alice)"), Tri::Undefined);
    assert_eq!(eval("(:caseIgnoreMatch:=alice)"), Tri::Undefined);
    assert_eq!(
        eval("(uidNumber:1.2.840.113556.1.4.803:=2)"),
        Tri::Undefined
    );
}
