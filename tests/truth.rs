//! The figures mean what they say: histograms hold measurements only,
//! requests that were never sent are errors with their waits reported
//! apart, rates are over the sending window, `-n` alone runs to its count,
//! and Ctrl-C neither loses the requests in flight nor turns them into
//! timeouts.

mod common;

use std::thread;
use std::time::Duration;

use common::{load_lock, serve, serve_options, spawn_pace, until_requests, url, Block};
use pace::serve::ServeOptions;
use serde_json::Value;

/// The built-in server answering every request after `latency`.
fn slow_server(latency: Duration) -> pace::serve::ServerHandle {
    serve(ServeOptions { latency, ..serve_options() })
}

fn json_of(stdout: &str) -> Value {
    let last = stdout.lines().rev().find(|l| l.starts_with('{')).expect("a JSON report");
    serde_json::from_str(last).expect("valid JSON")
}

/// An overloaded run (Little's law needs 40 connections, it has 10): the
/// requests that could not be sent are errors with their waits on their
/// own; the corrected latency holds only measurements, so its minimum is
/// at the server's floor and at or above the uncorrected everywhere.
#[test]
fn requests_never_sent_are_errors_not_latencies() {
    let _load = load_lock();
    let server = slow_server(Duration::from_millis(20));
    let target = url(server.addr(), "/");
    let args = ["-t1", "-c10", "-d2s", "-R2000", "-U", "-e", &target];
    let run = common::pace(&args, Duration::from_secs(30));
    run.assert_ok();
    let v = json_of(&run.stdout);
    let requests = v["requests"].as_u64().unwrap();
    let unsent = v["errors"]["unsent"].as_u64().unwrap();
    assert!(unsent > 1000, "10 connections cannot carry 2000/s at 20 ms\n{run}");
    // Every request of the plan is one or the other (the plan: 4000).
    assert!((3_990..=4_000).contains(&(requests + unsent)), "{requests} + {unsent}\n{run}");
    let corrected = &v["latency"]["corrected"];
    let uncorrected = &v["latency"]["uncorrected"];
    assert_eq!(corrected["count"].as_u64(), Some(requests), "only responses are latencies");
    assert!(corrected["min_us"].as_u64().unwrap() >= 20_000, "below the server's floor\n{run}");
    assert!(corrected["min_us"].as_u64() >= uncorrected["min_us"].as_u64());
    let (c, u) = (&corrected["percentiles_us"], &uncorrected["percentiles_us"]);
    for p in ["50", "75", "90", "99", "99.9", "100"] {
        assert!(c[p].as_u64() >= u[p].as_u64(), "p{p}: corrected below uncorrected\n{v}");
    }
    // Their waits: one each, apart, as long as the run at most.
    let waits = &v["unsent_wait"];
    assert_eq!(waits["count"].as_u64(), Some(unsent));
    let max_wait = waits["max_us"].as_u64().unwrap();
    assert!(max_wait > 500_000 && max_wait <= 2_100_000, "{waits}");
    let warning = v["warnings"].as_array().unwrap().iter().find(|w| w["code"] == "unsent");
    let warning = warning.expect("an unsent warning");
    assert_eq!(warning["figures"]["wait_max_us"].as_u64(), Some(max_wait));
}

/// The same in the text report: the waits on the unsent line, nothing of
/// them in the distribution.
#[test]
fn the_text_report_gives_the_waits_of_unsent_requests_on_their_line() {
    let _load = load_lock();
    let server = slow_server(Duration::from_millis(20));
    let target = url(server.addr(), "/");
    let args = ["-t1", "-c2", "-d1s", "-R500", "-L", "--percentiles", "0,50,99", &target];
    let run = common::pace(&args, Duration::from_secs(30));
    run.assert_ok();
    let report = run.report();
    let line = run.stdout.lines().find(|l| l.starts_with("    unsent: ")).expect("unsent line");
    assert!(line.contains("no connection was free before the end (waited median "), "{line}");
    assert!(report.errors().unsent > 0, "{run}");
    assert!(report.latency_us(Block::Recorded, 0.0) >= 20_000.0, "{run}");
    let warning = report.warnings().into_iter().find(|w| w.ends_with("[unsent]")).unwrap();
    assert!(warning.contains("no latency percentile includes them"), "{warning}");
}

/// A perfect run on a slow endpoint: every request on time, none lost.
/// Its rate is the plan's (over the sending window, not diluted by the
/// wait for the last responses), and `rate>99%` holds.
#[test]
fn the_rate_is_over_the_sending_window() {
    let _load = load_lock();
    let server = slow_server(Duration::from_millis(300));
    let target = url(server.addr(), "/");
    let args = ["-t1", "-c300", "-d3s", "-R500", "--slo", "rate>99%", &target];
    let run = common::pace(&args, Duration::from_secs(30));
    run.assert_ok();
    let report = run.report();
    assert_eq!(report.errors().unsent, 0, "{run}");
    // 1500 planned: all answered, though the last arrived 300 ms after the
    // window.
    assert_eq!(report.requests(), 1500, "{run}");
    assert!((report.runtime_s() - 3.0).abs() < 0.006, "{run}");
    assert!(report.requests_per_sec() >= 499.0, "{run}");
    report.assert_rate_is_requests_over_runtime();
}

/// `-n` alone runs until its requests are answered, however long that
/// takes (it used to stop after a second: an unbounded duration overflowed
/// in the watchdog's deadline).
#[test]
fn requests_alone_bound_the_closed_loop() {
    let _load = load_lock();
    let server = slow_server(Duration::from_millis(20));
    let target = url(server.addr(), "/");
    let run = common::pace(&["-n", "80", "-t1", "-c1", &target], Duration::from_secs(30));
    run.assert_ok();
    assert!(run.wall > Duration::from_millis(1_600), "80 requests of 20 ms\n{run}");
    let report = run.report();
    assert_eq!(report.requests(), 80, "{run}");
    assert_eq!(server.stats().requests, 80);
    // The window of a run bounded by -n ends with its last response.
    report.assert_rate_is_requests_over_runtime();
    assert!(report.runtime_s() >= 1.6, "{run}");
    assert!(!run.stderr.contains("Lua"), "{run}");
}

/// Ctrl-C stops a healthy run: the requests in flight answer and count,
/// none is a timeout, and no warning blames the server.
#[test]
fn ctrl_c_lets_the_requests_in_flight_answer() {
    let _load = load_lock();
    let server = slow_server(Duration::from_millis(20));
    let target = url(server.addr(), "/");
    let running = spawn_pace(&["-t1", "-c50", "-d8s", "-R200", "-e", &target]);
    until_requests(&server, 1);
    thread::sleep(Duration::from_millis(1_200));
    running.signal(libc::SIGINT);
    let run = running.wait(Duration::from_secs(15));
    run.assert_code(130);
    let v = json_of(&run.stdout);
    let e = &v["errors"];
    assert_eq!((e["timeout"].as_u64(), e["stopped"].as_u64()), (Some(0), Some(0)), "{run}");
    // No warning about the run; one that the loaded machine left pace
    // short of CPU is about the machine, and may come.
    let warnings = v["warnings"].as_array().unwrap();
    assert!(warnings.iter().all(|w| w["code"] == "generator_cpu"), "{run}");
    // Every request that reached the server was answered and counted.
    assert_eq!(v["requests"].as_u64(), Some(server.stats().requests), "{run}");
    assert_eq!(v["interrupted_by"], "SIGINT");
}

/// Requests that hang: the first Ctrl-C waits for them (up to the
/// timeout, and says so), the second cuts them off. They are counted as
/// cut off by the stop, not as timeouts, and no diagnosis rests on them.
#[test]
fn a_second_ctrl_c_cuts_off_the_requests_in_flight() {
    let _load = load_lock();
    let server = common::default_server();
    let target = url(server.addr(), "/hang");
    let mut running = spawn_pace(&["-t1", "-c3", "-d20s", "-R100", "-T30s", &target]);
    until_requests(&server, 3);
    running.signal(libc::SIGINT);
    // Still waiting for the hung requests: the watchdog ticks every 100 ms,
    // so give the notice time to be written.
    thread::sleep(Duration::from_millis(500));
    assert!(running.is_running(), "pace did not wait for the requests in flight");
    running.signal(libc::SIGINT);
    let run = running.wait(Duration::from_secs(15));
    run.assert_code(130);
    assert!(run.stderr.contains("the requests in flight get up to 30.00s"), "{run}");
    let report = run.report();
    assert_eq!(report.errors().timeout, 0, "{run}");
    assert!(run.stdout.contains("  In flight when stopped: 3 (cut off by the stop"), "{run}");
    assert!(report.warnings().iter().all(|w| !w.contains("server_stalled")), "{run}");
}
