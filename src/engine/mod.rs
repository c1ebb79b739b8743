//! The load engine: one OS thread per `-t`, each running its own event loop
//! over its own connections (see `worker.rs`), started together on a common
//! start line and merged at the end.

mod conn;
mod intervals;
mod transport;
mod worker;

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use crate::config::{BenchConfig, Mode, Scheme};
use crate::error::Error;
use crate::plan::Plan;
use crate::script::ThreadScript;
use crate::stats::{Interval, RunResult};
use crate::sys;
use crate::tls::TlsClient;
use intervals::IntervalCollector;
use worker::{Worker, WorkerResult, WorkerSetup};

/// Reporting period when `-p` is not given (the `--hlog` interval).
const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Time-series slot when `--thread-timeseries` is given alone (wrx: 250 ms).
const SERIES_SLOT: Duration = Duration::from_millis(250);

/// What one engine thread sends.
pub enum ThreadRequests {
    /// The same bytes for every batch (no script).
    Fixed(Arc<[u8]>),
    /// A Lua state: `request()` per batch (or its frozen request),
    /// `response()` per response, `delay()`, `thread:stop()`, `thread.addr`.
    Script(Box<ThreadScript>),
}

/// What the threads send: each thread's requests, and for each request of
/// a batch whether it is a HEAD (whose response has no body). More than one
/// request per batch is pipelining: every write expects that many
/// responses (the depth is fixed by the first batch, as in wrk).
pub struct Workload {
    pub heads: Arc<[bool]>,
    pub threads: Vec<ThreadRequests>,
}

/// A finished run: the measurements, the thread scripts handed back (for
/// `done()`), and the script error that stopped the run, if any.
pub struct Finished {
    pub result: RunResult,
    pub scripts: Vec<ThreadScript>,
    pub script_error: Option<String>,
}

/// Where all threads wait until every one of them has opened its
/// connections; the last one to arrive fixes the common start time.
pub struct StartLine {
    threads: usize,
    state: Mutex<StartState>,
    changed: Condvar,
}

#[derive(Default)]
struct StartState {
    arrived: usize,
    start_ns: Option<u64>,
    aborted: bool,
}

impl StartLine {
    fn new(threads: usize) -> StartLine {
        StartLine { threads, state: Mutex::default(), changed: Condvar::new() }
    }

    /// Blocks until all threads arrived and returns the start time (ns),
    /// or None if the run was called off before it started.
    pub fn wait(&self) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.arrived += 1;
        if state.arrived == self.threads {
            state.start_ns = Some(sys::now_ns());
            self.changed.notify_all();
        }
        while state.start_ns.is_none() && !state.aborted {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.start_ns.filter(|_| !state.aborted)
    }

    /// Releases the threads already waiting without starting the run.
    fn abort(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).aborted = true;
        self.changed.notify_all();
    }
}

/// A benchmark that passed its checks and is ready to start.
pub struct Engine<'a> {
    cfg: &'a BenchConfig,
    addr: SocketAddr,
    tls: Option<TlsClient>,
}

impl<'a> Engine<'a> {
    /// Checks what can be checked before the run: an address to connect
    /// to, and for https a complete handshake (so an untrusted certificate
    /// is one clear error, not an error on every connection).
    pub fn prepare(cfg: &'a BenchConfig) -> Result<Engine<'a>, Error> {
        let addr =
            *cfg.addrs.first().ok_or_else(|| Error::Setup("no address to connect to".into()))?;
        let tls = match cfg.target.scheme {
            Scheme::Https => {
                let tls = TlsClient::new(&cfg.target.host, cfg.insecure)?;
                tls.check_handshake(addr, cfg.timeout.min(Duration::from_secs(5)))?;
                Some(tls)
            }
            Scheme::Http => None,
        };
        Ok(Engine { cfg, addr, tls })
    }

    /// Runs the benchmark, until the duration is over or `stop` is set.
    /// Every reporting period is passed to `on_interval` as soon as all
    /// threads finished it.
    pub fn run(
        self,
        workload: Workload,
        stop: Arc<AtomicBool>,
        on_interval: &mut dyn FnMut(&Interval),
    ) -> Result<Finished, Error> {
        let cfg = self.cfg;
        let plan = match cfg.mode {
            Mode::ClosedLoop => None,
            Mode::Paced { rate } => Some(Plan::constant(rate)),
        };
        let interval = cfg.outputs.report_interval.unwrap_or(DEFAULT_INTERVAL);
        let series =
            cfg.outputs.timeseries.or(cfg.outputs.thread_timeseries.then_some(SERIES_SLOT));
        let (intervals_tx, intervals_rx) = mpsc::channel();
        let mut workers = Vec::with_capacity(cfg.threads);
        for (index, requests) in workload.threads.into_iter().enumerate() {
            let setup = WorkerSetup {
                index,
                threads: cfg.threads,
                connections: cfg.connections_of_thread(index),
                addr: self.addr,
                tls: self.tls.clone(),
                heads: workload.heads.clone(),
                plan,
                duration_ns: cfg.duration.as_nanos() as u64,
                timeout_ns: cfg.timeout.as_nanos() as u64,
                batch_latency: cfg.batch_latency,
                digits: cfg.digits,
                interval_ns: interval.as_nanos() as u64,
                intervals: intervals_tx.clone(),
                series_ns: series.map(|s| s.as_nanos() as u64),
            };
            let worker = Worker::new(setup, requests, stop.clone())
                .map_err(|e| Error::Setup(format!("unable to create thread {index}: {e}")))?;
            workers.push(worker);
        }
        let start_line = Arc::new(StartLine::new(cfg.threads));
        let mut handles = Vec::with_capacity(cfg.threads);
        for (index, worker) in workers.into_iter().enumerate() {
            let line = start_line.clone();
            let spawned = thread::Builder::new()
                .name(format!("pace-{index}"))
                .spawn(move || worker.run(&line));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    start_line.abort();
                    return Err(Error::Setup(format!("unable to create thread {index}: {e}")));
                }
            }
        }
        // The channel closes when the last thread is done with it.
        drop(intervals_tx);
        let mut collector = IntervalCollector::new(cfg.threads, cfg.digits, interval);
        for share in intervals_rx {
            collector.add(share, on_interval);
        }
        let mut results: Vec<WorkerResult> = handles
            .into_iter()
            .map(|h| h.join().map_err(|_| Error::Setup("an engine thread panicked".into())))
            .collect::<Result<_, _>>()?;
        let scripts = results.iter_mut().filter_map(|r| r.script.take()).collect();
        let script_error = results.iter_mut().find_map(|r| r.script_error.take());
        let start = results.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let finished = results.iter().map(|r| r.finished_ns).max().unwrap_or(start);
        let runtime = Duration::from_nanos(finished.saturating_sub(start));
        let (total, threads) = collector.finish(on_interval);
        let result = RunResult {
            total,
            threads,
            runtime,
            unsent: results.iter().map(|r| r.unsent).sum(),
            interrupted: None,
            series: results.into_iter().map(|r| r.series).collect(),
            series_interval: series.unwrap_or(SERIES_SLOT),
        };
        Ok(Finished { result, scripts, script_error })
    }
}
