//! The search as text: what is searched, a row per step as it ends
//! (offered and achieved rates, connections, corrected latency at p50,
//! p90, p99 and p99.9, the share of requests that failed, the verdict and
//! why), and the answer.

use std::io::{self, Write};

use super::answer::{objectives, Answer};
use super::climb::{Climb, Judged};
use super::step::Step;
use super::Setup;
use crate::stats::spectrum::value_at_percentile;
use crate::units::{format_rate, format_time_us};

/// The latency columns of the table.
pub const PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

pub fn write_header(out: &mut dyn Write, args: &Setup) -> io::Result<()> {
    let seconds = |d: std::time::Duration| format_time_us(d.as_micros() as f64);
    let climb = match &args.climb {
        Climb::Search { from, to, resolution } => {
            let to = to.map(|to| format!(" up to {}/s,", format_rate(to))).unwrap_or_default();
            format!(
                "from {}/s,{to} to within {}%",
                format_rate(*from),
                crate::units::c_float(resolution * 100.0, 0)
            )
        }
        Climb::Ladder(rates) => format!(
            "a ladder of {} steps, {}/s to {}/s",
            rates.len(),
            format_rate(rates[0]),
            format_rate(rates[rates.len() - 1])
        ),
    };
    let poisson = if args.poisson { ", Poisson arrivals" } else { "" };
    let (first, connections) = match &args.climb {
        Climb::Search { .. } => (
            format!("Searching {} for the highest rate within {}", args.url, objectives(args)),
            format!("{} connections (up to {})", args.connections, args.max_connections),
        ),
        Climb::Ladder(_) => (
            format!("Climbing a ladder on {}, each step judged by {}", args.url, objectives(args)),
            format!("{} connections", args.connections),
        ),
    };
    let warmup = match args.warmup.is_zero() {
        true => ", no warm-up".to_string(),
        false => format!(" after a {} warm-up", seconds(args.warmup)),
    };
    let threads = match args.threads {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    };
    writeln!(out, "{first}")?;
    writeln!(
        out,
        "  steps of {}{warmup}{poisson}, {threads}, {connections}, {climb}",
        seconds(args.step),
    )?;
    writeln!(
        out,
        "  {:>4}  {:>10}  {:>10}  {:>5}  {:>9}  {:>9}  {:>9}  {:>9}  {:>7}  verdict",
        "step", "offered/s", "achieved/s", "conns", "p50", "p90", "p99", "p99.9", "errors"
    )
}

pub fn write_step(out: &mut dyn Write, step: &Step) -> io::Result<()> {
    let corrected = &step.result.total.corrected;
    let latency: Vec<String> = PERCENTILES
        .iter()
        .map(|&p| match corrected.is_empty() {
            true => "-".to_string(),
            false => format_time_us(value_at_percentile(corrected, p) as f64),
        })
        .collect();
    writeln!(
        out,
        "  {:>4}  {:>10}  {:>10}  {:>5}  {:>9}  {:>9}  {:>9}  {:>9}  {:>7}  {}",
        step.number,
        format_rate(step.rate),
        format_rate(step.achieved()),
        step.connections(),
        latency[0],
        latency[1],
        latency[2],
        latency[3],
        crate::slo::format_value(error_share(step) * 100.0, crate::slo::Unit::Percent),
        verdict(step)
    )
}

/// `held`, `failed: p99 31.02ms`... as the table and the page say it.
pub fn verdict(step: &Step) -> String {
    let word = match (step.result.interrupted, step.judged) {
        (Some(_), _) => "interrupted",
        (None, Judged::Held) => "held",
        (None, Judged::Failed) => "failed",
        (None, Judged::NotOffered) => "not offered",
        (None, Judged::Retried) => "again",
    };
    let why = match step.judged {
        Judged::Failed => step.failure(),
        _ => step.why.clone(),
    };
    match (step.result.interrupted, why.is_empty()) {
        (None, false) => format!("{word}: {why}"),
        _ => word.to_string(),
    }
}

/// The share of the requests issued that failed, as `--slo errors<N%`
/// counts it.
pub fn error_share(step: &Step) -> f64 {
    crate::slo::error_share(&step.result.total).unwrap_or(0.0)
}

pub fn write_answer(out: &mut dyn Write, answer: &Answer) -> io::Result<()> {
    writeln!(out, "{}", answer.line)
}
