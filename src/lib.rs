//! pace: an HTTP benchmarking tool that speaks wrk's and wrk2's command line
//! and measures latency honestly (from each request's *intended* send time).
//!
//! Data flows one way: options ([`cli`]) -> validated [`config`] ->
//! [`engine`] threads (each records into its own [`stats`], no locks on the
//! hot path) -> merged stats -> [`report`].

pub mod cli;
pub mod config;
pub mod demo;
pub mod engine;
pub mod error;
pub mod http;
pub mod output;
pub mod plan;
pub mod report;
pub mod resolve;
pub mod run;
pub mod script;
pub mod serve;
pub mod stats;
pub mod sys;
pub mod tls;
pub mod units;
