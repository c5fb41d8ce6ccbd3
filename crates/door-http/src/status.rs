//! The live status page: `GET /status` is a self-contained HTML page (no external script,
//! style or font: it works offline) whose inline script polls `GET /status.json` once a
//! second and shows rates computed from the counters' differences (calls/s, tokens/s),
//! what is outstanding right now (in-flight requests, busy pool threads, queue depth), and
//! the last 15 minutes from `portcullis_door::history` as SVG charts drawn in the page: answers per
//! second by outcome and by class, hash work and shedding, queue depth per class, mean
//! queue wait and busy threads; then the sources failing most and the principals under a
//! distributed attack (issue 18).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use crate::HttpContext;

/// `GET /status.json`
pub async fn json(State(ctx): State<Arc<HttpContext>>) -> Response {
    let s = ctx.verifier.snapshot();
    let mut body = serde_json::json!({
        "uptime_secs": ctx.started.elapsed().as_secs_f64(),
        "http": {
            "in_flight": ctx.stats.in_flight.load(Ordering::Relaxed),
            "requests": ctx.stats.requests.load(Ordering::Relaxed),
            "tokens_issued": ctx.stats.tokens_issued.load(Ordering::Relaxed),
            "tls_handshakes_full": ctx.stats.tls_handshakes[0].load(Ordering::Relaxed),
            "tls_handshakes_resumed": ctx.stats.tls_handshakes[1].load(Ordering::Relaxed),
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
        "deployment": deployment_json(&ctx),
        "history": ctx.history.json(),
        "top_failing_sources": ctx.audit.board.top(10, std::time::Instant::now()),
        "under_attack": ctx.verifier.under_attack(20).into_iter().map(|(kind, p, origins, left)| {
            serde_json::json!({
                "kind": match kind {
                    portcullis_core::PrincipalKind::Client => "client",
                    portcullis_core::PrincipalKind::User => "user",
                },
                "principal": p,
                "origins": origins,
                "secs_left": left.as_secs(),
            })
        }).collect::<Vec<_>>(),
    });
    // Other doors' sections ("radius", "ldap"); absent when that door is off.
    if let Some(map) = body.as_object_mut() {
        for panel in ctx.panels.read().iter() {
            map.insert(panel.key().to_owned(), panel.json());
        }
    }
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
fn deployment_json(ctx: &HttpContext) -> serde_json::Value {
    let c = &ctx.config;
    let p = &c.trusted_proxies;
    let client_address = if p.ranges.is_empty() {
        "connection peer".to_string()
    } else {
        let ranges: Vec<String> = p.ranges.iter().map(|r| r.to_string()).collect();
        let how = if c.proxy_protocol {
            "PROXY protocol v2".to_string()
        } else {
            match p.header {
                portcullis_door::forwarded::ForwardedHeader::XForwardedFor => "X-Forwarded-For",
                portcullis_door::forwarded::ForwardedHeader::Forwarded => "Forwarded",
            }
            .to_string()
        };
        format!("{how} from {}, else the connection peer", ranges.join(", "))
    };
    serde_json::json!({
        "store": c.deployment.store,
        "throttle": c.deployment.throttle,
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
h1{font-size:1.3rem} h2{font-size:1.05rem;margin:1.4rem 0 .4rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(12rem,1fr));gap:.8rem}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(26rem,1fr));gap:.8rem}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.8rem}
.v{font-size:1.6rem;font-variant-numeric:tabular-nums} .k{color:#666;font-size:.85rem}
#err{color:#b00} table{border-collapse:collapse;margin-top:.5rem;background:#fff}
td,th{border:1px solid #ddd;padding:.3rem .6rem;text-align:right;font-variant-numeric:tabular-nums}
td.l,th.l{text-align:left} svg{width:100%;height:140px;display:block}
.leg{font-size:.8rem;color:#444} .leg span.sw{display:inline-block;width:.8rem;height:.25rem;vertical-align:middle;margin:0 .25rem 0 .6rem}
.ax{font-size:10px;fill:#777}
</style></head><body>
<h1>Portcullis status <span class="k" id="up"></span> <span id="err"></span></h1>
<p class="k" id="dep"></p>
<div class="grid" id="g"></div>
<h2>Last 15 minutes <span class="k">(one point per second, kept in the server's memory)</span></h2>
<div class="charts" id="charts"></div>
<h2>Sources failing most (last 15 minutes)</h2>
<table id="top"><thead><tr><th class="l">source prefix</th><th>failures</th><th>last seen (s ago)</th>
<th class="l">last principal tried</th></tr></thead><tbody></tbody></table>
<h2>Principals under distributed attack</h2>
<table id="att"><thead><tr><th class="l">principal</th><th class="l">kind</th><th>failing origins</th>
<th>state ends in (s)</th></tr></thead><tbody></tbody></table>
<h2 class="k" id="rh" hidden>RADIUS, per NAS (totals)</h2>
<table id="rt" hidden><thead><tr><th>NAS</th><th>requests</th><th>accepts</th><th>rejects</th>
<th>duplicates</th><th>dropped</th></tr></thead><tbody></tbody></table>
<h2 class="k" id="eh" hidden>802.1X (totals)</h2>
<table id="et" hidden><thead><tr><th>conversations open</th><th>EAP-TLS full</th>
<th>EAP-TLS resumed</th><th>TTLS full</th><th>TTLS resumed</th><th>failures</th>
<th>round trips / login</th><th>new refused</th><th>stations held</th><th>expired</th></tr></thead><tbody></tbody></table>
<h2 class="k" id="ah" hidden>RADIUS accounting: <span id="online"></span> sessions online (per NAS, totals)</h2>
<table id="at" hidden><thead><tr><th>NAS</th><th>requests</th><th>stored</th><th>duplicates</th>
<th>dropped</th></tr></thead><tbody></tbody></table>
<h2 class="k" id="lh" hidden>LDAP: <span id="lopen"></span> connections open (operations by result, totals)</h2>
<table id="lt" hidden><thead><tr><th class="l">operation</th><th class="l">results</th></tr></thead><tbody></tbody></table>
<script>
const cards=[["calls_s","verifications / s"],["tokens_s","tokens issued / s"],
["outstanding","verifications outstanding"],["in_flight","HTTP requests in flight"],
["pool_busy","pool threads busy"],["queue_depth","queue depth"],["shed","shed (total)"],
["throttled","throttled (total)"],["overloaded","overloaded (total)"],
["rejected","rejected (total)"],["median_hash_ms","median hash ms"]];
// Charts: [id, title, kind ("sum": per-second counts, legend shows the window's total;
// "last": a level, legend shows the latest value), series [key, label, colour]].
const charts=[
 ["answers","answers / s by outcome","sum",[["accepted","accepted","#2a9d4a"],
  ["rejected","rejected","#e76f00"],["throttled","throttled","#7b3fb5"],["overloaded","overloaded","#c62828"]]],
 ["work","hash work / s","sum",[["verifications","derivations","#1f6fb2"],["shed","shed","#c62828"]]],
 ["classes","answers / s by class","sum",[["trusted","trusted","#2a9d4a"],
  ["unknown","unknown","#1f6fb2"],["suspect","suspect","#c62828"]]],
 ["queue","queue depth by class","last",[["queued_trusted","trusted","#2a9d4a"],
  ["queued_unknown","unknown","#1f6fb2"],["queued_suspect","suspect","#c62828"]]],
 ["wait","mean queue wait, ms","last",[["queue_wait_ms","wait","#e76f00"]]],
 ["busy","hash threads busy","last",[["pool_busy","busy","#1f6fb2"]]]];
const g=document.getElementById("g");
for(const [id,label] of cards){g.insertAdjacentHTML("beforeend",
`<div class="card"><div class="v" id="${id}">-</div><div class="k">${label}</div></div>`);}
const ch=document.getElementById("charts");
for(const [id,title,kind,series] of charts){
 const leg=series.map(([k,l,c])=>`<span class="sw" style="background:${c}"></span>${l} `+
  `<b id="tot-${k}">0</b>`).join("");
 ch.insertAdjacentHTML("beforeend",`<div class="card"><div class="k">${title}`+
  ` (${kind=="sum"?"legend: total in the window":"legend: now"})</div>`+
  `<svg id="svg-${id}" viewBox="0 0 600 140" preserveAspectRatio="none"></svg>`+
  `<div class="leg">${leg}</div></div>`);}
const NS="http://www.w3.org/2000/svg";
function el(n,a){const e=document.createElementNS(NS,n);for(const k in a)e.setAttribute(k,a[k]);return e;}
function draw(id,kind,series,h){
 const svg=document.getElementById("svg-"+id); svg.replaceChildren();
 const t=h.t||[]; const n=t.length; const end=n?t[n-1]:0; const start=end-900;
 let max=1; for(const [k] of series)for(const v of (h[k]||[]))max=Math.max(max,v);
 const X=x=>40+(x-start)/900*556, Y=v=>128-v/max*118;
 svg.appendChild(el("line",{x1:40,y1:128,x2:596,y2:128,stroke:"#bbb"}));
 const top=el("text",{x:2,y:14,class:"ax"}); top.textContent=+max.toFixed(2); svg.appendChild(top);
 const z=el("text",{x:2,y:131,class:"ax"}); z.textContent="0"; svg.appendChild(z);
 const l=el("text",{x:40,y:139,class:"ax"}); l.textContent="-15 min"; svg.appendChild(l);
 const r=el("text",{x:572,y:139,class:"ax"}); r.textContent="now"; svg.appendChild(r);
 svg.setAttribute("data-points",n);
 for(const [k,label,c] of series){
  const vs=h[k]||[]; const pts=vs.map((v,i)=>X(t[i]).toFixed(1)+","+Y(v).toFixed(1)).join(" ");
  svg.appendChild(el("polyline",{points:pts,fill:"none",stroke:c,"stroke-width":1.5,"data-series":k}));
  const tot=kind=="sum"?vs.reduce((a,b)=>a+b,0):(vs.length?vs[vs.length-1]:0);
  document.getElementById("tot-"+k).textContent=+tot.toFixed(2);}
}
function rows(tbody,list,cols){const b=document.querySelector(tbody);
 b.replaceChildren(...list.map(x=>{const tr=document.createElement("tr");
  for(const [f,cls] of cols){const td=document.createElement("td");td.textContent=x[f];
   if(cls)td.className=cls;tr.appendChild(td);}return tr;}));}
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
  for(const [id,,kind,series] of charts)draw(id,kind,series,s.history);
  rows("#top tbody",s.top_failing_sources,[["source","l"],["failures"],["last_seen_secs_ago"],["last_principal","l"]]);
  rows("#att tbody",s.under_attack,[["principal","l"],["kind","l"],["origins"],["secs_left"]]);
  if(s.radius){const rs=Object.entries(s.radius.nas).map(([n,c])=>({n,req:c.requests,a:c.accepts,
    rj:c.rejects,du:c.duplicates,dr:Object.entries(c.dropped).filter(([k,x])=>x>0).map(([k,x])=>k+" "+x).join(", ")||"0"}));
   rows("#rt tbody",rs,[["n"],["req"],["a"],["rj"],["du"],["dr"]]);
   document.getElementById("rt").hidden=false; document.getElementById("rh").hidden=false;
   const e=s.radius.eap;
   if(e){const done=e.tls_full+e.tls_resumed+e.ttls_full+e.ttls_resumed+e.failures;
    rows("#et tbody",[{...e,rt:done?(e.round_trips/done).toFixed(1):"-"}],[["conversations"],["tls_full"],
     ["tls_resumed"],["ttls_full"],["ttls_resumed"],["failures"],["rt"],["refused_new"],["held"],["expired"]]);
    document.getElementById("et").hidden=false; document.getElementById("eh").hidden=false;}
   const a=s.radius.accounting;
   if(a){set("online",a.sessions_online);
    const ar=Object.entries(a.nas).map(([n,c])=>({n,req:c.requests,st:Object.values(c.records).reduce((x,y)=>x+y,0),
     du:c.duplicates,dr:Object.entries(c.dropped).filter(([k,x])=>x>0).map(([k,x])=>k+" "+x).join(", ")||"0"}));
    rows("#at tbody",ar,[["n"],["req"],["st"],["du"],["dr"]]);
    document.getElementById("at").hidden=false; document.getElementById("ah").hidden=false;}}
  if(s.ldap){set("lopen",s.ldap.connections_open);
   const lr=Object.entries(s.ldap.operations).map(([op,by])=>({op,res:Object.entries(by).map(([k,x])=>k+" "+x).join(", ")}));
   rows("#lt tbody",lr,[["op","l"],["res","l"]]);
   document.getElementById("lt").hidden=false; document.getElementById("lh").hidden=false;}
  set("err",""); prev=s; document.body.setAttribute("data-polled",(+document.body.getAttribute("data-polled")||0)+1);
 }catch(e){set("err","(status unavailable)");}
}
poll(); setInterval(poll,1000);
</script></body></html>
"##;
