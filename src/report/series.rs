//! wrx's extra outputs (`kffl/wrx src/wrk.c`): the request counts per time
//! slot (`--timeseries`), per thread (`--thread-timeseries`), and the raw
//! latency histogram in 1 us bins (`--histogram`).
//!
//! wrx prints its thread table live, from the worker threads, in whatever
//! order they come; pace prints it after the run, sorted by thread then
//! slot. wrx stores exact microseconds; pace's HdrHistogram has 1 us
//! resolution only up to 2047 us (at 3 digits; 2 us up to 4095 us, and so
//! on), so each wider bucket's count is printed on the bucket's lowest
//! value and the other values of the bucket print 0.

use std::io::{self, Write};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::stats::RunResult;

/// How many slots the series of a run have: every slot the run covered
/// (the planned duration, or less when the run was interrupted), plus any
/// later slot in which late responses arrived.
pub fn slot_count(result: &RunResult, planned: Option<Duration>) -> usize {
    // A run that recorded no time series has no slot.
    if result.series_interval.is_zero() {
        return 0;
    }
    let covered = planned.map_or(result.runtime, |planned| result.runtime.min(planned)).as_nanos();
    let slot = result.series_interval.as_nanos();
    let slots = usize::try_from(covered.div_ceil(slot)).unwrap_or(usize::MAX);
    result.series.iter().map(Vec::len).fold(slots, usize::max)
}

/// Each thread's requests per slot, `slots` of them (zeros where a thread
/// completed nothing).
pub fn per_thread(result: &RunResult, slots: usize) -> Vec<Vec<u64>> {
    result
        .series
        .iter()
        .map(|counts| (0..slots).map(|i| counts.get(i).copied().unwrap_or(0)).collect())
        .collect()
}

/// All threads' requests per slot.
pub fn totals(per_thread: &[Vec<u64>], slots: usize) -> Vec<u64> {
    (0..slots).map(|i| per_thread.iter().map(|counts| counts[i]).sum()).collect()
}

/// A slot length as wrx prints it: whole milliseconds (`250ms`), with a
/// fraction only when there is one (`12.5ms`).
pub fn interval_label(interval: Duration) -> String {
    format!("{}ms", interval.as_micros() as f64 / 1000.0)
}

/// `--timeseries`: wrx's title line (trailing space included), then each
/// slot's count alone on its line, as wrx prints it (`%ld`), so that what
/// reads wrx's output reads pace's. Where each slot starts is in the JSON
/// (`-e`: slot i starts at i times `interval_ms`).
pub fn write_timeseries(out: &mut dyn Write, interval: Duration, totals: &[u64]) -> io::Result<()> {
    writeln!(out, "Request counts time series (interval = {}) ", interval_label(interval))?;
    for count in totals {
        writeln!(out, "{count}")?;
    }
    Ok(())
}

/// `--thread-timeseries`: a blank line, wrx's header, then `%6ld    %6ld
/// %9ld` rows (thread, slot, requests) by thread then slot.
pub fn write_thread_timeseries(out: &mut dyn Write, per_thread: &[Vec<u64>]) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "THREAD  |  EPOCH  |  REQUESTS")?;
    for (thread, counts) in per_thread.iter().enumerate() {
        for (slot, count) in counts.iter().enumerate() {
            writeln!(out, "{thread:>6}    {slot:>6}    {count:>9}")?;
        }
    }
    Ok(())
}

/// The histogram's non-empty buckets as (lowest value in us, count), in
/// value order.
pub fn bins(h: &Histogram<u64>) -> impl Iterator<Item = (u64, u64)> + '_ {
    h.iter_recorded().map(|v| (h.lowest_equivalent(v.value_iterated_to()), v.count_at_value()))
}

/// `--histogram`: wrx's title, then the count of every 1 us bin from 0 up
/// to the last non-empty one (a single `0` when nothing was recorded).
/// Streamed: a 10 s maximum is ten million lines, never held in memory.
pub fn write_histogram(out: &mut dyn Write, h: &Histogram<u64>) -> io::Result<()> {
    writeln!(out, "Latency histogram (bin width = 1us)")?;
    let mut next = 0;
    for (value, count) in bins(h) {
        for _ in next..value {
            writeln!(out, "0")?;
        }
        writeln!(out, "{count}")?;
        next = value + 1;
    }
    if next == 0 {
        writeln!(out, "0")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{latency_histogram, Stats};

    fn render(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn result(series: Vec<Vec<u64>>, runtime: Duration) -> RunResult {
        RunResult { series, ..RunResult::measured(Stats::new(3), runtime) }
    }

    #[test]
    fn slots_cover_the_run_and_late_responses() {
        let second = Duration::from_secs(1);
        // 1 s planned, ended a little later: 4 slots, trailing empty ones kept.
        let r = result(vec![vec![5, 6], vec![7]], Duration::from_millis(1003));
        assert_eq!(slot_count(&r, Some(second)), 4);
        // A response in a fifth slot adds it.
        let r = result(vec![vec![1, 0, 0, 0, 2]], Duration::from_millis(1260));
        assert_eq!(slot_count(&r, Some(second)), 5);
        // Interrupted after 0.6 s: 3 slots.
        let r = result(vec![vec![1]], Duration::from_millis(600));
        assert_eq!(slot_count(&r, Some(Duration::from_secs(10))), 3);
    }

    #[test]
    fn timeseries_like_wrx() {
        let r = result(vec![vec![5, 6], vec![7, 0, 1]], Duration::from_millis(750));
        let slots = slot_count(&r, Some(Duration::from_secs(1)));
        let threads = per_thread(&r, slots);
        assert_eq!(threads, vec![vec![5, 6, 0], vec![7, 0, 1]]);
        let sums = totals(&threads, slots);
        assert_eq!(sums, vec![12, 6, 1]);
        assert_eq!(
            render(|out| write_timeseries(out, r.series_interval, &sums)),
            "Request counts time series (interval = 250ms) \n12\n6\n1\n"
        );
        assert_eq!(
            render(|out| write_thread_timeseries(out, &threads)),
            "\nTHREAD  |  EPOCH  |  REQUESTS\n\
             \x20    0         0            5\n\
             \x20    0         1            6\n\
             \x20    0         2            0\n\
             \x20    1         0            7\n\
             \x20    1         1            0\n\
             \x20    1         2            1\n"
        );
    }

    #[test]
    fn interval_labels() {
        assert_eq!(interval_label(Duration::from_millis(250)), "250ms");
        assert_eq!(interval_label(Duration::from_secs(2)), "2000ms");
        assert_eq!(interval_label(Duration::from_micros(12_500)), "12.5ms");
    }

    #[test]
    fn histogram_bins_of_one_microsecond() {
        let mut h = latency_histogram(3);
        h.record_n(2, 3).unwrap();
        h.record(4).unwrap();
        assert_eq!(
            render(|out| write_histogram(out, &h)),
            "Latency histogram (bin width = 1us)\n0\n0\n3\n0\n1\n"
        );
    }

    #[test]
    fn wide_buckets_count_on_their_lowest_value() {
        let mut h = latency_histogram(3);
        // 2049 shares the 2 us wide bucket [2048, 2049].
        h.record(2049).unwrap();
        h.record(2048).unwrap();
        assert_eq!(bins(&h).collect::<Vec<_>>(), vec![(2048, 2)]);
        let text = render(|out| write_histogram(out, &h));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 2049);
        assert_eq!(lines[1 + 2048], "2");
        let sum: u64 = lines[1..].iter().map(|l| l.parse::<u64>().unwrap()).sum();
        assert_eq!(sum, h.len());
    }

    #[test]
    fn empty_histogram_prints_one_zero() {
        let h = latency_histogram(3);
        assert_eq!(
            render(|out| write_histogram(out, &h)),
            "Latency histogram (bin width = 1us)\n0\n"
        );
    }
}
