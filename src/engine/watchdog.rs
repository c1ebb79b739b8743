//! The run ends on time even when a script does not return.
//!
//! An engine thread looks at its clock and at the stop flag between Lua
//! calls, so a script stuck in a loop in `response()` or `delay()` would
//! keep the run going forever. The watchdog, on the collecting thread,
//! knows when every thread should be done: a grace period after the end of
//! the run and the collection of late responses; after a stop (a signal, a
//! script error elsewhere), once the responses in flight had the timeout
//! the stop announced, without more grace; soon after a second signal.
//! A thread still running then has its Lua call interrupted (and every
//! thread stops waiting); one that still does not finish (LuaJIT cannot
//! interrupt a loop it compiled) is given up a short grace later, and the
//! report covers what it handed over before and what the other threads
//! measured. Deadlines saturate: a run bounded only by `-n` has none.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How long threads get to finish after the end of the run.
const GRACE_NS: u64 = 1_000_000_000;
/// The same after a stop, whose wait was announced, or a second signal
/// (the user is in a hurry): enough for a thread that was told to stop to
/// see it, not for one stuck in a script.
const SHORT_GRACE_NS: u64 = 100_000_000;

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
    /// collection of the responses in flight.
    lasts_ns: u64,
    /// How long threads wait for the responses in flight after a stop.
    timeout_ns: u64,
    stop: Arc<AtomicBool>,
    hurry: Arc<AtomicBool>,
    /// When the stop flag was first seen set.
    stop_seen_ns: Option<u64>,
    /// When the hurry flag was first seen set.
    hurry_seen_ns: Option<u64>,
    /// When the threads were interrupted, and the grace they got then.
    interrupted: Option<(u64, u64)>,
}

impl Watchdog {
    /// `stop` is set by a signal or a script error (threads stop sending
    /// and wait up to `timeout_ns` for the responses in flight), `hurry`
    /// by a second signal (they stop at once).
    pub fn new(
        lasts_ns: u64,
        timeout_ns: u64,
        stop: Arc<AtomicBool>,
        hurry: Arc<AtomicBool>,
    ) -> Watchdog {
        Watchdog {
            lasts_ns,
            timeout_ns,
            stop,
            hurry,
            stop_seen_ns: None,
            hurry_seen_ns: None,
            interrupted: None,
        }
    }

    /// When the sends stopped early (a signal, a script error, or the
    /// watchdog's own interruption), if they did.
    pub fn stopped_at(&self) -> Option<u64> {
        self.stop_seen_ns
    }

    /// The verdict at `now` for a run that started at `start_ns` (None:
    /// not yet) with `running` threads still going.
    pub fn verdict(&mut self, now: u64, start_ns: Option<u64>, running: bool) -> Verdict {
        if self.stop.load(Ordering::Relaxed) {
            self.stop_seen_ns.get_or_insert(now);
        }
        let hurried = self.hurry.load(Ordering::Relaxed);
        if hurried {
            self.hurry_seen_ns.get_or_insert(now);
        }
        if !running {
            return Verdict::Wait;
        }
        if let Some((interrupted, grace)) = self.interrupted {
            return if now >= interrupted.saturating_add(grace) {
                Verdict::GiveUp
            } else {
                Verdict::Wait
            };
        }
        // When the threads are interrupted, and the grace they get then:
        // after the end of the run and its late responses, after a stop
        // once the responses in flight had their timeout, or at once in a
        // hurry; the earliest counts.
        let (at, grace) = [
            start_ns.map(|start| (start.saturating_add(self.lasts_ns), GRACE_NS)),
            self.stop_seen_ns.map(|stop| (stop.saturating_add(self.timeout_ns), 0)),
            self.hurry_seen_ns.map(|hurry| (hurry, SHORT_GRACE_NS)),
        ]
        .into_iter()
        .flatten()
        .map(|(over, grace)| (over.saturating_add(grace), grace.max(SHORT_GRACE_NS)))
        .min()
        .unwrap_or((u64::MAX, GRACE_NS));
        if now >= at {
            self.interrupted = Some((now, grace));
            // The other threads stop too, without waiting.
            self.stop.store(true, Ordering::Relaxed);
            self.hurry.store(true, Ordering::Relaxed);
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
        (Watchdog::new(12 * S, 2 * S, stop.clone(), hurry.clone()), stop, hurry)
    }

    #[test]
    fn a_thread_running_past_the_end_is_interrupted_then_given_up() {
        let (mut w, stop, hurry) = watchdog();
        assert_eq!(w.verdict(5 * S, None, true), Verdict::Wait);
        assert_eq!(w.verdict(12 * S, Some(S), true), Verdict::Wait);
        // The run (1 s + 12 s) and its grace are over.
        assert_eq!(w.verdict(14 * S, Some(S), true), Verdict::Interrupt);
        assert!(stop.load(Ordering::Relaxed) && hurry.load(Ordering::Relaxed));
        assert_eq!(w.verdict(14 * S + S / 2, Some(S), true), Verdict::Wait);
        assert_eq!(w.verdict(15 * S, Some(S), true), Verdict::GiveUp);
    }

    #[test]
    fn finished_threads_need_nothing() {
        let (mut w, _, _) = watchdog();
        assert_eq!(w.verdict(100 * S, Some(S), false), Verdict::Wait);
    }

    #[test]
    fn a_stop_leaves_the_timeout_for_the_responses_in_flight() {
        let (mut w, stop, _) = watchdog();
        assert_eq!(w.verdict(2 * S, Some(S), true), Verdict::Wait);
        stop.store(true, Ordering::Relaxed);
        assert_eq!(w.verdict(3 * S, Some(S), true), Verdict::Wait);
        assert_eq!(w.stopped_at(), Some(3 * S));
        // 3 s + the announced 2 s timeout, and no more.
        assert_eq!(w.verdict(5 * S - 1, Some(S), true), Verdict::Wait);
        assert_eq!(w.verdict(5 * S, Some(S), true), Verdict::Interrupt);
        // A thread stuck in a script is given up soon after.
        assert_eq!(w.verdict(5 * S + S / 20, Some(S), true), Verdict::Wait);
        assert_eq!(w.verdict(5 * S + S / 10, Some(S), true), Verdict::GiveUp);
    }

    #[test]
    fn a_stop_before_the_start_counts() {
        let (mut w, stop, _) = watchdog();
        stop.store(true, Ordering::Relaxed);
        assert_eq!(w.verdict(S, None, true), Verdict::Wait);
        assert_eq!(w.verdict(3 * S, None, true), Verdict::Interrupt);
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

    /// A run bounded only by -n lasts without end: no deadline overflows
    /// into the past.
    #[test]
    fn an_unbounded_run_is_never_over() {
        let stop = Arc::new(AtomicBool::new(false));
        let hurry = Arc::new(AtomicBool::new(false));
        let mut w = Watchdog::new(u64::MAX, u64::MAX, stop.clone(), hurry);
        assert_eq!(w.verdict(u64::MAX - 1, Some(u64::MAX / 2), true), Verdict::Wait);
        // A stop with an endless timeout: still no overflow.
        stop.store(true, Ordering::Relaxed);
        assert_eq!(w.verdict(u64::MAX - 1, Some(u64::MAX / 2), true), Verdict::Wait);
    }
}
