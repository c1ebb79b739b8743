//! The per-target breakdown of a run whose targets file has more than one
//! target: per target, its requests, rate, corrected p50 and p99, errors
//! and status codes. The text report prints it after everything else
//! (nothing without several targets); JSON and HTML show the same rows.

use std::io::{self, Write};

use crate::stats::spectrum::value_at_percentile;
use crate::stats::RunResult;
use crate::units::per_second;
use crate::units::{format_time_us, UNDEFINED};

/// Labels longer than this are cut in the text report (JSON has them all).
const TEXT_LABEL: usize = 48;

/// What the reports say of one target.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetRow {
    /// `METHOD scheme://host:port/path`.
    pub label: String,
    pub requests: u64,
    /// Responses per second over the run's window.
    pub rate: f64,
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    pub errors: u64,
    /// Due in the run and never sent (paced runs).
    pub unsent: u64,
    /// `(status, responses)`, by status.
    pub statuses: Vec<(u16, u64)>,
}

/// One row per target, in the file's order (none without several).
pub fn target_rows(result: &RunResult) -> Vec<TargetRow> {
    let seconds = result.runtime.as_secs_f64();
    result
        .total
        .targets
        .iter()
        .map(|target| {
            let percentile = |p: f64| {
                (!target.corrected.is_empty()).then(|| value_at_percentile(&target.corrected, p))
            };
            TargetRow {
                label: target.label.to_string(),
                requests: target.requests,
                rate: per_second(target.requests, seconds),
                p50_us: percentile(50.0),
                p99_us: percentile(99.0),
                errors: target.errors,
                unsent: target.unsent,
                statuses: target.outcomes.http().collect(),
            }
        })
        .collect()
}

/// `200:950 503:50`.
pub fn statuses_text(statuses: &[(u16, u64)]) -> String {
    let parts: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}:{n}")).collect();
    if parts.is_empty() {
        UNDEFINED.to_string()
    } else {
        parts.join(" ")
    }
}

/// A latency, or `-` when there was none.
pub fn latency_text(us: Option<u64>) -> String {
    us.map_or(UNDEFINED.to_string(), |us| format_time_us(us as f64))
}

/// The text report's table, when there are several targets; its
/// `unsent` column only when some target has unsent requests.
pub fn write_targets(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let rows = target_rows(result);
    if rows.is_empty() {
        return Ok(());
    }
    let with_unsent = rows.iter().any(|row| row.unsent > 0);
    let unsent_head = if with_unsent { format!("  {:>7}", "unsent") } else { String::new() };
    writeln!(out, "Per target:")?;
    writeln!(
        out,
        "  {:<width$}  {:>9}  {:>10}  {:>9}  {:>9}  {:>7}{unsent_head}  statuses",
        "target",
        "requests",
        "req/s",
        "p50",
        "p99",
        "errors",
        width = TEXT_LABEL
    )?;
    for row in rows {
        let unsent = if with_unsent { format!("  {:>7}", row.unsent) } else { String::new() };
        writeln!(
            out,
            "  {:<width$}  {:>9}  {:>10.2}  {:>9}  {:>9}  {:>7}{unsent}  {}",
            cut(&row.label),
            row.requests,
            row.rate,
            latency_text(row.p50_us),
            latency_text(row.p99_us),
            row.errors,
            statuses_text(&row.statuses),
            width = TEXT_LABEL
        )?;
    }
    Ok(())
}

/// `label`, cut to [`TEXT_LABEL`] characters with `...` at the end.
fn cut(label: &str) -> String {
    if label.chars().count() <= TEXT_LABEL {
        return label.to_string();
    }
    let kept: String = label.chars().take(TEXT_LABEL - 3).collect();
    format!("{kept}...")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::stats::Outcome;
    use crate::stats::{Stats, TargetStats};

    fn result(targets: Vec<TargetStats>) -> RunResult {
        let mut total = Stats::new(3);
        total.targets = targets;
        RunResult {
            total,
            threads: Vec::new(),
            runtime: Duration::from_secs(2),
            interrupted: None,
            script_stopped: false,
            series: Vec::new(),
            series_interval: Duration::from_millis(250),
            measured_from: std::time::SystemTime::UNIX_EPOCH,
            course: crate::stats::course::Course::default(),
        }
    }

    #[test]
    fn one_line_per_target_with_long_labels_cut() {
        let mut a = TargetStats::new(Arc::from("GET http://a:80/"), 3);
        for _ in 0..3 {
            a.response(Outcome::Http(200));
            a.corrected.record(1_000).unwrap();
        }
        a.response(Outcome::Http(503));
        a.corrected.record(2_000).unwrap();
        let long = format!("POST http://b:8080/{}", "x".repeat(60));
        let b = TargetStats::new(Arc::from(long.as_str()), 3);
        let mut out = Vec::new();
        write_targets(&mut out, &result(vec![a, b])).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Per target:");
        assert!(lines[1].starts_with("  target   "), "{}", lines[1]);
        let first: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            first,
            ["GET", "http://a:80/", "4", "2.00", "1.00ms", "2.00ms", "1", "200:3", "503:1"]
        );
        assert!(lines[3].contains(&format!("POST http://b:8080/{}...", "x".repeat(26))));
        assert!(lines[3].ends_with("  0  -"), "{}", lines[3]);
        // Unsent requests get a column of their own.
        let mut c = TargetStats::new(Arc::from("GET http://c:80/"), 3);
        c.unsent = 7;
        let mut out = Vec::new();
        write_targets(&mut out, &result(vec![c])).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].ends_with("  errors   unsent  statuses"), "{}", lines[1]);
        assert!(lines[2].ends_with("  0        7  -"), "{}", lines[2]);
        // Nothing without several targets.
        let mut out = Vec::new();
        write_targets(&mut out, &result(Vec::new())).unwrap();
        assert!(out.is_empty());
    }
}
