//! The JSON report (`-e/--json`): one object per report, on one line. The
//! schema is documented field by field in `docs/json.md`; bump
//! [`SCHEMA_VERSION`] when a field changes meaning or goes away (adding one
//! does not).
//!
//! It keeps the yicwang wrk2 fork's fields with their meaning (`errors`
//! with `connect read write timeout http_error`, `total_req`, `rps`,
//! `rx_bps`, `hist`), including `rx_bps` as the fork's formatted string
//! (`"17.03KB"`), so programs written for the fork keep working; every
//! figure is also there as a plain number with its unit in its name.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

use super::hlog::encode_compressed;
use super::reached::{OriginReach, Reached};
use super::spectrum::{self, value_at_percentile};
use super::text::{per_second, WRK2_PERCENTILES};
use super::{diagnose, plan, series, targets};
use crate::config::{BenchConfig, Mode};
use crate::plan::Arrival;
use crate::provenance::{masked_url, Provenance};
use crate::reach::Family;
use crate::slo;
use crate::stats::{Errors, Interval, RunResult, Stats};
use crate::units::format_binary;

/// Version of the schema in `docs/json.md`.
pub const SCHEMA_VERSION: u32 = 2;

/// One report: a period of `-p`, or the whole run.
#[derive(Debug, Serialize)]
pub struct Report {
    pub schema_version: u32,
    /// `"period"` or `"final"`.
    pub report: &'static str,
    // The yicwang wrk2 fork's fields.
    pub errors: ErrorCounts,
    pub total_req: u64,
    pub rps: f64,
    /// The fork's formatted bytes per second (binary units), a string.
    pub rx_bps: String,
    /// The corrected latency histogram, compressed V2, base64.
    pub hist: String,
    // The run.
    pub url: String,
    /// `"closed_loop"` (wrk) or `"paced"` (wrk2 `-R`).
    pub mode: &'static str,
    pub threads: usize,
    pub connections: usize,
    /// `"http/1.1"`, `"h2"` or `"h2c"`.
    pub protocol: &'static str,
    /// `--streams` (1 over HTTP/1.1).
    pub streams: usize,
    /// `--proxy`: the proxy the run went through; absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<crate::proxy::ProxyReport>,
    /// Where the connections went when not to the origin's host and port
    /// (`--unix-socket`, `--connect-to`): `unix:/path` or `host:port`; the
    /// first origin's (each origin's is in `origins`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected_to: Option<String>,
    /// Each origin: its connections, where they went, and whether through
    /// the proxy's CONNECT tunnel.
    pub origins: Vec<OriginReach>,
    /// `-4`/`-6`: `"ipv4"` or `"ipv6"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_family: Option<&'static str>,
    pub digits: u8,
    pub target_requests_per_sec: Option<f64>,
    /// None: open-ended, until `-n` requests are done.
    pub duration_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
    // What this report covers.
    pub elapsed_s: f64,
    pub requests: u64,
    pub bytes: u64,
    pub requests_per_sec: f64,
    pub bytes_per_sec: f64,
    pub status_codes: BTreeMap<u16, u64>,
    pub error_causes: BTreeMap<String, u64>,
    /// Times the script's `request()` returned nil (nothing was sent).
    pub nil_requests: u64,
    pub latency: Latency,
    pub schedule_lag: Summary,
    /// The uncorrected latency histogram, encoded as `hist`.
    pub uncorrected_hist: String,
    /// The schedule lag histogram, encoded as `hist`.
    pub lag_hist: String,
    /// How long the unsent requests had waited when they were given up.
    pub unsent_wait: Summary,
    /// Their histogram, encoded as `hist`.
    pub unsent_wait_hist: String,
    /// Each thread's requests per second over each 100 ms, the samples of
    /// the `Req/Sec` row.
    pub rate_samples: Vec<f64>,
    /// The whole run only.
    #[serde(flatten)]
    pub run: Option<RunOnly>,
}

/// Where a period lies in the run.
#[derive(Debug, Serialize)]
pub struct Period {
    /// 0 for the first period.
    pub index: u64,
    pub start_s: f64,
    pub length_s: f64,
}

/// The fork's `errors` object, every key always present.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct ErrorCounts {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub timeout: u64,
    /// Responses with status > 399.
    pub http_error: u64,
    /// Requests of the plan due before the end that were never sent.
    pub unsent: u64,
    /// Requests in flight when the run was stopped at once.
    pub stopped: u64,
}

impl From<&Errors> for ErrorCounts {
    fn from(e: &Errors) -> Self {
        ErrorCounts {
            connect: e.connect,
            read: e.read,
            write: e.write,
            timeout: e.timeout,
            http_error: e.status,
            unsent: e.unsent,
            stopped: e.stopped,
        }
    }
}

/// Latency from the intended send time (corrected, the headline) and from
/// the actual send time (uncorrected).
#[derive(Debug, Serialize)]
pub struct Latency {
    pub corrected: Summary,
    pub uncorrected: Summary,
}

/// A histogram's statistics, in microseconds; `null` figures when it is
/// empty. Mean and stdev as wrk2 computes them (bucket medians,
/// population stdev); percentiles as HdrHistogram's
/// `value_at_percentile` (the highest value of the bucket).
#[derive(Debug, Serialize)]
pub struct Summary {
    pub count: u64,
    pub min_us: Option<u64>,
    pub max_us: Option<u64>,
    pub mean_us: Option<f64>,
    pub stdev_us: Option<f64>,
    pub percentiles_us: Percentiles,
}

/// `{"50": 1020, "99.9": 2047}`, in the order of the percentile list.
#[derive(Debug)]
pub struct Percentiles(pub Vec<(f64, Option<u64>)>);

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (percentile, value) in &self.0 {
            // f64's Display is the shortest exact form: 50, 99.9, 99.999.
            map.serialize_entry(&percentile.to_string(), value)?;
        }
        map.end()
    }
}

/// Fields of the final report only.
#[derive(Debug, Serialize)]
pub struct RunOnly {
    /// Paced mode: requests due before the end that were never sent.
    pub unsent: u64,
    /// Who wrote the report: `pace` and its version.
    pub generated_by: String,
    /// How the run was made, to make it again (null for a merge).
    pub provenance: Option<Provenance>,
    /// When the measured part of the run began (after any warm-up), by
    /// the wall clock, in Unix seconds: `elapsed_s` counts from there.
    pub measured_from_unix_s: f64,
    /// `--timeout`.
    pub timeout_s: f64,
    /// `"SIGINT"` or `"SIGTERM"` when a signal ended the run early.
    pub interrupted_by: Option<&'static str>,
    /// The script stopped every thread (`thread:stop()`) before the end.
    pub stopped_by_script: bool,
    pub per_thread: Vec<ThreadCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<TimeSeries<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_timeseries: Option<TimeSeries<Vec<u64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<LatencyBins>,
    /// This instance's part of a plan several send together.
    pub shard: ShardInfo,
    /// `--start-at`: when the plan started, RFC 3339 (null: at once).
    pub start_at: Option<String>,
    /// The same in Unix seconds.
    pub start_at_unix_s: Option<f64>,
    /// Paced mode: the plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanInfo>,
    /// What the warm-up sent, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<WarmupInfo>,
    /// Per stage of `--stages`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageReport>,
    /// Per target of a targets file of several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetReport>,
    /// With `--slo`: each objective, its measured value and whether it held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<Vec<slo::Verdict>>,
    /// Why paced sends were late, and how busy the threads were.
    pub generator: GeneratorInfo,
    /// HTTP/2: the lowest concurrent-stream limit a server set below
    /// `--streams` (null: none did).
    pub streams_allowed: Option<u32>,
    /// HTTP/2: requests a GOAWAY left unprocessed, sent again.
    pub retried_after_goaway: u64,
    /// The report's `Warning:` lines ([`diagnose`]); empty in closed loop.
    pub warnings: Vec<diagnose::Diagnostic>,
}

/// When `result`'s run began sending: its measured part began after the
/// warm-up.
pub fn started_at(cfg: &BenchConfig, result: &RunResult) -> SystemTime {
    result.measured_from.checked_sub(cfg.warmup).unwrap_or(result.measured_from)
}

/// [`crate::stats::Generator`], for a merge to add up.
#[derive(Debug, Serialize)]
pub struct GeneratorInfo {
    pub waiting_for_connection_us: u64,
    pub waiting_for_generator_us: u64,
    pub busiest_thread_cpu_share: f64,
    pub busiest_thread_work_share: f64,
    pub thread_cpu_wait_share: f64,
}

/// The plan of a paced run: enough to repeat it.
#[derive(Debug, Serialize)]
pub struct PlanInfo {
    /// `"constant"` (evenly spaced) or `"poisson"`.
    pub arrival: &'static str,
    /// The seed of Poisson arrivals.
    pub seed: Option<u64>,
    /// Requests per second at the start (`-R`; where stages start from).
    pub start_rate: f64,
    pub stages: Vec<StageSpec>,
}

#[derive(Debug, Serialize)]
pub struct ShardInfo {
    pub index: usize,
    pub count: usize,
    /// The connections this instance opened (of `connections`).
    pub connections: usize,
}

#[derive(Debug, Serialize)]
pub struct StageSpec {
    pub duration_s: f64,
    pub rate: f64,
}

#[derive(Debug, Serialize)]
pub struct WarmupInfo {
    pub duration_s: f64,
    pub requests: u64,
    pub errors: u64,
}

/// One stage's line of the text report.
#[derive(Debug, Serialize)]
pub struct StageReport {
    pub index: usize,
    /// From the end of the warm-up.
    pub start_s: f64,
    pub duration_s: f64,
    pub from_rate: f64,
    pub to_rate: f64,
    pub target_rate: f64,
    pub achieved_rate: f64,
    pub requests: u64,
    pub corrected_p50_us: Option<u64>,
    pub corrected_p99_us: Option<u64>,
    /// The stage's corrected latency histogram, encoded as `hist`.
    pub hist: String,
}

/// One target's line of the text report, with its whole label and its
/// corrected histogram.
#[derive(Debug, Serialize)]
pub struct TargetReport {
    pub index: usize,
    /// `METHOD scheme://host:port/path`.
    pub target: String,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub corrected_p50_us: Option<u64>,
    pub corrected_p99_us: Option<u64>,
    pub errors: u64,
    /// Due in the run and never sent (paced runs; in random order, the
    /// target's share of them).
    pub unsent: u64,
    pub status_codes: BTreeMap<u16, u64>,
    /// The target's corrected latency histogram, encoded as `hist`.
    pub hist: String,
}

/// One thread's totals.
#[derive(Debug, Serialize)]
pub struct ThreadCounts {
    pub thread: usize,
    pub requests: u64,
    pub bytes: u64,
    pub errors: ErrorCounts,
}

/// Completed requests per slot (`--timeseries`), or per thread and slot
/// (`--thread-timeseries`).
#[derive(Debug, Serialize)]
pub struct TimeSeries<T> {
    pub interval_ms: f64,
    pub requests: Vec<T>,
}

/// `--histogram`: the corrected histogram's non-empty buckets as
/// `[lowest value in us, count]` pairs.
#[derive(Debug)]
pub struct LatencyBins(pub Vec<(u64, u64)>);

impl Serialize for LatencyBins {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("bin_width_us", &1)?;
        map.serialize_entry("bins", &Pairs(&self.0))?;
        map.end()
    }
}

/// `[[a, b], ...]`.
struct Pairs<'a>(&'a [(u64, u64)]);

impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (value, count) in self.0 {
            seq.serialize_element(&[value, count])?;
        }
        seq.end()
    }
}

/// The report of one `-p` period.
pub fn period_report(cfg: &BenchConfig, interval: &Interval) -> io::Result<Report> {
    let mut report = common_fields(cfg, "period", &interval.stats, interval.length)?;
    report.period = Some(Period {
        index: interval.index,
        start_s: interval.start.as_secs_f64(),
        length_s: interval.length.as_secs_f64(),
    });
    Ok(report)
}

/// The report of the whole run.
pub fn final_report(cfg: &BenchConfig, result: &RunResult) -> io::Result<Report> {
    let mut report = common_fields(cfg, "final", &result.total, result.runtime)?;
    let outputs = &cfg.outputs;
    let slots = series::slot_count(result, cfg.duration);
    let per_thread_series = series::per_thread(result, slots);
    let interval_ms = result.series_interval.as_micros() as f64 / 1000.0;
    report.run = Some(RunOnly {
        unsent: result.total.errors.unsent,
        generated_by: format!("pace {}", env!("CARGO_PKG_VERSION")),
        provenance: cfg.provenance.as_ref().map(|p| p.with_start(started_at(cfg, result))),
        measured_from_unix_s: unix_seconds(result.measured_from),
        timeout_s: cfg.timeout.as_secs_f64(),
        interrupted_by: result.interrupted.map(|signal| signal.name()),
        stopped_by_script: result.script_stopped,
        per_thread: result
            .threads
            .iter()
            .enumerate()
            .map(|(thread, stats)| ThreadCounts {
                thread,
                requests: stats.requests,
                bytes: stats.bytes,
                errors: ErrorCounts::from(&stats.errors),
            })
            .collect(),
        timeseries: outputs.timeseries.map(|_| TimeSeries {
            interval_ms,
            requests: series::totals(&per_thread_series, slots),
        }),
        thread_timeseries: outputs
            .thread_timeseries
            .then(|| TimeSeries { interval_ms, requests: per_thread_series.clone() }),
        latency_histogram: outputs
            .histogram
            .then(|| LatencyBins(series::bins(&result.total.corrected).collect())),
        shard: ShardInfo {
            index: cfg.shard.index,
            count: cfg.shard.count,
            connections: cfg.connections_of_instance(),
        },
        start_at: cfg.start_at.map(crate::units::format_rfc3339),
        start_at_unix_s: cfg.start_at.map(unix_seconds),
        plan: plan_info(cfg),
        warmup: (!cfg.warmup.is_zero()).then_some(WarmupInfo {
            duration_s: cfg.warmup.as_secs_f64(),
            requests: result.total.warmup.requests,
            errors: result.total.warmup.errors,
        }),
        stages: stage_reports(cfg, result)?,
        targets: target_reports(result)?,
        slo: (!cfg.slo.is_empty()).then(|| slo::verdicts(cfg, result)),
        generator: GeneratorInfo {
            waiting_for_connection_us: result.total.generator.waiting_for_connection_us,
            waiting_for_generator_us: result.total.generator.waiting_for_generator_us,
            busiest_thread_cpu_share: result.total.generator.busiest_thread_cpu,
            busiest_thread_work_share: result.total.generator.busiest_thread_work,
            thread_cpu_wait_share: result.total.generator.thread_cpu_wait,
        },
        streams_allowed: result.total.http2.stream_limit,
        retried_after_goaway: result.total.http2.retried_after_goaway,
        warnings: diagnose::diagnose(cfg, result),
    });
    Ok(report)
}

/// Seconds since the Unix epoch (0 before it).
fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH).map_or(0.0, |since| since.as_secs_f64())
}

fn plan_info(cfg: &BenchConfig) -> Option<PlanInfo> {
    let Mode::Paced(spec) = &cfg.mode else { return None };
    let poisson = spec.arrival == Arrival::Poisson;
    Some(PlanInfo {
        arrival: if poisson { "poisson" } else { "constant" },
        seed: poisson.then_some(cfg.seed),
        start_rate: spec.rate,
        stages: spec
            .stages
            .iter()
            .map(|s| StageSpec { duration_s: s.duration.as_secs_f64(), rate: s.rate })
            .collect(),
    })
}

fn target_reports(result: &RunResult) -> io::Result<Vec<TargetReport>> {
    let measured = &result.total.targets;
    targets::target_rows(result)
        .into_iter()
        .zip(measured)
        .enumerate()
        .map(|(index, (row, target))| {
            Ok(TargetReport {
                index,
                target: row.label,
                requests: row.requests,
                requests_per_sec: row.rate,
                corrected_p50_us: row.p50_us,
                corrected_p99_us: row.p99_us,
                errors: row.errors,
                unsent: row.unsent,
                status_codes: row.statuses.into_iter().collect(),
                hist: encode_compressed(&target.corrected)?,
            })
        })
        .collect()
}

fn stage_reports(cfg: &BenchConfig, result: &RunResult) -> io::Result<Vec<StageReport>> {
    let Mode::Paced(spec) = &cfg.mode else { return Ok(Vec::new()) };
    let stages = &result.total.stages;
    plan::stage_rows(cfg, spec, result)
        .into_iter()
        .map(|row| {
            let hist = match stages.get(row.index) {
                Some(stage) => encode_compressed(&stage.corrected)?,
                None => encode_compressed(&crate::stats::latency_histogram(cfg.digits))?,
            };
            Ok(StageReport {
                index: row.index,
                start_s: row.start.as_secs_f64(),
                duration_s: row.duration.as_secs_f64(),
                from_rate: row.from_rate,
                to_rate: row.to_rate,
                target_rate: row.target_rate,
                achieved_rate: row.achieved_rate,
                requests: row.requests,
                corrected_p50_us: row.p50_us,
                corrected_p99_us: row.p99_us,
                hist,
            })
        })
        .collect()
}

/// Writes `report` as one line.
pub fn write_line(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    serde_json::to_writer(&mut *out, report)?;
    writeln!(out)
}

/// The fields periods and the whole run have in common: `stats` measured
/// over `elapsed`.
fn common_fields(
    cfg: &BenchConfig,
    kind: &'static str,
    stats: &Stats,
    elapsed: Duration,
) -> io::Result<Report> {
    // As the text report: whole microseconds, so the figures agree.
    let seconds = elapsed.as_micros() as f64 / 1_000_000.0;
    let requests_per_sec = per_second(stats.requests, seconds);
    let bytes_per_sec = per_second(stats.bytes, seconds);
    let percentiles = cfg.outputs.percentiles.as_deref().unwrap_or(&WRK2_PERCENTILES);
    let mode = match cfg.mode {
        Mode::ClosedLoop => "closed_loop",
        Mode::Paced(_) => "paced",
    };
    let target = cfg.target_rate();
    let reached = Reached::of(cfg);
    Ok(Report {
        schema_version: SCHEMA_VERSION,
        report: kind,
        errors: ErrorCounts::from(&stats.errors),
        total_req: stats.requests,
        rps: requests_per_sec,
        rx_bps: format!("{}B", format_binary(bytes_per_sec)),
        hist: encode_compressed(&stats.corrected)?,
        url: masked_url(&cfg.target.url),
        mode,
        threads: cfg.threads,
        connections: cfg.connections,
        protocol: cfg.protocol(),
        streams: cfg.streams,
        proxy: reached.proxy.clone(),
        connected_to: reached.origins.first().and_then(|origin| origin.connected_to.clone()),
        ip_family: reached.family.map(|family| match family {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        }),
        origins: reached.origins,
        digits: cfg.digits,
        target_requests_per_sec: target,
        duration_s: cfg.duration.map(|d| d.as_secs_f64()),
        requests_limit: cfg.requests,
        period: None,
        elapsed_s: seconds,
        requests: stats.requests,
        bytes: stats.bytes,
        requests_per_sec,
        bytes_per_sec,
        status_codes: stats.statuses.clone(),
        error_causes: stats.error_causes.clone(),
        nil_requests: stats.nil_requests,
        latency: Latency {
            corrected: summary(&stats.corrected, percentiles),
            uncorrected: summary(&stats.uncorrected, percentiles),
        },
        schedule_lag: summary(&stats.lag, percentiles),
        uncorrected_hist: encode_compressed(&stats.uncorrected)?,
        lag_hist: encode_compressed(&stats.lag)?,
        unsent_wait: summary(&stats.unsent_wait, percentiles),
        unsent_wait_hist: encode_compressed(&stats.unsent_wait)?,
        rate_samples: stats.rate_samples.clone(),
        run: None,
    })
}

pub fn summary(h: &Histogram<u64>, percentiles: &[f64]) -> Summary {
    let recorded = !h.is_empty();
    let some_if = |value: u64| recorded.then_some(value);
    Summary {
        count: h.len(),
        min_us: some_if(h.min()),
        max_us: some_if(h.max()),
        mean_us: recorded.then(|| spectrum::mean(h)),
        stdev_us: recorded.then(|| spectrum::stddev(h)),
        percentiles_us: Percentiles(
            percentiles.iter().map(|&p| (p, some_if(value_at_percentile(h, p)))).collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanSpec;
    use crate::signals::Interruption;
    use crate::stats::{latency_histogram, ErrorKind, ThreadTotals};
    use crate::target::Target;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use hdrhistogram::serialization::Deserializer;
    use serde_json::{json, Value};

    fn config(mode: Mode) -> BenchConfig {
        BenchConfig {
            duration: Some(Duration::from_secs(2)),
            mode,
            ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap())
        }
    }

    /// Two threads: thread 0 answered 300 requests at 1..=300 us
    /// (corrected; uncorrected half of that), thread 1 answered 100 at
    /// 5 ms, 10 of them 503, and saw 2 connect errors.
    fn run() -> RunResult {
        let mut a = Stats::new(3);
        for v in 1..=300 {
            a.response(200);
            a.corrected.record(v).unwrap();
            a.uncorrected.record(v / 2 + 1).unwrap();
            a.lag.record(10).unwrap();
        }
        a.bytes = 30_000;
        let mut b = Stats::new(3);
        for i in 0..100 {
            b.response(if i < 10 { 503 } else { 200 });
            b.corrected.record(5000).unwrap();
            b.uncorrected.record(4000).unwrap();
            b.lag.record(20).unwrap();
        }
        b.bytes = 10_000;
        b.error(ErrorKind::Connect, "Connection refused");
        b.error(ErrorKind::Connect, "Connection refused");
        b.errors.unsent = 3;
        let mut total = Stats::new(3);
        total.merge(&a);
        total.merge(&b);
        RunResult {
            total,
            threads: vec![ThreadTotals::from(&a), ThreadTotals::from(&b)],
            runtime: Duration::from_secs(2),
            interrupted: None,
            script_stopped: false,
            series: vec![vec![150, 150], vec![60, 40]],
            series_interval: Duration::from_secs(1),
            measured_from: std::time::UNIX_EPOCH,
        }
    }

    fn to_value(report: &Report) -> Value {
        let mut line = Vec::new();
        write_line(&mut line, report).unwrap();
        let text = String::from_utf8(line).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "one line: {text}");
        assert!(text.ends_with('\n'));
        serde_json::from_str(&text).unwrap()
    }

    fn decode(text: &Value) -> Histogram<u64> {
        let bytes = STANDARD.decode(text.as_str().unwrap()).unwrap();
        Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap()
    }

    #[test]
    fn final_report_fields() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let result = run();
        let v = to_value(&final_report(&cfg, &result).unwrap());
        assert_eq!(v["schema_version"], 2);
        assert_eq!(v["report"], "final");
        assert_eq!(
            v["errors"],
            json!({"connect": 2, "read": 0, "write": 0, "timeout": 0, "http_error": 10, "unsent": 3,
                   "stopped": 0})
        );
        assert_eq!(v["total_req"], 400);
        assert_eq!(v["rps"], 200.0);
        assert_eq!(v["rx_bps"], "19.53KB");
        assert_eq!(v["url"], "http://127.0.0.1:8080/");
        assert_eq!(v["mode"], "paced");
        assert_eq!((v["threads"].clone(), v["connections"].clone()), (json!(2), json!(10)));
        assert_eq!(v["digits"], 3);
        assert_eq!(v["target_requests_per_sec"], 200.0);
        assert_eq!(v["duration_s"], 2.0);
        assert!(v.get("period").is_none());
        assert_eq!(v["elapsed_s"], 2.0);
        assert_eq!(v["requests"], 400);
        assert_eq!(v["bytes"], 40_000);
        assert_eq!(v["requests_per_sec"], 200.0);
        assert_eq!(v["bytes_per_sec"], 20_000.0);
        assert_eq!(v["status_codes"], json!({"200": 390, "503": 10}));
        assert_eq!(v["error_causes"], json!({"connect: Connection refused": 2}));
        assert_eq!(v["unsent"], 3);
        assert_eq!(v["errors"]["unsent"], 3);
        assert_eq!(v["interrupted_by"], Value::Null);
        assert_eq!(
            v["per_thread"],
            json!([
                {"thread": 0, "requests": 300, "bytes": 30000,
                 "errors": {"connect": 0, "read": 0, "write": 0, "timeout": 0, "http_error": 0,
                            "unsent": 0, "stopped": 0}},
                {"thread": 1, "requests": 100, "bytes": 10000,
                 "errors": {"connect": 2, "read": 0, "write": 0, "timeout": 0, "http_error": 10,
                            "unsent": 3, "stopped": 0}}
            ])
        );
        // Only what was asked for.
        for absent in ["timeseries", "thread_timeseries", "latency_histogram"] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn totals_equal_the_text_reports() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let mut result = run();
        result.runtime = Duration::from_nanos(1_999_876_543);
        let v = to_value(&final_report(&cfg, &result).unwrap());
        let mut text = Vec::new();
        super::super::text::write_report(&mut text, &cfg, &result).unwrap();
        let text = String::from_utf8(text).unwrap();
        let rps = v["rps"].as_f64().unwrap();
        let e = &v["errors"];
        for line in [
            format!("  {} requests in 2.00s, 39.06KB read\n", v["total_req"]),
            format!(
                "  Socket errors: connect {}, read {}, write {}, timeout {}, unsent {}\n",
                e["connect"], e["read"], e["write"], e["timeout"], e["unsent"]
            ),
            format!("  Non-2xx or 3xx responses: {}\n", e["http_error"]),
            format!("Requests/sec: {rps:>9.2}\n"),
            format!("Transfer/sec: {:>11}\n", v["rx_bps"].as_str().unwrap()),
        ] {
            assert!(text.contains(&line), "{line:?} not in\n{text}");
        }
        assert_eq!(v["requests_per_sec"], v["rps"]);
        assert_eq!(v["elapsed_s"], 1.999876);
    }

    #[test]
    fn warnings_and_what_they_rest_on() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let mut result = run();
        result.total.generator.waiting_for_connection_us = 1200;
        result.total.generator.waiting_for_generator_us = 30;
        result.total.generator.busiest_thread_cpu = 0.25;
        result.total.generator.busiest_thread_work = 0.125;
        result.total.generator.thread_cpu_wait = 0.0625;
        let v = to_value(&final_report(&cfg, &result).unwrap());
        assert_eq!(
            v["generator"],
            json!({"waiting_for_connection_us": 1200, "waiting_for_generator_us": 30,
                   "busiest_thread_cpu_share": 0.25, "busiest_thread_work_share": 0.125,
                   "thread_cpu_wait_share": 0.0625})
        );
        // The text report's warnings, one object each.
        let warnings = v["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 1, "{v}");
        assert_eq!(warnings[0]["code"], "unsent");
        assert_eq!(
            warnings[0]["figures"],
            json!({"unsent": 3, "wait_p50_us": null, "wait_max_us": null})
        );
        let mut text = Vec::new();
        super::super::text::write_report(&mut text, &cfg, &result).unwrap();
        let text = String::from_utf8(text).unwrap();
        let message = warnings[0]["message"].as_str().unwrap();
        assert!(text.contains(&format!("Warning: {message} [unsent]\n")), "{text}");
        // None in closed loop; the array is always there.
        let v = to_value(&final_report(&config(Mode::ClosedLoop), &result).unwrap());
        assert_eq!(v["warnings"], json!([]));
        // Not in period reports.
        let interval = Interval {
            index: 0,
            start: Duration::ZERO,
            length: Duration::from_secs(1),
            stats: result.total.clone(),
        };
        let v = to_value(&period_report(&cfg, &interval).unwrap());
        assert!(v.get("warnings").is_none() && v.get("generator").is_none());
    }

    #[test]
    fn latency_summaries_match_the_histograms() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let result = run();
        let v = to_value(&final_report(&cfg, &result).unwrap());
        let corrected = &v["latency"]["corrected"];
        assert_eq!(corrected["count"], 400);
        assert_eq!(corrected["min_us"], 1);
        assert_eq!(corrected["max_us"], result.total.corrected.max());
        let mean = corrected["mean_us"].as_f64().unwrap();
        assert_eq!(mean, spectrum::mean(&result.total.corrected));
        assert_eq!(
            corrected["stdev_us"].as_f64().unwrap(),
            spectrum::stddev(&result.total.corrected)
        );
        // wrk2's list by default, in order (serde_json's Value would sort
        // the keys), keys as typed.
        let text = serde_json::to_string(&final_report(&cfg, &result).unwrap()).unwrap();
        assert!(text.contains(
            r#""percentiles_us":{"50":200,"75":300,"90":5003,"99":5003,"99.9":5003,"99.99":5003,"99.999":5003,"100":5003}"#
        ), "{text}");
        assert_eq!(corrected["percentiles_us"]["50"], 200);
        assert_eq!(corrected["percentiles_us"]["75"], 300);
        assert_eq!(corrected["percentiles_us"]["99"], 5003);
        assert_eq!(v["latency"]["uncorrected"]["percentiles_us"]["50"], 101);
        assert_eq!(v["schedule_lag"]["percentiles_us"]["50"], 10);
        assert_eq!(v["schedule_lag"]["max_us"], 20);
        // The histograms decode to what was recorded.
        assert_eq!(decode(&v["hist"]), result.total.corrected);
        assert_eq!(decode(&v["uncorrected_hist"]), result.total.uncorrected);
    }

    #[test]
    fn custom_percentiles() {
        let mut cfg = config(Mode::ClosedLoop);
        cfg.outputs.percentiles = Some(vec![50.0, 99.9]);
        let v = to_value(&final_report(&cfg, &run()).unwrap());
        assert_eq!(v["mode"], "closed_loop");
        assert_eq!(v["target_requests_per_sec"], Value::Null);
        let keys: Vec<&String> =
            v["latency"]["uncorrected"]["percentiles_us"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["50", "99.9"]);
        assert!(v["latency"]["uncorrected"]["percentiles_us"].get("99").is_none());
    }

    #[test]
    fn empty_histograms_give_nulls() {
        let cfg = config(Mode::ClosedLoop);
        let mut result = run();
        result.total = Stats::new(3);
        let v = to_value(&final_report(&cfg, &result).unwrap());
        let lag = &v["schedule_lag"];
        assert_eq!(lag["count"], 0);
        for field in ["min_us", "max_us", "mean_us", "stdev_us"] {
            assert_eq!(lag[field], Value::Null, "{field}");
        }
        assert_eq!(lag["percentiles_us"]["99"], Value::Null);
        assert_eq!(v["rps"], 0.0);
        assert_eq!(decode(&v["hist"]).len(), 0);
    }

    #[test]
    fn wrx_outputs_on_request() {
        let mut cfg = config(Mode::ClosedLoop);
        cfg.outputs.timeseries = Some(Duration::from_secs(1));
        cfg.outputs.thread_timeseries = true;
        cfg.outputs.histogram = true;
        let mut result = run();
        result.interrupted = Some(Interruption::Interrupt);
        let v = to_value(&final_report(&cfg, &result).unwrap());
        assert_eq!(v["interrupted_by"], "SIGINT");
        assert_eq!(v["timeseries"], json!({"interval_ms": 1000.0, "requests": [210, 190]}));
        assert_eq!(
            v["thread_timeseries"],
            json!({"interval_ms": 1000.0, "requests": [[150, 150], [60, 40]]})
        );
        let histogram = &v["latency_histogram"];
        assert_eq!(histogram["bin_width_us"], 1);
        let bins = histogram["bins"].as_array().unwrap();
        assert_eq!(bins[0], json!([1, 1]));
        // 5000 us lies in a 4 us wide bucket starting at 5000.
        assert_eq!(bins.last().unwrap(), &json!([5000, 100]));
        let sum: u64 = bins.iter().map(|b| b[1].as_u64().unwrap()).sum();
        assert_eq!(sum, 400);
    }

    #[test]
    fn period_report_covers_the_period() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let mut stats = Stats::new(3);
        for _ in 0..100 {
            stats.response(200);
            stats.corrected.record(900).unwrap();
        }
        stats.bytes = 2048;
        let interval = Interval {
            index: 3,
            start: Duration::from_millis(1500),
            length: Duration::from_millis(500),
            stats,
        };
        let v = to_value(&period_report(&cfg, &interval).unwrap());
        assert_eq!(v["report"], "period");
        assert_eq!(v["period"], json!({"index": 3, "start_s": 1.5, "length_s": 0.5}));
        assert_eq!(v["elapsed_s"], 0.5);
        assert_eq!(v["total_req"], 100);
        assert_eq!(v["rps"], 200.0);
        assert_eq!(v["rx_bps"], "4.00KB");
        assert_eq!(v["latency"]["corrected"]["max_us"], 900);
        for absent in ["unsent", "interrupted_by", "per_thread"] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn digits_reach_the_encoding() {
        let mut cfg = config(Mode::ClosedLoop);
        cfg.digits = 2;
        let mut result = run();
        result.total = Stats::new(2);
        result.total.corrected = latency_histogram(2);
        result.total.corrected.record(12_345).unwrap();
        let v = to_value(&final_report(&cfg, &result).unwrap());
        assert_eq!(v["digits"], 2);
        assert_eq!(decode(&v["hist"]).sigfig(), 2);
    }
}
