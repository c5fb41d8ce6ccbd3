//! [`AccountingStore`]: RADIUS accounting (issue 28): the records as received (duplicates
//! stored once), the sessions they fold into, retention and the writer's own connection.
//!
//! Used by the RADIUS accounting door (its writer appends batches over a
//! [`dedicated`](AccountingStore::dedicated) handle; its maintenance prunes and counts
//! open sessions), the CLI's `acct` commands and the demo.

use std::sync::Arc;

use async_trait::async_trait;

use crate::accounting::{AcctRecord, AcctSession, SessionQuery};
use crate::error::StoreError;

/// RADIUS accounting records and sessions.
#[async_trait]
pub trait AccountingStore: Send + Sync {
    /// Store a batch of accounting records in one transaction and return after its
    /// commit (durable: the server acknowledges them then); per record, whether it was
    /// new (`false`: a duplicate, stored before). New records fold into their session;
    /// a new Accounting-On/Off closes its NAS's open sessions.
    async fn append_accounting(&self, records: &[AcctRecord]) -> Result<Vec<bool>, StoreError>;
    /// Another handle on the same database over one connection of its own, opened now,
    /// from the calling thread, and kept (never idled out or recycled), for a writer that
    /// must not share the pool: the accounting writer, which runs below authentication's
    /// CPU priority. SQLite runs each connection on a worker thread that the connect
    /// spawns, and on Linux a new thread inherits its creator's nice value, so the
    /// connection's statements run at the caller's priority too.
    async fn dedicated(&self) -> Result<Arc<dyn AccountingStore>, StoreError>;
    /// Sessions matching `query`, oldest start first.
    async fn acct_sessions(&self, query: &SessionQuery) -> Result<Vec<AcctSession>, StoreError>;
    /// Records received at or after `since` (unix seconds), oldest first, at most `limit`.
    async fn acct_records_since(
        &self,
        since: i64,
        limit: u32,
    ) -> Result<Vec<AcctRecord>, StoreError>;
    /// Forget records received before `before`, and sessions not updated since then;
    /// returns how many records went.
    async fn prune_accounting(&self, before: i64) -> Result<u64, StoreError>;
    /// How many sessions are open.
    async fn acct_sessions_online(&self) -> Result<u64, StoreError>;
}
