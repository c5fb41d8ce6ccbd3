use super::*;
use crate::directory::tests::sample;
use portcullis_ldap::proto::proto::{LdapDerefAliases, LdapOp};

fn request(base: &str, scope: LdapSearchScope, filter: &str, attrs: &[&str]) -> LdapSearchRequest {
    LdapSearchRequest {
        base: base.to_owned(),
        scope,
        aliases: LdapDerefAliases::Never,
        sizelimit: 0,
        timelimit: 0,
        typesonly: false,
        filter: filter::parse(filter).unwrap_or_else(|e| panic!("{filter}: {e}")),
        attrs: attrs.iter().map(|a| a.to_string()).collect(),
    }
}

const BASE: &str = "dc=example,dc=com";

fn base() -> Dn {
    Dn::parse(BASE).unwrap_or_default()
}

fn everything(base: &Dn) -> Scope<'_> {
    Scope {
        subtree: base,
        attributes: None,
    }
}

/// The DNs of the entries, and the result code with the paged cookie if any.
fn entries(answer: &Answer) -> Vec<String> {
    answer
        .replies
        .iter()
        .filter_map(|m| match &m.op {
            LdapOp::SearchResultEntry(e) => Some(e.dn.clone()),
            _ => None,
        })
        .collect()
}

fn cookie(answer: &Answer) -> Option<Vec<u8>> {
    answer.replies.last().and_then(|m| {
        m.ctrl.iter().find_map(|c| match c {
            LdapControl::SimplePagedResults { cookie, .. } => Some(cookie.clone()),
            _ => None,
        })
    })
}

#[test]
fn scopes_select_the_base_its_children_or_the_subtree() {
    let (_, dir) = sample();
    let b = base();
    let run = |base: &str, scope| {
        let req = request(base, scope, "(objectClass=*)", &["1.1"]);
        entries(&search(1, &req, &[], &dir, &everything(&b), 100))
    };
    assert_eq!(run(BASE, LdapSearchScope::Base), [BASE]);
    assert_eq!(run(BASE, LdapSearchScope::OneLevel).len(), 3);
    assert_eq!(run(BASE, LdapSearchScope::Subtree).len(), dir.len());
    assert_eq!(
        run("ou=people,dc=example,dc=com", LdapSearchScope::OneLevel).len(),
        2
    );
    let missing = request(
        "ou=nope,dc=example,dc=com",
        LdapSearchScope::Subtree,
        "(cn=*)",
        &[],
    );
    let a = search(1, &missing, &[], &dir, &everything(&b), 100);
    assert_eq!(a.code, ResultCode::NoSuchObject);
}

#[test]
fn sssd_finds_a_posix_account_by_uid_number() {
    let (_, dir) = sample();
    let b = base();
    let req = request(
        BASE,
        LdapSearchScope::Subtree,
        "(&(objectClass=posixAccount)(uidNumber=1000))",
        &["uid", "homeDirectory"],
    );
    let a = search(7, &req, &[], &dir, &everything(&b), 100);
    assert_eq!(a.code, ResultCode::Success);
    assert_eq!(entries(&a), ["uid=alice,ou=people,dc=example,dc=com"]);
    let Some(LdapOp::SearchResultEntry(e)) = a.replies.first().map(|m| &m.op) else {
        panic!("no entry");
    };
    let names: Vec<&str> = e.attributes.iter().map(|a| a.atype.as_str()).collect();
    assert_eq!(names, ["uid", "homeDirectory"]);
    assert!(a.replies.iter().all(|m| m.msgid == 7));
}

#[test]
fn a_grant_hides_what_it_does_not_name_from_results_and_filters() {
    let (_, dir) = sample();
    let people = Dn::parse("ou=people,dc=example,dc=com").unwrap_or_default();
    let allowed = vec!["uid".to_string(), "cn".to_string()];
    let scope = Scope {
        subtree: &people,
        attributes: Some(&allowed),
    };
    let by_mail = request(
        BASE,
        LdapSearchScope::Subtree,
        "(mail=alice@example.com)",
        &["*"],
    );
    assert!(entries(&search(1, &by_mail, &[], &dir, &scope, 100)).is_empty());
    let all = request(
        BASE,
        LdapSearchScope::Subtree,
        "(objectClass=*)",
        &["*", "+"],
    );
    let a = search(1, &all, &[], &dir, &scope, 100);
    assert_eq!(entries(&a).len(), 3, "ou=people and its two users");
    for m in &a.replies {
        if let LdapOp::SearchResultEntry(e) = &m.op {
            for attr in &e.attributes {
                assert!(
                    ["objectClass", "uid", "cn"].contains(&attr.atype.as_str()),
                    "{}",
                    attr.atype
                );
            }
        }
    }
    let groups = request(
        "ou=groups,dc=example,dc=com",
        LdapSearchScope::Subtree,
        "(cn=*)",
        &[],
    );
    assert_eq!(
        search(1, &groups, &[], &dir, &scope, 100).code,
        ResultCode::NoSuchObject
    );
}

#[test]
fn size_limits_end_with_size_limit_exceeded() {
    let (_, dir) = sample();
    let b = base();
    let mut req = request(BASE, LdapSearchScope::Subtree, "(objectClass=*)", &["1.1"]);
    req.sizelimit = 3;
    let a = search(1, &req, &[], &dir, &everything(&b), 100);
    assert_eq!(
        (entries(&a).len(), a.code),
        (3, ResultCode::SizeLimitExceeded)
    );
    req.sizelimit = 0;
    let a = search(1, &req, &[], &dir, &everything(&b), 2);
    assert_eq!(
        (entries(&a).len(), a.code),
        (2, ResultCode::SizeLimitExceeded)
    );
    req.sizelimit = i32::try_from(dir.len()).unwrap_or(0);
    let a = search(1, &req, &[], &dir, &everything(&b), 100);
    assert_eq!(
        (entries(&a).len(), a.code),
        (dir.len(), ResultCode::Success)
    );
}

#[test]
fn paged_results_return_every_entry_once_across_pages() {
    let (_, dir) = sample();
    let b = base();
    let req = request(BASE, LdapSearchScope::Subtree, "(objectClass=*)", &["1.1"]);
    let whole = entries(&search(1, &req, &[], &dir, &everything(&b), 100));
    let mut seen = Vec::new();
    let mut next = Vec::new();
    for round in 0.. {
        assert!(round <= dir.len(), "paging does not end");
        let control = LdapControl::SimplePagedResults {
            size: 3,
            cookie: next.clone(),
        };
        let a = search(1, &req, &[control], &dir, &everything(&b), 100);
        assert_eq!(a.code, ResultCode::Success);
        let page = entries(&a);
        assert!(page.len() <= 3);
        seen.extend(page);
        next = cookie(&a).unwrap_or_else(|| panic!("no paged control in the answer"));
        if next.is_empty() {
            break;
        }
    }
    assert_eq!(seen, whole);
    let stop = LdapControl::SimplePagedResults {
        size: 0,
        cookie: b"x".to_vec(),
    };
    let a = search(1, &req, &[stop], &dir, &everything(&b), 100);
    assert!(entries(&a).is_empty());
    assert_eq!(cookie(&a), Some(Vec::new()));
}

#[test]
fn the_root_dse_answers_its_own_attributes() {
    let dse = RootDse {
        base: base(),
        start_tls: true,
        password_modify: false,
    };
    let req = request("", LdapSearchScope::Base, "(objectClass=*)", &["+"]);
    assert!(is_root_dse(&req));
    let replies = root_dse_search(3, &req, &dse);
    let Some(LdapOp::SearchResultEntry(e)) = replies.first().map(|m| &m.op) else {
        panic!("no root DSE");
    };
    let values = |name: &str| -> Vec<String> {
        e.attributes
            .iter()
            .filter(|a| a.atype == name)
            .flat_map(|a| {
                a.vals
                    .iter()
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            })
            .collect()
    };
    assert_eq!(values("namingContexts"), [BASE]);
    assert_eq!(values("supportedLDAPVersion"), ["3"]);
    assert!(values("supportedExtension").contains(&response::OID_START_TLS.to_string()));
    assert!(!values("supportedExtension").contains(&response::OID_PASSWORD_MODIFY.to_string()));
    assert_eq!(values("supportedControl"), [response::OID_PAGED_RESULTS]);
}

#[test]
fn compare_answers_true_false_or_why_not() {
    let (_, dir) = sample();
    let b = base();
    let cmp = |dn: &str, attr: &str, value: &str| {
        let req = LdapCompareRequest {
            dn: dn.to_owned(),
            atype: attr.to_owned(),
            val: value.as_bytes().to_vec(),
        };
        compare(1, &req, &dir, &everything(&b)).code
    };
    let staff = "cn=staff,ou=groups,dc=example,dc=com";
    let alice = "uid=alice,ou=people,dc=example,dc=com";
    assert_eq!(
        cmp(staff, "member", "UID=Alice,ou=people,dc=example,dc=com"),
        ResultCode::CompareTrue
    );
    assert_eq!(
        cmp(staff, "member", "uid=bob,ou=people,dc=example,dc=com"),
        ResultCode::CompareFalse
    );
    assert_eq!(
        cmp(alice, "mail", "ALICE@example.com"),
        ResultCode::CompareTrue
    );
    assert_eq!(
        cmp(alice, "loginShell", "/bin/sh"),
        ResultCode::NoSuchAttribute
    );
    assert_eq!(
        cmp("uid=bob,ou=people,dc=example,dc=com", "uid", "bob"),
        ResultCode::NoSuchObject
    );
}
