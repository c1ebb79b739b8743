//! The search as JSON Lines (`-e`): each step, as it ends, a complete
//! report of its run (the fields and histograms of a final report, with
//! `"report": "step"` and a `search_step` object), so that `pace report`,
//! `pace compare` and `pace merge` read a step (`--step N`); then one
//! line `"report": "search"` with the answer and the table. docs/json.md
//! describes both.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use super::answer::Answer;
use super::climb::{Climb, Judged};
use super::step::Step;
use super::text::{error_share, PERCENTILES};
use super::Setup;
use crate::report::json::format::{SEARCH_REPORT, STEP_REPORT};
use crate::report::json::{final_report, period_report, write_line, SCHEMA_VERSION};
use crate::report::ReportOptions;
use crate::stats::spectrum::value_at_percentile;

/// A step as the table has it: on the step's line and in the search's.
#[derive(Serialize)]
pub struct StepRow {
    pub step: usize,
    pub offered_rps: f64,
    pub achieved_rps: f64,
    pub connections: usize,
    /// Corrected latency at p50, p90, p99, p99.9 (us; absent without
    /// responses).
    pub latency_us: std::collections::BTreeMap<String, u64>,
    pub error_share: f64,
    /// `held`, `failed`, `not_offered`, `again`, `interrupted`.
    pub verdict: &'static str,
    /// Why it did not hold (empty when it did).
    pub why: String,
    pub stationary: bool,
}

impl StepRow {
    pub fn of(step: &Step) -> StepRow {
        let corrected = &step.result.total.corrected;
        let latency_us = match corrected.is_empty() {
            true => Default::default(),
            false => (PERCENTILES.iter())
                .map(|&p| (format!("{p}"), value_at_percentile(corrected, p)))
                .collect(),
        };
        StepRow {
            step: step.number,
            offered_rps: step.rate,
            achieved_rps: round(step.achieved(), 2),
            connections: step.connections(),
            latency_us,
            error_share: round(error_share(step), 6),
            verdict: verdict_name(step),
            why: match step.judged {
                Judged::Failed => step.failure(),
                _ => step.why.clone(),
            },
            stationary: step.stationarity.holds(),
        }
    }
}

fn verdict_name(step: &Step) -> &'static str {
    match (step.result.interrupted, step.judged) {
        (Some(_), _) => "interrupted",
        (None, Judged::Held) => "held",
        (None, Judged::Failed) => "failed",
        (None, Judged::NotOffered) => "not_offered",
        (None, Judged::Retried) => "again",
    }
}

fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// The step's lines: its periods' reports, then its run's final report,
/// marked as a step.
pub fn write_step(out: &mut dyn Write, step: &Step, options: &ReportOptions) -> io::Result<()> {
    for period in &step.periods {
        write_line(out, &period_report(&step.run, options, period)?)?;
    }
    let report = final_report(&step.run, options, &step.result, &step.verdicts)?;
    let mut value = serde_json::to_value(&report)?;
    if let Value::Object(fields) = &mut value {
        fields.insert("report".into(), Value::from(STEP_REPORT));
        fields.insert("search_step".into(), serde_json::to_value(StepRow::of(step))?);
    }
    serde_json::to_writer(&mut *out, &value)?;
    writeln!(out)
}

/// The search's own line.
#[derive(Serialize)]
struct SearchLine<'a> {
    schema_version: u32,
    report: &'static str,
    url: String,
    /// `search` or `ladder`.
    kind: &'static str,
    slo: Vec<String>,
    answer: &'a str,
    capacity_rps: Option<f64>,
    failed_at_rps: Option<f64>,
    /// What ended the climb: `service`, `first_step`, `generator`,
    /// `ceiling`, `interrupted`, `none`.
    limited_by: &'static str,
    from_rps: Option<f64>,
    to_rps: Option<f64>,
    resolution: Option<f64>,
    ladder_rps: Option<&'a [f64]>,
    min_rate_rps: Option<f64>,
    max_connections: usize,
    step_duration_s: f64,
    warmup_s: f64,
    steps: Vec<StepRow>,
}

pub fn write_search(
    out: &mut dyn Write,
    args: &Setup,
    steps: &[Step],
    answer: &Answer,
) -> io::Result<()> {
    let (kind, from, to, resolution, ladder) = match &args.climb {
        Climb::Search { from, to, resolution } => {
            ("search", Some(*from), *to, Some(*resolution), None)
        }
        Climb::Ladder(rates) => ("ladder", None, None, None, Some(rates.as_slice())),
    };
    let line = SearchLine {
        schema_version: SCHEMA_VERSION,
        report: SEARCH_REPORT,
        url: args.url.clone(),
        kind,
        slo: args.objectives.iter().map(|o| o.text()).collect(),
        answer: &answer.line,
        capacity_rps: answer.capacity,
        failed_at_rps: answer.failed_at,
        limited_by: answer.limit.name(),
        from_rps: from,
        to_rps: to,
        resolution,
        ladder_rps: ladder,
        min_rate_rps: args.min_rate,
        max_connections: args.max_connections,
        step_duration_s: args.step.as_secs_f64(),
        warmup_s: args.warmup.as_secs_f64(),
        steps: steps.iter().map(StepRow::of).collect(),
    };
    serde_json::to_writer(&mut *out, &line)?;
    writeln!(out)
}
