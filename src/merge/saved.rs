//! A run saved with `-e` read back: the JSON (or JSON Lines, with `-p`)
//! that [`crate::report::json`] writes, in the format declared once in
//! [`crate::report::json::format`], turned into the description and the
//! measurements the reports are made from. The summaries (percentiles,
//! means) are computed again from the histograms, which are exact.
//!
//! A file is not trusted: it is read a line at a time with a bound on the
//! line and on the file ([`MAX_LINE`], [`MAX_FILE`]), and every figure is
//! checked for its range, so a hostile or damaged file is refused in words
//! (naming the file and the field) and nothing computed from it overflows.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use crate::config::origins::origin_name;
use crate::config::targets::TargetsOrder;
use crate::config::{Mode, Shard};
use crate::description::reached::{OriginReach, Reached};
use crate::description::{CallKind, Description};
use crate::grpc::call::StreamPlan;
use crate::grpc_status;
use crate::plan::{Arrival, PlanSpec, Stage};
use crate::protocol::Protocol;
use crate::reach::Family;
use crate::report::json::format::{
    MergedInput, PlanInfo, Report, RunOnly, ShardInfo, ThreadCounts, SEARCH_REPORT, STEP_REPORT,
};
use crate::signals::Interruption;
use crate::stats::course::{self, Course, CoursePeriod};
use crate::stats::{
    Errors, Generator, Http2Counts, Interval, Outcome, Outcomes, QuicCounts, RunResult, StageStats,
    Stats, TargetStats, ThreadTotals, Warmup,
};
use crate::target::{Scheme, Target};

/// The longest line a saved run may have: one report, histograms and all
/// (a final report of many targets and stages is some hundreds of KiB).
pub const MAX_LINE: usize = 64 << 20;
/// The largest file a saved run may be (a day of `-p 1s` periods is some
/// hundreds of MiB).
pub const MAX_FILE: u64 = 1 << 30;
/// The largest count a saved run may hold: the largest integer a JSON
/// number carries exactly (2^53). Counts of up to [`MAX_RUNS`] runs add up
/// without overflowing.
pub const MAX_COUNT: u64 = 1 << 53;
/// The most runs one merge adds up (see [`MAX_COUNT`]).
pub const MAX_RUNS: usize = 1 << 10;
/// The longest time a saved run may give, in seconds (about 30 years).
const MAX_SECONDS: f64 = 1e9;
/// The latest wall-clock time a saved run may give, in Unix seconds (the
/// year 5138).
const MAX_UNIX_SECONDS: f64 = 1e11;

/// One saved run: how it was run and what it measured.
pub struct SavedRun {
    /// The file it came from, for messages.
    pub source: String,
    /// How it was run.
    pub description: Description,
    pub result: RunResult,
    /// The `-p` periods, in order (none without `-p`).
    pub periods: Vec<Interval>,
    /// What the reports of it cannot make exact (a result saved by an
    /// older pace), to be said with them.
    pub caveats: Vec<String>,
    /// A merge saved with `pace merge -e`: what it merged (None for a
    /// run's own file).
    pub merge: Option<MergeRecord>,
}

/// What a saved merge says of itself: its inputs and its notes.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeRecord {
    pub inputs: Vec<MergedInput>,
    pub notes: Vec<String>,
}

/// Reads the run saved in `path`, a line at a time; of the file of a
/// search (`pace search -e`), its step `step` (from 1).
pub fn read(path: &Path, step: Option<usize>) -> Result<SavedRun, String> {
    let source = path.display().to_string();
    let lines = read_lines(path, MAX_LINE, MAX_FILE)?;
    let mut file = parse_file(&source, lines.iter().map(String::as_str))?;
    match (step, file.steps.len()) {
        (None, 0) => file.run.ok_or_else(|| no_final(&source)),
        (None, steps) => Err(format!(
            "{source} is a search's file with {steps} steps: choose one with --step N (1 to \
             {steps})"
        )),
        (Some(_), 0) => {
            Err(format!("{source} is one run, not a search's file: --step is for those"))
        }
        (Some(n), steps) if n == 0 || n > steps => {
            Err(format!("{source} has steps 1 to {steps}, no step {n}"))
        }
        (Some(n), _) => Ok(file.steps.swap_remove(n - 1)),
    }
}

/// Every step of the search saved in `path`, in order (empty for a run's
/// own file).
pub fn read_steps(path: &Path) -> Result<Vec<SavedRun>, String> {
    let source = path.display().to_string();
    let lines = read_lines(path, MAX_LINE, MAX_FILE)?;
    Ok(parse_file(&source, lines.iter().map(String::as_str))?.steps)
}

/// The lines of `path`, of at most `max_line` bytes each and `max_file`
/// in all.
fn read_lines(path: &Path, max_line: usize, max_file: u64) -> Result<Vec<String>, String> {
    let source = path.display().to_string();
    let cannot =
        |e: std::io::Error| format!("cannot read {source}: {}", crate::error::io_reason(&e));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut reader = BufReader::new(file.take(max_file + 1));
    let mut lines = Vec::new();
    let mut read = 0u64;
    loop {
        let mut line = Vec::new();
        let n = (&mut reader).take(max_line as u64 + 1).read_until(b'\n', &mut line);
        let n = n.map_err(cannot)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if read > max_file {
            return Err(format!(
                "{source} is larger than {}B: not a run saved by pace -e",
                crate::units::format_binary(max_file as f64)
            ));
        }
        if n > max_line {
            return Err(format!(
                "{source} line {} is longer than {}B: not a report of pace -e",
                lines.len() + 1,
                crate::units::format_binary(max_line as f64)
            ));
        }
        let text = String::from_utf8(line)
            .map_err(|_| format!("{source} line {}: not text", lines.len() + 1))?;
        lines.push(text);
    }
    Ok(lines)
}

/// The run of the JSON lines in `text` (`source` names it in messages).
#[cfg(test)]
pub fn parse(source: &str, text: &str) -> Result<SavedRun, String> {
    parse_file(source, text.lines())?.run.ok_or_else(|| no_final(source))
}

fn no_final(source: &str) -> String {
    format!("{source} has no final report (was the run cut off?)")
}

/// What a file holds: a run (its periods, then its final report), or the
/// steps of a search (each its periods, then its report `"step"`, and the
/// search's own line at the end, which says nothing a step needs).
struct SavedFile {
    run: Option<SavedRun>,
    steps: Vec<SavedRun>,
}

fn parse_file<'a>(source: &str, lines: impl Iterator<Item = &'a str>) -> Result<SavedFile, String> {
    let mut periods = Vec::new();
    let (mut run, mut steps, mut searched) = (None, Vec::new(), false);
    for (number, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = || format!("{source} line {}", number + 1);
        if run.is_some() || searched {
            return Err(format!("{}: more after the final report", at()));
        }
        if is_search_line(line) {
            searched = true;
            continue;
        }
        let report =
            Report::read(line).map_err(|e| format!("{}: not a report of pace -e ({e})", at()))?;
        match report.report.as_str() {
            "period" => periods.push(interval(&report).map_err(|e| format!("{}: {e}", at()))?),
            "final" if steps.is_empty() => {
                run = Some(saved_run(source, report, std::mem::take(&mut periods))?)
            }
            STEP_REPORT => steps.push(
                saved_run(source, report, std::mem::take(&mut periods))
                    .map_err(|e| format!("{}: {e}", at()))?,
            ),
            other => return Err(format!("{}: unknown report kind '{other}'", at())),
        }
    }
    Ok(SavedFile { run, steps })
}

/// Whether `line` is the search's own last line (`"report": "search"`).
fn is_search_line(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind {
        report: String,
    }
    serde_json::from_str::<Kind>(line).is_ok_and(|kind| kind.report == SEARCH_REPORT)
}

/// The run of a final report (or a step's) and the periods before it.
fn saved_run(source: &str, mut report: Report, periods: Vec<Interval>) -> Result<SavedRun, String> {
    let mut run =
        report.run.take().ok_or_else(|| format!("{source}: a final report without its run"))?;
    let schema = report.schema_version;
    let description = description(&report, &run).map_err(|e| format!("{source}: {e}"))?;
    let merge = merge_record(&mut run).map_err(|e| format!("{source}: {e}"))?;
    let result = result(report, run).map_err(|e| format!("{source}: {e}"))?;
    let caveats = caveats(source, schema, &result);
    Ok(SavedRun { source: source.to_string(), description, result, periods, caveats, merge })
}

/// The inputs and notes of a saved merge, their figures checked; None
/// for a run's own file.
fn merge_record(run: &mut RunOnly) -> Result<Option<MergeRecord>, String> {
    let Some(inputs) = run.merged_from.take() else { return Ok(None) };
    if inputs.len() > MAX_RUNS {
        return Err(format!("merged_from: {} runs, more than a merge adds", inputs.len()));
    }
    for input in &inputs {
        count("merged_from.requests", input.requests)?;
        count("merged_from.errors", input.errors)?;
        rate("merged_from.requests_per_sec", input.requests_per_sec)?;
        for p99 in [input.latency_p99_us, input.lag_p99_us].into_iter().flatten() {
            count("merged_from.latency_p99_us", p99)?;
        }
    }
    Ok(Some(MergeRecord { inputs, notes: run.merge_notes.take().unwrap_or_default() }))
}

/// Schema 1 (pace before its rates were over the sending window and unsent
/// requests had waits of their own) put each unsent request's wait into
/// the corrected histogram, and its rates are over the time to the last
/// response: said, since neither can be undone.
fn caveats(source: &str, schema: u32, result: &RunResult) -> Vec<String> {
    let unsent = result.total.errors.unsent;
    if schema >= 2 || unsent == 0 {
        return Vec::new();
    }
    vec![format!(
        "{source} was saved by an older pace (JSON schema {schema}): its corrected latency \
         includes the waits of its {unsent} unsent requests (lower bounds, not latencies)"
    )]
}

/// A period report as the period it covers.
fn interval(report: &Report) -> Result<Interval, String> {
    let Some(period) = &report.period else { return Err("a period without its window".into()) };
    Ok(Interval {
        index: count("period.index", period.index)?,
        start: seconds("period.start_s", period.start_s)?,
        length: seconds("period.length_s", period.length_s)?,
        stats: measured(report)?,
    })
}

/// How the run was run.
fn description(report: &Report, run: &RunOnly) -> Result<Description, String> {
    let digits = digits(report.digits)?;
    let mode = match (report.mode.as_str(), &run.plan) {
        ("closed_loop", _) => Mode::ClosedLoop,
        ("paced", Some(plan)) => Mode::Paced(plan_spec(plan)?),
        ("paced", None) => return Err("a paced run without its plan".into()),
        (other, _) => return Err(format!("unknown mode '{other}'")),
    };
    let protocol = Protocol::from_name(&report.protocol)
        .ok_or_else(|| format!("unknown protocol '{}'", report.protocol))?;
    let scheme = match report.protocol.as_str() {
        "h2" => Scheme::Https,
        "h2c" => Scheme::Http,
        _ => Target::parse(&report.url).map_or(Scheme::Http, |target| target.scheme),
    };
    let warmup = match &run.warmup {
        Some(warmup) => seconds("warmup.duration_s", warmup.duration_s)?,
        None => Duration::ZERO,
    };
    let start_at = run.start_at.as_deref().map(parse_rfc3339).transpose()?;
    Ok(Description {
        url: report.url.clone(),
        protocol,
        scheme,
        streams: at_least_one("streams", report.streams)?,
        grpc: report.grpc_method.clone(),
        grpc_kind: grpc_kind(report)?,
        allowed_streams: run.streams_allowed,
        threads: at_least_one("threads", report.threads)?,
        connections: at_least_one("connections", report.connections)?,
        instance_connections: at_least_one("shard.connections", run.shard.connections)?,
        duration: report.duration_s.map(|d| seconds("duration_s", d)).transpose()?,
        requests: report.requests_limit.map(|n| count("requests_limit", n)).transpose()?,
        timeout: seconds("timeout_s", run.timeout_s)?,
        mode,
        warmup,
        seed: run.seed.or(run.plan.as_ref().and_then(|plan| plan.seed)).unwrap_or(0),
        targets_order: run.targets_order.as_deref().map(targets_order).transpose()?,
        client_certificate: run.client_certificate,
        shard: shard(&run.shard)?,
        start_at,
        digits,
        reached: reached(report, run.shard.connections)?,
        provenance: run.provenance.clone(),
    })
}

/// What the run measured.
fn result(report: Report, run: RunOnly) -> Result<RunResult, String> {
    let digits = digits(report.digits)?;
    let mut stats = measured(&report)?;
    let generator = &run.generator;
    let cpu = share("generator.busiest_thread_cpu_share", generator.busiest_thread_cpu_share)?;
    stats.generator = Generator {
        waiting_for_connection_us: count(
            "generator.waiting_for_connection_us",
            generator.waiting_for_connection_us,
        )?,
        waiting_for_generator_us: count(
            "generator.waiting_for_generator_us",
            generator.waiting_for_generator_us,
        )?,
        busiest_thread_cpu: cpu,
        busiest_thread_work: generator
            .busiest_thread_work_share
            .map_or(Ok(cpu), |work| share("generator.busiest_thread_work_share", work))?,
        thread_cpu_wait: share("generator.thread_cpu_wait_share", generator.thread_cpu_wait_share)?,
    };
    stats.http2 = Http2Counts {
        retried_after_goaway: count("retried_after_goaway", run.retried_after_goaway)?,
        stream_limit: run.streams_allowed,
        goaways_with_error: run.goaways_with_error.clone(),
    };
    if let Some(quic) = &run.quic {
        let connections = count("quic.connections", quic.connections)?;
        stats.quic = QuicCounts {
            connections,
            packets_sent: count("quic.packets_sent", quic.packets_sent)?,
            packets_lost: count("quic.packets_lost", quic.packets_lost)?,
            smoothed_rtt_sum_us: (quic.smoothed_rtt_mean_us.max(0.0) * connections as f64).round()
                as u64,
        };
    }
    if let Some(warmup) = &run.warmup {
        stats.warmup = Warmup {
            requests: count("warmup.requests", warmup.requests)?,
            errors: count("warmup.errors", warmup.errors)?,
        };
    }
    stats.stages = (run.stages.iter())
        .map(|stage| {
            Ok(StageStats {
                requests: count("stages.requests", stage.requests)?,
                corrected: decode(&stage.hist, digits)?,
            })
        })
        .collect::<Result<_, String>>()?;
    stats.targets = (run.targets.iter())
        .map(|target| {
            let mut stats = TargetStats::new(Arc::from(target.target.as_str()), digits);
            stats.requests = count("targets.requests", target.requests)?;
            stats.errors = count("targets.errors", target.errors)?;
            stats.unsent = count("targets.unsent", target.unsent)?;
            stats.corrected = decode(&target.hist, digits)?;
            stats.outcomes = outcomes("targets.status_codes", &target.status_codes)?;
            Ok(stats)
        })
        .collect::<Result<_, String>>()?;
    let (series, series_interval) = series(&run)?;
    Ok(RunResult {
        total: stats,
        threads: run.per_thread.iter().map(totals).collect::<Result<_, _>>()?,
        runtime: seconds("elapsed_s", report.elapsed_s)?,
        interrupted: match run.interrupted_by.as_deref() {
            None => None,
            Some("SIGINT") => Some(Interruption::Interrupt),
            Some("SIGTERM") => Some(Interruption::Terminate),
            Some(other) => return Err(format!("unknown signal '{other}'")),
        },
        script_stopped: run.stopped_by_script,
        series,
        series_interval,
        measured_from: unix_time("measured_from_unix_s", run.measured_from_unix_s)?,
        course: course(&run)?,
    })
}

/// The run's course of periods (none in a file of pace before it kept
/// one).
fn course(run: &RunOnly) -> Result<Course, String> {
    let Some(info) = &run.course else { return Ok(Course::default()) };
    if info.periods.len() > course::MAX_PERIODS {
        return Err(format!(
            "course.periods: {} periods, more than a run keeps ({})",
            info.periods.len(),
            course::MAX_PERIODS
        ));
    }
    // Whole microseconds, as the course keeps it.
    let period = seconds("course.period_s", info.period_s)?;
    let period = Duration::from_micros((period.as_secs_f64() * 1e6).round() as u64);
    if period.is_zero() {
        return Err("course.period_s: 0 (a period has a length)".into());
    }
    let periods = (info.periods.iter())
        .map(|p| {
            if !(p.arrival_chi2.is_finite() && p.arrival_chi2 >= 0.0) {
                let chi2 = shown(p.arrival_chi2);
                return Err(format!("course.periods.arrival_chi2: {chi2} is not a chi-square"));
            }
            Ok(CoursePeriod {
                corrected: decode(&p.hist, course::DIGITS)?,
                sent: count("course.periods.sent", p.sent)?,
                ended: count("course.periods.ended", p.ended)?,
                arrival_chi2: p.arrival_chi2,
                arrival_dof: count("course.periods.arrival_dof", p.arrival_dof)?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Course { period, periods })
}

/// How the run reached its servers; from a file of pace before it
/// recorded each origin, its URL's origin with `connections`.
fn reached(report: &Report, connections: usize) -> Result<Reached, String> {
    let family = match report.ip_family.as_deref() {
        None => None,
        Some("ipv4") => Some(Family::V4),
        Some("ipv6") => Some(Family::V6),
        Some(other) => return Err(format!("unknown ip_family '{other}'")),
    };
    let origins = match report.origins.is_empty() {
        false => report.origins.clone(),
        true => {
            let target = Target::parse(&report.url).map_err(|e| format!("{}: {e}", report.url))?;
            vec![OriginReach {
                origin: origin_name(&target),
                connections,
                connected_to: report.connected_to.clone(),
                tunnel: report.proxy.as_ref().is_some_and(|proxy| proxy.tunnel),
            }]
        }
    };
    Ok(Reached { origins, proxy: report.proxy.clone(), family })
}

/// How a saved run's gRPC calls went, when its file says.
fn grpc_kind(report: &Report) -> Result<Option<CallKind>, String> {
    let Some(name) = &report.grpc_kind else { return Ok(None) };
    let plan = report.grpc_stream_count.map(|count| StreamPlan {
        count,
        interval: Duration::from_micros(report.grpc_stream_interval_us.unwrap_or(0)),
    });
    CallKind::from_name(name, plan)
        .map(Some)
        .ok_or_else(|| format!("grpc_kind: {name} is not a kind of gRPC call pace makes"))
}

/// What every report measured.
fn measured(report: &Report) -> Result<Stats, String> {
    let digits = digits(report.digits)?;
    let mut stats = Stats::new(digits);
    stats.corrected = decode(&report.hist, digits)?;
    stats.uncorrected = decode(&report.uncorrected_hist, digits)?;
    stats.lag = decode(&report.lag_hist, digits)?;
    if let Some(waits) = &report.unsent_wait_hist {
        stats.unsent_wait = decode(waits, digits)?;
    }
    if let Some(stream) = &report.grpc_stream {
        stats.streamed.messages = count("grpc_stream.messages", stream.messages)?;
        stats.streamed.messages_per_call = decode(&stream.messages_per_call_hist, digits)?;
        stats.streamed.first_message = decode(&stream.first_message.hist, digits)?;
        stats.streamed.sent = count("grpc_stream.messages_sent", stream.messages_sent)?;
        if let Some(replies) = &stream.reply_latency {
            stats.streamed.reply_latency = decode(&replies.hist, digits)?;
        }
    }
    if let Some(phases) = &report.phases {
        stats.phases.connect = decode(&phases.connect.hist, digits)?;
        stats.phases.tls_handshake = decode(&phases.tls_handshake.hist, digits)?;
        stats.phases.first_byte = decode(&phases.first_byte.hist, digits)?;
    }
    stats.requests = count("requests", report.requests)?;
    stats.bytes = count("bytes", report.bytes)?;
    stats.errors = errors("errors", &Errors::from(&report.errors))?;
    stats.outcomes = outcomes("status_codes", &report.status_codes)?;
    for (name, &n) in &report.grpc_codes {
        let code = grpc_status::from_name(name)
            .ok_or_else(|| format!("grpc_codes: {name} is not a gRPC status code"))?;
        stats.outcomes.add(Outcome::Grpc(code), count("grpc_codes", n)?);
    }
    for (cause, n) in &report.error_causes {
        stats.error_causes.insert(cause.clone(), count("error_causes", *n)?);
    }
    stats.nil_requests = count("nil_requests", report.nil_requests)?;
    if let Some(bad) = report.rate_samples.iter().find(|rate| !(rate.is_finite() && **rate >= 0.0))
    {
        return Err(format!("rate_samples: {} is not a rate", shown(*bad)));
    }
    stats.rate_samples = report.rate_samples.clone();
    Ok(stats)
}

fn totals(thread: &ThreadCounts) -> Result<ThreadTotals, String> {
    Ok(ThreadTotals {
        requests: count("per_thread.requests", thread.requests)?,
        bytes: count("per_thread.bytes", thread.bytes)?,
        errors: errors("per_thread.errors", &Errors::from(&thread.errors))?,
    })
}

fn plan_spec(plan: &PlanInfo) -> Result<PlanSpec, String> {
    let arrival = match plan.arrival.as_str() {
        "constant" => Arrival::Constant,
        "poisson" => Arrival::Poisson,
        other => return Err(format!("unknown arrival '{other}'")),
    };
    let stages = (plan.stages.iter())
        .map(|s| {
            let duration = seconds("plan.stages.duration_s", s.duration_s)?;
            Ok(Stage { duration, rate: rate("plan.stages.rate", s.rate)? })
        })
        .collect::<Result<_, String>>()?;
    Ok(PlanSpec { rate: rate("plan.start_rate", plan.start_rate)?, stages, arrival })
}

/// The run's time series per thread: `--thread-timeseries`'s, or the
/// totals of `--timeseries` as one row; none without either.
fn series(run: &RunOnly) -> Result<(Vec<Vec<u64>>, Duration), String> {
    let interval = |ms: f64| seconds("interval_ms", ms / 1000.0);
    let checked = |rows: Vec<Vec<u64>>| -> Result<Vec<Vec<u64>>, String> {
        for n in rows.iter().flatten() {
            count("timeseries.requests", *n)?;
        }
        Ok(rows)
    };
    match (&run.thread_timeseries, &run.timeseries) {
        (Some(per_thread), _) => {
            Ok((checked(per_thread.requests.clone())?, interval(per_thread.interval_ms)?))
        }
        (None, Some(totals)) => {
            Ok((checked(vec![totals.requests.clone()])?, interval(totals.interval_ms)?))
        }
        (None, None) => Ok((Vec::new(), Duration::ZERO)),
    }
}

fn shard(record: &ShardInfo) -> Result<Shard, String> {
    if record.count == 0 || record.index >= record.count {
        return Err(format!("shard {}/{} is not a shard", record.index, record.count));
    }
    Ok(Shard { index: record.index, count: record.count })
}

/// `digits`: HdrHistogram's significant digits, 1 to 5.
fn digits(digits: u8) -> Result<u8, String> {
    match digits {
        1..=5 => Ok(digits),
        _ => Err(format!("digits: {digits} is not 1 to 5 (significant digits)")),
    }
}

/// A count, at most [`MAX_COUNT`].
fn count(field: &str, n: u64) -> Result<u64, String> {
    match n <= MAX_COUNT {
        true => Ok(n),
        false => Err(format!("{field}: {n} is more than a saved run can count (2^53)")),
    }
}

fn at_least_one(field: &str, n: usize) -> Result<usize, String> {
    match n {
        0 => Err(format!("{field}: 0 (at least 1)")),
        n => count(field, n as u64).map(|_| n),
    }
}

fn errors(field: &str, e: &Errors) -> Result<Errors, String> {
    for n in [e.connect, e.read, e.write, e.status, e.timeout, e.unsent, e.stopped] {
        count(field, n)?;
    }
    Ok(*e)
}

fn outcomes(field: &str, codes: &std::collections::BTreeMap<u16, u64>) -> Result<Outcomes, String> {
    let mut outcomes = Outcomes::default();
    for (&status, &n) in codes {
        if !(100..=999).contains(&status) {
            return Err(format!("{field}: {status} is not a status code"));
        }
        outcomes.add(Outcome::Http(status), count(field, n)?);
    }
    Ok(outcomes)
}

/// `targets_order`.
fn targets_order(name: &str) -> Result<TargetsOrder, String> {
    TargetsOrder::parse(name).ok_or_else(|| format!("targets_order: unknown order '{name}'"))
}

/// A share of a thread's time, 0 to 1.
fn share(field: &str, value: f64) -> Result<f64, String> {
    match (0.0..=1.0).contains(&value) {
        true => Ok(value),
        false => Err(format!("{field}: {} is not a share (0 to 1)", shown(value))),
    }
}

/// A rate of a plan, requests per second.
fn rate(field: &str, value: f64) -> Result<f64, String> {
    match value.is_finite() && value >= 0.0 {
        true => Ok(value),
        false => Err(format!("{field}: {} is not a rate", shown(value))),
    }
}

/// A time of at most [`MAX_SECONDS`].
fn seconds(field: &str, value: f64) -> Result<Duration, String> {
    match (0.0..=MAX_SECONDS).contains(&value) {
        true => Ok(Duration::from_secs_f64(value)),
        false => Err(format!("{field}: {} is not a duration in seconds", shown(value))),
    }
}

/// A wall-clock time in Unix seconds, at most [`MAX_UNIX_SECONDS`].
fn unix_time(field: &str, value: f64) -> Result<SystemTime, String> {
    match (0.0..=MAX_UNIX_SECONDS).contains(&value) {
        true => Ok(UNIX_EPOCH + Duration::from_secs_f64(value)),
        false => Err(format!("{field}: {} is not a time (Unix seconds)", shown(value))),
    }
}

/// `value` for a message: in full when it is of a size a run has, else
/// in scientific notation (not 300 digits).
fn shown(value: f64) -> String {
    match value.abs() < 1e12 {
        true => value.to_string(),
        false => format!("{value:e}"),
    }
}

/// A histogram as `hist` encodes it, of `-D digits`, counting at most
/// [`MAX_COUNT`] values.
pub fn decode(encoded: &str, digits: u8) -> Result<Histogram<u64>, String> {
    let histogram = decode_any(encoded)?;
    if histogram.sigfig() != digits {
        return Err(format!(
            "a histogram has {} significant digits where the report says -D {digits}",
            histogram.sigfig()
        ));
    }
    if histogram.len() > MAX_COUNT {
        return Err(format!("a histogram counts {} values, more than 2^53", histogram.len()));
    }
    Ok(histogram)
}

/// A histogram in HdrHistogram's compressed base64 form, ready to be
/// added to (it grows to take any value).
pub fn decode_any(encoded: &str) -> Result<Histogram<u64>, String> {
    let bytes = STANDARD.decode(encoded).map_err(|e| format!("a histogram is not base64 ({e})"))?;
    let mut histogram: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("a histogram cannot be decoded ({e:?})"))?;
    histogram.auto(true);
    Ok(histogram)
}

fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|e| format!("start_at '{text}' is not a time ({e})"))?;
    let unix = at.unix_timestamp();
    if !(0..=MAX_UNIX_SECONDS as i64).contains(&unix) {
        return Err(format!("start_at '{text}' is not a time of a run"));
    }
    Ok(SystemTime::from(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BenchConfig, Mode};
    use crate::report::{json, ReportOptions};
    use crate::target::Target;

    fn paced_config() -> BenchConfig {
        BenchConfig {
            threads: 2,
            connections: 8,
            duration: Some(Duration::from_secs(3)),
            mode: Mode::Paced(PlanSpec {
                rate: 100.0,
                stages: vec![Stage { duration: Duration::from_secs(3), rate: 300.0 }],
                arrival: Arrival::Poisson,
            }),
            warmup: Duration::from_millis(500),
            seed: 42,
            shard: Shard { index: 1, count: 3 },
            start_at: Some(UNIX_EPOCH + Duration::new(1_795_428_000, 250_000_000)),
            ..BenchConfig::new(Target::parse("http://10.0.0.1:8080/x").unwrap())
        }
    }

    fn measured() -> RunResult {
        let mut total = Stats::new(3);
        for (i, status) in [200, 200, 503].into_iter().enumerate() {
            total.response(Outcome::Http(status));
            total.corrected.record(1000 + i as u64 * 700).unwrap();
            total.uncorrected.record(900).unwrap();
            total.lag.record(12).unwrap();
        }
        total.bytes = 4321;
        total.errors.timeout = 2;
        total.errors.unsent = 4;
        total.errors.stopped = 1;
        total.unsent_wait.record_n(2_500, 4).unwrap();
        total.phases.connect.record_n(80, 2).unwrap();
        total.phases.tls_handshake.record(1_900).unwrap();
        total.phases.first_byte.record_n(850, 3).unwrap();
        total.error_causes.insert("timeout: no answer".into(), 2);
        total.rate_samples = vec![10.0, 20.5];
        total.warmup = Warmup { requests: 7, errors: 1 };
        total.generator = Generator {
            waiting_for_connection_us: 1200,
            waiting_for_generator_us: 35,
            busiest_thread_cpu: 0.5,
            busiest_thread_work: 0.375,
            thread_cpu_wait: 0.125,
        };
        total.stages = vec![StageStats { requests: 3, corrected: total.corrected.clone() }];
        RunResult {
            threads: vec![ThreadTotals::from(&total), ThreadTotals::default()],
            total,
            runtime: Duration::from_micros(3_000_123),
            interrupted: Some(Interruption::Terminate),
            script_stopped: false,
            series: Vec::new(),
            series_interval: Duration::from_millis(250),
            measured_from: UNIX_EPOCH + Duration::new(1_795_428_000, 750_000_000),
            course: course_of_two(),
        }
    }

    /// Two periods of 137.5 ms, of a Poisson plan.
    fn course_of_two() -> Course {
        let period = |latency_us: u64, chi2: f64| {
            let mut period = CoursePeriod { sent: 9, ended: 8, ..CoursePeriod::default() };
            period.corrected.record_n(latency_us, 8).unwrap();
            (period.arrival_chi2, period.arrival_dof) = (chi2, 12);
            period
        };
        Course {
            period: Duration::from_micros(137_500),
            periods: vec![period(1200, 10.25), period(5000, 0.0)],
        }
    }

    fn saved_json(cfg: &BenchConfig, result: &RunResult) -> String {
        let mut text = Vec::new();
        let run = Description::of(cfg);
        let report = json::final_report(&run, &ReportOptions::default(), result, &[]).unwrap();
        json::write_line(&mut text, &report).unwrap();
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn a_saved_run_reads_back_as_it_was() {
        let (cfg, result) = (paced_config(), measured());
        let saved = parse("run.json", &saved_json(&cfg, &result)).unwrap();
        let (settings, back) = (&saved.description, &saved.result);
        assert_eq!(settings.url, "http://10.0.0.1:8080/x");
        assert_eq!(
            (settings.threads, settings.connections, settings.instance_connections),
            (2, 8, 3)
        );
        assert_eq!(settings.shard, cfg.shard);
        assert_eq!(settings.start_at, cfg.start_at);
        assert_eq!(
            settings.plan(),
            Some(match &cfg.mode {
                Mode::Paced(spec) => spec,
                Mode::ClosedLoop => unreachable!(),
            })
        );
        assert_eq!(
            (settings.warmup, settings.seed, settings.duration),
            (cfg.warmup, 42, cfg.duration)
        );
        let (a, b) = (&result.total, &back.total);
        assert_eq!(a.corrected, b.corrected);
        assert_eq!(a.uncorrected, b.uncorrected);
        assert_eq!(a.lag, b.lag);
        assert_eq!(a.unsent_wait, b.unsent_wait);
        assert_eq!(a.phases, b.phases);
        assert_eq!((a.requests, a.bytes, a.errors), (b.requests, b.bytes, b.errors));
        assert_eq!((&a.outcomes, &a.error_causes), (&b.outcomes, &b.error_causes));
        assert_eq!((&a.rate_samples, a.warmup), (&b.rate_samples, b.warmup));
        assert_eq!(a.generator, b.generator);
        assert_eq!(b.stages.len(), 1);
        assert_eq!(b.stages[0].corrected, a.stages[0].corrected);
        assert_eq!(back.threads, result.threads);
        assert_eq!(back.interrupted, result.interrupted);
        assert_eq!(back.runtime, result.runtime);
        assert_eq!(back.course, result.course);
        // Unix seconds as a double: within a microsecond.
        let drift = back
            .measured_from
            .duration_since(result.measured_from)
            .unwrap_or_else(|e| e.duration());
        assert!(drift < Duration::from_micros(1), "{drift:?}");
        assert!(saved.caveats.is_empty());
    }

    /// A result of schema 1 had the waits of its unsent requests in its
    /// corrected histogram: it still reads, and its reports say so.
    #[test]
    fn a_result_of_schema_1_reads_with_a_caveat() {
        let line = saved_json(&paced_config(), &measured());
        let old = line
            .replace("\"schema_version\":2", "\"schema_version\":1")
            .replace(",\"stopped\":1", "")
            .replace(",\"stopped\":0", "");
        let old = remove_field(&old, "unsent_wait_hist");
        let saved = parse("old.json", &old).unwrap();
        assert_eq!(saved.result.total.errors.unsent, 4);
        assert_eq!(saved.result.total.errors.stopped, 0);
        assert!(saved.result.total.unsent_wait.is_empty());
        assert_eq!(saved.caveats.len(), 1);
        assert!(saved.caveats[0].contains("includes the waits of its 4 unsent requests"));
    }

    /// A file saved before pace measured the phases reads with none.
    #[test]
    fn a_file_without_phases_reads_with_empty_ones() {
        let line = remove_field(&saved_json(&paced_config(), &measured()), "phases");
        let back = parse("old.json", &line).unwrap().result.total.phases;
        assert!(back.connect.is_empty() && back.tls_handshake.is_empty());
        assert!(back.first_byte.is_empty());
    }

    /// A file saved before pace told work from spinning: its CPU share
    /// stands for the work, as it did then, and no wait for the CPU is
    /// known.
    #[test]
    fn an_older_generator_record_reads_its_cpu_share_as_work() {
        let mut v: serde_json::Value =
            serde_json::from_str(&saved_json(&paced_config(), &measured())).unwrap();
        let generator = v["generator"].as_object_mut().unwrap();
        generator.remove("busiest_thread_work_share").unwrap();
        generator.remove("thread_cpu_wait_share").unwrap();
        let back = parse("old.json", &v.to_string()).unwrap().result.total.generator;
        assert_eq!((back.busiest_thread_work, back.thread_cpu_wait), (0.5, 0.0));
    }

    /// `text` without the JSON field `name` (a string value).
    fn remove_field(text: &str, name: &str) -> String {
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v.as_object_mut().unwrap().remove(name).expect("the field is there");
        v.to_string()
    }

    #[test]
    fn what_is_not_a_whole_saved_run_is_refused() {
        let line = saved_json(&paced_config(), &measured());
        let period = line.replace("\"report\":\"final\"", "\"report\":\"period\"");
        for (text, says) in [
            ("", "has no final report"),
            ("{}", "line 1: not a report of pace -e (missing field"),
            ("not json", "line 1: not a report of pace -e"),
            (&format!("{line}{line}"), "line 2: more after the final report"),
            (&line.replace("\"lag_hist\"", "\"gal_hist\""), "missing field `lag_hist`"),
            (&line.replace("\"digits\":3", "\"digits\":2"), "the report says -D 2"),
            (&period, "line 1: a period without its window"),
        ] {
            let Err(message) = parse("x.json", text) else { panic!("{text}") };
            assert!(message.contains(says), "{message}");
        }
    }

    /// `line` with the JSON field at `path` (object keys) set to `value`.
    fn with(line: &str, path: &[&str], value: serde_json::Value) -> String {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (last, parents) = path.split_last().unwrap();
        let mut at = &mut v;
        for key in parents {
            at = &mut at[*key];
        }
        at[*last] = value;
        v.to_string()
    }

    /// A damaged or hostile file is refused naming the field, never a
    /// panic or a figure that wraps around (issue 33).
    #[test]
    fn figures_out_of_range_are_refused_naming_the_field() {
        use serde_json::json;
        let line = saved_json(&paced_config(), &measured());
        for (path, value, says) in [
            (&["digits"][..], json!(200), "digits: 200 is not 1 to 5"),
            (&["digits"], json!(0), "digits: 0 is not 1 to 5"),
            (&["measured_from_unix_s"], json!(1e18), "measured_from_unix_s: 1e18 is not a time"),
            (&["measured_from_unix_s"], json!(-1.0), "measured_from_unix_s: -1"),
            (&["requests"], json!(u64::MAX - 10), "requests: 18446744073709551605 is more than"),
            (&["bytes"], json!(1u64 << 60), "bytes: 1152921504606846976 is more than"),
            (&["errors", "timeout"], json!(1u64 << 54), "errors: 18014398509481984 is more"),
            (&["elapsed_s"], json!(1e300), "elapsed_s: 1e300 is not a duration"),
            (&["timeout_s"], json!(-2.0), "timeout_s: -2 is not a duration"),
            (&["generator", "busiest_thread_cpu_share"], json!(7.0), "is not a share"),
            (&["threads"], json!(0), "threads: 0 (at least 1)"),
            (&["status_codes"], json!({"42": 1}), "status_codes: 42 is not a status code"),
            (&["rate_samples"], json!([1.0, -5.0]), "rate_samples: -5 is not a rate"),
            (&["start_at"], json!("9999-12-31T23:59:59Z"), "is not a time of a run"),
            (&["shard", "index"], json!(3), "shard 3/3 is not a shard"),
            (&["course", "period_s"], json!(0.0), "course.period_s: 0"),
            (&["course", "period_s"], json!(-1.0), "course.period_s: -1 is not a duration"),
            (
                &["course", "periods"],
                json!([{"hist": "", "sent": 1, "ended": 1, "arrival_chi2": -1.0}]),
                "course.periods.arrival_chi2: -1 is not a chi-square",
            ),
            (&["course", "periods"], json!([{"hist": "!", "sent": 1, "ended": 1}]), "not base64"),
        ] {
            let text = with(&line, path, value);
            let Err(message) = parse("x.json", &text) else { panic!("{path:?} accepted") };
            assert!(message.starts_with("x.json: "), "{message}");
            assert!(message.contains(says), "{path:?}: {message}");
        }
    }

    /// A file is read a line at a time, each line and the file bounded:
    /// a huge file without a line break is refused after one line's worth,
    /// not read whole.
    #[test]
    fn a_file_too_large_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse.json");
        let file = std::fs::File::create(&path).unwrap();
        // A sparse file: its size costs no disk, only a reader that reads it.
        file.set_len(MAX_FILE + 100).unwrap();
        let Err(message) = read(&path, None) else { panic!("accepted") };
        assert!(message.contains("line 1 is longer than 64.00M"), "{message}");
        // Lines of text, too many of them.
        std::fs::write(&path, "{}\n".repeat(100)).unwrap();
        let Err(message) = read_lines(&path, 10, 250) else { panic!("accepted") };
        assert!(message.contains("is larger than 250.00"), "{message}");
    }
}
