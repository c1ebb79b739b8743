//! What the HTML report keeps of each reporting period: a few figures
//! (percentiles, counts), not the period's histograms, so a long run's
//! timeline costs little memory while the run goes on.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::config::Mode;
use crate::description::Description;
use crate::stats::spectrum::value_at_percentile;
use crate::stats::{Errors, Interval};

/// One period of the run, summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct PeriodPoint {
    /// From the start of the measured run.
    pub start: Duration,
    pub length: Duration,
    pub requests: u64,
    /// Latency from the intended send time.
    pub corrected: Percentiles,
    /// Latency from the actual send time.
    pub uncorrected: Percentiles,
    /// Schedule lag p99 (paced runs), us.
    pub lag_p99_us: Option<u64>,
    pub errors: Errors,
    pub statuses: BTreeMap<u16, u64>,
    /// What the plan wanted per second over the period; None in the
    /// closed loop.
    pub target_rate: Option<f64>,
}

/// p50, p99 and the maximum of a period's latency, us; None when nothing
/// was recorded in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percentiles {
    pub p50: Option<u64>,
    pub p99: Option<u64>,
    pub max: Option<u64>,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Percentiles {
        let at = |p: f64| (!h.is_empty()).then(|| value_at_percentile(h, p));
        Percentiles { p50: at(50.0), p99: at(99.0), max: at(100.0) }
    }
}

impl PeriodPoint {
    /// The figures of `interval`, a period of the run `run` describes.
    pub fn of(run: &Description, interval: &Interval) -> PeriodPoint {
        let target_rate = match &run.mode {
            Mode::ClosedLoop => None,
            // Periods count from the end of the warm-up.
            Mode::Paced(spec) => {
                let from = run.warmup + interval.start;
                let rate = spec.mean_rate(run.warmup, from, from + interval.length);
                Some(rate / run.shard.count as f64)
            }
        };
        PeriodPoint { target_rate, ..PeriodPoint::measured(interval) }
    }

    /// What `interval` measured, without the plan's rate.
    pub fn measured(interval: &Interval) -> PeriodPoint {
        let stats = &interval.stats;
        PeriodPoint {
            start: interval.start,
            length: interval.length,
            requests: stats.requests,
            corrected: Percentiles::of(&stats.corrected),
            uncorrected: Percentiles::of(&stats.uncorrected),
            lag_p99_us: (!stats.lag.is_empty()).then(|| value_at_percentile(&stats.lag, 99.0)),
            errors: stats.errors,
            statuses: stats.outcomes.http().collect(),
            target_rate: None,
        }
    }

    /// The middle of the period, in seconds from the start: where its
    /// figures are drawn.
    pub fn middle_s(&self) -> f64 {
        (self.start + self.length / 2).as_secs_f64()
    }

    /// `n` per second of this period.
    pub fn per_second(&self, n: u64) -> f64 {
        let seconds = self.length.as_secs_f64();
        if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchConfig;
    use crate::plan::{PlanSpec, Stage};
    use crate::stats::Outcome;
    use crate::stats::Stats;
    use crate::target::Target;

    #[test]
    fn a_period_keeps_its_percentiles_and_its_target() {
        let mut stats = Stats::new(3);
        for latency in 1..=100 {
            stats.response(Outcome::Http(if latency == 100 { 503 } else { 200 }));
            stats.corrected.record(latency * 10).unwrap();
        }
        let interval = Interval {
            index: 1,
            start: Duration::from_secs(1),
            length: Duration::from_millis(500),
            stats,
        };
        let cfg = Description::of(&BenchConfig {
            mode: Mode::Paced(PlanSpec {
                rate: 0.0,
                stages: vec![Stage { duration: Duration::from_secs(2), rate: 400.0 }],
                ..PlanSpec::constant(0.0)
            }),
            duration: Some(Duration::from_secs(2)),
            ..BenchConfig::new(Target::parse("http://127.0.0.1:1/").unwrap())
        });
        let point = PeriodPoint::of(&cfg, &interval);
        assert_eq!(point.corrected.p50, Some(500));
        assert_eq!(point.corrected.max, Some(1000));
        assert_eq!(point.uncorrected, Percentiles { p50: None, p99: None, max: None });
        assert_eq!(point.statuses[&503], 1);
        assert_eq!(point.per_second(point.requests), 200.0);
        assert_eq!(point.middle_s(), 1.25);
        // The ramp from 0 to 400/s is at 250/s on average from 1 s to 1.5 s.
        let rate = point.target_rate.unwrap();
        assert!((rate - 250.0).abs() < 1e-6, "{rate}");
    }
}
