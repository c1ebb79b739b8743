//! `pace [options] <url>`: one benchmark from validated options to the
//! printed report. Ctrl-C (SIGINT) or SIGTERM ends the run early and the
//! report of what was measured is still printed; a second Ctrl-C quits at
//! once.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::blocking::{self, Deadline, Exchange};
use crate::config::origins::Origins;
use crate::config::{BenchConfig, Mode};
use crate::description::{CallKind, Description};
use crate::endpoint::Endpoint;
use crate::engine::{
    Before, Engine, Finished, Observer, Overrun, Recording, EARLY_EVERY, HAND_OVER_EVERY,
};
use crate::error::Error;
use crate::grpc::{self, reflection};
use crate::http::request::count_requests;
use crate::limits;
use crate::metrics::{self, Metrics, MetricsOptions};
use crate::output::{OutputOptions, Outputs, Reporting};
use crate::progress::{self, Progress};
use crate::protocol::Protocol;
use crate::report::{self, validity, ReportOptions};
use crate::requests;
use crate::resolve::{resolve_target, Probe};
use crate::script::{Interrupter, Script, ThreadScript};
use crate::signals::{Interruption, Signals, Stop};
use crate::slo::{self, Objective};
use crate::stats::{Interval, RunResult, Stats};
use crate::sys;
use crate::target::{Scheme, Target};
use crate::tls::TlsClient;
use crate::workload::{NoScript, Requests, Scripted, Workload};

/// Upper bound of the test connection made to each resolved address: a
/// long `--timeout` should not make a dead address stall the start.
const MAX_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long `done()` gets to stop after a signal interrupted it.
const DONE_GRACE: Duration = Duration::from_secs(1);

/// A benchmark as the command line asks for it: the run, and how it is
/// reported (each output's options are its own).
#[derive(Clone, Debug)]
pub struct Bench {
    pub config: BenchConfig,
    /// What the reports show (`-L`, `-U`, `--percentiles`, wrx's options).
    pub report: ReportOptions,
    /// Where the reports go (`-e`, `-p`, `-o`, `--hlog`, `--html`).
    pub outputs: OutputOptions,
    /// `--slo`: objectives judged on the final result (none: no verdict).
    pub slo: Vec<Objective>,
    /// `--strict`: a run that cannot be trusted exits 5
    /// ([`crate::report::validity`]).
    pub strict: bool,
    /// `--metrics`, `--metrics-linger`, `--metrics-push`.
    pub metrics: Option<MetricsOptions>,
    /// The live progress, when stderr is a terminal (`--no-progress`).
    pub progress: bool,
}

impl Bench {
    /// What the reports of this benchmark are made from.
    fn reporting(&self) -> Reporting {
        Reporting {
            run: Description::of(&self.config),
            report: self.report.clone(),
            outputs: self.outputs.clone(),
            slo: self.slo.clone(),
        }
    }
}

/// Runs the benchmark described by the command line and prints the
/// report; returns the exit code. In wrk's order: the script is loaded
/// first (a broken script stops pace before any connection), the output
/// files are opened, then the target is resolved, the thread states are
/// set up, the run happens, the report is printed, and the script's
/// `done()` runs last.
pub fn bench(bench: &Bench) -> Result<i32, Error> {
    let cfg = &bench.config;
    limits::check(cfg)?;
    let mut script = cfg.script.as_deref().map(|path| Script::load(path, cfg)).transpose()?;
    // A file that cannot be written stops pace before it connects, and so
    // does a --metrics address that cannot be listened on.
    let reporting = bench.reporting();
    let metrics = Metrics::start(bench.metrics.as_ref(), &reporting.run)?;
    let mut outputs = Outputs::start(reporting)?;
    // From here on a signal is pace's to handle: during the checks before
    // the run (each waits in short steps and heeds it), it ends pace with
    // its exit code.
    let signals = Signals::install()?;
    let stop = signals.stop();
    let reached = match reach(cfg, &stop) {
        Ok(reached) => reached,
        Err(error) => return stopped_before_the_run(&signals).unwrap_or(Err(error)),
    };
    if let Some(reflected) = &reached.reflected {
        outputs.grpc_kind(reflected.grpc_call.as_ref().map(CallKind::of));
    }
    let cfg = reached.reflected.as_ref().unwrap_or(cfg);
    let Reached { places, endpoints, .. } = reached;
    let endpoints = &endpoints;
    let watch = Watch { progress: bench.progress, metrics: metrics.as_ref() };
    let outcome = match script.take() {
        Some(mut script) => {
            requests::note_script_overrides(cfg);
            let workload = {
                let _at_once = signals.exit_at_once();
                scripted_workload(cfg, endpoints, &mut script)?
            };
            let engine = match checked_engine(cfg, places, &signals) {
                Ok(engine) => engine,
                Err(stopped) => return stopped,
            };
            let measured = measure_with(engine, workload, &signals, &mut outputs, watch);
            let (mut finished, interval_error) = measured?;
            let threads = std::mem::take(&mut finished.scripts);
            let done = Some((script, threads));
            conclude(bench, outputs, done, finished, interval_error, &signals)
        }
        None => {
            let workload = requests::workload(cfg, &endpoints[0]);
            let engine = match checked_engine(cfg, places, &signals) {
                Ok(engine) => engine,
                Err(stopped) => return stopped,
            };
            let measured = measure_with(engine, workload, &signals, &mut outputs, watch);
            let (finished, interval_error) = measured?;
            conclude(bench, outputs, None, finished, interval_error, &signals)
        }
    };
    let Some(metrics) = metrics else { return outcome };
    // The final figures, after the report, the files and done(): pushed,
    // then served for the last scrapes. A push that failed is a setup
    // error, as a file that could not be written (a verdict or a signal
    // keeps its exit code, and the failure is said); a signal during the
    // push ends it, with the signal's exit code.
    let push_stop = signals.stop_from_now();
    let pushed = metrics.push(&push_stop);
    metrics.linger(&signals);
    match (outcome, pushed) {
        (Ok(0), Err(error)) if push_stop.heard() => {
            eprintln!("pace: {error}");
            Ok(signals.received().map_or(0, Interruption::exit_code))
        }
        (Ok(0), Err(error)) => Err(error),
        (outcome, Err(error)) => {
            eprintln!("pace: {error}");
            outcome
        }
        (outcome, Ok(())) => outcome,
    }
}

/// Where a run's requests go, found before anything is sent.
pub struct Reached {
    /// Each origin, and the address its connections go to.
    pub places: Vec<(Target, Endpoint)>,
    /// Every address of the first origin (a script's `wrk.lookup` and
    /// `wrk.connect` see them).
    pub endpoints: Vec<Endpoint>,
    /// With `--grpc` and no schema: the configuration with the call whose
    /// schema the server's reflection gave (see [`with_reflected_call`]).
    pub reflected: Option<BenchConfig>,
}

/// Resolves every origin of `cfg` and checks it is reachable: with
/// --unix-socket, each goes to the socket; through a proxy, every
/// connection goes to the proxy; else --connect-to and -4/-6 apply to
/// each origin. Then, with --grpc and no schema, asks the server for it.
pub fn reach(cfg: &BenchConfig, stop: &Stop) -> Result<Reached, Error> {
    let origins = Origins::of(cfg);
    let probe_within = cfg.timeout.min(MAX_PROBE_TIMEOUT);
    let probe = match cfg.protocol {
        Protocol::Http3 => Probe::Udp,
        _ => Probe::Tcp,
    };
    let resolved = match cfg.proxy.as_ref().and_then(|route| route.proxy()) {
        Some(proxy) => proxy
            .resolve(&cfg.reach, probe_within, stop)
            .map(|endpoints| vec![endpoints; origins.list.len()])?,
        None => (origins.list.iter())
            .map(|(target, _)| resolve_target(target, &cfg.reach, probe, probe_within, stop))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let endpoints = resolved[0].clone();
    let reflected = with_reflected_call(cfg, &endpoints[0], stop)?;
    let places = (origins.list.iter().zip(resolved))
        .map(|((target, _), mut endpoints)| (target.clone(), endpoints.swap_remove(0)))
        .collect();
    Ok(Reached { places, endpoints, reflected })
}

/// With `--grpc` and no schema, the run's configuration with the call
/// whose schema the server's reflection gave (its message encoded once);
/// None without. The reflection call goes on a connection of its own to
/// `endpoint`, within [`MAX_PROBE_TIMEOUT`].
fn with_reflected_call(
    cfg: &BenchConfig,
    endpoint: &Endpoint,
    stop: &Stop,
) -> Result<Option<BenchConfig>, Error> {
    let Some(wanted) = &cfg.grpc_from_server else { return Ok(None) };
    let (service, _) = grpc::schema::service_and_method(&wanted.name).map_err(Error::Usage)?;
    let deadline = Deadline::after(MAX_PROBE_TIMEOUT, stop);
    let authority = cfg.target.host_header();
    let scheme = match cfg.target.scheme {
        Scheme::Https => "https",
        Scheme::Http => "http",
    };
    let server = reflection::Server { scheme, authority: &authority };
    let failed = |why: String| {
        Error::Setup(format!("--grpc {}: asking {endpoint} for the schema: {why}", wanted.name))
    };
    let ask = |exchange: &mut dyn Exchange| {
        reflection::schema(exchange, &server, service).map_err(&failed)
    };
    let pool = match cfg.target.scheme {
        Scheme::Https => {
            let tls = TlsClient::new(&cfg.target.host, &cfg.tls, cfg.protocol.alpn())?;
            tls.check_handshake(endpoint, &deadline, ask)?
        }
        Scheme::Http => {
            let socket =
                blocking::connect(endpoint, &deadline).map_err(|e| failed(e.to_string()))?;
            ask(&mut deadline.on(&socket))?
        }
    };
    let call =
        grpc::call::prepare_with(&pool, &wanted.name, &wanted.options).map_err(Error::Usage)?;
    let mut reflected = cfg.clone();
    call.write_fixed_metadata(&mut reflected.headers);
    reflected.grpc_messages = call.messages.clone();
    reflected.grpc_call = Some(call.clone());
    reflected.target.path = format!("/{}", call.method);
    reflected.grpc = Some(call.method);
    reflected.grpc_from_server = None;
    Ok(Some(reflected))
}

/// The engine, every origin checked (see [`Engine::prepare`]); a signal
/// during the checks, or before them during the script's setup() or
/// init(), ends pace with its exit code (the `Err`).
fn checked_engine<'a>(
    cfg: &'a BenchConfig,
    places: Vec<(Target, Endpoint)>,
    signals: &Signals,
) -> Result<Engine<'a>, Result<i32, Error>> {
    let engine = Engine::prepare(cfg, places, &signals.stop())
        .map_err(|error| stopped_before_the_run(signals).unwrap_or(Err(error)))?;
    match stopped_before_the_run(signals) {
        Some(stopped) => Err(stopped),
        None => Ok(engine),
    }
}

/// When a signal arrived before the run: says so, and gives its exit code.
fn stopped_before_the_run(signals: &Signals) -> Option<Result<i32, Error>> {
    let signal = signals.received()?;
    eprintln!("pace: stopped by {} before the run", signal.name());
    Some(Ok(signal.exit_code()))
}

/// After the run: the report and the files, the script's `done()` (with
/// the main script and the threads' states, `done`), and the exit code.
fn conclude<S>(
    bench: &Bench,
    outputs: Outputs,
    done: Option<(Script, Vec<ThreadScript>)>,
    finished: Finished<S>,
    interval_error: Option<Error>,
    signals: &Signals,
) -> Result<i32, Error> {
    sys::flush_c_stdout();
    let verdicts = slo::verdicts(&bench.slo, &outputs.reporting().run, &finished.result);
    let validity =
        bench.strict.then(|| validity::judge(&outputs.reporting().run, &finished.result));
    let written = outputs.finish(&finished.result);
    report_interruption(&finished.result);
    if let Some(route) = &bench.config.proxy {
        route.note_refusals(finished.result.total.outcomes.http_status(407));
    }
    if !finished.overran.is_empty() {
        return overran(&finished);
    }
    if let Some(error) = finished.script_error {
        return Err(match bench.config.script {
            Some(_) => Error::Script(format!("the script failed, the run was stopped: {error}")),
            // Without a script, what stops a run is a message a --data
            // template made for one call.
            None => Error::Usage(format!("a call's message, the run was stopped: {error}")),
        });
    }
    if let Some((mut script, threads)) = done {
        if let Some(signal) = done_watched(&mut script, &finished.result, threads, signals)? {
            return Ok(signal.exit_code());
        }
    }
    if let Some(error) = interval_error {
        return Err(error);
    }
    written?;
    // A signal's exit code wins over the verdict (the verdict is printed),
    // and a failed objective over an untrusted run.
    let json = bench.outputs.json;
    match exit_code(&finished.result) {
        0 => match (slo::gate(&verdicts, json), &validity) {
            (0, Some(validity)) => Ok(validity::gate(validity, json)),
            (gate, _) => Ok(gate),
        },
        signal => Ok(signal),
    }
}

/// Prints the header, runs the benchmark against `endpoint` and returns
/// what it measured.
pub fn measure<S: Scripted>(
    bench: &Bench,
    endpoint: &Endpoint,
    workload: Workload<S>,
) -> Result<Finished<S>, Error> {
    let cfg = &bench.config;
    let signals = Signals::install()?;
    let mut outputs = Outputs::start(bench.reporting())?;
    let places = vec![(cfg.target.clone(), endpoint.clone())];
    let engine = Engine::prepare(cfg, places, &signals.stop())?;
    let watch = Watch { progress: bench.progress, metrics: None };
    measure_with(engine, workload, &signals, &mut outputs, watch).map(|(finished, _)| finished)
}

/// What shows the run while it goes on, besides the reporting periods:
/// the live progress (when wanted) and the metrics.
struct Watch<'a> {
    progress: bool,
    metrics: Option<&'a Metrics>,
}

/// [`measure`] with `engine` (its origins checked), writing the header and
/// every reporting period (as soon as it is complete) to `outputs`, and
/// every short period to `metrics`. Also returns the first error of those
/// writes: the run goes on regardless.
fn measure_with<S: Scripted>(
    engine: Engine,
    workload: Workload<S>,
    signals: &Signals,
    outputs: &mut Outputs,
    watch: Watch,
) -> Result<(Finished<S>, Option<Error>), Error> {
    // What scripts print goes through C's stdio, the reports through
    // Rust's: each report first pushes out what the scripts printed before
    // it (in setup() and init() before the header), so that lines never
    // interleave and the order is wrk's (script output, the report, then
    // what done() prints).
    sys::flush_c_stdout();
    outputs.allowed_streams(engine.allowed_streams());
    outputs.header()?;
    let Reporting { run, report, outputs: options, .. } = outputs.reporting();
    let progress = Progress::start(run, watch.progress);
    let metrics = watch.metrics;
    let recording =
        Recording { period: options.period(run.duration), series: report.series_slot() };
    let periodic = options.report_interval.is_some();
    let mut watcher = Watcher { periodic, outputs, progress, metrics, error: None };
    let run = engine.run(workload, recording, signals, &mut watcher);
    if let Some(metrics) = metrics {
        metrics.finish();
    }
    // Gone before anything else is printed, also when the run failed.
    let Watcher { progress, error: interval_error, .. } = watcher;
    drop(progress);
    let mut finished = run?;
    finished.result.interrupted = signals.received();
    Ok((finished, interval_error))
}

/// What the run shows while it goes on: the reporting periods, as soon as
/// each is complete, the live progress and the metrics.
struct Watcher<'a> {
    /// `-p`: the periods have reports of their own.
    periodic: bool,
    outputs: &'a mut Outputs,
    progress: Option<Progress>,
    metrics: Option<&'a Metrics>,
    /// The first error writing a period (the run goes on regardless).
    error: Option<Error>,
}

impl Observer for Watcher<'_> {
    fn interval(&mut self, interval: &Interval) {
        // A period report (-p) may go to the terminal the progress is on;
        // the periods of --hlog and --html alone print nothing.
        if let Some(progress) = self.progress.as_mut().filter(|_| self.periodic) {
            progress.clear();
        }
        sys::flush_c_stdout();
        if let Err(error) = self.outputs.interval(interval) {
            self.error.get_or_insert(error);
        }
    }

    fn progress_every(&self) -> Option<Duration> {
        let progress = self.progress.is_some().then_some(progress::EVERY);
        let metrics = self.metrics.is_some().then_some(metrics::EVERY);
        progress.into_iter().chain(metrics).min()
    }

    fn progress(&mut self, latest: &Interval, total: &Stats) {
        if let Some(metrics) = self.metrics {
            metrics.add(latest);
        }
        if let Some(progress) = &mut self.progress {
            progress.show(latest, total);
        }
    }

    fn before_measuring(&mut self, now: Before) {
        if let Some(progress) = &mut self.progress {
            progress.before(now);
        }
    }

    fn stopping(&mut self, timeout: Duration) {
        if let Some(progress) = &mut self.progress {
            progress.clear();
        }
        eprintln!(
            "pace: stopping: the requests in flight get up to {} (--timeout) to answer; \
             Ctrl-C again to stop at once",
            crate::units::format_time_us(timeout.as_micros() as f64)
        );
    }
}

/// Threads still running when the run was over (or stopped): said on
/// stderr, with the exit code of the signal that stopped the run, or 3 for
/// a script that did not return (101 for a thread outside any script, which
/// would be pace's own fault). `done()` is not called (a thread's state may
/// still be busy).
fn overran<S>(finished: &Finished<S>) -> Result<i32, Error> {
    let when = match finished.result.interrupted {
        Some(signal) => format!("after {}", signal.name()),
        None => "after the end of the run".to_string(),
    };
    let at_most = |every: Duration| crate::units::format_time_us(every.as_micros() as f64);
    for Overrun { thread, call, scripted, given_up } in &finished.overran {
        let call = call.map_or("Lua code".to_string(), |call| format!("script's {call}"));
        match (scripted, given_up) {
            (true, true) => eprintln!(
                "pace: thread {thread}'s {call} did not return {when}, and could not be \
                 interrupted (LuaJIT cannot interrupt a loop it compiled); what that thread \
                 measured in the last {} before the call is missing",
                at_most(EARLY_EVERY)
            ),
            (true, false) => eprintln!(
                "pace: thread {thread}'s {call} was still running {when}; it was interrupted"
            ),
            (false, _) => eprintln!(
                "pace: thread {thread} did not finish {when}; what it measured in its last {} \
                 is missing",
                at_most(HAND_OVER_EVERY)
            ),
        }
    }
    if let Some(error) = &finished.script_error {
        eprintln!("pace: {error}");
    }
    let scripted = finished.overran.iter().any(|o| o.scripted);
    match finished.result.interrupted {
        Some(signal) => Ok(signal.exit_code()),
        None if scripted => {
            Err(Error::Script("the script did not return when the run was over".into()))
        }
        None => Err(Error::Internal("a thread did not finish when the run was over".into())),
    }
}

/// Calls the script's `done()` (also after a signal stopped the run, as
/// wrk does); a signal during it interrupts it and its exit code is
/// returned (the report is out already).
fn done_watched(
    script: &mut Script,
    result: &RunResult,
    threads: Vec<ThreadScript>,
    signals: &Signals,
) -> Result<Option<Interruption>, Error> {
    let interrupter = script.interrupter();
    let returned = AtomicBool::new(false);
    let signals_before = signals.count();
    let outcome = thread::scope(|scope| {
        scope.spawn(|| watch_done(&interrupter, &returned, signals, signals_before));
        let outcome = script.done(result, threads);
        returned.store(true, Ordering::SeqCst);
        outcome
    });
    let interrupted = signals.count() > signals_before;
    match (outcome, signals.received()) {
        (Err(_), Some(signal)) if interrupted => {
            eprintln!("pace: the script's done() was interrupted by {}", signal.name());
            Ok(Some(signal))
        }
        (outcome, _) => outcome.map(|()| None),
    }
}

/// Waits for `done()` to return; on a signal after `signals_before`,
/// interrupts it, and if it still does not return (a compiled loop),
/// exits: the report and the files are complete already.
fn watch_done(
    interrupter: &Interrupter,
    returned: &AtomicBool,
    signals: &Signals,
    signals_before: usize,
) {
    while !returned.load(Ordering::SeqCst) {
        if let Some(signal) = signals.received().filter(|_| signals.count() > signals_before) {
            interrupter.interrupt();
            let deadline = Instant::now() + DONE_GRACE;
            while !returned.load(Ordering::SeqCst) {
                if Instant::now() >= deadline {
                    eprintln!(
                        "pace: the script's done() did not stop after {} (LuaJIT cannot \
                         interrupt a loop it compiled)",
                        signal.name()
                    );
                    sys::flush_c_stdout();
                    std::process::exit(signal.exit_code());
                }
                thread::sleep(Duration::from_millis(10));
            }
            return;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// 0, or the exit code of the signal that interrupted the run.
pub fn exit_code(result: &RunResult) -> i32 {
    result.interrupted.map_or(0, |signal| signal.exit_code())
}

/// Every thread sends the requests of the command line to `endpoint` (see
/// [`crate::requests`]): `-m` of the URL's path with `Host`, the `-H`
/// headers and the body, or the `--targets`, thread i starting at request i.
pub fn fixed_workload(cfg: &BenchConfig, endpoint: &Endpoint) -> Workload<NoScript> {
    requests::workload(cfg, endpoint)
}

/// One Lua state per thread, set up in wrk's order. As wrk's
/// `script_verify_request`, the first request of the first thread must
/// parse and fixes the pipelining depth (the number of requests in it).
pub fn scripted_workload(
    cfg: &BenchConfig,
    endpoints: &[Endpoint],
    script: &mut Script,
) -> Result<Workload<ThreadScript>, Error> {
    script.set_addrs(endpoints)?;
    let paced = matches!(cfg.mode, Mode::Paced(_));
    let mut heads: Option<Arc<[bool]>> = None;
    let mut threads = Vec::with_capacity(cfg.threads);
    for _ in 0..cfg.threads {
        let mut thread = script.thread(endpoints[0].clone())?;
        let heads = match &heads {
            Some(heads) => heads.clone(),
            None => {
                let first = thread.request()?.ok_or_else(|| {
                    Error::Script(
                        "the script's first request() returned nil: pace needs a request to \
                         learn how many requests a batch holds"
                            .into(),
                    )
                })?;
                let batch = count_requests(&first).map_err(|e| {
                    Error::Script(format!("the script's request is not valid HTTP: {e}"))
                })?;
                if thread.has_delay() && paced {
                    eprintln!(
                        "pace: delay() is ignored with -R: the plan sets when requests are sent"
                    );
                }
                heads.insert(batch.is_head.into()).clone()
            }
        };
        if paced {
            thread.ignore_delay();
        }
        threads.push(Requests::Scripted { script: thread, heads });
    }
    Ok(Workload { threads })
}

/// Prints the report for a finished run.
pub fn print_result(out: &mut dyn Write, bench: &Bench, result: &RunResult) -> Result<(), Error> {
    let run = Description::of(&bench.config);
    let written = report::text::write_report(out, &run, &bench.report, result);
    print_ignoring_closed_stdout(written)?;
    report_interruption(result);
    Ok(())
}

/// Says on stderr when a signal ended the run early.
fn report_interruption(result: &RunResult) {
    if let Some(signal) = result.interrupted {
        eprintln!(
            "pace: run stopped early by {}; the report covers what was measured",
            signal.name()
        );
    }
}

/// Output to a closed pipe (`pace ... | head`) is not an error worth a
/// message; anything else is.
fn print_ignoring_closed_stdout(result: io::Result<()>) -> Result<(), Error> {
    match result {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Error::Setup(format!("cannot write the report: {}", crate::error::io_reason(&e))))
        }
        _ => Ok(()),
    }
}
