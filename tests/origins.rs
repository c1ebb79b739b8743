//! Several origins in one run (issue 18), end to end: a targets file over
//! two built-in servers and an nginx; each server's own count of requests
//! must match pace's per-target breakdown (text rows and JSON), in the
//! closed loop and with a rate, and `pace merge` adds the breakdown up.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{load_lock, pace, serve, serve_options, Nginx, NginxOptions, Run};
use pace::serve::ServerHandle;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

/// Two built-in servers, an nginx logging every request, and a targets
/// file naming two targets of the first server, one of the second and one
/// of nginx.
struct Origins {
    a: ServerHandle,
    b: ServerHandle,
    nginx: Nginx,
    dir: tempfile::TempDir,
    file: String,
}

impl Origins {
    fn start() -> Option<Origins> {
        let nginx = Nginx::start_with(NginxOptions { access_log: true, ..Default::default() })?;
        let (a, b) = (serve(serve_options()), serve(serve_options()));
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "GET http://{a}/a\n\nPOST http://{a}/p\n\nGET http://{b}/b\n\nGET http://{n}/index.html\n",
            a = a.addr(),
            b = b.addr(),
            n = nginx.addr
        );
        let path = dir.path().join("targets.txt");
        std::fs::write(&path, text).unwrap();
        let file = path.to_str().unwrap().to_string();
        Some(Origins { a, b, nginx, dir, file })
    }

    /// The labels pace gives the targets, in the file's order.
    fn labels(&self) -> [String; 4] {
        [
            format!("GET http://{}/a", self.a.addr()),
            format!("POST http://{}/p", self.a.addr()),
            format!("GET http://{}/b", self.b.addr()),
            format!("GET http://{}/index.html", self.nginx.addr),
        ]
    }

    /// What each server has answered so far: the first server, the
    /// second, nginx.
    fn served(&self) -> [u64; 3] {
        [self.a.stats().requests, self.b.stats().requests, self.nginx.access_log().len() as u64]
    }

    /// Runs pace on the targets with `args`; returns the run and what each
    /// server answered during it.
    fn run(&self, args: &[&str]) -> (Run, [u64; 3]) {
        let before = self.served();
        let mut line = vec!["--targets", self.file.as_str()];
        line.extend_from_slice(args);
        let run = pace(&line, LIMIT);
        run.assert_ok();
        let after = self.served();
        (run, [0, 1, 2].map(|i| after[i] - before[i]))
    }

    /// Checks per-target `counts` (in the labels' order) against what the
    /// servers answered.
    fn check(&self, counts: &[u64], served: [u64; 3], run: &Run) {
        assert_eq!(counts.len(), 4, "{run}");
        assert!(counts.iter().all(|&n| n > 0), "every target had requests: {counts:?}\n{run}");
        assert_eq!([counts[0] + counts[1], counts[2], counts[3]], served, "{run}");
    }
}

/// The requests of each row of the text report's per-target table, by label.
fn text_rows(run: &Run) -> BTreeMap<String, u64> {
    let text = &run.stdout;
    let table = text.split("Per target:\n").nth(1).expect("the table");
    table
        .lines()
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            (format!("{} {}", words[0], words[1]), words[2].parse().unwrap())
        })
        .collect()
}

fn json(run: &Run) -> Value {
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}\n{run}"))
}

/// The JSON's per-target requests, in the labels' order.
fn json_counts(report: &Value, labels: &[String]) -> Vec<u64> {
    let targets = report["targets"].as_array().expect("targets");
    let named: Vec<&str> = targets.iter().map(|t| t["target"].as_str().unwrap()).collect();
    assert_eq!(named, labels);
    targets.iter().map(|t| t["requests"].as_u64().unwrap()).collect()
}

#[test]
fn closed_loop_each_servers_count_is_its_targets_rows() {
    let Some(origins) = Origins::start() else { return };
    let _load = load_lock();
    let (run, served) = origins.run(&["-t2", "-c8", "-d400ms"]);
    // The header says how the connections were spread (shares 2, 1, 1).
    let line = format!(
        "  connections per origin: 4 to http://{}, 2 to http://{}, 2 to http://{}\n",
        origins.a.addr(),
        origins.b.addr(),
        origins.nginx.addr
    );
    assert!(run.stdout.contains(&format!("  2 threads and 8 connections\n{line}")), "{run}");
    let rows = text_rows(&run);
    let counts: Vec<u64> = origins.labels().iter().map(|label| rows[label]).collect();
    origins.check(&counts, served, &run);
    assert_eq!(counts.iter().sum::<u64>(), run.report().requests(), "{run}");
    // The built-in server answers a POST 200, nginx's file a GET 200.
    assert_eq!(run.report().non_2xx_3xx(), None, "{run}");
}

#[test]
fn with_a_rate_each_servers_count_is_its_targets_json_count() {
    let Some(origins) = Origins::start() else { return };
    let _load = load_lock();
    let (run, served) = origins.run(&["-t2", "-c8", "-d1s", "-R400", "--json"]);
    let report = json(&run);
    let counts = json_counts(&report, &origins.labels());
    origins.check(&counts, served, &run);
    // One plan in the file's order: the targets share it evenly (each
    // thread starts at its own target, so they may differ by a few).
    let (least, most) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(most - least <= 4, "{counts:?}\n{run}");
    for target in report["targets"].as_array().unwrap() {
        assert!(target["corrected_p99_us"].as_u64().unwrap() > 0, "{target}");
        assert_eq!(target["status_codes"]["200"], target["requests"], "{target}");
        assert_eq!(target["errors"], 0, "{target}");
    }
}

#[test]
fn merge_adds_up_the_targets() {
    let Some(origins) = Origins::start() else { return };
    let _load = load_lock();
    let dir = origins.dir.path();
    let saved = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (first, second) = (saved("one.json"), saved("two.json"));
    let mut served = [0; 3];
    for file in [&first, &second] {
        let (_, during) = origins.run(&["-t1", "-c3", "-d300ms", "--json", "-o", file]);
        (0..3).for_each(|i| served[i] += during[i]);
    }
    let read = |file: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(Path::new(file)).unwrap()).unwrap()
    };
    let (one, two) = (read(&first), read(&second));
    let merged = pace(&["merge", "--json", &first, &second], LIMIT);
    merged.assert_ok();
    let merged = json(&merged);
    let labels = origins.labels();
    let counts = json_counts(&merged, &labels);
    let sums: Vec<u64> = json_counts(&one, &labels)
        .iter()
        .zip(json_counts(&two, &labels))
        .map(|(a, b)| a + b)
        .collect();
    assert_eq!(counts, sums);
    let run = pace(&["merge", &first, &second], LIMIT);
    origins.check(&counts, served, &run);
    // The merged histogram holds both: its p99 lies between theirs.
    for i in 0..4 {
        let p99 = |report: &Value| report["targets"][i]["corrected_p99_us"].as_u64().unwrap();
        let (a, b) = (p99(&one), p99(&two));
        assert!((a.min(b)..=a.max(b)).contains(&p99(&merged)), "{i}: {a} {b} {merged}");
    }
    // The text of the merge shows the table too, and the connections per
    // origin of both runs (one each to every origin, twice).
    let line = format!(
        "  connections per origin: 2 to http://{}, 2 to http://{}, 2 to http://{}\n",
        origins.a.addr(),
        origins.b.addr(),
        origins.nginx.addr
    );
    assert!(run.stdout.contains(&line), "{run}");
    let rows = text_rows(&run);
    assert_eq!(labels.iter().map(|label| rows[label]).collect::<Vec<_>>(), counts);
}

#[test]
fn too_few_connections_for_the_origins_is_a_usage_error() {
    let Some(origins) = Origins::start() else { return };
    let run = pace(&["--targets", &origins.file, "-t2", "-c5", "-d1s"], LIMIT);
    run.assert_code(1);
    assert!(
        run.stderr.contains(
            "the targets name 3 origins (scheme, host and port) and every thread needs a \
             connection to each: with -t 2, -c must be at least 6"
        ),
        "{run}"
    );
}

#[test]
fn an_origin_that_fails_its_check_is_named_before_the_run() {
    let server = serve(serve_options());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("targets.txt");
    // The second origin speaks plain HTTP to an https:// target.
    let text = format!("GET http://{0}/a\nGET https://{0}/b\n", server.addr());
    std::fs::write(&file, text).unwrap();
    let run = pace(&["--targets", file.to_str().unwrap(), "-t1", "-c2", "-d1s"], LIMIT);
    run.assert_code(2);
    let origin = format!("pace: origin https://{}: TLS handshake", server.addr());
    assert!(run.stderr.contains(&origin), "{run}");
    assert_eq!(server.stats().requests, 0, "nothing was sent: {run}");
}

#[test]
fn a_slow_origin_does_not_hold_up_the_others() {
    // One connection each: the first origin answers after 300 ms, so at
    // 20 requests/s its requests (every other one) queue for its single
    // connection. The second origin's go at their times all the same.
    let (slow, fast) = (serve(serve_options()), serve(serve_options()));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("targets.txt");
    let text = format!("GET http://{}/delay/300\nGET http://{}/\n", slow.addr(), fast.addr());
    std::fs::write(&file, text).unwrap();
    let _load = load_lock();
    let args = ["--targets", file.to_str().unwrap(), "-t1", "-c2", "-d1s", "-R20", "--json"];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let report = json(&run);
    let targets = report["targets"].as_array().expect("targets");
    let (slow_row, fast_row) = (&targets[0], &targets[1]);
    // The fast origin's 10 requests were each answered at once: waiting
    // behind the slow origin's queue would put hundreds of ms into its
    // corrected latency (the model: 0 ms of its own, so 100 ms of room is
    // noise only).
    assert_eq!(fast_row["requests"], 10, "{run}");
    assert_eq!(fast_row["unsent"], 0, "{run}");
    let fast_p99 = fast_row["corrected_p99_us"].as_u64().unwrap();
    assert!(fast_p99 < 100_000, "the fast origin waited: {fast_p99} us\n{run}");
    // The slow origin answered about 3 in the second (1 s / 300 ms, plus
    // the one in flight at the end); the rest of its 10 were never sent
    // and are its own unsent, with the run's.
    let slow_requests = slow_row["requests"].as_u64().unwrap();
    let slow_unsent = slow_row["unsent"].as_u64().unwrap();
    assert!((2..=5).contains(&slow_requests), "{run}");
    assert_eq!(slow_requests + slow_unsent, 10, "{run}");
    assert_eq!(report["unsent"].as_u64().unwrap(), slow_unsent, "{run}");
    assert!(slow_row["corrected_p99_us"].as_u64().unwrap() >= 300_000, "{run}");
    assert_eq!(slow.stats().requests, slow_requests, "{run}");
}
