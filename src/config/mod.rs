//! The validated configuration of one benchmark run, produced by
//! [`crate::cli`] and consumed by the engine and the request sources: data
//! at the bottom of the crate. It imports no feature module and holds no
//! report type; the reports read a description of the run made from it
//! ([`crate::report::description`]), and each output keeps its own options
//! (`report::ReportOptions`, `output::OutputOptions`, ...).
//!
//! What a run sends: [`targets`] (the `--targets` file, the header and
//! method grammar) and [`origins`] (the scheme, host and port each request
//! goes to).

pub mod origins;
pub mod targets;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::error::Error;
use crate::grpc::call::{Call, FromServer, Message};
use crate::plan::PlanSpec;
use crate::protocol::Protocol;
use crate::provenance::Provenance;
use crate::proxy::Route;
use crate::reach::Reach;
use crate::target::Target;
use crate::tls::TlsOptions;
use crate::units::{format_for_people, format_rfc3339};
use targets::{Targets, TargetsOrder};

/// One instance's part of a plan several instances send together: it owns
/// the requests k = index, index + count, ... of the global plan, and its
/// share of the connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The whole plan: one instance.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Of `-n` requests in the closed loop, those thread `i` of this
    /// instance's `threads` sends: `n` spread over every thread of every
    /// shard.
    pub fn requests_of_thread(self, n: u64, threads: usize, i: usize) -> u64 {
        let global = i * self.count + self.index;
        spread(n as usize, threads * self.count, global) as u64
    }
}

/// `total` spread over `parts`: part `i`'s share, the remainder going one
/// each to the first parts.
fn spread(total: usize, parts: usize, i: usize) -> usize {
    total / parts + usize::from(i < total % parts)
}

/// How requests are released.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// wrk: every connection sends its next request as soon as the previous
    /// response is complete.
    ClosedLoop,
    /// wrk2 `-R` (and `--stages`, `--arrival`, `--warmup`): requests follow
    /// a plan of intended send times, whatever the server does; latency
    /// counts from the intended time.
    Paced(PlanSpec),
}

impl Mode {
    /// The rate the plan wants on average over the measured part of a run
    /// (after `warmup`, for `measured`), of all shards together, requests
    /// per second; None in the closed loop.
    pub fn mean_rate(&self, warmup: Duration, measured: Duration) -> Option<f64> {
        match self {
            Mode::ClosedLoop => None,
            Mode::Paced(spec) => Some(spec.mean_rate(warmup, warmup, warmup + measured)),
        }
    }
}

/// Everything one benchmark run needs, validated.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    pub target: Target,
    pub connections: usize,
    pub threads: usize,
    /// How long the plan lasts after the warm-up: `-d`, the stages, or
    /// the time `-n` requests of the plan take. None: a closed loop that
    /// lasts until its `-n` requests are answered.
    pub duration: Option<Duration>,
    pub timeout: Duration,
    pub mode: Mode,
    /// `--warmup`: the run's first part, sent as usual but not counted (the
    /// run lasts the warm-up and then `duration`).
    pub warmup: Duration,
    /// Seeds what is random in the run (`--seed`, or chosen and printed).
    pub seed: u64,
    /// `--shard I/N`: this instance's part of the global plan.
    pub shard: Shard,
    /// `--start-at`: the wall-clock instant of the plan's time zero.
    pub start_at: Option<SystemTime>,
    /// `-H` headers in the order given.
    pub headers: Vec<(String, String)>,
    /// `-m`: the method of the request (default GET).
    pub method: String,
    /// `--body` or the bytes of `--body-file`: the request's body (with
    /// `--targets`, the body of targets without one of their own).
    pub body: Option<Arc<[u8]>>,
    /// `--targets FILE`: the requests to send in turn instead of the one
    /// of `-m`, the URL and the body.
    pub targets: Option<Targets>,
    /// `--targets-order`.
    pub targets_order: TargetsOrder,
    /// `-n/--requests`: stop after this many requests (of all shards).
    pub requests: Option<u64>,
    /// `-B`: with pipelining, record one latency per batch.
    pub batch_latency: bool,
    /// `-k`, `--cacert`, `--cert`/`--key`, `--tls-server-name`.
    pub tls: TlsOptions,
    /// HdrHistogram significant digits (1..=5).
    pub digits: u8,
    pub script: Option<PathBuf>,
    /// Words after the URL (Lua `args[1..]`).
    pub script_args: Vec<String>,
    /// The protocol over the connections (`--http2`).
    pub protocol: Protocol,
    /// `--streams`: requests in flight on one HTTP/2 connection at once
    /// (1 over HTTP/1.1).
    pub streams: usize,
    /// `--grpc`: the requests are calls of this method
    /// (`package.Service/Method`), over HTTP/2.
    pub grpc: Option<String>,
    /// `--grpc`: the request messages, each a request's body (framed, or
    /// made per call from a template), sent in turn or in random order
    /// (`targets_order`); empty without `--grpc`, and until the server's
    /// reflection gave the schema.
    pub grpc_messages: Vec<Message>,
    /// `--grpc` with its schema: the call (for a script's calls, which
    /// make and read messages with it).
    pub grpc_call: Option<Call>,
    /// `--grpc` without a schema: the call the server's reflection gives
    /// the schema of, before the run (then the requests' body is unknown
    /// until then).
    pub grpc_from_server: Option<FromServer>,
    /// `--proxy`: the proxy the run goes through, or why `--proxy env`
    /// found none (None: no `--proxy`, the run goes direct).
    pub proxy: Option<Route>,
    /// `--unix-socket`, `--connect-to`, `-4`/`-6`: where the connections
    /// go, when not to the URL's host and port.
    pub reach: Reach,
    /// How the run was made (its command line, pace version and host),
    /// for the JSON and HTML reports; None when unknown (a merge, a test).
    pub provenance: Option<Provenance>,
}

impl BenchConfig {
    /// wrk's defaults for `target`: 2 threads, 10 connections, 10 s,
    /// 2 s timeout, closed loop, GET without a body, no script, text
    /// report.
    pub fn new(target: Target) -> BenchConfig {
        BenchConfig {
            target,
            connections: 10,
            threads: 2,
            duration: Some(Duration::from_secs(10)),
            timeout: Duration::from_secs(2),
            mode: Mode::ClosedLoop,
            warmup: Duration::ZERO,
            seed: 0,
            shard: Shard::WHOLE,
            start_at: None,
            headers: Vec::new(),
            method: "GET".to_string(),
            body: None,
            targets: None,
            targets_order: TargetsOrder::Sequential,
            requests: None,
            batch_latency: false,
            tls: TlsOptions::default(),
            digits: 3,
            script: None,
            script_args: Vec::new(),
            protocol: Protocol::Http1,
            streams: 1,
            proxy: None,
            reach: Reach::default(),
            grpc: None,
            grpc_messages: Vec::new(),
            grpc_call: None,
            grpc_from_server: None,
            provenance: None,
        }
    }

    /// The rate the plan wants of this instance on average over the
    /// measured part of the run (after the warm-up), requests per second;
    /// None in the closed loop.
    pub fn target_rate(&self) -> Option<f64> {
        // A plan always lasts a while (see `duration`).
        let measured = self.duration.unwrap_or_default();
        let mean = self.mode.mean_rate(self.warmup, measured)?;
        Some(mean / self.shard.count as f64)
    }

    /// The connections this instance opens: its shard's share of `-c`.
    pub fn connections_of_instance(&self) -> usize {
        spread(self.connections, self.shard.count, self.shard.index)
    }

    /// Connections owned by thread `i` of this instance: the remainder is
    /// spread over the first threads instead of being dropped (wrk bug
    /// wg/wrk#157).
    pub fn connections_of_thread(&self, i: usize) -> usize {
        spread(self.connections_of_instance(), self.threads, i)
    }

    /// The requests of the plan thread `i` of this instance sends: the
    /// first and the stride. Shard s of N, thread t of T: s + N·t, stride
    /// N·T, so the threads of all shards together send each request once.
    pub fn requests_of_plan(&self, i: usize) -> (u64, u64) {
        let Shard { index, count } = self.shard;
        ((index + count * i) as u64, (count * self.threads) as u64)
    }

    /// The requests thread `i` of this instance may send in the closed
    /// loop under `-n`: `-n` spread over every thread of every shard.
    pub fn requests_of_thread(&self, i: usize) -> Option<u64> {
        self.requests.map(|n| self.shard.requests_of_thread(n, self.threads, i))
    }

    /// Refuses a `--start-at` that has passed at `now`, in words and before
    /// anything is printed. A time in the past is accepted while this shard's
    /// first request is still ahead (a later shard of a paced plan starts
    /// after the plan does): the engine's rule, which it applies again when it
    /// starts, as the time may pass while the run is set up.
    pub fn check_start_at(&self, now: SystemTime) -> Result<(), Error> {
        let Some(at) = self.start_at else { return Ok(()) };
        let Ok(behind) = now.duration_since(at) else { return Ok(()) };
        let first_due = match &self.mode {
            Mode::Paced(spec) => {
                let offset = spec.plan(self.warmup, self.seed).offset_ns(self.shard.index as u64);
                Duration::from_nanos(offset)
            }
            Mode::ClosedLoop => Duration::ZERO,
        };
        if behind < first_due {
            return Ok(());
        }
        let first = if first_due.is_zero() {
            String::new()
        } else {
            format!(
                ", and so is this shard's first request, due {} after it",
                format_for_people(first_due)
            )
        };
        Err(Error::Usage(format!(
            "--start-at {} is in the past ({} ago){first}: give a time ahead, the same for every \
             shard, e.g. --start-at $(( $(date +%s) + 30 )) to start in 30 s (the machines' clocks \
             must agree, see docs/scale-out.md)",
            format_rfc3339(at),
            format_for_people(behind)
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    #[test]
    fn spreads_remainder_connections() {
        let mut cfg = test_config();
        cfg.threads = 3;
        cfg.connections = 10;
        let per: Vec<_> = (0..3).map(|i| cfg.connections_of_thread(i)).collect();
        assert_eq!(per, vec![4, 3, 3]);
    }

    /// Every thread of every shard, each sending its requests of the plan
    /// in turn: together they send the global plan, each request once.
    #[test]
    fn shards_and_threads_send_the_plan_once() {
        use crate::plan::{Arrival, PlanSpec, Stage};
        let stages = vec![
            Stage { duration: Duration::from_millis(300), rate: 4000.0 },
            Stage { duration: Duration::from_millis(700), rate: 500.0 },
        ];
        let specs = [
            PlanSpec::constant(1000.0),
            PlanSpec { arrival: Arrival::Poisson, ..PlanSpec::constant(1000.0) },
            PlanSpec { rate: 100.0, stages, arrival: Arrival::Poisson },
        ];
        let n = 1200;
        for spec in specs {
            let plan = spec.plan(Duration::ZERO, 7);
            let global: Vec<u64> = (0..n).map(|k| plan.offset_ns(k)).collect();
            let mut sent = Vec::new();
            for index in 0..3 {
                let cfg =
                    BenchConfig { threads: 2, shard: Shard { index, count: 3 }, ..test_config() };
                for thread in 0..cfg.threads {
                    let (first, stride) = cfg.requests_of_plan(thread);
                    let mut share = plan.share(first, stride, 0);
                    for _ in 0..n / 6 {
                        sent.push(share.next_due_ns());
                        share.advance();
                    }
                }
            }
            sent.sort_unstable();
            assert_eq!(sent, global, "{spec:?}");
        }
        // Shard s sends requests s, s + 3, s + 6, ... (its threads take
        // turns within them).
        for index in 0..3 {
            let cfg = BenchConfig { threads: 2, shard: Shard { index, count: 3 }, ..test_config() };
            let mut ks: Vec<u64> = (0..2)
                .flat_map(|thread| {
                    let (first, stride) = cfg.requests_of_plan(thread);
                    (0..4).map(move |j| first + j * stride)
                })
                .collect();
            ks.sort_unstable();
            assert_eq!(ks, (0..8).map(|j| index as u64 + 3 * j).collect::<Vec<_>>());
        }
    }

    fn test_config() -> BenchConfig {
        BenchConfig {
            duration: Some(Duration::from_secs(1)),
            ..BenchConfig::new(Target::parse("http://127.0.0.1:1/").unwrap())
        }
    }

    #[test]
    fn a_start_in_the_past_is_refused_in_words() {
        let mut cfg = BenchConfig::new(Target::parse("http://h/").unwrap());
        let at = UNIX_EPOCH + Duration::from_secs(5);
        cfg.start_at = Some(at);
        let now = UNIX_EPOCH + Duration::from_secs(1_795_428_000);
        let Err(Error::Usage(message)) = cfg.check_start_at(now) else { panic!("accepted") };
        assert!(
            message.starts_with(
                "--start-at 1970-01-01T00:00:05Z is in the past (56 years ago): give a time ahead"
            ),
            "{message}"
        );
        assert!(message.contains("--start-at $(( $(date +%s) + 30 ))"), "{message}");
        // Ahead, or not given: nothing to say.
        assert!(cfg.check_start_at(at - Duration::from_secs(1)).is_ok());
        cfg.start_at = None;
        assert!(cfg.check_start_at(now).is_ok());
    }

    #[test]
    fn a_shard_may_start_late_while_its_first_request_is_ahead() {
        let mut cfg = BenchConfig::new(Target::parse("http://h/").unwrap());
        // 1 request/s over 2 shards: shard 1's first request is due at 1 s.
        cfg.mode = Mode::Paced(crate::plan::PlanSpec::constant(1.0));
        cfg.shard = Shard { index: 1, count: 2 };
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        cfg.start_at = Some(at);
        assert!(cfg.check_start_at(at + Duration::from_millis(900)).is_ok());
        let Err(Error::Usage(message)) = cfg.check_start_at(at + Duration::from_millis(1500))
        else {
            panic!("accepted")
        };
        assert!(
            message.contains(
                "is in the past (1.5 seconds ago), and so is this shard's first request, due \
                 1.0 seconds after it"
            ),
            "{message}"
        );
        // Shard 0's first request is due at the start itself.
        cfg.shard = Shard { index: 0, count: 2 };
        assert!(cfg.check_start_at(at + Duration::from_millis(1)).is_err());
    }
}
