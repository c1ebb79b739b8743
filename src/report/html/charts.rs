//! The report's charts, from a run's figures: the latency percentile
//! spectrum, latency, throughput and errors over time, and the schedule
//! lag. Each is a [`Chart`]; this module only decides what is drawn.

use hdrhistogram::Histogram;

use super::svg::{number_label, percentile_label, Axis, Chart, Scale, Series};
use super::timeline::PeriodPoint;
use crate::stats::spectrum::value_at_percentile;

/// Points along the percentile axis of a spectrum.
const SPECTRUM_POINTS: u32 = 240;
/// The percentile axis goes at least to 99% and at most to 99.9999%.
const MIN_DECADES: u32 = 2;
const MAX_DECADES: u32 = 6;

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The percentile spectrum of each (name, histogram) on one chart: the
/// value at each percentile, on the 1/(1-p) axis, in milliseconds. The
/// axis goes as far as the largest histogram has samples to show (beyond
/// 1 - 1/count there is only the maximum). None when all are empty.
pub fn spectrum(
    kind: &'static str,
    title: &str,
    lines: &[(&str, &Histogram<u64>, bool)],
) -> Option<Chart> {
    let count = lines.iter().map(|(_, h, _)| h.len()).max().filter(|&n| n > 0)?;
    let reach = (count as f64).log10().max(1.0);
    let decades = (reach.ceil() as u32).clamp(MIN_DECADES, MAX_DECADES);
    let reach = reach.min(f64::from(decades));
    let classes = ["s1", "s2", "s3"];
    let mut series = Vec::new();
    for (i, (name, h, dashed)) in lines.iter().enumerate().filter(|(_, (_, h, _))| !h.is_empty()) {
        let points = (0..=SPECTRUM_POINTS)
            .map(|step| {
                let decades = reach * f64::from(step) / f64::from(SPECTRUM_POINTS);
                let percentile = 100.0 - 100.0 / 10f64.powf(decades);
                // The line ends at the maximum, at its reach.
                let value = if step == SPECTRUM_POINTS { 100.0 } else { percentile };
                (percentile, ms(value_at_percentile(h, value)))
            })
            .collect();
        series.push(Series {
            name: name.to_string(),
            class: classes[i % classes.len()],
            points,
            dashed: *dashed,
        });
    }
    let (low, high) = extent(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    Some(Chart {
        kind,
        title: title.to_string(),
        x: Axis {
            scale: Scale::Percentile { decades },
            label: percentile_label,
            title: "percentile".into(),
        },
        y: Axis { scale: Scale::fitting(low, high), label: number_label, title: "ms".into() },
        series,
    })
}

/// Corrected p50, p99 and maximum (and with `uncorrected`, the
/// uncorrected p99) per period. None without periods.
pub fn latency_over_time(periods: &[PeriodPoint], uncorrected: bool) -> Option<Chart> {
    type Pick = fn(&PeriodPoint) -> Option<u64>;
    let mut lines: Vec<(&str, &'static str, Pick, bool)> = vec![
        ("p50", "s1", |p| p.corrected.p50, false),
        ("p99", "s2", |p| p.corrected.p99, false),
        ("max", "s3", |p| p.corrected.max, false),
    ];
    if uncorrected {
        lines.push(("uncorrected p99", "s4", |p| p.uncorrected.p99, true));
    }
    let series: Vec<Series> = lines
        .into_iter()
        .map(|(name, class, pick, dashed)| Series {
            name: name.into(),
            class,
            // A period without responses breaks the line.
            points: periods.iter().map(|p| (p.middle_s(), pick(p).map_or(f64::NAN, ms))).collect(),
            dashed,
        })
        .collect();
    let (low, high) = extent(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    over_time(
        "latency",
        "Latency over time",
        periods,
        Axis { scale: Scale::fitting(low, high), label: number_label, title: "ms".into() },
        series,
    )
}

/// Responses per second per period, and the plan's rate when there is one.
pub fn throughput(periods: &[PeriodPoint]) -> Option<Chart> {
    let mut series = vec![Series {
        name: "achieved".into(),
        class: "s1",
        points: periods.iter().map(|p| (p.middle_s(), p.per_second(p.requests))).collect(),
        dashed: false,
    }];
    if periods.iter().any(|p| p.target_rate.is_some()) {
        series.push(Series {
            name: "target".into(),
            class: "s5",
            points: periods.iter().filter_map(|p| Some((p.middle_s(), p.target_rate?))).collect(),
            dashed: true,
        });
    }
    let (_, high) = extent(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    over_time(
        "throughput",
        "Throughput over time",
        periods,
        Axis { scale: Scale::from_zero(high), label: number_label, title: "requests/s".into() },
        series,
    )
}

/// Responses per second by status class, and errors per second by kind,
/// per period: only the lines that are not zero throughout.
pub fn statuses_and_errors(periods: &[PeriodPoint]) -> Option<Chart> {
    type Count = Box<dyn Fn(&PeriodPoint) -> u64>;
    let class = |hundreds: u16| -> Count {
        Box::new(move |p| {
            p.statuses.iter().filter(|(s, _)| *s / 100 == hundreds).map(|(_, n)| n).sum()
        })
    };
    let lines: Vec<(&str, &'static str, Count, bool)> = vec![
        ("2xx", "s1", class(2), false),
        ("3xx", "s5", class(3), false),
        ("4xx", "s4", class(4), false),
        ("5xx", "s3", class(5), false),
        ("other statuses", "s6", Box::new(other_statuses), false),
        ("socket errors", "s2", Box::new(|p| p.errors.socket_total()), true),
        ("unsent", "s6", Box::new(|p| p.errors.unsent), true),
    ];
    let series: Vec<Series> = lines
        .into_iter()
        .filter(|(_, _, count, _)| periods.iter().any(|p| count(p) > 0))
        .map(|(name, class, count, dashed)| Series {
            name: name.into(),
            class,
            points: periods.iter().map(|p| (p.middle_s(), p.per_second(count(p)))).collect(),
            dashed,
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let (_, high) = extent(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    over_time(
        "statuses",
        "Responses and errors over time",
        periods,
        Axis { scale: Scale::from_zero(high), label: number_label, title: "per second".into() },
        series,
    )
}

/// Responses whose status is not 2xx to 5xx (1xx are never final here,
/// but a server may send anything).
fn other_statuses(p: &PeriodPoint) -> u64 {
    p.statuses.iter().filter(|(s, _)| !(200..600).contains(*s)).map(|(_, n)| n).sum()
}

/// A chart with time in seconds across, over the run's periods.
fn over_time(
    kind: &'static str,
    title: &str,
    periods: &[PeriodPoint],
    y: Axis,
    series: Vec<Series>,
) -> Option<Chart> {
    let end = periods.last()?;
    let end = (end.start + end.length).as_secs_f64();
    Some(Chart {
        kind,
        title: title.to_string(),
        x: Axis { scale: Scale::from_zero(end), label: number_label, title: "seconds".into() },
        y,
        series,
    })
}

/// The smallest value above 0 and the largest of `values` (0 and 0 when
/// there are none).
pub(crate) fn extent(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut low, mut high) = (f64::INFINITY, 0f64);
    for v in values.filter(|v| v.is_finite()) {
        if v > 0.0 {
            low = low.min(v);
        }
        high = high.max(v);
    }
    (if low.is_finite() { low } else { 0.0 }, high)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::report::html::svg::percentile_decades;
    use crate::report::html::timeline::Percentiles;
    use crate::stats::{latency_histogram, Errors};

    fn period(i: u64, requests: u64, statuses: &[(u16, u64)], target: Option<f64>) -> PeriodPoint {
        let p = |v| Some(v * (i + 1));
        PeriodPoint {
            start: Duration::from_millis(100 * i),
            length: Duration::from_millis(100),
            requests,
            corrected: Percentiles { p50: p(100), p99: p(900), max: p(2000) },
            uncorrected: Percentiles { p50: p(90), p99: p(500), max: p(900) },
            lag_p99_us: None,
            errors: Errors { timeout: i, ..Errors::default() },
            statuses: statuses.iter().copied().collect::<BTreeMap<_, _>>(),
            target_rate: target,
        }
    }

    #[test]
    fn the_spectrum_reaches_as_far_as_the_samples() {
        let mut corrected = latency_histogram(3);
        let mut uncorrected = latency_histogram(3);
        for v in 1..=10_000 {
            corrected.record(v).unwrap();
            uncorrected.record(v / 10 + 1).unwrap();
        }
        let chart = spectrum(
            "spectrum",
            "Latency by percentile",
            &[("corrected", &corrected, false), ("uncorrected", &uncorrected, true)],
        )
        .unwrap();
        assert_eq!(chart.x.scale, Scale::Percentile { decades: 4 });
        assert_eq!(chart.series.len(), 2);
        let line = &chart.series[0].points;
        assert_eq!(line.len(), SPECTRUM_POINTS as usize + 1);
        assert_eq!(line[0], (0.0, 0.001));
        let (p, last) = *line.last().unwrap();
        assert!((percentile_decades(p) - 4.0).abs() < 1e-9);
        assert_eq!(last, ms(corrected.max()));
        // Values never fall as the percentile rises.
        assert!(line.windows(2).all(|w| w[0].1 <= w[1].1));
        assert!(spectrum("spectrum", "", &[("empty", &latency_histogram(3), false)]).is_none());
    }

    #[test]
    fn time_charts_draw_one_point_per_period() {
        let periods: Vec<PeriodPoint> =
            (0..5).map(|i| period(i, 10, &[(200, 8), (503, 2)], Some(100.0))).collect();
        let latency = latency_over_time(&periods, true).unwrap();
        assert_eq!(latency.series.len(), 4);
        assert!(latency.series.iter().all(|s| s.points.len() == 5));
        assert_eq!(latency.series[0].points[0], (0.05, 0.1));
        let rates = throughput(&periods).unwrap();
        assert_eq!(rates.series[0].points[0], (0.05, 100.0));
        assert_eq!(rates.series[1].name, "target");
        let statuses = statuses_and_errors(&periods).unwrap();
        let names: Vec<&str> = statuses.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["2xx", "5xx", "socket errors"]);
        assert_eq!(statuses.series[1].points[0], (0.05, 20.0));
        assert!(throughput(&[]).is_none());
        assert!(latency_over_time(&[], false).is_none());
    }
}
