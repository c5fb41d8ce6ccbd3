//! Where the shared throttle state lives: one Redis node, a Sentinel-managed primary, or
//! a Redis Cluster ([`RedisTarget`], validated from `[throttle] redis`), the connection
//! to it (`Conn`, one type whatever the target), and the placement of keys in Cluster
//! slots ([`slot_of_tag`], [`tag_of`]).
//!
//! The `redis` crate does the protocol work: a Cluster connection follows MOVED and ASK,
//! reloads its slot map when a node fails or a slot moves, and routes `SCRIPT LOAD` to
//! every primary (so `NOSCRIPT` after a failover is repaired by the store's
//! `EVALSHA`-then-load); a Sentinel client asks the Sentinels for the current primary on
//! every (re)connect.

use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// Slots of a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// Where the shared state is, as configured.
#[derive(Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// One node: a `redis://`, `rediss://` or `redis+unix://` URL.
    Node(String),
    /// A Redis Cluster, by seed nodes (`redis://` or `rediss://` URLs, credentials in the
    /// first one apply to every node); the rest of the topology is discovered.
    Cluster(Vec<String>),
    /// A primary managed by Sentinel: the Sentinels' URLs and the monitored primary's
    /// name. The primary is asked for again on every reconnect, so a failover is followed.
    Sentinel {
        /// `redis://host:port` of each Sentinel; credentials in a URL (`redis://user:pass@`)
        /// are the Sentinels' own ACL user.
        nodes: Vec<String>,
        /// The name the Sentinels monitor the primary under.
        master: String,
        /// The data nodes' ACL user and password (the primary the Sentinels name and its
        /// replicas), separate from the Sentinels'; `None`: the data nodes ask for none.
        master_auth: Option<RedisAuth>,
    },
}

/// An ACL user and password for Redis nodes (its `Debug` hides the password).
#[derive(Clone, PartialEq, Eq)]
pub struct RedisAuth {
    /// The ACL user; `None`: Redis's `default` user (`requirepass`).
    pub username: Option<String>,
    /// Its password.
    pub password: String,
}

impl std::fmt::Debug for RedisAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisAuth")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .finish()
    }
}

impl RedisAuth {
    /// The connection settings a Sentinel client uses for the data nodes it names.
    fn node_info(auth: Option<&RedisAuth>) -> SentinelNodeConnectionInfo {
        SentinelNodeConnectionInfo {
            tls_mode: None,
            redis_connection_info: auth.map(|a| redis::RedisConnectionInfo {
                username: a.username.clone(),
                password: Some(a.password.clone()),
                ..Default::default()
            }),
        }
    }
}

impl std::fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

impl RedisTarget {
    /// A description without credentials (for logs, status and `config check`).
    pub fn shown(&self) -> String {
        let list = |v: &[String]| {
            v.iter()
                .map(|u| crate::backend::without_credentials(u))
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            RedisTarget::Node(u) => crate::backend::without_credentials(u),
            RedisTarget::Cluster(v) => format!("cluster {}", list(v)),
            RedisTarget::Sentinel {
                nodes,
                master,
                master_auth,
            } => {
                let user = match master_auth {
                    Some(RedisAuth {
                        username: Some(u), ..
                    }) => format!(" as {u}"),
                    Some(_) => " with a password".into(),
                    None => String::new(),
                };
                format!("sentinel {} master {master}{user}", list(nodes))
            }
        }
    }

    /// Whether keys of different slots may live on different nodes.
    pub fn is_cluster(&self) -> bool {
        matches!(self, RedisTarget::Cluster(_))
    }

    /// Check every URL and name now, so a typo is a configuration error at start-up
    /// rather than a silent fallback to per-instance budgets.
    pub fn validate(&self) -> Result<(), String> {
        let tcp = |u: &str| -> Result<(), String> {
            let info = redis::IntoConnectionInfo::into_connection_info(u)
                .map_err(|e| format!("{}: {e}", crate::backend::without_credentials(u)))?;
            match info.addr {
                redis::ConnectionAddr::Tcp(..) | redis::ConnectionAddr::TcpTls { .. } => Ok(()),
                _ => Err(format!(
                    "{}: a Cluster or Sentinel node needs a redis:// or rediss:// URL",
                    crate::backend::without_credentials(u)
                )),
            }
        };
        let list = |v: &[String], what: &str| -> Result<(), String> {
            if v.is_empty() {
                return Err(format!("{what}: at least one node"));
            }
            for (i, u) in v.iter().enumerate() {
                tcp(u)?;
                if v[..i].contains(u) {
                    return Err(format!(
                        "{what}: {} is listed twice",
                        crate::backend::without_credentials(u)
                    ));
                }
            }
            Ok(())
        };
        match self {
            RedisTarget::Node(u) => redis::Client::open(u.as_str())
                .map(|_| ())
                .map_err(|e| e.to_string()),
            RedisTarget::Cluster(v) => list(v, "cluster"),
            RedisTarget::Sentinel {
                nodes,
                master,
                master_auth,
            } => {
                list(nodes, "sentinel")?;
                if master.is_empty() || master.chars().any(|c| c.is_whitespace()) {
                    return Err("sentinel: `master` must be a non-empty name".into());
                }
                if let Some(a) = master_auth {
                    if a.password.is_empty() {
                        return Err("sentinel: `master_password` must not be empty".into());
                    }
                    if a.username.as_ref().is_some_and(|u| {
                        u.is_empty() || u.chars().any(|c| c.is_whitespace() || c.is_control())
                    }) {
                        return Err("sentinel: `master_username` must be a non-empty name".into());
                    }
                }
                Ok(())
            }
        }
    }
}

/// How connections are made for a target.
pub(crate) enum Backend {
    Node(redis::Client),
    Cluster {
        client: ClusterClient,
        seeds: Vec<String>,
    },
    Sentinel {
        client: tokio::sync::Mutex<SentinelClient>,
        nodes: Vec<String>,
        master: String,
        /// How the data nodes are reached (their ACL user), for the pub/sub client too.
        node_info: SentinelNodeConnectionInfo,
    },
}

impl Backend {
    pub(crate) fn open(target: &RedisTarget, timeout: Duration) -> Result<Backend, String> {
        target.validate()?;
        Ok(match target {
            RedisTarget::Node(u) => {
                Backend::Node(redis::Client::open(u.as_str()).map_err(|e| e.to_string())?)
            }
            RedisTarget::Cluster(seeds) => Backend::Cluster {
                client: ClusterClient::builder(seeds.clone())
                    .connection_timeout(timeout)
                    .response_timeout(timeout)
                    // Within one call's time bound: a MOVED/ASK or a slot-map refresh
                    // after a failover is retried; a dead node is not waited for.
                    .retries(2)
                    .min_retry_wait(5)
                    .max_retry_wait(50)
                    .build()
                    .map_err(|e| e.to_string())?,
                seeds: seeds.clone(),
            },
            RedisTarget::Sentinel {
                nodes,
                master,
                master_auth,
            } => {
                let node_info = RedisAuth::node_info(master_auth.as_ref());
                Backend::Sentinel {
                    client: tokio::sync::Mutex::new(
                        SentinelClient::build(
                            nodes.clone(),
                            master.clone(),
                            Some(node_info.clone()),
                            SentinelServerType::Master,
                        )
                        .map_err(|e| e.to_string())?,
                    ),
                    nodes: nodes.clone(),
                    master: master.clone(),
                    node_info,
                }
            }
        })
    }

    /// A new connection (multiplexed: concurrent calls share it, pipelined).
    pub(crate) async fn connect(&self, timeout: Duration) -> redis::RedisResult<Conn> {
        Ok(match self {
            Backend::Node(client) => {
                let cfg = ConnectionManagerConfig::new()
                    .set_connection_timeout(timeout)
                    .set_response_timeout(timeout)
                    .set_number_of_retries(1);
                Conn::Node(client.get_connection_manager_with_config(cfg).await?)
            }
            Backend::Cluster { client, .. } => Conn::Cluster(client.get_async_connection().await?),
            Backend::Sentinel { client: s, .. } => {
                let cfg = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(timeout)
                    .set_response_timeout(timeout);
                let client = s.lock().await.async_get_client().await?;
                Conn::Multiplexed(
                    client
                        .get_multiplexed_async_connection_with_config(&cfg)
                        .await?,
                )
            }
        })
    }

    /// A function giving, for attempt `i`, a client of one node that receives every
    /// `PUBLISH` of the deployment: the node itself, the current Sentinel primary (asked
    /// for again each time), or the Cluster seeds in turn (a Cluster broadcasts
    /// `PUBLISH` to every node).
    #[allow(clippy::type_complexity)]
    pub(crate) fn pubsub_resolver(
        &self,
    ) -> Box<dyn Fn(usize) -> BoxFuture<'static, redis::RedisResult<redis::Client>> + Send> {
        match self {
            Backend::Node(c) => {
                let c = c.clone();
                Box::new(move |_| {
                    let c = c.clone();
                    async move { Ok(c) }.boxed()
                })
            }
            Backend::Cluster { seeds, .. } => {
                let seeds = seeds.clone();
                Box::new(move |i| {
                    let url = seeds[i % seeds.len().max(1)].clone();
                    async move { redis::Client::open(url.as_str()) }.boxed()
                })
            }
            Backend::Sentinel {
                nodes,
                master,
                node_info,
                ..
            } => {
                let (nodes, master, info) = (nodes.clone(), master.clone(), node_info.clone());
                Box::new(move |_| {
                    let (nodes, master, info) = (nodes.clone(), master.clone(), info.clone());
                    async move {
                        SentinelClient::build(
                            nodes,
                            master,
                            Some(info),
                            SentinelServerType::Master,
                        )?
                        .async_get_client()
                        .await
                    }
                    .boxed()
                })
            }
        }
    }
}

/// A connection to whichever target (all three are multiplexed and cheap to clone).
#[derive(Clone)]
pub(crate) enum Conn {
    Node(ConnectionManager),
    Multiplexed(redis::aio::MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Node(c) => c.req_packed_command(cmd),
            Conn::Multiplexed(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Node(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Multiplexed(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Node(c) => c.get_db(),
            Conn::Multiplexed(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The hash tag of one identity's key: 16 hex digits of a stable 64-bit FNV-1a of `id`.
/// Hex never contains a brace, so a principal holding `{` or `}` cannot move its key's
/// slot, and every instance places an identity in the same slot.
pub fn tag_of(id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The Cluster slot of keys carrying hash tag `tag` (CRC16/XMODEM mod 16384, as Redis).
pub fn slot_of_tag(tag: &str) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(tag.as_bytes()) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // CLUSTER KEYSLOT values from a real Redis 7 (`redis-cli cluster keyslot ...`).
        assert_eq!(slot_of_tag("foo"), 12182);
        assert_eq!(slot_of_tag("bar"), 5061);
        assert_eq!(slot_of_tag("123456789"), 12739);
    }

    #[test]
    fn tags_are_stable_hex_and_spread() {
        assert_eq!(tag_of("a"), tag_of("a"));
        assert_eq!(tag_of("").len(), 16);
        assert!(tag_of("x{y}z").bytes().all(|b| b.is_ascii_hexdigit()));
        let slots: std::collections::HashSet<u16> = (0..1000)
            .map(|i| slot_of_tag(&tag_of(&format!("pp:c:10.0.{i}.0/24:user{i}"))))
            .collect();
        assert!(slots.len() > 950, "{}", slots.len());
    }

    #[test]
    fn targets_are_validated() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(
            RedisTarget::Node("redis://127.0.0.1".into())
                .validate()
                .is_ok()
        );
        assert!(RedisTarget::Node("http://x".into()).validate().is_err());
        assert!(RedisTarget::Cluster(vec![]).validate().is_err());
        assert!(
            RedisTarget::Cluster(s(&["redis://a:1", "redis://b:2"]))
                .validate()
                .is_ok()
        );
        assert!(
            RedisTarget::Cluster(s(&["redis://a:1", "redis://a:1"]))
                .validate()
                .is_err()
        );
        assert!(
            RedisTarget::Cluster(s(&["redis+unix:///tmp/r.sock"]))
                .validate()
                .is_err()
        );
        let sentinel = |m: &str| RedisTarget::Sentinel {
            nodes: s(&["redis://127.0.0.1:26379"]),
            master: m.into(),
            master_auth: None,
        };
        assert!(sentinel("mymaster").validate().is_ok());
        assert!(sentinel("").validate().is_err());
        assert!(sentinel("a b").validate().is_err());
        let secret = RedisTarget::Cluster(s(&["redis://:hunter2@a:1"]));
        assert!(!format!("{secret:?}").contains("hunter2"));
        let auth = |u: Option<&str>, p: &str| RedisTarget::Sentinel {
            nodes: s(&["redis://sentinel-user:pw1@127.0.0.1:26379"]),
            master: "m".into(),
            master_auth: Some(RedisAuth {
                username: u.map(Into::into),
                password: p.into(),
            }),
        };
        assert!(auth(Some("data"), "pw2").validate().is_ok());
        assert!(auth(None, "pw2").validate().is_ok());
        assert!(auth(Some("data"), "").validate().is_err());
        assert!(auth(Some("a b"), "pw2").validate().is_err());
        let shown = format!("{:?}", auth(Some("data"), "pw2"));
        assert!(!shown.contains("pw1") && !shown.contains("pw2"), "{shown}");
    }
}
