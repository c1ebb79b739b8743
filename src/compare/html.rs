//! The comparison as an HTML page (`pace compare --html FILE`), made with
//! the HTML report's parts (its style sheet, tables and SVG charts): the
//! verdict, both runs, the table, both percentile spectra on one 1/(1-p)
//! chart, and both runs' latency and throughput over time.

use std::fmt::Write as _;
use std::io::{self, Write};

use hdrhistogram::Histogram;

use super::gate::Judged;
use super::verdicts::{Comparison, Figure, Line, Verdict};
use super::{text, Runs};
use crate::merge::saved::SavedRun;
use crate::report::html::charts::{self, extent};
use crate::report::html::escape::escape;
use crate::report::html::svg::{number_label, Axis, Chart, Scale, Series};
use crate::report::html::tables::{facts, grid};
use crate::report::html::timeline::PeriodPoint;
use crate::report::html::{none, section, write_end, STYLE};
use crate::slo::Unit;
use crate::units::format_time_us;

/// The colours of the runs' lines (the style sheet's classes).
const BASE_CLASS: &str = "s1";
const NEW_CLASS: &str = "s2";

pub fn write(
    out: &mut dyn Write,
    runs: &Runs,
    comparison: &Comparison,
    judged: &[Judged],
) -> io::Result<()> {
    let title = format!("{} and {}", runs.base.source, runs.new.source);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"pace {version}\">\n\
         <title>pace compare: {title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <header><h1>pace comparison</h1><p class=\"url\">{title}</p></header>\n",
        version = env!("CARGO_PKG_VERSION"),
        title = escape(&title),
    )?;
    section(out, "verdict", "Verdict", &verdict(runs, comparison, judged))?;
    section(out, "runs", "Runs", &runs_table(runs))?;
    section(out, "comparison", "Comparison", &table(comparison))?;
    section(out, "latency", "Latency", &spectra(runs, comparison))?;
    section(out, "over-time", "Over time", &over_time(runs))?;
    write_end(out)
}

/// The headline (which lines got worse or better), the warnings, and the
/// `--max-regression` verdicts.
fn verdict(runs: &Runs, comparison: &Comparison, judged: &[Judged]) -> String {
    let lines = all_lines(comparison);
    let named = |wanted: &[Verdict]| -> Vec<String> {
        lines.iter().filter(|(_, l)| wanted.contains(&l.verdict)).map(|(n, _)| n.clone()).collect()
    };
    let worse = named(&[Verdict::Slower, Verdict::MoreErrors]);
    let better = named(&[Verdict::Faster, Verdict::FewerErrors]);
    let crossed = judged.iter().filter(|j| !j.ok).count();
    let mut sentences = Vec::new();
    if crossed > 0 {
        sentences.push(format!("{crossed} of {} regression limits crossed.", judged.len()));
    }
    if !worse.is_empty() {
        sentences.push(format!("NEW is worse at: {}.", worse.join(", ")));
    }
    if !better.is_empty() {
        sentences.push(format!("NEW is better at: {}.", better.join(", ")));
    }
    let few = named(&[Verdict::TooFewSamples]);
    match (worse.is_empty() && better.is_empty(), few.is_empty()) {
        (true, true) => sentences.push("NEW is within noise of BASE on every line.".to_string()),
        (true, false) => sentences
            .push("NEW is within noise of BASE on every line with enough samples.".to_string()),
        (false, _) => {}
    }
    if !few.is_empty() {
        sentences.push(format!("Too few samples to tell at: {}.", few.join(", ")));
    }
    let class = match (crossed > 0, !worse.is_empty() || !runs.warnings.is_empty()) {
        (true, _) => "bad",
        (false, true) => "warn",
        (false, false) => "ok",
    };
    let mut out = format!(r#"<p class="verdict {class}">{}</p>"#, escape(&sentences.join(" ")));
    let _ = write!(out, "<p>{}</p>", escape(&text::noise_sentence(comparison)));
    if let Some(sentence) = text::samples_sentence(comparison) {
        let _ = write!(out, "<p>{}</p>", escape(&sentence));
    }
    if !runs.warnings.is_empty() {
        out.push_str(r#"<ul class="notes">"#);
        for warning in &runs.warnings {
            let _ = write!(out, "<li>Warning: {}</li>", escape(warning));
        }
        out.push_str("</ul>\n");
    }
    if !judged.is_empty() {
        let rows: Vec<Vec<String>> = judged
            .iter()
            .map(|j| {
                let (class, word) = if j.ok { ("ok", "ok") } else { ("bad", "FAIL") };
                vec![
                    format!(r#"<span class="{class}">{word}</span>"#),
                    escape(&j.limit.text),
                    escape(&j.measured()),
                ]
            })
            .collect();
        out.push_str(&grid(&["gate", "limit", "measured"], &rows));
    }
    out
}

/// Every line of the table with its name (`p99`, `uncorrected p99`).
fn all_lines(comparison: &Comparison) -> Vec<(String, &Line)> {
    let mut lines = vec![("rate".to_string(), &comparison.rate)];
    lines.push(("errors".to_string(), &comparison.errors));
    for line in &comparison.grpc {
        lines.push((name(line), line));
    }
    for line in &comparison.corrected {
        lines.push((name(line), line));
    }
    for line in comparison.uncorrected.iter().flatten() {
        lines.push((format!("uncorrected {}", name(line)), line));
    }
    lines
}

fn name(line: &Line) -> String {
    match line.figure {
        Figure::Rate => "Requests/sec".to_string(),
        Figure::Errors => "Errors".to_string(),
        Figure::Grpc(code) => format!("gRPC {}", crate::grpc_status::name(code)),
        Figure::Latency(_, p) => format!("p{p}"),
    }
}

/// Which file each run is, and how it was made.
fn runs_table(runs: &Runs) -> String {
    let row = |run: &SavedRun| {
        format!(
            "<span class=\"url\">{}</span><br>{}",
            escape(&run.source),
            escape(&super::settings::describe(run))
        )
    };
    facts(&[("base", row(runs.base)), ("new", row(runs.new))])
}

/// The comparison table.
fn table(comparison: &Comparison) -> String {
    let mut rows = Vec::new();
    let mut add = |heading: &str, line: &Line| {
        let (value, unit): (fn(f64) -> String, Unit) = match line.figure {
            Figure::Rate => (|v| format!("{v:.2}"), Unit::PerSecond),
            Figure::Errors | Figure::Grpc(_) => (|v| format!("{v:.2}%"), Unit::Percent),
            Figure::Latency(..) => (format_time_us, Unit::Micros),
        };
        let shown = |v: Option<f64>| escape(&v.map_or_else(|| "-".to_string(), value));
        let class = match line.verdict {
            Verdict::Slower | Verdict::MoreErrors => r#" class="bad""#,
            Verdict::Faster | Verdict::FewerErrors => r#" class="ok""#,
            Verdict::WithinNoise | Verdict::NotMeasured | Verdict::TooFewSamples => "",
        };
        rows.push(vec![
            escape(heading),
            shown(line.base),
            shown(line.new),
            escape(&text::change(line, unit)),
            format!("<span{class}>{}</span>", line.verdict.word()),
        ]);
    };
    add("Requests/sec", &comparison.rate);
    add("Errors", &comparison.errors);
    for line in &comparison.grpc {
        add(&name(line), line);
    }
    let corrected = if comparison.uncorrected.is_some() { "corrected " } else { "" };
    for line in &comparison.corrected {
        add(&format!("{corrected}{}", name(line)), line);
    }
    for line in comparison.uncorrected.iter().flatten() {
        add(&format!("uncorrected {}", name(line)), line);
    }
    grid(&["", "base", "new", "change", "verdict"], &rows)
}

/// Both runs' percentile spectra on one chart: corrected solid, and when
/// both followed a plan, uncorrected dashed; BASE and NEW in their colours.
fn spectra(runs: &Runs, comparison: &Comparison) -> String {
    let (b, n) = (&runs.base.result.total, &runs.new.result.total);
    let mut lines: Vec<(&str, &Histogram<u64>, bool)> = Vec::new();
    match comparison.uncorrected {
        Some(_) => lines.extend([
            ("base corrected", &b.corrected, false),
            ("new corrected", &n.corrected, false),
            ("base uncorrected", &b.uncorrected, true),
            ("new uncorrected", &n.uncorrected, true),
        ]),
        None => lines.extend([("base", &b.corrected, false), ("new", &n.corrected, false)]),
    }
    match charts::spectrum("spectrum", "Latency by percentile", &lines) {
        Some(mut chart) => {
            for series in &mut chart.series {
                series.class = if series.name.starts_with("base") { BASE_CLASS } else { NEW_CLASS };
            }
            chart.render()
        }
        None => none("Neither run recorded a latency."),
    }
}

/// One run's periods, summarised.
fn timeline(run: &SavedRun) -> Vec<PeriodPoint> {
    run.periods.iter().map(PeriodPoint::measured).collect()
}

/// A latency of a period in ms (NaN when it has none: a gap in the line).
fn ms(us: Option<u64>) -> f64 {
    us.map_or(f64::NAN, |us| us as f64 / 1000.0)
}

/// Latency and throughput over time, both runs on each chart, from their
/// start; a sentence instead when neither was saved with `-p`.
fn over_time(runs: &Runs) -> String {
    let (base, new) = (timeline(runs.base), timeline(runs.new));
    if base.is_empty() && new.is_empty() {
        return none(
            "No per-period data: neither run was saved with -p, so only whole-run figures \
             are compared (save them with -p to see them over time).",
        );
    }
    let mut out = String::new();
    for (run, periods) in [(runs.base, &base), (runs.new, &new)] {
        if periods.is_empty() {
            out.push_str(&none(&format!("{} has no periods (saved without -p).", run.source)));
        }
    }
    let end = [runs.base, runs.new]
        .iter()
        .filter_map(|r| r.periods.last().map(|p| (p.start + p.length).as_secs_f64()))
        .fold(0.0, f64::max);
    let line =
        |name: &str, class, periods: &[PeriodPoint], pick: fn(&PeriodPoint) -> f64, dashed| {
            Series {
                name: name.to_string(),
                class,
                points: periods.iter().map(|p| (p.middle_s(), pick(p))).collect(),
                dashed,
            }
        };
    let latency = vec![
        line("base p50", BASE_CLASS, &base, |p| ms(p.corrected.p50), false),
        line("base p99", BASE_CLASS, &base, |p| ms(p.corrected.p99), true),
        line("new p50", NEW_CLASS, &new, |p| ms(p.corrected.p50), false),
        line("new p99", NEW_CLASS, &new, |p| ms(p.corrected.p99), true),
    ];
    let throughput = vec![
        line("base", BASE_CLASS, &base, |p| p.per_second(p.requests), false),
        line("new", NEW_CLASS, &new, |p| p.per_second(p.requests), false),
    ];
    let time =
        || Axis { scale: Scale::from_zero(end), label: number_label, title: "seconds".into() };
    let drawn = |series: Vec<Series>| series.into_iter().filter(|s| !s.points.is_empty()).collect();
    let latency: Vec<Series> = drawn(latency);
    let (low, high) = extent(latency.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    out.push_str(
        &Chart {
            kind: "latency",
            title: "Latency over time (p50 solid, p99 dashed)".into(),
            x: time(),
            y: Axis { scale: Scale::fitting(low, high), label: number_label, title: "ms".into() },
            series: latency,
        }
        .render(),
    );
    let throughput: Vec<Series> = drawn(throughput);
    let (_, high) = extent(throughput.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    out.push_str(
        &Chart {
            kind: "throughput",
            title: "Throughput over time".into(),
            x: time(),
            y: Axis {
                scale: Scale::from_zero(high),
                label: number_label,
                title: "requests/s".into(),
            },
            series: throughput,
        }
        .render(),
    );
    out
}
