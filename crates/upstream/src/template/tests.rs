use super::*;

// RFC 4514 section 4: `CN=James \"Jim\" Smith\, III,DC=example,DC=net`.
#[test]
fn dn_value_escaping_matches_rfc_4514_example() {
    let t = DnTemplate::new("CN={user},DC=example,DC=net").unwrap();
    assert_eq!(
        t.render("James \"Jim\" Smith, III"),
        r#"CN=James \"Jim\" Smith\, III,DC=example,DC=net"#
    );
}

// RFC 4514 section 2.4: leading '#' and space, trailing space, the special characters.
#[test]
fn dn_value_escaping_covers_every_special_character() {
    assert_eq!(escape_dn_value("#a b "), r"\#a b\ ");
    assert_eq!(escape_dn_value(" x"), r"\ x");
    assert_eq!(escape_dn_value("a+b;c<d>e\\f"), r"a\+b\;c\<d\>e\\f");
    assert_eq!(escape_dn_value("a\0b"), r"a\00b");
    // A name that tries to move the DN to another subtree stays one RDN value.
    let t = DnTemplate::new("uid={user},ou=people,dc=example,dc=org").unwrap();
    assert_eq!(
        t.render("admin,ou=services"),
        r"uid=admin\,ou=services,ou=people,dc=example,dc=org"
    );
}

// RFC 4515 section 4 examples.
#[test]
fn filter_value_escaping_matches_rfc_4515_examples() {
    let t = FilterTemplate::new("(o={user})").unwrap();
    assert_eq!(
        t.render_text("Parens R Us (for all your parenthetical needs)"),
        r"(o=Parens R Us \28for all your parenthetical needs\29)"
    );
    let t = FilterTemplate::new("(filename={user})").unwrap();
    assert_eq!(t.render_text(r"C:\MyFile"), r"(filename=C:\5cMyFile)");
    assert_eq!(escape_filter_value("*"), r"\2a");
    assert_eq!(escape_filter_value("\0"), r"\00");
}

#[test]
fn filter_substitution_keeps_the_structure() {
    let t = FilterTemplate::new("(&(objectClass=person)(uid={user}))").unwrap();
    // A name full of filter syntax is one equality value, never a wildcard or a new term.
    assert_eq!(
        t.render("*)(uid=*"),
        LdapFilter::And(vec![
            LdapFilter::Equality("objectClass".into(), "person".into()),
            LdapFilter::Equality("uid".into(), "*)(uid=*".into()),
        ])
    );
    // The Active Directory forms.
    let upn = FilterTemplate::new("(userPrincipalName={user}@example.com)").unwrap();
    assert_eq!(
        upn.render("jo"),
        LdapFilter::Equality("userPrincipalName".into(), "jo@example.com".into())
    );
    let sam = FilterTemplate::new("(&(objectCategory=person)(sAMAccountName={user}))").unwrap();
    assert_eq!(
        sam.render("jo"),
        LdapFilter::And(vec![
            LdapFilter::Equality("objectCategory".into(), "person".into()),
            LdapFilter::Equality("sAMAccountName".into(), "jo".into()),
        ])
    );
}

#[test]
fn bad_templates_are_refused_with_the_reason() {
    assert_eq!(
        DnTemplate::new("uid=x,dc=org"),
        Err(TemplateError::NoPlaceholder("uid=x,dc=org".into()))
    );
    assert!(matches!(
        FilterTemplate::new("(uid={user}"),
        Err(TemplateError::BadFilter { .. })
    ));
    assert!(matches!(
        FilterTemplate::new("(cn=a\\2a)(uid={user})"),
        Err(TemplateError::Backslash(_))
    ));
    assert!(matches!(
        FilterTemplate::new("(uid=*)"),
        Err(TemplateError::NoPlaceholder(_))
    ));
}
