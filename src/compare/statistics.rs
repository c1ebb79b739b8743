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
//!   That bootstrap takes the values as independent, and they are not: a
//!   stall, a noisy neighbour or a garbage collection slows many requests
//!   in a row. So a run saved with `-p` is also resampled by whole periods
//!   (a block bootstrap: its periods grouped into at most [`MAX_BLOCKS`]
//!   consecutive blocks, drawn with replacement, their histograms added),
//!   which sees how much the run varied over time; the interval is then
//!   the wider of the two.
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

/// Bootstrap rounds (each resamples every percentile of both runs).
pub const ROUNDS: usize = 1000;
/// The two-sided confidence of every interval.
pub const CONFIDENCE: f64 = 0.99;
/// The normal quantile of [`CONFIDENCE`] (two-sided).
const Z: f64 = 2.575_829_303_548_901;
/// Fewest periods a run needs for the block bootstrap: with fewer, a
/// block is too much of the run for resampling them to mean anything.
pub const MIN_BLOCKS: usize = 5;
/// Most blocks the periods are grouped into (a long run's periods are
/// grouped into this many consecutive blocks: slow drifts stay inside
/// blocks, and the cost stays small).
pub const MAX_BLOCKS: usize = 20;
/// The bootstrap's seed: the same inputs give the same verdicts.
pub const SEED: u64 = 0x7061_6365;

/// The smallest difference that counts, whatever the statistics say
/// (`--noise`). The defaults come from measuring: on a loaded 2-core
/// machine, 1 s runs of one loopback server had p50s from 22 to 34 us and
/// p99s from 77 to 125 us, run after run, each significant by its samples.
/// 100 us is above that jitter and below what matters to most HTTP
/// services; 5% does the same for slower ones (a 10 ms p50 moves by more
/// than 100 us between runs). Two histogram buckets are the recording's
/// own resolution.
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
        let buckets: Vec<(u64, u64, u64)> = crate::stats::spectrum::recorded_buckets(h)
            .map(|b| (b.cumulative, b.lowest, b.highest))
            .collect();
        Ranks { total: buckets.last().map_or(0, |b| b.0), buckets }
    }

    /// The ranks of `counts` over `buckets` (lowest, highest), of `total`
    /// values in all.
    fn from_counts(buckets: &[(u64, u64)], counts: &[u64], total: u64) -> Ranks {
        let mut cumulative = 0;
        let buckets = (buckets.iter().zip(counts))
            .filter(|(_, &count)| count > 0)
            .map(|(&(lowest, highest), &count)| {
                cumulative += count;
                (cumulative, lowest, highest)
            })
            .collect();
        Ranks { buckets, total }
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

/// A run's recorded values of one latency, ready to be resampled: its
/// histogram, and its periods' when it was saved with enough of them.
pub struct Resampler {
    ranks: Ranks,
    blocks: Option<Blocks>,
}

impl Resampler {
    /// `total` with its periods' histograms (none without `-p`).
    pub fn of(total: &Histogram<u64>, periods: &[&Histogram<u64>]) -> Resampler {
        Resampler { ranks: Ranks::of(total), blocks: Blocks::of(periods) }
    }

    /// Whether the periods are resampled too.
    #[cfg(test)]
    fn by_periods(&self) -> bool {
        self.blocks.is_some()
    }
}

/// Whether a run of `periods` periods is resampled by periods too.
pub fn by_periods(periods: usize) -> bool {
    periods >= MIN_BLOCKS
}

/// The [`CONFIDENCE`] bootstrap interval of NEW - BASE at each of
/// `percentiles`, in microseconds; None where a run recorded nothing.
/// `stream` tells the random streams of separate calls apart.
pub fn percentile_differences(
    base: &Resampler,
    new: &Resampler,
    percentiles: &[f64],
    stream: u64,
) -> Vec<Option<(f64, f64)>> {
    if base.ranks.total == 0 || new.ranks.total == 0 {
        return vec![None; percentiles.len()];
    }
    let mut draws = [0, 1].map(|run| Draws::at(SEED, stream, run));
    // Rounds of values resampled, one difference per percentile a round.
    let by_values = rounds(percentiles, |p| {
        let [base_draws, new_draws] = &mut draws;
        let b = p.iter().map(|&p| base.ranks.resampled(p, base_draws));
        let n = p.iter().map(|&p| new.ranks.resampled(p, new_draws));
        Some(n.zip(b).map(|(n, b)| n as f64 - b as f64).collect())
    });
    if base.blocks.is_none() && new.blocks.is_none() {
        return by_values.into_iter().map(Some).collect();
    }
    // Rounds of periods resampled (a run without them: its values).
    let mut block_draws = [2, 3].map(|run| Draws::at(SEED, stream, run));
    let by_periods = rounds(percentiles, |p| {
        let [base_draws, new_draws] = &mut block_draws;
        let b = base.resampled_all(p, base_draws)?;
        let n = new.resampled_all(p, new_draws)?;
        Some(n.iter().zip(&b).map(|(n, b)| *n as f64 - *b as f64).collect())
    });
    (by_values.into_iter().zip(by_periods))
        .map(|(values, periods)| Some((values.0.min(periods.0), values.1.max(periods.1))))
        .collect()
}

impl Resampler {
    /// One resample's value at each of `percentiles`: by periods when the
    /// run has them, else by values. None when the periods drawn hold
    /// nothing.
    fn resampled_all(&self, percentiles: &[f64], draws: &mut Draws) -> Option<Vec<u64>> {
        match &self.blocks {
            Some(blocks) => blocks.resampled(percentiles, draws),
            None => Some(percentiles.iter().map(|&p| self.ranks.resampled(p, draws)).collect()),
        }
    }
}

/// Runs [`ROUNDS`] rounds of `round` (one difference per percentile, or
/// None for a round that drew nothing) and returns each percentile's
/// central [`CONFIDENCE`] interval.
fn rounds(
    percentiles: &[f64],
    mut round: impl FnMut(&[f64]) -> Option<Vec<f64>>,
) -> Vec<(f64, f64)> {
    let mut differences: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); percentiles.len()];
    for _ in 0..ROUNDS {
        let Some(row) = round(percentiles) else { continue };
        for (column, d) in differences.iter_mut().zip(row) {
            column.push(d);
        }
    }
    let tail = (1.0 - CONFIDENCE) / 2.0;
    differences
        .into_iter()
        .map(|mut column| {
            if column.is_empty() {
                return (f64::NEG_INFINITY, f64::INFINITY);
            }
            column.sort_by(f64::total_cmp);
            let last = column.len() - 1;
            let at = |q: f64| column[((q * column.len() as f64) as usize).min(last)];
            (at(tail), at(1.0 - tail))
        })
        .collect()
}

/// A run's periods grouped into consecutive blocks, each block's counts
/// over the buckets any period recorded.
struct Blocks {
    /// (lowest, highest) value of each bucket recorded in any period, in
    /// value order.
    buckets: Vec<(u64, u64)>,
    /// Per block: (bucket index, count) of its recorded buckets.
    blocks: Vec<Vec<(usize, u64)>>,
}

impl Blocks {
    /// None with fewer than [`MIN_BLOCKS`] periods.
    fn of(periods: &[&Histogram<u64>]) -> Option<Blocks> {
        if !by_periods(periods.len()) {
            return None;
        }
        let mut buckets: Vec<(u64, u64)> = periods
            .iter()
            .flat_map(|h| {
                crate::stats::spectrum::recorded_buckets(h).map(|b| (b.lowest, b.highest))
            })
            .collect();
        buckets.sort_unstable();
        buckets.dedup();
        let count = periods.len().min(MAX_BLOCKS);
        let blocks = (0..count)
            .map(|block| {
                // Periods [start, end) of this block: as even as can be.
                let (start, end) =
                    (block * periods.len() / count, (block + 1) * periods.len() / count);
                let mut counts: Vec<(usize, u64)> = Vec::new();
                for h in &periods[start..end] {
                    for b in crate::stats::spectrum::recorded_buckets(h) {
                        let index = buckets.partition_point(|&(low, _)| low < b.lowest);
                        counts.push((index, b.count));
                    }
                }
                counts
            })
            .collect();
        Some(Blocks { buckets, blocks })
    }

    /// Draws as many blocks as there are, with replacement, and gives the
    /// value at each percentile of what they recorded together.
    fn resampled(&self, percentiles: &[f64], draws: &mut Draws) -> Option<Vec<u64>> {
        let mut counts = vec![0u64; self.buckets.len()];
        for _ in 0..self.blocks.len() {
            let block =
                ((draws.uniform() * self.blocks.len() as f64) as usize).min(self.blocks.len() - 1);
            for &(index, count) in &self.blocks[block] {
                counts[index] += count;
            }
        }
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let ranks = Ranks::from_counts(&self.buckets, &counts, total);
        Some(percentiles.iter().map(|&p| ranks.value_at_rank(ranks.rank_of(p), p)).collect())
    }
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
    use crate::stats::latency_histogram;
    use crate::stats::spectrum::value_at_percentile;

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

    /// The interval of NEW - BASE at `p`, by values only.
    fn interval(base: &Histogram<u64>, new: &Histogram<u64>, p: f64) -> Option<(f64, f64)> {
        let (base, new) = (Resampler::of(base, &[]), Resampler::of(new, &[]));
        percentile_differences(&base, &new, &[p], 0)[0]
    }

    #[test]
    fn the_bootstrap_centres_on_the_difference_and_narrows_with_counts() {
        let base = histogram(2000, 100, 2000, 0);
        let new = histogram(2000, 100, 2000, 1000);
        let (low, high) = interval(&base, &new, 50.0).unwrap();
        assert!(low < 1000.0 && high > 1000.0 && low > 800.0 && high < 1200.0, "{low} {high}");
        // The same histogram: the interval holds 0.
        let same = interval(&base, &base, 50.0).unwrap();
        assert!(!excludes_zero(same), "{same:?}");
        // Deterministic.
        assert_eq!(interval(&base, &new, 99.0), interval(&base, &new, 99.0));
        let many = histogram(200_000, 100, 2000, 0);
        let wide = interval(&base, &base, 50.0).unwrap();
        let narrow = interval(&many, &many, 50.0).unwrap();
        assert!(narrow.1 - narrow.0 < (wide.1 - wide.0) / 3.0, "{narrow:?} {wide:?}");
        assert_eq!(interval(&base, &latency_histogram(3), 50.0), None);
    }

    /// A percentile far in the tail rests on a few values: one outlier
    /// more does not make a difference significant.
    #[test]
    fn one_outlier_is_not_significant() {
        let base = histogram(1000, 100, 200, 0);
        let mut new = base.clone();
        new.record(50_000).unwrap();
        let interval = interval(&base, &new, 100.0).unwrap();
        assert!(!excludes_zero(interval), "{interval:?}");
    }

    /// A run of 10 periods, one of them (`stalled`) with every value at
    /// 5 ms: its p99 is the stall's. Taken value by value, that differs
    /// from a run without the stall; resampled by periods, a stall in one
    /// period of ten is what one run can have by chance.
    #[test]
    fn a_stall_in_one_period_is_within_what_periods_vary_by() {
        let periods = |stalled: Option<usize>| -> Vec<Histogram<u64>> {
            (0..10)
                .map(|i| {
                    let shift = if Some(i) == stalled { 5000 } else { 0 };
                    histogram(500, 100, 200, shift)
                })
                .collect()
        };
        let total = |periods: &[Histogram<u64>]| {
            let mut h = latency_histogram(3);
            periods.iter().for_each(|p| h.add(p).unwrap());
            h
        };
        let (calm, stalled) = (periods(None), periods(Some(3)));
        let (calm_total, stalled_total) = (total(&calm), total(&stalled));
        let values = interval(&calm_total, &stalled_total, 99.0).unwrap();
        assert!(excludes_zero(values), "{values:?}");
        let by_periods = |h: &Histogram<u64>, p: &[Histogram<u64>]| {
            Resampler::of(h, &p.iter().collect::<Vec<_>>())
        };
        let (calm, stalled) =
            (by_periods(&calm_total, &calm), by_periods(&stalled_total, &stalled));
        assert!(calm.by_periods());
        let both = percentile_differences(&calm, &stalled, &[50.0, 99.0], 0);
        assert!(!excludes_zero(both[1].unwrap()), "{both:?}");
        // The body is the same either way, and its interval holds the
        // values' one.
        let body = both[0].unwrap();
        let body_values = interval(&calm_total, &stalled_total, 50.0).unwrap();
        assert!(body.0 <= body_values.0 && body.1 >= body_values.1, "{body:?}");
        // Too few periods to resample: values only.
        assert!(!by_periods(&calm_total, &periods(None)[..4]).by_periods());
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
