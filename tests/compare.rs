//! `pace compare BASE NEW`, end to end: runs of the real binary against
//! the built-in server saved with `-e`, then compared. The server with
//! 1 ms of added latency makes NEW slower at p50 by about 1 ms (from the
//! server's configuration, not from timing); runs of one server are within
//! noise, several times over; `--max-regression` fails with exit code 4.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use common::{default_server, load_lock, pace, serve, serve_options, url, Run};
use pace::serve::{ServeOptions, ServerHandle};

const LIMIT: Duration = Duration::from_secs(20);

/// Added by the slow server to every response.
const ADDED: Duration = Duration::from_millis(1);

/// A paced run of 1 s against `server` saved with `-e` (periods of 200 ms,
/// so the comparison resamples them) into `dir/name`.
fn saved_run(server: &ServerHandle, dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let target = url(server.addr(), "/");
    let out = path.to_str().unwrap();
    pace(&["-t1", "-c4", "-d1s", "-R500", "-p", "200ms", "-e", "-o", out, &target], LIMIT)
        .assert_ok();
    path
}

fn compare(args: &[&str]) -> Run {
    let mut line = vec!["compare"];
    line.extend(args);
    pace(&line, LIMIT)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The comparison JSON of `pace compare -e BASE NEW`.
fn comparison(base: &Path, new: &Path) -> Value {
    let run = compare(&["-e", path(base), path(new)]);
    run.assert_ok();
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{run}"))
}

/// The latency line of `kind` (`corrected`, `uncorrected`) at `percentile`.
fn latency_line<'a>(json: &'a Value, kind: &str, percentile: f64) -> &'a Value {
    json["latency"][kind]
        .as_array()
        .unwrap_or_else(|| panic!("no {kind} latency: {json}"))
        .iter()
        .find(|line| line["percentile"] == percentile)
        .unwrap_or_else(|| panic!("no p{percentile}: {json}"))
}

#[test]
fn a_millisecond_more_is_slower_at_p50_by_about_a_millisecond() {
    let dir = tempfile::tempdir().unwrap();
    let _load = load_lock();
    let fast = default_server();
    let slow = serve(ServeOptions { latency: ADDED, ..serve_options() });
    let base = saved_run(&fast, dir.path(), "base.json");
    let new = saved_run(&slow, dir.path(), "new.json");

    let json = comparison(&base, &new);
    assert_eq!(json["report"], "comparison");
    for kind in ["corrected", "uncorrected"] {
        let p50 = latency_line(&json, kind, 50.0);
        assert_eq!(p50["verdict"], "slower", "{kind}: {json}");
        // The server adds 1 ms to each response: NEW's p50 has it, BASE's
        // is a loopback round trip (well under a millisecond even on a
        // loaded machine); the change is about 1 ms.
        let change = p50["change"].as_f64().unwrap();
        assert!((700.0..5000.0).contains(&change), "{kind}: change {change} us\n{json}");
        assert!(p50["new"].as_f64().unwrap() >= 1000.0, "{json}");
    }
    assert_eq!(json["rate"]["verdict"], "within noise", "{json}");
    assert_eq!(json["errors"]["verdict"], "within noise", "{json}");
    assert_eq!(json["base"]["resampled_by_periods"], true, "{json}");
    // Two servers: two ports, so two URLs, compared anyway with a warning.
    let warnings = json["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("differ in: URL")), "{json}");

    // The other way round, NEW is faster.
    let back = comparison(&new, &base);
    assert_eq!(latency_line(&back, "corrected", 50.0)["verdict"], "faster", "{back}");

    // The text table says it on the p50 line.
    let run = compare(&[path(&base), path(&new)]);
    run.assert_ok();
    let p50 = run.stdout.lines().find(|l| l.trim_start().starts_with("50.000%")).unwrap();
    assert!(p50.ends_with("slower"), "{run}");
    assert!(run.stdout.contains("warning: the runs are not comparable, they differ in: URL"));
    assert!(run.stdout.contains("Within noise: "), "{run}");

    // The gate: a limit crossed is exit 4, said on stdout (text) or
    // stderr (-e); limits that hold are exit 0.
    let crossed = compare(&["--max-regression", "p50:+500us,rate:-50%", path(&base), path(&new)]);
    crossed.assert_code(4);
    assert!(crossed.stdout.contains("Regression verdict: FAIL (1 of 2 limits held)"), "{crossed}");
    assert!(crossed.stdout.contains("\n  FAIL  p50:+500us  measured +"), "{crossed}");
    assert!(crossed.stdout.contains("\n  ok    rate:-50%   measured "), "{crossed}");
    let crossed = compare(&["-e", "--max-regression", "p50:+100%", path(&base), path(&new)]);
    crossed.assert_code(4);
    assert!(crossed.stderr.contains("pace: Regression limits crossed: p50:+100% (measured +"));
    let json: Value = serde_json::from_str(&crossed.stdout).unwrap();
    assert_eq!(json["regression_ok"], false);
    assert_eq!(json["regression"][0]["limit"], "p50:+100%");
    assert_eq!(json["regression"][0]["ok"], false);
    let held = compare(&["--max-regression", "p50:+1h,errors:+1%", path(&base), path(&new)]);
    held.assert_ok();
    assert!(held.stdout.contains("Regression verdict: pass (2 of 2 limits held)"), "{held}");
    // Faster never fails a gate.
    compare(&["--max-regression", "p50:+0%", path(&new), path(&base)]).assert_ok();
}

/// Runs of one server, compared pairwise several times: never a false
/// alarm on the rate, the errors or the body of the latency (p50 to p90).
/// The tail of a 1 s run on a loaded 2-core machine may differ for real
/// (a run that lost the CPU for 10 ms has a worse p99.9: pace says so in
/// the run's warnings), so it is not asserted here; the unit tests show
/// that one stalled period is within noise.
#[test]
fn runs_of_one_server_are_within_noise() {
    let dir = tempfile::tempdir().unwrap();
    let _load = load_lock();
    let server = default_server();
    let runs: Vec<PathBuf> =
        (0..4).map(|i| saved_run(&server, dir.path(), &format!("run{i}.json"))).collect();
    for (a, b) in [(0, 1), (2, 3), (0, 3), (1, 2)] {
        let json = comparison(&runs[a], &runs[b]);
        assert_eq!(json["rate"]["verdict"], "within noise", "runs {a} and {b}: {json}");
        assert_eq!(json["errors"]["verdict"], "within noise", "runs {a} and {b}: {json}");
        for kind in ["corrected", "uncorrected"] {
            for p in [50.0, 75.0, 90.0] {
                let line = latency_line(&json, kind, p);
                assert_eq!(line["verdict"], "within noise", "runs {a}, {b}: {kind} p{p}: {json}");
            }
        }
        assert!(json["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| { !w.as_str().unwrap().contains("not comparable") }));
    }
    // The same inputs, the same verdicts: the bootstrap has a fixed seed.
    let once = compare(&[path(&runs[0]), path(&runs[1])]);
    let again = compare(&[path(&runs[0]), path(&runs[1])]);
    assert_eq!(once.stdout, again.stdout);
}

/// Issue 31: two runs of one server compare as within noise or too few
/// samples at every percentile (2 s at 1000/s: 20 samples beyond p99, 2
/// beyond p99.9, none beyond the maximum); by default the table keeps the
/// percentiles both runs back; a server 1 ms slower is slower at p50 to
/// p99, each with enough samples.
///
/// p99 rests on the 20 slowest requests, so on a machine busy enough that
/// the loopback server's own p99 reaches the 1 ms the test adds (other
/// builds on this 2-core machine take pace's CPU for milliseconds: both
/// runs' tails then hold those waits, which differ from run to run) no
/// verdict there can be expected: p99 is then only asserted to be judged,
/// not too few samples. The body and the samples rule hold always.
#[test]
fn percentiles_with_too_few_samples_are_not_called_faster_or_slower() {
    let dir = tempfile::tempdir().unwrap();
    let _load = load_lock();
    let fast = default_server();
    let slow = serve(ServeOptions { latency: ADDED, ..serve_options() });
    let save = |server: &ServerHandle, name: &str| {
        let out = dir.path().join(name);
        let target = url(server.addr(), "/");
        let args = ["-t1", "-c4", "-d2s", "-R1000", "-p", "200ms", "-e", "-o", path(&out), &target];
        pace(&args, LIMIT).assert_ok();
        out
    };
    let (a, b, slower) = (save(&fast, "a.json"), save(&fast, "b.json"), save(&slow, "slow.json"));
    let all = "50,75,90,99,99.9,99.99,99.999,100";

    let run = compare(&["-e", "--percentiles", all, path(&a), path(&b)]);
    run.assert_ok();
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    // Quiet: the loopback server's p99 is under 300 us in both runs (a
    // few times what it is on an idle machine, well under the 1 ms added).
    let p99 = latency_line(&json, "corrected", 99.0);
    let quiet = [&p99["base"], &p99["new"]].iter().all(|v| v.as_f64().unwrap() < 300.0);
    if !quiet {
        eprintln!(
            "busy machine (p99 {} and {} us): p99 verdicts not asserted",
            p99["base"], p99["new"]
        );
    }
    for kind in ["corrected", "uncorrected"] {
        for line in json["latency"][kind].as_array().unwrap() {
            let (p, verdict) = (line["percentile"].as_f64().unwrap(), &line["verdict"]);
            let expected = match p {
                _ if p >= 99.9 => "too few samples",
                _ if p == 99.0 && !quiet => {
                    assert_ne!(verdict, "too few samples", "{kind} p{p}: {json}");
                    continue;
                }
                _ => "within noise",
            };
            assert_eq!(verdict, expected, "{kind} p{p}: {json}");
        }
    }
    assert_eq!(json["method"]["min_samples_beyond"], 10);
    let beyond = latency_line(&json, "corrected", 99.9)["base_samples_beyond"].as_u64();
    assert!(beyond.is_some_and(|n| n < 10), "{json}");

    // By default: the percentiles both runs back, the others named.
    let json = comparison(&a, &b);
    let shown: Vec<f64> = json["latency"]["corrected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line["percentile"].as_f64().unwrap())
        .collect();
    assert_eq!(shown, [50.0, 75.0, 90.0, 99.0], "{json}");
    assert_eq!(json["percentiles_left_out"], serde_json::json!([99.9, 99.99, 99.999, 100.0]));
    let text = compare(&[path(&a), path(&b)]);
    text.assert_ok();
    assert!(
        text.stdout.contains(
            "Too few samples: a run has fewer than 10 latencies beyond the percentile (above \
             it; below it under 50%), so chance alone could make a difference there; left out: \
             99.900%, 99.990%, 99.999%, 100.000% (--percentiles compares them).\n"
        ),
        "{text}"
    );

    // 1 ms more at the server: slower from p50 to p99.
    let json = comparison(&a, &slower);
    for kind in ["corrected", "uncorrected"] {
        for p in [50.0, 75.0, 90.0, 99.0] {
            let verdict = &latency_line(&json, kind, p)["verdict"];
            if p == 99.0 {
                // 20 samples beyond p99 in 2,000, resampled by periods:
                // the interval may be wide enough to hold no difference
                // on a busy machine, but it never points the wrong way.
                let judged = verdict == "slower" || verdict == "within noise";
                assert!(judged, "{kind} p{p}: {json}");
            } else {
                assert_eq!(verdict, "slower", "{kind} p{p}: {json}");
            }
        }
    }
    // A gate on p99.9 is judged, and says it rests on too few samples.
    let gate = compare(&["--max-regression", "p99.9:+1h", path(&a), path(&slower)]);
    gate.assert_ok();
    assert!(gate.stdout.contains(", too few samples\n"), "{gate}");
}

/// Issue 34, item 2: a 2 s and a 5 s run compared without a "not
/// comparable" warning. The duration (-d) and -n are settings.
#[test]
fn runs_of_other_lengths_or_limits_are_not_comparable() {
    let dir = tempfile::tempdir().unwrap();
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let save = |name: &str, bound: &[&str]| {
        let out = dir.path().join(name);
        let args = [&["-t1", "-c2", "-R200", "-e", "-o", path(&out), &target][..], bound].concat();
        pace(&args, LIMIT).assert_ok();
        out
    };
    let short = save("short.json", &["-d300ms"]);
    let long = save("long.json", &["-d600ms"]);
    let limited = save("limited.json", &["-d600ms", "-n", "50"]);
    let run = compare(&[path(&short), path(&long)]);
    run.assert_ok();
    assert!(
        run.stdout.contains(
            "warning: the runs are not comparable, they differ in: duration (-d) (300.00ms and \
             600.00ms)"
        ),
        "{run}"
    );
    let json = comparison(&long, &limited);
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w.as_str().unwrap().contains("-n (none and 50 requests)")),
        "{json}"
    );
}

#[test]
fn what_cannot_be_compared_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let not_json = dir.path().join("notes.txt");
    fs::write(&not_json, "hello\n").unwrap();
    let run = compare(&[path(&missing), path(&not_json)]);
    run.assert_code(2);
    assert!(run.stderr.contains("cannot read"), "{run}");
    let run = compare(&[path(&not_json), path(&not_json)]);
    run.assert_code(2);
    assert!(run.stderr.contains("not a report of pace -e"), "{run}");
    let run = compare(&["only-one.json"]);
    run.assert_code(1);
    assert!(run.stderr.contains("needs two files"), "{run}");
    let run = compare(&["--max-regression", "p99:-5%", "a.json", "b.json"]);
    run.assert_code(1);
    assert!(run.stderr.contains("p99 gets worse as it rises"), "{run}");
    let help = compare(&["-h"]);
    help.assert_ok();
    assert!(help.stdout.starts_with("Usage: pace compare"));
}

/// A closed-loop run has no plan: a lag limit is refused, and the table
/// has one latency, not a corrected and an uncorrected one.
#[test]
fn closed_loop_runs() {
    let dir = tempfile::tempdir().unwrap();
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let saved = |name: &str| {
        let path = dir.path().join(name);
        pace(&["-t1", "-c2", "-d300ms", "-e", "-o", path.to_str().unwrap(), &target], LIMIT)
            .assert_ok();
        path
    };
    let (a, b) = (saved("a.json"), saved("b.json"));
    let json = comparison(&a, &b);
    assert!(json["latency"]["uncorrected"].is_null(), "{json}");
    assert_eq!(json["base"]["mode"], "closed_loop");
    let run = compare(&[path(&a), path(&b)]);
    run.assert_ok();
    assert!(run.stdout.contains("\n  Latency\n"), "{run}");
    let lag = compare(&["--max-regression", "lag.p99:+1ms", path(&a), path(&b)]);
    lag.assert_code(1);
    assert!(lag.stderr.contains("the schedule lag is measured only with a plan"), "{lag}");
}
