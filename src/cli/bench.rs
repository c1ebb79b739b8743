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
//! The files are read here, once, before anything starts: a file that
//! cannot be read is a setup error (exit 2, as a script or any other file
//! pace cannot read), a bad line in one a command-line error (exit 1).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::pki_types::ServerName;

use super::options::{bad_value, time, word_text, Item, Options, Program, Spec};
use super::plan::{self, PlanArgs};
use super::shard;
use super::{usage, version_line, Command};
use crate::config::origins::Origins;
use crate::config::targets::{self, Targets, TargetsOrder};
use crate::config::{BenchConfig, Shard};
use crate::error::Error;
use crate::metrics::{parse_push_url, BearerToken, ListenAddr, MetricsOptions};
use crate::output::OutputOptions;
use crate::protocol::Protocol;
use crate::proxy;
use crate::reach::{ConnectTo, Family, Reach};
use crate::report::ReportOptions;
use crate::run::Bench;
use crate::slo::{self, Expectation, Objective};
use crate::target::{Scheme, Target};
use crate::tls::{self, TlsOptions};
use crate::units::{parse_count, parse_metric};

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Flag {
    Connections,
    Duration,
    Threads,
    Script,
    Header,
    Method,
    Body,
    BodyFile,
    Targets,
    TargetsOrder,
    Requests,
    Latency,
    ULatency,
    BatchLatency,
    Timeout,
    Rate,
    Digits,
    Insecure,
    ReportInterval,
    Json,
    Hlog,
    Html,
    Output,
    Timeseries,
    ThreadTimeseries,
    Histogram,
    Percentiles,
    NoProgress,
    Metrics,
    MetricsLinger,
    MetricsPush,
    MetricsPushTokenFile,
    Arrival,
    Stages,
    Warmup,
    Seed,
    Shard,
    StartAt,
    Slo,
    Http2,
    Streams,
    Proxy,
    CaCert,
    Cert,
    Key,
    TlsServerName,
    UnixSocket,
    ConnectTo,
    Ipv4,
    Ipv6,
    Version,
    Help,
}

/// wrk2's options (`t:c:d:s:H:T:R:LUBv`), yicwang's `-D -p -e`, wrx's long
/// options, and pace's own (the requests' `-m`, `-n` and long options).
/// `--u_latency`, `--batch_latency`, `--report_interval`, `--json_encoding`
/// keep their authors' underscores. In the order of `pace -h`, which is
/// made from this table (as are the man page and the completions).
pub(super) const SPECS: &[Spec<Flag>] = &[
    Spec::new(Some('c'), "connections", Flag::Connections)
        .takes("N")
        .help(&["Connections to keep open (default 10)"]),
    Spec::new(Some('d'), "duration", Flag::Duration)
        .takes("T")
        .help(&["Duration of test (default 10s)"]),
    Spec::new(Some('t'), "threads", Flag::Threads)
        .takes("N")
        .help(&["Number of threads to use (default 2)"]),
    Spec::new(Some('s'), "script", Flag::Script)
        .takes_file("S")
        .help(&["Load Lua script file"])
        .starts_group(""),
    Spec::new(Some('H'), "header", Flag::Header)
        .takes("H")
        .help(&["Add header to request (\"Name: value\")"]),
    Spec::new(Some('L'), "latency", Flag::Latency).help(&["Print latency statistics"]),
    Spec::new(Some('U'), "u_latency", Flag::ULatency)
        .help(&["Print uncorrected latency statistics"]),
    Spec::new(Some('B'), "batch_latency", Flag::BatchLatency).help(&[
        "Measure latency of whole",
        "batches of pipelined ops",
        "(as opposed to each op)",
    ]),
    Spec::new(Some('T'), "timeout", Flag::Timeout)
        .takes("T")
        .help(&["Socket/request timeout (default 2s)"]),
    Spec::new(Some('R'), "rate", Flag::Rate).takes("N").help(&[
        "Work rate (throughput)",
        "in requests/sec (total);",
        "without it, as fast as possible (wrk)",
    ]),
    Spec::new(None, "arrival", Flag::Arrival)
        .takes_one_of("A", &["constant", "poisson"])
        .help(&["constant (even, default) or poisson"]),
    Spec::new(None, "stages", Flag::Stages)
        .takes("D:R,...")
        .help(&["Ramp/step the rate: each stage moves", "it to R over D (e.g. 30s:1k,1m:1k)"]),
    Spec::new(None, "warmup", Flag::Warmup)
        .takes("T")
        .help(&["Send the first T but do not count it"]),
    Spec::new(None, "seed", Flag::Seed).takes("N").help(&["Repeat a random plan"]),
    Spec::new(None, "shard", Flag::Shard)
        .takes("I/N")
        .help(&["Send instance I's part (from 0) of a", "plan N instances send together"]),
    Spec::new(None, "start-at", Flag::StartAt)
        .takes("T")
        .help(&["Start the plan at this wall-clock time", "(RFC 3339, or Unix seconds)"]),
    Spec::new(Some('D'), "digits", Flag::Digits)
        .takes_one_of("N", &["1", "2", "3", "4", "5"])
        .help(&["Latency precision digits [1..5] (default 3)"]),
    Spec::new(None, "http2", Flag::Http2)
        .help(&["Speak HTTP/2 (h2 by ALPN for https://,", "h2c by prior knowledge for http://)"]),
    Spec::new(None, "streams", Flag::Streams).takes("N").help(&[
        "HTTP/2 requests in flight per connection",
        "(default 1; the server may allow fewer)",
    ]),
    Spec::new(None, "unix-socket", Flag::UnixSocket).takes_file("P").help(&[
        "Connect to the Unix socket P; the URL",
        "still gives Host and path (e.g. P =",
        "/run/app.sock, URL http://app/)",
    ]),
    Spec::new(None, "connect-to", Flag::ConnectTo).takes("R").help(&[
        "HOST:PORT:ADDR:PORT: for HOST:PORT connect",
        "to ADDR:PORT, keeping Host and TLS name",
        "(curl's; e.g. example.com:443:127.0.0.1:8443;",
        "empty fields: any, or the same; repeatable)",
    ]),
    Spec::new(Some('4'), "ipv4", Flag::Ipv4).help(&["Connect over IPv4 only (e.g. -4 localhost)"]),
    Spec::new(Some('6'), "ipv6", Flag::Ipv6).help(&["Connect over IPv6 only (e.g. -6 localhost)"]),
    Spec::new(Some('k'), "insecure", Flag::Insecure).help(&["Do not verify TLS certificates"]),
    Spec::new(None, "cacert", Flag::CaCert)
        .takes_file("F")
        .help(&["Trust the CAs in F (PEM) instead of", "the system's (or SSL_CERT_FILE's)"]),
    Spec::new(None, "cert", Flag::Cert)
        .takes_file("F")
        .help(&["Client certificate (PEM) for mutual TLS"]),
    Spec::new(None, "key", Flag::Key)
        .takes_file("F")
        .help(&["Its private key (PEM: PKCS #8, RSA or", "EC; default: the one in --cert's file)"]),
    Spec::new(None, "tls-server-name", Flag::TlsServerName)
        .takes("N")
        .help(&["Name to send (SNI) and verify instead", "of the URL host"]),
    Spec::new(None, "proxy", Flag::Proxy).takes("U").help(&[
        "Go through an HTTP proxy, e.g.",
        "http://user:pass@proxy:3128 (CONNECT",
        "for https://), or env (http_proxy,",
        "https_proxy, no_proxy as curl reads them)",
    ]),
    Spec::new(Some('v'), "version", Flag::Version).aliases(&['V']).help(&["Print version details"]),
    Spec::new(Some('h'), "help", Flag::Help).help(&["Print this help"]),
    Spec::new(Some('m'), "method", Flag::Method)
        .takes("M")
        .help(&["Request method (default GET)"])
        .starts_group("Requests (without -s; a script makes its own):"),
    Spec::new(None, "body", Flag::Body).takes("S").help(&["Request body (Content-Length is set)"]),
    Spec::new(None, "body-file", Flag::BodyFile)
        .takes_file("F")
        .help(&["Request body read from file F"]),
    Spec::new(None, "targets", Flag::Targets).takes_file("F").help(&[
        "Requests from file F, in turn (vegeta's",
        "http format); then the URL may be left out",
    ]),
    Spec::new(None, "targets-order", Flag::TargetsOrder)
        .takes_one_of("O", &["sequential", "random"])
        .help(&["sequential (default) or random (--seed", "repeats the order)"]),
    Spec::new(Some('n'), "requests", Flag::Requests).takes("N").help(&[
        "Stop after N requests (with a rate: a plan",
        "of N requests; -d still bounds the run)",
    ]),
    Spec::new(Some('p'), "report_interval", Flag::ReportInterval)
        .takes("T")
        .help(&["Also report each period of T alone (0 = off)"])
        .starts_group("Reports:"),
    Spec::new(Some('e'), "json", Flag::Json).help(&["Print JSON on stdout instead of text"]),
    Spec::new(None, "json_encoding", Flag::Json).help(&["Same as --json (yicwang/wrk2's name)"]),
    Spec::new(None, "percentiles", Flag::Percentiles)
        .takes("L")
        .help(&["Latency percentiles to print", "(e.g. 50,90,99,99.9; implies -L)"]),
    Spec::new(None, "hlog", Flag::Hlog)
        .takes_file("F")
        .help(&["Write an HdrHistogram interval log to F"]),
    Spec::new(None, "html", Flag::Html)
        .takes_file("F")
        .help(&["Write a self-contained HTML report with", "charts to F"]),
    Spec::new(Some('o'), "output", Flag::Output)
        .takes_file("F")
        .help(&["Write the reports to F instead of stdout", "(complete, or not at all)"]),
    Spec::new(None, "timeseries", Flag::Timeseries)
        .may_take("T")
        .help(&["Print requests per period of T", "(default 250ms)"]),
    Spec::new(None, "thread-timeseries", Flag::ThreadTimeseries)
        .help(&["Print requests per period and thread"]),
    Spec::new(None, "histogram", Flag::Histogram).help(&["Print requests per 1us of latency"]),
    Spec::new(None, "no-progress", Flag::NoProgress)
        .help(&["No live progress on stderr (shown only", "when stderr is a terminal)"]),
    Spec::new(None, "metrics", Flag::Metrics).takes("A").help(&[
        "Serve live figures for Prometheus at",
        "http://A/metrics (e.g. 127.0.0.1:9464;",
        ":9464 for every interface; port 0: any)",
    ]),
    Spec::new(None, "metrics-linger", Flag::MetricsLinger)
        .takes("T")
        .help(&["Keep serving them T after the report,", "for a last scrape (default 0)"]),
    Spec::new(None, "metrics-push", Flag::MetricsPush).takes("U").help(&[
        "Send the final figures to U by",
        "Prometheus remote write (http:// or",
        "https://, e.g. http://prom:9090/api/v1/write)",
    ]),
    Spec::new(None, "metrics-push-token-file", Flag::MetricsPushTokenFile)
        .takes_file("F")
        .help(&["Send the token in file F to U as", "Authorization: Bearer"]),
    Spec::new(None, "slo", Flag::Slo).takes("L").help(&[
        "Objectives to judge the run by, e.g.",
        "'p99<10ms,errors<0.1%,rate>99%'",
        "(exit status 4 if one fails)",
    ]),
];

/// The long options of wrk 4.2, giltene/wrk2, yicwang/wrk2 and wrx
/// (`struct option longopts[]` in each `src/wrk.c`; reference section
/// 1.2), whose abbreviations pace keeps. Where one of them read a prefix
/// as one option, none reads it as another (a test checks it).
const WRK_FAMILY: &[Program] = &[
    // wrk 4.2
    &[
        "connections",
        "duration",
        "threads",
        "script",
        "header",
        "latency",
        "timeout",
        "help",
        "version",
    ],
    // giltene/wrk2
    &[
        "connections",
        "duration",
        "threads",
        "script",
        "header",
        "latency",
        "u_latency",
        "batch_latency",
        "timeout",
        "help",
        "version",
        "rate",
    ],
    // yicwang/wrk2
    &[
        "connections",
        "duration",
        "threads",
        "script",
        "header",
        "latency",
        "u_latency",
        "batch_latency",
        "timeout",
        "help",
        "version",
        "rate",
        "report_interval",
        "digits",
        "json_encoding",
    ],
    // wrx
    &[
        "connections",
        "duration",
        "threads",
        "script",
        "header",
        "latency",
        "timeout",
        "help",
        "version",
        "histogram",
        "timeseries",
        "thread-timeseries",
    ],
];

/// The most `--streams`: a connection's client stream ids (odd, below
/// 2^31) could not be all open at once beyond this.
const MAX_STREAMS: usize = 1 << 30;

/// HdrHistogram accepts 1 to 5 significant digits.
const DIGITS: std::ops::RangeInclusive<usize> = 1..=5;

/// Shortest `-p` period or `--timeseries` slot: shorter ones would cost
/// the engine threads more hand-overs than they measure.
const MIN_PERIOD: Duration = Duration::from_millis(10);

/// wrx's time-series slot.
const DEFAULT_SERIES_SLOT: Duration = Duration::from_millis(250);

/// The options as typed, before the checks that need all of them.
struct BenchArgs {
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
    plan: PlanArgs,
    warmup: Duration,
    shard: Shard,
    start_at: Option<SystemTime>,
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
    slo: Vec<Objective>,
    http2: bool,
    /// `--streams`, when typed.
    streams: Option<usize>,
    /// `--proxy`: a proxy URL, or `env`.
    proxy: Option<String>,
    /// `--unix-socket`, `--connect-to` (every rule, in order), `-4`/`-6`.
    reach: Reach,
    print_version: bool,
    /// Every non-option word in order: the URL, then the script arguments.
    words: Vec<String>,
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
            http2: false,
            streams: None,
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
        bare_timeseries = false;
        let name = found.name.as_str();
        match found.flag {
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
                        bare_timeseries = true;
                        DEFAULT_SERIES_SLOT
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
                typed.metrics_push =
                    Some(parse_push_url(&text).map_err(|why| bad_value(name, why))?)
            }
            Flag::MetricsPushTokenFile => {
                typed.metrics_push_token = Some(PathBuf::from(options.value(name)?))
            }
            Flag::Slo => typed.slo.extend(objectives(name, &options.text(name)?)?),
            Flag::Http2 => typed.http2 = true,
            Flag::Streams => typed.streams = Some(count(name, &options.text(name)?)?),
            Flag::Proxy => typed.proxy = Some(options.text(name)?),
            Flag::CaCert => typed.cacert = Some(PathBuf::from(options.value(name)?)),
            Flag::Cert => typed.cert = Some(PathBuf::from(options.value(name)?)),
            Flag::Key => typed.key = Some(PathBuf::from(options.value(name)?)),
            Flag::TlsServerName => {
                let text = options.text(name)?;
                let server_name =
                    tls::parse_server_name(&text).map_err(|why| bad_value(name, why))?;
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
            Flag::Help => return Ok(Command::Help(usage::main())),
        }
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

/// The checks that need the whole command line, done once it is all read
/// so that the last of repeated options is the one checked (`-t0 -t2`).
fn validate(mut typed: BenchArgs) -> Result<Bench, Error> {
    let mut words = std::mem::take(&mut typed.words).into_iter();
    let url = words.next();
    let missing_url = || Error::Usage("missing URL (try 'pace --help')".into());
    if url.is_none() && typed.targets.is_none() {
        return Err(missing_url());
    }
    check_ranges(&typed)?;
    check_requests(&typed)?;
    check_reach(&typed.reach, typed.proxy.is_some())?;
    let metrics = metrics_options(&typed)?;
    super::distinct_files(&typed.outputs)?;
    let body = match (typed.body.take(), &typed.body_file) {
        (Some(body), _) => Some(Arc::from(body)),
        (None, Some(file)) => Some(body_file(file)?),
        (None, None) => None,
    };
    let targets = typed.targets.as_deref().map(Targets::read).transpose()?;
    let target = match (&url, &targets) {
        (Some(url), _) => Target::parse(url).map_err(|err| Error::Usage(err.to_string()))?,
        (None, Some(targets)) => targets.first().target.clone(),
        (None, None) => return Err(missing_url()),
    };
    // With --targets, each target goes to its own URL.
    let (speaks_tls, plain) = match &targets {
        Some(targets) => (
            targets.list.iter().any(|request| request.target.scheme == Scheme::Https),
            "no target of --targets is https://",
        ),
        None => (target.scheme == Scheme::Https, "the run's URL is http://"),
    };
    let tls = tls_options(&typed, speaks_tls, plain)?;
    // `user:password@` in the URL is Basic authorization (as curl sends
    // it), unless an -H header says otherwise. A target's own (the URL
    // taken from the first target) is that target's alone.
    let mut headers = typed.headers;
    let authorized = headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    let typed_url = url.is_some();
    if let Some(credentials) = target.basic_authorization().filter(|_| !authorized && typed_url) {
        headers.push(("Authorization".to_string(), credentials));
    }
    let proxy = typed.proxy.as_deref().map(|value| proxy::route(value, &target));
    let proxy = proxy.transpose().map_err(Error::Usage)?;
    let seed = plan::seed(&typed.plan);
    let (mode, duration) =
        plan::mode(&typed.plan, typed.duration, typed.duration_typed, typed.warmup)?;
    let requests = typed.requests.map(|n| n as u64);
    let duration =
        plan::bounded(&mode, duration, typed.duration_typed, requests, typed.warmup, seed);
    let config = BenchConfig {
        target,
        connections: typed.connections,
        threads: typed.threads,
        duration,
        timeout: typed.timeout,
        mode,
        warmup: typed.warmup,
        seed,
        shard: typed.shard,
        start_at: typed.start_at,
        headers,
        method: typed.method.unwrap_or_else(|| "GET".to_string()),
        body,
        targets,
        targets_order: typed.targets_order.unwrap_or_default(),
        requests,
        batch_latency: typed.batch_latency,
        tls,
        // In range: checked against DIGITS by check_ranges.
        digits: typed.digits as u8,
        script: typed.script,
        script_args: words.collect(),
        protocol: if typed.http2 { Protocol::Http2 } else { Protocol::Http1 },
        streams: typed.streams.unwrap_or(1),
        proxy,
        reach: typed.reach,
        provenance: None,
    };
    let fewest = (0..config.threads).map(|t| config.connections_of_thread(t)).min();
    Origins::of(&config).check(fewest.unwrap_or(0), config.threads).map_err(Error::Usage)?;
    // What needs the mode: a share of the target rate, the schedule lag.
    let expectation = Expectation { target_rate: config.target_rate() };
    slo::check(&typed.slo, &expectation).map_err(|why| bad_value("--slo", why))?;
    let mut report = typed.report;
    // wrk2: -U implies -L; asking for percentiles is asking to see them.
    report.latency |= report.u_latency || report.percentiles.is_some();
    Ok(Bench {
        config,
        report,
        outputs: typed.outputs,
        slo: typed.slo,
        metrics,
        progress: typed.progress,
    })
}

/// Counts and durations that must not be zero, and their relations, in
/// wrk's order (threads and duration, then connections).
fn check_ranges(typed: &BenchArgs) -> Result<(), Error> {
    let fail = |message: String| Err(Error::Usage(message));
    if typed.threads == 0 {
        return fail("-t/--threads must be at least 1".into());
    }
    if typed.duration.is_zero() {
        return fail("-d/--duration must be greater than 0".into());
    }
    if typed.connections == 0 {
        return fail("-c/--connections must be at least 1".into());
    }
    match typed.streams {
        Some(0) => return fail("--streams must be at least 1".into()),
        Some(_) if !typed.http2 => {
            return fail(
                "--streams needs --http2 (an HTTP/1.1 connection carries one request at a time)"
                    .into(),
            )
        }
        Some(n) if n > MAX_STREAMS => {
            return fail(format!("--streams must be at most {MAX_STREAMS} (HTTP/2 stream ids)"))
        }
        _ => {}
    }
    if typed.connections < typed.threads {
        return fail(format!(
            "number of connections ({}) must be >= threads ({})",
            typed.connections, typed.threads
        ));
    }
    let Shard { index, count } = typed.shard;
    let share = typed.connections / count + usize::from(index < typed.connections % count);
    if share < typed.threads {
        return fail(format!(
            "shard {index}/{count} opens {share} of the {} connections, fewer than its {} threads",
            typed.connections, typed.threads
        ));
    }
    if typed.timeout.is_zero() {
        return fail("-T/--timeout must be greater than 0".into());
    }
    if !DIGITS.contains(&typed.digits) {
        return fail(format!(
            "-D/--digits must be between {} and {} (got {})",
            DIGITS.start(),
            DIGITS.end(),
            typed.digits
        ));
    }
    Ok(())
}

/// The request options that exclude or need one another.
fn check_requests(typed: &BenchArgs) -> Result<(), Error> {
    let fail = |message: &str| Err(Error::Usage(message.into()));
    if typed.requests == Some(0) {
        return fail("-n/--requests must be at least 1");
    }
    if typed.body.is_some() && typed.body_file.is_some() {
        return fail("--body and --body-file cannot be used together");
    }
    if typed.targets.is_none() && typed.targets_order.is_some() {
        return fail("--targets-order needs --targets");
    }
    if typed.targets.is_some() && typed.method.is_some() {
        return fail("-m/--method cannot be used with --targets: each target names its method");
    }
    Ok(())
}

/// `-k` and the TLS options, their files read and checked once, before
/// anything starts. Options that only TLS uses are refused for an
/// http:// target rather than ignored (as `--streams` without `--http2`);
/// `-k` is wrk's and stays accepted anywhere.
/// The TLS options typed; refused when no connection speaks TLS
/// (`speaks_tls`), in the words of `plain`.
fn tls_options(typed: &BenchArgs, speaks_tls: bool, plain: &str) -> Result<TlsOptions, Error> {
    let typed_options = [
        ("--cacert", typed.cacert.is_some()),
        ("--cert", typed.cert.is_some()),
        ("--key", typed.key.is_some()),
        ("--tls-server-name", typed.tls_server_name.is_some()),
    ];
    let first_typed = typed_options.iter().find(|(_, typed)| *typed);
    if let (Some((option, _)), false) = (first_typed, speaks_tls) {
        return Err(Error::Usage(format!("{option} applies to https:// only, and {plain}")));
    }
    if typed.key.is_some() && typed.cert.is_none() {
        return Err(Error::Usage("--key needs --cert (the client certificate)".into()));
    }
    let client_certificate = match &typed.cert {
        Some(cert) => Some(tls::load_client_certificate(cert, typed.key.as_deref())?),
        None => None,
    };
    Ok(TlsOptions {
        insecure: typed.insecure,
        cacert: typed.cacert.as_deref().map(tls::load_cacert).transpose()?,
        client_certificate,
        server_name: typed.tls_server_name.clone(),
    })
}

/// `--unix-socket` leaves nothing for the options that pick an address;
/// through a proxy (`proxied`), the proxy picks it.
fn check_reach(reach: &Reach, proxied: bool) -> Result<(), Error> {
    let fail = |message: &str| Err(Error::Usage(message.into()));
    if proxied && (reach.unix_socket.is_some() || !reach.connect_to.is_empty()) {
        return fail(
            "--proxy cannot be used with --unix-socket or --connect-to: every connection goes to \
             the proxy, which connects to the URL's host",
        );
    }
    if reach.unix_socket.is_some() && (!reach.connect_to.is_empty() || reach.family.is_some()) {
        return fail(
            "--unix-socket cannot be used with --connect-to or -4/-6: every connection goes to \
             the socket",
        );
    }
    if reach.unix_socket.as_deref().is_some_and(|path| path.as_os_str().is_empty()) {
        return fail("--unix-socket needs the path of a socket");
    }
    Ok(())
}

/// `--metrics ADDR` and how long it lingers (`--metrics-linger`, which
/// needs it), and `--metrics-push URL` with its credentials (in the URL,
/// or `--metrics-push-token-file`, read here).
fn metrics_options(typed: &BenchArgs) -> Result<Option<MetricsOptions>, Error> {
    if typed.metrics.is_none() && typed.metrics_linger.is_some() {
        return Err(Error::Usage("--metrics-linger needs --metrics".into()));
    }
    let push_token =
        match (&typed.metrics_push, &typed.metrics_push_token) {
            (None, Some(_)) => {
                return Err(Error::Usage("--metrics-push-token-file needs --metrics-push".into()))
            }
            (Some(url), Some(_)) if url.userinfo.is_some() => return Err(Error::Usage(
                "--metrics-push-token-file and user:password@ in the --metrics-push URL cannot \
                 be used together"
                    .into(),
            )),
            (_, Some(file)) => Some(BearerToken::read(file)?),
            (_, None) => None,
        };
    if typed.metrics.is_none() && typed.metrics_push.is_none() {
        return Ok(None);
    }
    Ok(Some(MetricsOptions {
        listen: typed.metrics.clone(),
        linger: typed.metrics_linger.unwrap_or(Duration::ZERO),
        push: typed.metrics_push.clone(),
        push_token,
    }))
}

/// `--body-file`: read once, at the start.
fn body_file(path: &Path) -> Result<Arc<[u8]>, Error> {
    crate::files::read_bounded(path, crate::files::BODY_FILE).map(Arc::from)
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
mod tests {
    use super::super::options::{resolve_long, Resolution};
    use super::super::parse as parse_command;
    use super::*;
    use crate::config::Mode;
    use crate::plan::PlanSpec;

    fn args(line: &[&str]) -> Vec<OsString> {
        line.iter().map(OsString::from).collect()
    }

    /// The benchmark a command line yields; fails the test otherwise.
    fn bench(line: &[&str]) -> Bench {
        match parse_command(args(line)) {
            Ok(Command::Bench { bench, .. }) => *bench,
            Ok(_) => panic!("{line:?}: not a benchmark"),
            Err(err) => panic!("{line:?}: {err}"),
        }
    }

    /// The run's configuration a command line yields.
    fn config(line: &[&str]) -> BenchConfig {
        bench(line).config
    }

    /// The message of the usage error a command line yields.
    fn error(line: &[&str]) -> String {
        match parse_command(args(line)) {
            Err(Error::Usage(message)) => message,
            Err(other) => panic!("{line:?}: not a usage error: {other}"),
            Ok(_) => panic!("{line:?}: accepted"),
        }
    }

    /// The message of the setup error (exit 2) a command line yields.
    fn setup_error(line: &[&str]) -> String {
        match parse_command(args(line)) {
            Err(Error::Setup(message)) => message,
            Err(other) => panic!("{line:?}: not a setup error: {other}"),
            Ok(_) => panic!("{line:?}: accepted"),
        }
    }

    const URL: &str = "http://127.0.0.1:8080/";

    /// Every way getopt_long accepts a value, for one option, abbreviated
    /// to its shortest unambiguous prefix.
    fn value_forms(short: &str, long: &str, value: &str) -> Vec<Vec<String>> {
        let mut forms = vec![
            vec![format!("{short}{value}"), URL.into()],
            vec![short.into(), value.into(), URL.into()],
            vec![format!("{long}={value}"), URL.into()],
            vec![long.into(), value.into(), URL.into()],
            vec![URL.into(), short.into(), value.into()],
        ];
        if let Some(abbreviated) = shortest_prefix(long) {
            forms.push(vec![abbreviated, value.into(), URL.into()]);
        }
        forms
    }

    /// The shortest prefix of `--long` that names only that option, if a
    /// prefix shorter than the name does.
    fn shortest_prefix(long: &str) -> Option<String> {
        let name = long.trim_start_matches('-');
        let flag = SPECS.iter().find(|spec| spec.long == name)?.flag;
        (1..name.len()).map(|n| &name[..n]).find_map(|prefix| {
            let unique = SPECS
                .iter()
                .filter(|spec| spec.long.starts_with(prefix))
                .all(|spec| spec.flag == flag);
            unique.then(|| format!("--{prefix}"))
        })
    }

    fn each_form(short: &str, long: &str, value: &str, check: impl Fn(&Bench)) {
        for line in value_forms(short, long, value) {
            let line: Vec<&str> = line.iter().map(String::as_str).collect();
            check(&bench(&line));
        }
    }

    #[test]
    fn defaults_are_wrks() {
        let cfg = bench(&[URL]);
        assert_eq!(cfg.config.connections, 10);
        assert_eq!(cfg.config.threads, 2);
        assert_eq!(cfg.config.duration, Some(Duration::from_secs(10)));
        assert_eq!(cfg.config.timeout, Duration::from_secs(2));
        assert_eq!(cfg.config.mode, Mode::ClosedLoop);
        assert_eq!(cfg.config.digits, 3);
        assert!(!cfg.report.latency && !cfg.report.u_latency);
        assert!(!cfg.config.batch_latency && !cfg.config.tls.insecure);
        let run = &cfg.config;
        assert!(run.headers.is_empty() && run.script.is_none() && run.script_args.is_empty());
        // The progress is on, for when stderr is a terminal.
        assert_eq!(cfg.outputs, OutputOptions::default());
        assert!(cfg.progress);
        assert_eq!(cfg.config.target.port, 8080);
    }

    #[test]
    fn connections() {
        each_form("-c", "--connections", "20", |cfg| assert_eq!(cfg.config.connections, 20));
        assert_eq!(config(&["-c1k", URL]).connections, 1000);
        assert_eq!(config(&["-c", "1.5K", URL]).connections, 1500);
        assert_eq!(config(&["-c5", "-c20", URL]).connections, 20);
    }

    #[test]
    fn threads() {
        each_form("-t", "--threads", "4", |cfg| assert_eq!(cfg.config.threads, 4));
        assert_eq!(config(&["-t2", "-t5", URL]).threads, 5);
        // As in wrk (wrx's --thread-timeseries made them ambiguous there).
        for prefix in ["--th", "--thr", "--thread"] {
            assert_eq!(config(&[prefix, "3", URL]).threads, 3, "{prefix}");
        }
        assert!(bench(&["--thread-", URL]).report.thread_timeseries);
    }

    #[test]
    fn duration() {
        each_form("-d", "--duration", "30s", |cfg| {
            assert_eq!(cfg.config.duration, Some(Duration::from_secs(30)))
        });
        assert_eq!(config(&["-d", "5", URL]).duration, Some(Duration::from_secs(5)));
        assert_eq!(config(&["-d", "2m", URL]).duration, Some(Duration::from_secs(120)));
        assert_eq!(config(&["-d", "1h", URL]).duration, Some(Duration::from_secs(3600)));
        assert_eq!(config(&["-d", "500ms", URL]).duration, Some(Duration::from_millis(500)));
        assert_eq!(config(&["--dur=1.5s", URL]).duration, Some(Duration::from_millis(1500)));
        assert_eq!(config(&["-d1s", "-d2s", URL]).duration, Some(Duration::from_secs(2)));
        // wrk's --d, though --digits starts the same way.
        assert_eq!(config(&["--d=3s", URL]).duration, Some(Duration::from_secs(3)));
        assert_eq!(config(&["--di", "2", URL]).digits, 2);
    }

    #[test]
    fn timeout() {
        each_form("-T", "--timeout", "5s", |cfg| {
            assert_eq!(cfg.config.timeout, Duration::from_secs(5))
        });
        assert_eq!(config(&["--timeout", "1.5s", URL]).timeout, Duration::from_millis(1500));
        assert_eq!(config(&["-T", "250ms", URL]).timeout, Duration::from_millis(250));
        // As in wrk (wrx's --timeseries made them ambiguous there).
        for prefix in ["--ti", "--tim", "--time"] {
            assert_eq!(config(&[prefix, "3s", URL]).timeout, Duration::from_secs(3), "{prefix}");
        }
        assert_eq!(bench(&["--times=1s", URL]).report.timeseries, Some(Duration::from_secs(1)));
    }

    #[test]
    fn rate() {
        each_form("-R", "--rate", "2k", |cfg| {
            assert_eq!(cfg.config.mode, Mode::Paced(PlanSpec::constant(2000.0)))
        });
        assert_eq!(config(&["-R", "0.5", URL]).mode, Mode::Paced(PlanSpec::constant(0.5)));
        assert_eq!(config(&["-R1M", URL]).mode, Mode::Paced(PlanSpec::constant(1e6)));
        assert_eq!(config(&["-R1", "-R10", URL]).mode, Mode::Paced(PlanSpec::constant(10.0)));
    }

    #[test]
    fn digits() {
        each_form("-D", "--digits", "2", |cfg| assert_eq!(cfg.config.digits, 2));
        assert_eq!(config(&["-D1", URL]).digits, 1);
        assert_eq!(config(&["-D5", URL]).digits, 5);
    }

    #[test]
    fn report_interval() {
        each_form("-p", "--report_interval", "2s", |bench| {
            assert_eq!(bench.outputs.report_interval, Some(Duration::from_secs(2)))
        });
        assert_eq!(
            bench(&["-p", "500ms", URL]).outputs.report_interval,
            Some(Duration::from_millis(500))
        );
        // yicwang: 0 = disabled.
        assert_eq!(bench(&["-p5", "-p0", URL]).outputs.report_interval, None);
        assert_eq!(
            error(&["-p", "5ms", URL]),
            "invalid value for '-p': '5ms' is shorter than 10ms"
        );
        assert!(error(&["-p", "x", URL]).contains("'-p'"));
    }

    #[test]
    fn json() {
        for flag in ["-e", "--json", "--json_encoding", "--js", "--json_"] {
            assert!(bench(&[flag, URL]).outputs.json, "{flag}");
        }
        assert!(bench(&["-Le", URL]).outputs.json);
    }

    #[test]
    fn hlog() {
        for line in [
            &["--hlog", "run.hlog", URL][..],
            &["--hlog=run.hlog", URL],
            &["--hl", "run.hlog", URL],
            &[URL, "--hlog", "run.hlog"],
        ] {
            assert_eq!(bench(line).outputs.hlog.as_deref(), Some("run.hlog".as_ref()), "{line:?}");
        }
    }

    #[test]
    fn html() {
        for line in
            [&["--html", "r.html", URL][..], &["--htm=r.html", URL], &[URL, "--html", "r.html"]]
        {
            assert_eq!(bench(line).outputs.html.as_deref(), Some("r.html".as_ref()), "{line:?}");
        }
        assert!(error(&["--html"]).contains("--html"), "{}", error(&["--html"]));
    }

    #[test]
    fn wrx_options() {
        let cfg = bench(&["--timeseries", "--thread-timeseries", "--histogram", URL]);
        assert_eq!(cfg.report.timeseries, Some(Duration::from_millis(250)));
        assert!(cfg.report.thread_timeseries && cfg.report.histogram);
        let cfg = bench(&["--timeseries=1s", URL]);
        assert_eq!(cfg.report.timeseries, Some(Duration::from_secs(1)));
        assert_eq!(
            bench(&["--times=100ms", URL]).report.timeseries,
            Some(Duration::from_millis(100))
        );
        // As getopt's optional arguments: only an attached value is taken.
        let cfg = bench(&["--timeseries", URL, "500ms"]);
        assert_eq!(cfg.report.timeseries, Some(Duration::from_millis(250)));
        assert_eq!(cfg.config.script_args, ["500ms"]);
        // A slot written apart is refused with the spelling that works.
        for args in [&["--timeseries", "500ms", URL][..], &["--times", "2s", URL, "-t1"]] {
            let message = error(args);
            assert!(message.contains("write --timeseries="), "{message}");
        }
        // Only the word right after it: here 500ms is the (bad) URL.
        assert!(error(&["--timeseries", "-t1", "500ms"]).contains("invalid URL"));
        assert!(bench(&[URL]).progress);
        assert!(!bench(&["--no-progress", URL]).progress);
        assert!(!bench(&["--no", URL]).progress);
        assert!(error(&["--timeseries=1ms", URL]).contains("shorter than 10ms"));
        assert!(bench(&["--thread-", URL]).report.thread_timeseries);
        assert!(bench(&["--hi", URL]).report.histogram);
        assert_eq!(
            error(&["--h", URL]),
            "option '--h' is ambiguous; possibilities: '--header' '--http2' '--help' '--hlog' \
             '--html' '--histogram'"
        );
        assert_eq!(
            error(&["--histogram=yes", URL]),
            "option '--histogram' does not take a value (got 'yes')"
        );
    }

    #[test]
    fn percentiles() {
        let cfg = bench(&["--percentiles", "99.9, 50,90,99,50", URL]);
        assert_eq!(cfg.report.percentiles, Some(vec![50.0, 90.0, 99.0, 99.9]));
        // They are printed without -L.
        assert!(cfg.report.latency && !cfg.report.u_latency);
        assert_eq!(bench(&["--perc=0,100", URL]).report.percentiles, Some(vec![0.0, 100.0]));
        assert_eq!(
            error(&["--percentiles", "50,101", URL]),
            "invalid value for '--percentiles': '101' is not a percentile from 0 to 100 (e.g. 50,99,99.9)"
        );
        for bad in ["", "50,", "p99", "nan", "-1", "inf"] {
            assert!(error(&["--percentiles", bad, URL]).contains("is not a percentile"), "{bad}");
        }
    }

    #[test]
    fn metrics() {
        let addr = |host: &str, port| ListenAddr { host: host.into(), port };
        let listen = |addr, linger| MetricsOptions {
            listen: Some(addr),
            linger,
            push: None,
            push_token: None,
        };
        assert_eq!(bench(&[URL]).metrics, None);
        for line in [
            &["--metrics", "127.0.0.1:9464", URL][..],
            &["--metrics=127.0.0.1:9464", URL],
            &[URL, "--metrics", "127.0.0.1:9464"],
        ] {
            let expected = listen(addr("127.0.0.1", 9464), Duration::ZERO);
            assert_eq!(bench(line).metrics, Some(expected), "{line:?}");
        }
        let cfg = bench(&["--metrics", ":0", "--metrics-linger", "2s", URL]);
        assert_eq!(cfg.metrics, Some(listen(addr("", 0), Duration::from_secs(2))));
        let v6 = bench(&["--metrics", "[::1]:9464", "--metrics-l=500ms", URL]).metrics;
        assert_eq!(v6, Some(listen(addr("::1", 9464), Duration::from_millis(500))));
        assert_eq!(
            error(&["--metrics", "9464", URL]),
            "invalid value for '--metrics': '9464' is not HOST:PORT (e.g. 127.0.0.1:9464, \
             :9464 for every interface, [::1]:9464)"
        );
        let bad_port = error(&["--metrics", "h:99999", URL]);
        assert!(bad_port.ends_with("'99999' is not a port (0 to 65535)"), "{bad_port}");
        assert_eq!(error(&["--metrics-linger", "1s", URL]), "--metrics-linger needs --metrics");
        let bad_linger = error(&["--metrics", ":1", "--metrics-linger", "x", URL]);
        assert!(bad_linger.contains("'--metrics-linger'"), "{bad_linger}");
        // --metrics is a prefix of the others: typed whole, it is itself.
        let prefix = error(&["--metr", ":1", URL]);
        assert!(prefix.starts_with("option '--metr' is ambiguous"), "{prefix}");

        // Remote write alone, or with the listener.
        let write = "http://user:pw@127.0.0.1:9090/api/v1/write";
        let push = bench(&["--metrics-push", write, URL]).metrics.unwrap();
        assert_eq!((push.listen, push.linger), (None, Duration::ZERO));
        let target = push.push.unwrap();
        assert_eq!(
            (target.host.as_str(), target.port, target.path.as_str()),
            ("127.0.0.1", 9090, "/api/v1/write")
        );
        assert!(target.basic_authorization().is_some());
        let both = bench(&["--metrics", ":1", "--metrics-push", write, URL]).metrics.unwrap();
        assert!(both.listen.is_some() && both.push.is_some());
        let tls = bench(&["--metrics-push", "https://prom/api/v1/write", URL]).metrics.unwrap();
        assert_eq!(tls.push.unwrap().scheme, Scheme::Https);
        assert!(error(&["--metrics-push", "prom:9090", URL]).contains("invalid URL"));

        // A bearer token, from a file, for the push alone.
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "abc.def\n").unwrap();
        let token = token.to_str().unwrap();
        let plain = "https://prom/api/v1/write";
        let with_token =
            bench(&["--metrics-push", plain, "--metrics-push-token-file", token, URL]).metrics;
        assert!(with_token.unwrap().push_token.is_some());
        assert_eq!(
            error(&["--metrics-push-token-file", token, URL]),
            "--metrics-push-token-file needs --metrics-push"
        );
        assert_eq!(
            error(&["--metrics-push", write, "--metrics-push-token-file", token, URL]),
            "--metrics-push-token-file and user:password@ in the --metrics-push URL cannot be \
             used together"
        );
    }

    #[test]
    fn slo() {
        let texts = |bench: Bench| -> Vec<String> {
            bench.slo.iter().map(crate::slo::Objective::text).collect()
        };
        let cfg = bench(&["--slo", "p99<10ms, errors<0.1%", URL]);
        assert_eq!(texts(cfg), ["p99<10ms", "errors<0.1%"]);
        // Repeated, the lists add up; abbreviated to --sl.
        let cfg = bench(&["-R10", "--slo=p99<10ms", URL, "--sl", "rate>99%,lag.p99<1ms"]);
        assert_eq!(texts(cfg), ["p99<10ms", "rate>99%", "lag.p99<1ms"]);
        assert!(bench(&[URL]).slo.is_empty());
        assert_eq!(
            error(&["--slo", "p99<1x", URL]),
            "invalid value for '--slo': 'p99<1x': '1x' is not a time (examples: 10ms, 500us, 1.5s)"
        );
        assert_eq!(
            error(&["--slo", "rate>99%", URL]),
            "invalid value for '--slo': 'rate>99%': a share of the target rate needs a plan \
             (-R or --stages); without one, give requests/s (e.g. rate>1000)"
        );
        assert!(error(&["--slo", "lag.max<1ms", URL]).contains("only with a plan"));
        assert_eq!(texts(bench(&["--slo", "rate>100", URL])), ["rate>100"]);
        assert_eq!(error(&[URL, "--slo"]), "option '--slo' needs a value");
        // wrk's --s is --script still.
        assert_eq!(config(&["--s", "x.lua", URL]).script.as_deref(), Some("x.lua".as_ref()));
        assert_eq!(config(&["--sc", "x.lua", URL]).script.as_deref(), Some("x.lua".as_ref()));
    }

    #[test]
    fn script() {
        each_form("-s", "--script", "a.lua", |cfg| {
            assert_eq!(cfg.config.script.as_deref(), Some("a.lua".as_ref()))
        });
    }

    #[test]
    fn flags() {
        let cfg = bench(&["-L", "-B", "-k", URL]);
        assert!(
            cfg.report.latency
                && cfg.config.batch_latency
                && cfg.config.tls.insecure
                && !cfg.report.u_latency
        );
        let cfg = bench(&["--latency", "--batch_latency", "--insecure", URL]);
        assert!(cfg.report.latency && cfg.config.batch_latency && cfg.config.tls.insecure);
        let cfg = bench(&["--lat", "--batch", "--ins", URL]);
        assert!(cfg.report.latency && cfg.config.batch_latency && cfg.config.tls.insecure);
        assert!(config(&[URL, "-k"]).tls.insecure);
    }

    #[test]
    fn u_latency_implies_latency() {
        for flag in ["-U", "--u_latency", "--u"] {
            let cfg = bench(&[flag, URL]);
            assert!(cfg.report.u_latency && cfg.report.latency, "{flag}");
        }
    }

    #[test]
    fn clusters() {
        let cfg = bench(&["-Lt2", URL]);
        assert!(cfg.report.latency);
        assert_eq!(cfg.config.threads, 2);
        let cfg = bench(&["-LUkc100", "-t4", URL]);
        assert!(cfg.report.latency && cfg.report.u_latency && cfg.config.tls.insecure);
        assert_eq!((cfg.config.connections, cfg.config.threads), (100, 4));
    }

    #[test]
    fn url_credentials_are_basic_authorization_unless_a_header_says_otherwise() {
        let cfg = config(&["http://user:pw@127.0.0.1:8080/"]);
        assert_eq!(cfg.headers, vec![("Authorization".into(), "Basic dXNlcjpwdw==".into())]);
        let cfg = config(&["-H", "authorization: Bearer t", "http://user:pw@127.0.0.1:8080/"]);
        assert_eq!(cfg.headers, vec![("authorization".into(), "Bearer t".into())]);
    }

    #[test]
    fn headers_keep_their_order() {
        let cfg = config(&[
            "-H",
            "Accept: text/plain",
            URL,
            "--header=X-Token:abc",
            "-HHost:   example.com:8080",
            "-H",
            "X-Empty:",
        ]);
        let expected = [
            ("Accept", "text/plain"),
            ("X-Token", "abc"),
            ("Host", "example.com:8080"),
            ("X-Empty", ""),
        ];
        let got: Vec<(&str, &str)> =
            cfg.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn bad_headers() {
        assert!(error(&["-H", "NoColon", URL]).contains("expected 'Name: value'"));
        assert!(error(&["-H", ": value", URL]).contains("empty name"));
        assert!(error(&["-H", "Bad Name: x", URL]).contains("may not contain spaces"));
        assert!(error(&["-H", "X: a\r\nY: b", URL]).contains("line breaks"));
        assert_eq!(error(&["-H", "oops", URL]), "invalid header 'oops': expected 'Name: value'");
    }

    #[test]
    fn options_after_the_url_and_script_args() {
        let cfg = config(&[URL, "-t4", "a", "-c", "8", "b"]);
        assert_eq!((cfg.threads, cfg.connections), (4, 8));
        assert_eq!(cfg.script_args, ["a", "b"]);
        assert_eq!(cfg.target.url, URL);
    }

    #[test]
    fn double_dash_ends_options() {
        let cfg = config(&[URL, "-t4", "a", "--", "-z", "--threads=9", "b"]);
        assert_eq!(cfg.threads, 4);
        assert_eq!(cfg.script_args, ["a", "-z", "--threads=9", "b"]);
        // The first word after `--` is the URL when none came before.
        let cfg = config(&["-t1", "--", URL, "-c5"]);
        assert_eq!(cfg.target.url, URL);
        assert_eq!(cfg.script_args, ["-c5"]);
        assert_eq!(cfg.connections, 10);
    }

    #[test]
    fn url_like_extra_words_are_script_args() {
        let cfg = config(&[URL, "http://other/", "localhost:1/"]);
        assert_eq!(cfg.script_args, ["http://other/", "localhost:1/"]);
    }

    #[test]
    fn ambiguous_long_options() {
        assert_eq!(
            error(&["--t", "2", URL]),
            "option '--t' is ambiguous; possibilities: '--threads' '--timeout' \
             '--tls-server-name' '--targets' '--targets-order' '--timeseries' \
             '--thread-timeseries'"
        );
        assert!(error(&["--he", URL]).contains("'--header' '--help'"));
        assert_eq!(
            error(&["--st", "1s:10", URL]),
            "option '--st' is ambiguous; possibilities: '--stages' '--start-at' '--streams'"
        );
    }

    #[test]
    fn unknown_options() {
        assert_eq!(error(&["--foo", URL]), "unknown option '--foo'");
        assert_eq!(error(&["-x", URL]), "unknown option '-x'");
        assert_eq!(error(&["-Lx", URL]), "unknown option '-x'");
        assert_eq!(error(&["--=2", URL]), "unknown option '--'");
        // Close to an option: said, after the same start.
        assert_eq!(
            error(&["--threadsx=2", URL]),
            "unknown option '--threadsx' (did you mean --threads?)"
        );
        assert_eq!(
            error(&["--duraton", "1s", URL]),
            "unknown option '--duraton' (did you mean --duration?)"
        );
        assert_eq!(
            error(&["--report-interval", "1s", URL]),
            "unknown option '--report-interval' (did you mean --report_interval?)"
        );
        assert_eq!(error(&["--xyzzy", URL]), "unknown option '--xyzzy'");
    }

    #[test]
    fn missing_values() {
        assert_eq!(error(&[URL, "-c"]), "option '-c' needs a value");
        assert_eq!(error(&[URL, "--conn"]), "option '--connections' needs a value");
        assert_eq!(error(&[URL, "-H"]), "option '-H' needs a value");
    }

    #[test]
    fn flags_take_no_value() {
        assert_eq!(
            error(&["--latency=yes", URL]),
            "option '--latency' does not take a value (got 'yes')"
        );
    }

    #[test]
    fn bad_numbers_name_the_option_and_units() {
        assert_eq!(
            error(&["-c", "abc", URL]),
            "invalid value for '-c': 'abc' is not a number (examples: 10, 1.5k, 2M)"
        );
        assert_eq!(
            error(&["--duration", "5x", URL]),
            "invalid value for '--duration': '5x' is not a duration \
             (examples: 30s, 500ms, 1.5m, 2h)"
        );
        assert!(error(&["-t", "1.5", URL]).contains("'-t': '1.5' is not a whole number"));
        assert!(error(&["-c", "-1", URL]).contains("'-c'"));
        assert!(error(&["-R", "fast", URL]).contains("'-R'"));
        assert!(error(&["-T", "2parsecs", URL]).contains("'-T'"));
        assert!(error(&["-D", "x", URL]).contains("'-D'"));
        assert!(error(&["-d", "1000000000h", URL]).contains("longer than 365 days"));
    }

    #[test]
    fn range_checks() {
        assert_eq!(error(&["-t", "0", URL]), "-t/--threads must be at least 1");
        assert_eq!(error(&["-c", "0", "-t1", URL]), "-c/--connections must be at least 1");
        assert_eq!(
            error(&["-c", "2", "-t", "4", URL]),
            "number of connections (2) must be >= threads (4)"
        );
        assert_eq!(error(&["-d", "0", URL]), "-d/--duration must be greater than 0");
        assert_eq!(error(&["-d", "0ms", URL]), "-d/--duration must be greater than 0");
        assert_eq!(error(&["-T", "0", URL]), "-T/--timeout must be greater than 0");
        assert_eq!(error(&["-R", "0", URL]), "-R/--rate must be greater than 0");
        assert_eq!(error(&["-R", "0.0", URL]), "-R/--rate must be greater than 0");
        let huge = format!("1{}", "0".repeat(400));
        assert!(error(&["-R", &huge, URL]).ends_with("is too large"));
        assert_eq!(error(&["-D", "9", URL]), "-D/--digits must be between 1 and 5 (got 9)");
        assert_eq!(error(&["-D", "0", URL]), "-D/--digits must be between 1 and 5 (got 0)");
        // Last one wins, and only the final values are checked.
        assert_eq!(config(&["-t0", "-t1", URL]).threads, 1);
    }

    #[test]
    fn urls() {
        assert_eq!(error(&[]), "missing URL (try 'pace --help')");
        assert_eq!(error(&["-t2", "-c4"]), "missing URL (try 'pace --help')");
        assert!(error(&["localhost:8080/"]).starts_with("invalid URL: localhost:8080/"));
        assert!(error(&["http://"]).starts_with("invalid URL: http://"));
        let cfg = config(&["http://[::1]:9000/x"]);
        assert_eq!((cfg.target.host.as_str(), cfg.target.port), ("::1", 9000));
    }

    #[test]
    fn non_utf8_arguments_are_errors_not_panics() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b'h', 0xff]);
        for line in [
            vec![bad.clone()],
            vec![URL.into(), bad.clone()],
            vec!["-c".into(), bad.clone(), URL.into()],
            vec![OsString::from_vec(vec![b'-', 0xff]), URL.into()],
            vec![OsString::from_vec(vec![b'-', b'-', 0xff]), URL.into()],
        ] {
            assert!(matches!(parse_command(line), Err(Error::Usage(_))));
        }
        // A script path needs no UTF-8.
        let cfg = match parse_command(vec!["-s".into(), bad.clone(), URL.into()]) {
            Ok(Command::Bench { bench, .. }) => bench.config,
            _ => panic!("script path rejected"),
        };
        assert_eq!(cfg.script, Some(PathBuf::from(bad)));
    }

    #[test]
    fn version() {
        let version = version_line();
        assert!(version.starts_with(&format!("pace {} [epoll]", env!("CARGO_PKG_VERSION"))));
        for line in [&["-v"][..], &["--version"], &["--vers"], &["-v", "-t", "0"]] {
            assert!(
                matches!(parse_command(args(line)), Ok(Command::Version(ref v)) if *v == version)
            );
        }
        match parse_command(args(&["-v", URL])) {
            Ok(Command::Bench { print_version: true, .. }) => {}
            _ => panic!("-v with a URL must run"),
        }
        match parse_command(args(&[URL])) {
            Ok(Command::Bench { print_version: false, .. }) => {}
            _ => panic!("no -v, no version line"),
        }
    }

    #[test]
    fn help_wins() {
        for line in [&["-h"][..], &["--help"], &["--hel"], &[URL, "-h"], &["-t0", "-h"]] {
            assert!(matches!(parse_command(args(line)), Ok(Command::Help(_))), "{line:?}");
        }
    }

    #[test]
    fn method() {
        each_form("-m", "--method", "POST", |cfg| assert_eq!(cfg.config.method, "POST"));
        assert_eq!(config(&[URL]).method, "GET");
        assert_eq!(config(&["--meth", "HEAD", URL]).method, "HEAD");
        // --metrics starts the same way.
        assert!(error(&["--m", "HEAD", URL]).starts_with("option '--m' is ambiguous"));
        // Sent as typed: methods are case-sensitive.
        assert_eq!(config(&["-m", "purge", URL]).method, "purge");
        assert_eq!(config(&["-mPUT", "-mDELETE", URL]).method, "DELETE");
        assert_eq!(
            error(&["-m", "GE T", URL]),
            "invalid value for '-m': 'GE T' is not an HTTP method (e.g. GET, POST, HEAD)"
        );
        assert!(error(&["--method=", URL]).starts_with("invalid value for '--method': ''"));
        assert_eq!(error(&[URL, "-m"]), "option '-m' needs a value");
    }

    #[test]
    fn body() {
        assert_eq!(config(&[URL]).body, None);
        let cfg = config(&["--body", "a=b&c", URL]);
        assert_eq!(cfg.body.as_deref(), Some(&b"a=b&c"[..]));
        assert_eq!(config(&["--body=", URL]).body.as_deref(), Some(&b""[..]));
        assert_eq!(config(&[URL, "--body", "-x"]).body.as_deref(), Some(&b"-x"[..]));
        // The method stays as -m says (GET), as in wrk, oha and hey.
        assert_eq!(config(&["--body", "x", URL]).method, "GET");
        // Bodies need not be UTF-8.
        use std::os::unix::ffi::OsStringExt;
        let line = vec!["--body".into(), OsString::from_vec(vec![0xff, 0]), URL.into()];
        match parse_command(line) {
            Ok(Command::Bench { bench, .. }) => {
                assert_eq!(bench.config.body.as_deref(), Some(&[0xff, 0][..]))
            }
            _ => panic!("binary body rejected"),
        }
    }

    #[test]
    fn body_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("body.json");
        std::fs::write(&file, b"{\"a\":1}\n").unwrap();
        let file = file.to_str().unwrap();
        for line in [
            &["--body-file", file, URL][..],
            &[&format!("--body-file={file}"), URL],
            &["--body-", file, URL],
        ] {
            assert_eq!(config(line).body.as_deref(), Some(&b"{\"a\":1}\n"[..]), "{line:?}");
        }
        let missing = dir.path().join("nope.json");
        assert_eq!(
            setup_error(&["--body-file", missing.to_str().unwrap(), URL]),
            format!("cannot read --body-file {}: No such file or directory", missing.display())
        );
        assert_eq!(
            error(&["--body", "x", "--body-file", file, URL]),
            "--body and --body-file cannot be used together"
        );
        assert_eq!(
            error(&["--bo", "x", URL]),
            "option '--bo' is ambiguous; possibilities: '--body' '--body-file'"
        );
        // wrk2's --b is --batch_latency still.
        assert!(config(&["--b", URL]).batch_latency);
    }

    #[test]
    fn requests() {
        each_form("-n", "--requests", "100", |cfg| assert_eq!(cfg.config.requests, Some(100)));
        assert_eq!(config(&[URL]).requests, None);
        assert_eq!(config(&["-n1k", URL]).requests, Some(1000));
        assert_eq!(config(&["-n", "5", "-n", "7", URL]).requests, Some(7));
        assert_eq!(error(&["-n", "0", URL]), "-n/--requests must be at least 1");
        assert_eq!(
            error(&["-n", "many", URL]),
            "invalid value for '-n': 'many' is not a number (examples: 10, 1.5k, 2M)"
        );
        assert!(error(&["--requests", "1.5", URL]).contains("'--requests': '1.5' is not a whole"));
        assert!(error(&["-n", "-1", URL]).contains("'-n'"));
        assert_eq!(error(&[URL, "-n"]), "option '-n' needs a value");
        // Abbreviated: yicwang's --re stays --report_interval, wrk2's --r --rate.
        assert_eq!(config(&["--req", "3", URL]).requests, Some(3));
        for prefix in ["--re", "--rep"] {
            let cfg = bench(&[prefix, "1s", URL]);
            assert_eq!(cfg.outputs.report_interval, Some(Duration::from_secs(1)), "{prefix}");
        }
        for prefix in ["--r", "--ra"] {
            assert_eq!(config(&[prefix, "5", URL]).mode, Mode::Paced(PlanSpec::constant(5.0)));
        }
    }

    #[test]
    fn n_requests_bound_the_run() {
        let secs = |s| Some(Duration::from_secs(s));
        // The closed loop: open-ended, unless -d was typed.
        assert_eq!(config(&["-n", "100", URL]).duration, None);
        assert_eq!(config(&["-n", "100", "-d", "5s", URL]).duration, secs(5));
        // A plan of N requests at R lasts N/R, one interval past the last
        // (at 500/s, the 200th is due at 398 ms and the window ends at
        // 400 ms, as -d 400ms would)...
        let n_over_r = Some(Duration::from_millis(400));
        assert_eq!(config(&["-R", "500", "-n", "200", URL]).duration, n_over_r);
        // ...counted after the warm-up...
        let warm = config(&["-R", "500", "-n", "200", "--warmup", "1s", URL]);
        assert_eq!(warm.duration, n_over_r);
        // ...and at the latest at the end of -d or of the stages.
        assert_eq!(config(&["-R", "500", "-n", "1M", "-d", "5s", URL]).duration, secs(5));
        assert_eq!(config(&["--stages", "2s:100", "-n", "1M", URL]).duration, secs(2));
        assert_eq!(config(&["-R", "1", "-n", "100", URL]).duration, Some(Duration::from_secs(100)));
    }

    /// A targets file in a temporary directory.
    fn targets_file(text: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("targets.txt");
        std::fs::write(&path, text).unwrap();
        (dir, path.to_str().unwrap().to_string())
    }

    const TARGETS: &str = "GET http://127.0.0.1:8080/a\n\nPOST http://127.0.0.1:8080/b\nX: 1\n";

    #[test]
    fn targets_give_the_url_when_the_command_line_has_none() {
        let (_dir, file) = targets_file(TARGETS);
        let cfg = config(&["--targets", &file, "-t1"]);
        assert_eq!(cfg.target.url, "http://127.0.0.1:8080/a");
        assert!(cfg.script_args.is_empty());
        let targets = cfg.targets.unwrap();
        let lines: Vec<(usize, &str)> =
            targets.list.iter().map(|t| (t.line, t.method.as_str())).collect();
        assert_eq!(lines, [(1, "GET"), (3, "POST")]);
        assert_eq!(cfg.targets_order, TargetsOrder::Sequential);
        // A URL on the command line is still the run's, and wrk's rules
        // for the words after it hold.
        let cfg = config(&[&format!("--targets={file}"), "http://127.0.0.1:8080/x", "arg"]);
        assert_eq!(cfg.target.url, "http://127.0.0.1:8080/x");
        assert_eq!(cfg.script_args, ["arg"]);
        // -v with targets and no URL runs.
        match parse_command(args(&["-v", "--targets", &file])) {
            Ok(Command::Bench { print_version: true, .. }) => {}
            _ => panic!("-v --targets must run"),
        }
    }

    #[test]
    fn targets_options() {
        let (_dir, file) = targets_file(TARGETS);
        for order in ["--targets-order=random", "--targets-o=random", "--targets-order"] {
            let mut line = vec!["--targets", &file, order, URL];
            if order == "--targets-order" {
                line.insert(3, "random");
            }
            assert_eq!(config(&line).targets_order, TargetsOrder::Random, "{line:?}");
        }
        let cfg = config(&["--targets", &file, "--targets-order", "sequential", URL]);
        assert_eq!(cfg.targets_order, TargetsOrder::Sequential);
        assert_eq!(
            error(&["--targets", &file, "--targets-order", "shuffled", URL]),
            "invalid value for '--targets-order': 'shuffled' is not 'sequential' or 'random'"
        );
        assert_eq!(error(&["--targets-order", "random", URL]), "--targets-order needs --targets");
        assert_eq!(
            error(&["--targets", &file, "-m", "PUT"]),
            "-m/--method cannot be used with --targets: each target names its method"
        );
        let cfg = config(&["--targets", &file, "--body", "default"]);
        assert_eq!(cfg.body.as_deref(), Some(&b"default"[..]));
        assert_eq!(
            error(&["--ta", &file, URL]),
            "option '--ta' is ambiguous; possibilities: '--targets' '--targets-order'"
        );
    }

    #[test]
    fn tls_options() {
        const HTTPS: &str = "https://127.0.0.1:8443/";
        let cfg = config(&["--tls-server-name", "pace.test", HTTPS]);
        assert_eq!(cfg.tls.server_name, Some(ServerName::try_from("pace.test").unwrap()));
        assert!(cfg.tls.cacert.is_none() && cfg.tls.client_certificate.is_none());
        assert_eq!(
            error(&["--tls-server-name", "a b", HTTPS]),
            "invalid value for '--tls-server-name': 'a b' is not a DNS name or an IP address"
        );
        // Refused, not ignored, where no TLS is spoken; -k is wrk's.
        assert_eq!(
            error(&["--tls-server-name", "pace.test", URL]),
            "--tls-server-name applies to https:// only, and the run's URL is http://"
        );
        assert_eq!(
            error(&[URL, "--cacert", "ca.pem"]),
            "--cacert applies to https:// only, and the run's URL is http://"
        );
        assert!(config(&["-k", URL]).tls.insecure);
        assert_eq!(
            error(&["--key", "key.pem", HTTPS]),
            "--key needs --cert (the client certificate)"
        );
        // The files are read before anything starts.
        let missing = setup_error(&["--cacert", "/nonexistent/ca.pem", HTTPS]);
        assert_eq!(missing, "cannot read --cacert /nonexistent/ca.pem: No such file or directory");
        let missing = setup_error(&["--cert", "/nonexistent/c.pem", "--key", "k.pem", HTTPS]);
        assert_eq!(missing, "cannot read --cert /nonexistent/c.pem: No such file or directory");
    }

    #[test]
    fn targets_errors_are_usage_errors_but_an_unreadable_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.txt");
        assert_eq!(
            setup_error(&["--targets", missing.to_str().unwrap()]),
            format!("cannot read --targets file {}: No such file or directory", missing.display())
        );
        let (_dir, file) = targets_file("GET http://127.0.0.1:8080/\nnot a header\n");
        assert_eq!(
            error(&["--targets", &file]),
            format!("{file}:2: invalid header 'not a header': expected 'Name: value'")
        );
        // Several origins: each thread needs a connection to each.
        let (_dir, file) =
            targets_file("GET http://127.0.0.1:8080/a\nGET http://localhost:8080/b\n");
        assert_eq!(
            error(&["--targets", &file, "-t2", "-c3"]),
            "the targets name 2 origins (scheme, host and port) and every thread needs a \
             connection to each: with -t 2, -c must be at least 4"
        );
        let cfg = config(&["--targets", &file, "-t2", "-c4"]);
        assert_eq!(cfg.target.url, "http://127.0.0.1:8080/a");
        // Still: no URL and no targets.
        assert_eq!(error(&["-m", "POST"]), "missing URL (try 'pace --help')");
    }

    #[test]
    fn a_first_targets_credentials_stay_its_own() {
        let (_dir, file) =
            targets_file("GET http://u:p@127.0.0.1:8080/a\nGET http://127.0.0.1:8080/b\n");
        assert!(config(&["--targets", &file]).headers.is_empty());
        let cfg = config(&["--targets", &file, "http://v:w@127.0.0.1:8080/"]);
        assert_eq!(cfg.headers, vec![("Authorization".into(), "Basic djp3".into())]);
    }

    /// Every prefix of every long option of the table and of the programs
    /// it reproduces, in alphabetical order, each once.
    fn every_prefix() -> Vec<String> {
        let family = WRK_FAMILY.iter().flat_map(|program| program.iter().copied());
        let names = SPECS.iter().map(|spec| spec.long).chain(family);
        let prefixes: std::collections::BTreeSet<String> =
            names.flat_map(|name| (1..=name.len()).map(move |n| name[..n].to_string())).collect();
        prefixes.into_iter().collect()
    }

    /// What getopt_long in a program with these long options reads
    /// `typed` as: an exact name, or the one name it is a prefix of.
    fn read_by(program: &[&'static str], typed: &str) -> Option<&'static str> {
        if let Some(exact) = program.iter().find(|long| **long == typed) {
            return Some(exact);
        }
        let named: Vec<&&str> = program.iter().filter(|long| long.starts_with(typed)).collect();
        (named.len() == 1).then(|| *named[0])
    }

    #[test]
    fn every_abbreviation_of_the_wrk_family_keeps_its_meaning() {
        let flag_of = |long: &str| SPECS.iter().find(|spec| spec.long == long).map(|s| s.flag);
        for program in WRK_FAMILY {
            for long in *program {
                assert!(flag_of(long).is_some(), "--{long} is not pace's");
            }
        }
        for typed in every_prefix() {
            let meant: Vec<&str> =
                WRK_FAMILY.iter().filter_map(|program| read_by(program, &typed)).collect();
            // The programs never disagree, so pace can keep what each read.
            assert!(meant.windows(2).all(|pair| pair[0] == pair[1]), "--{typed}: {meant:?}");
            let Some(meant) = meant.first() else { continue };
            let found = match resolve_long(SPECS, WRK_FAMILY, &typed) {
                Resolution::Unique(spec) | Resolution::Inherited(spec) => spec.flag,
                _ => panic!("--{typed} is not --{meant}"),
            };
            assert!(found == flag_of(meant).unwrap(), "--{typed} is not --{meant}");
        }
    }

    /// Markdown table rows: the prefixes typed (grouped when they resolve
    /// alike), then what they resolve to.
    fn table(rows: Vec<(String, Vec<String>)>, head: &str) -> String {
        let mut grouped: Vec<(Vec<String>, Vec<String>)> = Vec::new();
        for (typed, names) in rows {
            match grouped.iter_mut().find(|(_, same)| *same == names) {
                Some((prefixes, _)) => prefixes.push(typed),
                None => grouped.push((vec![typed], names)),
            }
        }
        let code = |words: &[String]| {
            words.iter().map(|w| format!("`--{w}`")).collect::<Vec<_>>().join(", ")
        };
        let mut text = format!("| typed | {head} |\n|---|---|\n");
        for (prefixes, names) in grouped {
            text.push_str(&format!("| {} | {} |\n", code(&prefixes), code(&names)));
        }
        text
    }

    #[test]
    fn where_the_connections_go() {
        assert_eq!(config(&[URL]).reach, Reach::default());
        let reach = config(&["--unix-socket", "/run/a.sock", URL]).reach;
        assert_eq!(reach.unix_socket.as_deref(), Some(Path::new("/run/a.sock")));
        let reach = config(&["--connect-to", "a:1:b:2", "--connect-to=::c:", "-6", URL]).reach;
        assert_eq!(reach.connect_to.len(), 2);
        assert_eq!(reach.family, Some(Family::V6));
        assert_eq!(config(&["-6", "-4", URL]).reach.family, Some(Family::V4));
        assert_eq!(config(&["--ipv6", URL]).reach.family, Some(Family::V6));
        let bad = error(&["--connect-to", "a:1:b", URL]);
        assert!(
            bad.starts_with("invalid value for '--connect-to': 'a:1:b' is not HOST:PORT:ADDR:PORT")
        );
        for line in [
            &["--unix-socket", "/s", "-4", URL][..],
            &["--unix-socket", "/s", "--connect-to", "::b:", URL],
        ] {
            assert!(
                error(line).starts_with("--unix-socket cannot be used with --connect-to or -4/-6")
            );
        }
        assert_eq!(error(&["--unix-socket", "", URL]), "--unix-socket needs the path of a socket");
        for line in [
            &["--proxy", "http://p:3128", "--unix-socket", "/s", URL][..],
            &["--proxy", "env", "--connect-to", "::b:", URL],
        ] {
            assert!(error(line).starts_with("--proxy cannot be used with --unix-socket or"));
        }
        let proxied = config(&["--proxy", "http://p:3128", "-4", URL]);
        assert_eq!(proxied.reach.family, Some(Family::V4));
    }

    /// README's two lists of abbreviations, from the parser: those read as
    /// the wrk family read them though pace's options share them, and
    /// those that are ambiguous.
    fn readme_tables() -> (String, String) {
        let (mut inherited, mut ambiguous) = (Vec::new(), Vec::new());
        for typed in every_prefix() {
            match resolve_long(SPECS, WRK_FAMILY, &typed) {
                Resolution::Inherited(spec) => inherited.push((typed, vec![spec.long.to_string()])),
                Resolution::Ambiguous(specs) => {
                    let names = specs.iter().map(|spec| spec.long.to_string()).collect();
                    ambiguous.push((typed, names))
                }
                Resolution::Unique(_) | Resolution::Unknown => {}
            }
        }
        (table(inherited, "is, as in wrk and its forks"), table(ambiguous, "could be"))
    }

    #[test]
    fn readme_lists_the_abbreviations_the_parser_reads() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        let (inherited, ambiguous) = readme_tables();
        for table in [inherited, ambiguous] {
            assert!(
                readme.contains(&table),
                "README.md must list, as the parser reads them:\n{table}"
            );
        }
    }
}
