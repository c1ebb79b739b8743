//! The figures tell the whole truth (issue 34, "What a new user found"):
//! the real binary against the built-in server, each test the case a new
//! user met and what the report now says of it. (Client certificates and
//! proxies are in tests/tls_options.rs and tests/proxy.rs, Lua headers in
//! tests/lua.rs, comparisons in tests/compare.rs.)

mod common;

use std::fs;
use std::thread;
use std::time::Duration;

use serde_json::Value;

use common::{default_server, load_lock, pace, spawn_pace, until_requests, url, Run};

const LIMIT: Duration = Duration::from_secs(30);

fn json_of(run: &Run) -> Value {
    let last = run.stdout.lines().rev().find(|l| l.starts_with('{'));
    serde_json::from_str(last.unwrap_or_else(|| panic!("no JSON\n{run}"))).unwrap()
}

fn warning_codes(json: &Value) -> Vec<String> {
    let warnings = json["warnings"].as_array().expect("warnings");
    warnings.iter().map(|w| w["code"].as_str().unwrap().to_string()).collect()
}

/// Item 1: a warm-up before stages from 0/s sent nothing ("Warm-up: 1s
/// before the run: 0 requests"); now refused in words, and with -R it
/// warms up at -R.
#[test]
fn a_warm_up_before_stages_from_nothing_is_refused() {
    let run = pace(&["--warmup", "1s", "--stages", "2s:100", "http://127.0.0.1:1/"], LIMIT);
    run.assert_code(1);
    assert!(
        run.stderr.contains("--warmup 1s would send nothing: the warm-up holds the rate the stages start from, and without -R they start from 0/s"),
        "{run}"
    );
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let args = ["-t1", "-c2", "-R100", "--warmup", "300ms", "--stages", "300ms:200", &target];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let warmup = run.stdout.lines().find_map(|l| l.strip_prefix("Warm-up: 0.3s before the run: "));
    let sent: u64 = warmup.and_then(|w| w.split(' ').next()?.parse().ok()).unwrap_or(0);
    // 100/s for 300 ms: 30 requests (a few may still be unsent at the end).
    assert!((20..=30).contains(&sent), "{run}");
}

/// Item 3: `-n 1000 -R500` reported `1000 requests in 2.00s` and 500.50
/// requests/s (a window of (N-1)/R). N requests at R last N/R.
#[test]
fn n_requests_at_a_rate_last_n_over_r() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t1", "-c4", "-n", "200", "-R400", "-e", &target], LIMIT);
    run.assert_ok();
    let json = json_of(&run);
    assert_eq!(json["duration_s"], 0.5, "{run}");
    assert_eq!(json["elapsed_s"], 0.5, "{run}");
    let requests = json["requests"].as_u64().unwrap();
    let unsent = json["errors"]["unsent"].as_u64().unwrap();
    assert_eq!(requests + unsent, 200, "{run}");
    assert_eq!(json["requests_per_sec"].as_f64().unwrap(), requests as f64 / 0.5, "{run}");
    let text = pace(&["-t1", "-c4", "-n", "200", "-R400", &target], LIMIT);
    assert!(text.stdout.starts_with("Running 500ms test, at most 200 requests @ "), "{text}");
}

/// Item 5: a text report saved with -o of a run stopped by Ctrl-C did not
/// say it was stopped (the JSON and the page did).
#[test]
fn a_saved_text_report_says_the_run_was_stopped() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("report.txt");
    let running =
        spawn_pace(&["-t1", "-c2", "-R200", "-d20s", "-o", saved.to_str().unwrap(), &target]);
    until_requests(&server, 1);
    thread::sleep(Duration::from_millis(500));
    running.signal(libc::SIGINT);
    let run = running.wait(Duration::from_secs(15));
    run.assert_code(130);
    let text = fs::read_to_string(&saved).unwrap_or_else(|e| panic!("{e}\n{run}"));
    let note = text.lines().find(|l| l.starts_with("Note: stopped early by SIGINT after "));
    let note = note.unwrap_or_else(|| panic!("no note of the stop\n{text}"));
    assert!(note.ends_with(" of the 20s planned; the figures cover what was measured until then"));
    // After wrk's lines: Transfer/sec comes before it.
    let transfer = text.find("Transfer/sec:").unwrap();
    assert!(transfer < text.find("Note: stopped early").unwrap(), "{text}");
}

/// Item 5: the seed of a random targets order went only to stderr.
#[test]
fn the_seed_of_a_random_targets_order_is_in_the_report() {
    let _load = load_lock();
    let server = default_server();
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets.txt");
    let (a, b) = (url(server.addr(), "/a"), url(server.addr(), "/b"));
    fs::write(&targets, format!("GET {a}\n\nGET {b}\n")).unwrap();
    let targets = targets.to_str().unwrap();
    let args = ["-t1", "-c2", "-n", "20", "--targets", targets, "--targets-order", "random"];
    let run = pace(&[&args[..], &["--seed", "42"]].concat(), LIMIT);
    run.assert_ok();
    assert!(
        run.stdout.contains("\n  targets in random order (seed 42; --seed 42 repeats it)\n"),
        "{run}"
    );
    let json = json_of(&pace(&[&args[..], &["--seed", "42", "-e"]].concat(), LIMIT));
    assert_eq!(json["seed"], 42);
    assert_eq!(json["targets_order"], "random");
    // A run with nothing random has no seed to repeat.
    let json = json_of(&pace(&["-t1", "-c2", "-n", "5", "-e", &a], LIMIT));
    assert_eq!(json.get("seed"), None, "{json}");
}

/// Item 7: a closed loop in which every request failed exited 0 without
/// a word. It still exits 0 (as wrk does), says so after the report and
/// in the JSON, and --slo 'errors<1%' makes it fail.
#[test]
fn a_closed_loop_where_every_request_failed_says_so() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/status/404");
    let run = pace(&["-t1", "-c2", "-n", "20", &target], LIMIT);
    run.assert_ok();
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("Warning: every request failed: none of the 20 got a 2xx or 3xx response (status 404: 20)"),
        "{run}"
    );
    assert!(last.ends_with("give it --slo 'errors<1%' (exit code 4) [all_failed]"), "{run}");
    let json = json_of(&pace(&["-t1", "-c2", "-n", "20", "-e", &target], LIMIT));
    assert_eq!(warning_codes(&json), ["all_failed"], "{json}");
    pace(&["-t1", "-c2", "-n", "20", "--slo", "errors<1%", &target], LIMIT).assert_code(4);
    // A closed loop that went well keeps wrk's report: no warning.
    let fine = pace(&["-t1", "-c2", "-n", "20", &url(server.addr(), "/")], LIMIT);
    assert!(!fine.stdout.contains("Warning"), "{fine}");
}

/// Item 2: shards sent one after the other (no --start-at) merged into
/// "the 2 shards of one plan" at half its rate, without a warning; and
/// `pace report` of the merge printed "Running 2s test".
#[test]
fn shards_that_did_not_send_together_are_said_and_a_saved_merge_reports_as_one() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    for shard in ["0/2", "1/2"] {
        let out = path(&format!("shard-{}.json", &shard[..1]));
        let args = ["-t1", "-c2", "-d300ms", "-R200", "--shard", shard, "-e", "-o", &out, &target];
        pace(&args, LIMIT).assert_ok();
    }
    let (a, b, merged) = (path("shard-0.json"), path("shard-1.json"), path("merged.json"));
    let merge = pace(&["merge", "-e", "-o", &merged, &a, &b], LIMIT);
    merge.assert_ok();
    let said = "pace merge: the shards did not send at the same time: their sending windows do not overlap";
    assert!(merge.stderr.contains(said), "{merge}");
    let json: Value = serde_json::from_str(&fs::read_to_string(&merged).unwrap()).unwrap();
    let notes = json["merge_notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains("did not send at the same")),
        "{json}"
    );
    let text = pace(&["merge", &a, &b], LIMIT).stdout;
    let report = pace(&["report", &merged], LIMIT);
    report.assert_ok();
    assert!(report.stdout.starts_with("Merged the 2 shards of one plan @ "), "{report}");
    assert!(report.stderr.contains("pace report: the shards did not send at the same time"));
    // The same text as pace merge printed, its table of shards included.
    assert_eq!(report.stdout, text, "{report}");
}
