//! The validity of a run end to end: a Poisson run passes the arrival
//! check; sends held up (a script that blocks, a stopped process) fail it
//! and say so; a queue that builds is not stationary; a server slow at
//! the start makes the warm-up too short; `--strict` turns an untrusted
//! run into exit code 5 (an `--slo` failure keeps 4); `pace report` of a
//! saved run says what the run said.
//!
//! Each case asserts only the cause it builds, never that nothing else was
//! wrong: a loaded machine may add its own (pace short of CPU), and no
//! test measures speed.

mod common;

use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{
    default_server, load_lock, pace, serve, serve_options, spawn_pace, until_requests, url, Run,
};
use pace::serve::{ServeOptions, Stall};

const LIMIT: Duration = Duration::from_secs(30);

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}\n{run}"))
}

/// The codes of the causes in the final JSON report's `validity`.
fn causes(run: &Run) -> Vec<String> {
    let validity = &json(run)["validity"];
    let causes = validity["causes"].as_array().unwrap_or_else(|| panic!("no validity\n{run}"));
    assert_eq!(validity["trusted"], causes.is_empty(), "{run}");
    causes.iter().map(|c| c["code"].as_str().unwrap().to_string()).collect()
}

/// The text report's `Validity:` line.
fn validity_line(run: &Run) -> &str {
    let mut lines = run.stdout.lines().filter(|l| l.starts_with("Validity: "));
    lines.next().unwrap_or_else(|| panic!("no Validity: line\n{run}"))
}

/// 300 requests/s of a Poisson plan over two threads (only the union of
/// their sends is the plan's process): the sends per slot vary as Poisson
/// arrivals do, far from the limit, and the course that says so is saved.
#[test]
fn a_poisson_run_passes_the_arrival_check() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c10", "-d3s", "-R300", "--arrival", "poisson", "-e", &target], LIMIT);
    run.assert_ok();
    assert!(!causes(&run).contains(&"arrivals_off_plan".to_string()), "{run}");
    let course = &json(&run)["course"];
    let periods = course["periods"].as_array().unwrap();
    assert_eq!(periods.len(), 20, "a twentieth of the run each\n{run}");
    let dof: u64 = periods.iter().map(|p| p["arrival_dof"].as_u64().unwrap_or(0)).sum();
    assert!(dof > 250, "3 s of 10 ms slots, less one per second: {dof}\n{run}");
}

/// One thread at 1000/s whose response() blocks for 100 ms once: the
/// sends due meanwhile go out late and together. The line says so, and
/// `--strict` exits 5.
#[test]
fn sends_held_up_by_a_script_fail_the_arrival_check() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/hold.lua");
    let args = ["-t1", "-c10", "-d3s", "-R1000", "--arrival", "poisson", "--strict", "-s", script];
    let run = pace(&[&args[..], &[target.as_str()]].concat(), LIMIT);
    run.assert_code(5);
    let line = validity_line(&run);
    assert!(line.starts_with("Validity: not trusted: "), "{run}");
    assert!(line.contains("arrivals did not match the plan: from "), "{run}");
    assert!(line.contains(" times as much as Poisson arrivals do (sends held up, then sent"));
    assert!(line.contains("[arrivals_off_plan]"), "{run}");
}

/// pace stopped (SIGSTOP) for 300 ms in the middle of a Poisson run, then
/// continued: nothing was sent meanwhile, then all of it at once.
#[test]
fn a_stopped_process_fails_the_arrival_check() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let running =
        spawn_pace(&["-t2", "-c20", "-d4s", "-R500", "--arrival", "poisson", "-e", &target]);
    // Well into the measured run (it has no warm-up).
    until_requests(&server, 300);
    running.signal(libc::SIGSTOP);
    thread::sleep(Duration::from_millis(300));
    running.signal(libc::SIGCONT);
    let run = running.wait(LIMIT);
    run.assert_ok();
    assert!(causes(&run).contains(&"arrivals_off_plan".to_string()), "{run}");
    let cause = json(&run)["validity"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["code"] == "arrivals_off_plan")
        .cloned()
        .unwrap();
    assert!(cause["figures"]["dispersion"].as_f64().unwrap() >= 3.0, "{run}");
}

/// Two connections to a server that takes 20 ms carry 100 requests/s;
/// the plan wants 200: the backlog, and the corrected latency with it,
/// grows through the run. An `--slo` failure keeps its exit code 4 over
/// `--strict`'s 5.
#[test]
fn a_queue_that_builds_is_not_stationary() {
    let _load = load_lock();
    let server = serve(ServeOptions { latency: Duration::from_millis(20), ..serve_options() });
    let target = url(server.addr(), "/");
    let run = pace(
        &["-t1", "-c2", "-d3s", "-R200", "--strict", "--slo", "requests>1000000", &target],
        LIMIT,
    );
    run.assert_code(4);
    let line = validity_line(&run);
    assert!(line.contains("latency was not stationary across the 20 periods of 0.15s: "));
    assert!(line.contains("latency kept growing, p50 "), "{run}");
    assert!(line.contains("a queue building [not_stationary]"), "{run}");
}

/// A server that answers nothing for the first 700 ms of the plan
/// (`--start-at` puts the plan's start on the server's stall, whatever
/// the machine's speed): the start of the run answered much slower than
/// the rest. `pace report` of the saved run says the same.
#[test]
fn a_slow_start_is_a_warmup_too_short() {
    let _load = load_lock();
    let ahead = Duration::from_secs(3);
    let now = SystemTime::now();
    let stall = Stall { at: ahead, length: Duration::from_millis(700) };
    let server = serve(ServeOptions { stall: Some(stall), ..serve_options() });
    let target = url(server.addr(), "/");
    let start = (now + ahead).duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let start = format!("{start:.3}");
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("run.json");
    let saved = saved.to_str().unwrap();
    let run = pace(
        &["-t1", "-c50", "-d4s", "-R300", "--start-at", &start, "-e", "-o", saved, &target],
        LIMIT,
    );
    run.assert_ok();
    let text = std::fs::read_to_string(saved).unwrap();
    let report: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    let causes = report["validity"]["causes"].as_array().unwrap();
    let warmup = causes.iter().find(|c| c["code"] == "warmup_too_short");
    let warmup = warmup.unwrap_or_else(|| panic!("no warmup_too_short\n{report}"));
    let message = warmup["message"].as_str().unwrap();
    assert!(message.starts_with("the warm-up was too short: the first "), "{message}");
    assert!(message.ends_with("(--warmup would leave such a start out)"), "{message}");
    // Judged again from the file: the same causes, the same words.
    let again = pace(&["report", saved], LIMIT);
    again.assert_ok();
    let line = validity_line(&again);
    for cause in causes {
        let (message, code) = (cause["message"].as_str().unwrap(), cause["code"].as_str());
        let said = format!("{message} [{}]", code.unwrap());
        assert!(line.contains(&said), "{said}\n{again}");
    }
}
