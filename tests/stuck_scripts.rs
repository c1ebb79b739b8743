//! A script that does not return ends neither the run nor the report: its
//! call is interrupted a grace period after the run is over (or after a
//! signal), and a thread stuck in a loop LuaJIT compiled (which no
//! interrupt reaches) is given up. tests/scripts/stuck.lua gets stuck in
//! the function and the kind of loop that PACE_TEST_STUCK names.
//!
//! Time bounds come from the design: the run (-d), the collection of late
//! responses (-T), a grace period of 1 s before the interrupt and 1 s more
//! before giving up, plus 2 s for starting and stopping a process on a
//! loaded machine. After a signal there is no grace before the interrupt:
//! the wait the signal announced is the timeout (-T), and a stuck thread is
//! given up 0.1 s after the interrupt.

mod common;

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use common::{
    default_server, load_lock, spawn_pace_with_env, stretched, until_requests, url, Running,
};
use pace::serve::ServerHandle;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/stuck.lua");
const GRACE: Duration = Duration::from_secs(1);
const SLACK: Duration = Duration::from_secs(2);

/// Starts a run of `duration` whose script gets stuck as `stuck` says,
/// with `extra` options; returns it once the server has seen requests.
fn start(stuck: &str, duration: &str, extra: &[&str]) -> (Running, ServerHandle) {
    let server = default_server();
    let target = url(server.addr(), "/");
    let mut args = vec!["-t1", "-c1", "-d", duration, "-T", "500ms", "-s", SCRIPT];
    args.extend(extra);
    args.push(&target);
    let running = spawn_pace_with_env(&args, &[("PACE_TEST_STUCK", stuck)]);
    until_requests(&server, 1);
    (running, server)
}

#[test]
fn a_call_still_running_after_the_run_is_interrupted() {
    let _load = load_lock();
    for function in ["response", "request", "delay"] {
        let (running, _server) = start(&format!("{function} interpreted"), "1s", &[]);
        let run = running.wait(Duration::from_secs(20));
        run.assert_code(3);
        let limit = Duration::from_millis(1500) + GRACE + SLACK;
        assert!(run.wall < stretched(limit), "{function}: took {:?}\n{run}", run.wall);
        let said = format!("thread 0's script's {function}() was still running after the end of the run; it was interrupted");
        assert!(run.stderr.contains(&said), "{run}");
        assert!(run.stderr.contains("stuck.lua:"), "no script location\n{run}");
        assert!(run.stdout.contains(" requests in "), "no report\n{run}");
        assert!(!run.stderr.contains("panicked"), "{run}");
    }
}

#[test]
fn a_compiled_loop_is_given_up_and_the_report_still_printed() {
    let _load = load_lock();
    let (running, _server) = start("response compiled", "1s", &[]);
    let run = running.wait(Duration::from_secs(20));
    run.assert_code(3);
    let limit = Duration::from_millis(1500) + 2 * GRACE + SLACK;
    assert!(run.wall < stretched(limit), "took {:?}\n{run}", run.wall);
    assert!(run.stderr.contains("could not be interrupted"), "{run}");
    assert!(run.stdout.contains(" requests in "), "no report\n{run}");
}

#[test]
fn sigint_ends_a_run_stuck_in_a_compiled_loop() {
    let _load = load_lock();
    let (running, _server) = start("response compiled", "30s", &[]);
    thread::sleep(Duration::from_millis(300));
    running.signal(libc::SIGINT);
    let signalled = Instant::now();
    let run = running.wait(Duration::from_secs(20));
    run.assert_code(130);
    // The announced wait (-T 500ms), then the interrupt and 0.1 s.
    assert!(signalled.elapsed() < stretched(Duration::from_millis(600) + SLACK), "{run}");
    assert!(run.stderr.contains("response() did not return after SIGINT"), "{run}");
    assert!(run.stdout.contains(" requests in "), "no report\n{run}");
}

/// The thread stuck in its script handed over what it measured up to the
/// hang (at most 10 ms of it is lost), the report spans the window the run
/// really had, and SIGTERM ends the run once the announced timeout is over.
#[test]
fn sigterm_keeps_what_a_stuck_thread_measured_and_ends_on_time() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    // 200 requests/s: the 19 responses before the hang take 0.1 s.
    let args = ["-t1", "-c1", "-d30s", "-R200", "-s", SCRIPT, &target];
    let running = spawn_pace_with_env(&args, &[("PACE_TEST_STUCK", "response compiled")]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.stats().requests < 20 {
        assert!(Instant::now() < deadline, "20 requests did not reach the server in 10 s");
        thread::sleep(Duration::from_millis(5));
    }
    running.signal(libc::SIGTERM);
    let signalled = Instant::now();
    let run = running.wait(Duration::from_secs(30));
    run.assert_code(143);
    let announced = "the requests in flight get up to 2.00s (--timeout) to answer";
    assert!(run.stderr.contains(announced), "{run}");
    // The announced 2 s, then the interrupt and 0.1 s (the build that
    // added a grace of 1 s twice took 4 s).
    let took = signalled.elapsed();
    assert!(
        took < stretched(Duration::from_millis(2100) + Duration::from_millis(1400)),
        "{took:?}\n{run}"
    );
    assert!(run.stderr.contains("response() did not return after SIGTERM"), "{run}");
    let report = run.report();
    let requests = report.requests();
    assert!((10..=20).contains(&requests), "{requests} requests kept of 19-20\n{run}");
    // 20 requests at 200/s: the run had at least 0.09 s.
    assert!(report.runtime_s() >= 0.09, "{run}");
    report.assert_rate_is_requests_over_runtime();
}

/// Before the run nothing is measured yet: a signal while setup() or
/// init() is stuck (even in a loop no interrupt reaches) ends pace at once,
/// leaving no temporary output file.
#[test]
fn a_signal_ends_a_script_stuck_before_the_run() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    for (function, signal, code) in [("setup", libc::SIGINT, 130), ("init", libc::SIGTERM, 143)] {
        let dir = tempfile::tempdir().unwrap();
        let hlog = dir.path().join("run.hlog");
        let args = ["-t1", "-c1", "-d5s", "--hlog", hlog.to_str().unwrap(), "-s", SCRIPT, &target];
        let stuck = format!("{function} compiled");
        let mark = dir.path().join("stuck");
        let env =
            [("PACE_TEST_STUCK", stuck.as_str()), ("PACE_TEST_STUCK_MARK", mark.to_str().unwrap())];
        let mut running = spawn_pace_with_env(&args, &env);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !mark.exists() {
            assert!(running.is_running(), "{function}: pace exited");
            assert!(Instant::now() < deadline, "{function}: never got stuck");
            thread::sleep(Duration::from_millis(5));
        }
        running.signal(signal);
        let signalled = Instant::now();
        let run = running.wait(Duration::from_secs(30));
        run.assert_code(code);
        assert!(
            signalled.elapsed() < stretched(SLACK),
            "{function}: took {:?}\n{run}",
            signalled.elapsed()
        );
        assert!(run.stderr.contains("before the run"), "{function}\n{run}");
        assert_eq!(server.stats().requests, 0, "{function}");
        std::fs::remove_file(&mark).unwrap();
        assert_no_temporary_file(dir.path());
        assert!(!hlog.exists(), "{function}: a log of no run was committed");
    }
}

/// No temporary output file is left in `dir`.
fn assert_no_temporary_file(dir: &Path) {
    let names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.iter().all(|n| !n.to_string_lossy().contains(".tmp-")), "{names:?}");
}

#[test]
fn a_second_signal_cuts_the_wait_short_and_still_completes_everything() {
    let _load = load_lock();
    let dir = tempfile::tempdir().unwrap();
    let hlog = dir.path().join("run.hlog");
    let (running, _server) = start("response compiled", "30s", &["--hlog", hlog.to_str().unwrap()]);
    thread::sleep(Duration::from_millis(300));
    running.signal(libc::SIGINT);
    thread::sleep(Duration::from_millis(200));
    running.signal(libc::SIGINT);
    let signalled = Instant::now();
    let run = running.wait(Duration::from_secs(20));
    run.assert_code(130);
    // Without the second signal the wait would be two grace periods.
    assert!(signalled.elapsed() < stretched(GRACE + SLACK), "{run}");
    assert!(run.stdout.contains(" requests in "), "no report\n{run}");
    let log = std::fs::read_to_string(&hlog).expect("the log was written");
    assert!(log.contains("#[Histogram log format version 1.3]"), "{log}");
    assert_no_temporary_file(dir.path());
}

#[test]
fn a_third_signal_exits_at_once_and_leaves_no_temporary_file() {
    let _load = load_lock();
    let dir = tempfile::tempdir().unwrap();
    let hlog = dir.path().join("run.hlog");
    let (running, _server) = start("response compiled", "30s", &["--hlog", hlog.to_str().unwrap()]);
    thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        running.signal(libc::SIGINT);
        thread::sleep(Duration::from_millis(20));
    }
    let run = running.wait(Duration::from_secs(20));
    run.assert_code(130);
    assert!(!hlog.exists(), "an incomplete log was committed");
    assert_no_temporary_file(dir.path());
}

#[test]
fn a_signal_interrupts_a_stuck_done() {
    let _load = load_lock();
    for (how, said) in [
        ("interpreted", "the script's done() was interrupted by SIGINT"),
        ("compiled", "the script's done() did not stop after SIGINT"),
    ] {
        let (running, _server) = start(&format!("done {how}"), "500ms", &[]);
        // The run ends after 0.5 s; done() then never returns.
        thread::sleep(Duration::from_millis(1500));
        running.signal(libc::SIGINT);
        let signalled = Instant::now();
        let run = running.wait(Duration::from_secs(20));
        run.assert_code(130);
        assert!(signalled.elapsed() < stretched(GRACE + SLACK), "{how}\n{run}");
        assert!(run.stderr.contains("stuck.lua: stuck in done"), "{how}\n{run}");
        assert!(run.stderr.contains(said), "{how}\n{run}");
        assert!(run.stdout.contains(" requests in "), "{how}: no report\n{run}");
    }
}
