//! The text report of one `-p/--report_interval` period, as the yicwang
//! wrk2 fork prints it (`period_report_func`): the Thread Stats table, the
//! latency blocks `-L`/`-U` ask for, and the summary lines, all for that
//! period only, then `=== REPORT END ===`. No `Running ...` header.
//!
//! pace starts each report with its time window (`[1.00s - 2.00s]`, from
//! the start of the measured run; the fork prints none, so a reader had to
//! count the reports), and adds the schedule lag line in paced mode, and
//! with `-L` the line naming the percentiles with too few samples, as in
//! the final report. They are lines of their own, so that the lines the
//! fork prints read as before.
//! It leaves out the final report's warnings: one short period at a
//! low rate may complete one request less than planned without anything
//! being wrong, and the final report judges the whole run.

use std::io::{self, Write};

use super::text::{
    write_latency_distributions, write_schedule_lag, write_summary, write_thread_stats,
    write_too_few_samples,
};
use super::ReportOptions;
use crate::config::Mode;
use crate::description::Description;
use crate::stats::Interval;

/// The line that closes every period report.
pub const REPORT_END: &str = "=== REPORT END ===";

/// The report of one period.
pub fn write_period(
    out: &mut dyn Write,
    run: &Description,
    options: &ReportOptions,
    interval: &Interval,
) -> io::Result<()> {
    let stats = &interval.stats;
    writeln!(out, "{}", window(interval))?;
    write_thread_stats(out, stats)?;
    write_latency_distributions(out, &run.mode, options, stats)?;
    write_summary(out, stats, interval.length, run.protocol)?;
    if let Mode::Paced(_) = run.mode {
        write_schedule_lag(out, &stats.lag)?;
    }
    write_too_few_samples(out, &run.mode, options, stats)?;
    writeln!(out, "{REPORT_END}")
}

/// `[10.00s - 20.00s]`: where the period starts and ends, in seconds
/// from the start of the measured run (the last period ends with the run).
pub fn window(interval: &Interval) -> String {
    let start = interval.start.as_secs_f64();
    format!("[{start:.2}s - {:.2}s]", start + interval.length.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::BenchConfig;
    use crate::plan::PlanSpec;
    use crate::stats::Outcome;
    use crate::stats::Stats;
    use crate::target::Target;

    /// A run of `mode`, reported with `-L` when `latency`.
    fn config(mode: Mode, latency: bool) -> (Description, ReportOptions) {
        let run = Description::of(&BenchConfig {
            duration: Some(Duration::from_secs(5)),
            mode,
            ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap())
        });
        (run, ReportOptions { latency, ..ReportOptions::default() })
    }

    fn period() -> Interval {
        let mut stats = Stats::new(3);
        for _ in 0..200 {
            stats.response(Outcome::Http(200));
            stats.corrected.record(1000).unwrap();
            stats.lag.record(30).unwrap();
        }
        stats.bytes = 200 * 100;
        stats.rate_samples = vec![200.0; 10];
        Interval { index: 2, start: Duration::from_secs(2), length: Duration::from_secs(1), stats }
    }

    fn render((run, options): &(Description, ReportOptions), interval: &Interval) -> String {
        let mut out = Vec::new();
        write_period(&mut out, run, options, interval).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn paced_period() {
        let text = render(&config(Mode::Paced(PlanSpec::constant(200.0)), false), &period());
        assert_eq!(
            text,
            "[2.00s - 3.00s]\n\
             \x20 Thread Stats   Avg      Stdev     Max   +/- Stdev\n\
             \x20   Latency     1.00ms    0.00us   1.00ms  100.00%\n\
             \x20   Req/Sec   200.00      0.00   200.00    100.00%\n\
             \x20 200 requests in 1.00s, 19.53KB read\n\
             Requests/sec:    200.00\n\
             Transfer/sec:     19.53KB\n\
             Schedule lag: p50 30.00us, p99 30.00us, max 30.00us (actual send - intended send; measures the load generator)\n\
             === REPORT END ===\n"
        );
    }

    #[test]
    fn closed_loop_period_with_latency_and_a_short_last_period() {
        let mut last = period();
        last.length = Duration::from_millis(500);
        let text = render(&config(Mode::ClosedLoop, true), &last);
        assert!(text.starts_with("[2.00s - 2.50s]\n  Thread Stats"), "{text}");
        assert!(text.contains("  Latency Distribution\n     50%    1.00ms\n"), "{text}");
        assert!(
            text.contains("  200 requests in 500.00ms, 19.53KB read\nRequests/sec:    400.00\n")
        );
        assert!(!text.contains("Schedule lag"));
        // 200 samples: 2 beyond p99, said in a line of pace's own.
        assert!(
            text.ends_with(
                "Transfer/sec:     39.06KB\nToo few samples: 99% has fewer than 10 of the 200 \
                 latencies beyond it; chance alone moves it from run to run\n=== REPORT END ===\n"
            ),
            "{text}"
        );
    }
}
