//! Reporting periods made of the engine's shorter periods.
//!
//! The live progress wants fresh figures a few times a second; `-p` and
//! `--hlog` want periods of their own length. Rather than a second way
//! for the threads to hand over measurements (shared counters touched per
//! request), the threads hand over short periods, a whole fraction of the
//! reporting period, through the one channel they already have; the
//! collector merges them as usual and they are added up here into the
//! reporting periods. A thread's cost is one channel send per short
//! period, at a boundary it wakes up for anyway when the short period is a
//! multiple of the 100 ms Req/Sec sample.
//!
//! The threads hand over at least every [`HAND_OVER_EVERY`] even when
//! nothing asked for periods, so that a thread stuck in a script (and given
//! up) loses at most that much of what it measured.

use std::time::Duration;

use super::Observer;
use crate::stats::{Interval, Stats};

/// The longest the threads keep their measurements before handing them
/// over.
pub const HAND_OVER_EVERY: Duration = Duration::from_secs(1);

/// The period the threads hand over: the reporting period, or with
/// progress every `progress`, at most that long, a whole fraction of the
/// reporting period (one that divides it exactly when a close one does).
pub fn engine_period(report: Option<Duration>, progress: Option<Duration>) -> Option<Duration> {
    let (report, progress) = match (report, progress) {
        (report, None) => return report,
        (None, progress) => return progress,
        (Some(report), Some(progress)) => (report, progress),
    };
    let (report_ns, progress_ns) = (report.as_nanos(), progress.as_nanos().max(1));
    let fewest = report_ns.div_ceil(progress_ns).max(1);
    let parts = (fewest..=fewest * 2).find(|n| report_ns % n == 0).unwrap_or(fewest);
    Some(report / u32::try_from(parts).unwrap_or(u32::MAX))
}

/// Adds the engine's periods up into reporting periods and passes both on.
pub struct Periods {
    /// The reporting period (None: none is wanted).
    report: Option<Duration>,
    /// The engine's period.
    short: Duration,
    /// Engine periods per reporting period.
    parts: u64,
    /// The reporting period being added up (when it has more than one
    /// part), and whether it has a part yet.
    group: Option<(Interval, bool)>,
    progress: bool,
}

impl Periods {
    /// The periods of a run with `report` periods and progress every
    /// `progress`, and the period the engine threads hand over: at most
    /// `finest` (the run's course wants periods that short,
    /// `crate::stats::course`).
    pub fn new(
        digits: u8,
        report: Option<Duration>,
        progress: Option<Duration>,
        finest: Duration,
    ) -> (Periods, Duration) {
        let often = progress.map_or(HAND_OVER_EVERY, |every| every.min(HAND_OVER_EVERY));
        let often = often.min(finest);
        let short = engine_period(report, Some(often)).unwrap_or(HAND_OVER_EVERY);
        let parts = match report {
            Some(report) => (report.as_nanos() / short.as_nanos().max(1)).max(1) as u64,
            None => 1,
        };
        let blank = Interval {
            index: 0,
            start: Duration::ZERO,
            length: Duration::ZERO,
            stats: Stats::new(digits),
        };
        let group = (report.is_some() && parts > 1).then_some((blank, false));
        let periods = Periods { report, short, parts, group, progress: progress.is_some() };
        (periods, short)
    }

    /// Takes the engine's next period (in order) and the run's
    /// measurements up to its end.
    pub fn add(&mut self, short: &Interval, total: &Stats, observer: &mut dyn Observer) {
        match (&mut self.group, self.report) {
            (_, None) => {}
            (None, Some(_)) => observer.interval(short),
            (Some((group, open)), Some(report)) => {
                if !*open {
                    group.index = short.index / self.parts;
                    group.start = report.checked_mul(group.index as u32).unwrap_or(Duration::MAX);
                    *open = true;
                }
                group.stats.merge(&short.stats);
                let end = short.start + short.length;
                group.length = end.saturating_sub(group.start);
                // The run ended during a short period shorter than the others.
                let last = short.length < self.short;
                if short.index % self.parts == self.parts - 1 || last {
                    if !last {
                        group.length = report;
                    }
                    observer.interval(group);
                    group.stats.clear();
                    *open = false;
                }
            }
        }
        if self.progress {
            observer.progress(short, total);
        }
    }

    /// After the last period: passes on the reporting period it began,
    /// if it is not out yet.
    pub fn finish(&mut self, observer: &mut dyn Observer) {
        if let Some((group, open)) = self.group.as_mut().filter(|(_, open)| *open) {
            observer.interval(group);
            *open = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_engine_period_divides_the_reporting_period() {
        let every = Some(200 * MS);
        assert_eq!(engine_period(None, None), None);
        assert_eq!(engine_period(Some(1000 * MS), None), Some(1000 * MS));
        assert_eq!(engine_period(None, every), every);
        assert_eq!(engine_period(Some(1000 * MS), every), every);
        assert_eq!(engine_period(Some(100 * MS), every), Some(100 * MS));
        assert_eq!(engine_period(Some(300 * MS), every), Some(150 * MS));
        // 1.1 s is not a whole number of 183.3 ms or 157.1 ms periods.
        assert_eq!(engine_period(Some(1100 * MS), every), Some(Duration::from_micros(137_500)));
    }

    /// Records what it hears: reporting periods and progress calls.
    #[derive(Default)]
    struct Heard {
        intervals: Vec<(u64, Duration, Duration, u64)>,
        progress: Vec<(u64, u64)>,
    }

    impl Observer for Heard {
        fn interval(&mut self, i: &Interval) {
            self.intervals.push((i.index, i.start, i.length, i.stats.requests));
        }
        fn progress(&mut self, latest: &Interval, total: &Stats) {
            self.progress.push((latest.index, total.requests));
        }
    }

    /// Engine period `index` of `length` (the last may be shorter).
    fn short(index: u64, length: Duration, requests: u64) -> Interval {
        let mut stats = Stats::new(3);
        stats.requests = requests;
        Interval { index, start: 200 * MS * index as u32, length, stats }
    }

    /// A thread given up loses at most a second of what it measured.
    #[test]
    fn threads_hand_over_every_second_at_least() {
        assert_eq!(Periods::new(3, None, None, HAND_OVER_EVERY).1, HAND_OVER_EVERY);
        assert_eq!(Periods::new(3, Some(10_000 * MS), None, HAND_OVER_EVERY).1, HAND_OVER_EVERY);
        assert_eq!(Periods::new(3, Some(1500 * MS), None, HAND_OVER_EVERY).1, 750 * MS);
        assert_eq!(Periods::new(3, Some(500 * MS), None, HAND_OVER_EVERY).1, 500 * MS);
        assert_eq!(Periods::new(3, None, Some(200 * MS), HAND_OVER_EVERY).1, 200 * MS);
        // A short run's course wants short periods.
        assert_eq!(Periods::new(3, None, None, 100 * MS).1, 100 * MS);
        assert_eq!(Periods::new(3, Some(1000 * MS), Some(200 * MS), 150 * MS).1, 125 * MS);
    }

    #[test]
    fn short_periods_add_up_to_reporting_periods() {
        let (mut periods, engine) =
            Periods::new(3, Some(1000 * MS), Some(200 * MS), HAND_OVER_EVERY);
        assert_eq!(engine, 200 * MS);
        let mut heard = Heard::default();
        let mut total = Stats::new(3);
        // 1.3 s: five full periods, one full and one cut at 100 ms.
        for index in 0..7 {
            let length = if index == 6 { 100 * MS } else { 200 * MS };
            let period = short(index, length, 10);
            total.requests += 10;
            periods.add(&period, &total, &mut heard);
        }
        periods.finish(&mut heard);
        let second = Duration::from_secs(1);
        assert_eq!(
            heard.intervals,
            vec![(0, Duration::ZERO, second, 50), (1, second, 300 * MS, 20)]
        );
        assert_eq!(heard.progress.len(), 7);
        assert_eq!(heard.progress[6], (6, 70));
    }

    #[test]
    fn a_run_that_ends_on_a_boundary_still_gets_its_last_period() {
        let (mut periods, _) = Periods::new(3, Some(1000 * MS), Some(200 * MS), HAND_OVER_EVERY);
        let mut heard = Heard::default();
        for index in 0..7 {
            periods.add(&short(index, 200 * MS, 1), &Stats::new(3), &mut heard);
        }
        periods.finish(&mut heard);
        let lengths: Vec<Duration> = heard.intervals.iter().map(|i| i.2).collect();
        assert_eq!(lengths, vec![Duration::from_secs(1), 400 * MS]);
    }

    #[test]
    fn without_progress_periods_pass_through_and_without_reports_nothing_does() {
        let (mut periods, engine) = Periods::new(3, Some(1000 * MS), None, HAND_OVER_EVERY);
        assert_eq!(engine, 1000 * MS);
        let mut heard = Heard::default();
        let mut whole = short(0, 1000 * MS, 5);
        whole.start = Duration::ZERO;
        periods.add(&whole, &Stats::new(3), &mut heard);
        assert_eq!(heard.intervals, vec![(0, Duration::ZERO, 1000 * MS, 5)]);
        assert!(heard.progress.is_empty());
        let (mut periods, _) = Periods::new(3, None, Some(200 * MS), HAND_OVER_EVERY);
        let mut heard = Heard::default();
        periods.add(&short(0, 200 * MS, 5), &Stats::new(3), &mut heard);
        periods.finish(&mut heard);
        assert!(heard.intervals.is_empty());
        assert_eq!(heard.progress, vec![(0, 0)]);
    }
}
