//! Ctrl-C (SIGINT) and SIGTERM end a run early: the report of what was
//! measured is still printed, promptly, and the exit code is 128 + signal.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{default_server, load_lock, spawn_pace, until_requests, url, Block};

/// Starts a 20 s run, sends `signal` about 1 s after the first request
/// reached the server and checks the early, complete report. Returns
/// pace's stdout.
fn interrupt(args: &[&str], signal: i32, name: &str) -> String {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let mut args = args.to_vec();
    args.extend(["-d", "20s", &target]);
    let running = spawn_pace(&args);
    until_requests(&server, 1);
    thread::sleep(Duration::from_secs(1));
    running.signal(signal);
    let signalled = Instant::now();
    let run = running.wait(Duration::from_secs(15));
    let after_signal = signalled.elapsed();
    run.assert_code(128 + signal);
    assert!(
        after_signal < Duration::from_secs(3),
        "pace took {after_signal:?} to stop after {name}\n{run}"
    );
    assert!(!run.stderr.contains("panicked"), "{run}");
    assert!(run.stderr.contains(name), "stderr does not say which signal stopped the run\n{run}");
    let report = run.report();
    assert!(run.stdout.contains(" requests in "), "{run}");
    assert!(run.stdout.contains("Requests/sec:"), "{run}");
    assert!(run.stdout.contains("Transfer/sec:"), "{run}");
    let requests = report.requests();
    assert!(requests > 0, "nothing measured before {name}\n{run}");
    // The report covers the second that ran, not the planned 20 s.
    let served = server.stats().requests;
    assert!(served >= requests, "{run}");
    run.stdout
}

#[test]
fn sigint_prints_the_report_and_exits_130() {
    let stdout = interrupt(&["-t2", "-c10", "--latency"], libc::SIGINT, "SIGINT");
    assert!(stdout.contains("  Latency Distribution\n"), "{stdout}");
}

#[test]
fn sigterm_prints_the_report_and_exits_143() {
    let stdout = interrupt(&["-t2", "-c10", "-R1000", "-U"], libc::SIGTERM, "SIGTERM");
    let report = common::Report::new(&stdout);
    assert!(report.percentiles(Block::Recorded).is_some(), "{stdout}");
    assert!(report.percentiles(Block::Uncorrected).is_some(), "{stdout}");
    // The plan over the run's own time (about 1 s): 1000/s, not more
    // (requests are due at k/R), and all sent (10% room for the requests
    // still in flight or due when the signal came on a busy machine).
    let requests = report.requests() as f64;
    let planned = 1000.0 * report.runtime_s();
    assert!(
        requests <= planned + 10.0 && requests >= 0.9 * planned - 10.0,
        "{requests} requests in {} s at 1000/s\n{stdout}",
        report.runtime_s()
    );
    report.assert_rate_is_requests_over_runtime();
}

/// Ctrl-C while the responses still in flight after the run are awaited:
/// the first one lets them go on answering (up to the timeout), the second
/// stops at once. Those requests are counted, as cut off by the stop (not
/// as timeouts: they did not have their timeout), never dropped silently.
#[test]
fn requests_in_flight_at_a_signal_are_counted() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/hang");
    let mut running = spawn_pace(&["-t1", "-c3", "-d500ms", "-T20s", &target]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.stats().requests < 3 {
        assert!(Instant::now() < deadline, "the requests never reached the server");
        thread::sleep(Duration::from_millis(5));
    }
    // The run is over after 0.5 s; the hung requests are then awaited.
    thread::sleep(Duration::from_secs(1));
    running.signal(libc::SIGINT);
    thread::sleep(Duration::from_millis(300));
    assert!(running.is_running(), "the first Ctrl-C did not let the requests answer");
    running.signal(libc::SIGINT);
    let run = running.wait(Duration::from_secs(15));
    run.assert_code(130);
    let report = run.report();
    assert_eq!(report.requests(), 0, "{run}");
    assert_eq!(report.socket_errors().map_or(0, |e| e.timeout), 0, "{run}");
    assert!(run.stdout.contains("  In flight when stopped: 3 "), "{run}");
}
