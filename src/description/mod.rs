//! A description of a run: what the reports, the SLO verdicts, the live
//! progress, the metrics, the outputs and `pace compare` say of it besides
//! its measurements. A live run's is made from its configuration
//! ([`Description::of`]); a saved run's is read back from its JSON
//! (`crate::merge::saved`), and a merge makes one for the runs it adds up,
//! so every report of a run reads the same way whatever it came from.

pub mod reached;

use std::time::{Duration, SystemTime};

use crate::config::targets::TargetsOrder;
use crate::config::{BenchConfig, Mode, Shard};
use crate::grpc::call::{Call, StreamPlan};
use crate::plan::{Arrival, PlanSpec};
use crate::protocol::Protocol;
use crate::provenance::Provenance;
use crate::target::Scheme;
use reached::Reached;

/// How a run was run, as its reports say it.
#[derive(Clone, Debug, PartialEq)]
pub struct Description {
    /// The URL as typed (a merge of runs against several: each, joined
    /// with `, `).
    pub url: String,
    /// What the connections spoke, over `scheme`.
    pub protocol: Protocol,
    pub scheme: Scheme,
    /// `--streams` (1 over HTTP/1.1).
    pub streams: usize,
    /// `--grpc`: the method every request called (`package.Service/Method`).
    pub grpc: Option<String>,
    /// `--grpc`: how its calls go (None in a run read back from a file of a
    /// pace that did not say: unary, as it called no other).
    pub grpc_kind: Option<CallKind>,
    /// Over HTTP/2, the concurrent streams per connection the server
    /// allows, when it sets a limit (its SETTINGS before the run; a saved
    /// run's as its connections learned it). The run uses the fewer of
    /// this and `streams` ([`Description::slots_per_connection`]).
    pub allowed_streams: Option<u32>,
    pub threads: usize,
    /// `-c`: of all shards together.
    pub connections: usize,
    /// The connections this instance opened (of `connections`).
    pub instance_connections: usize,
    /// How long the plan lasted after the warm-up; None: a closed loop
    /// that lasted until its `-n` requests were answered.
    pub duration: Option<Duration>,
    /// `-n`: of all shards together.
    pub requests: Option<u64>,
    pub timeout: Duration,
    pub mode: Mode,
    pub warmup: Duration,
    /// The seed of what is random in the run (see [`Description::uses_seed`]).
    pub seed: u64,
    /// `--targets-order`; None without `--targets`.
    pub targets_order: Option<TargetsOrder>,
    /// A client certificate was given (`--cert`).
    pub client_certificate: bool,
    pub shard: Shard,
    /// `--start-at`.
    pub start_at: Option<SystemTime>,
    /// HdrHistogram significant digits.
    pub digits: u8,
    /// How it reached its servers.
    pub reached: Reached,
    /// How it was made (None: unknown, or a merge).
    pub provenance: Option<Provenance>,
}

impl Description {
    /// The description of the run `cfg` configures.
    pub fn of(cfg: &BenchConfig) -> Description {
        Description {
            url: cfg.target.url.clone(),
            protocol: cfg.protocol,
            scheme: cfg.target.scheme,
            streams: cfg.streams,
            grpc: cfg.grpc.clone(),
            grpc_kind: cfg.grpc_call.as_ref().map(CallKind::of),
            allowed_streams: None,
            threads: cfg.threads,
            connections: cfg.connections,
            instance_connections: cfg.connections_of_instance(),
            duration: cfg.duration,
            requests: cfg.requests,
            timeout: cfg.timeout,
            mode: cfg.mode.clone(),
            warmup: cfg.warmup,
            seed: cfg.seed,
            targets_order: (cfg.targets.is_some() || cfg.grpc_messages.len() > 1)
                .then_some(cfg.targets_order),
            client_certificate: cfg.tls.client_certificate.is_some(),
            shard: cfg.shard,
            start_at: cfg.start_at,
            digits: cfg.digits,
            reached: Reached::of(cfg),
            provenance: cfg.provenance.clone(),
        }
    }

    /// Something random used the seed: Poisson arrivals, or targets in
    /// random order (`--seed` then repeats the run).
    pub fn uses_seed(&self) -> bool {
        let poisson = self.plan().is_some_and(|spec| spec.arrival == Arrival::Poisson);
        poisson || self.targets_order == Some(TargetsOrder::Random)
    }

    /// The protocol's name as the JSON gives it: `http/1.1`, `h2`, `h2c`.
    pub fn protocol_name(&self) -> &'static str {
        self.protocol.name(self.scheme)
    }

    /// The connections this instance opened.
    pub fn connections_of_instance(&self) -> usize {
        self.instance_connections
    }

    /// The rate the plan wanted of this instance on average over the
    /// measured part of the run, requests per second; None in the closed
    /// loop.
    pub fn target_rate(&self) -> Option<f64> {
        let measured = self.duration.unwrap_or_default();
        let mean = self.mode.mean_rate(self.warmup, measured)?;
        Some(mean / self.shard.count as f64)
    }

    /// Requests one connection could carry at once: `--streams` over a
    /// multiplexed protocol (or the fewer a server allowed, `allowed`),
    /// one over HTTP/1.1.
    pub fn slots_per_connection(&self, allowed: Option<u32>) -> usize {
        let allowed = allowed.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        self.streams.min(allowed).max(1)
    }

    /// The requests of `-n` the closed loop's threads of this instance
    /// send together (None without `-n`).
    pub fn requests_of_instance(&self) -> Option<u64> {
        let n = self.requests?;
        Some((0..self.threads).map(|i| self.shard.requests_of_thread(n, self.threads, i)).sum())
    }

    /// The plan of a paced run; None in the closed loop.
    pub fn plan(&self) -> Option<&PlanSpec> {
        match &self.mode {
            Mode::ClosedLoop => None,
            Mode::Paced(spec) => Some(spec),
        }
    }
}

/// How the calls of a gRPC method go; a call that sends a stream has its
/// plan (`--grpc-stream-count` messages, `--grpc-stream-interval` apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Unary,
    ServerStreaming,
    ClientStreaming(StreamPlan),
    Bidirectional(StreamPlan),
}

impl CallKind {
    pub fn of(call: &Call) -> CallKind {
        match (call.stream, call.server_streaming()) {
            (None, false) => CallKind::Unary,
            (None, true) => CallKind::ServerStreaming,
            (Some(plan), false) => CallKind::ClientStreaming(plan),
            (Some(plan), true) => CallKind::Bidirectional(plan),
        }
    }

    /// As the JSON names it (`grpc_kind`).
    pub fn name(self) -> &'static str {
        match self {
            CallKind::Unary => "unary",
            CallKind::ServerStreaming => "server_streaming",
            CallKind::ClientStreaming(_) => "client_streaming",
            CallKind::Bidirectional(_) => "bidi_streaming",
        }
    }

    /// The kind the JSON names, with the plan of a stream it sends.
    pub fn from_name(name: &str, plan: Option<StreamPlan>) -> Option<CallKind> {
        match (name, plan) {
            ("unary", _) => Some(CallKind::Unary),
            ("server_streaming", _) => Some(CallKind::ServerStreaming),
            ("client_streaming", Some(plan)) => Some(CallKind::ClientStreaming(plan)),
            ("bidi_streaming", Some(plan)) => Some(CallKind::Bidirectional(plan)),
            _ => None,
        }
    }

    /// The plan of the stream each call sends.
    pub fn plan(self) -> Option<StreamPlan> {
        match self {
            CallKind::ClientStreaming(plan) | CallKind::Bidirectional(plan) => Some(plan),
            CallKind::Unary | CallKind::ServerStreaming => None,
        }
    }

    /// The report's header: `unary calls`, `client-streaming calls (5
    /// messages each, 2ms apart)`.
    pub fn describe(self) -> String {
        let (kind, plan) = match self {
            CallKind::Unary => return "unary calls".into(),
            CallKind::ServerStreaming => return "server-streaming calls".into(),
            CallKind::ClientStreaming(plan) => ("client-streaming", plan),
            CallKind::Bidirectional(plan) => ("bidirectional", plan),
        };
        let messages = if plan.count == 1 { "message" } else { "messages" };
        let pace = match plan.interval.is_zero() {
            true => "at once".to_string(),
            false => {
                let us = plan.interval.as_nanos() as f64 / 1000.0;
                format!("{} apart", crate::units::format_time_us(us))
            }
        };
        format!("{kind} calls ({} {messages} each, {pace})", plan.count)
    }
}

/// `--targets-order`'s value as typed and as the JSON gives it.
pub fn targets_order_name(order: TargetsOrder) -> &'static str {
    match order {
        TargetsOrder::Sequential => "sequential",
        TargetsOrder::Random => "random",
    }
}
