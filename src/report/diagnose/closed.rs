//! What a closed-loop run says when pace, not the server, set its pace:
//! its slots sat idle on average while its busiest thread worked, or
//! waited for a CPU, all the time (see [`crate::report::concurrency`]). The server was then not
//! the limit, and the figures measure pace more than the server.

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

/// The diagnostics of a closed-loop run; none of a paced one (its plan,
/// not its slots, sets how much is in flight).
pub(super) fn diagnose(run: &Description, result: &RunResult) -> Option<Diagnostic> {
    if !matches!(run.mode, Mode::ClosedLoop) {
        return None;
    }
    let concurrency = Concurrency::of(run, result);
    let busy_share = concurrency.busy_share()?;
    let generator = &result.total.generator;
    // Working, or ready to work and waiting for a CPU: either way the
    // thread, not the server, was what the slots waited for (a thread
    // that waits for its script's delay() is neither).
    let (working, cpu_wait) = (generator.busiest_thread_work, generator.thread_cpu_wait);
    (busy_share <= HELD_BUSY_SHARE && working + cpu_wait >= BUSY_THREAD)
        .then(|| generator_held_slots(concurrency, busy_share, working, cpu_wait))
}

fn generator_held_slots(
    concurrency: Concurrency,
    busy_share: f64,
    working: f64,
    cpu_wait: f64,
) -> Diagnostic {
    let mean = concurrency.mean_in_flight.unwrap_or_default();
    let percent = |share: f64| format!("{:.0}%", share * 100.0);
    let waited = if cpu_wait >= 0.01 {
        format!(" and waited for a CPU {}", percent(cpu_wait))
    } else {
        String::new()
    };
    Diagnostic {
        code: Code::GeneratorHeldSlots,
        message: format!(
            "pace held the concurrency down: of {} it kept {mean:.1} busy on average ({}), and \
             its busiest thread worked {} of the time{waited}, so the slots waited for pace, not \
             for the server, and the figures measure pace more than the server; add threads (-t, \
             up to the cores), make the script cheaper, or ask for fewer slots",
            concurrency.describe_slots(),
            percent(busy_share),
            percent(working),
        ),
        figures: vec![
            ("slots", json!(concurrency.slots())),
            ("mean_in_flight", json!(round2(mean))),
            ("busy_share", json!(round2(busy_share))),
            ("busiest_thread_work_share", json!(round2(working))),
            ("thread_cpu_wait_share", json!(round2(cpu_wait))),
        ],
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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

    #[test]
    fn a_paced_run_is_not_judged_by_its_slots() {
        let paced = run(Mode::Paced(PlanSpec::constant(10_000.0)));
        assert!(diagnose(&paced, &result(0.98)).is_none());
    }
}
