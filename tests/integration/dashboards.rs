//! Issue 18: the Grafana dashboard (`deploy/grafana/portcullis.json`) and the Prometheus
//! alert rules (`deploy/prometheus/alerts.yml`) reference only metrics a running server
//! exports on `/metrics`. A renamed metric fails here, not silently on an operator's
//! screen.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use portcullis_store::Grant;

use crate::server_support::*;

/// Every metric name in a PromQL text: identifiers with one of our prefixes.
fn metric_names(promql: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut word = String::new();
    for ch in promql.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == ':' {
            word.push(ch);
            continue;
        }
        if ["portcullis_", "http_", "oauth_", "store_errors"]
            .iter()
            .any(|p| word.starts_with(p))
        {
            out.insert(std::mem::take(&mut word));
        }
        word.clear();
    }
    out
}

fn dashboard_exprs() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/grafana/portcullis.json"
    ))
    .unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).expect("dashboard is JSON");
    assert_eq!(d["uid"], "portcullis");
    let mut exprs = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        assert!(p["gridPos"]["w"].as_u64().unwrap() <= 24, "{p}");
        for t in p["targets"].as_array().unwrap() {
            exprs.push(t["expr"].as_str().unwrap().to_owned());
        }
    }
    for v in d["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["definition"].as_str() {
            exprs.push(q.to_owned());
        }
    }
    assert!(exprs.len() >= 20, "{} queries", exprs.len());
    exprs
}

fn alert_exprs() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/prometheus/alerts.yml"
    ))
    .unwrap();
    let exprs: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr:"))
        .map(|e| e.trim().to_owned())
        .collect();
    let alerts = text
        .lines()
        .filter(|l| l.trim().starts_with("- alert:"))
        .count();
    assert_eq!(exprs.len(), alerts, "one expr per alert");
    for name in ["Attack", "Shedding", "PoolSaturated", "StoreErrors"] {
        assert!(text.contains(name), "no {name} alert");
    }
    exprs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_18_dashboard_and_alerts_reference_only_exported_metrics() {
    // RADIUS on (per-NAS series) with 802.1X (EAP series), and one KDF verification (the
    // pool's histograms).
    let pki = crate::eap_support::Pki::new(&[]);
    let r = crate::eap_support::start_eap(&pki, |_| {}).await;
    let s = &r.s;
    let app_secret = s.add_client("app", &[Grant::Password], &[]).await;
    s.add_user("alice", "alice-password").await;
    let body = form(&[
        ("grant_type", "password"),
        ("username", "alice"),
        ("password", "alice-password"),
    ]);
    assert_eq!(
        s.post("/oauth2/token", Some(("app", &app_secret)), &body)
            .await
            .status,
        200
    );
    let metrics = String::from_utf8(s.get("/metrics").await.body).unwrap();
    let exported: BTreeSet<&str> = metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    let mut referenced = BTreeSet::new();
    for e in dashboard_exprs().iter().chain(&alert_exprs()) {
        referenced.extend(metric_names(e));
    }
    let missing: Vec<&String> = referenced
        .iter()
        .filter(|m| !exported.contains(m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "referenced but not exported: {missing:?}\nexported: {exported:?}"
    );
    assert!(referenced.len() >= 25, "{referenced:?}");
    r.s.server.shutdown().await.unwrap();
}
