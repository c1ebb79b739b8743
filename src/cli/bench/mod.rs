//! The wrk/wrk2 command line: `pace <options> <url> [script args...]`.
//!
//! Reproduces wrk's `src/wrk.c: parse_args` (option names, abbreviations,
//! units, last one wins, options after the URL, `--`) and fixes its bugs
//! (`reference/wrk-family.md` sections 1 and 9): `-H Name:value` is kept
//! instead of silently dropped (wg/wrk#404), durations may be sub-second
//! (`500ms`, `1.5s`), `-R` may be fractional and is optional (absent = wrk's
//! closed loop), and every error says what is wrong in one line instead of
//! printing the usage text.
//!
//! The report options come from the forks: yicwang/wrk2's `-p`, `-D`, `-e`
//! (`--json_encoding`, also `--json`), wrx's `--timeseries`,
//! `--thread-timeseries`, `--histogram`, and pace's `--hlog`, `--html` and
//! `--percentiles`. pace's `--slo` (objectives for a verdict,
//! `crate::slo`) may be abbreviated to `--sl`.
//!
//! Where the connections go ([`crate::reach`]): `--unix-socket`,
//! `--connect-to` and `-4`/`-6` (`--ipv4`/`--ipv6`), named as in curl.
//!
//! The request options (issue #12, [`crate::requests`]) are pace's: `-m`,
//! `--body`, `--body-file`, `--targets`, `--targets-order` and
//! `-n/--requests` (wrk has no `-m` or `-n`).
//!
//! Every abbreviation wrk, wrk2, yicwang/wrk2 or wrx accepted keeps its
//! meaning ([`WRK_FAMILY`]), though pace's own options share the prefix:
//! `--s` is `--script`, `--d` `--duration`, `--r` `--rate`, `--b`
//! `--batch_latency`, `--re` `--report_interval`, `--th` ... `--thread`
//! `--threads` and `--ti` ... `--time` `--timeout` (in wrx the last two
//! were ambiguous, so no wrx user typed them). Prefixes ambiguous in all of
//! them (`--t`, `--h`, `--he`) or new with pace's options (`--bo`, `--st`,
//! `--ta`) are reported with their candidates instead of guessed; README's
//! list of them is checked against this table by a test.
//!
//! Three parts: the option table ([`table`]: names, values, help), the
//! reading of the words into what was typed (here: each value parsed as
//! its option is read, the last one winning), and the checks that need
//! the whole line ([`validate`], which builds the run's configuration).
//! The files the options name are read there, once, before anything
//! starts: a file that cannot be read is a setup error (exit 2, as a
//! script or any other file pace cannot read), a bad line in one a
//! command-line error (exit 1).

mod grpc;
mod table;
mod validate;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use rustls::pki_types::ServerName;

use super::options::{bad_value, time, word_text, Item, Options};
use super::plan::{self, PlanArgs};
use super::shard;
use super::{version_line, Command, Help};
use crate::config::targets::{self, TargetsOrder};
use crate::config::Shard;
use crate::error::Error;
use crate::grpc::schema::Sources;
use crate::metrics::{parse_push_url, ListenAddr};
use crate::output::OutputOptions;
use crate::reach::{ConnectTo, Family, Reach};
use crate::report::ReportOptions;
use crate::slo::{self, Objective};
use crate::target::Target;
use crate::tls;
use crate::units::{parse_count, parse_metric};
use table::WRK_FAMILY;
pub(super) use table::{Flag, SPECS};
pub(in crate::cli) use validate::validate;

/// Shortest `-p` period or `--timeseries` slot: shorter ones would cost
/// the engine threads more hand-overs than they measure.
const MIN_PERIOD: Duration = Duration::from_millis(10);

/// wrx's time-series slot.
const DEFAULT_SERIES_SLOT: Duration = Duration::from_millis(250);

/// The options as typed, before the checks that need all of them.
pub(in crate::cli) struct BenchArgs {
    connections: usize,
    duration: Duration,
    /// `-d` was typed (it must then agree with `--stages`).
    duration_typed: bool,
    threads: usize,
    script: Option<PathBuf>,
    headers: Vec<(String, String)>,
    method: Option<String>,
    body: Option<Vec<u8>>,
    body_file: Option<PathBuf>,
    targets: Option<PathBuf>,
    targets_order: Option<TargetsOrder>,
    requests: Option<usize>,
    batch_latency: bool,
    timeout: Duration,
    pub(in crate::cli) plan: PlanArgs,
    pub(in crate::cli) warmup: Duration,
    pub(in crate::cli) shard: Shard,
    pub(in crate::cli) start_at: Option<SystemTime>,
    digits: usize,
    insecure: bool,
    /// `--cacert`, `--cert`, `--key`: files read by [`validate`].
    cacert: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    tls_server_name: Option<ServerName<'static>>,
    report: ReportOptions,
    outputs: OutputOptions,
    /// The live progress (off with `--no-progress`).
    progress: bool,
    /// `--metrics`, `--metrics-linger`, `--metrics-push`: checked
    /// together by [`validate`].
    metrics: Option<ListenAddr>,
    metrics_linger: Option<Duration>,
    metrics_push: Option<Target>,
    /// `--metrics-push-token-file`: read by [`validate`].
    metrics_push_token: Option<PathBuf>,
    /// `--slo`, every list in order (the option may be repeated).
    pub(in crate::cli) slo: Vec<Objective>,
    /// `--strict`: an untrusted run exits 5.
    strict: bool,
    http2: bool,
    http3: bool,
    /// `--streams`, when typed.
    streams: Option<usize>,
    /// `--grpc`, its schema (`--proto`, `--import-path`, `--protoset`)
    /// and `--data`: checked and read by [`validate`].
    grpc: Option<String>,
    schema: Sources,
    data: Option<String>,
    grpc_gzip: bool,
    /// `--grpc-stream-count`, `--grpc-stream-interval`.
    stream_count: Option<u32>,
    stream_interval: Option<Duration>,
    /// `--proxy`: a proxy URL, or `env`.
    proxy: Option<String>,
    /// `--unix-socket`, `--connect-to` (every rule, in order), `-4`/`-6`.
    reach: Reach,
    print_version: bool,
    /// Every non-option word in order: the URL, then the script arguments.
    pub(in crate::cli) words: Vec<String>,
}

impl Default for BenchArgs {
    /// wrk's defaults.
    fn default() -> Self {
        BenchArgs {
            connections: 10,
            duration: Duration::from_secs(10),
            duration_typed: false,
            threads: 2,
            script: None,
            headers: Vec::new(),
            method: None,
            body: None,
            body_file: None,
            targets: None,
            targets_order: None,
            requests: None,
            batch_latency: false,
            timeout: Duration::from_secs(2),
            plan: PlanArgs::default(),
            warmup: Duration::ZERO,
            shard: Shard::WHOLE,
            start_at: None,
            digits: 3,
            insecure: false,
            cacert: None,
            cert: None,
            key: None,
            tls_server_name: None,
            report: ReportOptions::default(),
            outputs: OutputOptions::default(),
            // Shown only when stderr is a terminal (see crate::progress).
            progress: true,
            metrics: None,
            metrics_linger: None,
            metrics_push: None,
            metrics_push_token: None,
            slo: Vec::new(),
            strict: false,
            http2: false,
            http3: false,
            streams: None,
            grpc: None,
            schema: Sources::default(),
            data: None,
            grpc_gzip: false,
            stream_count: None,
            stream_interval: None,
            proxy: None,
            reach: Reach::default(),
            print_version: false,
            words: Vec::new(),
        }
    }
}

/// Parses a wrk/wrk2 command line (without the program name).
pub(super) fn parse(args: Vec<OsString>) -> Result<Command, Error> {
    let mut options = Options::new(args, SPECS).reproducing(WRK_FAMILY);
    let mut typed = BenchArgs::default();
    // `--timeseries` was the previous argument, without a value.
    let mut bare_timeseries = false;
    while let Some(item) = options.next()? {
        let found = match item {
            Item::Word(word) => {
                let word = word_text(word)?;
                if std::mem::take(&mut bare_timeseries) {
                    check_detached_slot(&word)?;
                }
                typed.words.push(word);
                continue;
            }
            Item::Option(found) => found,
        };
        let name = found.name.as_str();
        bare_timeseries = match found.flag {
            // Like ripgrep, help short-circuits whatever else is typed.
            Flag::Help => return Ok(Command::Help(Help::Main)),
            flag => take(&mut typed, flag, name, &mut options)?,
        };
    }
    // wrk prints the version and goes on, ending with the usage text and exit
    // 1 when there is no URL (wg/wrk#55); pace treats a lone -v as a request.
    if typed.print_version && typed.words.is_empty() && typed.targets.is_none() {
        return Ok(Command::Version(version_line()));
    }
    let print_version = typed.print_version;
    let bench = validate(typed)?;
    Ok(Command::Bench { bench: Box::new(bench), print_version })
}

/// Reads the option `flag` (typed as `name`, its value next in `options`)
/// into `typed`: the benchmark's options, as `pace search` reads them too.
/// True for a `--timeseries` without a value (see [`check_detached_slot`]).
pub(in crate::cli) fn take<F: Copy + PartialEq>(
    typed: &mut BenchArgs,
    flag: Flag,
    name: &str,
    options: &mut Options<F>,
) -> Result<bool, Error> {
    match flag {
        Flag::Connections => typed.connections = count(name, &options.text(name)?)?,
        Flag::Duration => {
            typed.duration = time(name, &options.text(name)?)?;
            typed.duration_typed = true;
        }
        Flag::Threads => typed.threads = count(name, &options.text(name)?)?,
        Flag::Script => typed.script = Some(PathBuf::from(options.value(name)?)),
        Flag::Header => typed.headers.push(header(&options.text(name)?)?),
        Flag::Method => typed.method = Some(method(name, options.text(name)?)?),
        Flag::Body => typed.body = Some(options.value(name)?.into_vec()),
        Flag::BodyFile => typed.body_file = Some(PathBuf::from(options.value(name)?)),
        Flag::Targets => typed.targets = Some(PathBuf::from(options.value(name)?)),
        Flag::TargetsOrder => {
            typed.targets_order = Some(targets_order(name, &options.text(name)?)?)
        }
        Flag::Requests => typed.requests = Some(count(name, &options.text(name)?)?),
        Flag::Latency => typed.report.latency = true,
        Flag::ULatency => typed.report.u_latency = true,
        Flag::BatchLatency => typed.batch_latency = true,
        Flag::Timeout => typed.timeout = time(name, &options.text(name)?)?,
        Flag::Rate => typed.plan.rate = Some(metric(name, &options.text(name)?)?),
        Flag::Arrival => typed.plan.arrival = Some(plan::arrival(name, &options.text(name)?)?),
        Flag::Stages => typed.plan.stages = Some(plan::stages(name, &options.text(name)?)?),
        Flag::Warmup => typed.warmup = time(name, &options.text(name)?)?,
        Flag::Seed => typed.plan.seed = Some(plan::seed_value(name, &options.text(name)?)?),
        Flag::Shard => typed.shard = shard::shard(name, &options.text(name)?)?,
        Flag::StartAt => typed.start_at = Some(shard::start_at(name, &options.text(name)?)?),
        Flag::Digits => typed.digits = count(name, &options.text(name)?)?,
        Flag::Insecure => typed.insecure = true,
        Flag::ReportInterval => {
            typed.outputs.report_interval = report_interval(name, &options.text(name)?)?
        }
        Flag::Json => typed.outputs.json = true,
        Flag::Hlog => typed.outputs.hlog = Some(PathBuf::from(options.value(name)?)),
        Flag::Html => typed.outputs.html = Some(PathBuf::from(options.value(name)?)),
        Flag::Output => typed.outputs.output = Some(PathBuf::from(options.value(name)?)),
        Flag::Timeseries => {
            let slot = match options.optional_text(name)? {
                Some(text) => period(name, &text)?,
                None => {
                    typed.report.timeseries = Some(DEFAULT_SERIES_SLOT);
                    return Ok(true);
                }
            };
            typed.report.timeseries = Some(slot);
        }
        Flag::ThreadTimeseries => typed.report.thread_timeseries = true,
        Flag::Histogram => typed.report.histogram = true,
        Flag::Percentiles => {
            typed.report.percentiles = Some(percentiles(name, &options.text(name)?)?)
        }
        Flag::NoProgress => typed.progress = false,
        Flag::Metrics => {
            let text = options.text(name)?;
            typed.metrics = Some(ListenAddr::parse(&text).map_err(|why| bad_value(name, why))?)
        }
        Flag::MetricsLinger => typed.metrics_linger = Some(time(name, &options.text(name)?)?),
        Flag::MetricsPush => {
            let text = options.text(name)?;
            typed.metrics_push = Some(parse_push_url(&text).map_err(|why| bad_value(name, why))?)
        }
        Flag::MetricsPushTokenFile => {
            typed.metrics_push_token = Some(PathBuf::from(options.value(name)?))
        }
        Flag::Slo => typed.slo.extend(objectives(name, &options.text(name)?)?),
        Flag::Strict => typed.strict = true,
        Flag::Http2 => typed.http2 = true,
        Flag::Http3 => typed.http3 = true,
        Flag::Streams => typed.streams = Some(count(name, &options.text(name)?)?),
        Flag::Grpc => typed.grpc = Some(options.text(name)?),
        Flag::Proto => typed.schema.protos.push(PathBuf::from(options.value(name)?)),
        Flag::ImportPath => typed.schema.import_paths.push(PathBuf::from(options.value(name)?)),
        Flag::Protoset => typed.schema.protoset = Some(PathBuf::from(options.value(name)?)),
        Flag::Data => typed.data = Some(options.text(name)?),
        Flag::GrpcGzip => typed.grpc_gzip = true,
        Flag::StreamCallCount => {
            let n = count(name, &options.text(name)?)?;
            typed.stream_count =
                Some(u32::try_from(n).map_err(|_| bad_value(name, "too many messages"))?);
        }
        Flag::StreamInterval => typed.stream_interval = Some(time(name, &options.text(name)?)?),
        Flag::Proxy => typed.proxy = Some(options.text(name)?),
        Flag::CaCert => typed.cacert = Some(PathBuf::from(options.value(name)?)),
        Flag::Cert => typed.cert = Some(PathBuf::from(options.value(name)?)),
        Flag::Key => typed.key = Some(PathBuf::from(options.value(name)?)),
        Flag::TlsServerName => {
            let text = options.text(name)?;
            let server_name = tls::parse_server_name(&text).map_err(|why| bad_value(name, why))?;
            typed.tls_server_name = Some(server_name);
        }
        Flag::UnixSocket => {
            typed.reach.unix_socket = Some(PathBuf::from(options.value(name)?).into())
        }
        Flag::ConnectTo => typed
            .reach
            .connect_to
            .push(ConnectTo::parse(&options.text(name)?).map_err(|why| bad_value(name, why))?),
        Flag::Ipv4 => typed.reach.family = Some(Family::V4),
        Flag::Ipv6 => typed.reach.family = Some(Family::V6),
        Flag::Version => typed.print_version = true,
        // Like ripgrep, help short-circuits whatever else is typed.
        // The callers answer help themselves (each with its own text).
        Flag::Help => {}
    }
    Ok(false)
}

/// `--timeseries 500ms`: getopt takes an optional value only attached, so
/// the time would become the URL (or a script argument). A word right
/// after a bare `--timeseries` that reads as a time is taken as a slot
/// written apart, and refused with the spelling that works; any other
/// word is the URL or an argument, as before.
fn check_detached_slot(word: &str) -> Result<(), Error> {
    match crate::units::parse_time(word) {
        Ok(_) => Err(Error::Usage(format!(
            "--timeseries takes its slot attached: write --timeseries={word} (a separate \
             word is not the option's value)"
        ))),
        Err(_) => Ok(()),
    }
}

/// `-m`: an HTTP method, as typed.
fn method(option: &str, text: String) -> Result<String, Error> {
    targets::check_method(&text).map_err(|why| bad_value(option, why))?;
    Ok(text)
}

/// `--targets-order sequential|random`.
fn targets_order(option: &str, text: &str) -> Result<TargetsOrder, Error> {
    TargetsOrder::parse(text)
        .ok_or_else(|| bad_value(option, format!("'{text}' is not 'sequential' or 'random'")))
}

/// A whole number with an optional SI suffix (`-c 1k`).
fn count(option: &str, text: &str) -> Result<usize, Error> {
    parse_count(text).map_err(|err| bad_value(option, err))
}

/// A number with an optional SI suffix, fractions allowed (`-R 0.5`).
fn metric(option: &str, text: &str) -> Result<f64, Error> {
    let value = parse_metric(text).map_err(|err| bad_value(option, err))?;
    if !value.is_finite() {
        return Err(bad_value(option, format!("'{text}' is too large")));
    }
    Ok(value)
}

/// `-p`: a period of at least [`MIN_PERIOD`]; 0 turns periodic reports off,
/// as in yicwang/wrk2.
fn report_interval(option: &str, text: &str) -> Result<Option<Duration>, Error> {
    let duration = time(option, text)?;
    if duration.is_zero() {
        return Ok(None);
    }
    period(option, text).map(Some)
}

/// A reporting period or time-series slot, at least [`MIN_PERIOD`].
fn period(option: &str, text: &str) -> Result<Duration, Error> {
    let duration = time(option, text)?;
    if duration < MIN_PERIOD {
        return Err(bad_value(option, format!("'{text}' is shorter than 10ms")));
    }
    Ok(duration)
}

/// `--percentiles 50,90,99,99.9`: numbers from 0 to 100, used in
/// increasing order, each once.
pub(super) fn percentiles(option: &str, text: &str) -> Result<Vec<f64>, Error> {
    let mut list = Vec::new();
    for word in text.split(',').map(str::trim) {
        let bad = || {
            bad_value(
                option,
                format!("'{word}' is not a percentile from 0 to 100 (e.g. 50,99,99.9)"),
            )
        };
        let p: f64 = word.parse().map_err(|_| bad())?;
        if !(0.0..=100.0).contains(&p) {
            return Err(bad());
        }
        list.push(p);
    }
    list.sort_by(f64::total_cmp);
    list.dedup();
    Ok(list)
}

/// `--slo p99<10ms,errors<1%`: objectives (see [`crate::slo`]).
pub(super) fn objectives(option: &str, text: &str) -> Result<Vec<Objective>, Error> {
    slo::parse(text).map_err(|why| bad_value(option, why))
}

/// `-H "Name: value"` ([`targets::parse_header`]).
fn header(text: &str) -> Result<(String, String), Error> {
    targets::parse_header(text)
        .map_err(|why| Error::Usage(format!("invalid header '{text}': {why}")))
}

#[cfg(test)]
mod tests;
