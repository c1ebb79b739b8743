//! pace: an HTTP benchmarking tool that speaks wrk's and wrk2's command line
//! and measures latency honestly (from each request's *intended* send time).
//!
//! Data flows one way: options ([`cli`]) -> validated [`config`] ->
//! [`engine`] threads (each records into its own [`stats`], no locks on the
//! hot path) -> merged stats -> [`report`]. `docs/architecture.md` walks
//! through the modules.
//!
//! The library serves the `pace` binary ([`main`]) and the end-to-end tests,
//! which start the built-in server in-process ([`serve`]); nothing else is
//! public. The `fuzzing` feature adds `fuzzing`, the entry points of the
//! fuzz targets in `fuzz/` (also compiled for the unit tests, which run the
//! same checks as property tests); the normal build does not have it.

mod app;
mod blocking;
mod cli;
mod compare;
mod config;
mod demo;
mod description;
mod endpoint;
mod engine;
mod error;
mod files;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod grpc;
mod grpc_status;
mod http;
mod http2;
mod http3;
mod limits;
mod merge;
mod metrics;
mod outfile;
mod output;
mod plan;
mod progress;
mod protocol;
mod provenance;
mod proxy;
mod reach;
mod report;
mod request;
mod requests;
mod resolve;
mod run;
mod script;
mod search;
pub mod serve;
mod signals;
mod slo;
mod stats;
mod sys;
mod target;
#[cfg(test)]
mod timing;
mod tls;
mod units;
mod workload;

pub use app::main;
