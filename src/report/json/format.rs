//! The JSON report's format, declared once for writing (`-e`, [`super`])
//! and for reading back (`pace report`, `merge` and `compare`,
//! `crate::merge::saved`). `docs/json.md` documents it field by field.
//!
//! Reading accepts every file an earlier pace wrote: a field it did not
//! write yet has a default here (`#[serde(default)]`, an `Option`), and
//! what is computed from the histograms again (the summaries, the
//! warnings, the verdicts, the latency bins) is written, never read.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use crate::description::reached::OriginReach;
use crate::provenance::Provenance;
use crate::proxy::ProxyReport;
use crate::report::diagnose::Diagnostic;
use crate::report::validity::Validity;
use crate::slo::Verdict;
use crate::stats::Errors;

/// The kind (`"report"`) of a search's step: a final report of the
/// step's run (`pace search -e`).
pub const STEP_REPORT: &str = "step";
/// The kind of a search's own last line, which is not a report of a run.
pub const SEARCH_REPORT: &str = "search";

/// Version of the schema in `docs/json.md`.
pub const SCHEMA_VERSION: u32 = 2;

/// One report: a period of `-p`, or the whole run.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    /// `"period"` or `"final"`.
    pub report: String,
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
    pub mode: String,
    pub threads: usize,
    pub connections: usize,
    /// `"http/1.1"`, `"h2"` or `"h2c"` (absent before pace spoke HTTP/2).
    #[serde(default = "http1")]
    pub protocol: String,
    /// `--streams` (1 over HTTP/1.1).
    #[serde(default = "one")]
    pub streams: usize,
    /// `--grpc`: the method the run's calls called; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_method: Option<String>,
    /// `--grpc`: how its calls went: `unary`, `server_streaming`,
    /// `client_streaming`, `bidi_streaming`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_kind: Option<String>,
    /// Of a call that sends a stream: its messages, and the time between
    /// them (`--grpc-stream-count`, `--grpc-stream-interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_stream_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_stream_interval_us: Option<u64>,
    /// `--proxy`: the proxy the run went through; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyReport>,
    /// Where the connections went when not to the origin's host and port
    /// (`--unix-socket`, `--connect-to`): `unix:/path` or `host:port`; the
    /// first origin's (each origin's is in `origins`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_to: Option<String>,
    /// Each origin: its connections, where they went, and whether through
    /// the proxy's CONNECT tunnel (empty in files of pace before it
    /// recorded them).
    #[serde(default)]
    pub origins: Vec<OriginReach>,
    /// `-4`/`-6`: `"ipv4"` or `"ipv6"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family: Option<String>,
    pub digits: u8,
    #[serde(default)]
    pub target_requests_per_sec: Option<f64>,
    /// None: open-ended, until `-n` requests are done.
    pub duration_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
    // What this report covers.
    pub elapsed_s: f64,
    pub requests: u64,
    pub bytes: u64,
    #[serde(default)]
    pub requests_per_sec: f64,
    #[serde(default)]
    pub bytes_per_sec: f64,
    pub status_codes: BTreeMap<u16, u64>,
    /// gRPC calls by status code name (`OK`, `UNAVAILABLE`); only in gRPC
    /// runs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_codes: BTreeMap<String, u64>,
    pub error_causes: BTreeMap<String, u64>,
    /// Times the script's `request()` returned nil (nothing was sent).
    pub nil_requests: u64,
    #[serde(skip_deserializing)]
    pub latency: Latency,
    #[serde(skip_deserializing)]
    pub schedule_lag: Summary,
    /// The uncorrected latency histogram, encoded as `hist`.
    pub uncorrected_hist: String,
    /// The schedule lag histogram, encoded as `hist`.
    pub lag_hist: String,
    /// How long the unsent requests had waited when they were given up.
    #[serde(skip_deserializing)]
    pub unsent_wait: Summary,
    /// Their histogram, encoded as `hist` (absent from files of pace
    /// before unsent requests had waits of their own: their waits were
    /// then in `hist`).
    #[serde(default)]
    pub unsent_wait_hist: Option<String>,
    /// Where connections' and requests' time went: connect, TLS handshake,
    /// time to the first byte of a response (absent from files of pace
    /// before it measured them).
    #[serde(default)]
    pub phases: Option<Phases>,
    /// Of server-streaming gRPC calls: the messages they received; absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_stream: Option<GrpcStream>,
    /// Each thread's requests per second over each 100 ms, the samples of
    /// the `Req/Sec` row.
    pub rate_samples: Vec<f64>,
    /// The whole run only (read apart: see [`Report::read`]).
    #[serde(flatten, skip_deserializing)]
    pub run: Option<RunOnly>,
}

impl Report {
    /// One line of `-e` output: its report and, for the final one, the
    /// fields of the whole run (an error in those is the error, not an
    /// absence).
    pub fn read(line: &str) -> Result<Report, serde_json::Error> {
        let value: serde_json::Value = serde_json::from_str(line)?;
        let mut report = Report::deserialize(&value)?;
        if report.report == "final" || report.report == STEP_REPORT {
            report.run = Some(RunOnly::deserialize(&value)?);
        }
        Ok(report)
    }
}

fn http1() -> String {
    "http/1.1".into()
}

fn one() -> usize {
    1
}

/// Where a period lies in the run.
#[derive(Debug, Serialize, Deserialize)]
pub struct Period {
    /// 0 for the first period.
    pub index: u64,
    pub start_s: f64,
    pub length_s: f64,
}

/// The fork's `errors` object, every key always present.
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorCounts {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub timeout: u64,
    /// Responses with status > 399.
    pub http_error: u64,
    /// Requests of the plan due before the end that were never sent.
    pub unsent: u64,
    /// Requests in flight when the run was stopped at once (absent from
    /// files of pace before it counted them).
    #[serde(default)]
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

impl From<&ErrorCounts> for Errors {
    fn from(e: &ErrorCounts) -> Self {
        Errors {
            connect: e.connect,
            read: e.read,
            write: e.write,
            status: e.http_error,
            timeout: e.timeout,
            unsent: e.unsent,
            stopped: e.stopped,
        }
    }
}

/// Latency from the intended send time (corrected, the headline) and from
/// the actual send time (uncorrected).
#[derive(Debug, Default, Serialize)]
pub struct Latency {
    pub corrected: Summary,
    pub uncorrected: Summary,
}

/// The phases of connections and requests, each with its histogram.
#[derive(Debug, Serialize, Deserialize)]
pub struct Phases {
    /// From starting a connection to it being established (TCP, or the
    /// Unix socket; through a proxy, to the proxy: the CONNECT tunnel is
    /// in no phase).
    pub connect: Phase,
    /// The TLS handshake after the connect (empty without TLS).
    pub tls_handshake: Phase,
    /// From a request's send to its response's first byte (the response
    /// head's first byte over HTTP/1.1, its HEADERS frame over HTTP/2).
    pub first_byte: Phase,
}

/// What server-streaming gRPC calls received.
#[derive(Debug, Serialize, Deserialize)]
pub struct GrpcStream {
    /// Reply messages received by the measured calls.
    pub messages: u64,
    #[serde(default)]
    pub messages_per_sec: f64,
    /// The mean and the most of the reply messages of a completed call
    /// (null when none completed).
    #[serde(skip_deserializing)]
    pub messages_per_call_mean: Option<f64>,
    #[serde(skip_deserializing)]
    pub messages_per_call_max: Option<u64>,
    /// The reply messages of each completed call, as a histogram.
    pub messages_per_call_hist: String,
    /// From each call's intended time to its first reply message.
    pub first_message: Phase,
    /// Messages the calls sent in their streams (client-streaming and
    /// bidirectional methods).
    #[serde(default)]
    pub messages_sent: u64,
    /// Of a bidirectional method: from each message's intended time to its
    /// reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_latency: Option<Phase>,
}

/// One phase: its statistics and its histogram, encoded as `hist`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Phase {
    #[serde(flatten, skip_deserializing)]
    pub summary: Summary,
    pub hist: String,
}

/// A histogram's statistics, in microseconds; `null` figures when it is
/// empty. Mean and stdev as wrk2 computes them (bucket medians,
/// population stdev); percentiles as HdrHistogram's
/// `value_at_percentile` (the highest value of the bucket), each with
/// its confidence interval and the samples beyond it
/// (`crate::stats::confidence`).
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub count: u64,
    pub min_us: Option<u64>,
    pub max_us: Option<u64>,
    pub mean_us: Option<f64>,
    pub stdev_us: Option<f64>,
    pub percentiles_us: Percentiles,
    /// `[low, high]` per percentile, a bound null where the samples cannot
    /// bound it; null when the histogram is empty.
    pub percentiles_ci95_us: Percentiles<Option<[Option<u64>; 2]>>,
    pub percentiles_samples_beyond: Percentiles<u64>,
    /// The percentiles (keys as in `percentiles_us`) with fewer than
    /// `MIN_SAMPLES_BEYOND` samples beyond them.
    pub percentiles_too_few_samples: Vec<String>,
}

/// `{"50": 1020, "99.9": 2047}`, in the order of the percentile list.
#[derive(Debug, Default)]
pub struct Percentiles<T = Option<u64>>(pub Vec<(f64, T)>);

/// A percentile as the JSON keys name it: f64's Display, the shortest
/// exact form (50, 99.9, 99.999).
pub fn percentile_key(percentile: f64) -> String {
    percentile.to_string()
}

impl<T: Serialize> Serialize for Percentiles<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (percentile, value) in &self.0 {
            map.serialize_entry(&percentile_key(*percentile), value)?;
        }
        map.end()
    }
}

/// Fields of the final report only.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunOnly {
    /// Paced mode: requests due before the end that were never sent.
    #[serde(default)]
    pub unsent: u64,
    /// Who wrote the report: `pace` and its version.
    #[serde(default)]
    pub generated_by: String,
    /// How the run was made, to make it again (null for a merge; absent
    /// from files of pace before it recorded it).
    #[serde(default)]
    pub provenance: Option<Provenance>,
    /// When the measured part of the run began (after any warm-up), by
    /// the wall clock, in Unix seconds: `elapsed_s` counts from there.
    pub measured_from_unix_s: f64,
    /// `--timeout`.
    pub timeout_s: f64,
    /// `"SIGINT"` or `"SIGTERM"` when a signal ended the run early.
    pub interrupted_by: Option<String>,
    /// The script stopped every thread (`thread:stop()`) before the end.
    pub stopped_by_script: bool,
    pub per_thread: Vec<ThreadCounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<TimeSeries<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_timeseries: Option<TimeSeries<Vec<u64>>>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<LatencyBins>,
    /// This instance's part of a plan several send together.
    pub shard: ShardInfo,
    /// `--start-at`: when the plan started, RFC 3339 (null: at once).
    pub start_at: Option<String>,
    /// The same in Unix seconds.
    #[serde(default)]
    pub start_at_unix_s: Option<f64>,
    /// Paced mode: the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanInfo>,
    /// What the warm-up sent, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<WarmupInfo>,
    /// Per stage of `--stages`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageReport>,
    /// Per target of a targets file of several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetReport>,
    /// With `--slo`: each objective, its measured value and whether it held.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Vec<Verdict>>,
    /// Why paced sends were late, and how busy the threads were.
    pub generator: GeneratorInfo,
    /// HTTP/2: the lowest concurrent-stream limit a server set below
    /// `--streams` (null: none did).
    #[serde(default)]
    pub streams_allowed: Option<u32>,
    /// HTTP/2: requests a GOAWAY left unprocessed, sent again.
    #[serde(default)]
    pub retried_after_goaway: u64,
    /// HTTP/2: GOAWAY frames with an error code, by code (absent when none
    /// came).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub goaways_with_error: BTreeMap<String, u64>,
    /// HTTP/3: what QUIC measured on the connections (absent over TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicInfo>,
    /// The concurrency the run offered: requests in flight on average
    /// against the slots (computed from the figures, so not read back).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<ConcurrencyReport>,
    /// The report's `Warning:` lines.
    #[serde(skip_deserializing)]
    pub warnings: Vec<Diagnostic>,
    /// The seed of what was random in the run (Poisson arrivals, targets
    /// in random order): `--seed` repeats it. Absent when nothing was, and
    /// from files of pace before it recorded it (`plan.seed` has it for
    /// Poisson arrivals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `--targets-order`: `"sequential"` or `"random"`; absent without
    /// `--targets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets_order: Option<String>,
    /// A client certificate was given (`--cert`); absent when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_certificate: bool,
    /// `pace merge -e`: the runs merged, one each in the order given
    /// (absent from a run's own file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<MergedInput>>,
    /// `pace merge -e`: what the merge could not do exactly, or assumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_notes: Option<Vec<String>>,
    /// How the run went through time, period by period: what its validity
    /// is judged on, again by `pace report` and `pace merge` (absent from
    /// files of pace before it kept one, and when no period was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub course: Option<CourseInfo>,
    /// Whether the run can be trusted, and why not (computed from the
    /// figures, so not read back).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub validity: Option<Validity>,
}

/// [`crate::stats::course::Course`], for a report or a merge to judge.
#[derive(Debug, Serialize, Deserialize)]
pub struct CourseInfo {
    /// The length of each period.
    pub period_s: f64,
    pub periods: Vec<CoursePeriodInfo>,
}

/// One period of the course.
#[derive(Debug, Serialize, Deserialize)]
pub struct CoursePeriodInfo {
    /// Its corrected latency histogram, of one significant digit, encoded
    /// as `hist`.
    pub hist: String,
    /// Requests sent (paced runs) and ended in it.
    pub sent: u64,
    pub ended: u64,
    /// Of a Poisson plan: the chi-square of the sends per 10 ms slot
    /// against their mean, and its degrees of freedom.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub arrival_dof: u64,
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub arrival_chi2: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// `concurrency` of the final report.
#[derive(Debug, Serialize)]
pub struct ConcurrencyReport {
    /// Connections times the streams each carried at once.
    pub slots: usize,
    pub connections: usize,
    pub streams_per_connection: usize,
    /// Requests in flight on average (Little's law; null when none was).
    pub mean_in_flight: Option<f64>,
}

/// One run of a merge, as its line after the merged report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedInput {
    /// The file it came from.
    pub source: String,
    /// `I/N` for a shard, None for a whole run.
    pub shard: Option<String>,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub latency_p99_us: Option<u64>,
    /// Paced runs only.
    pub lag_p99_us: Option<u64>,
    /// Socket errors, statuses > 399 and unsent requests.
    pub errors: u64,
}

/// [`crate::stats::QuicCounts`]: what QUIC measured on an HTTP/3 run's
/// connections, counted as each closed (a merge weighs the RTTs by their
/// connections).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct QuicInfo {
    pub connections: u64,
    pub packets_sent: u64,
    /// Packets QUIC declared lost (their frames were sent again).
    pub packets_lost: u64,
    /// The connections' smoothed RTT when they closed, their mean.
    pub smoothed_rtt_mean_us: f64,
}

/// [`crate::stats::Generator`], for a merge to add up.
#[derive(Debug, Serialize, Deserialize)]
pub struct GeneratorInfo {
    pub waiting_for_connection_us: u64,
    pub waiting_for_generator_us: u64,
    pub busiest_thread_cpu_share: f64,
    /// Absent from files saved before pace told work from spinning: their
    /// CPU share stands for it, as it did then.
    #[serde(default)]
    pub busiest_thread_work_share: Option<f64>,
    #[serde(default)]
    pub thread_cpu_wait_share: f64,
}

/// The plan of a paced run: enough to repeat it.
#[derive(Debug, Serialize, Deserialize)]
pub struct PlanInfo {
    /// `"constant"` (evenly spaced) or `"poisson"`.
    pub arrival: String,
    /// The seed of Poisson arrivals.
    pub seed: Option<u64>,
    /// Requests per second at the start (`-R`; where stages start from).
    pub start_rate: f64,
    pub stages: Vec<StageSpec>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: usize,
    pub count: usize,
    /// The connections this instance opened (of `connections`).
    pub connections: usize,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct StageSpec {
    pub duration_s: f64,
    pub rate: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct WarmupInfo {
    pub duration_s: f64,
    pub requests: u64,
    pub errors: u64,
}

/// One stage's line of the text report.
#[derive(Debug, Serialize, Deserialize)]
pub struct StageReport {
    #[serde(default)]
    pub index: usize,
    /// From the end of the warm-up.
    #[serde(default)]
    pub start_s: f64,
    #[serde(default)]
    pub duration_s: f64,
    #[serde(default)]
    pub from_rate: f64,
    #[serde(default)]
    pub to_rate: f64,
    #[serde(default)]
    pub target_rate: f64,
    #[serde(default)]
    pub achieved_rate: f64,
    pub requests: u64,
    #[serde(default)]
    pub corrected_p50_us: Option<u64>,
    #[serde(default)]
    pub corrected_p99_us: Option<u64>,
    /// The stage's corrected latency histogram, encoded as `hist`.
    pub hist: String,
}

/// One target's line of the text report, with its whole label and its
/// corrected histogram.
#[derive(Debug, Serialize, Deserialize)]
pub struct TargetReport {
    #[serde(default)]
    pub index: usize,
    /// `METHOD scheme://host:port/path`.
    pub target: String,
    pub requests: u64,
    #[serde(default)]
    pub requests_per_sec: f64,
    #[serde(default)]
    pub corrected_p50_us: Option<u64>,
    #[serde(default)]
    pub corrected_p99_us: Option<u64>,
    pub errors: u64,
    /// Due in the run and never sent (paced runs; in random order, the
    /// target's share of them; absent from files of pace before it was
    /// recorded).
    #[serde(default)]
    pub unsent: u64,
    pub status_codes: BTreeMap<u16, u64>,
    /// The target's corrected latency histogram, encoded as `hist`.
    pub hist: String,
}

/// One thread's totals.
#[derive(Debug, Serialize, Deserialize)]
pub struct ThreadCounts {
    #[serde(default)]
    pub thread: usize,
    pub requests: u64,
    pub bytes: u64,
    pub errors: ErrorCounts,
}

/// Completed requests per slot (`--timeseries`), or per thread and slot
/// (`--thread-timeseries`).
#[derive(Debug, Serialize, Deserialize)]
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
