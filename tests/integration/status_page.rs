//! Issue 18: `/status` as a browser shows it. Headless Chromium loads the page of a server
//! that has just answered known traffic, runs its script (no external resources: the page
//! must work offline) and the test reads the values the page displays and the charts it
//! drew.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use portcullis_store::Grant;

use crate::server_support::*;

/// Debian's Chromium (scripts/test installs it).
fn chromium() -> &'static str {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("chromium is not installed (scripts/test installs it)")
}

/// The page's DOM after its script ran for a few (virtual) seconds.
fn rendered(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The text of the element with `id` in `dom`.
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    let rest = &dom[at..];
    let open = rest.find('>').unwrap() + 1;
    let close = rest[open..].find('<').unwrap();
    &rest[open..open + close]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_18_status_page_draws_the_last_minutes_in_a_browser() {
    let _exclusive = crate::server_support::exclusive();
    let s = start().await;
    let secret = s.add_client("svc", &[Grant::ClientCredentials], &[]).await;
    let cc = form(&[("grant_type", "client_credentials")]);
    for _ in 0..3 {
        let a = s.post("/oauth2/token", Some(("svc", &secret)), &cc).await;
        assert_eq!(a.status, 200);
    }
    for k in 0..2 {
        let a = s
            .post("/oauth2/token", Some(("svc", &format!("wrong-{k}"))), &cc)
            .await;
        assert_eq!(a.status, 401);
    }
    // Wait (bounded) until the once-a-second sampler has taken those answers in.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st = s.get("/status.json").await.json();
        let sum = |k: &str| -> u64 {
            st["history"][k]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .sum()
        };
        if sum("accepted") == 3 && sum("rejected") == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "history never showed the traffic: {st}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let url = format!("{}/status", s.base());
    let dom = tokio::task::spawn_blocking(move || rendered(&url))
        .await
        .unwrap();
    assert!(
        dom.contains("data-polled"),
        "the script never polled: {dom}"
    );
    assert_eq!(text_of(&dom, "tot-accepted"), "3", "{dom}");
    assert_eq!(text_of(&dom, "tot-rejected"), "2");
    let by_class: u64 = ["tot-trusted", "tot-unknown", "tot-suspect"]
        .iter()
        .map(|id| text_of(&dom, id).parse::<u64>().unwrap())
        .sum();
    assert_eq!(by_class, 5, "every answer has a class");
    assert_eq!(text_of(&dom, "rejected"), "2", "the total card");
    // The chart has points, and the accepted series is a drawn line.
    let svg = &dom[dom.find("id=\"svg-answers\"").unwrap()..];
    let points: usize = svg["id=\"svg-answers\"".len()..]
        .split("data-points=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(points >= 1, "{svg}");
    let line = svg
        .split("<polyline")
        .find(|p| p.contains("data-series=\"accepted\""))
        .unwrap();
    let coords = line
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert!(!coords.trim().is_empty(), "empty accepted line");
    // The failing source is on the board.
    assert!(dom.contains("127.0.0.1/32"), "top failing sources: {dom}");
    // Nothing external: no script, style or font is fetched from elsewhere.
    let page = String::from_utf8(s.get("/status").await.body).unwrap();
    for needle in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(
            !page.contains(needle),
            "external resource {needle:?} in the page"
        );
    }
    s.server.shutdown().await.unwrap();
}
