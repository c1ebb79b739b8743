//! The parts of a merged report that a single run's has not: the header
//! that says what was merged, and a line per input after the report.

use std::io::{self, Write};

use hdrhistogram::Histogram;

use super::combine::Kind;
use super::saved::SavedRun;
use crate::description::Description;
use crate::report::json::MergedInput;
use crate::stats::spectrum::value_at_percentile;
use crate::units::per_second;
use crate::units::{format_time_us, UNDEFINED};

/// Each input's figures: its line after the merged report, and its object
/// in the JSON's `merged_from`.
pub fn lines(runs: &[SavedRun]) -> Vec<MergedInput> {
    runs.iter()
        .map(|run| {
            let (settings, total) = (&run.description, &run.result.total);
            let p99 = |h: &Histogram<u64>| (!h.is_empty()).then(|| value_at_percentile(h, 99.0));
            MergedInput {
                source: run.source.clone(),
                shard: (settings.shard.count > 1)
                    .then(|| format!("{}/{}", settings.shard.index, settings.shard.count)),
                requests: total.requests,
                requests_per_sec: per_second(total.requests, run.result.runtime.as_secs_f64()),
                latency_p99_us: p99(&total.corrected),
                lag_p99_us: settings.plan().and_then(|_| p99(&total.lag)),
                errors: total.errors.socket_total() + total.errors.status + total.errors.unsent,
            }
        })
        .collect()
}

/// What was merged: `the 3 shards of one plan`, `2 of the 3 shards of one
/// plan`, `2 runs`.
pub fn describe(kind: Kind, inputs: usize) -> String {
    match kind {
        Kind::Shards { present, count } if present == count => {
            format!("the {count} shards of one plan")
        }
        Kind::Shards { present, count } => format!("{present} of the {count} shards of one plan"),
        Kind::Runs if inputs == 1 => "1 run".to_string(),
        Kind::Runs => format!("{inputs} runs"),
    }
}

/// How the inputs of a saved merge relate, from their lines: shards of
/// one plan when they name their shards, else independent runs.
pub fn kind_of(lines: &[MergedInput]) -> Kind {
    let count = lines.iter().find_map(|line| {
        let (_, count) = line.shard.as_deref()?.split_once('/')?;
        count.parse::<usize>().ok()
    });
    match count {
        Some(count) => Kind::Shards { present: lines.len(), count },
        None => Kind::Runs,
    }
}

/// What an input is called in the table of inputs.
pub fn label(kind: Kind) -> &'static str {
    match kind {
        Kind::Shards { .. } => "shard",
        Kind::Runs => "run",
    }
}

/// The name of input `i` (from 0) in the table: its shard, or its number.
pub fn name(line: &MergedInput, i: usize) -> String {
    line.shard.clone().unwrap_or_else(|| (i + 1).to_string())
}

/// `Merged 3 shards of one plan @ URL` and wrk's second line, how the
/// runs reached their servers, then the plan's lines.
pub fn write_header(
    out: &mut dyn Write,
    run: &Description,
    kind: Kind,
    inputs: usize,
) -> io::Result<()> {
    writeln!(out, "Merged {} @ {}", describe(kind, inputs), run.url)?;
    writeln!(out, "  {} threads and {} connections in all", run.threads, run.connections)?;
    run.reached.write_spread(out)?;
    run.reached.write_routes(out)?;
    crate::report::plan::write_header(out, run)
}

/// The table of inputs:
///
/// ```text
/// Per shard:
///   shard    requests    req/sec   latency p99    lag p99   errors  file
///   0/3         10000    1000.00        1.20ms    45.00us        0  shard-0.json
/// ```
pub fn write_lines(
    out: &mut dyn Write,
    kind: Kind,
    lines: &[MergedInput],
    paced: bool,
) -> io::Result<()> {
    let label = label(kind);
    writeln!(out, "Per {label}:")?;
    let lag = if paced { "    lag p99" } else { "" };
    writeln!(
        out,
        "  {label:<6} {:>10} {:>10} {:>12}{lag} {:>8}  file",
        "requests", "req/sec", "latency p99", "errors"
    )?;
    for (i, line) in lines.iter().enumerate() {
        let name = name(line, i);
        let time =
            |us: Option<u64>| us.map_or(UNDEFINED.to_string(), |us| format_time_us(us as f64));
        let lag = if paced { format!(" {:>10}", time(line.lag_p99_us)) } else { String::new() };
        writeln!(
            out,
            "  {name:<6} {:>10} {:>10.2} {:>12}{lag} {:>8}  {}",
            line.requests,
            line.requests_per_sec,
            time(line.latency_p99_us),
            line.errors,
            line.source
        )?;
    }
    Ok(())
}
