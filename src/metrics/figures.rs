//! What `--metrics` shows: the run's figures so far, kept as Prometheus
//! wants them (cumulative counters, histograms with fixed buckets, a few
//! gauges), updated from each short period the engine hands over.
//!
//! Adding a period costs one pass over the values its histograms recorded
//! (not over its requests); nothing here is touched per request.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::plan::PlanSpec;
use crate::stats::{Errors, Interval};

/// Upper bounds of the latency buckets, nanoseconds: ten per decade
/// (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8) from 10 us to 80 s, then 100 s.
/// A quantile read from them (PromQL's `histogram_quantile`) is within
/// one bucket of the true value: at most a third above or below it.
/// (Nanoseconds, so that the first decade's 12.5 us is what it says.)
pub const LATENCY_BOUNDS_NS: [u64; 71] = latency_bounds();

const fn latency_bounds() -> [u64; 71] {
    // Hundredths of the decade's first bound.
    const STEPS: [u64; 10] = [100, 125, 150, 200, 250, 300, 400, 500, 600, 800];
    let mut bounds = [0; 71];
    let mut decade = 0;
    let mut scale = 10_000; // ns
    while decade < 7 {
        let mut step = 0;
        while step < STEPS.len() {
            bounds[decade * STEPS.len() + step] = scale * STEPS[step] / 100;
            step += 1;
        }
        scale *= 10;
        decade += 1;
    }
    bounds[70] = 100_000_000_000;
    bounds
}

/// A cumulative histogram over [`LATENCY_BOUNDS_NS`].
#[derive(Clone, Debug, PartialEq)]
pub struct Buckets {
    /// Values in each bucket (not cumulative), the last for those above
    /// every bound (`+Inf`).
    pub counts: Vec<u64>,
    /// The sum of the values, microseconds (a whole number, so that the
    /// sum in seconds is one division, without the noise of adding up
    /// fractions).
    pub sum_us: u64,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets { counts: vec![0; LATENCY_BOUNDS_NS.len() + 1], sum_us: 0 }
    }
}

impl Buckets {
    /// Adds the values of an HdrHistogram of microseconds. Each value is
    /// taken as the highest of its HdrHistogram bucket, as the reports'
    /// percentiles are; the sum uses the middle of it, as their mean does.
    pub fn add(&mut self, histogram: &Histogram<u64>) {
        for value in histogram.iter_recorded() {
            let (us, n) = (value.value_iterated_to(), value.count_at_value());
            let bucket = LATENCY_BOUNDS_NS.partition_point(|&bound| bound < us * 1000);
            self.counts[bucket] += n;
            self.sum_us += histogram.median_equivalent(us) * n;
        }
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The plan's rate, for this instance (as the live progress shows it).
#[derive(Clone, Debug)]
pub struct PlanRate {
    pub spec: PlanSpec,
    pub warmup: Duration,
    /// `--shard`'s N: this instance sends one N-th of the plan.
    pub shards: usize,
}

/// The figures of the run so far.
#[derive(Clone, Debug)]
pub struct Figures {
    /// The `shard` label: `I/N` (`0/1` without `--shard`).
    pub shard: String,
    /// The plan, in a paced run.
    pub plan: Option<PlanRate>,
    pub requests: u64,
    pub bytes: u64,
    pub errors: Errors,
    pub statuses: BTreeMap<u16, u64>,
    /// gRPC calls by status code (`--grpc` runs only).
    pub grpc_codes: BTreeMap<u8, u64>,
    /// Reply messages of server-streaming gRPC calls (None in other runs).
    pub grpc_messages: Option<u64>,
    pub corrected: Buckets,
    pub uncorrected: Buckets,
    /// Paced runs only.
    pub lag: Buckets,
    /// The plan's rate over the latest period (paced runs).
    pub target_rate: Option<f64>,
    /// The latest periods, up to [`RATE_WINDOW`]: their lengths and
    /// completed responses, for the achieved rate.
    recent: VecDeque<(Duration, u64)>,
    /// From the start of the measured run to the end of the latest period.
    pub measured: Duration,
    /// The longest wait for a response at the end of the latest period.
    pub oldest_waiting: Duration,
    /// The run is over: the figures are final.
    pub finished: bool,
}

/// The achieved rate is over the latest periods that make up this long.
const RATE_WINDOW: Duration = Duration::from_secs(1);

impl Figures {
    /// Nothing measured yet.
    pub fn new(shard: String, plan: Option<PlanRate>) -> Figures {
        Figures {
            shard,
            plan,
            requests: 0,
            bytes: 0,
            errors: Errors::default(),
            statuses: BTreeMap::new(),
            grpc_codes: BTreeMap::new(),
            grpc_messages: None,
            corrected: Buckets::default(),
            uncorrected: Buckets::default(),
            lag: Buckets::default(),
            target_rate: None,
            recent: VecDeque::new(),
            measured: Duration::ZERO,
            oldest_waiting: Duration::ZERO,
            finished: false,
        }
    }

    /// Adds the engine's next period (in order).
    pub fn add(&mut self, period: &Interval) {
        let stats = &period.stats;
        self.requests += stats.requests;
        self.bytes += stats.bytes;
        self.errors.add(&stats.errors);
        for (status, n) in stats.outcomes.http() {
            *self.statuses.entry(status).or_insert(0) += n;
        }
        for (code, n) in stats.outcomes.grpc() {
            *self.grpc_codes.entry(code).or_insert(0) += n;
        }
        if !stats.streamed.is_empty() {
            *self.grpc_messages.get_or_insert(0) += stats.streamed.messages;
        }
        self.corrected.add(&stats.corrected);
        self.uncorrected.add(&stats.uncorrected);
        self.lag.add(&stats.lag);
        let end = period.start + period.length;
        self.measured = self.measured.max(end);
        self.oldest_waiting = Duration::from_micros(stats.oldest_waiting_us);
        self.target_rate = self.plan.as_ref().map(|plan| {
            let (from, to) = (plan.warmup + period.start, plan.warmup + end);
            plan.spec.mean_rate(plan.warmup, from, to) / plan.shards as f64
        });
        if !period.length.is_zero() {
            self.recent.push_back((period.length, stats.requests));
        }
        while self.recent.len() > 1
            && self.recent.iter().skip(1).map(|(length, _)| *length).sum::<Duration>()
                >= RATE_WINDOW
        {
            self.recent.pop_front();
        }
    }

    /// Completed responses per second over the latest second or so.
    pub fn achieved_rate(&self) -> f64 {
        let length: Duration = self.recent.iter().map(|(length, _)| *length).sum();
        let requests: u64 = self.recent.iter().map(|(_, requests)| requests).sum();
        match length.as_secs_f64() {
            seconds if seconds > 0.0 => requests as f64 / seconds,
            _ => 0.0,
        }
    }

    pub fn paced(&self) -> bool {
        self.plan.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Outcome;
    use crate::stats::{latency_histogram, Stats};

    #[test]
    fn bounds_are_ten_a_decade_and_increasing() {
        assert_eq!(LATENCY_BOUNDS_NS[..4], [10_000, 12_500, 15_000, 20_000]);
        assert_eq!(LATENCY_BOUNDS_NS[10..13], [100_000, 125_000, 150_000]);
        assert_eq!(LATENCY_BOUNDS_NS[69..], [80_000_000_000, 100_000_000_000]);
        assert!(LATENCY_BOUNDS_NS.windows(2).all(|pair| pair[0] < pair[1]));
        // No bucket reaches more than a third above its lower bound.
        assert!(LATENCY_BOUNDS_NS.windows(2).all(|pair| pair[1] * 3 <= pair[0] * 4));
    }

    #[test]
    fn values_fall_in_the_first_bucket_that_holds_them() {
        let mut histogram = latency_histogram(3);
        for us in [5, 10, 11, 12, 13, 1000, 1001, 200_000_000] {
            histogram.record(us).unwrap();
        }
        let mut buckets = Buckets::default();
        buckets.add(&histogram);
        let at = |ns: u64| LATENCY_BOUNDS_NS.iter().position(|&b| b == ns).unwrap();
        // le is "less than or equal": 12 us is at most 12.5 us, 13 is not.
        assert_eq!(buckets.counts[at(10_000)], 2);
        assert_eq!(buckets.counts[at(12_500)], 2);
        assert_eq!(buckets.counts[at(15_000)], 1);
        assert_eq!(buckets.counts[at(1_000_000)], 1);
        assert_eq!(buckets.counts[at(1_250_000)], 1);
        assert_eq!(buckets.counts[LATENCY_BOUNDS_NS.len()], 1, "+Inf");
        assert_eq!(buckets.count(), 8);
        // Adding again accumulates.
        buckets.add(&histogram);
        assert_eq!(buckets.count(), 16);
        let expected = 2 * (5 + 10 + 11 + 12 + 13 + 1000 + 1001 + 200_000_000);
        assert!(buckets.sum_us.abs_diff(expected) < 500_000, "{}", buckets.sum_us);
    }

    fn period(index: u64, requests: u64, length_ms: u64) -> Interval {
        let mut stats = Stats::new(3);
        for _ in 0..requests {
            stats.response(Outcome::Http(if requests > 3 { 200 } else { 503 }));
            stats.corrected.record(1500).unwrap();
        }
        stats.bytes = requests * 100;
        Interval {
            index,
            start: Duration::from_millis(200 * index),
            length: Duration::from_millis(length_ms),
            stats,
        }
    }

    #[test]
    fn periods_add_up_and_the_rate_is_over_the_latest_second() {
        let plan = PlanRate { spec: PlanSpec::constant(100.0), warmup: Duration::ZERO, shards: 2 };
        let mut figures = Figures::new("1/2".into(), Some(plan));
        for index in 0..5 {
            figures.add(&period(index, 10, 200));
        }
        figures.add(&period(5, 2, 100));
        assert_eq!((figures.requests, figures.bytes), (52, 5200));
        assert_eq!(figures.statuses[&200], 50);
        assert_eq!(figures.statuses[&503], 2);
        assert_eq!(figures.errors.status, 2);
        assert_eq!(figures.corrected.count(), 52);
        assert_eq!(figures.measured, Duration::from_millis(1100));
        // The fewest latest periods that make a second: all six here (the
        // last five make 0.9 s).
        assert!((figures.achieved_rate() - 52.0 / 1.1).abs() < 1e-9);
        figures.add(&period(6, 10, 200));
        assert!((figures.achieved_rate() - 52.0 / 1.1).abs() < 1e-9, "first one dropped");
        // This shard's half of the plan.
        assert_eq!(figures.target_rate, Some(50.0));
    }
}
