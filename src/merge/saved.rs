//! A run saved with `-e` read back: the JSON (or JSON Lines, with `-p`)
//! that [`crate::report::json`] writes, turned into the measurements and
//! settings the reports are made from. Only what a report needs is read;
//! the summaries (percentiles, means) are computed again from the
//! histograms, which are exact.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde::Deserialize;

use crate::config::Shard;
use crate::plan::{Arrival, PlanSpec, Stage};
use crate::provenance::Provenance;
use crate::proxy::ProxyReport;
use crate::reach::Family;
use crate::report::reached::{OriginReach, Reached};
use crate::requests::origins::origin_name;
use crate::signals::Interruption;
use crate::stats::{
    Errors, Generator, Http2Counts, Interval, RunResult, StageStats, Stats, TargetStats,
    ThreadTotals, Warmup,
};
use crate::target::Target;

/// One saved run: how it was run and what it measured.
pub struct SavedRun {
    /// The file it came from, for messages.
    pub source: String,
    pub settings: Settings,
    pub result: RunResult,
    /// The `-p` periods, in order (none without `-p`).
    pub periods: Vec<Interval>,
    /// What the reports of it cannot make exact (a result saved by an
    /// older pace), to be said with them.
    pub caveats: Vec<String>,
}

/// The settings of a saved run that the reports and a merge need.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub url: String,
    pub threads: usize,
    /// `-c`: of all shards together.
    pub connections: usize,
    /// The connections this instance opened.
    pub instance_connections: usize,
    pub digits: u8,
    /// None: open-ended (`-n` alone).
    pub duration: Option<Duration>,
    pub requests_limit: Option<u64>,
    pub timeout: Duration,
    pub shard: Shard,
    pub start_at: Option<SystemTime>,
    /// The plan (None: closed loop).
    pub plan: Option<PlanSpec>,
    pub warmup: Duration,
    pub seed: u64,
    /// `--http2`, and `--streams`.
    pub http2: bool,
    pub streams: usize,
    /// How it reached its servers.
    pub reached: Reached,
    /// How it was made (None: not recorded, or a merge).
    pub provenance: Option<Provenance>,
}

/// Reads the run saved in `path`.
pub fn read(path: &Path) -> Result<SavedRun, String> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {source}: {}", crate::error::io_reason(&e)))?;
    parse(&source, &text)
}

/// The run of the JSON lines in `text` (`source` names it in messages).
pub fn parse(source: &str, text: &str) -> Result<SavedRun, String> {
    let mut periods = Vec::new();
    let mut last = None;
    for (number, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = || format!("{source} line {}", number + 1);
        let not_pace = |e: serde_json::Error| format!("{}: not a report of pace -e ({e})", at());
        let value: serde_json::Value = serde_json::from_str(line).map_err(not_pace)?;
        let record = Record::deserialize(&value).map_err(not_pace)?;
        if last.is_some() {
            return Err(format!("{}: more after the final report", at()));
        }
        match record.report.as_str() {
            "period" => periods.push(record.interval().map_err(|e| format!("{}: {e}", at()))?),
            "final" => last = Some((record, FinalRecord::deserialize(&value).map_err(not_pace)?)),
            other => return Err(format!("{}: unknown report kind '{other}'", at())),
        }
    }
    let Some((record, run)) = last else {
        return Err(format!("{source} has no final report (was the run cut off?)"));
    };
    let schema = record.schema_version;
    let (settings, result) = record.run(run).map_err(|e| format!("{source}: {e}"))?;
    let caveats = caveats(source, schema, &result);
    Ok(SavedRun { source: source.to_string(), settings, result, periods, caveats })
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

/// One line of `-e` output, as far as a report needs it.
#[derive(Deserialize)]
struct Record {
    schema_version: u32,
    report: String,
    url: String,
    mode: String,
    threads: usize,
    connections: usize,
    /// Absent before pace spoke HTTP/2: HTTP/1.1.
    #[serde(default = "http1")]
    protocol: String,
    #[serde(default = "one")]
    streams: usize,
    #[serde(default)]
    proxy: Option<ProxyReport>,
    #[serde(default)]
    connected_to: Option<String>,
    #[serde(default)]
    ip_family: Option<String>,
    /// Absent from files of pace before it recorded each origin.
    #[serde(default)]
    origins: Option<Vec<OriginReach>>,
    digits: u8,
    duration_s: Option<f64>,
    #[serde(default)]
    requests_limit: Option<u64>,
    #[serde(default)]
    period: Option<PeriodRecord>,
    elapsed_s: f64,
    #[serde(flatten)]
    measured: Measured,
}

/// What every report measured.
#[derive(Deserialize)]
struct Measured {
    errors: ErrorRecord,
    requests: u64,
    bytes: u64,
    status_codes: BTreeMap<String, u64>,
    error_causes: BTreeMap<String, u64>,
    nil_requests: u64,
    hist: String,
    uncorrected_hist: String,
    lag_hist: String,
    /// Absent from reports of pace before unsent waits had their own
    /// histogram (their waits were then in `hist`).
    #[serde(default)]
    unsent_wait_hist: Option<String>,
    rate_samples: Vec<f64>,
}

#[derive(Deserialize)]
struct PeriodRecord {
    index: u64,
    start_s: f64,
    length_s: f64,
}

#[derive(Deserialize, Default)]
struct ErrorRecord {
    connect: u64,
    read: u64,
    write: u64,
    timeout: u64,
    http_error: u64,
    unsent: u64,
    #[serde(default)]
    stopped: u64,
}

/// The fields of the final report only.
#[derive(Deserialize)]
struct FinalRecord {
    measured_from_unix_s: f64,
    timeout_s: f64,
    interrupted_by: Option<String>,
    stopped_by_script: bool,
    per_thread: Vec<ThreadRecord>,
    #[serde(default)]
    timeseries: Option<SeriesRecord<u64>>,
    #[serde(default)]
    thread_timeseries: Option<SeriesRecord<Vec<u64>>>,
    shard: ShardRecord,
    start_at: Option<String>,
    #[serde(default)]
    plan: Option<PlanRecord>,
    #[serde(default)]
    warmup: Option<WarmupRecord>,
    #[serde(default)]
    stages: Vec<StageRecord>,
    #[serde(default)]
    targets: Vec<TargetRecord>,
    generator: GeneratorRecord,
    #[serde(default)]
    streams_allowed: Option<u32>,
    #[serde(default)]
    retried_after_goaway: u64,
    /// Absent from files of pace before it recorded it, and from merges.
    #[serde(default)]
    provenance: Option<Provenance>,
}

fn http1() -> String {
    "http/1.1".into()
}

fn one() -> usize {
    1
}

#[derive(Deserialize)]
struct GeneratorRecord {
    waiting_for_connection_us: u64,
    waiting_for_generator_us: u64,
    busiest_thread_cpu_share: f64,
    /// Absent from files saved before pace told work from spinning: their
    /// CPU share stands for it, as it did then.
    busiest_thread_work_share: Option<f64>,
    #[serde(default)]
    thread_cpu_wait_share: f64,
}

#[derive(Deserialize)]
struct ThreadRecord {
    requests: u64,
    bytes: u64,
    errors: ErrorRecord,
}

#[derive(Deserialize)]
struct SeriesRecord<T> {
    interval_ms: f64,
    requests: Vec<T>,
}

#[derive(Deserialize)]
struct ShardRecord {
    index: usize,
    count: usize,
    connections: usize,
}

#[derive(Deserialize)]
struct PlanRecord {
    arrival: String,
    seed: Option<u64>,
    start_rate: f64,
    stages: Vec<StageSpecRecord>,
}

#[derive(Deserialize)]
struct StageSpecRecord {
    duration_s: f64,
    rate: f64,
}

#[derive(Deserialize)]
struct WarmupRecord {
    duration_s: f64,
    requests: u64,
    errors: u64,
}

#[derive(Deserialize)]
struct TargetRecord {
    target: String,
    requests: u64,
    errors: u64,
    /// Absent from files of pace before it was recorded.
    #[serde(default)]
    unsent: u64,
    status_codes: BTreeMap<String, u64>,
    hist: String,
}

impl TargetRecord {
    fn stats(&self, digits: u8) -> Result<TargetStats, String> {
        let mut stats = TargetStats::new(Arc::from(self.target.as_str()), digits);
        stats.requests = self.requests;
        stats.errors = self.errors;
        stats.unsent = self.unsent;
        stats.corrected = decode(&self.hist, digits)?;
        for (status, count) in &self.status_codes {
            let status = status.parse().map_err(|_| format!("'{status}' is not a status code"))?;
            stats.statuses.insert(status, *count);
        }
        Ok(stats)
    }
}

#[derive(Deserialize)]
struct StageRecord {
    requests: u64,
    hist: String,
}

impl Record {
    fn interval(self) -> Result<Interval, String> {
        let Some(period) = &self.period else { return Err("a period without its window".into()) };
        Ok(Interval {
            index: period.index,
            start: seconds(period.start_s)?,
            length: seconds(period.length_s)?,
            stats: self.measured.stats(self.digits)?,
        })
    }

    fn run(self, run: FinalRecord) -> Result<(Settings, RunResult), String> {
        let plan = match (self.mode.as_str(), &run.plan) {
            ("closed_loop", _) => None,
            ("paced", Some(plan)) => Some(plan.spec()?),
            ("paced", None) => return Err("a paced run without its plan".into()),
            (other, _) => return Err(format!("unknown mode '{other}'")),
        };
        let reached = self.reached(run.shard.connections)?;
        let mut stats = self.measured.stats(self.digits)?;
        stats.generator = Generator {
            waiting_for_connection_us: run.generator.waiting_for_connection_us,
            waiting_for_generator_us: run.generator.waiting_for_generator_us,
            busiest_thread_cpu: run.generator.busiest_thread_cpu_share,
            busiest_thread_work: run
                .generator
                .busiest_thread_work_share
                .unwrap_or(run.generator.busiest_thread_cpu_share),
            thread_cpu_wait: run.generator.thread_cpu_wait_share,
        };
        stats.http2 = Http2Counts {
            retried_after_goaway: run.retried_after_goaway,
            stream_limit: run.streams_allowed,
        };
        if let Some(warmup) = &run.warmup {
            stats.warmup = Warmup { requests: warmup.requests, errors: warmup.errors };
        }
        stats.stages = run
            .stages
            .iter()
            .map(|stage| {
                Ok(StageStats {
                    requests: stage.requests,
                    corrected: decode(&stage.hist, self.digits)?,
                })
            })
            .collect::<Result<_, String>>()?;
        stats.targets = (run.targets.iter())
            .map(|target| target.stats(self.digits))
            .collect::<Result<_, String>>()?;
        let start_at = run.start_at.as_deref().map(parse_rfc3339).transpose()?;
        let settings = Settings {
            url: self.url,
            threads: self.threads,
            connections: self.connections,
            instance_connections: run.shard.connections,
            digits: self.digits,
            duration: self.duration_s.map(seconds).transpose()?,
            requests_limit: self.requests_limit,
            timeout: seconds(run.timeout_s)?,
            shard: shard(&run.shard)?,
            start_at,
            plan,
            warmup: run.warmup.as_ref().map_or(Ok(Duration::ZERO), |w| seconds(w.duration_s))?,
            seed: run.plan.as_ref().and_then(|plan| plan.seed).unwrap_or(0),
            http2: self.protocol != "http/1.1",
            streams: self.streams,
            reached,
            provenance: run.provenance.clone(),
        };
        let (series, series_interval) = series(&run);
        let result = RunResult {
            total: stats,
            threads: run.per_thread.iter().map(ThreadRecord::totals).collect(),
            runtime: seconds(self.elapsed_s)?,
            interrupted: match run.interrupted_by.as_deref() {
                None => None,
                Some("SIGINT") => Some(Interruption::Interrupt),
                Some("SIGTERM") => Some(Interruption::Terminate),
                Some(other) => return Err(format!("unknown signal '{other}'")),
            },
            script_stopped: run.stopped_by_script,
            series,
            series_interval,
            measured_from: UNIX_EPOCH + seconds(run.measured_from_unix_s)?,
        };
        Ok((settings, result))
    }
}

impl Record {
    /// How the run reached its servers; from a file of pace before it
    /// recorded each origin, its URL's origin with `connections`.
    fn reached(&self, connections: usize) -> Result<Reached, String> {
        let family = match self.ip_family.as_deref() {
            None => None,
            Some("ipv4") => Some(Family::V4),
            Some("ipv6") => Some(Family::V6),
            Some(other) => return Err(format!("unknown ip_family '{other}'")),
        };
        let origins = match &self.origins {
            Some(origins) => origins.clone(),
            None => {
                let target = Target::parse(&self.url).map_err(|e| format!("{}: {e}", self.url))?;
                vec![OriginReach {
                    origin: origin_name(&target),
                    connections,
                    connected_to: self.connected_to.clone(),
                    tunnel: self.proxy.as_ref().is_some_and(|proxy| proxy.tunnel),
                }]
            }
        };
        Ok(Reached { origins, proxy: self.proxy.clone(), family })
    }
}

impl Measured {
    fn stats(self, digits: u8) -> Result<Stats, String> {
        let mut stats = Stats::new(digits);
        stats.corrected = decode(&self.hist, digits)?;
        stats.uncorrected = decode(&self.uncorrected_hist, digits)?;
        stats.lag = decode(&self.lag_hist, digits)?;
        if let Some(waits) = &self.unsent_wait_hist {
            stats.unsent_wait = decode(waits, digits)?;
        }
        stats.requests = self.requests;
        stats.bytes = self.bytes;
        stats.errors = self.errors.errors();
        for (status, count) in self.status_codes {
            let status = status.parse().map_err(|_| format!("'{status}' is not a status code"))?;
            stats.statuses.insert(status, count);
        }
        stats.error_causes = self.error_causes;
        stats.nil_requests = self.nil_requests;
        stats.rate_samples = self.rate_samples;
        Ok(stats)
    }
}

impl ErrorRecord {
    fn errors(&self) -> Errors {
        Errors {
            connect: self.connect,
            read: self.read,
            write: self.write,
            status: self.http_error,
            timeout: self.timeout,
            unsent: self.unsent,
            stopped: self.stopped,
        }
    }
}

impl ThreadRecord {
    fn totals(&self) -> ThreadTotals {
        ThreadTotals { requests: self.requests, bytes: self.bytes, errors: self.errors.errors() }
    }
}

impl PlanRecord {
    fn spec(&self) -> Result<PlanSpec, String> {
        let arrival = match self.arrival.as_str() {
            "constant" => Arrival::Constant,
            "poisson" => Arrival::Poisson,
            other => return Err(format!("unknown arrival '{other}'")),
        };
        let stages = self
            .stages
            .iter()
            .map(|s| Ok(Stage { duration: seconds(s.duration_s)?, rate: s.rate }))
            .collect::<Result<_, String>>()?;
        Ok(PlanSpec { rate: self.start_rate, stages, arrival })
    }
}

/// The run's time series per thread: `--thread-timeseries`'s, or the
/// totals of `--timeseries` as one row; none without either.
fn series(run: &FinalRecord) -> (Vec<Vec<u64>>, Duration) {
    let interval = |ms: f64| Duration::from_secs_f64(ms.max(0.0) / 1000.0);
    match (&run.thread_timeseries, &run.timeseries) {
        (Some(per_thread), _) => (per_thread.requests.clone(), interval(per_thread.interval_ms)),
        (None, Some(totals)) => (vec![totals.requests.clone()], interval(totals.interval_ms)),
        (None, None) => (Vec::new(), Duration::ZERO),
    }
}

fn shard(record: &ShardRecord) -> Result<Shard, String> {
    if record.count == 0 || record.index >= record.count {
        return Err(format!("shard {}/{} is not a shard", record.index, record.count));
    }
    Ok(Shard { index: record.index, count: record.count })
}

/// A histogram as `hist` encodes it, of `-D digits`.
pub fn decode(encoded: &str, digits: u8) -> Result<Histogram<u64>, String> {
    let histogram = decode_any(encoded)?;
    if histogram.sigfig() != digits {
        return Err(format!(
            "a histogram has {} significant digits where the report says -D {digits}",
            histogram.sigfig()
        ));
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

fn seconds(value: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value).map_err(|_| format!("{value} is not a duration"))
}

fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map(SystemTime::from)
        .map_err(|e| format!("start_at '{text}' is not a time ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BenchConfig, Mode};
    use crate::report::json;
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
            total.response(status);
            total.corrected.record(1000 + i as u64 * 700).unwrap();
            total.uncorrected.record(900).unwrap();
            total.lag.record(12).unwrap();
        }
        total.bytes = 4321;
        total.errors.timeout = 2;
        total.errors.unsent = 4;
        total.errors.stopped = 1;
        total.unsent_wait.record_n(2_500, 4).unwrap();
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
        }
    }

    fn saved_json(cfg: &BenchConfig, result: &RunResult) -> String {
        let mut text = Vec::new();
        json::write_line(&mut text, &json::final_report(cfg, result).unwrap()).unwrap();
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn a_saved_run_reads_back_as_it_was() {
        let (cfg, result) = (paced_config(), measured());
        let saved = parse("run.json", &saved_json(&cfg, &result)).unwrap();
        let (settings, back) = (&saved.settings, &saved.result);
        assert_eq!(settings.url, "http://10.0.0.1:8080/x");
        assert_eq!(
            (settings.threads, settings.connections, settings.instance_connections),
            (2, 8, 3)
        );
        assert_eq!(settings.shard, cfg.shard);
        assert_eq!(settings.start_at, cfg.start_at);
        assert_eq!(
            settings.plan.as_ref(),
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
        assert_eq!((a.requests, a.bytes, a.errors), (b.requests, b.bytes, b.errors));
        assert_eq!((&a.statuses, &a.error_causes), (&b.statuses, &b.error_causes));
        assert_eq!((&a.rate_samples, a.warmup), (&b.rate_samples, b.warmup));
        assert_eq!(a.generator, b.generator);
        assert_eq!(b.stages.len(), 1);
        assert_eq!(b.stages[0].corrected, a.stages[0].corrected);
        assert_eq!(back.threads, result.threads);
        assert_eq!(back.interrupted, result.interrupted);
        assert_eq!(back.runtime, result.runtime);
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
}
