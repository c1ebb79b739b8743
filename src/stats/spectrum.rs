//! HdrHistogram_c's statistics and its "Detailed Percentile spectrum", byte
//! for byte (`src/hdr_histogram.c`): `hdr_value_at_percentile`, `hdr_mean`,
//! `hdr_stddev`, and `hdr_percentiles_print(h, stdout, 5, 1000.0, CLASSIC)`
//! as wrk2's `print_hdr_latency` calls it, driven by `percentile_iter_next`.
//! Also wrk2's histogram branch of `stats_within_stdev` (`src/stats.c`).
//!
//! The `hdrhistogram` crate computes some of these differently (its mean
//! divides every term by the count, its percentile rounds the rank up),
//! which shows in the last printed digit; so the C arithmetic is mirrored
//! here, same f64 operations in the same order.

use std::io::{self, Write};

use hdrhistogram::Histogram;

use crate::stats::MAX_LATENCY_US;
use crate::units::c_fixed;

/// One counts slot of a histogram as HdrHistogram_c's `hdr_iter` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Lowest value counted here (`value_from_index`).
    pub lowest: u64,
    /// Highest value counted here (`highest_equivalent_value`).
    pub highest: u64,
    /// Values counted here.
    pub count: u64,
    /// Values counted here and in every lower bucket.
    pub cumulative: u64,
}

/// The non-empty buckets in value order, with running totals. That is all
/// the C statistics look at: an empty bucket adds nothing to a sum and
/// never stops a percentile walk.
pub fn recorded_buckets(h: &Histogram<u64>) -> impl Iterator<Item = Bucket> + '_ {
    with_running_total(h, h.iter_recorded())
}

/// Every bucket in value order up to the end of the counts array, empty
/// ones included (`hdr_iter_init` + `hdr_iter_next`).
fn all_buckets(h: &Histogram<u64>) -> impl Iterator<Item = Bucket> + '_ {
    with_running_total(h, h.iter_all())
}

fn with_running_total<'a>(
    h: &'a Histogram<u64>,
    values: impl Iterator<Item = hdrhistogram::iterators::IterationValue<u64>> + 'a,
) -> impl Iterator<Item = Bucket> + 'a {
    let mut cumulative = 0u64;
    values.map(move |v| {
        let count = v.count_at_value();
        cumulative = cumulative.saturating_add(count);
        // Both iterators report the bucket's highest equivalent value.
        let highest = v.value_iterated_to();
        Bucket { lowest: h.lowest_equivalent(highest), highest, count, cumulative }
    })
}

/// The rank of the value the reports give at `percentile` among `count`
/// values: `max(1, (int64)(p/100 · count + 0.5))`, p capped at 100, as
/// HdrHistogram_c's `hdr_value_at_percentile`.
pub fn percentile_rank(count: u64, percentile: f64) -> u64 {
    let p = percentile.min(100.0);
    // `as` truncates toward zero as C's cast does (and saturates, and
    // gives 0 for NaN, where C would be undefined).
    (((p / 100.0) * count as f64 + 0.5) as i64).max(1) as u64
}

/// `hdr_value_at_percentile`: the highest equivalent value of the first
/// bucket whose cumulative count reaches `max(1, (int64)(p/100 * total +
/// 0.5))`, p capped at 100. As in current HdrHistogram_c, p = 0 gives the
/// bucket's lowest equivalent value (the minimum). 0 for an empty histogram.
pub fn value_at_percentile(h: &Histogram<u64>, percentile: f64) -> u64 {
    let count_at_percentile = percentile_rank(h.len(), percentile);
    match recorded_buckets(h).find(|b| b.cumulative >= count_at_percentile) {
        None => 0,
        Some(b) if percentile == 0.0 => b.lowest,
        Some(b) => b.highest,
    }
}

/// `hdr_mean`: each bucket weighs in at its median equivalent value.
/// Like the C code, an empty histogram gives 0/0 = NaN (printed as a dash;
/// HdrHistogram_c prints `-nan`).
pub fn mean(h: &Histogram<u64>) -> f64 {
    let mut total = 0.0;
    for b in recorded_buckets(h) {
        total += b.count as f64 * h.median_equivalent(b.lowest) as f64;
    }
    total / h.len() as f64
}

/// `hdr_stddev`: the population standard deviation over bucket medians
/// (NaN for an empty histogram, as in C).
pub fn stddev(h: &Histogram<u64>) -> f64 {
    let mean = mean(h);
    let mut geometric_dev_total = 0.0;
    for b in recorded_buckets(h) {
        let dev = h.median_equivalent(b.lowest) as f64 - mean;
        geometric_dev_total += (dev * dev) * b.count as f64;
    }
    (geometric_dev_total / h.len() as f64).sqrt()
}

/// wrk2's `stats_within_stdev` for a histogram, in percent: the cumulative
/// count at the last bucket starting below `mean - stdev`, subtracted from
/// the cumulative count at the first bucket reaching above `mean + stdev`
/// (or the total). 0 for an empty histogram.
pub fn within_stdev_percent(h: &Histogram<u64>, mean: f64, stdev: f64) -> f64 {
    let total = h.len();
    if total == 0 {
        return 0.0;
    }
    // wrk2 converts the bounds to int64_t, truncating toward zero.
    let upper = (mean + stdev) as i64;
    let lower = (mean - stdev) as i64;
    let mut lower_count = 0;
    let mut upper_count = total;
    for b in all_buckets(h) {
        if lower > b.lowest as i64 {
            lower_count = b.cumulative;
        }
        if upper < b.highest as i64 {
            upper_count = b.cumulative;
            break;
        }
        // wrk2's iterator stops at the bucket where the count is complete.
        if b.cumulative >= total {
            break;
        }
    }
    100.0 * (upper_count - lower_count) as f64 / total as f64
}

/// One line of the spectrum.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Step {
    /// Highest equivalent value of the bucket the walk is at.
    value: u64,
    /// In percent, 0..=100.
    percentile: f64,
    cumulative: u64,
}

/// HdrHistogram_c's percentile iterator (`hdr_iter_percentile_init`,
/// `percentile_iter_next`): reports the first non-empty bucket reaching each
/// target percentile, the target stepping by `100 / (ticks * 2^(k+1))` where
/// `k = (int64)log2(100 / (100 - target))`, so there are `ticks` lines per
/// halving of the distance to 100%. The walk stays on a bucket after
/// reporting it (several targets can land in one bucket); once the last
/// non-empty bucket is reached, one more line reports 100%.
struct PercentileSteps<I> {
    buckets: I,
    /// The bucket the walk is at; `None` before the first move
    /// (`counts_index == -1`) and for an empty histogram.
    current: Option<Bucket>,
    total: u64,
    ticks_per_half_distance: u32,
    /// `percentile_to_iterate_to`.
    target: f64,
    /// The percentile of the last line (`percentiles->percentile`).
    reported: f64,
    seen_last_value: bool,
}

impl<I: Iterator<Item = Bucket>> PercentileSteps<I> {
    fn new(buckets: I, total: u64, ticks_per_half_distance: u32) -> Self {
        PercentileSteps {
            buckets,
            current: None,
            total,
            ticks_per_half_distance,
            target: 0.0,
            reported: 0.0,
            seen_last_value: false,
        }
    }

    fn step_at(&self, percentile: f64) -> Step {
        let (value, cumulative) = self.current.map_or((0, 0), |b| (b.highest, b.cumulative));
        Step { value, percentile, cumulative }
    }

    /// `has_next`: some recorded values lie beyond the current bucket.
    fn has_next(&self) -> bool {
        self.current.map_or(0, |b| b.cumulative) < self.total
    }

    /// Reports the current bucket at the current target and moves the
    /// target on.
    fn report_target(&mut self, at_last_bucket: bool) -> Step {
        let step = self.step_at(self.target);
        self.reported = self.target;
        let next = next_target(self.target, self.ticks_per_half_distance);
        // Near 100% the step can fall below the precision of an f64 and the
        // target stop moving; C relies on reaching the last bucket first,
        // which a count of ~10^16 would defeat. Moving to the next bucket
        // keeps the walk finite either way.
        if next <= self.target && !at_last_bucket {
            self.current = self.buckets.next();
        }
        self.target = next;
        step
    }
}

impl<I: Iterator<Item = Bucket>> Iterator for PercentileSteps<I> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if !self.has_next() {
            if self.seen_last_value {
                return None;
            }
            self.seen_last_value = true;
            return Some(self.step_at(100.0));
        }
        if self.current.is_none() {
            self.current = self.buckets.next();
        }
        while let Some(b) = self.current {
            let current_percentile = (100.0 * b.cumulative as f64) / self.total as f64;
            if b.count != 0 && self.target <= current_percentile {
                return Some(self.report_target(b.cumulative >= self.total));
            }
            if b.cumulative >= self.total {
                break;
            }
            self.current = self.buckets.next();
        }
        // C's fall-through: the walk reached the last bucket without meeting
        // the target (only when the target passed 100, e.g. with 0 ticks);
        // it reports that bucket again at the previous percentile.
        Some(self.step_at(self.reported))
    }
}

/// The next target percentile, with the C code's operations:
/// `t + 100.0 / (ticks * (int64)pow(2, (int64)(log(100 / (100.0 - t)) /
/// log(2)) + 1))`.
fn next_target(target: f64, ticks_per_half_distance: u32) -> f64 {
    let halvings = ((100.0 / (100.0 - target)).ln() / 2f64.ln()) as i64 + 1;
    let half_distance = 2f64.powf(halvings as f64) as i64;
    let reporting_ticks = i64::from(ticks_per_half_distance).saturating_mul(half_distance);
    target + 100.0 / reporting_ticks as f64
}

/// HdrHistogram_c's sub-bucket count for `significant_figures`, as
/// `hdr_calculate_bucket_config` derives it: 2^ceil(log2(2 * 10^digits))
/// (2048 for 3 digits).
fn sub_bucket_count(significant_figures: u8) -> u64 {
    let largest_value_with_single_unit_resolution =
        2.0 * 10f64.powi(i32::from(significant_figures));
    let magnitude = (largest_value_with_single_unit_resolution.ln() / 2f64.ln()).ceil() as u32;
    let half_count_magnitude = magnitude.max(1) - 1;
    1u64 << (half_count_magnitude + 1)
}

/// The bucket count HdrHistogram_c reports for wrk2's histograms (1 us to
/// one day at `significant_figures`), as `hdr_calculate_bucket_config`
/// derives it. pace sizes its histograms to the run, so their own bucket
/// count is smaller; the footer shows wrk2's, which is what the text
/// report has always printed.
fn wrk2_bucket_count(significant_figures: u8) -> u64 {
    let mut smallest_untrackable = sub_bucket_count(significant_figures);
    let mut buckets = 1;
    while smallest_untrackable <= MAX_LATENCY_US {
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    buckets
}

/// wrk2's spectrum: the title line `print_hdr_latency` prints, then
/// `hdr_percentiles_print(h, out, ticks_per_half_distance, value_scale,
/// CLASSIC)`. Values are divided by `value_scale` (1000 turns wrk2's
/// microseconds into milliseconds) and printed with as many decimals as
/// the histogram has significant figures.
pub fn write_spectrum(
    out: &mut dyn Write,
    h: &Histogram<u64>,
    ticks_per_half_distance: u32,
    value_scale: f64,
) -> io::Result<()> {
    writeln!(out, "\n  Detailed Percentile spectrum:")?;
    writeln!(
        out,
        "{:>12} {:>12} {:>12} {:>12}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    let decimals = usize::from(h.sigfig());
    for step in PercentileSteps::new(recorded_buckets(h), h.len(), ticks_per_half_distance) {
        let value = step.value as f64 / value_scale;
        let percentile = step.percentile / 100.0;
        let inverted_percentile = 1.0 / (1.0 - percentile);
        writeln!(
            out,
            "{} {} {:>12} {}",
            c_fixed(value, 12, decimals),
            c_fixed(percentile, 12, 6),
            step.cumulative,
            c_fixed(inverted_percentile, 12, 2)
        )?;
    }
    write_footer(out, h, value_scale)
}

/// The CLASSIC footer of `hdr_percentiles_print`.
fn write_footer(out: &mut dyn Write, h: &Histogram<u64>, value_scale: f64) -> io::Result<()> {
    let mean = mean(h) / value_scale;
    let stddev = stddev(h) / value_scale;
    // `hdr_max`: the highest equivalent value of the largest recorded value.
    let max = h.max() as f64 / value_scale;
    writeln!(
        out,
        "#[Mean    = {}, StdDeviation   = {}]",
        c_fixed(mean, 12, 3),
        c_fixed(stddev, 12, 3)
    )?;
    writeln!(out, "#[Max     = {}, Total count    = {:>12}]", c_fixed(max, 12, 3), h.len())?;
    writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        wrk2_bucket_count(h.sigfig()),
        sub_bucket_count(h.sigfig())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::latency_histogram;

    /// Values 1..=1000 us, once each: below 2048 every value has its own
    /// bucket, so every figure can be checked by hand.
    fn one_to_thousand() -> Histogram<u64> {
        let mut h = latency_histogram(3);
        for v in 1..=1000 {
            h.record(v).unwrap();
        }
        h
    }

    fn spectrum(h: &Histogram<u64>) -> String {
        let mut out = Vec::new();
        write_spectrum(&mut out, h, 5, 1000.0).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn percentiles_follow_the_c_rounding() {
        let h = one_to_thousand();
        assert_eq!(value_at_percentile(&h, 50.0), 500);
        assert_eq!(value_at_percentile(&h, 99.9), 999);
        assert_eq!(value_at_percentile(&h, 99.95), 1000); // (int64)(999.5 + 0.5)
        assert_eq!(value_at_percentile(&h, 100.0), 1000);
        assert_eq!(value_at_percentile(&h, 250.0), 1000);
        assert_eq!(value_at_percentile(&h, 0.01), 1); // at least one value
        assert_eq!(value_at_percentile(&h, -5.0), 1);
        assert_eq!(value_at_percentile(&h, f64::NAN), 1000);
        assert_eq!(value_at_percentile(&latency_histogram(3), 50.0), 0);
    }

    #[test]
    fn percentiles_report_bucket_bounds() {
        let mut h = latency_histogram(3);
        h.record(10_000).unwrap(); // bucket 10000..=10007 at 3 digits
        assert_eq!(value_at_percentile(&h, 50.0), 10_007);
        assert_eq!(value_at_percentile(&h, 0.0), 10_000);
    }

    #[test]
    fn mean_and_stddev_use_bucket_medians() {
        let mut h = latency_histogram(3);
        h.record(10_000).unwrap(); // median equivalent 10004
        h.record(2).unwrap();
        assert_eq!(mean(&h), 5003.0);
        assert_eq!(stddev(&h), 5001.0);
        let empty = latency_histogram(3);
        assert!(mean(&empty).is_nan());
        assert!(stddev(&empty).is_nan());
    }

    #[test]
    fn within_stdev_counts_buckets_the_wrk2_way() {
        let h = one_to_thousand();
        let (m, s) = (mean(&h), stddev(&h));
        // 500.5 +/- 288.67: lower 211 counts values 1..=210 below it,
        // upper 789 stops at bucket 790.
        assert_eq!((m, (s * 100.0).round()), (500.5, 28867.0));
        assert_eq!(within_stdev_percent(&h, m, s), 58.0);
        // Bounds outside every bucket count everything.
        assert_eq!(within_stdev_percent(&h, 500.0, 5000.0), 100.0);
        assert_eq!(within_stdev_percent(&latency_histogram(3), 0.0, 0.0), 0.0);
    }

    #[test]
    fn spectrum_of_one_to_thousand() {
        let text = spectrum(&one_to_thousand());
        let lines: Vec<&str> = text.lines().collect();
        let head = [
            "",
            "  Detailed Percentile spectrum:",
            "       Value   Percentile   TotalCount 1/(1-Percentile)",
            "",
            "       0.001     0.000000            1         1.00",
            "       0.100     0.100000          100         1.11",
            "       0.200     0.200000          200         1.25",
            "       0.300     0.300000          300         1.43",
            "       0.400     0.400000          400         1.67",
            "       0.500     0.500000          500         2.00",
            // From 50% on, steps of 5%, then 2.5% from 75%.
            "       0.550     0.550000          550         2.22",
        ];
        assert_eq!(lines[..head.len()], head);
        assert!(text.contains("\n       0.750     0.750000          750         4.00\n       0.775     0.775000          775         4.44\n"));
        let tail = [
            "       1.000     0.999023         1000      1024.00",
            "       1.000     1.000000         1000          inf",
            "#[Mean    =        0.500, StdDeviation   =        0.289]",
            "#[Max     =        1.000, Total count    =         1000]",
            "#[Buckets =           27, SubBuckets     =         2048]",
        ];
        assert_eq!(lines[lines.len() - tail.len()..], tail);
    }

    /// Several targets in one bucket repeat its value, as in wrk2's output.
    #[test]
    fn spectrum_repeats_a_bucket_for_several_targets() {
        let mut h = latency_histogram(3);
        h.record_n(100, 9).unwrap();
        h.record(12_345).unwrap(); // bucket 12344..=12351
        let text = spectrum(&h);
        let lines: Vec<&str> = text.lines().skip(4).collect();
        assert_eq!(
            lines,
            [
                "       0.100     0.000000            9         1.00",
                "       0.100     0.100000            9         1.11",
                "       0.100     0.200000            9         1.25",
                "       0.100     0.300000            9         1.43",
                "       0.100     0.400000            9         1.67",
                "       0.100     0.500000            9         2.00",
                "       0.100     0.550000            9         2.22",
                "       0.100     0.600000            9         2.50",
                "       0.100     0.650000            9         2.86",
                "       0.100     0.700000            9         3.33",
                "       0.100     0.750000            9         4.00",
                "       0.100     0.775000            9         4.44",
                "       0.100     0.800000            9         5.00",
                "       0.100     0.825000            9         5.71",
                "       0.100     0.850000            9         6.67",
                "       0.100     0.875000            9         8.00",
                "       0.100     0.887500            9         8.89",
                "       0.100     0.900000            9        10.00",
                "      12.351     0.912500           10        11.43",
                "      12.351     1.000000           10          inf",
                "#[Mean    =        1.325, StdDeviation   =        3.674]",
                "#[Max     =       12.351, Total count    =           10]",
                "#[Buckets =           27, SubBuckets     =         2048]",
            ]
        );
    }

    /// An empty histogram prints what HdrHistogram_c prints: the closing
    /// 100% line of an iterator that never moved, and 0/0 statistics.
    #[test]
    fn spectrum_of_an_empty_histogram() {
        let text = spectrum(&latency_histogram(3));
        assert_eq!(
            text,
            "\n  Detailed Percentile spectrum:\n       Value   Percentile   TotalCount 1/(1-Percentile)\n\n       0.000     1.000000            0          inf\n#[Mean    =            -, StdDeviation   =            -]\n#[Max     =        0.000, Total count    =            0]\n#[Buckets =           27, SubBuckets     =         2048]\n"
        );
    }

    #[test]
    fn spectrum_uses_the_histogram_digits() {
        let mut h = latency_histogram(2);
        h.record(1234).unwrap(); // bucket 1232..=1239 at 2 digits
        let text = spectrum(&h);
        assert!(text.contains("\n        1.24     0.000000            1         1.00\n"), "{text}");
        assert!(
            text.ends_with("#[Buckets =           30, SubBuckets     =          256]\n"),
            "{text}"
        );
    }

    #[test]
    fn bucket_counts_match_hdr_histogram_c_for_wrk2s_range() {
        let counts: Vec<u64> = (1..=5).map(wrk2_bucket_count).collect();
        assert_eq!(counts, [33, 30, 27, 23, 20]);
    }

    #[test]
    fn sub_bucket_counts_match_hdr_histogram_c() {
        let counts: Vec<u64> = (1..=5).map(sub_bucket_count).collect();
        assert_eq!(counts, [32, 256, 2048, 32768, 262_144]);
    }

    #[test]
    fn target_steps_halve_with_the_distance() {
        assert_eq!(next_target(0.0, 5), 10.0);
        assert_eq!(next_target(50.0, 5), 55.0);
        assert_eq!(next_target(75.0, 5), 77.5);
        // No ticks: C divides by zero and the target leaves for infinity.
        assert_eq!(next_target(0.0, 0), f64::INFINITY);
    }

    /// With no ticks the C walk jumps to the last bucket and reports it
    /// twice; it must still end.
    #[test]
    fn zero_ticks_terminate() {
        let mut out = Vec::new();
        write_spectrum(&mut out, &one_to_thousand(), 0, 1000.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().skip(4).take(4).collect();
        assert_eq!(
            lines,
            [
                "       0.001     0.000000            1         1.00",
                "       1.000     0.000000         1000         1.00",
                "       1.000     1.000000         1000          inf",
                "#[Mean    =        0.500, StdDeviation   =        0.289]",
            ]
        );
    }

    /// A count so large that the target stalls below 100% before the last
    /// bucket is reached must not loop forever.
    #[test]
    fn stalled_target_moves_on() {
        let mut h = latency_histogram(3);
        h.record_n(1, u64::MAX / 4).unwrap();
        h.record(2).unwrap();
        let steps = PercentileSteps::new(recorded_buckets(&h), h.len(), 5).take(10_000).count();
        assert!(steps < 10_000, "{steps} steps");
    }
}
