//! The search's HTML page (`--html`): the answer, the latency against the
//! throughput each step achieved (p50, p90, p99 and p99.9 corrected, on a
//! log latency axis; the "hockey stick"), with the objectives' latency
//! thresholds and the capacity found drawn on it, and the table of steps.
//! Self-contained as the run's page is: the same style sheet and charts.

use std::io::{self, Write};

use super::answer::{objectives, Answer};
use super::climb::Judged;
use super::step::Step;
use super::text::{error_share, verdict, PERCENTILES};
use super::Setup;
use crate::report::html::escape::escape;
use crate::report::html::svg::{number_label, Axis, Chart, Scale, Series};
use crate::report::html::{section, write_end, STYLE};
use crate::slo::{Metric, Source, Stat, Unit};
use crate::stats::spectrum::value_at_percentile;
use crate::units::{format_rate, format_time_us};

pub fn write(out: &mut dyn Write, args: &Setup, steps: &[Step], answer: &Answer) -> io::Result<()> {
    let url = escape(&args.url);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"pace {version}\">\n\
         <title>pace search: {url}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <header><h1>pace search</h1><p class=\"url\">{url}</p></header>\n",
        version = env!("CARGO_PKG_VERSION"),
    )?;
    let class = if answer.code == 0 { "ok" } else { "bad" };
    let within = escape(&objectives(args));
    let verdict_body = format!(
        "<p class=\"verdict {class}\" data-capacity=\"{}\">{}</p>\n<p>The highest rate within {within}.</p>\n",
        answer.capacity.map_or(String::new(), |c| c.to_string()),
        escape(&answer.line)
    );
    section(out, "verdict", "Capacity", &verdict_body)?;
    let chart = match curve(args, steps, answer) {
        Some(chart) => chart.render(),
        None => crate::report::html::none("no step was answered"),
    };
    section(out, "curve", "Latency against throughput", &chart)?;
    section(out, "steps", "Steps", &table(steps))?;
    write_end(out)
}

/// The steps that say something about the service, by the rate offered
/// (a service past its limit gives less than before: the line folds back).
fn judged(steps: &[Step]) -> Vec<&Step> {
    let mut judged: Vec<&Step> = (steps.iter())
        .filter(|s| s.judged != Judged::Retried && !s.result.total.corrected.is_empty())
        .collect();
    judged.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    judged
}

/// The curve: a line per percentile, a dashed line per latency objective
/// and one at the capacity found.
fn curve(args: &Setup, steps: &[Step], answer: &Answer) -> Option<Chart> {
    let judged = judged(steps);
    if judged.is_empty() {
        return None;
    }
    let ms = |us: u64| (us.max(1)) as f64 / 1000.0;
    let classes = ["s1", "s2", "s3", "s4"];
    let mut series: Vec<Series> = (PERCENTILES.iter().zip(classes))
        .map(|(&p, class)| Series {
            name: format!("p{p}"),
            class,
            points: (judged.iter())
                .map(|s| (s.achieved(), ms(value_at_percentile(&s.result.total.corrected, p))))
                .collect(),
            dashed: false,
        })
        .collect();
    let values = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (mut low, mut high) = values.fold((f64::MAX, 0f64), |(l, h), v| (l.min(v), h.max(v)));
    let right = judged.iter().map(|s| s.achieved().max(s.rate)).fold(0.0, f64::max) * 1.05;
    for objective in &args.objectives {
        if let (Metric::Latency(Source::Corrected, Stat::Percentile(_)), Unit::Micros) =
            (objective.metric, objective.unit)
        {
            let at = objective.threshold / 1000.0;
            (low, high) = (low.min(at), high.max(at));
            series.push(Series {
                name: objective.text(),
                class: "s5",
                points: vec![(0.0, at), (right, at)],
                dashed: true,
            });
        }
    }
    if let Some(capacity) = answer.capacity {
        series.push(Series {
            name: format!("holds {}/s", format_rate(capacity)),
            class: "s6",
            points: vec![(capacity, low), (capacity, high)],
            dashed: true,
        });
    }
    Some(Chart {
        kind: "capacity",
        title: "Corrected latency against achieved throughput".into(),
        x: Axis { scale: Scale::from_zero(right), label: number_label, title: "requests/s".into() },
        y: Axis { scale: Scale::log(low, high), label: number_label, title: "ms".into() },
        series,
    })
}

fn table(steps: &[Step]) -> String {
    let mut rows = String::from(
        "<table class=\"steps\"><thead><tr><th>step</th><th>offered/s</th><th>achieved/s</th>\
         <th>connections</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>errors</th>\
         <th>verdict</th></tr></thead><tbody>\n",
    );
    for step in steps {
        let corrected = &step.result.total.corrected;
        let cells: String = (PERCENTILES.iter())
            .map(|&p| match corrected.is_empty() {
                true => "<td>-</td>".to_string(),
                false => {
                    format!("<td>{}</td>", format_time_us(value_at_percentile(corrected, p) as f64))
                }
            })
            .collect();
        let class = match step.judged {
            Judged::Held => "ok",
            Judged::Failed => "bad",
            _ => "warn",
        };
        rows.push_str(&format!(
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{cells}<td>{:.2}%</td><td>{}</td></tr>\n",
            step.number,
            format_rate(step.rate),
            format_rate(step.achieved()),
            step.connections(),
            error_share(step) * 100.0,
            escape(&verdict(step)),
        ));
    }
    rows.push_str("</tbody></table>\n");
    rows
}
