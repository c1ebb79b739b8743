//! The comparison as one JSON object (`pace compare -e`), documented in
//! docs/json.md ("The comparison").

use std::io::{self, Write};

use serde_json::{json, Value};

use super::gate::Judged;
use super::statistics::{self, CONFIDENCE, MAX_BLOCKS, ROUNDS, SEED};
use super::verdicts::{Comparison, Figure, Line};
use super::Runs;
use crate::merge::saved::SavedRun;
use crate::stats::confidence::MIN_SAMPLES_BEYOND;
use crate::units::per_second;

/// The version of this object's shape.
const COMPARISON_VERSION: u32 = 1;

pub fn write(
    out: &mut dyn Write,
    runs: &Runs,
    comparison: &Comparison,
    judged: &[Judged],
) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &value(runs, comparison, judged))?;
    writeln!(out)
}

pub fn value(runs: &Runs, comparison: &Comparison, judged: &[Judged]) -> Value {
    let lines = |lines: &[Line]| lines.iter().map(line).collect::<Vec<Value>>();
    json!({
        "report": "comparison",
        "comparison_version": COMPARISON_VERSION,
        "base": run(runs.base),
        "new": run(runs.new),
        "warnings": runs.warnings,
        "method": {
            "confidence": CONFIDENCE,
            "bootstrap_rounds": ROUNDS,
            "max_period_blocks": MAX_BLOCKS,
            "seed": SEED,
            "noise_floor_percent": comparison.noise.percent,
            "noise_floor_latency_us": comparison.noise.latency_us,
            "min_samples_beyond": MIN_SAMPLES_BEYOND,
        },
        "rate": line(&comparison.rate),
        "errors": line(&comparison.errors),
        "grpc_codes": comparison.grpc.iter().map(line).collect::<Vec<Value>>(),
        "latency": {
            "corrected": lines(&comparison.corrected),
            "uncorrected": comparison.uncorrected.as_deref().map(lines),
        },
        "percentiles_left_out": comparison.left_out,
        "regression": judged.iter().map(Judged::json).collect::<Vec<Value>>(),
        "regression_ok": judged.iter().all(|j| j.ok),
    })
}

/// Which run, and its headline figures.
fn run(run: &SavedRun) -> Value {
    let seconds = run.result.runtime.as_secs_f64();
    json!({
        "source": run.source,
        "url": run.description.url,
        "mode": if run.description.plan().is_some() { "paced" } else { "closed_loop" },
        "requests": run.result.total.requests,
        "elapsed_s": seconds,
        "requests_per_sec": per_second(run.result.total.requests, seconds),
        "periods": run.periods.len(),
        "resampled_by_periods": statistics::by_periods(run.periods.len()),
        "description": super::settings::describe(run),
    })
}

fn line(line: &Line) -> Value {
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    let mut value = json!({
        "unit": match line.figure {
            Figure::Rate => "requests/s",
            Figure::Errors | Figure::Grpc(_) => "%",
            Figure::Latency(..) => "us",
        },
        "base": finite(line.base),
        "new": finite(line.new),
        "change": finite(line.change()),
        "change_percent": finite(line.change_percent()),
        "interval": line.interval.map(|(low, high)| [low, high]),
        "floor": line.floor,
        "verdict": line.verdict.word(),
    });
    match line.figure {
        Figure::Latency(_, percentile) => {
            value["percentile"] = json!(percentile);
            if let Some((base, new)) = line.samples_beyond {
                value["base_samples_beyond"] = json!(base);
                value["new_samples_beyond"] = json!(new);
            }
        }
        Figure::Grpc(code) => value["code"] = json!(crate::grpc_status::name(code)),
        Figure::Rate | Figure::Errors => {}
    }
    value
}
