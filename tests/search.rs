//! `pace search`: the highest rate a service holds within its objectives,
//! against services whose limit is known (the built-in server with
//! `--capacity`, nginx with `limit_req`), a generator held back by its own
//! script, and ladders of shards merged step by step.
//!
//! The bounds come from the services' design, never from this machine's
//! speed: a service with one worker at N/s cannot hold more than N/s (a
//! queue grows above it), and one that rejects above N/s fails an error
//! objective there.

mod common;

use std::fs;
use std::time::Duration;

use common::*;
use pace::serve::ServeOptions;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(240);

/// The JSON Lines of a search: the steps' reports, then its own line.
fn lines(text: &str) -> Vec<Value> {
    text.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect()
}

/// The search's own (last) line.
fn search_line(text: &str) -> Value {
    let last = lines(text).pop().expect("a line");
    assert_eq!(last["report"], "search", "{last}");
    last
}

/// The table row of the step that offered `rate`, judged (not run again).
fn row_at(search: &Value, rate: f64) -> Value {
    let rows = search["steps"].as_array().unwrap();
    rows.iter()
        .rfind(|row| row["offered_rps"].as_f64() == Some(rate) && row["verdict"] != "again")
        .unwrap_or_else(|| panic!("no step at {rate}/s: {search}"))
        .clone()
}

#[test]
fn finds_the_knee_of_a_service_with_a_capacity() {
    let _load = load_lock();
    // One worker, 0.5 ms a request: a queue builds above 2,000/s.
    let server = serve(ServeOptions { capacity: Some(2000), ..serve_options() });
    let target = url(server.addr(), "/");
    let args = [
        "search",
        "--slo",
        "p99<20ms",
        "--from",
        "250",
        "--resolution",
        "10%",
        "-d",
        "1s",
        "--warmup",
        "300ms",
        "-t",
        "1",
        "-c",
        "20",
        "-e",
        &target,
    ];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let search = search_line(&run.stdout);
    assert_eq!(search["limited_by"], "service", "{search}");
    let found = search["capacity_rps"].as_f64().unwrap();
    let failed = search["failed_at_rps"].as_f64().unwrap();
    // Never above what one worker serves; and the step that found it is
    // the one that held within the objective, the next one did not.
    assert!((500.0..=2000.0).contains(&found), "{search}");
    assert!(failed > found && (failed - found) <= found * 0.10 + 1.0, "{search}");
    let held = row_at(&search, found);
    assert_eq!(held["verdict"], "held", "{held}");
    assert!(held["latency_us"]["99"].as_u64().unwrap() < 20_000, "{held}");
    let next = row_at(&search, failed);
    assert_eq!(next["verdict"], "failed", "{next}");
    // The answer begins as the issue says, and names the failing step.
    let answer = search["answer"].as_str().unwrap();
    assert!(
        answer.starts_with(&format!("holds {} requests/s within p99<20ms", rate(found))),
        "{answer}"
    );
    // Each step's line before it is a complete report of its run.
    let steps: Vec<Value> =
        lines(&run.stdout).into_iter().filter(|l| l["report"] == "step").collect();
    assert_eq!(steps.len(), search["steps"].as_array().unwrap().len());
    for step in &steps {
        assert!(step["hist"].as_str().is_some_and(|h| !h.is_empty()), "{step}");
        assert_eq!(step["mode"], "paced");
    }
}

/// `23,400` as the answer writes a rate.
fn rate(value: f64) -> String {
    let digits = format!("{value:.0}");
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[test]
fn a_queue_building_fails_a_step_whose_percentiles_are_still_inside_the_slo() {
    let _load = load_lock();
    let server = serve(ServeOptions { capacity: Some(1000), ..serve_options() });
    let target = url(server.addr(), "/");
    // 20% above what the service serves: a queue grows by 200 requests a
    // second, 200 ms of waiting, far inside p99<10s.
    let args = [
        "search",
        "--ladder",
        "1200..1200/1",
        "--slo",
        "p99<10s",
        "-d",
        "2s",
        "--warmup",
        "0",
        "-t",
        "1",
        "-c",
        "50",
        "--timeout",
        "10s",
        &target,
    ];
    let run = pace(&args, LIMIT);
    // The ladder's only step failed: nothing held.
    run.assert_code(4);
    let row = run.stdout.lines().find(|l| l.trim_start().starts_with("1 ")).expect("a step row");
    assert!(row.contains("failed: latency kept growing"), "{run}");
    assert!(run.stdout.contains("a queue building"), "{run}");
}

#[test]
fn stops_on_the_generator_and_says_so() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    // 2 ms of pace's own CPU for each request: one thread offers at most
    // 500/s, whatever the (much faster) server could take.
    let script = dir.path().join("busy.lua");
    fs::write(
        &script,
        "request = function()\n  local t = os.clock()\n  while os.clock() - t < 0.002 do end\n  \
         return wrk.format()\nend\n",
    )
    .unwrap();
    let args = [
        "search",
        "--slo",
        "p99<2s",
        "--from",
        "100",
        "-d",
        "1s",
        "--warmup",
        "200ms",
        "-t",
        "1",
        "-c",
        "10",
        "-s",
        script.to_str().unwrap(),
        "-e",
        &target,
    ];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let search = search_line(&run.stdout);
    assert_eq!(search["limited_by"], "generator", "{search}");
    let answer = search["answer"].as_str().unwrap();
    assert!(answer.contains("this machine cannot offer more than"), "{answer}");
    assert!(answer.contains("shards on more machines can"), "{answer}");
    // The generator's limit is not reported as the service's capacity.
    let rows = search["steps"].as_array().unwrap();
    assert!(rows.iter().all(|row| row["verdict"] != "failed"), "{search}");
    assert_eq!(rows.last().unwrap()["verdict"], "not_offered", "{search}");
    // No rate above what 2 ms a request allows was held.
    assert!(search["capacity_rps"].as_f64().is_none_or(|held| held <= 500.0), "{search}");
}

#[test]
fn shards_climb_a_ladder_together_and_merge_step_by_step() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let start = (std::time::SystemTime::now() + Duration::from_secs(2))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let files: Vec<String> =
        (0..2).map(|i| dir.path().join(format!("shard{i}.json")).display().to_string()).collect();
    let shards: Vec<Running> = (0..2)
        .map(|i| {
            let shard = format!("{i}/2");
            spawn_pace(&[
                "search",
                "--ladder",
                "200..600/200",
                "--shard",
                &shard,
                "--start-at",
                &start,
                "-d",
                "1s",
                "--warmup",
                "200ms",
                "-t",
                "1",
                "-c",
                "4",
                "-e",
                "-o",
                &files[i],
                &target,
            ])
        })
        .collect();
    for shard in shards {
        shard.wait(LIMIT).assert_ok();
    }
    let merged = pace(&["merge", "--slo", "errors<1%", "-e", &files[0], &files[1]], LIMIT);
    merged.assert_ok();
    let steps: Vec<Value> =
        lines(&merged.stdout).into_iter().filter(|l| l["report"] == "step").collect();
    assert_eq!(steps.len(), 3, "{merged}");
    let mut sent = 0;
    for (step, rate) in steps.iter().zip([200.0, 400.0, 600.0]) {
        assert_eq!(step["search_step"]["offered_rps"], rate, "{step}");
        assert_eq!(step["search_step"]["verdict"], "held", "{step}");
        // The whole plan: both shards' halves, a second of it.
        assert_eq!(step["total_req"].as_u64().unwrap(), rate as u64, "{step}");
        sent += step["total_req"].as_u64().unwrap() + step["warmup"]["requests"].as_u64().unwrap();
    }
    // Request for request, what the server answered.
    assert_eq!(sent, server.stats().requests);
    // Each shard's step started at the same instant.
    for index in 1..=3 {
        let starts: Vec<f64> = files
            .iter()
            .map(|file| {
                let text = fs::read_to_string(file).unwrap();
                let step = lines(&text)
                    .into_iter()
                    .filter(|l| l["report"] == "step")
                    .nth(index - 1)
                    .unwrap();
                step["measured_from_unix_s"].as_f64().unwrap()
            })
            .collect();
        assert!((starts[0] - starts[1]).abs() < 0.01, "step {index}: {starts:?}");
    }
    let text = pace(&["merge", &files[0], &files[1]], LIMIT);
    text.assert_ok();
    assert!(text.stdout.contains("Climbing a ladder on"), "{text}");
    assert!(text.stdout.contains("holds at least 600 requests/s"), "{text}");
}

#[test]
fn a_step_is_a_saved_run_for_report_compare_and_merge() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ladder.json");
    let file = file.to_str().unwrap();
    let args = [
        "search",
        "--ladder",
        "100..200/100",
        "-d",
        "500ms",
        "--warmup",
        "0",
        "-t",
        "1",
        "-c",
        "2",
        "-e",
        "-o",
        file,
        &target,
    ];
    pace(&args, LIMIT).assert_ok();
    let report = pace(&["report", "--step", "2", file], LIMIT);
    report.assert_ok();
    assert!(report.stdout.contains("100 requests in 500.00ms"), "{report}");
    let compare = pace(&["compare", "--step", "1", file, file], LIMIT);
    compare.assert_ok();
    assert!(compare.stdout.contains("within noise"), "{compare}");
    let merge = pace(&["merge", "--step", "1", file], LIMIT);
    merge.assert_ok();
    assert!(merge.stdout.contains("50 requests in 500.00ms"), "{merge}");
    // Without --step, which run is meant is asked for in words.
    let whole = pace(&["report", file], LIMIT);
    whole.assert_code(2);
    assert!(whole.stderr.contains("choose one with --step N (1 to 2)"), "{whole}");
    let beyond = pace(&["report", "--step", "3", file], LIMIT);
    beyond.assert_code(2);
    assert!(beyond.stderr.contains("no step 3"), "{beyond}");
}

#[test]
fn even_the_first_step_failing_is_exit_4() {
    let _load = load_lock();
    let server = serve(ServeOptions { latency: Duration::from_millis(20), ..serve_options() });
    let target = url(server.addr(), "/");
    let args =
        ["search", "--slo", "p99<5ms", "--from", "50", "-d", "500ms", "--warmup", "0", &target];
    let run = pace(&args, LIMIT);
    run.assert_code(4);
    assert!(run.stdout.contains("does not hold 50 requests/s within p99<5ms"), "{run}");
    // Below --min-rate is a failure too.
    let args = [
        "search",
        "--slo",
        "p99<100ms",
        "--from",
        "50",
        "--to",
        "100",
        "--min-rate",
        "1k",
        "-d",
        "500ms",
        "--warmup",
        "0",
        &target,
    ];
    let run = pace(&args, LIMIT);
    run.assert_code(4);
    assert!(run.stdout.contains("below --min-rate 1,000/s"), "{run}");
}

#[test]
fn nginx_limit_req_is_found_within_five_percent() {
    const LIMITED: f64 = 1200.0;
    let Some(nginx) = Nginx::start_with(NginxOptions {
        limit_req: Some(LIMITED as u32),
        ..NginxOptions::default()
    }) else {
        return;
    };
    let _load = load_lock();
    let target = nginx.url();
    let args = [
        "search",
        "--slo",
        "errors<1%",
        "--from",
        "300",
        "-d",
        "2s",
        "--warmup",
        "500ms",
        "-t",
        "1",
        "-c",
        "20",
        "-e",
        &target,
    ];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let search = search_line(&run.stdout);
    let found = search["capacity_rps"].as_f64().unwrap();
    assert!((found - LIMITED).abs() <= LIMITED * 0.05, "{search}");
}

#[test]
fn a_service_that_goes_away_fails_the_steps_after_it() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let search = spawn_pace(&[
        "search",
        "--ladder",
        "100..500/100",
        "-d",
        "500ms",
        "--warmup",
        "0",
        "-t",
        "1",
        "-c",
        "2",
        "-e",
        &target,
    ]);
    // The first step is under way: then nothing listens any more.
    until_requests(&server, 40);
    drop(server);
    let run = search.wait(LIMIT);
    run.assert_ok();
    let search = search_line(&run.stdout);
    let rows = search["steps"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{search}");
    let last = rows.last().unwrap();
    assert_eq!(last["verdict"], "failed", "{last}");
    assert!(last["why"].as_str().unwrap().starts_with("every request failed (connect"), "{last}");
    assert_eq!(search["limited_by"], "service", "{search}");
}

#[test]
fn a_step_that_cannot_be_run_ends_the_search_with_what_was_measured() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    // Each step has a Lua state of its own: its 31st request fails.
    let script = dir.path().join("fails.lua");
    fs::write(
        &script,
        "n = 0\nrequest = function()\n  n = n + 1\n  if n > 30 then error(\"boom\") end\n  \
         return wrk.format()\nend\n",
    )
    .unwrap();
    let file = dir.path().join("search.json");
    let args = [
        "search",
        "--slo",
        "p99<1s",
        "--from",
        "100",
        "-d",
        "1s",
        "--warmup",
        "0",
        "-t",
        "1",
        "-c",
        "2",
        "-s",
        script.to_str().unwrap(),
        "-e",
        "-o",
        file.to_str().unwrap(),
        &target,
    ];
    let run = pace(&args, LIMIT);
    run.assert_code(3);
    assert!(run.stderr.contains("boom"), "{run}");
    // The file is written, whole, and says why the search ended there.
    let text = fs::read_to_string(&file).unwrap();
    let last = search_line(&text);
    assert_eq!(last["limited_by"], "interrupted", "{last}");
    assert!(last["answer"].as_str().unwrap().contains("the search stopped: "), "{last}");
}
