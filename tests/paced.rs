//! Paced (wrk2) mode end to end: the real binary against the built-in
//! server keeps the planned rate, prints both latency views and the
//! schedule lag.

mod common;

use std::time::Duration;

use common::{assert_monotonic, default_server, load_lock, pace, url, Block};

#[test]
fn keeps_the_planned_rate() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c20", "-d3s", "-R2000", "-U", &target], Duration::from_secs(15));
    run.assert_ok();
    let report = run.report();

    let requests = report.requests();
    assert!((5940..=6060).contains(&requests), "{requests} requests, planned 6000\n{run}");
    let rate = report.requests_per_sec();
    assert!((1960.0..=2040.0).contains(&rate), "{rate} requests/sec, planned 2000\n{run}");
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

/// Between sends a paced thread sleeps and lets responses wait in the
/// socket, timed by the kernel's receive stamps. A large body must not wait
/// for those sleeps: TCP flow control would hold the rest of it back until
/// pace reads, and the response would look as slow as pace's naps.
#[test]
fn large_bodies_are_read_as_they_arrive() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/bytes/20000000");
    let run = pace(&["-t1", "-c2", "-d2s", "-R5", "-U", &target], Duration::from_secs(15));
    run.assert_ok();
    let report = run.report();
    assert_eq!(report.requests(), 10, "{run}");
    // 20 MB over loopback takes ~10-20 ms; read only at pace's wake-ups
    // (every 50 ms at most at this rate) it took ~100 ms.
    let p50 = report.latency_us(Block::Uncorrected, 50.0);
    assert!(p50 < 60_000.0, "20 MB responses took {p50}us at p50\n{run}");
}
