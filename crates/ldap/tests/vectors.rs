//! Interoperability with python ldap3's encoder (tests/vectors/generate.py wrote
//! tests/vectors/ldap3.tsv): its requests decode to what it was asked to send, and the
//! responses our builders encode are byte for byte the ones it encodes. And with OpenLDAP's
//! clients (tests/vectors/capture_openldap.py recorded ldap-utils' requests in
//! tests/vectors/openldap.tsv).

use portcullis_ldap::frame::{Frame, Limits, decode_request, decode_response};
use portcullis_ldap::proto::control::LdapControl;
use portcullis_ldap::proto::proto::{
    LdapBindCred, LdapDerefAliases, LdapFilter, LdapMsg, LdapOp, LdapPasswordModifyRequest,
    LdapSearchScope, LdapSubstringFilter,
};
use portcullis_ldap::response::{self, PagedDone};
use portcullis_ldap::{Dn, Entry, ResultCode, Selection};

const ALICE: &str = "uid=alice,ou=people,dc=example,dc=com";

fn vector(name: &str) -> Vec<u8> {
    vector_in(include_str!("vectors/ldap3.tsv"), name)
}

fn vector_in(tsv: &str, name: &str) -> Vec<u8> {
    let line = tsv
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('\t'));
    let hex = line.unwrap_or_else(|| panic!("no vector {name}"));
    (0..hex.len() / 2)
        .map(|i| {
            u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or_else(|e| panic!("{name}: {e}"))
        })
        .collect()
}

fn request(name: &str) -> LdapMsg {
    decode_whole(name, vector(name))
}

fn openldap(name: &str) -> LdapMsg {
    decode_whole(name, vector_in(include_str!("vectors/openldap.tsv"), name))
}

fn decode_whole(name: &str, bytes: Vec<u8>) -> LdapMsg {
    match decode_request(&bytes, &Limits::default()) {
        Ok(Frame::Message { message, consumed }) => {
            assert_eq!(consumed, bytes.len(), "{name}");
            message
        }
        other => panic!("{name}: {other:?}"),
    }
}

fn eq(a: &str, v: &str) -> LdapFilter {
    LdapFilter::Equality(a.into(), v.into())
}

fn sub(a: &str, initial: Option<&str>, any: &[&str], final_: Option<&str>) -> LdapFilter {
    let s = LdapSubstringFilter {
        initial: initial.map(Into::into),
        any: any.iter().map(|s| s.to_string()).collect(),
        final_: final_.map(Into::into),
    };
    LdapFilter::Substring(a.into(), s)
}

#[test]
fn binds_decode() {
    let msg = request("bind_simple");
    assert_eq!(msg.msgid, 1);
    let LdapOp::BindRequest(bind) = msg.op else {
        panic!("{msg:?}")
    };
    assert_eq!((bind.version, bind.dn.as_str()), (3, ALICE));
    assert_eq!(bind.cred, LdapBindCred::Simple("secret".into()));
    let LdapOp::BindRequest(bind) = request("bind_anonymous").op else {
        panic!()
    };
    assert_eq!(
        (bind.dn.as_str(), bind.cred),
        ("", LdapBindCred::Simple(String::new()))
    );
    let LdapOp::BindRequest(bind) = request("bind_utf8_password").op else {
        panic!()
    };
    assert_eq!(
        bind.cred,
        LdapBindCred::Simple("p\u{e4}ssw\u{f6}rd \u{2713}".into())
    );
}

#[test]
fn nested_search_decodes() {
    let msg = request("search_nested");
    let LdapOp::SearchRequest(s) = msg.op else {
        panic!("{msg:?}")
    };
    assert_eq!(s.base, "ou=people,dc=example,dc=com");
    assert_eq!(
        (s.scope, s.aliases),
        (LdapSearchScope::Subtree, LdapDerefAliases::Never)
    );
    assert_eq!((s.sizelimit, s.timelimit, s.typesonly), (10, 30, false));
    assert_eq!(s.attrs, ["cn", "mail", "+"]);
    let expected = LdapFilter::And(vec![
        eq("objectClass", "person"),
        LdapFilter::Or(vec![
            eq("uid", "alice"),
            sub("mail", None, &[], Some("@example.com")),
        ]),
        LdapFilter::Not(Box::new(sub("cn", Some("Bob"), &[], None))),
    ]);
    assert_eq!(s.filter, expected);
}

#[test]
fn every_filter_item_decodes() {
    let LdapOp::SearchRequest(s) = request("search_items").op else {
        panic!()
    };
    assert_eq!(
        (s.scope, s.aliases, s.typesonly),
        (LdapSearchScope::OneLevel, LdapDerefAliases::Always, true)
    );
    let expected = LdapFilter::Or(vec![
        LdapFilter::GreaterOrEqual("uidNumber".into(), "1000".into()),
        LdapFilter::LessOrEqual("uidNumber".into(), "99".into()),
        LdapFilter::Approx("cn".into(), "alice".into()),
        sub("sn", None, &["i", "o"], Some("n")),
        sub("givenName", Some("Al"), &[], None),
        sub("mail", None, &[], Some(".com")),
    ]);
    assert_eq!(s.filter, expected);
    let LdapOp::SearchRequest(s) = request("search_extensible").op else {
        panic!()
    };
    let LdapFilter::Extensible(m) = s.filter else {
        panic!()
    };
    assert_eq!(
        (m.matching_rule.as_deref(), m.type_.as_deref()),
        (Some("caseExactMatch"), Some("cn"))
    );
    assert_eq!(
        (m.match_value.as_str(), m.dn_attributes, s.attrs),
        ("Alice", false, vec!["1.1".to_string()])
    );
    let LdapOp::SearchRequest(s) = request("search_root_dse").op else {
        panic!()
    };
    assert_eq!(
        (s.base.as_str(), s.scope, s.filter),
        (
            "",
            LdapSearchScope::Base,
            LdapFilter::Present("objectClass".into())
        )
    );
}

/// RFC 4515's examples as ldap3's filter compiler encodes them, and as our string parser
/// reads them: the same filter.
#[test]
fn escaped_filters_decode_like_our_string_parser_reads_them() {
    for (name, text) in [
        (
            "search_escaped",
            r"(o=Parens R Us \28for all your parenthetical needs\29)",
        ),
        ("search_escaped_star", r"(cn=*\2A*)"),
    ] {
        let LdapOp::SearchRequest(s) = request(name).op else {
            panic!()
        };
        assert_eq!(Ok(s.filter), portcullis_ldap::filter::parse(text), "{name}");
    }
}

#[test]
fn paged_results_control_decodes() {
    let msg = request("search_paged_first");
    assert_eq!(response::paged_request(&msg.ctrl), Some((50, &b""[..])));
    let msg = request("search_paged_next");
    assert_eq!(
        response::paged_request(&msg.ctrl),
        Some((50, &b"\x00\x01cookie"[..]))
    );
}

#[test]
fn extended_operations_decode() {
    let LdapOp::ExtendedRequest(x) = request("extended_whoami").op else {
        panic!()
    };
    assert_eq!((x.name.as_str(), x.value), (response::OID_WHOAMI, None));
    let LdapOp::ExtendedRequest(x) = request("extended_starttls").op else {
        panic!()
    };
    assert_eq!((x.name.as_str(), x.value), (response::OID_START_TLS, None));
    let LdapOp::ExtendedRequest(x) = request("extended_password_modify").op else {
        panic!()
    };
    assert_eq!(x.name, response::OID_PASSWORD_MODIFY);
    let pm = LdapPasswordModifyRequest::try_from(&x).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pm.user_identity.as_deref(), Some(ALICE));
    assert_eq!(pm.old_password.as_deref(), Some("old secret"));
    assert_eq!(pm.new_password.as_deref(), Some("new secret"));
    assert_eq!(request("abandon").op, LdapOp::AbandonRequest(11));
    assert_eq!(request("unbind").op, LdapOp::UnbindRequest);
}

/// All requests back to back in one buffer come out one at a time.
#[test]
fn a_stream_of_requests_frames_one_by_one() {
    let names = [
        "bind_simple",
        "search_nested",
        "search_paged_next",
        "extended_whoami",
        "unbind",
    ];
    let stream: Vec<u8> = names.iter().flat_map(|n| vector(n)).collect();
    let mut rest = stream.as_slice();
    for name in names {
        // Every proper prefix of the next message is incomplete.
        let len = vector(name).len();
        for cut in [1, 2, len / 2, len - 1] {
            let frame = decode_request(&rest[..cut], &Limits::default());
            assert!(
                matches!(frame, Ok(Frame::Incomplete)),
                "{name} cut at {cut}: {frame:?}"
            );
        }
        match decode_request(rest, &Limits::default()) {
            Ok(Frame::Message { consumed, .. }) => rest = &rest[consumed..],
            other => panic!("{name}: {other:?}"),
        }
    }
    assert!(rest.is_empty());
}

fn alice() -> Entry {
    Entry::new(Dn::parse(ALICE).unwrap_or_else(|e| panic!("{e}")))
        .with("objectClass", ["top", "inetOrgPerson"])
        .with("cn", ["Alice Liddell"])
        .with("uid", ["alice"])
}

#[test]
fn responses_encode_as_ldap3_encodes_them() {
    let all = Selection::all_user();
    let cases = [
        (
            "resp_bind_success",
            response::bind_response(1, ResultCode::Success, ""),
        ),
        (
            "resp_bind_invalid_credentials",
            response::bind_response(1, ResultCode::InvalidCredentials, "invalid credentials"),
        ),
        (
            "resp_search_entry",
            response::search_entry(4, &alice(), &all, false),
        ),
        (
            "resp_search_entry_types_only",
            response::search_entry(4, &alice(), &Selection::parse(&["cn"]), true),
        ),
        (
            "resp_search_done",
            response::search_done(4, ResultCode::Success, "", None),
        ),
        (
            "resp_search_done_paged",
            response::search_done(
                10,
                ResultCode::Success,
                "",
                Some(PagedDone {
                    size_estimate: 0,
                    cookie: b"\x00\x01next".to_vec(),
                }),
            ),
        ),
        (
            "resp_search_done_paged_last",
            response::search_done(
                11,
                ResultCode::Success,
                "",
                Some(PagedDone {
                    size_estimate: 0,
                    cookie: Vec::new(),
                }),
            ),
        ),
        ("resp_whoami", response::whoami_response(12, Some(ALICE))),
        ("resp_whoami_anonymous", response::whoami_response(12, None)),
        (
            "resp_starttls",
            response::start_tls_response(13, ResultCode::Success, ""),
        ),
        (
            "resp_password_modify",
            response::password_modify_response(14, ResultCode::Success, "", None),
        ),
        (
            "resp_password_modify_generated",
            response::password_modify_response(
                14,
                ResultCode::Success,
                "",
                Some("generated".into()),
            ),
        ),
        (
            "resp_notice_of_disconnection",
            response::notice_of_disconnection(ResultCode::ProtocolError, "bad message"),
        ),
    ];
    for (name, message) in cases {
        assert_eq!(
            hex(&response::encode(message)),
            hex(&vector(name)),
            "{name}"
        );
    }
    let unwilling = response::error_response(
        17,
        portcullis_ldap::frame::OpKind::Modify,
        ResultCode::UnwillingToPerform,
        "read-only",
    );
    assert_eq!(
        unwilling.map(|m| hex(&response::encode(m))),
        Some(hex(&vector("resp_modify_unwilling")))
    );
}

/// A client (the lab's driver, the upstream client) reads ldap3's responses.
#[test]
fn responses_decode_on_the_client_side() {
    let bytes = vector("resp_search_done_paged");
    let Ok(Frame::Message { message, .. }) = decode_response(&bytes, &Limits::default()) else {
        panic!()
    };
    assert_eq!(
        message.ctrl,
        vec![LdapControl::SimplePagedResults {
            size: 0,
            cookie: b"\x00\x01next".to_vec()
        }]
    );
    let bytes = vector("resp_bind_invalid_credentials");
    let Ok(Frame::Message { message, .. }) = decode_response(&bytes, &Limits::default()) else {
        panic!()
    };
    let LdapOp::BindResponse(bind) = message.op else {
        panic!()
    };
    assert_eq!(
        ResultCode::try_from(&bind.res.code),
        Ok(ResultCode::InvalidCredentials)
    );
    // A server does not take a response for a request, nor a client a request.
    assert!(decode_request(&bytes, &Limits::default()).is_err());
    assert!(decode_response(&vector("bind_simple"), &Limits::default()).is_err());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn openldap_clients_requests_decode() {
    let LdapOp::BindRequest(bind) = openldap("whoami_0").op else {
        panic!()
    };
    assert_eq!(
        (bind.dn.as_str(), bind.cred),
        (ALICE, LdapBindCred::Simple("secret".into()))
    );
    let LdapOp::ExtendedRequest(x) = openldap("whoami_1").op else {
        panic!()
    };
    assert_eq!((x.name.as_str(), x.value), (response::OID_WHOAMI, None));
    assert_eq!(openldap("whoami_2").op, LdapOp::UnbindRequest);
    let LdapOp::BindRequest(bind) = openldap("rootdse_0").op else {
        panic!()
    };
    assert_eq!(
        (bind.dn.as_str(), bind.cred),
        ("", LdapBindCred::Simple(String::new()))
    );
    let LdapOp::SearchRequest(s) = openldap("rootdse_1").op else {
        panic!()
    };
    assert_eq!(
        (s.base.as_str(), s.scope, s.attrs),
        (
            "",
            LdapSearchScope::Base,
            vec!["namingContexts".to_string()]
        )
    );
    let LdapOp::ExtendedRequest(x) = openldap("starttls_0").op else {
        panic!()
    };
    assert_eq!((x.name.as_str(), x.value), (response::OID_START_TLS, None));
}

#[test]
fn ldapsearch_paged_search_decodes() {
    let msg = openldap("search_1");
    assert_eq!(response::paged_request(&msg.ctrl), Some((50, &b""[..])));
    let LdapOp::SearchRequest(s) = msg.op else {
        panic!()
    };
    assert_eq!(
        (s.scope, s.sizelimit, s.timelimit),
        (LdapSearchScope::OneLevel, 10, 30)
    );
    assert_eq!(s.attrs, ["cn", "uid", "+"]);
    let text = "(&(objectClass=posixAccount)(|(uid=alice)(cn=Al*ce*))(!(uidNumber>=5000)))";
    assert_eq!(Ok(s.filter), portcullis_ldap::filter::parse(text));
}

#[test]
fn ldappasswd_password_modify_decodes() {
    let LdapOp::ExtendedRequest(x) = openldap("passwd_1").op else {
        panic!()
    };
    let pm = LdapPasswordModifyRequest::try_from(&x).unwrap_or_else(|e| panic!("{e}"));
    // No userIdentity: the bound user changes their own password (RFC 3062 section 2.1).
    assert_eq!(pm.user_identity, None);
    assert_eq!(pm.old_password.as_deref(), Some("old secret"));
    assert_eq!(pm.new_password.as_deref(), Some("new secret"));
}
