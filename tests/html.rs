//! The HTML report (`--html`, `pace merge --html`, `pace report --html`):
//! every page the real binary writes is loaded in headless Chromium
//! (Debian package `chromium`), which must render it without a single
//! console message, and every chart must have lines with points.
//!
//! Without Chromium the tests say SKIPPED and pass; in CI they fail.

mod common;

use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::*;

const CHROMIUM: &str = "chromium";
const LIMIT: Duration = Duration::from_secs(30);

/// Whether headless Chromium can be run; locally its absence skips the
/// caller's test after saying so, in CI it fails the test.
fn chromium_available() -> bool {
    let found = Command::new(CHROMIUM)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        assert!(!in_ci(), "{CHROMIUM} is missing: CI must install it (apt-get install chromium)");
        eprintln!(
            "\n!!!!!!!!!! SKIPPED: {CHROMIUM} not found; the HTML was not checked in a browser. \
             To run it: apt-get install chromium !!!!!!!!!!\n"
        );
    }
    found
}

/// Loads `page` in headless Chromium and returns the DOM it rendered.
/// Fails the test on any console message (an error, a warning, a failed
/// load), on a non-zero exit, or after [`LIMIT`].
fn render(page: &Path) -> String {
    let dom_path = page.parent().unwrap().join("dom.html");
    chromium(page, "--dump-dom", &dom_path);
    fs::read_to_string(&dom_path).unwrap()
}

/// Runs headless Chromium on `page` with `action` (`--dump-dom`, or
/// `--print-to-pdf=...`), its stdout into `stdout`; fails the test as
/// [`render`] says.
fn chromium(page: &Path, action: &str, stdout: &Path) {
    let dir = page.parent().unwrap();
    let log_path = dir.join("chromium.log");
    let mut child = Command::new(CHROMIUM)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"])
        // Nothing may be fetched: a name to resolve would fail loudly.
        .arg("--host-resolver-rules=MAP * ~NOTFOUND")
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(action)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        // Files, not pipes: a full pipe would block Chromium.
        .stdout(File::create(stdout).unwrap())
        .stderr(File::create(&log_path).unwrap())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not render {} within {LIMIT:?}", page.display());
        }
        thread::sleep(Duration::from_millis(20));
    };
    let log = fs::read_to_string(&log_path).unwrap_or_default();
    assert!(status.success(), "chromium failed on {}: {status}\n{log}", page.display());
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages for {}:\n{}", page.display(), console.join("\n"));
}

/// The charts of a rendered page: each `data-chart` with the number of
/// points of each of its lines (`<path>`s, by `data-series`).
fn charts(dom: &str) -> Vec<(String, Vec<(String, usize)>)> {
    let attribute = |text: &str, name: &str| -> Option<String> {
        let start = text.find(&format!("{name}=\""))? + name.len() + 2;
        Some(text[start..start + text[start..].find('"')?].to_string())
    };
    dom.split("<svg ")
        .skip(1)
        .map(|svg| {
            let svg = &svg[..svg.find("</svg>").expect("a closed svg")];
            let kind = attribute(svg, "data-chart").expect("every chart says what it is");
            let lines = svg
                .split("<path ")
                .skip(1)
                .map(|line| {
                    let name = attribute(line, "data-series").expect("a named line");
                    let path = attribute(line, "d").expect("a path");
                    // Points are `Mx,y` or `Lx,y`.
                    (name, path.split_whitespace().filter(|p| p.contains(',')).count())
                })
                .collect();
            (kind, lines)
        })
        .collect()
}

/// Checks the page at `path` in Chromium: it renders, has exactly the
/// charts `expected` (in order), each with lines of at least `min_points`
/// points; returns the rendered DOM.
fn check_page(path: &Path, expected: &[&str], min_points: usize) -> String {
    check_page_headed(path, "pace report", expected, min_points)
}

/// [`check_page`] for a page whose heading is `heading`.
fn check_page_headed(path: &Path, heading: &str, expected: &[&str], min_points: usize) -> String {
    let html = fs::read_to_string(path).unwrap();
    // Self-contained: nothing to fetch, no script.
    for fetch in ["<script", "<link", " src=", "url(", "@import"] {
        assert!(!html.contains(fetch), "{fetch} in {}", path.display());
    }
    let dom = render(path);
    assert!(dom.contains(&format!("<h1>{heading}</h1>")), "{dom}");
    let charts = charts(&dom);
    let kinds: Vec<&str> = charts.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(kinds, expected, "charts of {}", path.display());
    for (kind, lines) in &charts {
        assert!(!lines.is_empty(), "chart {kind} has no line");
        for (name, points) in lines {
            assert!(*points >= min_points, "{kind}: line {name} has {points} points");
        }
    }
    dom
}

/// The check above sees what a page says on the console.
#[test]
#[should_panic(expected = "console messages")]
fn the_console_check_catches_messages() {
    if !chromium_available() {
        panic!("console messages (not checked: no chromium)");
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("noisy.html");
    fs::write(&page, "<!DOCTYPE html><p>x</p><script>console.error('noisy')</script>").unwrap();
    render(&page);
}

/// The line names of chart `kind`.
fn lines_of(dom: &str, kind: &str) -> Vec<String> {
    let charts = charts(dom);
    let (_, lines) = charts.iter().find(|(k, _)| k == kind).expect("the chart");
    lines.iter().map(|(name, _)| name.clone()).collect()
}

const TIME_CHARTS: [&str; 3] = ["latency", "throughput", "statuses"];

#[test]
fn closed_loop_run() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("closed.html");
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    pace(&["-t1", "-c4", "-d1s", "--html", page.to_str().unwrap(), &target], LIMIT).assert_ok();
    let dom = check_page(&page, &[&["spectrum"][..], &TIME_CHARTS].concat(), 5);
    assert_eq!(lines_of(&dom, "spectrum"), ["latency"]);
    assert_eq!(lines_of(&dom, "throughput"), ["achieved"]);
    assert!(dom.contains("closed loop"));
}

/// A closed loop sends each request when it is meant to: its latency has
/// nothing to correct, and its page does not call it corrected. A paced
/// run's page names both. (The written text: no browser needed.)
#[test]
fn only_a_paced_run_has_corrected_latency() {
    let dir = tempfile::tempdir().unwrap();
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let page = |name: &str, mode: &[&str]| {
        let path = dir.path().join(name);
        let mut args = vec!["-t1", "-c2", "-d300ms", "--html", path.to_str().unwrap(), &target];
        args.extend(mode);
        pace(&args, LIMIT).assert_ok();
        fs::read_to_string(&path).unwrap()
    };
    let closed = page("closed.html", &[]);
    // The one latency, then the phases the run had (no TLS here).
    let head = "<tr><th>percentile</th><th>latency</th><th>connect</th><th>first byte</th></tr>";
    assert!(closed.contains(head), "{closed}");
    assert!(!closed.to_lowercase().contains("corrected"), "{closed}");
    let paced = page("paced.html", &["-R100"]);
    let head = "<tr><th>percentile</th><th>corrected</th><th>uncorrected</th><th>schedule lag</th>";
    assert!(paced.contains(head), "{paced}");
}

#[test]
fn paced_run_with_uncorrected_latency() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("paced.html");
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(
        &["-t2", "-c8", "-d2s", "-R400", "-U", "--html", page.to_str().unwrap(), &target],
        LIMIT,
    );
    run.assert_ok();
    // The text report is as without --html.
    assert!(run.stdout.contains("Uncorrected Latency"), "{run}");
    let dom = check_page(&page, &[&["spectrum"][..], &TIME_CHARTS, &["lag"]].concat(), 10);
    assert_eq!(
        lines_of(&dom, "spectrum"),
        ["corrected (from the intended send time)", "uncorrected (from the actual send)"]
    );
    assert_eq!(lines_of(&dom, "throughput"), ["achieved", "target"]);
    assert_eq!(lines_of(&dom, "latency"), ["p50", "p99", "max", "uncorrected p99"]);
    // Printed, the pages are A4 (595 x 842 points).
    let pdf = dir.path().join("paced.pdf");
    chromium(&page, &format!("--print-to-pdf={}", pdf.display()), &dir.path().join("out"));
    let pdf = String::from_utf8_lossy(&fs::read(&pdf).unwrap()).into_owned();
    let pages: Vec<&str> = pdf.split("/MediaBox [").skip(1).collect();
    assert!(!pages.is_empty(), "no page in the PDF");
    for page in pages {
        let size: Vec<f64> = page
            .split(']')
            .next()
            .unwrap()
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        assert!((size[2] - 595.0).abs() < 1.0 && (size[3] - 842.0).abs() < 1.0, "{size:?}");
    }
}

#[test]
fn run_with_errors() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("errors.html");
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/status/503");
    let args = ["-t1", "-c10", "-d1s", "-R200", "--html", page.to_str().unwrap(), &target];
    pace(&args, LIMIT).assert_ok();
    let dom = check_page(&page, &[&["spectrum"][..], &TIME_CHARTS, &["lag"]].concat(), 5);
    // Every response is a 503; on a loaded machine some requests may also
    // have found no free connection before the end (unsent).
    let lines = lines_of(&dom, "statuses");
    assert!(lines.contains(&"5xx".to_string()), "{lines:?}");
    assert!(lines.iter().all(|line| line == "5xx" || line == "unsent"), "{lines:?}");
    assert!(
        dom.contains("errors: connect 0, read 0, write 0, timeout 0, status &gt; 399 "),
        "the verdict counts the errors:\n{dom}"
    );
    assert!(dom.contains("503: "), "the status codes are listed");
}

#[test]
fn a_page_that_cannot_be_written_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("missing/run.html");
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-d1s", "--html", page.to_str().unwrap(), &target], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains("cannot write"), "{run}");
    assert_eq!(server.stats().requests, 0, "load was sent");
}

#[test]
fn an_interrupted_run_writes_the_page_of_what_was_measured() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("interrupted.html");
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let running =
        spawn_pace(&["-t1", "-c4", "-d20s", "-R500", "--html", page.to_str().unwrap(), &target]);
    // Half a second of load: several periods of 100 ms are complete.
    let deadline = Instant::now() + LIMIT;
    while server.stats().requests < 250 {
        assert!(Instant::now() < deadline, "no load reached the server");
        thread::sleep(Duration::from_millis(5));
    }
    assert!(!page.exists(), "the page appeared before the run ended");
    running.signal(libc::SIGINT);
    running.wait(LIMIT).assert_code(130);
    let dom = check_page(&page, &[&["spectrum"][..], &TIME_CHARTS, &["lag"]].concat(), 3);
    assert!(dom.contains("Stopped early by SIGINT"), "{dom}");
}

/// `pace ... -e -p 100ms -o FILE` of `extra` options against `target`,
/// started with the others of one plan at `start_at`.
fn saved_run(target: &str, file: &Path, extra: &[&str]) -> Running {
    let mut args = vec!["-t1", "-c2", "-d1s", "-R200", "-e", "-p", "100ms"];
    args.extend(extra);
    args.extend(["-o", file.to_str().unwrap(), target]);
    spawn_pace(&args)
}

#[test]
fn merge_of_two_shards() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("shard-0.json"), dir.path().join("shard-1.json"));
    let page = dir.path().join("merged.html");
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    // One plan, both shards from the same instant: their periods line up.
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 2;
    let start = start.to_string();
    let shards = [
        saved_run(&target, &a, &["--shard", "0/2", "--start-at", &start]),
        saved_run(&target, &b, &["--shard", "1/2", "--start-at", &start]),
    ];
    for shard in shards {
        shard.wait(LIMIT).assert_ok();
    }
    let run = pace(
        &[
            "merge",
            "-U",
            "--html",
            page.to_str().unwrap(),
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
        LIMIT,
    );
    run.assert_ok();
    assert!(run.stdout.starts_with("Merged the 2 shards of one plan"), "{run}");
    let dom = check_page(&page, &[&["spectrum"][..], &TIME_CHARTS, &["lag"]].concat(), 5);
    assert!(dom.contains("<td>0/2</td>") && dom.contains("<td>1/2</td>"), "per-shard rows");
    assert!(dom.contains("shard-1.json"));
    // --html takes results of -e, not logs.
    let log = dir.path().join("run.hlog");
    fs::write(&log, "#[Histogram log format version 1.3]\n").unwrap();
    let refused = pace(&["merge", "--html", "x.html", log.to_str().unwrap()], LIMIT);
    refused.assert_code(1);
    assert!(refused.stderr.contains("--html needs results of -e"), "{refused}");
}

#[test]
fn report_of_a_saved_run() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (saved, page) = (dir.path().join("run.json"), dir.path().join("report.html"));
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    saved_run(&target, &saved, &[]).wait(LIMIT).assert_ok();
    let saved_arg = saved.to_str().unwrap();
    let run = pace(&["report", "-U", saved_arg, "--html", page.to_str().unwrap()], LIMIT);
    run.assert_ok();
    // How the run was made, then the text report again, with the
    // uncorrected block asked for now.
    assert!(run.stdout.starts_with("Saved run: pace "), "{run}");
    assert!(run.stdout.contains(" -R200 -e -p 100ms -o "), "{run}");
    let report = run.stdout.lines().skip(2).collect::<Vec<_>>().join("\n");
    assert!(report.starts_with("Running 1s test @ "), "{run}");
    assert!(run.stdout.contains("Uncorrected Latency"), "{run}");
    assert!(run.report().requests() > 0, "{run}");
    let dom = check_page(&page, &[&["spectrum"][..], &TIME_CHARTS, &["lag"]].concat(), 5);
    assert!(dom.contains("run.json"), "the page names its source");
    assert!(dom.contains(" -R200 -e -p 100ms -o "), "the page has the command line");
    // Without --html: the text report only.
    let text = pace(&["report", saved_arg], LIMIT);
    text.assert_ok();
    assert!(!text.stdout.contains("Uncorrected"), "{text}");
    // Not a saved run: a clear error.
    let refused = pace(&["report", page.to_str().unwrap()], LIMIT);
    refused.assert_code(2);
    assert!(refused.stderr.contains("not a report of pace -e"), "{refused}");
}

/// A targets file of several targets: the page has a row per target
/// (labels escaped), and still renders without a console message.
#[test]
fn per_target_table() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("targets.html");
    let _load = load_lock();
    let (a, b) = (default_server(), default_server());
    let targets = dir.path().join("targets.txt");
    let text = format!("GET http://{}/a?x=<1>&y\nPOST http://{}/b\n", a.addr(), b.addr());
    fs::write(&targets, text).unwrap();
    let args = ["-t1", "-c2", "-d1s", "-R200", "--targets", targets.to_str().unwrap()];
    let mut line = args.to_vec();
    line.extend(["--html", page.to_str().unwrap()]);
    pace(&line, LIMIT).assert_ok();
    let dom = check_page(&page, &[&["spectrum"][..], &TIME_CHARTS, &["lag"]].concat(), 5);
    let table = dom.split("<h2>Per target</h2>").nth(1).expect("the per-target section");
    // The label is the request as sent: `<` and `>` percent-encoded.
    assert!(table.contains(&format!("GET http://{}/a?x=%3C1%3E&amp;y", a.addr())), "{table}");
    assert!(table.contains(&format!("POST http://{}/b", b.addr())), "{table}");
}

/// `pace compare --html`: runs against the built-in server without and
/// with 1 ms of added latency; the page draws both percentile spectra on
/// one chart (corrected and uncorrected of each run) and both timelines.
#[test]
fn comparison_of_two_runs() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base.json"), dir.path().join("new.json"));
    let page = dir.path().join("compare.html");
    let _load = load_lock();
    let fast = default_server();
    let slow =
        serve(pace::serve::ServeOptions { latency: Duration::from_millis(1), ..serve_options() });
    saved_run(&url(fast.addr(), "/"), &base, &[]).wait(LIMIT).assert_ok();
    saved_run(&url(slow.addr(), "/"), &new, &[]).wait(LIMIT).assert_ok();
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let run = pace(&["compare", "--html", page.to_str().unwrap(), base, new], LIMIT);
    run.assert_ok();
    assert!(run.stdout.starts_with("Comparing"), "{run}");
    let dom =
        check_page_headed(&page, "pace comparison", &["spectrum", "latency", "throughput"], 5);
    assert_eq!(
        lines_of(&dom, "spectrum"),
        ["base corrected", "new corrected", "base uncorrected", "new uncorrected"]
    );
    assert_eq!(lines_of(&dom, "latency"), ["base p50", "base p99", "new p50", "new p99"]);
    assert_eq!(lines_of(&dom, "throughput"), ["base", "new"]);
    // The table, with the verdict of the p50 line.
    assert!(dom.contains("<td>corrected p50</td>"), "{dom}");
    assert!(dom.contains("NEW is worse at: "), "{dom}");
    assert!(dom.contains(r#"<span class="bad">slower</span>"#), "{dom}");
    assert!(dom.contains("base.json") && dom.contains("new.json"));
}

#[test]
fn search_with_its_latency_against_throughput() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("search.html");
    let _load = load_lock();
    // One worker at 1,000/s: the curve bends past it.
    let server = serve(pace::serve::ServeOptions { capacity: Some(1000), ..serve_options() });
    let target = url(server.addr(), "/");
    let args = [
        "search",
        "--slo",
        "p99<20ms",
        "--from",
        "200",
        "--resolution",
        "20%",
        "-d",
        "1s",
        "--warmup",
        "200ms",
        "-t1",
        "-c10",
        "--html",
        page.to_str().unwrap(),
        &target,
    ];
    let run = pace(&args, LIMIT.max(Duration::from_secs(120)));
    run.assert_ok();
    // Shown with a failure below: the steps the chart was drawn from.
    eprintln!("{}", run.stdout);
    // Every line joins the steps that were judged (not run "again" with
    // more connections): two points at least, or the one step judged (on a
    // loaded machine the search may end at its first step, "not offered":
    // pace itself could not keep the schedule).
    let rows: Vec<&str> = (run.stdout.lines())
        .filter(|l| l.starts_with("  ") && l.trim_start().starts_with(char::is_numeric))
        .collect();
    let judged = rows.iter().filter(|row| !row.contains("%  again")).count();
    assert!(judged >= 1, "{}", run.stdout);
    let dom = check_page_headed(&page, "pace search", &["capacity"], judged.min(2));
    let lines = lines_of(&dom, "capacity");
    // Names as the DOM holds them: `<` escaped. A line at the rate found,
    // unless pace could not offer even the first step (then no rate was
    // found, and the answer says what this machine could offer).
    assert_eq!(&lines[..5], ["p50", "p90", "p99", "p99.9", "p99&lt;20ms"], "{lines:?}");
    let answer = run.stdout.lines().last().unwrap();
    if answer.starts_with("this machine cannot offer more than") {
        assert_eq!(lines.len(), 5, "{lines:?}");
    } else {
        assert!(lines[5].starts_with("holds "), "{lines:?}");
    }
    // The answer and every step are on the page, as in the text.
    assert!(dom.contains(&answer.replace('<', "&lt;")), "{answer}");
    assert_eq!(dom.matches("<tr class=").count(), rows.len());
}
