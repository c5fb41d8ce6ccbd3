//! `[throttle] redis`: where the shared failure budgets live, in one of three forms,
//! validated into a [`RedisTarget`] (issue 30):
//!
//! ```toml
//! redis = "redis://127.0.0.1:6379/0"                                 # one node
//! redis = { cluster = ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"] }   # Cluster seeds
//! redis = { sentinel = ["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"], master = "portcullis" }
//! redis = { sentinel = ["redis://su:pw@10.0.0.1:26379"], master = "portcullis", master_username = "portcullis", master_password = "..." }
//! ```
//!
//! A string is a node's URL; a table names either a Cluster (`cluster`: seed nodes, the
//! rest is discovered) or a Sentinel group (`sentinel`: the Sentinels, `master`: the name
//! they monitor). With Sentinel, credentials in the `sentinel` URLs are the Sentinels'
//! own ACL user; `master_username` and `master_password` are the data nodes' (the
//! primary the Sentinels name), issue 41. Anything else (both, neither, `master` without
//! `sentinel`, `master_*` without `sentinel`, a user without a password, an unknown key,
//! a URL that does not parse) is a configuration error naming the field.

use portcullis_store::{RedisAuth, RedisTarget};
use serde::{Deserialize, Deserializer};

use portcullis_door::config_error::{ConfigError, invalid};

/// The table form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRedisTable {
    /// Redis Cluster seed nodes (`redis://` or `rediss://` URLs).
    cluster: Option<Vec<String>>,
    /// Sentinel nodes (`redis://` or `rediss://` URLs).
    sentinel: Option<Vec<String>>,
    /// With `sentinel`: the monitored primary's name.
    master: Option<String>,
    /// With `sentinel`: the data nodes' ACL user (absent: Redis's `default` user).
    master_username: Option<String>,
    /// With `sentinel`: the data nodes' password.
    master_password: Option<String>,
}

/// `[throttle] redis` as written: a URL or a table.
#[derive(Debug)]
pub enum FileRedis {
    /// `redis = "redis://..."`.
    Url(String),
    /// `redis = { cluster = [...] }` or `redis = { sentinel = [...], master = "..." }`.
    Table {
        /// Cluster seeds.
        cluster: Option<Vec<String>>,
        /// Sentinels.
        sentinel: Option<Vec<String>>,
        /// Monitored name.
        master: Option<String>,
        /// The data nodes' ACL user and password, as written.
        master_auth: (Option<String>, Option<String>),
    },
}

impl<'de> Deserialize<'de> for FileRedis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = FileRedis;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a redis:// URL, or a table with `cluster = [urls]` or \
                     `sentinel = [urls]` and `master = \"name\"`",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FileRedis, E> {
                Ok(FileRedis::Url(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, m: A) -> Result<FileRedis, A::Error> {
                let t =
                    FileRedisTable::deserialize(serde::de::value::MapAccessDeserializer::new(m))?;
                Ok(FileRedis::Table {
                    cluster: t.cluster,
                    sentinel: t.sentinel,
                    master: t.master,
                    master_auth: (t.master_username, t.master_password),
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl FileRedis {
    /// The validated target.
    pub fn target(self) -> Result<RedisTarget, ConfigError> {
        let target = match self {
            FileRedis::Url(u) => RedisTarget::Node(u),
            FileRedis::Table {
                cluster: Some(c),
                sentinel: None,
                master: None,
                master_auth: (None, None),
            } => RedisTarget::Cluster(c),
            FileRedis::Table {
                cluster: None,
                sentinel: Some(nodes),
                master: Some(master),
                master_auth,
            } => RedisTarget::Sentinel {
                nodes,
                master,
                master_auth: master_auth_of(master_auth)?,
            },
            FileRedis::Table {
                cluster: None,
                sentinel: Some(_),
                master: None,
                ..
            } => return Err(invalid("throttle.redis: `sentinel` needs `master`")),
            FileRedis::Table {
                cluster: Some(_), ..
            } => {
                return Err(invalid(
                    "throttle.redis: `cluster` goes alone (no `sentinel`, `master` or \
                     `master_*`; a Cluster's credentials are in its URLs)",
                ));
            }
            FileRedis::Table { .. } => {
                return Err(invalid(
                    "throttle.redis: a table needs `cluster` or `sentinel` with `master`",
                ));
            }
        };
        target
            .validate()
            .map_err(|e| invalid(format!("throttle.redis: {e}")))?;
        Ok(target)
    }
}

/// The data nodes' credentials of a Sentinel table: a password, with or without a user.
fn master_auth_of(
    (username, password): (Option<String>, Option<String>),
) -> Result<Option<RedisAuth>, ConfigError> {
    match (username, password) {
        (None, None) => Ok(None),
        (username, Some(password)) => Ok(Some(RedisAuth { username, password })),
        (Some(_), None) => Err(invalid(
            "throttle.redis: `master_username` needs `master_password`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T {
        redis: FileRedis,
    }

    fn parse(s: &str) -> Result<RedisTarget, String> {
        toml::from_str::<T>(s)
            .map_err(|e| e.to_string())?
            .redis
            .target()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn issue_30_the_three_forms_parse_and_mistakes_are_errors() {
        assert_eq!(
            parse(r#"redis = "redis://127.0.0.1:6379/0""#).unwrap(),
            RedisTarget::Node("redis://127.0.0.1:6379/0".into())
        );
        assert_eq!(
            parse(r#"redis = { cluster = ["redis://a:1", "redis://b:2"] }"#).unwrap(),
            RedisTarget::Cluster(vec!["redis://a:1".into(), "redis://b:2".into()])
        );
        assert_eq!(
            parse(r#"redis = { sentinel = ["redis://s:26379"], master = "m" }"#).unwrap(),
            RedisTarget::Sentinel {
                nodes: vec!["redis://s:26379".into()],
                master: "m".into(),
                master_auth: None,
            }
        );
        assert_eq!(
            parse(
                r#"redis = { sentinel = ["redis://su:sp@s:26379"], master = "m", master_username = "du", master_password = "dp" }"#
            )
            .unwrap(),
            RedisTarget::Sentinel {
                nodes: vec!["redis://su:sp@s:26379".into()],
                master: "m".into(),
                master_auth: Some(RedisAuth {
                    username: Some("du".into()),
                    password: "dp".into()
                }),
            }
        );
        for (bad, says) in [
            (
                r#"redis = { sentinel = ["redis://s:1"] }"#,
                "needs `master`",
            ),
            (
                r#"redis = { cluster = ["redis://a:1"], master = "m" }"#,
                "goes alone",
            ),
            (r#"redis = {}"#, "needs `cluster`"),
            (r#"redis = { clusters = ["redis://a:1"] }"#, "unknown field"),
            (r#"redis = { cluster = [] }"#, "at least one"),
            (r#"redis = { cluster = ["http://a:1"] }"#, "throttle.redis"),
            (r#"redis = "http://a""#, "throttle.redis"),
            (r#"redis = 5"#, "a redis:// URL, or a table"),
            (
                r#"redis = { sentinel = ["redis://s:1"], master = "" }"#,
                "non-empty",
            ),
            (
                r#"redis = { sentinel = ["redis://s:1"], master = "m", master_username = "u" }"#,
                "needs `master_password`",
            ),
            (
                r#"redis = { sentinel = ["redis://s:1"], master = "m", master_password = "" }"#,
                "must not be empty",
            ),
            (
                r#"redis = { cluster = ["redis://a:1"], master_password = "p" }"#,
                "goes alone",
            ),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
