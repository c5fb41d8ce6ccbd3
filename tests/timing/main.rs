//! The timing tests (issue 16: principal existence must not show in answer latency), in a
//! test binary of their own. They compare latency distributions at a tenth of a
//! millisecond, so nothing else may share the machine while they measure: cargo runs test
//! binaries one after another, and the two tests here hold `exclusive()` against each
//! other. In the one integration binary they ran beside unrelated tests, and a busy
//! neighbour shifted one side of a comparison.

mod enumeration;
#[path = "../integration/server_support.rs"]
#[allow(dead_code)] // The shared helpers; this binary uses a few of them.
mod server_support;
