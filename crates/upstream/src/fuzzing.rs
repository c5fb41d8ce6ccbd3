//! Entry points for the fuzz targets (fuzz/fuzz_targets/upstream_*.rs); not an API.
//!
//! Whatever bytes a directory server sends back cross a trust boundary: a bind or a search
//! must end in an answer or an error, never a panic. (The configuration's target uses the
//! public API only.)

use std::time::Duration;

use ldap3_proto::proto::{LdapFilter, LdapSearchScope};
use tokio::io::AsyncWriteExt;

use crate::conn::Connection;

/// A server that answers a bind, then a search, with `reply` (any bytes) and closes.
pub fn server_reply(reply: &[u8]) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        for op in 0..2 {
            let (client, mut server) = tokio::io::duplex(64 * 1024);
            let bytes = reply.to_vec();
            let writer = tokio::spawn(async move {
                let _ = server.write_all(&bytes).await;
                let _ = server.shutdown().await;
                // Keep the read side open until the client is done, then drop.
                let mut sink = Vec::new();
                let _ = tokio::io::AsyncReadExt::read_to_end(&mut server, &mut sink).await;
            });
            let mut conn = Connection::over_stream(Box::new(client));
            let limit = Duration::from_millis(200);
            if op == 0 {
                let _ = conn.bind("uid=a,dc=example", "pw", limit).await;
            } else {
                let filter = LdapFilter::Equality("uid".into(), "a".into());
                let _ = conn
                    .search(
                        "dc=example",
                        LdapSearchScope::Subtree,
                        filter,
                        &["1.1"],
                        2,
                        limit,
                    )
                    .await;
            }
            drop(conn);
            let _ = writer.await;
        }
    });
}
