//! What a closed-loop run says when pace, not the server, set its pace:
//! its slots sat idle on average while its busiest thread worked all the
//! time (see [`crate::report::concurrency`]). A thread that was starved
//! of the CPU instead (a loaded machine) is not judged here: its share of
//! work falls with the starvation, so a busy machine never turns a run
//! into this warning. The server was then not
//! the limit, and the figures measure pace more than the server.

use std::time::Duration;

use serde_json::json;

use super::{round2, Code, Diagnostic, BUSY_THREAD};
use crate::config::Mode;
use crate::description::Description;
use crate::report::concurrency::Concurrency;
use crate::stats::RunResult;

/// A closed loop kept its slots busy at most this share of the time on
/// average when it held them back. Turning a slot around always takes a
/// little (a fast server and one connection keep it busy 70-80% of the
/// time with pace spinning on the socket): the warning is for a generator
/// that cannot keep up, not for that.
const HELD_BUSY_SHARE: f64 = 0.75;

/// Shorter runs are not judged: their means rest on a few round trips
/// and on how the threads started, not on a steady state.
const SHORTEST_JUDGED: Duration = Duration::from_millis(500);

/// The diagnostics of a closed-loop run; none of a paced one (its plan,
/// not its slots, sets how much is in flight).
pub(super) fn diagnose(run: &Description, result: &RunResult) -> Option<Diagnostic> {
    if !matches!(run.mode, Mode::ClosedLoop) || result.runtime < SHORTEST_JUDGED {
        return None;
    }
    let concurrency = Concurrency::of(run, result);
    let busy_share = concurrency.busy_share()?;
    // Its own work, not spins or waits: a thread that waits for its
    // script's delay() or for a CPU is not what this warns of.
    let working = result.total.generator.busiest_thread_work;
    (busy_share <= HELD_BUSY_SHARE && working >= BUSY_THREAD)
        .then(|| generator_held_slots(concurrency, busy_share, working))
}

fn generator_held_slots(concurrency: Concurrency, busy_share: f64, working: f64) -> Diagnostic {
    let mean = concurrency.mean_in_flight.unwrap_or_default();
    let percent = |share: f64| format!("{:.0}%", share * 100.0);
    Diagnostic {
        code: Code::GeneratorHeldSlots,
        message: format!(
            "pace held the concurrency down: of {} it kept {mean:.1} busy on average ({}), and \
             its busiest thread worked {} of the time, so the slots waited for pace, not for the \
             server, and the figures measure pace more than the server; add threads (-t, up to \
             the cores), make the script cheaper, or ask for fewer slots",
            concurrency.describe_slots(),
            percent(busy_share),
            percent(working),
        ),
        figures: vec![
            ("slots", json!(concurrency.slots())),
            ("mean_in_flight", json!(round2(mean))),
            ("busy_share", json!(round2(busy_share))),
            ("busiest_thread_work_share", json!(round2(working))),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchConfig;
    use crate::plan::PlanSpec;
    use crate::stats::Stats;
    use crate::target::Target;

    fn run(mode: Mode) -> Description {
        Description::of(&BenchConfig {
            connections: 10,
            threads: 1,
            mode,
            ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap())
        })
    }

    /// 10,000 answers of 200 us over 1 s: 2 of 10 slots busy.
    fn result(working: f64) -> RunResult {
        let mut total = Stats::new(3);
        total.uncorrected.record_n(200, 10_000).unwrap();
        total.generator.busiest_thread_work = working;
        RunResult::measured(total, Duration::from_secs(1))
    }

    #[test]
    fn idle_slots_and_a_busy_thread_are_the_generators() {
        let found = diagnose(&run(Mode::ClosedLoop), &result(0.98)).expect("a warning");
        assert_eq!(found.code, Code::GeneratorHeldSlots);
        assert!(found.message.contains("of 10 connections it kept 2.0 busy on average (20%)"));
        assert!(found.message.contains("worked 98%"));
    }

    /// The thread had time to spare: the slots were idle for another
    /// reason (the script's delay(), say), not for want of pace.
    #[test]
    fn idle_slots_with_a_thread_to_spare_say_nothing() {
        assert!(diagnose(&run(Mode::ClosedLoop), &result(0.5)).is_none());
    }

    /// Full slots are the server's pace, however busy the thread.
    #[test]
    fn busy_slots_say_nothing() {
        let mut full = result(0.98);
        full.total.uncorrected.record_n(1000, 10_000).unwrap();
        assert!(diagnose(&run(Mode::ClosedLoop), &full).is_none());
    }

    /// A thread starved of the CPU works less: a loaded machine does not
    /// make the warning.
    #[test]
    fn a_starved_thread_says_nothing() {
        let mut starved = result(0.5);
        starved.total.generator.thread_cpu_wait = 0.5;
        assert!(diagnose(&run(Mode::ClosedLoop), &starved).is_none());
    }

    #[test]
    fn a_short_run_is_not_judged() {
        let mut short = result(0.98);
        short.runtime = Duration::from_millis(100);
        assert!(diagnose(&run(Mode::ClosedLoop), &short).is_none());
    }

    #[test]
    fn a_paced_run_is_not_judged_by_its_slots() {
        let paced = run(Mode::Paced(PlanSpec::constant(10_000.0)));
        assert!(diagnose(&paced, &result(0.98)).is_none());
    }
}
