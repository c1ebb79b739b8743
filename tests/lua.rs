//! Lua scripts end to end (issue 3): the real binary runs wrk's example
//! scripts (tests/scripts/) against the built-in server, in closed-loop
//! mode and paced with `-R`. The assertions check what the server really
//! received (its counters, `/echo` checked by the scripts' `response()`)
//! and what the scripts' `done()` printed.

mod common;

use std::time::Duration;

use common::{
    default_server, load_lock, pace, stretched, url, Block, Listen, Nginx, NginxOptions, Report,
    Run,
};

/// The path of `tests/scripts/<name>.lua`.
macro_rules! script {
    ($name:literal) => {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/", $name, ".lua")
    };
}

/// Every run is killed (and the test fails) past this.
const LIMIT: Duration = Duration::from_secs(10);

/// The first stdout line starting with `prefix`.
fn line<'a>(run: &'a Run, prefix: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?}\n{run}"))
}

/// The number of `key=<number>` in a line the script printed.
fn field(run: &Run, line: &str, key: &str) -> u64 {
    let token = format!("{key}=");
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(token.as_str()))
        .and_then(|value| value.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no number {key}= in {line:?}\n{run}"))
}

/// Asserts a run had no socket errors and no non-2xx/3xx responses.
fn assert_clean(run: &Run) {
    let report = run.report();
    assert!(report.socket_errors().is_none(), "socket errors\n{run}");
    assert_eq!(report.non_2xx_3xx(), None, "error statuses\n{run}");
}

/// Asserts the run made more than one request per connection: each got
/// its response and the loop went on. (How many is the benchmark's
/// business, not the tests'.) `per_round` is the requests one round on all
/// connections makes (connections x pipelining depth).
fn assert_looped(run: &Run, requests: u64, per_round: u64) {
    assert!(
        requests >= 2 * per_round,
        "{requests} requests: the connections did not go on after their first response\n{run}"
    );
}

// ----- counter.lua: dynamic request() --------------------------------------------

#[test]
fn counter_changes_path_and_header_of_every_request() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/echo");
    let run = pace(&["-t2", "-c4", "-d1s", "-s", script!("counter"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_looped(&run, requests, 4);

    // response() checked every echo: path and X-Counter carried the same
    // number, and the server received exactly what pace counted.
    let done = line(&run, "counter: ");
    assert_eq!(field(&run, done, "echoed"), requests, "{run}");
    assert_eq!(field(&run, done, "mismatched"), 0, "{run}");
    let served = server.stats().requests;
    assert_eq!(served, requests, "server read {served}, pace counted {requests}\n{run}");
    // request() ran once per request sent, plus once on thread 0 before
    // the run to find the pipelining depth (wrk's script_verify_request).
    let made = field(&run, done, "requests");
    assert_eq!(made, served + 1, "request() calls vs requests the server read\n{run}");
}

#[test]
fn counter_requests_are_all_different() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c4", "-d500ms", "-s", script!("counter_distinct"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_looped(&run, requests, 4);
    // Each response echoed a number no earlier response of its thread had:
    // request() is called for every request, its bytes are not reused.
    let done = line(&run, "distinct: ");
    assert_eq!(field(&run, done, "echoed"), requests, "{run}");
    assert_eq!(field(&run, done, "distinct"), requests, "{run}");
    assert_eq!(field(&run, done, "repeated"), 0, "{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
}

#[test]
fn counter_paced_calls_request_at_every_intended_send() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/echo");
    let run = pace(&["-t2", "-c4", "-d2s", "-R500", "-s", script!("counter"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let report = run.report();
    assert!(report.schedule_lag().is_some(), "a paced run reports its schedule lag\n{run}");
    let requests = report.requests();
    assert!((950..=1010).contains(&requests), "-R500 for 2 s made {requests} requests\n{run}");
    let done = line(&run, "counter: ");
    assert_eq!(field(&run, done, "echoed"), requests, "{run}");
    assert_eq!(field(&run, done, "mismatched"), 0, "{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
    assert_eq!(field(&run, done, "requests"), requests + 1, "{run}");
}

// ----- post.lua: static request from top-level assignments -----------------------

#[test]
fn post_sends_method_body_and_content_type() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/echo");
    let run = pace(&["-t2", "-c4", "-d1s", "-s", script!("post"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_looped(&run, requests, 4);
    // response() checked every echo: `POST /echo`, the Content-Type, a
    // Content-Length of 16 and the body.
    let done = line(&run, "post: ");
    assert_eq!(field(&run, done, "echoed"), requests, "{run}");
    assert_eq!(field(&run, done, "mismatched"), 0, "{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
}

#[test]
fn post_paced() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/echo");
    let run = pace(&["-t2", "-c4", "-d1s", "-R1000", "-s", script!("post"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert!((950..=1010).contains(&requests), "-R1000 for 1 s made {requests} requests\n{run}");
    let done = line(&run, "post: ");
    assert_eq!(field(&run, done, "echoed"), requests, "{run}");
    assert_eq!(field(&run, done, "mismatched"), 0, "{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
}

/// The calls into Lua made after `init(args)` returned, per thread, from
/// static_calls.lua's `calls: init=<n> end=<n>` lines.
fn calls_after_init(run: &Run) -> Vec<u64> {
    let lines: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("calls: ")).collect();
    assert_eq!(lines.len(), 2, "one calls line per thread\n{run}");
    lines.iter().map(|l| field(run, l, "end") - field(run, l, "init")).collect()
}

/// A static script (only top-level `wrk.method`, `wrk.body`,
/// `wrk.headers`) has its request built once per thread and sent without
/// any call into Lua. static_calls.lua counts every call into its states
/// (a debug hook): after `init`, only the set-up of the static request
/// may call Lua (about 25 calls today, whatever the number of requests),
/// while the same script with a `request()` function calls Lua once per
/// request (the control, which shows the counter sees the engine's calls).
/// Speed is measured by the benchmark (bench/compare.py, lua), not here.
#[test]
fn static_script_calls_no_lua_per_request() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/echo");
    let script = script!("static_calls");

    let run = pace(&["-t2", "-c4", "-d1s", "-s", script, &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_eq!(server.stats().requests, requests, "{run}");
    assert_looped(&run, requests, 4);
    for calls in calls_after_init(&run) {
        assert!(calls <= 50, "{calls} calls into Lua for {requests} static requests\n{run}");
    }

    let before = server.stats().requests;
    let run = pace(&["-t2", "-c4", "-d1s", "-s", script, &target, "--", "dynamic"], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_eq!(server.stats().requests - before, requests, "{run}");
    let calls: u64 = calls_after_init(&run).iter().sum();
    assert!(calls >= requests, "request() made {requests} requests in {calls} calls\n{run}");
}

// ----- delay.lua -------------------------------------------------------------------

#[test]
fn delay_waits_10_to_50_ms_before_each_request() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c4", "-d1s", "-L", "-s", script!("delay"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let report = run.report();
    let requests = report.requests();
    // 4 connections, 10..50 ms between requests (30 on average): at most
    // 4 x 1000/10 (+ a first request each), at least half of 4 x 1000/50.
    assert!(requests <= 4 * 100 + 4, "{requests} requests: delay() not waited\n{run}");
    assert!(requests >= 4 * 20 / 2, "only {requests} requests\n{run}");
    let done = line(&run, "delay: ");
    assert_eq!(field(&run, done, "requests"), requests, "summary.requests\n{run}");
    let (min, max) = (field(&run, done, "min"), field(&run, done, "max"));
    assert!((10..=15).contains(&min) && (45..=50).contains(&max), "delays {min}..{max}\n{run}");
    // The delay is not latency: every latency would be >= 10 ms otherwise.
    let p50 = report.latency_us(Block::Wrk, 50.0);
    assert!(p50 < 10_000.0, "median latency {p50} us includes the delay\n{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
}

#[test]
fn delay_precedes_even_the_first_request() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    // delay() says 5 s and the run lasts 500 ms: as in wrk, where every
    // connection starts `delayed` (wrk.c thread_main: c->delayed =
    // cfg.delay), nothing may be sent.
    let run = pace(&["-t1", "-c2", "-d500ms", "-s", script!("delay_long"), &target], LIMIT);
    run.assert_ok();
    // Waiting for the 5 s delays would take 5.5 s or more.
    assert!(
        run.wall < stretched(Duration::from_millis(4500)),
        "pending delays held the run\n{run}"
    );
    let served = server.stats().requests;
    assert_eq!(
        (served, run.report().requests()),
        (0, 0),
        "requests sent without waiting for delay() first (server read {served})\n{run}"
    );
}

#[test]
fn delay_is_ignored_when_paced() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c4", "-d1s", "-R400", "-s", script!("delay"), &target], LIMIT);
    run.assert_ok();
    assert!(run.stderr.contains("delay() is ignored with -R"), "{run}");
    let requests = run.report().requests();
    // 10..50 ms delays would allow at most ~4 x 1000/10 = 400 and about
    // 133; the plan's 400 must be met.
    assert!((380..=410).contains(&requests), "-R400 for 1 s made {requests}\n{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
}

// ----- pipelining ----------------------------------------------------------------

#[test]
fn pipeline_writes_three_requests_and_counts_three_responses() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c4", "-d1s", "-s", script!("pipeline"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_looped(&run, requests, 4 * 3);
    let stats = server.stats();
    // One write of three requests, and the next only after three
    // responses: the server parses exactly three per read.
    assert_eq!(stats.max_requests_per_read, 3, "{stats:?}\n{run}");
    // Every response counts (not one per batch), and every batch is
    // complete at the end.
    assert!(
        stats.requests >= requests && stats.requests <= requests + 3 * 4,
        "server read {}, pace counted {requests}\n{run}",
        stats.requests
    );
    assert_eq!(requests % 3, 0, "{requests} responses is not whole batches of 3\n{run}");
}

/// With -R the plan counts requests, not batches (as wrk2's rate does): a
/// batch of three takes three intended times, so the server sees the
/// planned rate of requests, not three times it.
#[test]
fn paced_pipelines_follow_the_plan_in_requests() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let args = ["-t1", "-c4", "-d2s", "-R300", "-U", "-s", script!("pipeline"), &target];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let report = run.report();
    let requests = report.requests();
    // 600 planned: 200 batches of three.
    assert!((594..=600).contains(&requests), "{requests} responses, 600 planned\n{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
    assert_eq!(server.stats().max_requests_per_read, 3, "{run}");
    // The batch goes out when its first request is due, so the later two
    // go early: their latency counts from the send, not from their later
    // intended times, so the corrected latency is never below the
    // uncorrected (a response cannot take less than since it was sent).
    let corrected = report.latency_us(Block::Recorded, 50.0);
    let uncorrected = report.latency_us(Block::Uncorrected, 50.0);
    assert!(
        corrected >= uncorrected,
        "corrected p50 {corrected} < uncorrected {uncorrected}\n{run}"
    );
}

#[test]
fn old_api_pipeline_neither_recurses_nor_builds_twice() {
    let _load = load_lock();
    for (words, depth) in [(&["--", "3"][..], 3), (&[][..], 1)] {
        let server = default_server();
        let target = url(server.addr(), "/");
        let mut args = vec!["-t2", "-c4", "-d500ms", "-s", script!("old_api_pipeline"), &target];
        args.extend_from_slice(words);
        let run = pace(&args, LIMIT);
        run.assert_ok();
        assert_clean(&run);
        let requests = run.report().requests();
        assert_looped(&run, requests, 4 * depth);
        let stats = server.stats();
        // A request built twice (or appended to) would be 2 x depth.
        assert_eq!(stats.max_requests_per_read, depth, "{stats:?}\n{run}");
        assert!(
            stats.requests >= requests && stats.requests <= requests + depth * 4,
            "server read {}, pace counted {requests}\n{run}",
            stats.requests
        );
    }
}

#[test]
fn old_api_static_init_runs_once_and_builds_once() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c2", "-d300ms", "-s", script!("old_api_static"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let lines: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("old api: ")).collect();
    assert_eq!(lines.len(), 2, "{run}");
    let mut echoed = 0;
    for line in lines {
        assert_eq!(field(&run, line, "inits"), 1, "init(args) ran more than once\n{run}");
        assert_eq!(field(&run, line, "formats"), 1, "the request was built again\n{run}");
        echoed += field(&run, line, "echoed");
    }
    // Every request went to the path init() set.
    assert_eq!(echoed, run.report().requests(), "{run}");
    assert_eq!(server.stats().requests, echoed, "{run}");
}

// ----- auth.lua: a token from a response header -----------------------------------

fn check_auth(run: &Run, served: u64, connections: u64) {
    run.assert_ok();
    let report = run.report();
    assert!(report.socket_errors().is_none(), "{run}");
    // /resource answers 401 without the token: there must be none.
    assert_eq!(report.non_2xx_3xx(), None, "some requests lacked the token\n{run}");
    let requests = report.requests();
    let done = line(run, "auth: ");
    assert!(done.starts_with("auth: token=tok123,tok123 "), "{run}");
    assert_eq!(field(run, done, "rejected"), 0, "{run}");
    // Only the first request of each connection (sent before any token
    // arrived) went to /authenticate; all the others got /resource's `ok`.
    let resources = field(run, done, "resources");
    assert!(
        resources <= requests && resources + connections >= requests,
        "{resources} of {requests} requests reached /resource\n{run}"
    );
    assert_eq!(served, requests, "{run}");
}

#[test]
fn auth_takes_the_token_from_a_response_header() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c4", "-d1s", "-s", script!("auth"), &target], LIMIT);
    check_auth(&run, server.stats().requests, 4);
    assert_looped(&run, run.report().requests(), 4);
}

#[test]
fn auth_paced() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c4", "-d1s", "-R400", "-s", script!("auth"), &target], LIMIT);
    check_auth(&run, server.stats().requests, 4);
    let requests = run.report().requests();
    assert!((380..=410).contains(&requests), "{run}");
}

// ----- etag.lua: headers looked up in any case -------------------------------------

/// Issue 34, item 4: nginx sends `ETag`; over HTTP/2 it arrived as `Etag`
/// and `headers["ETag"]` was nil. Over both protocols every response's
/// header is found as `ETag`, `etag` and `ETAG`, and `pairs()` lists it.
#[test]
fn response_headers_are_found_in_any_case_over_both_protocols() {
    let _load = load_lock();
    for (listen, protocol) in [(Listen::Http1, &[][..]), (Listen::H2c, &["--http2"][..])] {
        let options = NginxOptions { listen, ..NginxOptions::default() };
        let Some(nginx) = Nginx::start_with(options) else { return };
        let url = nginx.url();
        let args = [protocol, &["-t1", "-c2", "-n", "50", "-s", script!("etag"), url.as_str()]];
        let run = pace(&args.concat(), LIMIT);
        run.assert_ok();
        let requests = run.report().requests();
        let counts = line(&run, "etag: ");
        assert_eq!(field(&run, counts, "found"), requests, "{listen:?}\n{run}");
        assert_eq!(field(&run, counts, "missing"), 0, "{listen:?}\n{run}");
        assert_eq!(field(&run, counts, "listed"), requests, "{listen:?}\n{run}");
    }
}

// ----- setup.lua: setup + thread:set/get ------------------------------------------

#[test]
fn setup_passes_ids_and_tables_between_states() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t3", "-c3", "-d500ms", "-s", script!("setup"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_looped(&run, requests, 3);
    let mut responses = 0;
    for id in 1..=3u64 {
        // init() saw the id and the nested table setup() set.
        let created = format!("thread {id} created as worker-{id}");
        assert!(run.stdout.lines().any(|l| l == created), "no {created:?}\n{run}");
        // done() read the counters and tables back with thread:get.
        let prefix = format!("thread {id} (worker-{id}, weights 1+2+3) made ");
        let done = line(&run, &prefix);
        let rest = &done[prefix.len()..];
        let numbers: Vec<u64> = rest
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().unwrap())
            .collect();
        let [made, got, table_made, table_got] = numbers[..] else {
            panic!("unexpected line {done:?}\n{run}")
        };
        assert_eq!((table_made, table_got), (made, got), "the table copy differs\n{run}");
        // Thread 1 made one more: the call that found the pipelining depth.
        let extra = u64::from(id == 1);
        assert_eq!(made, got + extra, "thread {id}\n{run}");
        assert!(got > 0, "{run}");
        responses += got;
    }
    assert_eq!(responses, requests, "{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
}

#[test]
fn init_output_comes_before_the_report_header() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    // wrk runs init() (and its prints) before printing `Running ...`, and
    // everything goes through one stdio buffer, so a file or pipe gets
    // them in that order too.
    let run = pace(&["-t2", "-c2", "-d200ms", "-s", script!("setup"), &target], LIMIT);
    run.assert_ok();
    let position =
        |needle: &str| run.stdout.find(needle).unwrap_or_else(|| panic!("no {needle:?}\n{run}"));
    let created = position("thread 1 created as worker-1");
    let header = position("Running ");
    assert!(created < header, "init()'s print came after the report header\n{run}");
}

// ----- stop.lua -------------------------------------------------------------------

#[test]
fn stop_ends_each_thread_after_100_responses() {
    let _load = load_lock();
    for rate in [None, Some("-R1000")] {
        let server = default_server();
        let target = url(server.addr(), "/");
        let mut args = vec!["-t2", "-c4", "-d10s", "-s", script!("stop"), &target];
        args.extend(rate);
        let run = pace(&args, LIMIT);
        run.assert_ok();
        assert_clean(&run);
        assert!(
            run.wall < stretched(Duration::from_secs(4)),
            "thread:stop() did not end the run\n{run}"
        );
        let requests = run.report().requests();
        // 100 per thread, plus what the thread's other connection had in
        // flight when it stopped.
        assert!((200..=204).contains(&requests), "{rate:?}: {requests} requests\n{run}");
        let served = server.stats().requests;
        assert!(served >= requests && served <= requests + 4, "served {served}\n{run}");
        // pace divides by the time until the stop (wrk by -d), and says so.
        assert!(
            run.stdout.contains("Note: the script stopped every thread (thread:stop()) after "),
            "{run}"
        );
        run.report().assert_rate_is_requests_over_runtime();
    }
}

// ----- report.lua: done() prints percentiles as CSV --------------------------------

/// The `name,value,...` lines report.lua printed after its rule.
fn report_csv(run: &Run) -> Vec<Vec<String>> {
    let mut lines = run.stdout.lines().skip_while(|l| *l != "------------------------------");
    assert!(lines.next().is_some(), "no CSV from done()\n{run}");
    lines.map(|l| l.split(',').map(str::to_string).collect()).collect()
}

fn check_report_csv(run: &Run, block: Block) {
    run.assert_ok();
    assert_clean(run);
    let report = run.report();
    let csv = report_csv(run);
    assert_eq!(csv.len(), 7, "{run}");
    let number = |cell: &str| -> f64 {
        cell.parse().unwrap_or_else(|_| panic!("bad CSV number {cell:?}\n{run}"))
    };
    let mut previous = 0.0;
    for (row, percentile) in csv[..4].iter().zip([50.0, 90.0, 99.0, 99.999]) {
        assert_eq!(row.len(), 2, "{row:?}\n{run}");
        assert_eq!(number(row[0].trim_end_matches('%')), percentile, "{run}");
        let value = number(&row[1]);
        assert!(value > 0.0 && value >= previous, "percentiles decrease\n{run}");
        previous = value;
        // The same histogram as the report's latency distribution.
        if percentile < 99.9 || block == Block::Recorded {
            let printed = report.latency_us(block, percentile);
            assert!(
                (value - printed).abs() <= printed * 0.01 + 1.0,
                "done() says {value} us at {percentile}%, the report {printed} us\n{run}"
            );
        }
    }
    let cells = |name: &str| -> Vec<f64> {
        let row =
            csv.iter().find(|row| row[0] == name).unwrap_or_else(|| panic!("no {name} row\n{run}"));
        row[1..].iter().map(|c| number(c)).collect()
    };
    let requests = report.requests() as f64;
    let summary = cells("summary");
    let (duration, count, bytes) = (summary[0], summary[1], summary[2]);
    // The run time of the report (printed to 10 ms), at least the -d1s.
    let runtime = report.runtime_s() * 1e6;
    assert!(
        duration >= 0.95e6 && (duration - runtime).abs() <= 5_100.0,
        "summary.duration {duration} us, the report's run time {runtime} us\n{run}"
    );
    assert_eq!(count, requests, "{run}");
    let read = report.bytes_read();
    assert!((bytes - read).abs() <= read * 0.01, "summary.bytes {bytes} vs {read}\n{run}");
    assert_eq!(&summary[3..], [0.0, 0.0], "status and timeout errors\n{run}");
    let latency = cells("latency");
    let (min, max, samples, last) = (latency[0], latency[1], latency[2], latency[3]);
    let p50 = number(&csv[0][1]);
    assert!(min <= p50 && previous <= max, "latency.min/max\n{run}");
    assert_eq!(samples, requests, "#latency\n{run}");
    assert_eq!(last, max, "latency[#latency] is the 100th percentile\n{run}");
    let rates = cells("requests");
    assert!(rates[0] >= 2.0 && rates[1] > 0.0, "requests stats {rates:?}\n{run}");
    // A round trip through the server takes microseconds (the kernel
    // stamps a loopback packet >= 2 us after the send here): a 0 us
    // latency means a response was timed as arriving before its request
    // was sent.
    assert!(min > 0.0, "latency.min is 0 us: a response timed before its request\n{run}");
}

#[test]
fn report_prints_percentiles_as_csv() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c4", "-d1s", "-L", "-s", script!("report"), &target], LIMIT);
    check_report_csv(&run, Block::Wrk);
}

#[test]
fn report_paced_uses_the_corrected_histogram() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run =
        pace(&["-t2", "-c4", "-d1s", "-R2000", "-L", "-s", script!("report"), &target], LIMIT);
    check_report_csv(&run, Block::Recorded);
}

// ----- addr.lua: thread.addr from wrk.lookup + wrk.connect -------------------------

#[test]
fn addr_sets_thread_addresses_from_lookup_and_connect() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c4", "-d300ms", "-s", script!("addr"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let expected = format!("thread addr: {}", server.addr());
    let printed: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("thread addr")).collect();
    assert_eq!(printed, [expected.as_str(); 2], "{run}");
    let requests = run.report().requests();
    assert_looped(&run, requests, 4);
    let stats = server.stats();
    // pace's own test connection, wrk.connect's in setup(), then the 4.
    assert_eq!(stats.connections, 1 + 1 + 4, "{stats:?}\n{run}");
    assert_eq!(stats.requests, requests, "{run}");
}

#[test]
fn addr_set_in_setup_is_where_connections_go() {
    let _load = load_lock();
    let named = default_server();
    let chosen = default_server();
    let target = url(named.addr(), &format!("/?to={}", chosen.addr().port()));
    let run = pace(&["-t2", "-c4", "-d300ms", "-s", script!("addr_redirect"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let expected = format!("thread addr: {}", chosen.addr());
    let printed: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("thread addr")).collect();
    assert_eq!(printed, [expected.as_str(); 2], "{run}");
    let requests = run.report().requests();
    assert_looped(&run, requests, 4);
    // The URL's server only saw pace's test connection.
    assert_eq!((named.stats().connections, named.stats().requests), (1, 0), "{run}");
    let stats = chosen.stats();
    assert_eq!(stats.connections, 1 + 4, "wrk.connect's probe and the 4\n{run}");
    assert_eq!(stats.requests, requests, "{run}");
}

// ----- args --------------------------------------------------------------------------

#[test]
fn words_after_double_dash_reach_init() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(
        &["-t2", "-c2", "-d200ms", "-s", script!("args"), &target, "--", "hello", "-c5"],
        LIMIT,
    );
    run.assert_ok();
    // `-c5` after `--` is a word for the script, not an option.
    assert!(run.stdout.contains("  2 threads and 2 connections\n"), "{run}");
    let expected = format!("args: n=2 0={target} 1=hello 2=-c5");
    let printed: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("args: ")).collect();
    assert_eq!(printed, [expected.as_str(); 2], "one line per thread\n{run}");
}

// ----- broken scripts ------------------------------------------------------------------

#[test]
fn syntax_error_stops_before_connecting() {
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t1", "-c1", "-d1s", "-s", script!("syntax_error"), &target], LIMIT);
    run.assert_code(3);
    assert_eq!(run.stdout, "", "{run}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr\n{run}");
    assert!(lines[0].starts_with("pace: "), "{run}");
    assert!(lines[0].contains("syntax_error.lua:4: "), "file:line of the error\n{run}");
    assert_eq!(server.stats().connections, 0, "connected despite the broken script\n{run}");
}

#[test]
fn runtime_error_in_request_stops_the_run_with_the_report() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t2", "-c2", "-d10s", "-s", script!("request_error"), &target], LIMIT);
    run.assert_code(3);
    assert!(!run.stderr.contains("panicked"), "{run}");
    assert!(run.wall < stretched(Duration::from_secs(4)), "the error did not stop the run\n{run}");
    // The report of what was measured: at most 10 request() calls per
    // thread succeeded (one of thread 0's found the pipelining depth).
    let requests = run.report().requests();
    assert!((1..=20).contains(&requests), "{requests} requests\n{run}");
    assert!(run.stdout.starts_with("Running 10s test @ "), "{run}");
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("pace: the script failed, the run was stopped: ")
            && first.ends_with("request_error.lua:9: request failed on purpose"),
        "{run}"
    );
    assert!(run.stderr.contains("stack traceback:"), "{run}");
    assert!(run.stderr.contains("request_error.lua:9: in function 'request'"), "{run}");
    // The run stops at once: a request in flight on the other connection
    // may go unanswered.
    let served = server.stats().requests;
    assert!(served >= requests && served <= requests + 2, "served {served}\n{run}");
}

/// `error(...)` of fail_in.lua for `mode`: its line number.
fn error_line(mode: &str) -> usize {
    let source = std::fs::read_to_string(script!("fail_in")).unwrap();
    let needle = format!("error(\"{mode} failed on purpose\")");
    1 + source.lines().position(|l| l.contains(&needle)).expect("error line in fail_in.lua")
}

#[test]
fn runtime_errors_in_every_function_exit_3_with_their_line() {
    let _load = load_lock();
    for mode in ["init", "response", "delay", "done", "number"] {
        let server = default_server();
        let target = url(server.addr(), "/");
        let args = ["-t2", "-c2", "-d300ms", "-s", script!("fail_in"), &target, "--", mode];
        let run = pace(&args, LIMIT);
        run.assert_code(3);
        assert!(!run.stderr.contains("panicked"), "{mode}\n{run}");
        let first = run.stderr.lines().next().unwrap_or_default();
        let located = match mode {
            "number" => String::new(),
            _ => format!("fail_in.lua:{}: {mode} failed on purpose", error_line(mode)),
        };
        match mode {
            // Before the run: no report, nothing sent.
            "init" => {
                assert_eq!(run.stdout, "", "{run}");
                assert!(first.starts_with("pace: ") && first.ends_with(&located), "{run}");
                assert_eq!(server.stats().requests, 0, "{run}");
            }
            // After the report, which stays whole.
            "done" => {
                assert!(run.report().requests() > 0, "{run}");
                assert!(!run.stdout.contains("done: "), "{run}");
                assert!(first.starts_with("pace: ") && first.ends_with(&located), "{run}");
            }
            "number" => {
                assert!(run.report().requests() <= 10, "{run}");
                assert!(
                    first.starts_with("pace: the script failed, the run was stopped: ")
                        && first.contains("request() returned number"),
                    "{run}"
                );
            }
            _ => {
                assert!(run.report().requests() <= 12, "{mode}\n{run}");
                assert!(
                    first.starts_with("pace: the script failed, the run was stopped: ")
                        && first.ends_with(&located),
                    "{mode}\n{run}"
                );
            }
        }
        if mode != "number" {
            assert!(run.stderr.contains("stack traceback:"), "{mode}\n{run}");
            assert!(run.stderr.contains(&format!("in function '{mode}'")), "{mode}\n{run}");
        }
    }
}

#[test]
fn request_that_is_not_http_stops_before_the_run() {
    let server = default_server();
    let target = url(server.addr(), "/");
    for (words, position) in [(&[][..], " at 1:8"), (&["--", "incomplete"][..], " at 3:1")] {
        let mut args = vec!["-t1", "-c1", "-d1s", "-s", script!("not_http"), &target];
        args.extend_from_slice(words);
        let run = pace(&args, LIMIT);
        run.assert_code(3);
        assert_eq!(run.stdout, "", "{run}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{run}");
        assert!(
            lines[0].starts_with("pace: the script's request is not valid HTTP: ")
                && lines[0].ends_with(position),
            "{run}"
        );
    }
    assert_eq!(server.stats().requests, 0, "a malformed request was sent");
}

// ----- HEAD: responses with a length and no body ----------------------------------

#[test]
fn head_requests_complete_without_a_body() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t1", "-c2", "-d1s", "-s", script!("head"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_looped(&run, requests, 2);
    assert_eq!(server.stats().requests, requests, "{run}");
}

#[test]
fn head_in_a_pipelined_batch_is_framed_without_a_body() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t1", "-c2", "-d1s", "-s", script!("head_pipeline"), &target], LIMIT);
    run.assert_ok();
    assert_clean(&run);
    let requests = run.report().requests();
    assert_looped(&run, requests, 2 * 3);
    assert!(requests.is_multiple_of(3), "{requests} responses\n{run}");
    assert_eq!(server.stats().requests, requests, "{run}");
}

// ----- nil_request.lua: request() sometimes returns nil ---------------------------

/// A request() that sometimes returns nil (wrk: that connection sends
/// nothing more; the run goes on): the run lasts its duration, the other
/// requests go out, the nils are counted and warned about once.
#[test]
fn nil_from_request_skips_that_send_and_the_run_goes_on() {
    let _load = load_lock();
    for rate in [None, Some("-R300")] {
        let server = default_server();
        let target = url(server.addr(), "/");
        let mut args = vec!["-t2", "-c4", "-d1s", "-s", script!("nil_request"), &target];
        args.extend(rate);
        let run = pace(&args, LIMIT);
        run.assert_ok();
        assert_clean(&run);
        assert!(run.report().runtime_s() >= 0.95, "{rate:?}: the run stopped early\n{run}");
        assert_eq!(run.stderr.matches("returned nil").count(), 1, "warned once\n{run}");
        assert!(run.stderr.contains("nil_request.lua:"), "no script location\n{run}");
        let nils: u64 = run
            .stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("request() returned nil: "))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no count of nil requests\n{run}"));
        let requests = run.report().requests();
        assert!(nils > 0 && requests > 0, "{rate:?}: {nils} nils, {requests} requests\n{run}");
        if rate.is_some() {
            // The plan's 300 requests: every third is a nil.
            let planned = 300;
            assert!(requests + nils <= planned + 2, "{requests} + {nils}\n{run}");
            assert!(requests + nils + 8 >= planned, "{requests} + {nils}\n{run}");
        }
    }
}

// ----- chatty.lua: script output and the report --------------------------------------

/// Checks wrk's order in what pace wrote to stdout: the header, every line
/// the script printed per response, the report, then what done() printed;
/// no line split by another.
fn assert_wrk_output_order(stdout: &str, how: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("Running ") && lines[1].contains(" threads and "),
        "{how}\n{stdout}"
    );
    let report = lines.iter().position(|l| l.starts_with("  Thread Stats")).expect("a report");
    let responses = &lines[2..report];
    assert!(!responses.is_empty(), "{how}: no script output\n{stdout}");
    for line in responses {
        let ok = line.strip_prefix("response ").and_then(|rest| rest.split_once(" status 200"));
        assert!(
            ok.is_some_and(|(n, end)| n.parse::<u64>().is_ok() && end.is_empty()),
            "{how}: {line:?}"
        );
    }
    let tail = &lines[report..];
    assert!(tail[tail.len() - 2].starts_with("Transfer/sec:"), "{how}\n{stdout}");
    assert!(tail[tail.len() - 1].starts_with("done: "), "{how}\n{stdout}");
    let requests = Report::new(stdout).requests();
    assert_eq!(responses.len() as u64, requests, "{how}: one line per response\n{stdout}");
}

#[test]
fn script_output_comes_before_the_report_and_done_after_it() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let args = ["-t2", "-c2", "-d300ms", "-s", script!("chatty"), target.as_str()];
    // Through a pipe, as the tests read every run.
    let run = pace(&args, LIMIT);
    run.assert_ok();
    assert_wrk_output_order(&run.stdout, "pipe");
    // Into a file, where C's stdio buffers fully.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pace"))
        .args(args)
        .stdout(std::fs::File::create(&path).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("pace did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success());
    assert_wrk_output_order(&std::fs::read_to_string(&path).unwrap(), "file");
}
