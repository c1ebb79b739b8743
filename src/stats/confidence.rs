//! How much a percentile of a histogram can be trusted: how many samples
//! lie beyond it, whether that is enough ([`MIN_SAMPLES_BEYOND`]), and its
//! confidence interval.
//!
//! **Samples beyond a percentile.** The reports give the p-th percentile
//! of n values as the value at rank r = max(1, ⌊p/100·n + 0.5⌋)
//! (HdrHistogram's `value_at_percentile`, [`percentile_rank`]). The
//! samples beyond it are those ranked past r toward the nearer end:
//! n − r for p ≥ 50, r − 1 below. With few of them the percentile is
//! decided by a handful of requests, and one stall more or less moves it.
//!
//! **Confidence interval** (distribution-free, from order statistics):
//! the number B of n independent values below the true p-quantile is
//! binomial(n, p/100), so the l-th smallest value is below the quantile
//! with probability P(B ≥ l), and the u-th smallest above it with
//! probability P(B ≤ u − 1). [`rank_interval`] takes the largest l and the
//! smallest u that leave at most (1 − [`LEVEL`])/2 out on each side, so
//! the interval [X(l), X(u)] holds the quantile with at least [`LEVEL`]
//! probability whatever the distribution. A side is unbounded when no
//! rank qualifies (l < 1 or u > n: the samples cannot bound the quantile
//! on that side, as for the maximum from above). The binomial's
//! quantiles are exact (its probabilities summed around its mode) while
//! its variance is at most [`EXACT_VARIANCE`], and from the normal
//! approximation with a continuity correction beyond, where the two
//! agree to a rank. In a histogram, [`interval`] widens the ranks to
//! their buckets: the lowest value of the bucket holding rank l, the
//! highest of the one holding rank u.

use hdrhistogram::Histogram;

use super::spectrum::{percentile_rank, recorded_buckets};

/// The fewest samples beyond a percentile for it to count as measured.
/// Below it pace marks the percentile in its reports and `pace compare`
/// says "too few samples" rather than faster or slower. Why 10: the
/// number of samples beyond a percentile varies from run to run of one
/// server about as a Poisson count, by ±√k around k; at 10 that is ±3,
/// below it one or two slow requests more or less decide the value (the
/// usual rule that p99.9 takes 10,000 requests). It also keeps the 95%
/// interval bounded with a margin: the samples cannot bound a percentile
/// from above at 95% with fewer than about 4 beyond it (e^-k < 2.5%).
pub const MIN_SAMPLES_BEYOND: u64 = 10;

/// The confidence of [`interval`].
pub const LEVEL: f64 = 0.95;

/// The normal quantile of [`LEVEL`], two-sided.
const Z: f64 = 1.959_963_984_540_054;

/// Largest binomial variance (n·q·(1 − q)) whose quantiles are computed
/// exactly: about 20,000 terms each. Beyond it the normal approximation
/// is within a rank of the exact one, and costs nothing.
pub const EXACT_VARIANCE: f64 = 1e6;

/// The samples ranked beyond `percentile` among `count`, toward the
/// nearer end: above it from p50 up, below it under p50. 0 with none
/// (and for a percentile that is not a number).
pub fn samples_beyond(count: u64, percentile: f64) -> u64 {
    if count == 0 || percentile.is_nan() {
        return 0;
    }
    let rank = percentile_rank(count, percentile).min(count);
    if percentile >= 50.0 {
        count - rank
    } else {
        rank - 1
    }
}

/// Whether `percentile` of `count` values has [`MIN_SAMPLES_BEYOND`].
pub fn enough(count: u64, percentile: f64) -> bool {
    samples_beyond(count, percentile) >= MIN_SAMPLES_BEYOND
}

/// Of `percentiles`, those `count` values back, and those left out; at
/// least the first is kept, so that a report has a line saying why.
/// What pace shows when it chooses the percentiles itself.
pub fn backed(percentiles: &[f64], count: u64) -> (Vec<f64>, Vec<f64>) {
    let (mut backed, mut left_out): (Vec<f64>, Vec<f64>) =
        percentiles.iter().partition(|&&p| enough(count, p));
    if backed.is_empty() && !left_out.is_empty() {
        backed.push(left_out.remove(0));
    }
    (backed, left_out)
}

/// The ranks (1 to `count`) of the [`LEVEL`] interval of the quantile at
/// `percentile`: (lower, upper), None for a side the samples cannot bound.
pub fn rank_interval(count: u64, percentile: f64) -> (Option<u64>, Option<u64>) {
    if count == 0 || !percentile.is_finite() {
        return (None, None);
    }
    let q = (percentile / 100.0).clamp(0.0, 1.0);
    let tail = (1.0 - LEVEL) / 2.0;
    // The largest k with P(B ≤ k) ≤ tail and the smallest with
    // P(B ≤ k) ≥ 1 - tail (None: no such k).
    let (below, above) = if q == 0.0 {
        // B is always 0.
        (None, Some(0))
    } else if q == 1.0 {
        // B is always n.
        (count.checked_sub(1), Some(count))
    } else if count as f64 * q * (1.0 - q) <= EXACT_VARIANCE {
        exact_quantiles(count, q, tail)
    } else {
        normal_quantiles(count, q)
    };
    let lower = below.map(|k| k + 1);
    let upper = above.map(|k| k + 1).filter(|&u| u <= count);
    (lower, upper)
}

/// The binomial(n, q)'s tail quantiles, from its probabilities summed
/// around the mode (relative to the mode's, so nothing underflows that
/// matters: terms below 1e-20 of it are left out).
fn exact_quantiles(n: u64, q: f64, tail: f64) -> (Option<u64>, Option<u64>) {
    const NEGLIGIBLE: f64 = 1e-20;
    let ratio = q / (1.0 - q);
    let mode = (((n + 1) as f64 * q) as u64).min(n);
    // Weights from the mode down, then up.
    let mut down = vec![1.0];
    let (mut k, mut w) = (mode, 1.0);
    while k > 0 && w > NEGLIGIBLE {
        // P(k - 1) / P(k) = k / (n - k + 1) / ratio.
        w *= k as f64 / (n - k + 1) as f64 / ratio;
        k -= 1;
        down.push(w);
    }
    let first = k;
    let mut weights: Vec<f64> = down.into_iter().rev().collect();
    let (mut k, mut w) = (mode, 1.0);
    while k < n && w > NEGLIGIBLE {
        // P(k + 1) / P(k) = (n - k) / (k + 1) · ratio.
        w *= (n - k) as f64 / (k + 1) as f64 * ratio;
        k += 1;
        weights.push(w);
    }
    let total: f64 = weights.iter().sum();
    let mut below = None;
    let mut above = None;
    let mut cumulative = 0.0;
    for (i, w) in weights.iter().enumerate() {
        cumulative += w / total;
        let k = first + i as u64;
        if cumulative <= tail {
            below = Some(k);
        }
        if cumulative >= 1.0 - tail {
            above = Some(k);
            break;
        }
    }
    // Past the last term the rest is negligible: P(B ≤ n) = 1.
    (below, above.or(Some(n)))
}

/// The same from the normal approximation: P(B ≤ k) ≈ Φ((k + 0.5 − nq)/σ).
fn normal_quantiles(n: u64, q: f64) -> (Option<u64>, Option<u64>) {
    let mean = n as f64 * q;
    let sd = (mean * (1.0 - q)).sqrt();
    let below = (mean - Z * sd - 0.5).floor();
    let above = (mean + Z * sd - 0.5).ceil().min(n as f64);
    ((below >= 0.0).then_some(below as u64), Some(above as u64))
}

/// The [`LEVEL`] interval of `h`'s percentile, in its values: the lowest
/// value of the bucket holding the lower rank, the highest of the one
/// holding the upper; None for a side the samples cannot bound. None for
/// an empty histogram.
pub fn interval(h: &Histogram<u64>, percentile: f64) -> Option<(Option<u64>, Option<u64>)> {
    if h.is_empty() {
        return None;
    }
    let (lower, upper) = rank_interval(h.len(), percentile);
    let bucket = |rank: u64| recorded_buckets(h).find(|b| b.cumulative >= rank);
    Some((lower.and_then(bucket).map(|b| b.lowest), upper.and_then(bucket).map(|b| b.highest)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::random::Draws;
    use crate::stats::latency_histogram;
    use crate::stats::spectrum::value_at_percentile;

    #[test]
    fn samples_beyond_the_percentile() {
        // 5000 samples: p99 has 50 beyond it, p99.9 only 5, the max none.
        assert_eq!(samples_beyond(5000, 99.0), 50);
        assert_eq!(samples_beyond(5000, 99.9), 5);
        assert_eq!(samples_beyond(5000, 100.0), 0);
        assert!(enough(5000, 99.0) && !enough(5000, 99.9) && !enough(5000, 100.0));
        // p99.9 takes about 10,000 (9,501, with the rank rounded).
        assert!(enough(9_501, 99.9) && !enough(9_500, 99.9));
        // The median of 20: 10 above it; of 19: 9.
        assert!(enough(20, 50.0) && !enough(19, 50.0));
        // Below p50, the samples below: the minimum has none.
        assert_eq!(samples_beyond(1000, 0.0), 0);
        assert_eq!(samples_beyond(1000, 1.0), 9);
        assert_eq!(samples_beyond(1000, 25.0), 249);
        assert_eq!(samples_beyond(0, 50.0), 0);
        assert_eq!(samples_beyond(1, 50.0), 0);
        // Bad percentiles do not panic.
        assert_eq!(samples_beyond(100, f64::NAN), 0);
        assert_eq!(samples_beyond(100, 250.0), 0);
    }

    #[test]
    fn the_percentiles_a_run_backs() {
        let wrk2 = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];
        assert_eq!(backed(&wrk2, 100_000).0, [50.0, 75.0, 90.0, 99.0, 99.9, 99.99]);
        assert_eq!(backed(&wrk2, 1000), (wrk2[..4].to_vec(), wrk2[4..].to_vec()));
        assert_eq!(backed(&wrk2, 950).0, [50.0, 75.0, 90.0]);
        // Nothing backed: the first alone, to say so.
        assert_eq!(backed(&wrk2, 15), (vec![50.0], wrk2[1..].to_vec()));
        assert_eq!(backed(&wrk2, 0).0, [50.0]);
        assert_eq!(backed(&wrk2, 1_000_000_000_000).1, [100.0]);
        assert_eq!(backed(&[], 10), (vec![], vec![]));
    }

    /// Known ranks, from the binomial's tables: the median of 10 is
    /// between the 2nd and the 9th value (coverage 97.9%), of 20 between
    /// the 6th and the 15th (95.9%); the p90 of 100 between the 84th and
    /// the 96th.
    #[test]
    fn known_ranks() {
        assert_eq!(rank_interval(10, 50.0), (Some(2), Some(9)));
        assert_eq!(rank_interval(20, 50.0), (Some(6), Some(15)));
        assert_eq!(rank_interval(100, 90.0), (Some(84), Some(96)));
        // Too few values to bound the median at 95%.
        assert_eq!(rank_interval(5, 50.0), (None, None));
        // The maximum is bounded below by the largest value, never above.
        assert_eq!(rank_interval(1000, 100.0), (Some(1000), None));
        assert_eq!(rank_interval(1000, 0.0), (None, Some(1)));
        assert_eq!(rank_interval(0, 50.0), (None, None));
        assert_eq!(rank_interval(10, f64::NAN), (None, None));
        // p99.9 of 5000: 5 beyond, bounded above only by the largest.
        assert_eq!(rank_interval(5000, 99.9).1, Some(5000));
    }

    /// The coverage of [X(l), X(u)], from the binomial itself.
    fn coverage(n: u64, q: f64, (l, u): (u64, u64)) -> f64 {
        // P(l ≤ B ≤ u - 1), B ~ binomial(n, q), summed term by term (in
        // logarithms: (1 - q)^n underflows).
        let mut ln_p = n as f64 * (1.0 - q).ln();
        let mut sum = 0.0;
        for k in 0..=n {
            if k >= l && k < u {
                sum += ln_p.exp();
            }
            ln_p += ((n - k) as f64).ln() - ((k + 1) as f64).ln() + q.ln() - (1.0 - q).ln();
        }
        sum
    }

    #[test]
    fn exact_ranks_cover_and_are_the_tightest() {
        for n in [20, 37, 100, 250, 1000] {
            for p in [50.0, 75.0, 90.0, 99.0] {
                let q = p / 100.0;
                let (Some(l), Some(u)) = rank_interval(n, p) else {
                    assert!(!enough(n, p), "n {n} p{p}");
                    continue;
                };
                let c = coverage(n, q, (l, u));
                assert!(c >= LEVEL - 1e-9, "n {n} p{p}: [{l}, {u}] covers {c}");
                // One rank narrower on either side leaves more than 2.5%
                // out there.
                let tail_below = 1.0 - coverage(n, q, (l + 1, n + 1));
                let tail_above = 1.0 - coverage(n, q, (0, u - 1));
                assert!(tail_below > 0.025 && tail_above > 0.025, "n {n} p{p}");
            }
        }
    }

    #[test]
    fn enough_samples_bound_both_sides_and_hold_the_reported_rank() {
        for n in (1..3000).step_by(7) {
            for p in [0.0, 1.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0] {
                let (l, u) = rank_interval(n, p);
                if enough(n, p) {
                    assert!(l.is_some() && u.is_some(), "n {n} p{p}");
                }
                let rank = percentile_rank(n, p);
                assert!(l.is_none_or(|l| l <= rank), "n {n} p{p}: {l:?} > {rank}");
                assert!(u.is_none_or(|u| u >= rank), "n {n} p{p}: {u:?} < {rank}");
            }
        }
    }

    /// Where the exact computation hands over to the normal one, they
    /// agree to a rank.
    #[test]
    fn normal_approximation_agrees_at_the_switch() {
        for q in [0.5, 0.9, 0.99] {
            let n = (EXACT_VARIANCE / (q * (1.0 - q))) as u64;
            let exact = exact_quantiles(n, q, (1.0 - LEVEL) / 2.0);
            let normal = normal_quantiles(n, q);
            let (e, a) = (exact.0.unwrap() as i64, normal.0.unwrap() as i64);
            assert!((e - a).abs() <= 1, "q {q}: {exact:?} {normal:?}");
            let (e, a) = (exact.1.unwrap() as i64, normal.1.unwrap() as i64);
            assert!((e - a).abs() <= 1, "q {q}: {exact:?} {normal:?}");
        }
        // Billions of samples: quick, and around the rank.
        let (l, u) = rank_interval(4_000_000_000, 99.0);
        let rank = percentile_rank(4_000_000_000, 99.0);
        assert!(l.unwrap() < rank && u.unwrap() > rank && u.unwrap() - l.unwrap() < 30_000);
    }

    /// Samples of a known distribution (uniform on 0..1, whose p-quantile
    /// is p/100): the interval holds the quantile about 95% of the time
    /// or more, never much less.
    #[test]
    fn coverage_of_simulated_runs() {
        let mut draws = Draws::at(7, 0, 0);
        for (n, p) in [(30, 50.0), (200, 90.0), (1000, 99.0)] {
            let trials = 2000;
            let mut covered = 0;
            for _ in 0..trials {
                let mut values: Vec<f64> = (0..n).map(|_| draws.uniform()).collect();
                values.sort_by(f64::total_cmp);
                let (Some(l), Some(u)) = rank_interval(n, p) else { panic!("n {n} p{p}") };
                let truth = p / 100.0;
                if values[l as usize - 1] <= truth && truth <= values[u as usize - 1] {
                    covered += 1;
                }
            }
            let share = covered as f64 / trials as f64;
            assert!((0.935..0.995).contains(&share), "n {n} p{p}: {share}");
        }
    }

    #[test]
    fn histogram_intervals_hold_the_reported_value() {
        let mut h = latency_histogram(3);
        for v in 1..=1000 {
            h.record(v * 10).unwrap();
        }
        for p in [50.0, 90.0, 99.0] {
            let (low, high) = interval(&h, p).unwrap();
            let (low, high) = (low.unwrap(), high.unwrap());
            let value = value_at_percentile(&h, p);
            assert!(low <= value && value <= high, "p{p}: {low} {value} {high}");
        }
        // The median of 1..1000 (×10) lies between the 469th and the
        // 532nd value, widened to their buckets (4688 to 4691 holds
        // 4690; 5320 to 5323 holds 5320).
        assert_eq!(rank_interval(1000, 50.0), (Some(469), Some(532)));
        let (low, high) = interval(&h, 50.0).unwrap();
        assert_eq!((low, high), (Some(4688), Some(5323)));
        assert_eq!(interval(&h, 100.0).unwrap(), (Some(h.lowest_equivalent(10_000)), None));
        assert_eq!(interval(&latency_histogram(3), 50.0), None);
    }
}
