use super::*;

const OPEN: Duration = Duration::from_secs(5);

#[test]
fn opens_after_consecutive_failures_only() {
    let b = Breaker::new(3, OPEN);
    let t = Instant::now();
    assert!(!b.failure(t));
    b.success(); // an answer resets the count
    assert!(!b.failure(t));
    assert!(!b.failure(t));
    assert_eq!(b.pass(t), Some(Pass::Normal));
    assert!(b.failure(t));
    assert_eq!(b.state(t), BreakerState::Open);
    assert_eq!(b.pass(t + OPEN - Duration::from_millis(1)), None);
}

#[test]
fn half_open_lets_one_probe_through_and_its_result_decides() {
    let b = Breaker::new(1, OPEN);
    let t = Instant::now();
    assert!(b.failure(t));
    let later = t + OPEN;
    assert_eq!(b.state(later), BreakerState::HalfOpen);
    assert_eq!(b.pass(later), Some(Pass::Probe));
    // While the probe is out, every other check skips the server.
    assert_eq!(b.pass(later), None);
    // A failed probe opens the breaker for a whole new period.
    assert!(b.failure(later));
    assert_eq!(b.pass(later + OPEN - Duration::from_millis(1)), None);
    assert_eq!(b.pass(later + OPEN), Some(Pass::Probe));
    b.success();
    assert_eq!(b.state(later + OPEN), BreakerState::Closed);
    assert_eq!(b.pass(later + OPEN), Some(Pass::Normal));
    assert_eq!(b.pass(later + OPEN), Some(Pass::Normal));
}

#[test]
fn an_abandoned_probe_lets_another_check_probe() {
    let b = Breaker::new(1, OPEN);
    let t = Instant::now();
    b.failure(t);
    assert_eq!(b.pass(t + OPEN), Some(Pass::Probe));
    b.probe_abandoned();
    assert_eq!(b.pass(t + OPEN), Some(Pass::Probe));
}
