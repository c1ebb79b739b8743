//! The load engine: one OS thread per `-t`, each running its own event loop
//! over its own connections (see [`worker`]), started together on a common
//! start line and merged at the end.

mod conn;
mod transport;
mod worker;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier, OnceLock};
use std::thread;
use std::time::Duration;

use crate::config::{BenchConfig, Mode, Scheme};
use crate::error::Error;
use crate::plan::Plan;
use crate::stats::{RunResult, Stats};
use crate::sys;
use crate::tls::TlsClient;
use worker::{Worker, WorkerResult, WorkerSetup};

/// The bytes written for one request batch, and for each request in it
/// whether it is a HEAD (whose response has no body). More than one request
/// means pipelining: every write expects that many responses.
#[derive(Clone, Debug)]
pub struct RequestBatch {
    pub bytes: Vec<u8>,
    pub heads: Vec<bool>,
}

/// Where all threads wait until every one of them has opened its
/// connections; the first one through fixes the common start time.
pub struct StartLine {
    barrier: Barrier,
    start_ns: OnceLock<u64>,
}

impl StartLine {
    fn new(threads: usize) -> StartLine {
        StartLine { barrier: Barrier::new(threads), start_ns: OnceLock::new() }
    }

    /// Blocks until all threads arrived; returns the start time (ns).
    pub fn wait(&self) -> u64 {
        self.barrier.wait();
        *self.start_ns.get_or_init(sys::now_ns)
    }
}

/// Runs the benchmark described by `cfg` with `request` on every
/// connection, until the duration is over or `stop` is set.
pub fn run(cfg: &BenchConfig, request: RequestBatch, stop: Arc<AtomicBool>) -> Result<RunResult, Error> {
    let tls = match cfg.target.scheme {
        Scheme::Https => Some(TlsClient::new(&cfg.target.host, cfg.insecure)?),
        Scheme::Http => None,
    };
    let addr = *cfg.addrs.first().ok_or_else(|| Error::Setup("no address to connect to".into()))?;
    let plan = match cfg.mode {
        Mode::ClosedLoop => None,
        Mode::Paced { rate } => Some(Plan::constant(rate)),
    };
    let request = Arc::new(request);
    let start_line = Arc::new(StartLine::new(cfg.threads));
    let mut handles = Vec::with_capacity(cfg.threads);
    for index in 0..cfg.threads {
        let setup = WorkerSetup {
            index,
            threads: cfg.threads,
            connections: cfg.connections_of_thread(index),
            addr,
            tls: tls.clone(),
            request: request.clone(),
            plan,
            duration_ns: cfg.duration.as_nanos() as u64,
            timeout_ns: cfg.timeout.as_nanos() as u64,
            batch_latency: cfg.batch_latency,
            digits: cfg.digits,
        };
        let worker = Worker::new(setup, stop.clone())
            .map_err(|e| Error::Setup(format!("unable to create thread {index}: {e}")))?;
        let start_line = start_line.clone();
        let handle = thread::Builder::new()
            .name(format!("pace-{index}"))
            .spawn(move || worker.run(&start_line))
            .map_err(|e| Error::Setup(format!("unable to create thread {index}: {e}")))?;
        handles.push(handle);
    }
    let results: Vec<WorkerResult> = handles
        .into_iter()
        .map(|h| h.join().map_err(|_| Error::Setup("an engine thread panicked".into())))
        .collect::<Result<_, _>>()?;
    Ok(merge(results, cfg.digits))
}

fn merge(results: Vec<WorkerResult>, digits: u8) -> RunResult {
    let start = results.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let finished = results.iter().map(|r| r.finished_ns).max().unwrap_or(start);
    let mut total = Stats::new(digits);
    let mut unsent = 0;
    let mut threads = Vec::with_capacity(results.len());
    for r in results {
        total.merge(&r.stats);
        unsent += r.unsent;
        threads.push(r.stats);
    }
    RunResult {
        total,
        threads,
        runtime: Duration::from_nanos(finished.saturating_sub(start)),
        unsent,
        interrupted: None,
    }
}
