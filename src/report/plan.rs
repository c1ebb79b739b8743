//! What the text report says about the plan beyond wrk2's layout: the
//! header lines for random arrivals, stages, targets in random order and
//! a warm-up, the warm-up's own line, and one line per stage.

use std::io::{self, Write};
use std::time::Duration;

use crate::config::targets::TargetsOrder;
use crate::config::{Mode, Shard};
use crate::description::Description;
use crate::plan::{Arrival, PlanSpec};
use crate::stats::spectrum::value_at_percentile;
use crate::stats::RunResult;
use crate::units::per_second;
use crate::units::{format_time_us, UNDEFINED};

/// The header's plan lines, after wrk's two (none for wrk's and wrk2's
/// plans, so their header stays byte for byte).
pub fn write_header(out: &mut dyn Write, run: &Description) -> io::Result<()> {
    let Shard { index, count } = run.shard;
    if count > 1 {
        let connections =
            format!("{} of the {} connections", run.connections_of_instance(), run.connections);
        match run.mode {
            Mode::Paced(_) => writeln!(
                out,
                "  shard {index}/{count}: requests {index}, {}, {}, ... of the plan \
                 (counted from 0), {connections}",
                index + count,
                index + 2 * count
            )?,
            Mode::ClosedLoop => writeln!(out, "  shard {index}/{count}: {connections}")?,
        }
    }
    if let Some(at) = run.start_at {
        writeln!(out, "  the plan starts at {}", crate::units::format_rfc3339(at))?;
    }
    if let Mode::Paced(spec) = &run.mode {
        if spec.arrival == Arrival::Poisson {
            writeln!(out, "  Poisson arrivals (seed {}; --seed {0} repeats them)", run.seed)?;
        }
        if !spec.stages.is_empty() {
            writeln!(out, "  stages: {}", describe_stages(spec))?;
        }
    }
    if run.targets_order == Some(TargetsOrder::Random) {
        let what = if run.grpc.is_some() { "messages" } else { "targets" };
        writeln!(out, "  {what} in random order (seed {}; --seed {0} repeats it)", run.seed)?;
    }
    if !run.warmup.is_zero() {
        writeln!(out, "  after a {} warm-up (sent, not counted)", seconds(run.warmup))?;
    }
    Ok(())
}

/// `from 0/s: 10s to 100/s, 30s at 100/s`.
fn describe_stages(spec: &PlanSpec) -> String {
    let mut rate = spec.rate;
    let stages: Vec<String> = spec
        .stages
        .iter()
        .map(|stage| {
            let how = if stage.rate == rate { "at" } else { "to" };
            rate = stage.rate;
            format!("{} {how} {}/s", seconds(stage.duration), stage.rate)
        })
        .collect();
    format!("from {}/s: {}", spec.rate, stages.join(", "))
}

fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

/// What the warm-up sent, when there was one.
pub fn write_warmup(out: &mut dyn Write, run: &Description, result: &RunResult) -> io::Result<()> {
    if run.warmup.is_zero() {
        return Ok(());
    }
    let warmup = result.total.warmup;
    writeln!(
        out,
        "Warm-up: {} before the run: {} requests, {} errors (not counted above)",
        seconds(run.warmup),
        warmup.requests,
        warmup.errors
    )
}

/// One line per stage: its target and achieved rate, requests, and
/// corrected p50/p99 of the requests intended in it.
pub fn write_stages(out: &mut dyn Write, run: &Description, result: &RunResult) -> io::Result<()> {
    let Mode::Paced(spec) = &run.mode else { return Ok(()) };
    if spec.stages.is_empty() {
        return Ok(());
    }
    writeln!(out, "Stages:")?;
    for row in stage_rows(run, spec, result) {
        let latency =
            |p: Option<u64>| p.map_or(UNDEFINED.to_string(), |us| format_time_us(us as f64));
        writeln!(
            out,
            "  {:>2}  {:>8} .. {:<8} target {:>10.1}/s  achieved {:>10.1}/s  {:>9} requests  p50 {:>8}  p99 {:>8}",
            row.index + 1,
            seconds(row.start),
            seconds(row.start + row.duration),
            row.target_rate,
            row.achieved_rate,
            row.requests,
            latency(row.p50_us),
            latency(row.p99_us)
        )?;
    }
    Ok(())
}

/// What the report says of one stage.
#[derive(Clone, Debug, PartialEq)]
pub struct StageRow {
    pub index: usize,
    /// From the end of the warm-up.
    pub start: Duration,
    pub duration: Duration,
    pub from_rate: f64,
    pub to_rate: f64,
    /// The requests per second the plan wanted on average in the stage.
    pub target_rate: f64,
    /// Responses to the requests intended in it, per second of it.
    pub achieved_rate: f64,
    pub requests: u64,
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
}

/// The rows of every stage.
pub fn stage_rows(run: &Description, spec: &PlanSpec, result: &RunResult) -> Vec<StageRow> {
    let mut start = Duration::ZERO;
    let mut from_rate = spec.rate;
    let mut rows = Vec::with_capacity(spec.stages.len());
    for (index, stage) in spec.stages.iter().enumerate() {
        let measured = result.total.stages.get(index);
        let requests = measured.map_or(0, |m| m.requests);
        let percentile = |p: f64| {
            measured
                .filter(|m| !m.corrected.is_empty())
                .map(|m| value_at_percentile(&m.corrected, p))
        };
        let begins = run.warmup + start;
        rows.push(StageRow {
            index,
            start,
            duration: stage.duration,
            from_rate,
            to_rate: stage.rate,
            target_rate: spec.mean_rate(run.warmup, begins, begins + stage.duration),
            achieved_rate: per_second(requests, stage.duration.as_secs_f64()),
            requests,
            p50_us: percentile(50.0),
            p99_us: percentile(99.0),
        });
        start += stage.duration;
        from_rate = stage.rate;
    }
    rows
}
