//! Issue 39: Python's `ldap3` against the LDAP door (tests/interop/ldap_interop.py), binding
//! and searching as an application does over StartTLS and LDAPS. Python comes from
//! `PORTCULLIS_PYTHON` (./scripts/test prepares .venv with ldap3); a missing interpreter
//! fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::ldap_support::{ALICE, ALICE_PASSWORD, BASE, service, start_ldap};
use crate::server_interop::run_python;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_python_ldap3_binds_searches_and_is_refused_as_the_rfcs_say() {
    let l = start_ldap("").await;
    let args = [
        l.url.as_str(),
        l.ldaps_url.as_str(),
        &l.ca.to_string_lossy(),
        BASE,
        ALICE,
        ALICE_PASSWORD,
        &service("app"),
        &l.app_secret,
    ]
    .iter()
    .map(Into::into)
    .collect();
    let found = run_python("ldap_interop.py", args).await;
    let expect = |key: &str, want: serde_json::Value| {
        assert_eq!(found[key], want, "{key}: {found}");
    };
    expect("service_bind", json!(true));
    expect("search_result", json!("success"));
    expect("found", json!([ALICE]));
    expect("mail", json!(["alice@example.com"]));
    expect("member_of", json!(["cn=staff,ou=groups,dc=example,dc=com"]));
    expect("by_uid_number", json!(["alice"]));
    // base, three ou, alice, carol (bob is disabled), staff
    expect("paged_entries", json!(7));
    expect("service_whoami", json!(format!("dn:{}", service("app"))));
    expect("compare_member", json!(true));
    expect("modify_result", json!("unwillingToPerform"));
    expect("user_bind", json!(true));
    expect("user_whoami", json!(format!("dn:{ALICE}")));
    expect("wrong_password", json!([false, "invalidCredentials"]));
    expect("unknown_dn", json!([false, "invalidCredentials"]));
    expect("plain_bind", json!([false, "confidentialityRequired"]));
    expect("anonymous_search", json!("insufficientAccessRights"));
    expect("ldaps_bind", json!(true));
}
