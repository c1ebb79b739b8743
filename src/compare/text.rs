//! The comparison as text: which runs, what differs between them, the
//! table (both runs, the change, the verdict per line), how noise was
//! judged, which percentiles had too few samples, and the
//! `--max-regression` verdicts.
//!
//! ```text
//! Comparing
//!   base  base.json: http://127.0.0.1:8080/: 1000 requests in 2.00s (...)
//!   new   new.json: http://127.0.0.1:8080/: 1000 requests in 2.00s (...)
//!
//!                        base      new            change  verdict
//!   Requests/sec       500.00   500.00     +0.00 (+0.0%)  within noise
//!   Errors              0.00%    0.00%            +0.00%  within noise
//!   Latency (corrected)
//!     50.000%         29.00us   1.06ms  +1.03ms (+3555.2%)  slower
//! ```

use std::io::{self, Write};

use super::gate::{self, Judged};
use super::statistics::{CONFIDENCE, ROUNDS};
use super::verdicts::{Comparison, Figure, Line, Verdict};
use super::Runs;
use crate::slo::Unit;
use crate::stats::confidence::MIN_SAMPLES_BEYOND;
use crate::units::format_time_us;

/// Writes the whole comparison.
pub fn write(
    out: &mut dyn Write,
    runs: &Runs,
    comparison: &Comparison,
    judged: &[Judged],
) -> io::Result<()> {
    writeln!(out, "Comparing")?;
    writeln!(out, "  base  {}: {}", runs.base.source, super::settings::describe(runs.base))?;
    writeln!(out, "  new   {}: {}", runs.new.source, super::settings::describe(runs.new))?;
    for warning in &runs.warnings {
        writeln!(out, "  warning: {warning}")?;
    }
    writeln!(out)?;
    let mut rows =
        vec![[String::new(), "base".into(), "new".into(), "change".into(), "verdict".into()]];
    rows.push(row("Requests/sec", &comparison.rate));
    rows.push(row("Errors", &comparison.errors));
    for line in &comparison.grpc {
        let Figure::Grpc(code) = line.figure else { continue };
        rows.push(row(&format!("gRPC {}", crate::grpc_status::name(code)), line));
    }
    let mut headings = Vec::new();
    let blocks = [
        (latency_heading(comparison), Some(&comparison.corrected)),
        ("Latency (uncorrected)".to_string(), comparison.uncorrected.as_ref()),
    ];
    for (heading, lines) in blocks {
        let Some(lines) = lines else { continue };
        headings.push((rows.len(), heading));
        for line in lines {
            let Figure::Latency(_, p) = line.figure else { continue };
            rows.push(row(&format!("{p:9.3}%"), line));
        }
    }
    write_table(out, &rows, &headings)?;
    writeln!(out)?;
    writeln!(out, "{}", noise_sentence(comparison))?;
    if let Some(sentence) = samples_sentence(comparison) {
        writeln!(out, "{sentence}")?;
    }
    gate::write(out, judged)
}

/// `Latency (corrected)` with a plan, `Latency` in a closed loop (where
/// nothing is corrected).
fn latency_heading(comparison: &Comparison) -> String {
    match comparison.uncorrected {
        Some(_) => "Latency (corrected)".to_string(),
        None => "Latency".to_string(),
    }
}

/// How the verdicts were reached, in a sentence.
pub fn noise_sentence(comparison: &Comparison) -> String {
    let noise = comparison.noise;
    format!(
        "Within noise: the difference is inside its {:.0}% interval (latency: bootstrap of \
         the histograms, {ROUNDS} rounds, by values and, for runs saved with -p, by periods; \
         rate: 100 ms Req/Sec samples; errors: Agresti-Caffo), or smaller than {}% of base \
         (latency: also than {} and 2 histogram buckets).",
        CONFIDENCE * 100.0,
        noise.percent,
        format_time_us(noise.latency_us),
    )
}

/// What "too few samples" means, and which of the default percentiles
/// were left out for it; None when neither happened.
pub fn samples_sentence(comparison: &Comparison) -> Option<String> {
    let lines = comparison.corrected.iter().chain(comparison.uncorrected.iter().flatten());
    let too_few = lines.into_iter().any(|l| l.verdict == Verdict::TooFewSamples);
    if !too_few && comparison.left_out.is_empty() {
        return None;
    }
    let mut sentence = format!(
        "Too few samples: a run has fewer than {MIN_SAMPLES_BEYOND} latencies beyond the \
         percentile (above it; below it under 50%), so chance alone could make a difference there"
    );
    if !comparison.left_out.is_empty() {
        let left_out: Vec<String> =
            comparison.left_out.iter().map(|p| format!("{p:.3}%")).collect();
        sentence.push_str(&format!(
            "; left out: {} (--percentiles compares them)",
            left_out.join(", ")
        ));
    }
    sentence.push('.');
    Some(sentence)
}

/// A table row: the name, both figures, the change and the verdict.
fn row(name: &str, line: &Line) -> [String; 5] {
    let (value, unit) = match line.figure {
        Figure::Rate => (rate as fn(f64) -> String, Unit::PerSecond),
        Figure::Errors | Figure::Grpc(_) => (percent as fn(f64) -> String, Unit::Percent),
        Figure::Latency(..) => (format_time_us as fn(f64) -> String, Unit::Micros),
    };
    let shown = |v: Option<f64>| v.map_or_else(|| "-".to_string(), value);
    [
        name.to_string(),
        shown(line.base),
        shown(line.new),
        change(line, unit),
        line.verdict.word().to_string(),
    ]
}

fn rate(value: f64) -> String {
    format!("{value:.2}")
}

fn percent(value: f64) -> String {
    format!("{value:.2}%")
}

/// `+1.03ms (+3555.2%)`; errors in percentage points only.
pub fn change(line: &Line, unit: Unit) -> String {
    let Some(change) = line.change() else { return "-".to_string() };
    let absolute = match unit {
        Unit::PerSecond => format!("{change:+.2}"),
        _ => gate::signed(change, unit),
    };
    match (unit, line.change_percent()) {
        (Unit::Percent, _) | (_, None) => absolute,
        (_, Some(relative)) => format!("{absolute} ({relative:+.1}%)"),
    }
}

/// Columns: the name left, figures right, the verdict left; a heading
/// line before the rows at its index.
fn write_table(
    out: &mut dyn Write,
    rows: &[[String; 5]],
    headings: &[(usize, String)],
) -> io::Result<()> {
    let mut widths = [0; 5];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for (i, row) in rows.iter().enumerate() {
        if let Some((_, heading)) = headings.iter().find(|(at, _)| *at == i) {
            writeln!(out, "  {heading}")?;
        }
        let [name, base, new, change, verdict] = row;
        let line = format!(
            "  {name:<w0$}  {base:>w1$}  {new:>w2$}  {change:>w3$}  {verdict}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}
