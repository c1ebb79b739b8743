//! `--slo`, end to end: the real binary against the built-in server made
//! slow on purpose (every response 20 ms late), so that which objectives
//! hold follows from the server's configuration, never from tight timing:
//! `p50>15ms` holds, `p99<5ms` fails. A verdict block follows the report,
//! the JSON carries `slo`, and a failed objective is exit code 4 unless a
//! signal or a script failure says more.

mod common;

use std::thread;
use std::time::Duration;

use serde_json::Value;

use common::{
    default_server, load_lock, pace, serve, serve_options, spawn_pace, until_requests, url, Block,
    Run,
};
use pace::serve::{ServeOptions, ServerHandle};

const LIMIT: Duration = Duration::from_secs(15);

/// Added by the server to every response.
const SERVER_LATENCY: Duration = Duration::from_millis(20);

fn slow_server() -> ServerHandle {
    serve(ServeOptions { latency: SERVER_LATENCY, ..serve_options() })
}

/// A short paced run, well within the connections' capacity (4
/// connections at 20 ms carry 200 requests/s; the plan asks 50).
fn paced_run(server: &ServerHandle, slo: &[&str]) -> Run {
    let target = url(server.addr(), "/");
    let mut args = vec!["-t1", "-c4", "-d1s", "-R50"];
    args.extend(slo);
    args.push(&target);
    pace(&args, LIMIT)
}

/// The verdict block: its first line and the objective lines.
fn verdict_block(run: &Run) -> Vec<&str> {
    let start =
        run.stdout.find("SLO verdict: ").unwrap_or_else(|| panic!("no verdict block\n{run}"));
    run.stdout[start..].lines().collect()
}

#[test]
fn objectives_that_hold_exit_0() {
    let _load = load_lock();
    let server = slow_server();
    let run = paced_run(&server, &["--slo", "p50>15ms,u.p50>15ms,errors<1%", "--slo=requests>=10"]);
    run.assert_ok();
    assert!(run.stdout.contains(" requests in "), "{run}");
    let block = verdict_block(&run);
    assert_eq!(block[0], "SLO verdict: pass (4 of 4 objectives met)", "{run}");
    assert_eq!(block.len(), 5, "{run}");
    for (line, objective) in block[1..].iter().zip(["p50 > 15ms", "u.p50 > 15ms", "errors < 1%"]) {
        assert!(line.starts_with(&format!("  ok    {objective} ")), "{line:?}\n{run}");
    }
    // The block ends the report.
    assert!(run.stdout.ends_with(&format!("{}\n", block[4])), "{run}");
    assert!(block[3].ends_with("measured 0.00%"), "{run}");
}

#[test]
fn a_failed_objective_exits_4_after_the_whole_report() {
    let _load = load_lock();
    let server = slow_server();
    let run = paced_run(&server, &["-L", "--slo", "p50 > 15ms, p99 < 5ms"]);
    run.assert_code(4);
    assert!(!run.stderr.contains("panicked"), "{run}");
    // The report is complete, the verdict after it.
    let report = run.report();
    assert!(report.requests() > 0, "{run}");
    assert!(run.stdout.find("Schedule lag:").unwrap() < run.stdout.find("SLO verdict").unwrap());
    let block = verdict_block(&run);
    assert_eq!(block[0], "SLO verdict: FAIL (1 of 2 objectives met)", "{run}");
    assert!(block[1].starts_with("  ok    p50 > 15ms  measured "), "{run}");
    assert!(block[2].starts_with("  FAIL  p99 < 5ms   measured "), "{run}");
    // The measured p99 is the report's.
    let p99 = report.latency_us(Block::Recorded, 99.0);
    let measured = common::time_us(block[2].rsplit(' ').next().unwrap());
    assert_eq!(measured, p99, "{run}");
    assert!(measured >= SERVER_LATENCY.as_micros() as f64, "{run}");
    // In text mode the block says it all; stderr stays quiet.
    assert!(!run.stderr.contains("SLO"), "{run}");
}

#[test]
fn json_carries_the_verdicts() {
    let _load = load_lock();
    let server = slow_server();
    let run = paced_run(&server, &["-e", "--slo", "p50>15ms,p99<5ms,rate>10%,lag.max<1h"]);
    run.assert_code(4);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "stdout is the JSON report only\n{run}");
    let report: Value = serde_json::from_str(lines[0]).unwrap();
    let slo = report["slo"].as_array().unwrap_or_else(|| panic!("no slo array\n{run}"));
    let fields = |i: usize| -> (&str, &str, &str, bool) {
        let v = &slo[i];
        (
            v["objective"].as_str().unwrap(),
            v["metric"].as_str().unwrap(),
            v["unit"].as_str().unwrap(),
            v["ok"].as_bool().unwrap(),
        )
    };
    assert_eq!(fields(0), ("p50>15ms", "p50", "us", true), "{run}");
    assert_eq!(fields(1), ("p99<5ms", "p99", "us", false), "{run}");
    assert_eq!(fields(2), ("rate>10%", "rate", "%", true), "{run}");
    assert_eq!(fields(3), ("lag.max<1h", "lag.max", "us", true), "{run}");
    assert_eq!(slo[0]["op"], ">");
    assert_eq!(slo[0]["threshold"], 15_000);
    assert_eq!(slo[3]["threshold"], 3_600_000_000u64);
    // The values are the report's own figures.
    let percentiles = &report["latency"]["corrected"]["percentiles_us"];
    assert_eq!(slo[0]["value"], percentiles["50"], "{run}");
    assert_eq!(slo[1]["value"], percentiles["99"], "{run}");
    assert_eq!(slo[3]["value"], report["schedule_lag"]["max_us"], "{run}");
    let rate = report["requests_per_sec"].as_f64().unwrap() / 50.0 * 100.0;
    assert!((slo[2]["value"].as_f64().unwrap() - rate).abs() < 1e-9, "{run}");
    // stdout carries only JSON, so the failure is said on stderr.
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(first.starts_with("pace: SLO failed: p99<5ms (measured "), "{run}");
}

#[test]
fn errors_are_a_share_of_the_requests_or_a_count() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/status/503");
    let slo = "errors>99%,errors<1%,errors>=10,rate>=10";
    let run = pace(&["-t1", "-c2", "-d1s", "-R50", "--slo", slo, &target], LIMIT);
    run.assert_code(4);
    let block = verdict_block(&run);
    assert_eq!(block[0], "SLO verdict: FAIL (3 of 4 objectives met)", "{run}");
    assert_eq!(block[1], "  ok    errors > 99%  measured 100.00%", "{run}");
    assert_eq!(block[2], "  FAIL  errors < 1%   measured 100.00%", "{run}");
    let requests = run.report().requests();
    assert_eq!(block[3], format!("  ok    errors >= 10  measured {requests}"), "{run}");
    assert!(block[4].starts_with("  ok    rate >= 10    measured "), "{run}");
    assert!(block[4].ends_with(" requests/s"), "{run}");
}

#[test]
fn bad_objectives_are_command_line_errors() {
    // Refused before anything is resolved or sent: nothing listens here.
    let target = "http://127.0.0.1:9/";
    for (args, message) in [
        (
            &["--slo", "p99<1x"][..],
            "pace: invalid value for '--slo': 'p99<1x': '1x' is not a time (examples: 10ms, \
             500us, 1.5s)",
        ),
        (
            &["--slo", "p99<10ms,p999x<1ms"],
            "pace: invalid value for '--slo': 'p999x<1ms': unknown metric 'p999x' (metrics: pN, \
             mean, stdev, max of the latency, also as u.pN... for the uncorrected latency and \
             lag.pN... for the schedule lag; errors, requests, rate)",
        ),
        (
            &["--slo", "p99=10ms"],
            "pace: invalid value for '--slo': 'p99=10ms': '=' is not a comparison: expected one \
             of < <= > >=",
        ),
        (
            &["--slo", "rate>99%"],
            "pace: invalid value for '--slo': 'rate>99%': a share of the target rate needs a \
             plan (-R or --stages); without one, give requests/s (e.g. rate>1000)",
        ),
    ] {
        let mut line = args.to_vec();
        line.push(target);
        let run = pace(&line, LIMIT);
        run.assert_code(1);
        assert_eq!(run.stdout, "", "{run}");
        assert_eq!(run.stderr.trim_end(), message, "{run}");
    }
}

#[test]
fn a_signal_wins_over_the_verdict() {
    let _load = load_lock();
    let server = slow_server();
    let target = url(server.addr(), "/");
    let running = spawn_pace(&["-t1", "-c4", "-d20s", "-R50", "--slo", "p99<5ms", &target]);
    until_requests(&server, 1);
    thread::sleep(Duration::from_millis(500));
    running.signal(libc::SIGINT);
    let run = running.wait(LIMIT);
    run.assert_code(130);
    // The verdict on what was measured is still printed.
    assert_eq!(verdict_block(&run)[0], "SLO verdict: FAIL (0 of 1 objectives met)", "{run}");
}

#[test]
fn a_script_failure_wins_over_the_verdict() {
    let _load = load_lock();
    let server = slow_server();
    let target = url(server.addr(), "/");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/request_error.lua");
    let run = pace(&["-t1", "-c2", "-d5s", "-s", script, "--slo", "p99<5ms", &target], LIMIT);
    run.assert_code(3);
    assert_eq!(verdict_block(&run)[0], "SLO verdict: FAIL (0 of 1 objectives met)", "{run}");
}
