//! The documented example configuration that `portcullis config example` prints: the
//! top-level sections' text here, each other section's own `EXAMPLE` beside its config
//! type. Every key is present with its default value; `config.rs`'s tests check that the
//! text parses to the defaults.

/// The documented example printed by `portcullis config example`. Every key is present
/// with its default value (a test checks that this text parses to the defaults).
pub fn example() -> String {
    format!(
        "{EXAMPLE_HEAD}{}{}{}{EXAMPLE_TOKENS}{EXAMPLE_VERIFIER}{EXAMPLE_TAIL}{}{}{}{}{}{}{}{}{}",
        portcullis_door::tls::config::EXAMPLE,
        portcullis_oauth::client_auth::config::EXAMPLE,
        portcullis_oauth::registration::config::EXAMPLE,
        portcullis_door_radius::config::EXAMPLE,
        portcullis_door_radius::eap::config::EXAMPLE,
        portcullis_door_radius::radsec::config::EXAMPLE,
        portcullis_door_radius::acct::config::EXAMPLE,
        portcullis_door::audit::EXAMPLE,
        crate::logging::EXAMPLE,
        portcullis_door_admin::config::EXAMPLE,
        crate::upstream::EXAMPLE,
        portcullis_door_ldap::config::EXAMPLE
    )
}

const EXAMPLE_HEAD: &str = r#"# Portcullis configuration (portcullis serve --config FILE).
# Every key is optional; the values shown are the defaults. Unknown keys are errors.

[server]
# Address to listen on. `portcullis serve --http ADDR` overrides it.
http = "127.0.0.1:8080"
# Issuer URL (the `iss` claim and the base of the discovery metadata). Default:
# http://<http address> (https:// with [tls]). Set it when behind a proxy or on 0.0.0.0.
# issuer = "https://auth.example.com"
# Largest accepted request body in bytes; larger bodies get 413.
body_limit = 16384
# Deadline for a whole request in milliseconds, also handed to the verification core so
# it refuses work it cannot finish in time (answered 503 with Retry-After, never a hang).
request_timeout_ms = 10000
# Deadline for receiving the request headers in milliseconds (slow-loris defence). It
# also closes a connection that sits idle this long before (or between) requests.
header_timeout_ms = 10000
# Largest request head (request line and headers) in bytes; a larger one gets 431 and the
# connection is closed. At least 8192.
max_header_bytes = 16384
# Simultaneous connections; further ones wait in the kernel's accept backlog.
max_connections = 10000
# Simultaneous connections from one address; one more is closed at once. Connections
# from trusted_proxies are exempt (a balancer carries many clients).
max_connections_per_source = 256
# Load balancers in front of this instance (CIDRs or addresses). Only for connections
# from these peers is the client address read from `forwarded_header`, walking it from
# the right past trusted hops; from any other peer the header is ignored. Throttling and
# fair queuing then key on the real client. Default: none (loopback included).
# trusted_proxies = ["10.0.0.0/8", "127.0.0.1"]
trusted_proxies = []
# The header those proxies write: "x-forwarded-for" or "forwarded" (RFC 7239). Only
# this one is read, so a client cannot slip in the other.
forwarded_header = "x-forwarded-for"
# For a balancer that forwards TCP (HAProxy `send-proxy-v2`, AWS NLB): connections from
# trusted_proxies start with a PROXY protocol v2 header naming the client, and must (one
# without it is closed); connections from anyone else are served without reading one.
proxy_protocol = false

"#;

const EXAMPLE_TOKENS: &str = r#"[tokens]
# The `aud` claim of access tokens. Default: the issuer URL.
# audience = "https://api.example.com"
# Access token lifetime in seconds (at most 86400). Each client also has its own lifetime
# (`portcullis client add --token-lifetime`, default 3600); a token gets the shorter of
# the two. This bound also decides how long retired signing keys stay published.
lifetime_secs = 3600
# Signing key rotation period in seconds (at least 60). Retired keys stay in the JWKS
# until every token they signed has expired.
key_rotation_secs = 2592000

"#;

/// The `[verifier]` section: the core's `VerifierConfig` (documented in crates/core).
const EXAMPLE_VERIFIER: &str = r#"
# The verification core: dedicated hash pool, fair queuing, admission control, throttling.
[verifier]
# Dedicated hash threads; 0 = one per available core.
pool_threads = 0
# Most verification jobs waiting for the pool; beyond it attempts are answered
# "overloaded" (503 with Retry-After) at once.
queue_capacity = 4096
# Fair-queuing queues per priority class (shuffle-sharding deck size).
queues_per_class = 64
# Queues dealt to each source (shuffle-sharding hand size).
hand_size = 4
# Hash time assumed before any has been measured, in milliseconds.
initial_hash_estimate_ms = 250
# Prefix lengths grouping IPv4 / IPv6 sources for throttling and fairness.
ipv4_prefix_len = 24
ipv6_prefix_len = 64
# Sources always trusted (exempt from per-prefix and per-principal limits), e.g.
# ["10.0.0.0/8", "fd00::/8"].
trusted_cidrs = []
# How long a success makes its (principal, source prefix) trusted, in seconds.
trusted_ttl_secs = 604800
# Answer failures no earlier than this many milliseconds after arrival (0 = off).
reject_delay_ms = 0
# Every rejection leaves a random 0..reject_jitter_us microseconds after its verdict, so
# a wrong password and an unknown name leave through the same timer (0 = off).
reject_jitter_us = 2000
# Retry-After values are multiplied by a random factor in [1, 1 + retry_jitter].
retry_jitter = 0.5
# Most rehash-on-login jobs waiting for the pool (more are dropped; next login retries).
rehash_queue_capacity = 64
# Memory the pool may hold at once for argon2/scrypt (jobs in flight and the argon2
# buffers threads keep), in MiB; jobs beyond it wait. 0 = half the physical memory.
memory_budget_mib = 0

# Weights of the priority classes while they compete for the pool (only ratios matter:
# 99%, 0.75% and 0.25% of a pool the trusted class saturates).
[verifier.shares]
trusted = 396
unknown = 3
suspect = 1

# Queue-wait (CoDel-style) shedding. Absent values are automatic: target = median measured
# hash time, interval = ten times the target.
[verifier.codel]
# target_ms = 250
# interval_ms = 2500

# Failure budgets, enforced before any hash is spent: `burst` failures at once, refilled
# evenly over `period_secs`.
[verifier.throttle]
# Per (principal, source prefix).
principal_prefix = { burst = 5, period_secs = 300 }
# Per source prefix, any principal (password spraying).
prefix = { burst = 100, period_secs = 60 }
# Per principal from untrusted sources (never applied to its trusted sources).
principal = { burst = 20, period_secs = 600 }
# A prefix that used this fraction of its budget is "suspect" (lowest class).
suspect_fill = 0.5
# Failures on one principal from this many distinct untrusted origins within the window
# mean a distributed attack: its untrusted burst drops at once to this many failures, then
# one per refill interval (principal.period_secs / principal.burst). 0 = off.
distributed_origins = 3
distributed_window_secs = 600

# How long an unknown principal waits before its rejection (a timer, no hash):
# "sampled" (like real verifications), { strategy = "fixed", ms = N } or "none".
[verifier.unknown_delay]
strategy = "sampled"
"#;

const EXAMPLE_TAIL: &str = r#"
[policy]
# Algorithm for newly stored password hashes; stored hashes that differ from the policy
# are upgraded at the next successful login: "pbkdf2-sha256", "pbkdf2-sha512",
# "argon2id", "bcrypt" or "scrypt". Only the parameters of the chosen algorithm may be
# set (others are an error).
algorithm = "pbkdf2-sha256"
# PBKDF2 iterations. Default 600000 for SHA-256, 210000 for SHA-512.
iterations = 600000
# argon2id: memory_kib = 19456, time_cost = 2, parallelism = 1
# bcrypt: cost = 12
# scrypt: log_n = 17, block_size = 8, parallelism = 1

[store]
# Data directory: SQLite database, the 0600 secrets file (peppers, master key).
# `portcullis serve --data-dir DIR` overrides it.
data_dir = "./portcullis-data"
# How long client records (secret hashes, allowed scopes and grants) and users' password
# hashes are cached in milliseconds (at most 60000; 0 disables). With SQLite a change made
# by the CLI takes up to this long to take effect; with PostgreSQL ([store] url) every
# instance drops a changed record at once (LISTEN/NOTIFY) and this only bounds staleness
# while that feed is down.
client_cache_ttl_ms = 1000
# Several instances: a PostgreSQL identity store shared by all of them (absent: SQLite in
# data_dir). Migrations run at start-up, safely when instances start together.
# url = "postgres://portcullis@db.example.com/portcullis"
# The secrets file (pepper keys, master key) used with `url`; never in the database.
# Give every instance the same file, as you would a Kubernetes secret. Default:
# <data_dir>/secrets.toml, created on first use.
# secrets_file = "/etc/portcullis/secrets.toml"
# A PostgreSQL read replica for identity lookups on a cache miss (writes and the change
# feed stay on `url`). A record changed within the last client_cache_ttl_ms is read from
# `url`, so keep the replica's replay lag below client_cache_ttl_ms.
# read_url = "postgres://portcullis@db-replica.example.com/portcullis"
# Most PostgreSQL connections of this instance.
max_connections = 16

[throttle]
# Several instances: failure budgets and trusted-source marks in Redis (or Valkey), so an
# attacker spreading guesses over the instances gets one budget, not one per instance.
# Absent: in this process. If Redis fails, each instance falls back to its own budgets
# (never to none) and returns to Redis when it answers. One node, a Redis Cluster (seed
# nodes; budgets spread over every shard, a down shard costs only its own budgets) or a
# primary managed by Sentinel (the Sentinels and the name they monitor):
# redis = "redis://127.0.0.1:6379/0"
# redis = { cluster = ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"] }
# redis = { sentinel = ["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"], master = "portcullis" }
# With ACL users: credentials in the `sentinel` URLs are the Sentinels' own user;
# master_username and master_password are the data nodes' (the primary the Sentinels
# name), a user of their own (master_username absent: Redis's `default` user). A Cluster
# or a single node takes its credentials in its URLs (redis://user:password@host:port).
# redis = { sentinel = ["redis://sentinel-user:s3cret@10.0.0.1:26379"], master = "portcullis", master_username = "portcullis", master_password = "an0ther" }
# Namespace of every key (portcullis:...); each identity's keys carry their own hash tag.
key_prefix = "portcullis"
# Bound on one request's use of Redis in milliseconds, end to end (connecting, every
# shard an attempt touches, the compensation of a refused one); slower means "down" for
# this request. A Cluster's slot map is refreshed in the background, never inside it.
timeout_ms = 200
# After a failure, milliseconds on per-instance budgets before Redis is tried again.
retry_ms = 1000
"#;
