//! The load engine: one OS thread per `-t`, each running its own event loop
//! over its own connections ([`worker`]), started together on a common
//! start line, their measurements collected period by period and merged.
//!
//! The run's protocol is chosen here, once: the workers and connections
//! are generic over it ([`protocol::Protocol`]: HTTP/1.1 in [`http1`],
//! HTTP/2 in [`http2`]), so nothing on the hot path asks which it is.
//! Adding a protocol is one file here implementing the trait (with its
//! link, [`link`]), and one line in [`Engine::run`].

mod conn;
mod connections;
mod datagram;
mod http1;
mod http2;
mod http3;
mod intervals;
mod link;
mod origin;
mod parked;
mod periods;
pub(crate) mod protocol;
mod recorder;
mod routed;
mod schedule;
mod source;
mod start_line;
/// How the calls of `call` stream: the messages each sends
/// (client-streaming and bidirectional methods), the replies of any
/// streaming call counted.
fn streaming(call: &Call) -> Streaming {
    let sends = call.stream.map(|plan| Sends {
        messages: (call.messages.iter())
            .filter_map(|message| match message {
                Message::Framed(framed) => Some(framed.clone()),
                // Refused for a stream when the call was prepared.
                Message::Template(_) => None,
            })
            .collect(),
        count: plan.count,
        interval_ns: duration_ns(plan.interval),
        answered: call.server_streaming(),
    });
    // A client-streaming call's one reply is counted too, so that what
    // its calls sent and got reads side by side.
    let replies = call.server_streaming() || sends.is_some();
    Streaming { replies, sends }
}

#[cfg(test)]
mod testing;
mod wake;
mod watchdog;
mod worker;

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, SystemTime};

use crate::config::origins::{target_labels, Origins};
use crate::config::{BenchConfig, Mode};
use crate::endpoint::Endpoint;
use crate::error::{io_reason, Error};
use crate::grpc::call::{Call, Message};
use crate::plan::Arrival;
use crate::protocol::Protocol as Choice;
use crate::signals::{Signals, Stop};
use crate::stats::course::{self, CourseBuilder};
use crate::stats::{Interval, RunResult, Stats};
use crate::sys;
use crate::target::Target;
use crate::workload::{Interrupt, Requests, Scripted, Workload};
use connections::{ConnectionSetup, Connections};
use http1::{Http1, Http1Setup};
use http2::{Http2, Http2Setup, Sends, Streaming};
use http3::{Http3, Http3Setup};
use intervals::IntervalCollector;
use origin::Origin;
use periods::Periods;
pub use periods::HAND_OVER_EVERY;
use protocol::{Context, Protocol};
use recorder::{PeriodChannel, Recorder, RecorderSetup, ThreadInterval};
use source::{encode_all, ScriptText, Source};
use start_line::StartLine;
use watchdog::{Verdict, Watchdog};
use worker::{RunSetup, Worker, WorkerResult};

/// How often at most a thread that calls a script hands over what it
/// measured before its period ends (see `RecorderSetup::early_every_ns`):
/// often enough that a script that never returns costs the report little,
/// rarely enough that merging the shares costs nothing to speak of.
pub const EARLY_EVERY: Duration = Duration::from_millis(10);

/// How often the collecting thread looks at the threads that should be
/// done (see [`watchdog`]).
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// What a run records besides its totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recording {
    /// The reporting periods' length (`-p`, `--hlog`, `--html`), if any.
    pub period: Option<Duration>,
    /// The time series' slot (`--timeseries`), if any.
    pub series: Option<Duration>,
}

/// A finished run: the measurements, the thread scripts handed back (for
/// `done()`), the script error that stopped the run, if any, and the script
/// calls that did not return when the run was over.
pub struct Finished<S> {
    pub result: RunResult,
    pub scripts: Vec<S>,
    pub script_error: Option<String>,
    pub overran: Vec<Overrun>,
}

/// A thread still running when the run was over (or stopped): its script
/// call was interrupted, and it was given up if that did not stop it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overrun {
    pub thread: usize,
    /// The script function that was running, when one was.
    pub call: Option<&'static str>,
    /// Whether the thread runs a script at all.
    pub scripted: bool,
    /// The thread never finished: its last measurements are lost.
    pub given_up: bool,
}

/// What the caller of [`Engine::run`] hears while the run goes on, on the
/// thread that called it (never an engine thread).
pub trait Observer {
    /// A reporting period (`-p`, `--hlog`, `--html`) is complete.
    fn interval(&mut self, interval: &Interval);

    /// How often [`Observer::progress`] wants news, if at all.
    fn progress_every(&self) -> Option<Duration> {
        None
    }

    /// A period of at most [`Observer::progress_every`] is complete:
    /// its measurements, and the run's so far.
    fn progress(&mut self, _latest: &Interval, _total: &Stats) {}

    /// Before the measured run, a few times a second: what the threads
    /// are doing (there are no periods yet to show).
    fn before_measuring(&mut self, _now: Before) {}

    /// A signal stopped the sends, and the threads wait up to `timeout`
    /// for the responses in flight (a second signal stops them at once).
    fn stopping(&mut self, _timeout: Duration) {}
}

/// What a run does before its measured part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Before {
    /// Opening the connections (handshakes included).
    Connecting,
    /// Connected, waiting for `--start-at`: this long to go.
    Starting { left: Duration },
    /// Sending the warm-up, which is not counted: this long to go of it.
    WarmingUp { left: Duration, of: Duration },
}

impl Before {
    /// Where a run is at `now_ns`, given its start (None: the threads
    /// have not all connected yet); None once the measured part began.
    fn at(now_ns: u64, start_ns: Option<u64>, warmup: Duration) -> Option<Before> {
        let Some(start) = start_ns else { return Some(Before::Connecting) };
        let measured = start.saturating_add(duration_ns(warmup));
        if now_ns < start {
            Some(Before::Starting { left: Duration::from_nanos(start - now_ns) })
        } else if now_ns < measured {
            Some(Before::WarmingUp { left: Duration::from_nanos(measured - now_ns), of: warmup })
        } else {
            None
        }
    }
}

/// A benchmark that passed its checks and is ready to start.
pub struct Engine<'a> {
    cfg: &'a BenchConfig,
    origins: Arc<[Origin]>,
}

/// The threads of a run, started, and what the collecting thread keeps of
/// them.
struct Running<S> {
    handles: Vec<JoinHandle<WorkerResult<S>>>,
    interrupters: Vec<Option<Box<dyn Interrupt>>>,
    start_line: Arc<StartLine>,
    shares: Receiver<ThreadInterval>,
    recycle: Vec<Sender<Stats>>,
}

impl<'a> Engine<'a> {
    /// Over HTTP/2, the fewest concurrent streams per connection a server
    /// of the run allows, as the checks found (None: no limit, or not
    /// HTTP/2).
    pub fn allowed_streams(&self) -> Option<u32> {
        self.origins.iter().filter_map(|origin| origin.allowed_streams).min()
    }

    /// Checks every origin (`places`: its target and resolved endpoint,
    /// in the order of [`crate::config::origins::Origins`]) before the run
    /// (see [`Origin::prepare`]; a signal heard by `stop` ends the checks).
    pub fn prepare(
        cfg: &'a BenchConfig,
        places: Vec<(Target, Endpoint)>,
        stop: &Stop,
    ) -> Result<Engine<'a>, Error> {
        let named = places.len() > 1;
        let origins = places
            .into_iter()
            .map(|(target, endpoint)| Origin::prepare(cfg, target, endpoint, named, stop))
            .collect::<Result<_, _>>()?;
        Ok(Engine { cfg, origins })
    }

    /// Runs the benchmark, until the duration is over or `stop` is set.
    /// Every reporting period, and with progress every shorter period, is
    /// passed to `observer` as soon as all threads finished it.
    pub fn run<S: Scripted>(
        self,
        workload: Workload<S>,
        recording: Recording,
        signals: &Signals,
        observer: &mut dyn Observer,
    ) -> Result<Finished<S>, Error> {
        // The one place that asks which protocol the run speaks.
        match self.cfg.protocol {
            Choice::Http1 => self.run_with::<Http1, S>(workload, recording, signals, observer),
            Choice::Http2 => self.run_with::<Http2, S>(workload, recording, signals, observer),
            Choice::Http3 => self.run_with::<Http3, S>(workload, recording, signals, observer),
        }
    }

    fn run_with<P: Protocol + Speaks, S: Scripted>(
        self,
        workload: Workload<S>,
        recording: Recording,
        signals: &Signals,
        observer: &mut dyn Observer,
    ) -> Result<Finished<S>, Error> {
        let cfg = self.cfg;
        let course_period = course::period_for(cfg.duration);
        let (mut periods, period) =
            Periods::new(cfg.digits, recording.period, observer.progress_every(), course_period);
        let (to_collector, shares) = mpsc::channel();
        let mut recycle = Vec::with_capacity(cfg.threads);
        let mut workers = Vec::with_capacity(cfg.threads);
        for (thread, requests) in workload.threads.into_iter().enumerate() {
            let (recycle_to_thread, recycled) = mpsc::channel();
            recycle.push(recycle_to_thread);
            let periods = PeriodChannel { to_collector: to_collector.clone(), recycled };
            let recording = Recording { period: Some(period), ..recording };
            workers.push(self.worker::<P, S>(thread, requests, recording, periods, signals)?);
        }
        // The channel closes when the last thread is done with it.
        drop(to_collector);
        let running = self.start(workers, shares, recycle)?;
        let course = CourseBuilder::new(period, course_period, poisson(&cfg.mode));
        let collected = self.collect(running, period, course, signals, &mut periods, observer)?;
        periods.finish(observer);
        Ok(self.finish(collected, recording.series))
    }

    /// Thread `thread`'s worker: its connections, its source of requests
    /// in `P`'s wire form, its recorder.
    fn worker<P: Protocol + Speaks, S: Scripted>(
        &self,
        thread: usize,
        requests: Requests<S>,
        recording: Recording,
        periods: PeriodChannel,
        signals: &Signals,
    ) -> Result<Worker<P, S>, Error> {
        let cfg = self.cfg;
        let source = self.source::<P, S>(requests)?;
        let recorder = Recorder::new(RecorderSetup {
            thread,
            digits: cfg.digits,
            paced: matches!(cfg.mode, Mode::Paced(_)),
            count_sends: poisson(&cfg.mode),
            batch_latency: cfg.batch_latency,
            period_ns: recording.period.map(duration_ns),
            early_every_ns: source.is_scripted().then_some(duration_ns(EARLY_EVERY)),
            periods,
            series_ns: recording.series.map(duration_ns),
            warmup_ns: duration_ns(cfg.warmup),
            stage_starts_ns: stage_starts(&cfg.mode),
            target_labels: target_labels(cfg),
        });
        let origins = Origins::of(cfg);
        let per_origin = match self.origins.len() {
            1 => vec![cfg.connections_of_thread(thread)],
            _ => origins.spread(cfg.connections_of_thread(thread)),
        };
        let setup = P::setup(cfg, source.wants_responses(), source.depth());
        let connections = Connections::new(ConnectionSetup {
            origins: self.origins.clone(),
            per_origin,
            protocol: setup,
            timeout_ns: duration_ns(cfg.timeout),
        })
        .map_err(|e| {
            Error::Setup(format!("unable to create thread {thread}: {}", io_reason(&e)))
        })?;
        let (first_k, stride) = cfg.requests_of_plan(thread);
        let run = RunSetup {
            first_k,
            stride,
            plan: match &cfg.mode {
                Mode::ClosedLoop => None,
                Mode::Paced(spec) => Some(spec.plan(cfg.warmup, cfg.seed)),
            },
            duration_ns: cfg.duration.map_or(u64::MAX, |d| duration_ns(cfg.warmup + d)),
            // A plan ends itself after the -n requests (its duration).
            budget: match cfg.mode {
                Mode::ClosedLoop => cfg.requests_of_thread(thread),
                Mode::Paced(_) => None,
            },
            timeout_ns: duration_ns(cfg.timeout),
        };
        let (stop, hurry) = (signals.stop.clone(), signals.hurry.clone());
        Ok(Worker::new(run, connections, source, recorder, stop, hurry))
    }

    /// What a thread sends, in `P`'s wire form: requests made before the
    /// run are encoded once for all threads (the workload shares one list).
    fn source<P: Protocol, S: Scripted>(
        &self,
        requests: Requests<S>,
    ) -> Result<Source<P, S>, Error> {
        let target = &self.cfg.target;
        let context =
            Context { scheme: target.scheme_name.clone(), authority: target.host_header() };
        match requests {
            Requests::Fixed { batches, origins, first, order, endpoint } => {
                let encoded = encode_all::<P>(&batches, &context).map_err(|e| {
                    Error::Usage(format!("the request cannot be sent over {}: {e}", P::CHOICE))
                })?;
                Ok(Source::fixed(encoded, origins, first, endpoint, order))
            }
            Requests::Scripted { script, heads } => {
                let absolute = (self.cfg.proxy.as_ref())
                    .and_then(|route| route.absolute_form(self.cfg.protocol, target));
                Ok(Source::Scripted { script, text: ScriptText::new(heads, context), absolute })
            }
            Requests::Made { maker, endpoint } => Ok(Source::Made { maker, context, endpoint }),
        }
    }

    /// Starts the workers' threads on a common start line.
    fn start<P: Protocol, S: Scripted>(
        &self,
        workers: Vec<Worker<P, S>>,
        shares: Receiver<ThreadInterval>,
        recycle: Vec<Sender<Stats>>,
    ) -> Result<Running<S>, Error> {
        let interrupters = workers.iter().map(Worker::interrupter).collect();
        let not_before = start_time(self.cfg)?;
        let start_line = Arc::new(StartLine::new(workers.len(), not_before));
        let mut handles = Vec::with_capacity(workers.len());
        for (index, worker) in workers.into_iter().enumerate() {
            let line = start_line.clone();
            let spawned = thread::Builder::new()
                .name(format!("pace-{index}"))
                .spawn(move || worker.run(&line));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    start_line.abort();
                    return Err(Error::Setup(format!(
                        "unable to create thread {index}: {}",
                        io_reason(&e)
                    )));
                }
            }
        }
        Ok(Running { handles, interrupters, start_line, shares, recycle })
    }

    /// Collects the threads' periods as they come, until every thread is
    /// done or given up on; says what the run is doing before its
    /// measured part, and when a signal stops it.
    fn collect<S>(
        &self,
        running: Running<S>,
        period: Duration,
        course: CourseBuilder,
        signals: &Signals,
        periods: &mut Periods,
        observer: &mut dyn Observer,
    ) -> Result<Collected<S>, Error> {
        let cfg = self.cfg;
        let Running { handles, interrupters, start_line, shares, recycle } = running;
        let mut collector = IntervalCollector::new(cfg.digits, period, recycle, course);
        let mut on_interval = |interval: &Interval, total: &Stats, observer: &mut dyn Observer| {
            periods.add(interval, total, observer)
        };
        let timeout = duration_ns(cfg.timeout);
        // The plan, then the last responses (at most the timeout).
        let lasts =
            cfg.duration.map_or(u64::MAX, |d| duration_ns(cfg.warmup + d).saturating_add(timeout));
        let mut watchdog =
            Watchdog::new(lasts, timeout, signals.stop.clone(), signals.hurry.clone());
        let mut overran = Vec::new();
        let mut said_stopping = false;
        let mut next_watch = sys::now_ns();
        loop {
            match shares.recv_timeout(WATCH_EVERY) {
                Ok(share) => collector.add(share, &mut |i, t| on_interval(i, t, observer)),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            // Shares may come without a pause (many threads, short
            // periods): the watch keeps its pace regardless.
            let now = sys::now_ns();
            if now < next_watch {
                continue;
            }
            next_watch = now.saturating_add(duration_ns(WATCH_EVERY));
            let started = start_line.started();
            // No period comes before the measured part: say why.
            if let Some(before) = Before::at(now, started, cfg.warmup) {
                observer.before_measuring(before);
            }
            let running: Vec<usize> =
                (0..handles.len()).filter(|&i| !handles[i].is_finished()).collect();
            // A signal stopped the sends; the threads still wait for the
            // responses in flight: say so, once.
            if signals.received().is_some() && !running.is_empty() && !said_stopping {
                said_stopping = true;
                observer.stopping(cfg.timeout);
            }
            match watchdog.verdict(now, started, !running.is_empty()) {
                Verdict::Wait => {}
                Verdict::Interrupt => {
                    for &thread in &running {
                        let interrupter = interrupters[thread].as_deref();
                        let call = interrupter.and_then(Interrupt::running);
                        if let Some(interrupter) = interrupter {
                            interrupter.interrupt();
                        }
                        let scripted = interrupter.is_some();
                        overran.push(Overrun { thread, call, scripted, given_up: false });
                    }
                }
                Verdict::GiveUp => {
                    for overrun in &mut overran {
                        overrun.given_up = running.contains(&overrun.thread);
                    }
                    break;
                }
            }
        }
        // What the threads given up on sent before they got stuck.
        for share in shares.try_iter() {
            collector.add(share, &mut |i, t| on_interval(i, t, observer));
        }
        let given_up: Vec<usize> =
            overran.iter().filter(|o| o.given_up).map(|o| o.thread).collect();
        // A thread given up hands back no window: the run's sends ended at
        // the end of its plan, or when they were stopped if that was sooner.
        let given_up_window = (!given_up.is_empty()).then(|| {
            let started = start_line.started().unwrap_or_else(sys::now_ns);
            let start = started.saturating_add(duration_ns(cfg.warmup));
            let planned_end =
                cfg.duration.map_or(u64::MAX, |d| start.saturating_add(duration_ns(d)));
            let end = watchdog.stopped_at().map_or(planned_end, |stop| stop.min(planned_end));
            (start, end.max(start))
        });
        let results = join_all_but(handles, &given_up)?;
        // An interruption that found a thread outside Lua must not fail a
        // later call (done() reads the thread states).
        for overrun in &overran {
            if let Some(interrupter) = &interrupters[overrun.thread] {
                interrupter.withdraw();
            }
        }
        // A thread outside any script that finished once hurried was only
        // late: nothing of it is missing, nothing to say.
        overran.retain(|o| o.scripted || o.given_up);
        let (total, threads, course) = collector.finish(&mut |i, t| on_interval(i, t, observer));
        Ok(Collected { results, total, threads, course, overran, given_up_window })
    }

    /// The run's result, from what the threads handed back.
    fn finish<S>(&self, collected: Collected<S>, series: Option<Duration>) -> Finished<S> {
        let Collected { mut results, total, threads, course, overran, given_up_window } = collected;
        let scripts = results.iter_mut().filter_map(|r| r.script.take()).collect();
        let script_error = results.iter_mut().find_map(|r| r.script_error.take());
        let windows = results.iter().map(|r| (r.start_ns, r.window_end_ns)).chain(given_up_window);
        let (start, window_end) =
            windows.reduce(|(start, end), (s, e)| (start.min(s), end.max(e))).unwrap_or((0, 0));
        let script_stopped = !results.is_empty() && results.iter().all(|r| r.script_stopped);
        let runtime = Duration::from_nanos(window_end.saturating_sub(start));
        let result = RunResult {
            total,
            threads,
            runtime,
            interrupted: None,
            script_stopped,
            series: results.into_iter().map(|r| r.series).collect(),
            series_interval: series.unwrap_or_default(),
            measured_from: match self.cfg.start_at {
                // Exactly, so that the shards of one plan line up.
                Some(at) => at + self.cfg.warmup,
                None => sys::wall_clock_of(start),
            },
            course: course.finish(runtime),
        };
        Finished { result, scripts, script_error, overran }
    }
}

/// What the collecting thread gathered of a run.
struct Collected<S> {
    results: Vec<WorkerResult<S>>,
    total: Stats,
    threads: Vec<crate::stats::ThreadTotals>,
    course: CourseBuilder,
    overran: Vec<Overrun>,
    /// The window of the threads given up on (start, end), if any was.
    given_up_window: Option<(u64, u64)>,
}

/// How a protocol's connections are set up for a run.
trait Speaks: Protocol {
    /// The setup of every connection of a thread of `cfg`'s run, which
    /// captures responses (`capture`) and sends batches of `depth`.
    fn setup(cfg: &BenchConfig, capture: bool, depth: usize) -> Self::Setup;
}

impl Speaks for Http1 {
    fn setup(_: &BenchConfig, capture: bool, _: usize) -> Http1Setup {
        Http1Setup { capture }
    }
}

impl Speaks for Http2 {
    fn setup(cfg: &BenchConfig, capture: bool, depth: usize) -> Http2Setup {
        let streaming = cfg.grpc_call.as_ref().map_or_else(Streaming::default, streaming);
        Http2Setup { capture, streams: cfg.streams, depth, grpc: cfg.grpc.is_some(), streaming }
    }
}

impl Speaks for Http3 {
    fn setup(cfg: &BenchConfig, capture: bool, depth: usize) -> Http3Setup {
        Http3Setup { capture, streams: cfg.streams, depth }
    }
}

/// The results of the threads, but those given up on: they are left to
/// end with the process.
fn join_all_but<S>(
    handles: Vec<JoinHandle<WorkerResult<S>>>,
    given_up: &[usize],
) -> Result<Vec<WorkerResult<S>>, Error> {
    let mut results = Vec::with_capacity(handles.len());
    let joined = handles.into_iter().enumerate().filter(|(i, _)| !given_up.contains(i));
    for (_, handle) in joined {
        // The panic hook has said what went wrong.
        let result = handle
            .join()
            .map_err(|_| Error::Internal("an engine thread stopped unexpectedly".into()))?;
        results.push(result);
    }
    Ok(results)
}

/// `--start-at` on the monotonic clock. A time in the past is refused
/// unless this instance's first request is still ahead (the rule the
/// command line was checked against; the time may have passed while the
/// run was set up): starting late would make every one of its requests
/// late.
fn start_time(cfg: &BenchConfig) -> Result<Option<u64>, Error> {
    let Some(at) = cfg.start_at else { return Ok(None) };
    let (now, wall_now) = (sys::now_ns(), SystemTime::now());
    match at.duration_since(wall_now) {
        Ok(ahead) => Ok(Some(now.saturating_add(duration_ns(ahead)))),
        Err(past) => {
            cfg.check_start_at(wall_now)?;
            Ok(Some(now.saturating_sub(duration_ns(past.duration()))))
        }
    }
}

/// Whether the run's plan is a Poisson process (its sends are then
/// counted per slot, for the check of the arrivals).
fn poisson(mode: &Mode) -> bool {
    matches!(mode, Mode::Paced(spec) if spec.arrival == Arrival::Poisson)
}

/// Where each stage of the plan starts, from the end of the warm-up.
fn stage_starts(mode: &Mode) -> Vec<u64> {
    let Mode::Paced(spec) = mode else { return Vec::new() };
    let mut start = Duration::ZERO;
    let mut starts = Vec::with_capacity(spec.stages.len());
    for stage in &spec.stages {
        starts.push(duration_ns(start));
        start += stage.duration;
    }
    starts
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What the fuzz targets `http2_response` and `http1_response` drive
/// (`crate::fuzzing`): a protocol's side of a connection, what it delivers
/// to, and the recorder.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzzing {
    pub(crate) use super::http1::{Http1, Http1Setup, Http1Wire};
    pub(crate) use super::http2::{Http2, Http2Setup, Http2Wire};
    pub(crate) use super::origin::Origin;
    pub(crate) use super::protocol::{
        CapturedResponse, Context, Delivery, Opened, Outgoing, Protocol, Retry, Ticket, Verdict,
    };
    pub(crate) use super::recorder::Recorder;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_the_measured_part() {
        let (s, ms) = (1_000_000_000, 1_000_000);
        let warmup = Duration::from_secs(2);
        assert_eq!(Before::at(5 * s, None, warmup), Some(Before::Connecting));
        // --start-at ahead.
        assert_eq!(
            Before::at(5 * s, Some(8 * s), warmup),
            Some(Before::Starting { left: Duration::from_secs(3) })
        );
        assert_eq!(
            Before::at(8 * s + 500 * ms, Some(8 * s), warmup),
            Some(Before::WarmingUp { left: Duration::from_millis(1500), of: warmup })
        );
        assert_eq!(Before::at(10 * s, Some(8 * s), warmup), None);
        // No warm-up: measured from the start.
        assert_eq!(Before::at(8 * s, Some(8 * s), Duration::ZERO), None);
    }
}
