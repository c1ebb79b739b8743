//! The reason pace exists: a server that freezes for a second while the
//! load generator keeps its plan. Requests that fell due during the freeze
//! must be charged the wait from their intended send time (corrected
//! latency); the uncorrected view, which counts from the actual send,
//! hides it.
//!
//! The model: a run of D seconds at R requests/s (N = R·D requests) with
//! a freeze of F seconds. The R·F requests due during the freeze wait
//! until its end: their latencies spread evenly over 0..F (plus the
//! server's normal latency). So a fraction q of all requests (q < F/D)
//! has a latency above F − q·D: the corrected p99 is about F − 0.01·D and
//! the p90 about F − 0.1·D. At 2000/s for 6 s with a 1 s freeze: 0.94 s
//! and 0.4 s. After the freeze the backlog is worked off at the rate the
//! client and server manage together (X > R); requests wait for it too,
//! which moves every such latency up towards F, never above it: the
//! percentiles lie between F − q·D and F.
//!
//! Only the requests already sent on the 50 connections when the freeze
//! began wait from their actual send, about 50 of 12000, far fewer than
//! 1%: the uncorrected p99 stays a normal latency.
//!
//! F is what really happened, not what was asked for: a SIGSTOP..SIGCONT
//! around a one-second sleep lasts longer on a loaded machine, so the test
//! measures it; N is the run's own count.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{load_lock, pace, serve, serve_options, spawn_pace, url, Block, Nginx, Run};
use pace::serve::{ServeOptions, Stall};

/// `-T5s`: a freeze that lasts longer than asked on a loaded machine is
/// still no timeout (the default 2 s would turn it into socket errors).
const ARGS: [&str; 6] = ["-t2", "-c50", "-d6s", "-R2000", "-U", "-T5s"];
const LIMIT: Duration = Duration::from_secs(20);

fn args(target: &str) -> Vec<&str> {
    let mut args = ARGS.to_vec();
    args.push(target);
    args
}

/// How long the server was frozen: at least `min` (certainly frozen for
/// all of it), at most `max` (from before the freeze began to after it
/// ended).
#[derive(Clone, Copy, Debug)]
struct Freeze {
    min: Duration,
    max: Duration,
}

/// Room for noise: the server's normal latency and late wake-ups (of the
/// server after the freeze, of pace's threads) on a loaded 2-core machine,
/// and HdrHistogram's rounding. Latency only grows from such delays, so
/// the room above is larger than below.
const BELOW: f64 = 0.05;
const ABOVE: f64 = 0.15;

fn assert_stall_is_visible(run: &Run, freeze: Freeze) {
    run.assert_ok();
    let report = run.report();
    let rate = 2000.0;
    // The requests due during the freeze were sent afterwards, not lost.
    let requests = report.requests();
    assert!((11_400..=12_100).contains(&requests), "{requests} requests, planned 12000\n{run}");
    assert!(report.socket_errors().is_none(), "{run}");

    // The model, from the run's own figures, in seconds.
    let duration = requests as f64 / rate;
    let (f_min, f_max) = (freeze.min.as_secs_f64(), freeze.max.as_secs_f64());
    let window = |q: f64| (f_min - q * duration - BELOW, f_max + ABOVE);
    let corrected = |p: f64| report.latency_us(Block::Recorded, p) / 1e6;
    let (p90, p99, max) = (corrected(90.0), corrected(99.0), corrected(100.0));
    let uncorrected_p99 = report.latency_us(Block::Uncorrected, 99.0) / 1e6;
    eprintln!(
        "freeze {f_min:.3}..{f_max:.3} s, {requests} requests: corrected p90 {p90:.3} s \
         (model {:.3}..{:.3}), p99 {p99:.3} s (model {:.3}..{:.3}), max {max:.3} s; \
         uncorrected p99 {uncorrected_p99:.4} s",
        window(0.1).0,
        window(0.1).1,
        window(0.01).0,
        window(0.01).1,
    );
    assert!(0.1 * duration < f_min, "the model needs the freeze to hold the top 10%: {freeze:?}");
    for (name, value, q) in [("p90", p90, 0.1), ("p99", p99, 0.01)] {
        let (low, high) = window(q);
        assert!(
            (low..=high).contains(&value),
            "corrected {name} {value:.3} s, expected {low:.3}..{high:.3} s: \
             freeze {f_min:.3}..{f_max:.3} s - {q} x {duration:.2} s\n{run}"
        );
    }
    // The request due when the freeze began waited all of it.
    assert!(max >= f_min - BELOW, "corrected max {max:.3} s, the freeze {f_min:.3} s\n{run}");
    // The uncorrected view hides the freeze: its top 1% are normal
    // latencies (a freeze leaking into it would put p99 near F).
    assert!(
        uncorrected_p99 < f_min / 4.0,
        "uncorrected p99 {uncorrected_p99:.3} s, expected the freeze to be hidden\n{run}"
    );
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
    // The server holds every response due in the stall until its end (on
    // its own clock); it may wake up late, which ABOVE allows for.
    let length = Duration::from_secs(1);
    assert_stall_is_visible(&run, Freeze { min: length, max: length });
}

/// The same over HTTP/2 (one stream per connection: the model's 50
/// requests in flight when the freeze begins).
#[test]
fn built_in_server_stall_over_http2() {
    let _load = load_lock();
    let server = serve(ServeOptions {
        stall: Some(Stall { at: Duration::from_millis(2500), length: Duration::from_secs(1) }),
        ..serve_options()
    });
    let target = url(server.addr(), "/");
    let mut args = args(&target);
    args.insert(0, "--http2");
    let run = pace(&args, LIMIT);
    let length = Duration::from_secs(1);
    assert_stall_is_visible(&run, Freeze { min: length, max: length });
}

/// The same over HTTP/3 (one stream per connection, as over HTTP/2).
#[test]
fn built_in_server_stall_over_http3() {
    let _load = load_lock();
    let server = serve(ServeOptions {
        stall: Some(Stall { at: Duration::from_millis(2500), length: Duration::from_secs(1) }),
        tls: true,
        http3: true,
        ..serve_options()
    });
    let target = format!("https://127.0.0.1:{}/", server.addr().port());
    let mut args = args(&target);
    args.splice(0..0, ["--http3", "-k"]);
    let run = pace(&args, LIMIT);
    let length = Duration::from_secs(1);
    assert_stall_is_visible(&run, Freeze { min: length, max: length });
}

#[test]
fn nginx_frozen_with_sigstop() {
    let _load = load_lock();
    let Some(nginx) = Nginx::start() else { return };
    let target = nginx.url();
    let running = spawn_pace(&args(&target));
    thread::sleep(Duration::from_millis(2500));
    let stopping = Instant::now();
    nginx.signal(libc::SIGSTOP);
    let stopped = Instant::now();
    thread::sleep(Duration::from_secs(1));
    let continuing = Instant::now();
    nginx.signal(libc::SIGCONT);
    let continued = Instant::now();
    let freeze = Freeze { min: continuing - stopped, max: continued - stopping };
    let run = running.wait(LIMIT);
    assert_stall_is_visible(&run, freeze);
}
