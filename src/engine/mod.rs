//! The load engine: one OS thread per `-t`, each running its own event loop
//! over its own connections ([`worker`]), started together on a common
//! start line, their measurements collected period by period and merged.

mod conn;
mod connections;
mod intervals;
mod recorder;
mod schedule;
mod source;
mod start_line;
mod transport;
mod wake;
mod worker;

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use crate::config::{BenchConfig, Mode};
use crate::error::Error;
use crate::plan::Plan;
use crate::script::ThreadScript;
use crate::stats::{Interval, RunResult};
use crate::target::Scheme;
use crate::tls::TlsClient;
use connections::{ConnectionSetup, Connections};
use intervals::IntervalCollector;
use recorder::{PeriodChannel, Recorder, RecorderSetup};
use start_line::StartLine;
use worker::{RunSetup, Worker, WorkerResult};

pub use source::RequestSource;

/// Time-series slot when `--thread-timeseries` is given alone (wrx: 250 ms).
const SERIES_SLOT: Duration = Duration::from_millis(250);

/// What the threads send: each thread's request source, and for each
/// request of a batch whether it is a HEAD (whose response has no body).
/// More than one request per batch is pipelining: every write expects that
/// many responses (the depth is fixed by the first batch, as in wrk).
pub struct Workload {
    pub heads: Arc<[bool]>,
    pub sources: Vec<RequestSource>,
}

/// A finished run: the measurements, the thread scripts handed back (for
/// `done()`), and the script error that stopped the run, if any.
pub struct Finished {
    pub result: RunResult,
    pub scripts: Vec<ThreadScript>,
    pub script_error: Option<String>,
}

/// A benchmark that passed its checks and is ready to start.
pub struct Engine<'a> {
    cfg: &'a BenchConfig,
    tls: Option<TlsClient>,
}

impl<'a> Engine<'a> {
    /// Checks what can be checked before the run: for https, a complete
    /// handshake with `addr` (so an untrusted certificate is one clear
    /// error, not an error on every connection).
    pub fn prepare(cfg: &'a BenchConfig, addr: SocketAddr) -> Result<Engine<'a>, Error> {
        let tls = match cfg.target.scheme {
            Scheme::Https => {
                let tls = TlsClient::new(&cfg.target.host, cfg.insecure)?;
                tls.check_handshake(addr, cfg.timeout.min(Duration::from_secs(5)))?;
                Some(tls)
            }
            Scheme::Http => None,
        };
        Ok(Engine { cfg, tls })
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
        let period = cfg.outputs.period();
        let series =
            cfg.outputs.timeseries.or(cfg.outputs.thread_timeseries.then_some(SERIES_SLOT));
        let (to_collector, shares) = mpsc::channel();
        let mut recycle = Vec::with_capacity(cfg.threads);
        let mut workers = Vec::with_capacity(cfg.threads);
        for (thread, source) in workload.sources.into_iter().enumerate() {
            let (recycle_to_thread, recycled) = mpsc::channel();
            recycle.push(recycle_to_thread);
            let recorder = Recorder::new(RecorderSetup {
                thread,
                digits: cfg.digits,
                paced: matches!(cfg.mode, Mode::Paced { .. }),
                batch_latency: cfg.batch_latency,
                period_ns: period.map(duration_ns),
                periods: PeriodChannel { to_collector: to_collector.clone(), recycled },
                series_ns: series.map(duration_ns),
            });
            let connections = Connections::new(ConnectionSetup {
                connections: cfg.connections_of_thread(thread),
                tls: self.tls.clone(),
                heads: workload.heads.clone(),
                capture: source.wants_responses(),
                timeout_ns: duration_ns(cfg.timeout),
            })
            .map_err(|e| Error::Setup(format!("unable to create thread {thread}: {e}")))?;
            let run = RunSetup {
                thread,
                threads: cfg.threads,
                plan: match cfg.mode {
                    Mode::ClosedLoop => None,
                    Mode::Paced { rate } => Some(Plan::constant(rate)),
                },
                duration_ns: duration_ns(cfg.duration),
                timeout_ns: duration_ns(cfg.timeout),
            };
            workers.push(Worker::new(run, connections, source, recorder, stop.clone()));
        }
        let start_line = Arc::new(StartLine::new(workers.len()));
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
                    return Err(Error::Setup(format!("unable to create thread {index}: {e}")));
                }
            }
        }
        // The channel closes when the last thread is done with it.
        drop(to_collector);
        let mut collector = IntervalCollector::new(cfg.digits, period, recycle);
        for share in shares {
            collector.add(share, on_interval);
        }
        let mut results: Vec<WorkerResult> = Vec::with_capacity(handles.len());
        for handle in handles {
            // The panic hook has said what went wrong.
            let result = handle
                .join()
                .map_err(|_| Error::Internal("an engine thread stopped unexpectedly".into()))?;
            results.push(result);
        }
        let scripts = results.iter_mut().filter_map(|r| r.script.take()).collect();
        let script_error = results.iter_mut().find_map(|r| r.script_error.take());
        let start = results.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let finished = results.iter().map(|r| r.finished_ns).max().unwrap_or(start);
        let (total, threads) = collector.finish(on_interval);
        let result = RunResult {
            total,
            threads,
            runtime: Duration::from_nanos(finished.saturating_sub(start)),
            interrupted: None,
            series: results.into_iter().map(|r| r.series).collect(),
            series_interval: series.unwrap_or(SERIES_SLOT),
        };
        Ok(Finished { result, scripts, script_error })
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
