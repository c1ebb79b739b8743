//! Is a difference between two runs more than noise? The figures' own
//! uncertainty, computed from what the saved runs hold, and a floor
//! below which no difference counts.
//!
//! - **Latency percentiles**: a bootstrap over each run's histogram. A
//!   bootstrap resample of n values drawn from the recorded ones has as its
//!   k-th smallest value the recorded value at rank ⌈U·n⌉, where U is the
//!   k-th smallest of n uniform numbers, which is Beta(k, n - k + 1)
//!   distributed. So each round draws one Beta rank per run and looks it up
//!   in the histogram's cumulative counts: the exact bootstrap distribution
//!   of the percentile, without the raw values and at a cost independent of
//!   the number of requests. [`ROUNDS`] rounds give the distribution of
//!   NEW - BASE, whose central [`CONFIDENCE`] interval must exclude 0.
//! - **Rate**: each run's rate is uncertain by the spread of its 100 ms
//!   Req/Sec samples (standard error of their mean, scaled to the run's
//!   rate); the interval is the normal one on the difference.
//! - **Errors**: the share of requests that failed, compared with the
//!   Agresti–Caffo interval for a difference of two proportions (sound
//!   with no errors at all on either side).
//!
//! Sampling error is not all the noise: two runs of one server on one box
//! differ by more than their samples explain (CPU frequency, other
//! processes, where the scheduler puts threads). The bootstrap cannot see
//! that, so a difference also has to reach a practical floor ([`Noise`]:
//! by default 5% of the base value and, for latency, 100 us and two
//! histogram buckets) before it is called faster or slower.

use hdrhistogram::Histogram;

use crate::plan::random::Draws;

/// Bootstrap rounds per percentile.
pub const ROUNDS: usize = 1000;
/// The two-sided confidence of every interval.
pub const CONFIDENCE: f64 = 0.99;
/// The normal quantile of [`CONFIDENCE`] (two-sided).
const Z: f64 = 2.575_829_303_548_901;
/// The bootstrap's seed: the same inputs give the same verdicts.
pub const SEED: u64 = 0x7061_6365;

/// The smallest difference that counts, whatever the statistics say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noise {
    /// Percent of the base value.
    pub percent: f64,
    /// Microseconds, for latency.
    pub latency_us: f64,
}

impl Default for Noise {
    fn default() -> Noise {
        Noise { percent: 5.0, latency_us: 100.0 }
    }
}

impl Noise {
    /// The floor of a latency difference from `base_us`, with `bucket_us`
    /// the width of the coarser histogram's bucket there.
    pub fn latency_floor(&self, base_us: f64, bucket_us: f64) -> f64 {
        (self.percent / 100.0 * base_us).max(self.latency_us).max(2.0 * bucket_us)
    }

    /// The floor of a difference from `base` (rates).
    pub fn relative_floor(&self, base: f64) -> f64 {
        self.percent / 100.0 * base.abs()
    }
}

/// A histogram's recorded buckets as cumulative counts, for looking up the
/// value at a rank.
pub struct Ranks {
    /// (cumulative count, lowest value, highest value) per recorded bucket.
    buckets: Vec<(u64, u64, u64)>,
    total: u64,
}

impl Ranks {
    pub fn of(h: &Histogram<u64>) -> Ranks {
        let buckets: Vec<(u64, u64, u64)> = crate::report::spectrum::recorded_buckets(h)
            .map(|b| (b.cumulative, b.lowest, b.highest))
            .collect();
        Ranks { total: buckets.last().map_or(0, |b| b.0), buckets }
    }

    /// The value at `rank` (1 to the total) as the reports give a
    /// percentile: its bucket's highest value, the lowest for p0.
    fn value_at_rank(&self, rank: u64, percentile: f64) -> u64 {
        let i = self.buckets.partition_point(|b| b.0 < rank).min(self.buckets.len() - 1);
        let (_, lowest, highest) = self.buckets[i];
        if percentile == 0.0 {
            lowest
        } else {
            highest
        }
    }

    /// The rank `value_at_percentile` (HdrHistogram_c's arithmetic) looks
    /// for.
    fn rank_of(&self, percentile: f64) -> u64 {
        let p = percentile.min(100.0);
        (((p / 100.0) * self.total as f64 + 0.5) as u64).clamp(1, self.total)
    }

    /// The percentile of one bootstrap resample.
    fn resampled(&self, percentile: f64, draws: &mut Draws) -> u64 {
        let n = self.total;
        let k = self.rank_of(percentile);
        let a = draws.gamma(k as f64);
        let b = draws.gamma((n - k + 1) as f64);
        let u = a / (a + b);
        let rank = ((u * n as f64).ceil() as u64).clamp(1, n);
        self.value_at_rank(rank, percentile)
    }
}

/// The [`CONFIDENCE`] bootstrap interval of NEW - BASE at `percentile`,
/// in microseconds; None when either histogram is empty. `stream` tells
/// the percentiles' random streams apart.
pub fn percentile_difference(
    base: &Ranks,
    new: &Ranks,
    percentile: f64,
    stream: u64,
) -> Option<(f64, f64)> {
    if base.total == 0 || new.total == 0 {
        return None;
    }
    let mut base_draws = Draws::at(SEED, stream, 0);
    let mut new_draws = Draws::at(SEED, stream, 1);
    let mut differences: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let b = base.resampled(percentile, &mut base_draws) as f64;
            let n = new.resampled(percentile, &mut new_draws) as f64;
            n - b
        })
        .collect();
    differences.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let at = |q: f64| differences[((q * ROUNDS as f64) as usize).min(ROUNDS - 1)];
    Some((at(tail), at(1.0 - tail)))
}

/// The run's rate and its standard error, from its Req/Sec samples
/// (per thread and 100 ms): the relative spread of their mean applied to
/// the rate. A standard error of 0 without two samples.
pub fn rate_with_error(rate: f64, samples: &[f64]) -> (f64, f64) {
    let (mean, stdev) = crate::stats::sample_mean_stdev(samples);
    if samples.len() < 2 || mean <= 0.0 {
        return (rate, 0.0);
    }
    let relative = stdev / mean / (samples.len() as f64).sqrt();
    (rate, rate * relative)
}

/// The [`CONFIDENCE`] interval of NEW - BASE for two values with their
/// standard errors (normal).
pub fn normal_difference(base: (f64, f64), new: (f64, f64)) -> (f64, f64) {
    let difference = new.0 - base.0;
    let error = (base.1 * base.1 + new.1 * new.1).sqrt();
    (difference - Z * error, difference + Z * error)
}

/// The [`CONFIDENCE`] interval of NEW - BASE of two shares of failures
/// (`failed` of `issued`), in percentage points: Agresti–Caffo (one
/// failure and one success added to each side).
pub fn share_difference(base: (u64, u64), new: (u64, u64)) -> (f64, f64) {
    let adjusted = |(failed, issued): (u64, u64)| {
        let n = issued as f64 + 2.0;
        let p = (failed as f64 + 1.0) / n;
        (p, p * (1.0 - p) / n)
    };
    let ((pb, vb), (pn, vn)) = (adjusted(base), adjusted(new));
    let (d, e) = (pn - pb, (vb + vn).sqrt());
    (100.0 * (d - Z * e), 100.0 * (d + Z * e))
}

/// Whether an interval leaves 0 out: the difference is significant.
pub fn excludes_zero((low, high): (f64, f64)) -> bool {
    low > 0.0 || high < 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::spectrum::value_at_percentile;
    use crate::stats::latency_histogram;

    /// `count` values spread evenly from `low` to `high`, plus `shift`.
    fn histogram(count: u64, low: u64, high: u64, shift: u64) -> Histogram<u64> {
        let mut h = latency_histogram(3);
        for i in 0..count {
            h.record(low + (high - low) * i / count + shift).unwrap();
        }
        h
    }

    #[test]
    fn ranks_give_the_reports_percentiles() {
        let h = histogram(1000, 100, 5000, 0);
        let ranks = Ranks::of(&h);
        for p in [0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            let rank = ranks.rank_of(p);
            assert_eq!(ranks.value_at_rank(rank, p), value_at_percentile(&h, p), "p{p}");
        }
    }

    #[test]
    fn the_bootstrap_centres_on_the_difference_and_narrows_with_counts() {
        let base = Ranks::of(&histogram(2000, 100, 2000, 0));
        let new = Ranks::of(&histogram(2000, 100, 2000, 1000));
        let (low, high) = percentile_difference(&base, &new, 50.0, 0).unwrap();
        assert!(low < 1000.0 && high > 1000.0 && low > 800.0 && high < 1200.0, "{low} {high}");
        // The same histogram: the interval holds 0.
        let same = percentile_difference(&base, &base, 50.0, 0).unwrap();
        assert!(!excludes_zero(same), "{same:?}");
        // Deterministic.
        assert_eq!(percentile_difference(&base, &new, 99.0, 3), {
            percentile_difference(&base, &new, 99.0, 3)
        });
        let many = Ranks::of(&histogram(200_000, 100, 2000, 0));
        let wide = percentile_difference(&base, &base, 50.0, 1).unwrap();
        let narrow = percentile_difference(&many, &many, 50.0, 1).unwrap();
        assert!(narrow.1 - narrow.0 < (wide.1 - wide.0) / 3.0, "{narrow:?} {wide:?}");
        assert_eq!(percentile_difference(&base, &Ranks::of(&latency_histogram(3)), 50.0, 0), None);
    }

    /// A percentile far in the tail rests on a few values: one outlier
    /// more does not make a difference significant.
    #[test]
    fn one_outlier_is_not_significant() {
        let base = histogram(1000, 100, 200, 0);
        let mut new = base.clone();
        new.record(50_000).unwrap();
        let interval =
            percentile_difference(&Ranks::of(&base), &Ranks::of(&new), 100.0, 0).unwrap();
        assert!(!excludes_zero(interval), "{interval:?}");
    }

    #[test]
    fn rate_and_share_intervals() {
        let (rate, error) = rate_with_error(1000.0, &[90.0, 110.0, 100.0, 100.0]);
        assert_eq!(rate, 1000.0);
        assert!((error - 1000.0 * (8.165 / 100.0) / 2.0).abs() < 0.1, "{error}");
        assert_eq!(rate_with_error(5.0, &[1.0]), (5.0, 0.0));
        let (low, high) = normal_difference((1000.0, 10.0), (1100.0, 10.0));
        assert!((low - (100.0 - Z * 200f64.sqrt())).abs() < 1e-9 && high > 100.0);
        // No errors on either side: nothing to see.
        assert!(!excludes_zero(share_difference((0, 1000), (0, 1000))));
        // 3 of 1000 against none is chance; 50 of 1000 is not.
        assert!(!excludes_zero(share_difference((0, 1000), (3, 1000))));
        assert!(excludes_zero(share_difference((0, 1000), (50, 1000))));
    }

    #[test]
    fn floors() {
        let noise = Noise::default();
        assert_eq!(noise.latency_floor(50.0, 1.0), 100.0);
        assert_eq!(noise.latency_floor(10_000.0, 8.0), 500.0);
        assert_eq!(noise.latency_floor(10_000_000.0, 800_000.0), 1_600_000.0);
        assert_eq!(noise.relative_floor(-200.0), 10.0);
    }
}
