//! Time as a parameter: production uses [`SystemClock`], tests drive a [`ManualClock`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Source of "now" for every time-based rule in the core.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The real monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<Instant>>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualClock {
    /// A clock starting at the real current instant.
    pub fn new() -> Self {
        ManualClock {
            now: Arc::new(Mutex::new(Instant::now())),
        }
    }

    /// Move time forward.
    pub fn advance(&self, by: Duration) {
        *self.now.lock() += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.now.lock()
    }
}
