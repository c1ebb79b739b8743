//! Runs saved with `-e` by an earlier pace still read, report, merge and
//! compare. The files in `tests/fixtures/saved-2026-11-27` were made by
//! the pace of 2026-11-27 (before the saved format was declared once, for
//! writing and reading) with `make.sh` next to them; they are never
//! regenerated, so the format keeps reading what it once wrote.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{pace, Run};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/saved-2026-11-27");
    dir.join(name).to_str().unwrap().to_string()
}

const FIXTURES: [&str; 8] = [
    "closed-periods.json",
    "paced-stages.json",
    "targets-origins.json",
    "h2c.json",
    "shard-0.json",
    "shard-1.json",
    "merged.json",
    "requests-slo.json",
];

/// The final report of a saved file (its last line).
fn final_report(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

fn report(args: &[&str]) -> Run {
    let run = pace(args, LIMIT);
    run.assert_code(0);
    assert!(!run.stderr.contains("panicked"), "{run}");
    run
}

/// `pace report` of each: its text report has the saved figures, and its
/// JSON report (through `pace merge -e` of the one file) the saved
/// histograms, decoded and encoded again to the same counts.
#[test]
fn every_saved_run_reports_with_its_figures() {
    for name in FIXTURES {
        let saved = final_report(name);
        let requests = saved["requests"].as_u64().unwrap();
        let text = report(&["report", &fixture(name), "-L"]).stdout;
        assert!(text.contains(&format!("  {requests} requests in ")), "{name}:\n{text}");
        assert!(text.contains("Latency Distribution"), "{name}:\n{text}");
        let json = report(&["merge", "-e", &fixture(name)]).stdout;
        let again: Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
        for field in ["requests", "bytes", "errors", "status_codes", "threads", "url"] {
            assert_eq!(again[field], saved[field], "{name}: {field}");
        }
        let p99 = "/latency/corrected/percentiles_us/99";
        assert_eq!(again.pointer(p99), saved.pointer(p99), "{name}: p99");
        assert_eq!(again["protocol"], saved["protocol"], "{name}: protocol");
    }
}

/// The header of `pace report` says what the saved run was: its plan, its
/// protocol, its origins and its shard.
#[test]
fn the_header_says_how_each_was_run() {
    let header = |name: &str| report(&["report", &fixture(name)]).stdout;
    let paced = header("paced-stages.json");
    assert!(paced.contains("  Poisson arrivals (seed 7; --seed 7 repeats them)\n"), "{paced}");
    assert!(paced.contains("  stages: from 300/s: 0.5s to 600/s, 0.5s to 200/s\n"), "{paced}");
    assert!(paced.contains("  after a 0.3s warm-up (sent, not counted)\n"), "{paced}");
    let h2c = header("h2c.json");
    assert!(h2c.contains("  HTTP/2 (h2c, prior knowledge), 4 streams per connection\n"), "{h2c}");
    let origins = header("targets-origins.json");
    assert!(origins.contains("  connections per origin: "), "{origins}");
    let shard = header("shard-1.json");
    assert!(shard.contains("  shard 1/2: requests 1, 3, 5, ... of the plan"), "{shard}");
}

/// The two shards merge into the plan they sent together, exactly as the
/// merge the earlier pace saved.
#[test]
fn the_shards_merge_as_they_did() {
    let merged = report(&["merge", "-e", &fixture("shard-0.json"), &fixture("shard-1.json")]);
    let now: Value = serde_json::from_str(merged.stdout.lines().last().unwrap()).unwrap();
    let then = final_report("merged.json");
    for field in ["requests", "bytes", "hist", "uncorrected_hist", "target_requests_per_sec"] {
        assert_eq!(now[field], then[field], "{field}");
    }
    let text = report(&["merge", &fixture("shard-0.json"), &fixture("shard-1.json")]).stdout;
    assert!(text.starts_with("Merged the 2 shards of one plan @ "), "{text}");
}

/// Two saved runs compare, and a gate judges them.
#[test]
fn saved_runs_compare() {
    let run = pace(
        &[
            "compare",
            &fixture("shard-0.json"),
            &fixture("shard-1.json"),
            "--max-regression",
            "p99:+1000%",
        ],
        LIMIT,
    );
    run.assert_code(0);
    assert!(run.stdout.contains("Regression verdict: pass"), "{run}");
    let text = report(&["compare", &fixture("closed-periods.json"), &fixture("h2c.json")]).stdout;
    assert!(text.contains("protocol (HTTP/1.1 and HTTP/2)"), "{text}");
    let json = report(&["compare", "-e", &fixture("shard-0.json"), &fixture("shard-1.json")]);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["base"]["requests"], final_report("shard-0.json")["requests"], "{json}");
}
