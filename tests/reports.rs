//! The reports for programs, end to end: the real binary against the
//! built-in server with `-e` (JSON), `-p` (periodic reports), `--hlog`
//! (HdrHistogram interval log), wrx's `--timeseries`,
//! `--thread-timeseries`, `--histogram`, and `-D`. Encoded histograms are
//! decoded by an independent implementation, the Python `hdrh` package.

mod common;

use std::fs;
use std::time::Duration;

use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

use common::{
    default_server, hdrh_available, load_lock, pace, python, serve, serve_options, spawn_pace,
    until_requests, url, Report, Run,
};

/// Prints the total count and the value at each percentile (argv[2:]) of
/// the histogram encoded in argv[1], and its significant figures.
const DECODE: &str = r#"
import sys
from hdrh.histogram import HdrHistogram
h = HdrHistogram.decode(sys.argv[1])
print(h.get_total_count(), h.significant_figures)
for p in sys.argv[2:]:
    print(h.get_value_at_percentile(float(p)))
"#;

/// Reads the interval log argv[1] and prints, per tag (`None` for the
/// untagged lines), the number of intervals and the sum of their counts.
const READ_LOG: &str = r#"
import sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 86400000000, 3))
totals = {}
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    intervals, count = totals.get(h.get_tag(), (0, 0))
    totals[h.get_tag()] = (intervals + 1, count + h.get_total_count())
for tag in sorted(totals, key=str):
    print(tag, *totals[tag])
"#;

/// A decoded histogram: total count, significant figures and the values
/// at the percentiles asked for.
struct Decoded {
    count: u64,
    digits: u32,
    values: Vec<u64>,
}

fn decode_with_hdrh(encoded: &str, percentiles: &[f64]) -> Decoded {
    let mut args = vec![encoded.to_string()];
    args.extend(percentiles.iter().map(f64::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = python(DECODE, &args);
    let mut lines = out.lines();
    let mut first = lines.next().expect("count line").split_whitespace();
    let count = first.next().unwrap().parse().unwrap();
    let digits = first.next().unwrap().parse().unwrap();
    let values = lines.map(|l| l.parse().unwrap()).collect();
    Decoded { count, digits, values }
}

/// Every stdout line of a `-e` run as JSON.
fn json_lines(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{run}"))
        })
        .collect()
}

fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| panic!("no {pointer} in {v}"))
}

fn f64_at(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer).and_then(Value::as_f64).unwrap_or_else(|| panic!("no {pointer} in {v}"))
}

#[test]
fn json_report_is_one_document_with_consistent_totals() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let args = ["-t2", "-c10", "-d2s", "-R500", "--percentiles", "50,90,99,99.9", &target];
    let mut json_args = vec!["-e"];
    json_args.extend(args);
    let run = pace(&json_args, Duration::from_secs(15));
    run.assert_ok();
    assert!(!run.stdout.contains("Running"), "header on stdout\n{run}");
    let lines = json_lines(&run);
    assert_eq!(lines.len(), 1, "{run}");
    let v = &lines[0];

    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["report"], "final");
    assert_eq!(v["mode"], "paced");
    assert_eq!(f64_at(v, "/target_requests_per_sec"), 500.0);
    let requests = u64_at(v, "/total_req");
    assert_eq!(requests, u64_at(v, "/requests"));
    assert!((980..=1020).contains(&requests), "{requests} requests at 500/s for 2 s\n{run}");
    assert!(server.stats().requests >= requests, "{run}");
    let errors = &v["errors"];
    for kind in ["connect", "read", "write", "timeout", "http_error"] {
        assert_eq!(errors[kind], 0, "{kind}\n{run}");
    }
    assert_eq!(v["status_codes"], serde_json::json!({"200": requests}));
    // Rates are the totals over the elapsed time, as in the text report.
    let elapsed = f64_at(v, "/elapsed_s");
    assert!((f64_at(v, "/rps") - requests as f64 / elapsed).abs() < 1e-6);
    let bytes = u64_at(v, "/bytes");
    assert!((f64_at(v, "/bytes_per_sec") - bytes as f64 / elapsed).abs() < 1e-6);
    assert!(v["rx_bps"].as_str().is_some_and(|s| s.ends_with('B')), "{v}");
    let threads = v["per_thread"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(threads.iter().map(|t| u64_at(t, "/requests")).sum::<u64>(), requests);
    assert_eq!(threads.iter().map(|t| u64_at(t, "/bytes")).sum::<u64>(), bytes);
    for view in ["corrected", "uncorrected"] {
        assert_eq!(u64_at(v, &format!("/latency/{view}/count")), requests, "{view}");
        let keys: Vec<&String> =
            v["latency"][view]["percentiles_us"].as_object().unwrap().keys().collect();
        // serde_json's Value sorts keys as strings.
        assert_eq!(keys, ["50", "90", "99", "99.9"]);
    }
    assert!(u64_at(v, "/schedule_lag/count") >= requests, "{v}");

    // A comparable text run reports the same totals.
    let text = pace(&args, Duration::from_secs(15));
    text.assert_ok();
    let report = text.report();
    let text_requests = report.requests() as f64;
    assert!(
        (text_requests - requests as f64).abs() <= 0.02 * requests as f64,
        "text {text_requests} vs JSON {requests}\n{text}\n{run}"
    );
    // Both rates are the requests over the run's own time (which ends at
    // its last response, so two runs differ in it).
    report.assert_rate_is_requests_over_runtime();
    assert!((f64_at(v, "/requests_per_sec") - requests as f64 / elapsed).abs() < 1e-6, "{v}");
}

#[test]
fn encoded_histograms_decode_with_python_hdrh() {
    if !hdrh_available() {
        return;
    }
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-e", "-t2", "-c10", "-d2s", "-R500", &target], Duration::from_secs(15));
    run.assert_ok();
    let v = &json_lines(&run)[0];
    for (field, view) in [("hist", "corrected"), ("uncorrected_hist", "uncorrected")] {
        let decoded = decode_with_hdrh(v[field].as_str().unwrap(), &[99.0]);
        assert_eq!(decoded.count, u64_at(v, "/total_req"), "{field}\n{run}");
        assert_eq!(decoded.count, u64_at(v, &format!("/latency/{view}/count")));
        assert_eq!(decoded.digits, 3);
        // Same histogram, same bucket: equal within the precision.
        let reported = u64_at(v, &format!("/latency/{view}/percentiles_us/99")) as f64;
        let decoded_p99 = decoded.values[0] as f64;
        let precision = reported / 1000.0 * 2.0 + 1.0;
        assert!(
            (decoded_p99 - reported).abs() <= precision,
            "{field}: hdrh p99 {decoded_p99} vs reported {reported}"
        );
    }
}

#[test]
fn digits_reach_the_histograms_and_the_spectrum() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-e", "-D2", "-t1", "-c2", "-d1s", "-R100", &target], Duration::from_secs(15));
    run.assert_ok();
    let v = &json_lines(&run)[0];
    assert_eq!(v["digits"], 2);
    if hdrh_available() {
        assert_eq!(decode_with_hdrh(v["hist"].as_str().unwrap(), &[]).digits, 2);
    }
    let text =
        pace(&["-L", "-D2", "-t1", "-c2", "-d1s", "-R100", &target], Duration::from_secs(15));
    text.assert_ok();
    let first_step = text
        .stdout
        .lines()
        .skip_while(|l| !l.contains("1/(1-Percentile)"))
        .nth(2)
        .unwrap_or_else(|| panic!("no spectrum\n{text}"));
    let value = first_step.split_whitespace().next().unwrap();
    assert_eq!(value.split_once('.').map(|(_, d)| d.len()), Some(2), "{first_step}\n{text}");
    assert!(text.stdout.contains("SubBuckets     =          256]"), "{text}");
}

#[test]
fn hlog_intervals_decode_and_add_up() {
    if !hdrh_available() {
        return;
    }
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.hlog");
    let log_arg = log.to_str().unwrap();
    let run = pace(
        &["-e", "-t2", "-c10", "-d3s", "-R400", "--hlog", log_arg, &target],
        Duration::from_secs(15),
    );
    run.assert_ok();
    let requests = u64_at(&json_lines(&run)[0], "/total_req");
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("#[Logged with pace"), "{text}");
    assert!(text.contains("\n#[Histogram log format version 1.3]\n"), "{text}");
    assert!(text.contains(
        "\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
    ));
    let totals = python(READ_LOG, &[log_arg]);
    // One corrected (untagged) and one uncorrected line per second.
    assert_eq!(totals, format!("None 3 {requests}\nuncorrected 3 {requests}\n"), "{text}");
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["run.hlog"], "temporary file left behind");
}

#[test]
fn hlog_is_complete_after_ctrl_c() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stopped.hlog");
    let running = spawn_pace(&[
        "-t1",
        "-c2",
        "-d20s",
        "-R200",
        "-p500ms",
        "--hlog",
        log.to_str().unwrap(),
        &target,
    ]);
    // Once the run has begun, let it go on for a few periods.
    until_requests(&server, 1);
    std::thread::sleep(Duration::from_millis(1300));
    running.signal(libc::SIGINT);
    let run = running.wait(Duration::from_secs(15));
    run.assert_code(130);
    let last = run.stdout.rsplit("=== REPORT END ===").next().map(Report::new).unwrap();
    let requests = last.requests();
    let text = fs::read_to_string(&log).unwrap_or_else(|e| panic!("no log: {e}\n{run}"));
    let lines: Vec<&str> =
        text.lines().filter(|l| !l.starts_with('#') && !l.starts_with('"')).collect();
    // The run's time in 0.5 s periods, the last one cut short (and maybe
    // empty, when the signal came just after a period ended): a corrected
    // and an uncorrected line for each.
    let periods = (last.runtime_s() / 0.5).ceil() as usize;
    assert!(
        (2 * (periods - 1)..=2 * (periods + 1)).contains(&lines.len()),
        "{} lines for {periods} periods\n{text}\n{run}",
        lines.len()
    );
    if hdrh_available() {
        let totals = python(READ_LOG, &[log.to_str().unwrap()]);
        let corrected = totals.lines().next().unwrap();
        assert!(
            corrected.starts_with("None ") && corrected.ends_with(&format!(" {requests}")),
            "{totals}\n{run}"
        );
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn unwritable_hlog_fails_before_the_run() {
    let server = default_server();
    let target = url(server.addr(), "/");
    let run =
        pace(&["-d5s", "--hlog", "/nonexistent/dir/x.hlog", &target], Duration::from_secs(10));
    run.assert_code(2);
    assert!(run.stderr.contains("cannot write /nonexistent/dir/x.hlog"), "{run}");
    assert_eq!(server.stats().requests, 0, "{run}");
}

/// How far a 1 s period's count may be from the plan's `rate` requests: a
/// response counts in the period it completes in, so the requests that
/// cross a period's ends move between periods, at most `rate` x the
/// longest latency of the run (`max_us`) at each end; at least 10.
fn period_room(rate: f64, max_us: f64) -> u64 {
    (rate * max_us / 1e6).ceil().max(10.0) as u64 + 2
}

#[test]
fn periodic_json_reports_then_the_whole_run() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run =
        pace(&["-e", "-p", "1s", "-t2", "-c4", "-d5s", "-R200", &target], Duration::from_secs(20));
    run.assert_ok();
    let lines = json_lines(&run);
    let (last, periods) = lines.split_last().unwrap();
    assert_eq!(periods.len(), 5, "{run}");
    let room = period_room(200.0, f64_at(last, "/latency/corrected/max_us"));
    for (i, period) in periods.iter().enumerate() {
        assert_eq!(period["report"], "period");
        assert_eq!(u64_at(period, "/period/index"), i as u64);
        assert_eq!(f64_at(period, "/period/start_s"), i as f64);
        let requests = u64_at(period, "/total_req");
        assert!(requests.abs_diff(200) <= room, "period {i}: {requests} requests\n{run}");
    }
    assert_eq!(last["report"], "final");
    let total = u64_at(last, "/total_req");
    assert!((980..=1020).contains(&total), "{total} requests\n{run}");
    assert_eq!(periods.iter().map(|p| u64_at(p, "/total_req")).sum::<u64>(), total);
    let recorded: u64 = periods.iter().map(|p| u64_at(p, "/latency/corrected/count")).sum();
    assert_eq!(recorded, u64_at(last, "/latency/corrected/count"));
}

#[test]
fn periodic_text_reports_then_the_whole_run() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run =
        pace(&["-p1s", "-L", "-t2", "-c4", "-d3s", "-R200", &target], Duration::from_secs(20));
    run.assert_ok();
    let parts: Vec<&str> = run.stdout.split("=== REPORT END ===\n").collect();
    assert_eq!(parts.len(), 4, "three periods and the final report\n{run}");
    assert!(parts[0].starts_with("Running 3s test @"), "{run}");
    let max_us = Report::new(parts[3]).latency_us(common::Block::Recorded, 100.0);
    let room = period_room(200.0, max_us);
    let mut sum = 0;
    for (i, part) in parts[..3].iter().enumerate() {
        // Each period report starts with its time window.
        let window = format!("[{i}.00s - {}.00s]\n  Thread Stats", i + 1);
        assert!(part.starts_with(&window) || i == 0 && part.contains(&window), "{run}");
        let report = Report::new(part);
        let requests = report.requests();
        assert!(requests.abs_diff(200) <= room, "{requests} in a period\n{run}");
        assert!(part.contains(" requests in 1.00s"), "{part}");
        assert!(part.contains("Latency Distribution (HdrHistogram - Recorded Latency)"));
        sum += requests;
    }
    let last = Report::new(parts[3]);
    assert_eq!(last.requests(), sum, "{run}");
    assert!(parts[3].contains("Schedule lag:"), "{run}");
}

#[test]
fn time_series_and_histogram_add_up() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(
        &[
            "--timeseries",
            "--thread-timeseries",
            "--histogram",
            "-t2",
            "-c4",
            "-d2s",
            "-R1000",
            &target,
        ],
        Duration::from_secs(15),
    );
    run.assert_ok();
    let requests = run.report().requests();
    // wrx's table: a blank line, its header, `%6ld    %6ld    %9ld` rows.
    assert!(run.stdout.contains("\n\nTHREAD  |  EPOCH  |  REQUESTS\n"), "{run}");
    let mut lines = run.stdout.lines().skip_while(|l| *l != "THREAD  |  EPOCH  |  REQUESTS");
    assert!(lines.next().is_some(), "no thread table\n{run}");
    let rows: Vec<(u64, u64, u64)> = lines
        .by_ref()
        .take_while(|l| !l.starts_with("Request counts time series"))
        .map(|l| {
            let n: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            assert_eq!(l, format!("{:6}    {:6}    {:9}", n[0], n[1], n[2]), "{run}");
            (n[0], n[1], n[2])
        })
        .collect();
    let mut sorted = rows.clone();
    sorted.sort();
    assert_eq!(rows, sorted, "rows by thread then epoch");
    assert_eq!(rows.iter().map(|r| r.2).sum::<u64>(), requests, "{run}");
    // 2 s in 250 ms slots, and more if the last responses came later:
    // up to the run time (printed to 10 ms), which ends at the last one.
    // Each slot's count alone on its line, as wrx prints it (`%ld\n`).
    let series: Vec<u64> = lines
        .by_ref()
        .take_while(|l| *l != "Latency histogram (bin width = 1us)")
        .map(|l| {
            let count: u64 = l.parse().unwrap_or_else(|_| panic!("{l:?} is not a count\n{run}"));
            assert_eq!(l, count.to_string(), "{run}");
            count
        })
        .collect();
    let slots = ((run.report().runtime_s() + 0.005) / 0.25).ceil() as usize;
    assert!((8..=slots.max(8)).contains(&series.len()), "{series:?} for {slots} slots\n{run}");
    assert_eq!(series.iter().sum::<u64>(), requests, "{run}");
    assert!(run.stdout.contains("Request counts time series (interval = 250ms) \n"));
    assert_eq!(rows.len(), 2 * series.len());
    let bins: Vec<u64> = lines.map(|l| l.parse().unwrap()).collect();
    assert_eq!(bins.iter().sum::<u64>(), requests, "every response recorded once");
    assert_ne!(bins.last(), Some(&0), "ends at the last non-empty bin");

    // The same in JSON, with another slot length.
    let run = pace(
        &["-e", "--timeseries=500ms", "--histogram", "-t2", "-c4", "-d1s", "-R1000", &target],
        Duration::from_secs(15),
    );
    run.assert_ok();
    let v = &json_lines(&run)[0];
    let total = u64_at(v, "/total_req");
    assert_eq!(f64_at(v, "/timeseries/interval_ms"), 500.0);
    let series: Vec<u64> = v["timeseries"]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(series.iter().sum::<u64>(), total, "{v}");
    let bins = v["latency_histogram"]["bins"].as_array().unwrap();
    assert_eq!(bins.iter().map(|b| b[1].as_u64().unwrap()).sum::<u64>(), total);
}

/// A run in which nothing was answered: every figure that does not exist
/// prints as a dash (wrk prints `-nan`), in the text as in the JSON's nulls.
#[test]
fn figures_of_nothing_are_dashes() {
    let _load = load_lock();
    let server = common::serve(pace::serve::ServeOptions {
        latency: Duration::from_secs(5),
        ..common::serve_options()
    });
    let target = url(server.addr(), "/");
    let run = pace(
        &["-t1", "-c1", "-d1s", "-R10", "-U", "-p", "500ms", "-T", "300ms", &target],
        Duration::from_secs(20),
    );
    run.assert_ok();
    assert!(!run.stdout.to_lowercase().contains("nan"), "{run}");
    // The uncorrected latency of no response (the corrected one holds the
    // waits of the requests never sent).
    assert!(run.stdout.contains(" 50.000%       -  \n"), "{run}");
    assert!(run.stdout.contains("#[Mean    =            -, StdDeviation   =            -]"));
    assert!(run.stdout.contains("Schedule lag: p50 "), "{run}");
}

/// `--percentiles` without `-L` prints the distribution with them (it
/// implies `-L`), in a run and in `pace report` of a saved one; a run
/// without either keeps wrk's report, with no distribution.
#[test]
fn percentiles_alone_print_the_distribution() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("run.json");
    let saved = saved.to_str().unwrap();
    let asked = ["--percentiles", "50,99,99.99"];
    let shows_them = |run: &Run| {
        run.assert_ok();
        let labels: Vec<&str> = run
            .stdout
            .lines()
            .skip_while(|l| *l != "  Latency Distribution")
            .skip(1)
            .map_while(|l| l.split_whitespace().next().filter(|label| label.ends_with('%')))
            .collect();
        assert_eq!(labels, ["50.00%", "99.00%", "99.99%"], "{run}");
    };
    let limit = Duration::from_secs(15);
    shows_them(&pace(&[&["-t1", "-c2", "-d300ms", &target][..], &asked].concat(), limit));
    pace(&["-t1", "-c2", "-d300ms", "-e", "-o", saved, &target], limit).assert_ok();
    shows_them(&pace(&[&["report", saved][..], &asked].concat(), limit));
    let plain = pace(&["-t1", "-c2", "-d300ms", &target], limit);
    plain.assert_ok();
    assert!(!plain.stdout.contains("Latency Distribution"), "{plain}");
}

/// A saved run says how it was made (command line with its secrets
/// masked, version, host, start), and `pace report` says it again.
#[test]
fn a_saved_run_records_how_it_was_made() {
    let _load = load_lock();
    let server = default_server();
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("run.json");
    let saved = saved.to_str().unwrap();
    let target = url(server.addr(), "/").replace("http://", "http://user:hunter2@");
    let before = std::time::SystemTime::now();
    let args = ["-t1", "-c2", "-d300ms", "-H", "Authorization: Bearer s3cret", "-e", "-o", saved];
    let run = pace(&[&args[..], &[target.as_str()]].concat(), Duration::from_secs(15));
    run.assert_ok();
    let text = fs::read_to_string(saved).unwrap();
    assert!(!text.contains("s3cret") && !text.contains("hunter2"), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let provenance = &v["provenance"];
    let line: Vec<&str> = provenance["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let masked_url = target.replace("hunter2", "***");
    let expected = [&["pace"], &args[..4], &["Authorization: ***", "-e", "-o", saved, &masked_url]];
    assert_eq!(line, expected.concat(), "{provenance}");
    assert_eq!(provenance["version"], env!("CARGO_PKG_VERSION"));
    let host = fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(provenance["host"], host.trim());
    let started = provenance["started_at"].as_str().unwrap();
    let started_s = f64_at(&v, "/measured_from_unix_s");
    let before_s = before.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(started_s >= before_s - 1.0, "{started} {started_s} {before_s}");

    let report = pace(&["report", saved], Duration::from_secs(15));
    report.assert_ok();
    let first = format!(
        "Saved run: pace {} on {}, started {started}\n",
        env!("CARGO_PKG_VERSION"),
        host.trim()
    );
    assert!(report.stdout.starts_with(&first), "{report}");
    let shell = format!(
        "  pace -t1 -c2 -d300ms -H 'Authorization: ***' -e -o {saved} '{masked_url}'\nRunning"
    );
    assert!(report.stdout.contains(&shell), "{report}");
}

/// The phases: with `Connection: close` every request opens a connection
/// of its own, so the report shows a connect per request (and over TLS a
/// handshake per connect), and every response's first byte; the text
/// report shows them with `--latency` only, after wrk's lines.
#[test]
fn phases_show_where_a_connection_per_request_spends_its_time() {
    let _load = load_lock();
    let server = default_server();
    let close = ["-H", "Connection: close", "-t1", "-c2", "-n", "200"];
    let run = pace(&[&close[..], &["-e", &url(server.addr(), "/")]].concat(), LIMIT);
    run.assert_ok();
    let report = &json_lines(&run)[0];
    let requests = u64_at(report, "/requests");
    assert_eq!(requests, 200, "{run}");
    assert_eq!(u64_at(report, "/phases/first_byte/count"), requests, "{run}");
    // A connection per request, and the last one or two opened for the
    // next request when the run ended.
    let connects = u64_at(report, "/phases/connect/count");
    assert!((requests..=requests + 2).contains(&connects), "{connects} connects\n{run}");
    assert_eq!(u64_at(report, "/phases/tls_handshake/count"), 0, "{run}");
    assert!(u64_at(report, "/phases/connect/max_us") > 0, "{run}");
    if hdrh_available() {
        let encoded = report["phases"]["connect"]["hist"].as_str().unwrap();
        assert_eq!(decode_with_hdrh(encoded, &[]).count, connects);
    }

    let tls = serve(pace::serve::ServeOptions { tls: true, ..serve_options() });
    let https = format!("https://{}/", tls.addr());
    let run = pace(&[&close[..], &["-k", "-e", &https]].concat(), LIMIT);
    run.assert_ok();
    let report = &json_lines(&run)[0];
    let connects = u64_at(report, "/phases/connect/count");
    assert_eq!(u64_at(report, "/phases/tls_handshake/count"), connects, "{run}");

    let text = pace(&[&close[..], &["-k", "--latency", &https]].concat(), LIMIT);
    text.assert_ok();
    let rows = [
        "  Phases  ",
        "    Connect  ",
        "    TLS handshake  ",
        "    First byte  ",
        "  In flight: ",
        " requests on average, of 2 connections\n",
    ];
    for row in rows {
        assert!(text.stdout.contains(row), "no {row:?}\n{text}");
    }
    let plain = pace(&[&close[..], &["-k", &https]].concat(), LIMIT);
    assert!(!plain.stdout.contains("Phases"), "{plain}");
}
