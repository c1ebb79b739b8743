//! Closed-loop (wrk) mode end to end: header, wrk's latency distribution,
//! and every requested connection really opened.

mod common;

use std::time::Duration;

use common::{assert_monotonic, default_server, load_lock, pace, url, Block};

#[test]
fn wrk_report_with_latency_distribution() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c10", "-d1s", "-L", &target], Duration::from_secs(10));
    run.assert_ok();
    let mut lines = run.stdout.lines();
    assert_eq!(lines.next(), Some(format!("Running 1s test @ {target}").as_str()), "{run}");
    assert_eq!(lines.next(), Some("  2 threads and 10 connections"), "{run}");

    let report = run.report();
    let requests = report.requests();
    // A closed loop sends again after each response: every connection
    // made more than one request (speed is the benchmark's business).
    assert!(requests >= 2 * 10, "only {requests} requests on 10 connections\n{run}");
    let served = server.stats().requests;
    assert!(
        served >= requests && served <= requests + 10,
        "server read {served}, pace counted {requests}\n{run}"
    );

    let distribution =
        report.percentiles(Block::Wrk).unwrap_or_else(|| panic!("no Latency Distribution\n{run}"));
    let percentiles: Vec<f64> = distribution.iter().map(|&(p, _)| p).collect();
    assert_eq!(percentiles, [50.0, 75.0, 90.0, 99.0], "{run}");
    assert_monotonic(&report, Block::Wrk);
    assert!(distribution[0].1 > 0.0, "{run}");
    // wrk mode has no plan: no wrk2 blocks, no schedule lag.
    assert!(report.percentiles(Block::Recorded).is_none(), "{run}");
    assert!(report.schedule_lag().is_none(), "{run}");
    assert!(report.socket_errors().is_none(), "{run}");
    report.assert_rate_is_requests_over_runtime();
}

#[test]
fn closed_loop_without_latency_flag_has_no_distribution() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t1", "-c2", "-d500ms", &target], Duration::from_secs(10));
    run.assert_ok();
    let report = run.report();
    assert!(report.requests() >= 2 * 2, "{run}");
    assert!(!run.stdout.contains("Latency Distribution"), "{run}");
    assert!(run.stdout.contains("  Thread Stats   Avg      Stdev     Max   +/- Stdev\n"), "{run}");
}

#[test]
fn remainder_connections_are_spread_not_dropped() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    // 10 connections over 3 threads: 4 + 3 + 3 (wrk drops the remainder
    // and opens 9).
    let run = pace(&["-t3", "-c10", "-d1s", &target], Duration::from_secs(10));
    run.assert_ok();
    assert!(run.stdout.contains("  3 threads and 10 connections\n"), "{run}");
    assert!(run.report().socket_errors().is_none(), "{run}");
    // Before the run, pace checks the address with one test connection
    // (src/resolve.rs, closed at once); then each of the 10 connections
    // connects once and stays open (keep-alive, no errors): 11 accepted.
    let connections = server.stats().connections;
    assert_eq!(
        connections, 11,
        "server accepted {connections} connections (1 probe + 10 expected)\n{run}"
    );
}
