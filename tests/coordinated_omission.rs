//! The reason pace exists: a server that freezes for a second while the
//! load generator keeps its plan. Requests that fell due during the freeze
//! must be charged the wait from their intended send time (corrected
//! latency); the uncorrected view, which counts from the actual send,
//! hides it.
//!
//! At 2000 requests/s for 6 s with a 1 s freeze, 1/6 of the requests are
//! due during the freeze, their latencies spread evenly over 0..1 s. So the
//! top 1% of all requests is the top 6% of those: corrected p99 is about
//! 0.94 s; the top 10% is their top 60%: p90 is about 0.4 s. Only the few
//! requests already sent on the 50 connections when the freeze began wait
//! from their actual send, far fewer than 1%: uncorrected p99 stays small.

mod common;

use std::thread;
use std::time::Duration;

use common::{load_lock, pace, serve, serve_options, spawn_pace, url, Block, Nginx, Run};
use pace::serve::{ServeOptions, Stall};

const ARGS: [&str; 5] = ["-t2", "-c50", "-d6s", "-R2000", "-U"];
const LIMIT: Duration = Duration::from_secs(20);

fn args(target: &str) -> Vec<&str> {
    let mut args = ARGS.to_vec();
    args.push(target);
    args
}

fn assert_stall_is_visible(run: &Run) {
    run.assert_ok();
    let report = run.report();
    let p99 = report.latency_us(Block::Recorded, 99.0);
    let p90 = report.latency_us(Block::Recorded, 90.0);
    let uncorrected_p99 = report.latency_us(Block::Uncorrected, 99.0);
    eprintln!("corrected p90 {p90}us p99 {p99}us, uncorrected p99 {uncorrected_p99}us");
    assert!(
        (800_000.0..=1_100_000.0).contains(&p99),
        "corrected p99 {p99}us, expected about 0.94 s\n{run}"
    );
    assert!(
        (250_000.0..=550_000.0).contains(&p90),
        "corrected p90 {p90}us, expected about 0.4 s\n{run}"
    );
    assert!(
        uncorrected_p99 < 100_000.0,
        "uncorrected p99 {uncorrected_p99}us, expected the stall to be hidden\n{run}"
    );
    // The corrected maximum is the whole freeze.
    let max = report.latency_us(Block::Recorded, 100.0);
    assert!(max >= 900_000.0, "corrected max {max}us\n{run}");
    // The requests due during the freeze were sent afterwards, not lost.
    let requests = report.requests();
    assert!((11_400..=12_100).contains(&requests), "{requests} requests, planned 12000\n{run}");
    assert!(report.socket_errors().is_none(), "{run}");
}

#[test]
fn built_in_server_stall() {
    let _load = load_lock();
    let server = serve(ServeOptions {
        stall: Some(Stall { at: Duration::from_millis(2500), length: Duration::from_secs(1) }),
        ..serve_options()
    });
    let target = url(server.addr(), "/");
    let run = pace(&args(&target), LIMIT);
    assert_stall_is_visible(&run);
}

#[test]
fn nginx_frozen_with_sigstop() {
    let _load = load_lock();
    let Some(nginx) = Nginx::start() else { return };
    let target = nginx.url();
    let running = spawn_pace(&args(&target));
    thread::sleep(Duration::from_millis(2500));
    nginx.signal(libc::SIGSTOP);
    thread::sleep(Duration::from_secs(1));
    nginx.signal(libc::SIGCONT);
    let run = running.wait(LIMIT);
    assert_stall_is_visible(&run);
}
