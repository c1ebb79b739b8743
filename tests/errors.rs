//! Errors end to end: status errors, timeouts, a server that dies during
//! the run, and the warning for a plan the connections cannot carry.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{
    default_server, load_lock, pace, serve, serve_options, spawn_pace, stretched, until_requests,
    url, Block,
};
use pace::serve::ServeOptions;

#[test]
fn error_statuses_are_counted_not_socket_errors() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/status/503");
    let run = pace(&["-t1", "-c2", "-d1s", &target], Duration::from_secs(10));
    run.assert_ok();
    let report = run.report();
    let requests = report.requests();
    // More than one per connection: a 503 does not stop the loop.
    assert!(requests >= 2 * 2, "{run}");
    assert_eq!(report.non_2xx_3xx(), Some(requests), "every response was a 503\n{run}");
    assert!(report.socket_errors().is_none(), "a 503 is not a socket error\n{run}");
    let statuses =
        format!("  Non-2xx or 3xx responses: {requests}\n  Status codes: 503: {requests}\n");
    assert!(run.stdout.contains(&statuses), "{run}");
}

#[test]
fn success_and_redirect_statuses_are_not_errors() {
    let _load = load_lock();
    let server = default_server();
    for path in ["/status/201", "/status/302"] {
        let target = url(server.addr(), path);
        let run = pace(&["-t1", "-c2", "-d300ms", &target], Duration::from_secs(10));
        run.assert_ok();
        let report = run.report();
        assert!(report.requests() >= 2 * 2, "{run}");
        assert_eq!(report.non_2xx_3xx(), None, "{run}");
        assert!(report.socket_errors().is_none(), "{run}");
        // All 201 is one success: wrk's report; all 302 gets the line.
        let line = format!("  Status codes: 302: {}\n", report.requests());
        assert_eq!(run.stdout.contains(&line), path == "/status/302", "{run}");
        assert_eq!(run.stdout.contains("Status codes"), path == "/status/302", "{run}");
    }
}

/// A paced run whose server dies: the requests the plan wanted after the
/// death are never sent. They are counted as errors of their own, in the
/// text and the JSON, with how long they had waited when the run ended,
/// reported apart from the latency, which holds the responses only: the
/// dead server's run is mostly errors, whatever its few latencies say.
#[test]
fn requests_never_sent_to_a_dead_server_are_reported_and_slow() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let running = spawn_pace(&["-t1", "-c4", "-d3s", "-R500", "-L", "-e", &target]);
    until_requests(&server, 1);
    thread::sleep(Duration::from_millis(500));
    let sent = server.stats().requests;
    server.stop();
    let run = running.wait(Duration::from_secs(15));
    run.assert_ok();
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("one JSON object");
    let unsent = json["errors"]["unsent"].as_u64().unwrap();
    let completed = json["requests"].as_u64().unwrap();
    // The plan has 1500 requests; the server saw `sent` before it died and
    // pace could send nothing after: the rest never left.
    assert!(completed <= sent + 4, "{run}");
    assert!(unsent + completed >= 1500 - 4 - 8, "{unsent} unsent + {completed} completed\n{run}");
    assert_eq!(json["unsent"], json["errors"]["unsent"], "{run}");
    let corrected = &json["latency"]["corrected"];
    assert_eq!(corrected["count"].as_u64().unwrap(), completed, "{run}");
    // The unsent requests waited from their intended time to the end of
    // the run, evenly spread over the time the server was dead (at least
    // 1 s of the 3 s): the median of their waits is most of the dead
    // time's half, their largest the dead time.
    let waits = &json["unsent_wait"];
    assert_eq!(waits["count"].as_u64().unwrap(), unsent, "{run}");
    let dead_s = unsent as f64 / 500.0;
    let p50_s = waits["percentiles_us"]["50"].as_f64().unwrap() / 1e6;
    let max_s = waits["max_us"].as_f64().unwrap() / 1e6;
    assert!(dead_s >= 1.0, "the server was dead for only {dead_s} s of the plan\n{run}");
    assert!(max_s >= 0.9 * dead_s, "longest wait {max_s} s, dead for {dead_s} s\n{run}");
    assert!(p50_s >= 0.4 * dead_s, "median wait {p50_s} s, dead for {dead_s} s\n{run}");
}

#[test]
fn hung_requests_time_out_and_the_run_ends_on_time() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/hang");
    let run = pace(
        &["--timeout", "300ms", "-d", "2s", "-c", "4", "-t", "1", &target],
        Duration::from_secs(15),
    );
    run.assert_ok();
    let report = run.report();
    let errors = report.errors();
    // Each connection times out every ~300 ms and is replaced: about
    // 4 x 2 s / 300 ms = 26; a broken timeout gives none.
    assert!(errors.timeout > 0, "no timeouts against /hang\n{run}");
    assert!(errors.timeout <= 40, "{} timeouts, at most ~27 possible\n{run}", errors.timeout);
    assert_eq!(report.requests(), 0, "{run}");
    assert!(report.error_causes().iter().any(|c| c.starts_with("timeout: ")), "{run}");
    // The run lasts its 2 s plus at most one timeout (300 ms) for what is
    // in flight; 2.7 s more for starting and stopping the process on a
    // loaded machine. Waiting on the hung requests would take much longer.
    assert!(run.wall < stretched(Duration::from_secs(5)), "the 2 s run took {:?}\n{run}", run.wall);
}

#[test]
fn server_dies_mid_run_reconnects_back_off() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let running = spawn_pace(&["-t1", "-c10", "-d3s", &target]);
    // Once the run has begun (the first requests arrived), let it go on
    // for half a second, then the server dies: 2.5 s or less of the run
    // remain.
    until_requests(&server, 1);
    thread::sleep(Duration::from_millis(500));
    let before = server.stats().requests;
    server.stop();
    let stopped = Instant::now();
    let run = running.wait(Duration::from_secs(15));
    run.assert_ok();
    let report = run.report();
    assert!(report.requests() >= before.saturating_sub(10), "{run}");
    let errors = report.errors();
    assert!(errors.connect > 0, "no connect errors after the server died\n{run}");
    // 10 connections for at most 2.5 s after the death: with the back-off
    // (10 ms doubling to 1 s) about 10 attempts each; a reconnect storm
    // makes thousands.
    assert!(
        errors.connect < 400,
        "{} connect errors: reconnects do not back off\n{run}",
        errors.connect
    );
    let causes = report.error_causes();
    assert!(
        causes.iter().any(|c| c.starts_with("connect: ")),
        "no connect cause in {causes:?}\n{run}"
    );
    // The run still lasts its 3 s (at most 2.5 s after the death), no
    // more than a second (the longest back-off) past the plan.
    assert!(stopped.elapsed() < stretched(Duration::from_secs(4)), "{run}");
}

/// The text report names the cause in its own words, one line each (the
/// causes and their JSON are tests/diagnostics.rs's).
#[test]
fn too_few_connections_for_the_rate_warns() {
    let _load = load_lock();
    let server = default_server();
    // One connection, 5 ms per response: at most 200 of the 2000/s.
    let target = url(server.addr(), "/delay/5");
    let run = pace(&["-t1", "-c1", "-R", "2000", "-d2s", &target], Duration::from_secs(15));
    run.assert_ok();
    let report = run.report();
    let warnings = report.warnings();
    assert_eq!(warnings.len(), 2, "expected two Warning lines\n{run}");
    assert!(
        warnings[0].starts_with("Warning: too few connections: 1 cannot carry 2000 requests/s at "),
        "{run}"
    );
    assert!(warnings[0].ends_with(" [too_few_connections]"), "{run}");
    assert!(warnings[1].ends_with(" [unsent]"), "{run}");
    assert!(report.requests() < 1000, "{run}");
}

/// The server is killed and restarted on the same port during a paced
/// run: connections fail and reconnect with back-off (no storm), the run
/// goes on, and once the server is back it gets the plan: the requests due
/// while it was down (late, counted from their intended times) and the
/// rest on time. The two servers together see the whole plan.
#[test]
fn a_restarted_server_gets_the_plan() {
    let _load = load_lock();
    let first = default_server();
    let addr = first.addr();
    let target = url(addr, "/");
    let running = spawn_pace(&["-t1", "-c4", "-d4s", "-R200", "-U", &target]);
    until_requests(&first, 1);
    thread::sleep(Duration::from_secs(1));
    let before = first.stats().requests;
    first.stop();
    let down = Instant::now();
    thread::sleep(Duration::from_secs(1));
    let second = serve(ServeOptions { bind: addr, ..serve_options() });
    let downtime = down.elapsed();
    let run = running.wait(Duration::from_secs(15));
    run.assert_ok();
    let report = run.report();
    let after = second.stats().requests;
    // The plan is 800 requests; a few may be lost in flight when the
    // server died, and a request due just before the end may not be
    // answered.
    let planned = 800;
    assert!(before + after <= planned + 4, "{before} + {after} requests\n{run}");
    assert!(before + after + 8 >= planned, "{before} + {after} of {planned}\n{run}");
    let errors = report.errors();
    assert!(errors.connect > 0, "no connect errors while the server was down\n{run}");
    // 4 connections backing off from 10 ms, doubling: about 7 attempts
    // each in a second; a storm makes hundreds.
    assert!(errors.connect <= 4 * 12, "{} connect errors\n{run}", errors.connect);
    // The requests due during the downtime waited for it: the corrected
    // maximum is about the downtime, the uncorrected one is not.
    let max_us = report.latency_us(Block::Recorded, 100.0);
    let downtime_us = downtime.as_micros() as f64;
    assert!(max_us >= 0.8 * downtime_us, "corrected max {max_us} us, down {downtime_us} us\n{run}");
    assert!(report.latency_us(Block::Uncorrected, 99.0) < downtime_us / 4.0, "{run}");
}
