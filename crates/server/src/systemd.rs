//! systemd integration for `Type=notify` units: readiness, a status line, stopping, and the
//! watchdog fed from the async runtime. Owns nothing else; `portcullis serve` decides
//! *when* to call these (readiness only once every listener answers `/readyz`).
//!
//! Every function does nothing when `NOTIFY_SOCKET` is unset (run by hand, in a container,
//! by a test), so callers need no conditions. Notification failures are logged, never
//! fatal: a server that cannot reach the service manager still serves.

use std::time::Duration;

use sd_notify::NotifyState;

/// Tell the service manager that start-up finished, with a status line.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// Tell the service manager that the server is draining (SIGTERM/SIGINT received).
pub fn stopping() {
    send(&[
        NotifyState::Stopping,
        NotifyState::Status("draining connections"),
    ]);
}

/// A free-form status line (`systemctl status` shows it).
pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

fn send(states: &[NotifyState<'_>]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::warn!("systemd notification failed: {e}");
    }
}

/// The watchdog period systemd asks for (`WatchdogSec=`), if any.
///
/// Parsed here rather than with `sd_notify::watchdog_enabled`, which requires
/// `WATCHDOG_PID`: libsystemd's `sd_watchdog_enabled` accepts a missing `WATCHDOG_PID`
/// (the variable only guards against children inheriting the setting), and so do we.
pub fn watchdog_period() -> Option<Duration> {
    std::env::var_os("NOTIFY_SOCKET")?;
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if usec == 0 {
        return None;
    }
    if let Some(pid) = std::env::var("WATCHDOG_PID")
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        && pid != std::process::id()
    {
        return None;
    }
    Some(Duration::from_micros(usec))
}

/// Feed the watchdog from a task on the current Tokio runtime, at half the period systemd
/// asked for (its own recommendation). The task runs on the same worker threads as the
/// request handlers, so a runtime wedged by a blocking call or a deadlock stops the pings
/// and systemd restarts the process. Does nothing without `WatchdogSec=`.
pub fn spawn_watchdog() -> Option<tokio::task::JoinHandle<()>> {
    let period = watchdog_period()?;
    tracing::info!("systemd watchdog: pinging every {:?}", period / 2);
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(period / 2);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            send(&[NotifyState::Watchdog]);
        }
    }))
}
