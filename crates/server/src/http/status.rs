//! The live status page: `GET /status` is a self-contained HTML page whose inline script
//! polls `GET /status.json` once a second and shows rates computed from the counters'
//! differences (calls/s, tokens/s), plus what is outstanding right now: in-flight
//! requests, busy pool threads, queue depth, and the shed / throttled counts.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use crate::app::App;
use crate::radius::nas::{DropReason, StatsRegistry};

/// The RADIUS front door's per-NAS counters, when RADIUS is on.
#[derive(Clone, Debug)]
pub struct RadiusView(pub Option<Arc<StatsRegistry>>);

fn radius_json(view: &RadiusView) -> serde_json::Value {
    let Some(stats) = &view.0 else {
        return serde_json::Value::Null;
    };
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let mut nas = serde_json::Map::new();
    for (name, s) in stats.all() {
        let dropped: serde_json::Map<String, serde_json::Value> = DropReason::ALL
            .iter()
            .zip(&s.dropped)
            .map(|(d, n)| (d.label().to_owned(), load(n).into()))
            .collect();
        nas.insert(
            name,
            serde_json::json!({
                "requests": load(&s.requests),
                "accepts": load(&s.accepts),
                "rejects": load(&s.rejects),
                "duplicates": load(&s.duplicates),
                "dropped": dropped,
            }),
        );
    }
    serde_json::json!({ "nas": nas })
}

/// `GET /status.json`
pub async fn json(
    State(app): State<Arc<App>>,
    axum::Extension(radius): axum::Extension<RadiusView>,
) -> Response {
    let s = app.verifier.snapshot();
    let body = serde_json::json!({
        "uptime_secs": app.started.elapsed().as_secs_f64(),
        "http": {
            "in_flight": app.stats.in_flight.load(Ordering::Relaxed),
            "requests": app.stats.requests.load(Ordering::Relaxed),
            "tokens_issued": app.stats.tokens_issued.load(Ordering::Relaxed),
        },
        "verifier": {
            "calls": s.accepted + s.rejected + s.throttled + s.overloaded,
            "accepted": s.accepted,
            "rejected": s.rejected,
            "throttled": s.throttled,
            "overloaded": s.overloaded,
            "shed": s.shed,
            "outstanding": s.in_flight,
            "pool_threads": s.threads,
            "pool_busy": s.busy_threads,
            "queue_depth": s.queued,
            "queued_by_class": {
                "trusted": s.queued_by_class[0],
                "unknown": s.queued_by_class[1],
                "suspect": s.queued_by_class[2],
            },
            "hashes_computed": s.hashes_computed,
            "cheap_verifications": s.cheap_verifications,
            "rehashed": s.rehashed,
            "median_hash_ms": s.median_hash_time.as_secs_f64() * 1e3,
            "shutting_down": s.shutting_down,
        },
        "radius": radius_json(&radius),
        "deployment": deployment_json(&app),
    });
    let mut r = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Which backends this instance uses and how it tells its clients apart (issue 13).
fn deployment_json(app: &App) -> serde_json::Value {
    let c = &app.config;
    let p = &c.trusted_proxies;
    let client_address = if p.ranges.is_empty() {
        "connection peer".to_string()
    } else {
        let ranges: Vec<String> = p.ranges.iter().map(|r| r.to_string()).collect();
        let how = if c.proxy_protocol {
            "PROXY protocol v2".to_string()
        } else {
            match p.header {
                crate::http::forwarded::ForwardedHeader::XForwardedFor => "X-Forwarded-For",
                crate::http::forwarded::ForwardedHeader::Forwarded => "Forwarded",
            }
            .to_string()
        };
        format!("{how} from {}, else the connection peer", ranges.join(", "))
    };
    serde_json::json!({
        "store": match &c.store {
            crate::config::StoreBackend::Sqlite => "SQLite (embedded)".to_string(),
            crate::config::StoreBackend::Postgres { url, .. } => format!(
                "PostgreSQL at {}",
                portcullis_store::backend::without_credentials(url)
            ),
        },
        "throttle": match &c.throttle_redis {
            None => "in this process".to_string(),
            Some(r) => format!(
                "Redis at {}",
                portcullis_store::backend::without_credentials(&r.url)
            ),
        },
        "client_address": client_address,
    })
}

/// `GET /status`
pub async fn page() -> Html<&'static str> {
    Html(PAGE)
}

const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Portcullis status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.4 system-ui,sans-serif;margin:2rem;color:#222;background:#fafafa}
h1{font-size:1.3rem} .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(12rem,1fr));gap:.8rem}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.8rem}
.v{font-size:1.6rem;font-variant-numeric:tabular-nums} .k{color:#666;font-size:.85rem}
#err{color:#b00} table{border-collapse:collapse;margin-top:.5rem;background:#fff}
td,th{border:1px solid #ddd;padding:.3rem .6rem;text-align:right;font-variant-numeric:tabular-nums}
</style></head><body>
<h1>Portcullis status <span class="k" id="up"></span> <span id="err"></span></h1>
<p class="k" id="dep"></p>
<div class="grid" id="g"></div>
<h2 class="k" id="rh" hidden>RADIUS, per NAS (totals)</h2>
<table id="rt" hidden><thead><tr><th>NAS</th><th>requests</th><th>accepts</th><th>rejects</th>
<th>duplicates</th><th>dropped</th></tr></thead><tbody></tbody></table>
<script>
const cards=[["calls_s","verifications / s"],["tokens_s","tokens issued / s"],
["outstanding","verifications outstanding"],["in_flight","HTTP requests in flight"],
["pool_busy","pool threads busy"],["queue_depth","queue depth"],["shed","shed (total)"],
["throttled","throttled (total)"],["overloaded","overloaded (total)"],
["rejected","rejected (total)"],["median_hash_ms","median hash ms"]];
const g=document.getElementById("g");
for(const [id,label] of cards){g.insertAdjacentHTML("beforeend",
`<div class="card"><div class="v" id="${id}">-</div><div class="k">${label}</div></div>`);}
let prev=null;
function set(id,v){document.getElementById(id).textContent=v;}
async function poll(){
 try{
  const r=await fetch("status.json",{cache:"no-store"}); const s=await r.json(); const v=s.verifier;
  if(prev){const dt=s.uptime_secs-prev.uptime_secs||1;
   set("calls_s",((v.calls-prev.verifier.calls)/dt).toFixed(1));
   set("tokens_s",((s.http.tokens_issued-prev.http.tokens_issued)/dt).toFixed(1));}
  set("outstanding",v.outstanding); set("in_flight",s.http.in_flight);
  set("pool_busy",v.pool_busy+" / "+v.pool_threads); set("queue_depth",v.queue_depth);
  set("shed",v.shed); set("throttled",v.throttled); set("overloaded",v.overloaded);
  set("rejected",v.rejected); set("median_hash_ms",v.median_hash_ms.toFixed(1));
  set("up","up "+Math.round(s.uptime_secs)+" s"+(v.shutting_down?" (shutting down)":""));
  const d=s.deployment; set("dep","store: "+d.store+" · failure budgets: "+d.throttle+
   " · client address: "+d.client_address);
  if(s.radius){const rows=Object.entries(s.radius.nas).map(([n,c])=>{
    const d=Object.entries(c.dropped).filter(([k,x])=>x>0).map(([k,x])=>k+" "+x).join(", ")||"0";
    const td=x=>{const e=document.createElement("td");e.textContent=x;return e;};
    const tr=document.createElement("tr");
    for(const x of [n,c.requests,c.accepts,c.rejects,c.duplicates,d])tr.appendChild(td(x));
    return tr;});
   const b=document.querySelector("#rt tbody"); b.replaceChildren(...rows);
   document.getElementById("rt").hidden=false; document.getElementById("rh").hidden=false;}
  set("err",""); prev=s;
 }catch(e){set("err","(status unavailable)");}
}
poll(); setInterval(poll,1000);
</script></body></html>
"##;
