//! For the unit tests that measure time: they run one at a time (the
//! other unit tests of the binary run beside them, but no two of these
//! compete for the two cores), and their upper bounds stretch by the
//! factor `PACE_TEST_SLACK` (default 1) on a machine known to be slow.
//! The end-to-end tests have the same in `tests/common`.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

static TIMING: Mutex<()> = Mutex::new(());

/// Held by a unit test while it measures time.
pub fn lock() -> MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `bound` stretched by `PACE_TEST_SLACK` (a factor of at least 1).
pub fn stretched(bound: Duration) -> Duration {
    bound.mul_f64(slack_factor())
}

/// `PACE_TEST_SLACK`, or 1 when it is unset or not a number of at least 1.
pub fn slack_factor() -> f64 {
    std::env::var("PACE_TEST_SLACK")
        .ok()
        .and_then(|factor| factor.trim().parse::<f64>().ok())
        .filter(|factor| factor.is_finite() && *factor >= 1.0)
        .unwrap_or(1.0)
}
