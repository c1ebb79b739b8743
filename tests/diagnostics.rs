//! Diagnostics end to end: each cause of a paced run going wrong gets its
//! own warning and JSON code, and a healthy run gets none. Every case is
//! built so that its cause is the only one on any machine: the rules weigh
//! lag against the latency measured, so a loaded CI box does not turn a
//! healthy run into a warning.

mod common;

use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use common::{default_server, load_lock, pace, url, Run};

const LIMIT: Duration = Duration::from_secs(20);

/// The codes of the final JSON report's warnings, checked against the
/// `Warning:` lines the run also said on stderr.
/// Runs a test that a loaded machine can spoil (by starving pace's thread
/// of the CPU) makes again, up to this many times.
const ATTEMPTS: u32 = 5;

fn codes(run: &Run) -> Vec<String> {
    let json: serde_json::Value =
        serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}\n{run}"));
    let warnings = json["warnings"].as_array().unwrap_or_else(|| panic!("no warnings\n{run}"));
    let codes: Vec<String> =
        warnings.iter().map(|w| w["code"].as_str().unwrap().to_string()).collect();
    let said: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("Warning: ")).collect();
    assert_eq!(said.len(), codes.len(), "{run}");
    for (line, warning) in said.iter().zip(warnings) {
        let (code, message) = (&warning["code"], warning["message"].as_str().unwrap());
        // With -e nothing is above the warnings: they point nowhere.
        assert!(!line.contains("above"), "{run}");
        assert_eq!(*line, format!("Warning: {message} [{}]", code.as_str().unwrap()), "{run}");
    }
    codes
}

/// The warning of `code` in the final JSON report.
fn warning(run: &Run, code: &str) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == code)
        .unwrap_or_else(|| panic!("no {code} warning\n{run}"))
        .clone()
}

/// 100/s on 20 connections to a server that takes 50 ms: 5 connections
/// busy on average, and sends would have to be 12.5 ms late at p99 (a
/// quarter of the latency) for the lag to matter, which even a loaded
/// machine does not do to a thread that sleeps 10 ms between sends.
/// Nothing to say, in text or JSON.
#[test]
fn a_healthy_run_has_no_warning() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/delay/50");
    let run = pace(&["-t1", "-c20", "-R100", "-d2s", &target], LIMIT);
    run.assert_ok();
    assert!(run.report().warnings().is_empty(), "{run}");
    let run = pace(&["-t1", "-c20", "-R100", "-d2s", "-e", &target], LIMIT);
    run.assert_ok();
    assert!(codes(&run).is_empty(), "{run}");
}

/// One connection, 5 ms per response, 2000/s: Little's law needs 10.
#[test]
fn too_few_connections() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/delay/5");
    let run = pace(&["-t1", "-c1", "-R2000", "-d2s", "-e", &target], LIMIT);
    run.assert_ok();
    assert_eq!(codes(&run), ["too_few_connections", "unsent"], "{run}");
    let figures = &warning(&run, "too_few_connections")["figures"];
    let busy = figures["busy_connections"].as_f64().unwrap();
    assert!(busy >= 9.0, "2000/s x 5 ms keep {busy} connections busy\n{run}");
    let suggested = figures["suggested_connections"].as_u64().unwrap();
    assert!(suggested as f64 >= busy, "{run}");
}

/// A server that accepts pace's test connection, then is gone: every
/// connection is refused (or reset if it came in before the end).
#[test]
fn a_dead_server_failed() {
    let _load = load_lock();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = url(listener.local_addr().unwrap(), "/");
    let gone = thread::spawn(move || {
        let _probe = listener.accept();
    });
    let run = pace(&["-t1", "-c4", "-R200", "-d2s", "-e", &target], LIMIT);
    gone.join().unwrap();
    run.assert_ok();
    // Nothing succeeded: said last, with how to make such a run fail.
    assert_eq!(codes(&run), ["server_failed", "unsent", "all_failed"], "{run}");
    let figures = &warning(&run, "server_failed")["figures"];
    assert_eq!(figures["requests"], 0, "{run}");
    assert!(figures["failures"].as_u64().unwrap() > 0, "{run}");
}

/// A server that reads the requests and never answers, with a 300 ms
/// timeout: the connections are held until their requests time out.
#[test]
fn a_stalled_server_stalled() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/hang");
    let run = pace(&["-t1", "-c4", "-R100", "-d2s", "--timeout", "300ms", "-e", &target], LIMIT);
    run.assert_ok();
    assert_eq!(codes(&run), ["server_stalled", "unsent", "all_failed"], "{run}");
    let figures = &warning(&run, "server_stalled")["figures"];
    assert!(figures["timeouts"].as_u64().unwrap() >= 4, "{run}");
    assert_eq!(figures["timeout_us"], 300_000, "{run}");
}

/// A script whose request() takes 4 ms of CPU, at 500/s on one thread
/// with 10 connections to a fast server: the connections wait for pace.
#[test]
fn a_generator_short_of_cpu() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/busy_request.lua");
    let run = pace(&["-t1", "-c10", "-R500", "-d2s", "-s", script, "-e", &target], LIMIT);
    run.assert_ok();
    let codes = codes(&run);
    assert_eq!(codes[0], "generator_cpu", "{run}");
    // The thread fell ever further behind: the rest of the plan was unsent.
    assert_eq!(codes[1..], ["unsent"], "{run}");
    let figures = &warning(&run, "generator_cpu")["figures"];
    assert!(figures["waiting_for_generator_share"].as_f64().unwrap() >= 0.5, "{run}");
}

/// Sends 50 us apart: the thread spins between them (on the clock, or
/// after a sleep that woke early), and the spin is on the CPU but is not
/// work, so the generator's figures tell the two apart.
#[test]
fn spinning_between_sends_is_not_counted_as_work() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t1", "-c20", "-R20000", "-d1s", "-e", &target], LIMIT);
    run.assert_ok();
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let share = |name: &str| json["generator"][name].as_f64().unwrap_or_else(|| panic!("{run}"));
    let (on_cpu, working) = (share("busiest_thread_cpu_share"), share("busiest_thread_work_share"));
    assert!(0.0 < working && working < on_cpu && on_cpu <= 1.0, "{run}");
    assert!((0.0..=1.0).contains(&share("thread_cpu_wait_share")), "{run}");
}

/// A closed loop whose request() takes 4 ms of CPU, against a fast
/// server: its 10 connections wait for pace, which says so (with what it
/// kept in flight); the same loop against a server that takes 20 ms keeps
/// them busy and says nothing.
#[test]
fn a_closed_loop_held_back_by_its_generator_says_so_and_one_held_by_the_server_does_not() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/busy_request.lua");
    // A thread the machine kept from the CPU (another process on a
    // loaded machine) is not judged, by design: such a run says nothing,
    // and is made again.
    let held = (1..=ATTEMPTS).any(|_| {
        let run = pace(&["-t1", "-c10", "-d1s", "-s", script, "-e", &target], LIMIT);
        run.assert_ok();
        let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
        let waited_for_cpu = json["generator"]["thread_cpu_wait_share"].as_f64().unwrap();
        if waited_for_cpu > 0.05 {
            assert!(codes(&run).is_empty(), "a starved thread is not judged\n{run}");
            return false;
        }
        assert_eq!(codes(&run), ["generator_held_slots"], "{run}");
        let figures = &warning(&run, "generator_held_slots")["figures"];
        assert_eq!(figures["slots"], 10, "{run}");
        assert!(figures["busy_share"].as_f64().unwrap() < 0.5, "{run}");
        true
    });
    if !held {
        eprintln!(
            "\n!!!!!!!!!! every run was starved of CPU: the warning was not seen !!!!!!!!!!\n"
        );
    }

    let slow = common::serve(pace::serve::ServeOptions {
        latency: Duration::from_millis(20),
        ..common::serve_options()
    });
    let run = pace(&["-t1", "-c10", "-d1s", "-e", &url(slow.addr(), "/")], LIMIT);
    run.assert_ok();
    assert!(codes(&run).is_empty(), "{run}");
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let concurrency = &json["concurrency"];
    assert_eq!(concurrency["slots"], 10, "{run}");
    // Every connection waits 20 ms for each answer and a few microseconds
    // for pace: all 10 are busy but for that (and a loaded machine's pauses).
    let mean = concurrency["mean_in_flight"].as_f64().unwrap();
    assert!((8.0..=10.0).contains(&mean), "{mean} in flight\n{run}");
}
