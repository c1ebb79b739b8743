//! Paced (wrk2) mode end to end: the real binary against the built-in
//! server keeps the planned rate, prints both latency views and the
//! schedule lag.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{assert_monotonic, default_server, load_lock, pace, url, Block};

#[test]
fn keeps_the_planned_rate() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c20", "-d3s", "-R2000", "-U", &target], Duration::from_secs(15));
    run.assert_ok();
    let report = run.report();

    // The plan: requests k = 0, 1, ... are due at k/R while k/R < 3 s,
    // 6000 of them, all sent (1% room for a generator starved at the very
    // end; the requests due but never sent would be in a warning).
    let requests = report.requests();
    assert!((5940..=6060).contains(&requests), "{requests} requests, planned 6000\n{run}");
    // The run time ends at the last response: not before the last
    // request was due, not after its timeout (2 s). The rate is the
    // requests over that time.
    let runtime = report.runtime_s();
    assert!(
        runtime >= (requests - 1) as f64 / 2000.0 - 0.005 && runtime <= 3.0 + 2.0,
        "{requests} requests in {runtime} s\n{run}"
    );
    report.assert_rate_is_requests_over_runtime();
    // Everything pace sent reached the server (plus nothing else).
    let served = server.stats().requests;
    assert!(
        served >= requests && served <= requests + 40,
        "server read {served}, pace counted {requests}\n{run}"
    );

    assert_monotonic(&report, Block::Recorded);
    assert_monotonic(&report, Block::Uncorrected);
    let corrected_p50 = report.latency_us(Block::Recorded, 50.0);
    let uncorrected_p50 = report.latency_us(Block::Uncorrected, 50.0);
    // Corrected latency counts from the intended send time, which is never
    // after the actual one.
    assert!(
        corrected_p50 >= uncorrected_p50,
        "corrected p50 {corrected_p50}us < uncorrected {uncorrected_p50}us\n{run}"
    );
    for p in [99.0, 100.0] {
        let corrected = report.latency_us(Block::Recorded, p);
        let uncorrected = report.latency_us(Block::Uncorrected, p);
        assert!(
            corrected >= uncorrected,
            "p{p}: corrected {corrected}us < uncorrected {uncorrected}us\n{run}"
        );
    }
    let lag = report.schedule_lag().unwrap_or_else(|| panic!("no Schedule lag line\n{run}"));
    assert!(lag.contains("p50 ") && lag.contains("p99 ") && lag.contains("max "), "{lag}");
    assert!(report.socket_errors().is_none(), "{run}");
    assert_eq!(report.non_2xx_3xx(), None, "{run}");
}

#[test]
fn fractional_rate() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    // One request every 2 s for 4 s: at 0 s and 2 s (a third due exactly at
    // the end may or may not go out).
    let run = pace(&["-R", "0.5", "-d", "4s", "-t1", "-c1", &target], Duration::from_secs(15));
    run.assert_ok();
    let requests = run.report().requests();
    assert!((2..=3).contains(&requests), "{requests} requests at 0.5/s for 4 s\n{run}");
    let served = server.stats().requests;
    assert_eq!(served, requests, "server read {served} requests\n{run}");
}

/// How long a plain blocking client takes to GET `path` (a body of
/// `body` bytes) from `addr`, reading as the bytes arrive: what the
/// transfer itself costs on this machine at the moment.
fn plain_fetch(addr: SocketAddr, path: &str, body: usize) -> Duration {
    let mut stream = TcpStream::connect(addr).expect("connect to the built-in server");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let started = Instant::now();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut head = Vec::new();
    let mut received = 0;
    let mut header_end = None;
    while header_end.is_none_or(|end| received < end + body) {
        let n = stream.read(&mut buf).expect("read the response");
        assert!(n > 0, "the server closed after {received} bytes");
        if header_end.is_none() {
            head.extend_from_slice(&buf[..n]);
            header_end = head.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
        }
        received += n;
    }
    started.elapsed()
}

/// The median of five [`plain_fetch`]es.
fn plain_fetch_median(addr: SocketAddr, path: &str, body: usize) -> Duration {
    let mut times: Vec<Duration> = (0..5).map(|_| plain_fetch(addr, path, body)).collect();
    times.sort();
    times[2]
}

/// Between sends a paced thread sleeps and lets responses wait in the
/// socket, timed by the kernel's receive stamps. A large body must not wait
/// for those sleeps: TCP flow control would hold the rest of it back until
/// pace reads, and the response would look as slow as pace's naps.
#[test]
fn large_bodies_are_read_as_they_arrive() {
    let _load = load_lock();
    let server = default_server();
    let (path, body) = ("/bytes/20000000", 20_000_000);
    let target = url(server.addr(), path);
    let before = plain_fetch_median(server.addr(), path, body);
    let run = pace(&["-t1", "-c2", "-d2s", "-R5", "-U", &target], Duration::from_secs(15));
    let after = plain_fetch_median(server.addr(), path, body);
    run.assert_ok();
    let report = run.report();
    assert_eq!(report.requests(), 10, "{run}");
    // 20 MB over loopback takes ~10-20 ms here; read only at pace's
    // wake-ups (every 50 ms at most at this rate) it took ~100 ms. The
    // yardstick is a plain client's time for the same response, measured
    // around the run (a loaded machine slows both): pace may take 3 times
    // as long, and at least 60 ms.
    let plain = before.max(after);
    let limit = (3.0 * plain.as_secs_f64() * 1e6).max(60_000.0);
    let p50 = report.latency_us(Block::Uncorrected, 50.0);
    assert!(
        p50 < limit,
        "20 MB responses took {p50}us at p50; a plain client {plain:?}; limit {limit}us\n{run}"
    );
}
