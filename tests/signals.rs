//! Ctrl-C (SIGINT) and SIGTERM end a run early: the report of what was
//! measured is still printed, promptly, and the exit code is 128 + signal.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{default_server, load_lock, spawn_pace, url, Block};

/// Starts a 20 s run, sends `signal` after 1 s and checks the early,
/// complete report. Returns pace's stdout.
fn interrupt(args: &[&str], signal: i32, name: &str) -> String {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let mut args = args.to_vec();
    args.extend(["-d", "20s", &target]);
    let running = spawn_pace(&args);
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
    // About 1 s at 1000/s.
    let requests = report.requests();
    assert!(
        (500..=1500).contains(&requests),
        "{requests} requests in about 1 s at 1000/s\n{stdout}"
    );
    assert!(report.requests_per_sec() > 800.0, "{stdout}");
}
