//! Merging HdrHistogram interval logs (`--hlog`, or any tool's in the
//! standard format): their latencies added, count by count. A log holds
//! only latency histograms, so the report of a merge of logs has only the
//! latency distributions (the corrected one is a log's untagged lines,
//! the uncorrected its `Tag=uncorrected` lines, as pace writes them).

use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::Serialize;

use super::saved::decode_any;
use super::MergeArgs;
use crate::report::hlog::{encode_compressed, UNCORRECTED_TAG};
use crate::report::json::{summary, Summary, SCHEMA_VERSION};
use crate::report::text::{self, WRK2_PERCENTILES};
use crate::report::ReportOptions;
use crate::stats::Stats;
use crate::units::{format_rfc3339, format_time_us};

/// Whether `path` holds an interval log rather than JSON: a log starts
/// with its `#[...]` comments (or its legend, or a first interval). Only
/// the file's start is read.
pub fn is_log(path: &Path) -> bool {
    let Ok(text) = crate::files::start_of(path, 4096) else { return false };
    let start = text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len());
    matches!(text.get(start), Some(b'#' | b'"')) || text[start..].starts_with(b"Tag=")
}

/// The latencies of several logs added together.
pub struct MergedLogs {
    pub sources: Vec<String>,
    pub corrected: Histogram<u64>,
    /// None when no log had `Tag=uncorrected` lines.
    pub uncorrected: Option<Histogram<u64>>,
    /// From the earliest interval's start to the latest's end.
    pub from: SystemTime,
    pub span: Duration,
}

/// Reads and adds the logs in `files`.
pub fn merge(files: &[impl AsRef<Path>]) -> Result<MergedLogs, String> {
    let mut merged: Option<MergedLogs> = None;
    let mut ends = Vec::new();
    for path in files {
        let path = path.as_ref();
        let source = path.display().to_string();
        let bytes = crate::files::read_at_most(path, crate::files::HLOG.bytes)
            .map_err(|why| format!("cannot read {source}: {}", why.reason()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| format!("cannot read {source}: not text (an interval log is text)"))?;
        let log = read(&source, &text)?;
        ends.push(log.from + log.span);
        match &mut merged {
            None => merged = Some(log),
            Some(all) => all.add(log)?,
        }
    }
    let mut merged = merged.ok_or("nothing to merge")?;
    let end = ends.into_iter().max().unwrap_or(merged.from);
    merged.span = end.duration_since(merged.from).unwrap_or_default();
    Ok(merged)
}

impl MergedLogs {
    fn add(&mut self, other: MergedLogs) -> Result<(), String> {
        if other.corrected.sigfig() != self.corrected.sigfig() {
            return Err(format!(
                "{} and {} have histograms of different precision ({} and {} significant \
                 digits): they cannot be added exactly",
                self.sources[0],
                other.sources[0],
                self.corrected.sigfig(),
                other.corrected.sigfig()
            ));
        }
        add(&mut self.corrected, &other.corrected)?;
        match (&mut self.uncorrected, other.uncorrected) {
            (Some(mine), Some(theirs)) => add(mine, &theirs)?,
            (mine @ None, Some(theirs)) => *mine = Some(theirs),
            (_, None) => {}
        }
        self.from = self.from.min(other.from);
        self.sources.extend(other.sources);
        Ok(())
    }
}

fn add(into: &mut Histogram<u64>, other: &Histogram<u64>) -> Result<(), String> {
    into.add(other).map_err(|e| format!("cannot add histograms ({e:?})"))
}

/// One log: `#[StartTime: ...]`/`#[BaseTime: ...]` comments, the legend,
/// then `[Tag=T,]start,length,max,histogram` lines, times in seconds from
/// the base time.
fn read(source: &str, text: &str) -> Result<MergedLogs, String> {
    let mut base = None;
    let mut start_time = None;
    let mut corrected: Option<Histogram<u64>> = None;
    let mut uncorrected: Option<Histogram<u64>> = None;
    let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        let at = || format!("{source} line {}", number + 1);
        if let Some(rest) = line.strip_prefix("#[BaseTime: ") {
            base = Some(leading_seconds(rest).ok_or_else(|| format!("{}: bad BaseTime", at()))?);
        } else if let Some(rest) = line.strip_prefix("#[StartTime: ") {
            start_time =
                Some(leading_seconds(rest).ok_or_else(|| format!("{}: bad StartTime", at()))?);
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with('"') {
            continue;
        }
        let (tag, fields) = match line.strip_prefix("Tag=") {
            Some(rest) => {
                let (tag, fields) =
                    rest.split_once(',').ok_or_else(|| format!("{}: a tag alone", at()))?;
                (Some(tag), fields)
            }
            None => (None, line),
        };
        let parts: Vec<&str> = fields.split(',').collect();
        let [start, length, _max, encoded] = parts[..] else {
            return Err(format!("{}: expected start,length,max,histogram", at()));
        };
        let number = |text: &str| text.parse::<f64>().map_err(|_| format!("{}: '{text}'", at()));
        let (start, length) = (number(start)?, number(length)?);
        let histogram = decode_any(encoded).map_err(|e| format!("{}: {e}", at()))?;
        let into = match tag {
            None => &mut corrected,
            Some(tag) if tag == UNCORRECTED_TAG => &mut uncorrected,
            // Another tool's other series: not a latency pace knows.
            Some(_) => continue,
        };
        match into {
            Some(sum) => add(sum, &histogram).map_err(|e| format!("{}: {e}", at()))?,
            None => *into = Some(histogram),
        }
        first = first.min(start);
        last = last.max(start + length);
    }
    let corrected = corrected.ok_or_else(|| format!("{source} has no latency intervals"))?;
    // Interval times count from BaseTime (Java's writer), else StartTime.
    let base = base.or(start_time).unwrap_or(0.0);
    let from = UNIX_EPOCH + Duration::try_from_secs_f64(base + first).unwrap_or_default();
    let span = Duration::try_from_secs_f64(last - first).unwrap_or_default();
    Ok(MergedLogs { sources: vec![source.to_string()], corrected, uncorrected, from, span })
}

/// `1700000000.123 (seconds since epoch)...`: the number.
fn leading_seconds(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The report: what was merged, then wrk2's latency distributions.
pub fn write(out: &mut dyn Write, args: &MergeArgs, merged: &MergedLogs) -> io::Result<()> {
    if args.outputs.json {
        serde_json::to_writer(&mut *out, &LogsReport::of(args, merged)?)?;
        return writeln!(out);
    }
    writeln!(
        out,
        "Merged {} HdrHistogram logs (latency only: a log holds no bytes, errors or statuses)",
        merged.sources.len()
    )?;
    writeln!(
        out,
        "  {} latencies over {}, from {}",
        merged.corrected.len(),
        format_time_us(merged.span.as_micros() as f64),
        format_rfc3339(merged.from)
    )?;
    let mut stats = Stats::new(merged.corrected.sigfig());
    stats.corrected = merged.corrected.clone();
    let u_latency = args.report.u_latency && merged.uncorrected.is_some();
    if let Some(uncorrected) = &merged.uncorrected {
        stats.uncorrected = uncorrected.clone();
    }
    // wrk2's layout, whose blocks are those of a paced run.
    let options = ReportOptions { latency: true, u_latency, ..args.report.clone() };
    text::write_hdr_distributions(out, &options, &stats)?;
    text::write_hdr_too_few_samples(out, &options, &stats)
}

/// `pace merge -e` of logs.
#[derive(Serialize)]
struct LogsReport {
    schema_version: u32,
    report: &'static str,
    sources: Vec<String>,
    count: u64,
    from_unix_s: f64,
    elapsed_s: f64,
    hist: String,
    uncorrected_hist: Option<String>,
    corrected: Summary,
    uncorrected: Option<Summary>,
}

impl LogsReport {
    fn of(args: &MergeArgs, merged: &MergedLogs) -> io::Result<LogsReport> {
        let percentiles = args.report.percentiles.as_deref().unwrap_or(&WRK2_PERCENTILES);
        Ok(LogsReport {
            schema_version: SCHEMA_VERSION,
            report: "merged_logs",
            sources: merged.sources.clone(),
            count: merged.corrected.len(),
            from_unix_s: merged.from.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64(),
            elapsed_s: merged.span.as_secs_f64(),
            hist: encode_compressed(&merged.corrected)?,
            uncorrected_hist: merged.uncorrected.as_ref().map(encode_compressed).transpose()?,
            corrected: summary(&merged.corrected, percentiles),
            uncorrected: merged.uncorrected.as_ref().map(|h| summary(h, percentiles)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::hlog::{write_header, write_interval};
    use crate::stats::latency_histogram;

    /// A log as `--hlog` writes it: intervals of one second from `start`,
    /// each with one latency of `value` (and half of it, tagged).
    fn log(start: u64, values: &[u64]) -> String {
        let mut out = Vec::new();
        write_header(&mut out, UNIX_EPOCH + Duration::from_secs(start)).unwrap();
        for (i, &value) in values.iter().enumerate() {
            let at = Duration::from_secs(i as u64);
            let mut h = latency_histogram(3);
            h.record(value).unwrap();
            write_interval(&mut out, None, at, Duration::from_secs(1), &h).unwrap();
            let mut u = latency_histogram(3);
            u.record(value / 2).unwrap();
            write_interval(&mut out, Some(UNCORRECTED_TAG), at, Duration::from_secs(1), &u)
                .unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn logs_add_up_over_the_union_of_their_times() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.hlog"), dir.path().join("b.hlog"));
        std::fs::write(&a, log(1_000, &[100, 200, 300])).unwrap();
        std::fs::write(&b, log(1_002, &[5000, 6000])).unwrap();
        assert!(is_log(&a) && is_log(&b));
        let merged = merge(&[&a, &b]).unwrap();
        assert_eq!(merged.corrected.len(), 5);
        assert_eq!(merged.corrected.max(), merged.corrected.highest_equivalent(6000));
        assert_eq!(merged.uncorrected.as_ref().unwrap().len(), 5);
        assert_eq!(merged.from, UNIX_EPOCH + Duration::from_secs(1_000));
        assert_eq!(merged.span, Duration::from_secs(4));
    }

    #[test]
    fn what_is_not_a_log_is_refused() {
        for (text, says) in [
            ("#[StartTime: 10 (seconds since epoch)]\n", "has no latency intervals"),
            ("0.000,1.000,0.1,nothistogram\n", "line 1: a histogram cannot be decoded"),
            ("0.000,1.000\n", "line 1: expected start,length,max,histogram"),
            ("#[BaseTime: soon]\n", "line 1: bad BaseTime"),
        ] {
            let Err(message) = read("x.hlog", text) else { panic!("{text}") };
            assert!(message.contains(says), "{message}");
        }
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        std::fs::write(&json, "{\"report\":\"final\"}").unwrap();
        assert!(!is_log(&json));
    }
}
