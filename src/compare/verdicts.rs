//! The comparison itself: each figure of both runs, their difference, and
//! a plain verdict — faster, slower, or within noise ([`statistics`] says
//! what counts as noise); too few samples for a percentile that either
//! run has fewer than [`MIN_SAMPLES_BEYOND`] samples beyond
//! ([`crate::stats::confidence`]), where a verdict would be chance.

use hdrhistogram::Histogram;

use super::statistics::{self, Noise, Resampler};
use crate::merge::saved::SavedRun;
use crate::report::text::WRK2_PERCENTILES;
use crate::slo::{self, Expectation, Metric, Objective, Op, Source, Unit};
use crate::stats::confidence::{self, MIN_SAMPLES_BEYOND};
use crate::stats::{RunResult, Stats};

/// What a line compares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    /// Requests per second, as the report's `Requests/sec`.
    Rate,
    /// The share of the requests issued that failed, in percent (as
    /// `--slo errors<N%` counts them).
    Errors,
    /// A latency percentile (0 to 100), in microseconds.
    Latency(Source, f64),
    /// The share of gRPC calls that ended with this status code (not OK),
    /// in percent of the calls completed.
    Grpc(u8),
}

/// The plain word for a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
    MoreErrors,
    FewerErrors,
    /// One of the runs has no such figure (no latency recorded).
    NotMeasured,
    /// A latency percentile that a run has fewer than
    /// [`MIN_SAMPLES_BEYOND`] samples beyond: whatever the difference,
    /// chance could make it.
    TooFewSamples,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
            Verdict::MoreErrors => "more errors",
            Verdict::FewerErrors => "fewer errors",
            Verdict::NotMeasured => "not measured",
            Verdict::TooFewSamples => "too few samples",
        }
    }
}

/// One figure of both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub figure: Figure,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// The interval of NEW - BASE that sampling alone explains.
    pub interval: Option<(f64, f64)>,
    /// The smallest difference that counts (see [`Noise`]).
    pub floor: f64,
    pub verdict: Verdict,
    /// Of a latency percentile: the samples beyond it in BASE and in NEW
    /// ([`confidence::samples_beyond`]).
    pub samples_beyond: Option<(u64, u64)>,
}

impl Line {
    /// NEW - BASE.
    pub fn change(&self) -> Option<f64> {
        Some(self.new? - self.base?)
    }

    /// NEW - BASE in percent of BASE (None from 0).
    pub fn change_percent(&self) -> Option<f64> {
        let (base, new) = (self.base?, self.new?);
        (base != 0.0).then(|| 100.0 * (new - base) / base)
    }
}

/// Both runs compared.
pub struct Comparison {
    pub rate: Line,
    pub errors: Line,
    /// Of gRPC runs: each status code but OK that either run saw, in code
    /// order.
    pub grpc: Vec<Line>,
    /// The corrected latency (in a closed loop, the only one).
    pub corrected: Vec<Line>,
    /// The uncorrected latency, when both runs followed a plan (in a closed
    /// loop it is the same histogram).
    pub uncorrected: Option<Vec<Line>>,
    /// Of the default percentiles, those left out for too few samples.
    pub left_out: Vec<f64>,
    pub noise: Noise,
}

/// Compares `new` with `base` at `percentiles`, or by default at wrk2's
/// that both runs have enough samples for (at least the median, whose
/// line then says why not).
pub fn compare(
    base: &SavedRun,
    new: &SavedRun,
    percentiles: Option<&[f64]>,
    noise: Noise,
) -> Comparison {
    let (b, n) = (&base.result, &new.result);
    let (percentiles, left_out) = match percentiles {
        Some(asked) => (asked.to_vec(), Vec::new()),
        // wrk2's that both runs back.
        None => confidence::backed(
            &WRK2_PERCENTILES,
            b.total.corrected.len().min(n.total.corrected.len()),
        ),
    };
    let percentiles = percentiles.as_slice();
    let latency = |source: Source, pick: fn(&Stats) -> &Histogram<u64>| {
        let resampler = |run: &SavedRun| {
            let periods: Vec<&Histogram<u64>> =
                run.periods.iter().map(|p| pick(&p.stats)).collect();
            Resampler::of(pick(&run.result.total), &periods)
        };
        let histograms = (pick(&b.total), pick(&n.total));
        let resamplers = (resampler(base), resampler(new));
        latency_lines(source, histograms, resamplers, percentiles, noise)
    };
    let both_paced = base.description.plan().is_some() && new.description.plan().is_some();
    Comparison {
        rate: rate_line(b, n, noise),
        errors: errors_line(b, n),
        grpc: grpc_lines(b, n),
        corrected: latency(Source::Corrected, |s| &s.corrected),
        uncorrected: both_paced.then(|| latency(Source::Uncorrected, |s| &s.uncorrected)),
        left_out,
        noise,
    }
}

/// A figure of a run as `--slo` measures it (and so as the reports print
/// it); None when the run has none.
pub fn measure(result: &RunResult, metric: Metric, unit: Unit) -> Option<f64> {
    let objective =
        Objective { metric, op: Op::Lt, threshold: 0.0, unit, threshold_text: String::new() };
    let expectation = Expectation { target_rate: None };
    slo::evaluate(&[objective], result, &expectation).pop()?.value
}

fn rate_line(base: &RunResult, new: &RunResult, noise: Noise) -> Line {
    let rate = |r: &RunResult| measure(r, Metric::Rate, Unit::PerSecond).unwrap_or(0.0);
    let (b, n) = (rate(base), rate(new));
    let interval = statistics::normal_difference(
        statistics::rate_with_error(b, &base.total.rate_samples),
        statistics::rate_with_error(n, &new.total.rate_samples),
    );
    let floor = noise.relative_floor(b);
    let verdict = match judge(n - b, interval, floor) {
        Some(true) => Verdict::Faster,
        Some(false) => Verdict::Slower,
        None => Verdict::WithinNoise,
    };
    Line {
        figure: Figure::Rate,
        base: Some(b),
        new: Some(n),
        interval: Some(interval),
        floor,
        verdict,
        samples_beyond: None,
    }
}

fn errors_line(base: &RunResult, new: &RunResult) -> Line {
    let counts = |r: &RunResult| {
        let e = &r.total.errors;
        (e.socket_total() + e.status + e.unsent, r.total.requests + e.socket_total() + e.unsent)
    };
    let share = |r: &RunResult| measure(r, Metric::Errors, Unit::Percent);
    let (b, n) = (share(base), share(new));
    let interval = statistics::share_difference(counts(base), counts(new));
    share_line(Figure::Errors, (b, n), interval)
}

/// A line of shares that are failures (in percent): more or fewer of
/// them, or within noise; not measured when a side has no share (nothing
/// issued).
fn share_line(figure: Figure, (b, n): (Option<f64>, Option<f64>), interval: (f64, f64)) -> Line {
    let verdict = match (b, n) {
        (Some(b), Some(n)) => match judge(n - b, interval, 0.0) {
            Some(true) => Verdict::MoreErrors,
            Some(false) => Verdict::FewerErrors,
            None => Verdict::WithinNoise,
        },
        _ => Verdict::NotMeasured,
    };
    Line {
        figure,
        base: b,
        new: n,
        interval: Some(interval),
        floor: 0.0,
        verdict,
        samples_beyond: None,
    }
}

/// A line per gRPC status code but OK seen in either run: the share of
/// the completed calls that ended with it, judged as the errors are.
fn grpc_lines(base: &RunResult, new: &RunResult) -> Vec<Line> {
    let mut codes: Vec<u8> = (base.total.outcomes.grpc().chain(new.total.outcomes.grpc()))
        .map(|(code, _)| code)
        .filter(|&code| code != crate::grpc_status::OK)
        .collect();
    codes.sort_unstable();
    codes.dedup();
    let counts = |r: &RunResult, code: u8| {
        let calls: u64 = r.total.outcomes.grpc().map(|(_, n)| n).sum();
        let with_code = r.total.outcomes.grpc().filter(|&(c, _)| c == code).map(|(_, n)| n);
        (with_code.sum::<u64>(), calls)
    };
    let share =
        |(count, calls): (u64, u64)| (calls > 0).then(|| 100.0 * count as f64 / calls as f64);
    codes
        .into_iter()
        .map(|code| {
            let (b, n) = (counts(base, code), counts(new, code));
            let interval = statistics::share_difference(b, n);
            share_line(Figure::Grpc(code), (share(b), share(n)), interval)
        })
        .collect()
}

fn latency_lines(
    source: Source,
    (base, new): (&Histogram<u64>, &Histogram<u64>),
    (base_resampler, new_resampler): (Resampler, Resampler),
    percentiles: &[f64],
    noise: Noise,
) -> Vec<Line> {
    let stream = if source == Source::Corrected { 0 } else { 1 };
    let intervals =
        statistics::percentile_differences(&base_resampler, &new_resampler, percentiles, stream);
    let at = |h: &Histogram<u64>, p: f64| {
        (!h.is_empty()).then(|| crate::stats::spectrum::value_at_percentile(h, p) as f64)
    };
    percentiles
        .iter()
        .zip(intervals)
        .map(|(&p, interval)| {
            let (b, n) = (at(base, p), at(new, p));
            let floor = b.map_or(0.0, |b| {
                let bucket = |h: &Histogram<u64>| {
                    let v = b as u64;
                    (h.highest_equivalent(v) - h.lowest_equivalent(v) + 1) as f64
                };
                noise.latency_floor(b, bucket(base).max(bucket(new)))
            });
            let beyond = (
                confidence::samples_beyond(base.len(), p),
                confidence::samples_beyond(new.len(), p),
            );
            let too_few = beyond.0.min(beyond.1) < MIN_SAMPLES_BEYOND;
            let verdict = match (b, n, interval) {
                (Some(_), Some(_), Some(_)) if too_few => Verdict::TooFewSamples,
                (Some(b), Some(n), Some(interval)) => match judge(n - b, interval, floor) {
                    // More latency is slower.
                    Some(true) => Verdict::Slower,
                    Some(false) => Verdict::Faster,
                    None => Verdict::WithinNoise,
                },
                _ => Verdict::NotMeasured,
            };
            Line {
                figure: Figure::Latency(source, p),
                base: b,
                new: n,
                interval,
                floor,
                verdict,
                samples_beyond: Some(beyond),
            }
        })
        .collect()
}

/// Some(true) for a rise, Some(false) for a fall, None within noise: a
/// difference counts when sampling does not explain it (its interval
/// leaves 0 out) and it reaches `floor`.
fn judge(difference: f64, interval: (f64, f64), floor: f64) -> Option<bool> {
    let counts = statistics::excludes_zero(interval) && difference.abs() >= floor;
    counts.then_some(difference > 0.0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::stats::Outcome;
    use crate::stats::Stats;

    /// A run of `count` responses around `latency_us` (spread ±20%) over
    /// 2 s, with `errors` timeouts and Req/Sec samples around the rate.
    fn run(count: u64, latency_us: u64, errors: u64) -> RunResult {
        let mut total = Stats::new(3);
        for i in 0..count {
            total.response(Outcome::Http(200));
            let v = latency_us * 8 / 10 + latency_us * 4 / 10 * i / count;
            total.corrected.record(v).unwrap();
            total.uncorrected.record(v).unwrap();
        }
        total.errors.timeout = errors;
        let rate = count as f64 / 2.0;
        total.rate_samples = (0..20).map(|i| rate * (0.95 + 0.005 * f64::from(i))).collect();
        RunResult::measured(total, Duration::from_secs(2))
    }

    fn saved(result: RunResult) -> SavedRun {
        let cfg = super::super::settings::tests::config("http://h:1/");
        super::super::settings::tests::saved_run(&cfg, &result)
    }

    #[test]
    fn a_millisecond_more_is_slower_and_the_same_run_is_within_noise() {
        let base = saved(run(4000, 100, 0));
        let slower = saved(run(4000, 1100, 0));
        let c = compare(&base, &slower, Some(&[50.0, 99.0]), Noise::default());
        assert!(c.corrected.iter().all(|l| l.verdict == Verdict::Slower), "{:?}", c.corrected);
        let change = c.corrected[0].change().unwrap();
        assert!((change - 1000.0).abs() < 20.0, "{change}");
        assert_eq!(c.rate.verdict, Verdict::WithinNoise);
        assert_eq!(c.errors.verdict, Verdict::WithinNoise);
        let back = compare(&slower, &base, Some(&[50.0]), Noise::default());
        assert_eq!(back.corrected[0].verdict, Verdict::Faster);
        let same = compare(&base, &base, Some(&[0.0, 50.0, 99.9, 100.0]), Noise::default());
        let verdicts: Vec<Verdict> = same.corrected.iter().map(|l| l.verdict).collect();
        // 4000 samples: 4 beyond p99.9, none beyond the extremes.
        let few = Verdict::TooFewSamples;
        assert_eq!(verdicts, [few, Verdict::WithinNoise, few, few]);
        assert_eq!(same.corrected[2].samples_beyond, Some((4, 4)));
        assert!(same.uncorrected.is_none(), "closed loop: one latency");
    }

    /// The new user's case: two runs of one server, 5000 samples each, a
    /// tail that differs by chance (a few slow requests more in one). The
    /// tail percentiles are too few samples, not faster; by default they
    /// are left out.
    #[test]
    fn a_tail_of_a_few_samples_is_too_few_samples_not_faster() {
        let with_outliers = |slow: u64| {
            let mut result = run(5000 - slow, 100, 0);
            for _ in 0..slow {
                result.total.corrected.record(5_000).unwrap();
            }
            saved(result)
        };
        let (base, new) = (with_outliers(8), with_outliers(2));
        let all = compare(&base, &new, Some(&WRK2_PERCENTILES), Noise::default());
        for line in &all.corrected {
            let Figure::Latency(_, p) = line.figure else { unreachable!() };
            let expected = if p >= 99.9 { Verdict::TooFewSamples } else { Verdict::WithinNoise };
            assert_eq!(line.verdict, expected, "p{p}: {line:?}");
        }
        // p99.9 differs by 98%, and still says nothing.
        assert!(all.corrected[4].change_percent().unwrap() < -90.0, "{:?}", all.corrected[4]);
        let default = compare(&base, &new, None, Noise::default());
        let shown: Vec<Figure> = default.corrected.iter().map(|l| l.figure).collect();
        let p = |p| Figure::Latency(Source::Corrected, p);
        assert_eq!(shown, [p(50.0), p(75.0), p(90.0), p(99.0)]);
        assert_eq!(default.left_out, [99.9, 99.99, 99.999, 100.0]);
    }

    /// A significant difference below the floor is noise: 3% slower at
    /// 10 ms with plenty of samples.
    #[test]
    fn the_floor_keeps_small_differences_within_noise() {
        let base = saved(run(100_000, 10_000, 0));
        let new = saved(run(100_000, 10_300, 0));
        let c = compare(&base, &new, Some(&[50.0]), Noise::default());
        assert!(statistics::excludes_zero(c.corrected[0].interval.unwrap()));
        assert_eq!(c.corrected[0].verdict, Verdict::WithinNoise);
        let strict = Noise { percent: 1.0, latency_us: 0.0 };
        assert_eq!(
            compare(&base, &new, Some(&[50.0]), strict).corrected[0].verdict,
            Verdict::Slower
        );
    }

    #[test]
    fn rates_and_errors() {
        let base = saved(run(4000, 100, 0));
        let half = saved(run(2000, 100, 200));
        let c = compare(&base, &half, Some(&[50.0]), Noise::default());
        assert_eq!((c.rate.base, c.rate.new), (Some(2000.0), Some(1000.0)));
        assert_eq!(c.rate.verdict, Verdict::Slower);
        assert_eq!(c.rate.change_percent(), Some(-50.0));
        assert_eq!(c.errors.verdict, Verdict::MoreErrors);
        let share = c.errors.new.unwrap();
        assert!((share - 100.0 * 200.0 / 2200.0).abs() < 1e-9, "{share}");
        assert_eq!(
            compare(&half, &base, Some(&[]), Noise::default()).errors.verdict,
            Verdict::FewerErrors
        );
    }

    /// A gRPC run of `count` calls, `failed` of them UNAVAILABLE and 10
    /// DEADLINE_EXCEEDED.
    fn grpc_run(count: u64, failed: u64) -> RunResult {
        let mut result = run(0, 100, 0);
        let total = &mut result.total;
        for i in 0..count {
            let code = if i < failed {
                14
            } else if i < failed + 10 {
                4
            } else {
                0
            };
            total.response(Outcome::Grpc(code));
            total.corrected.record(100).unwrap();
        }
        result
    }

    #[test]
    fn grpc_codes_but_ok_are_compared_as_errors_are() {
        let base = saved(grpc_run(10_000, 100));
        let worse = saved(grpc_run(10_000, 1000));
        let c = compare(&base, &worse, Some(&[50.0]), Noise::default());
        let codes: Vec<Figure> = c.grpc.iter().map(|l| l.figure).collect();
        assert_eq!(codes, [Figure::Grpc(4), Figure::Grpc(14)]);
        let (deadline, unavailable) = (&c.grpc[0], &c.grpc[1]);
        assert_eq!((unavailable.base, unavailable.new), (Some(1.0), Some(10.0)));
        assert_eq!(unavailable.verdict, Verdict::MoreErrors);
        assert_eq!(deadline.verdict, Verdict::WithinNoise);
        let back = compare(&worse, &base, Some(&[50.0]), Noise::default());
        assert_eq!(back.grpc[1].verdict, Verdict::FewerErrors);
        // An HTTP run beside it: the codes of the gRPC run alone.
        let http = saved(run(1000, 100, 0));
        let c = compare(&http, &base, Some(&[50.0]), Noise::default());
        assert_eq!((c.grpc[1].base, c.grpc[1].verdict), (None, Verdict::NotMeasured));
        assert!(compare(&http, &http, Some(&[]), Noise::default()).grpc.is_empty());
    }

    #[test]
    fn an_empty_histogram_is_not_measured() {
        let base = saved(run(1000, 100, 0));
        let empty = saved(run(0, 100, 5));
        let c = compare(&base, &empty, Some(&[50.0]), Noise::default());
        assert_eq!(c.corrected[0].verdict, Verdict::NotMeasured);
        assert_eq!(c.corrected[0].new, None);
    }
}
