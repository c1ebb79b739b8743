//! The run ends on time even when a script does not return.
//!
//! An engine thread looks at its clock and at the stop flag between Lua
//! calls, so a script stuck in a loop in `response()` or `delay()` would
//! keep the run going forever. The watchdog, on the collecting thread,
//! knows when every thread should be done: a grace period after the end of
//! the run plus the collection of late responses, or after a stop (a
//! signal, a script error elsewhere). A thread still running then has its
//! Lua call interrupted; one that still does not finish (LuaJIT cannot
//! interrupt a loop it compiled) is given up, and the report covers what
//! the other threads measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How long threads get to finish, once they should have.
const GRACE_NS: u64 = 1_000_000_000;
/// The same after a second signal: the user is in a hurry.
const HURRIED_GRACE_NS: u64 = 100_000_000;

/// What to do about the threads still running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing yet.
    Wait,
    /// Interrupt their Lua calls.
    Interrupt,
    /// Stop waiting for them.
    GiveUp,
}

pub struct Watchdog {
    /// How long the run lasts after its start: the duration, then the
    /// collection of responses in flight (the timeout).
    lasts_ns: u64,
    stop: Arc<AtomicBool>,
    hurry: Arc<AtomicBool>,
    /// When the stop flag was first seen set.
    stop_seen_ns: Option<u64>,
    interrupted_ns: Option<u64>,
}

impl Watchdog {
    /// `hurry` is set by a second signal.
    pub fn new(lasts_ns: u64, stop: Arc<AtomicBool>, hurry: Arc<AtomicBool>) -> Watchdog {
        Watchdog { lasts_ns, stop, hurry, stop_seen_ns: None, interrupted_ns: None }
    }

    /// The verdict at `now` for a run that started at `start_ns` (None:
    /// not yet) with `running` threads still going.
    pub fn verdict(&mut self, now: u64, start_ns: Option<u64>, running: bool) -> Verdict {
        if self.stop.load(Ordering::Relaxed) {
            self.stop_seen_ns.get_or_insert(now);
        }
        if !running {
            return Verdict::Wait;
        }
        let grace = if self.hurry.load(Ordering::Relaxed) { HURRIED_GRACE_NS } else { GRACE_NS };
        if let Some(interrupted) = self.interrupted_ns {
            return if now >= interrupted + grace { Verdict::GiveUp } else { Verdict::Wait };
        }
        let ended = start_ns.map(|start| start + self.lasts_ns);
        let over = match (self.stop_seen_ns, ended) {
            (Some(stop), Some(ended)) => stop.min(ended),
            (stop, ended) => stop.or(ended).unwrap_or(u64::MAX),
        };
        if now >= over.saturating_add(grace) {
            self.interrupted_ns = Some(now);
            // The other threads stop too.
            self.stop.store(true, Ordering::Relaxed);
            Verdict::Interrupt
        } else {
            Verdict::Wait
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn watchdog() -> (Watchdog, Arc<AtomicBool>, Arc<AtomicBool>) {
        let (stop, hurry) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        (Watchdog::new(12 * S, stop.clone(), hurry.clone()), stop, hurry)
    }

    #[test]
    fn a_thread_running_past_the_end_is_interrupted_then_given_up() {
        let (mut w, stop, _) = watchdog();
        assert_eq!(w.verdict(5 * S, None, true), Verdict::Wait);
        assert_eq!(w.verdict(12 * S, Some(S), true), Verdict::Wait);
        // The run (1 s + 12 s) and its grace are over.
        assert_eq!(w.verdict(14 * S, Some(S), true), Verdict::Interrupt);
        assert!(stop.load(Ordering::Relaxed));
        assert_eq!(w.verdict(14 * S + S / 2, Some(S), true), Verdict::Wait);
        assert_eq!(w.verdict(15 * S, Some(S), true), Verdict::GiveUp);
    }

    #[test]
    fn finished_threads_need_nothing() {
        let (mut w, _, _) = watchdog();
        assert_eq!(w.verdict(100 * S, Some(S), false), Verdict::Wait);
    }

    #[test]
    fn a_stop_ends_the_run_early() {
        let (mut w, stop, _) = watchdog();
        assert_eq!(w.verdict(2 * S, Some(S), true), Verdict::Wait);
        stop.store(true, Ordering::Relaxed);
        assert_eq!(w.verdict(3 * S, Some(S), true), Verdict::Wait);
        assert_eq!(w.verdict(4 * S, Some(S), true), Verdict::Interrupt);
    }

    #[test]
    fn a_stop_before_the_start_counts() {
        let (mut w, stop, _) = watchdog();
        stop.store(true, Ordering::Relaxed);
        assert_eq!(w.verdict(S, None, true), Verdict::Wait);
        assert_eq!(w.verdict(2 * S, None, true), Verdict::Interrupt);
    }

    #[test]
    fn a_second_signal_hurries() {
        let (mut w, stop, hurry) = watchdog();
        stop.store(true, Ordering::Relaxed);
        hurry.store(true, Ordering::Relaxed);
        assert_eq!(w.verdict(S, Some(0), true), Verdict::Wait);
        assert_eq!(w.verdict(S + S / 10, Some(0), true), Verdict::Interrupt);
        assert_eq!(w.verdict(S + S / 5, Some(0), true), Verdict::GiveUp);
    }
}
