//! Scale-out: shards of one plan, each from its own host, send that plan
//! once between them, on one even schedule the server sees; `pace merge`
//! adds their results exactly (checked against Python hdrh, an independent
//! HdrHistogram implementation) and refuses what cannot be added.
//!
//! The hosts are network namespaces the test creates (a bridge in the
//! server's namespace, one veth per generator), so the server tells the
//! shards apart by their addresses. Where namespaces cannot be made (not
//! root, no `ip`), the shards run on loopback and only the address check
//! is left out.

#[path = "common/arrivals.rs"]
mod arrivals;
mod common;

use std::fs::{self, File};
use std::net::{IpAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arrivals::ArrivalServer;
use common::{
    default_server, hdrh_available, load_lock, pace, python, serve, serve_options, spawn_pace,
    spawn_pace_in, url, Run, Running,
};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

/// The server's address on the namespaces' bridge; generator `i` is at
/// `10.77.0.(11 + i)`.
const SERVER_IP: &str = "10.77.0.1";

/// Network namespaces made for one test, deleted when dropped.
struct Hosts {
    server: String,
    generators: Vec<String>,
}

impl Hosts {
    /// A server namespace with a bridge at [`SERVER_IP`]/24 and `count`
    /// generator namespaces, each joined to the bridge by a veth pair.
    /// `None` (said on stderr) when the namespaces cannot be made.
    fn create(count: usize) -> Option<Hosts> {
        let id = std::process::id();
        let hosts = Hosts {
            server: format!("pace{id}s"),
            generators: (0..count).map(|i| format!("pace{id}g{i}")).collect(),
        };
        let mut steps = vec![
            format!("netns add {}", hosts.server),
            format!("-n {} link set lo up", hosts.server),
            format!("-n {} link add br0 type bridge", hosts.server),
            format!("-n {} addr add {SERVER_IP}/24 dev br0", hosts.server),
            format!("-n {} link set br0 up", hosts.server),
        ];
        for (i, generator) in hosts.generators.iter().enumerate() {
            steps.extend([
                format!("netns add {generator}"),
                format!("-n {generator} link set lo up"),
                format!(
                    "link add v{i} netns {} type veth peer name eth0 netns {generator}",
                    hosts.server
                ),
                format!("-n {} link set v{i} master br0 up", hosts.server),
                format!("-n {generator} addr add 10.77.0.{}/24 dev eth0", 11 + i),
                format!("-n {generator} link set eth0 up"),
            ]);
        }
        for step in &steps {
            let done =
                Command::new("ip").args(step.split_whitespace()).stdin(Stdio::null()).output();
            match done {
                Ok(out) if out.status.success() => {}
                failed => {
                    let why = match failed {
                        Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
                        Err(e) => e.to_string(),
                    };
                    eprintln!(
                        "\n!!!!!!!!!! no network namespaces (ip {step}: {why}): the shards \
                         run on loopback, and which shard sent what is not checked !!!!!!!!!!\n"
                    );
                    return None; // `hosts` drops: what was made is deleted.
                }
            }
        }
        Some(hosts)
    }

    fn generator_ip(i: usize) -> IpAddr {
        format!("10.77.0.{}", 11 + i).parse().unwrap()
    }

    /// A listener on [`SERVER_IP`] inside the server's namespace: bound by
    /// a thread that joined the namespace (a socket stays in the namespace
    /// it was made in, whichever thread then uses it).
    fn listen(&self) -> TcpListener {
        let path = format!("/run/netns/{}", self.server);
        std::thread::spawn(move || {
            let netns = File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
            // SAFETY: setns on a namespace file we hold open; it changes
            // only this short-lived thread's network namespace.
            let rc = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
            TcpListener::bind((SERVER_IP, 0)).expect("bind in the server's namespace")
        })
        .join()
        .expect("bind thread")
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of each veth, and the peer.
        for name in self.generators.iter().chain([&self.server]) {
            let _ = Command::new("ip").args(["netns", "del", name]).stderr(Stdio::null()).status();
        }
    }
}

/// A wall-clock start `lead` from now, in Unix seconds (`--start-at`).
fn start_in(lead: Duration) -> String {
    let at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + lead;
    format!("{}.{:03}", at.as_secs(), at.subsec_millis())
}

fn json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
    // The final report is the last line (-p adds period lines before it).
    let last = text.lines().last().unwrap_or_else(|| panic!("{path:?} is empty"));
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{path:?} is not JSON ({e}): {last}"))
}

fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| panic!("no {pointer} in {v}"))
}

/// Compares the histogram encoded in argv[1] with the sum of those in
/// argv[2:], value by value: prints `same` and the total count, or the
/// first difference.
const SUM_CHECK: &str = r#"
import sys
from hdrh.histogram import HdrHistogram
merged = HdrHistogram.decode(sys.argv[1])
parts = [HdrHistogram.decode(e) for e in sys.argv[2:]]
total = HdrHistogram(1, max(p.get_max_value() for p in parts) * 2 + 2, merged.significant_figures)
for p in parts:
    total.add(p)
def counts(h):
    return [(v.value_iterated_to, v.count_at_value_iterated_to) for v in h.get_recorded_iterator()]
a, b = counts(merged), counts(total)
if a == b:
    print("same", merged.get_total_count())
else:
    diff = next(((x, y) for x, y in zip(a, b) if x != y), (len(a), len(b)))
    print("differ", diff)
"#;

/// Asserts that the merged report's histogram `field` is the sum of the
/// shards' (Python hdrh decodes and adds them).
fn assert_sum_of_parts(merged: &Value, parts: &[Value], field: &str) {
    let mut args = vec![merged[field].as_str().unwrap_or_else(|| panic!("no {field}"))];
    args.extend(parts.iter().map(|p| p[field].as_str().unwrap()));
    let out = python(SUM_CHECK, &args);
    let total: u64 =
        parts.iter().map(|p| u64_at(p, &format!("/latency/{}/count", view(field)))).sum();
    assert_eq!(out.trim(), format!("same {total}"), "{field}");
}

fn view(field: &str) -> &'static str {
    if field == "hist" {
        "corrected"
    } else {
        "uncorrected"
    }
}

/// `pace merge args...` to the end.
fn merge(args: &[&str]) -> Run {
    let mut all = vec!["merge"];
    all.extend(args);
    pace(&all, LIMIT)
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Three shards of `-R1500 -d2s` (500 requests a second each, from their
/// own host), started together by `--start-at`: the server gets the plan's
/// 3000 requests once each, on one grid of 1/1500 s, shard `i` sending
/// requests `i, i+3, ...` of it. `pace merge` of their results adds up to
/// the whole: counts, and histograms value by value.
#[test]
fn three_shards_send_one_plan_and_merge_exactly() {
    let _load = load_lock();
    // Where namespaces cannot be made (no root, or a container without
    // the right to make them), loopback: the plan and the merge are still
    // checked, only not which host sent what.
    let hosts = Hosts::create(3);
    let server = match &hosts {
        Some(hosts) => ArrivalServer::on(hosts.listen()),
        None => ArrivalServer::start(),
    };
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let start_at = start_in(Duration::from_secs(2));
    let outputs: Vec<PathBuf> =
        (0..3).map(|i| dir.path().join(format!("shard-{i}.json"))).collect();
    let shards: Vec<Running> = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            let args = [
                "-t1",
                "-c6",
                "-d2s",
                "-R1500",
                "--shard",
                &shard,
                "--start-at",
                &start_at,
                "-e",
                "-o",
                path_str(&outputs[i]),
                &url,
            ];
            match &hosts {
                Some(hosts) => spawn_pace_in(&hosts.generators[i], &args),
                None => spawn_pace(&args),
            }
        })
        .collect();
    let runs: Vec<Run> = shards.into_iter().map(|shard| shard.wait(LIMIT)).collect();
    for run in &runs {
        run.assert_ok();
    }
    let parts: Vec<Value> = outputs.iter().map(|path| json(path)).collect();
    let sent: u64 = parts.iter().map(|p| u64_at(p, "/requests")).sum();
    let arrivals = server.arrivals_from();
    let runs_text = runs.iter().map(Run::to_string).collect::<Vec<_>>().join("\n");
    assert_eq!(arrivals.len() as u64, sent, "the server got what the shards counted\n{runs_text}");
    assert!((2_990..=3_000).contains(&sent), "{sent} of the plan's 3000\n{runs_text}");
    for (i, part) in parts.iter().enumerate() {
        assert_eq!(u64_at(part, "/shard/index"), i as u64);
        assert!((990..=1_000).contains(&u64_at(part, "/requests")), "shard {i}\n{runs_text}");
    }

    // The plan started at --start-at: its first request arrived then (the
    // shards connected before it). Same machine, same clock; the bound is
    // a busy machine's wake-up, far from the 2 s the shards waited.
    let first = server.first_arrival_unix_ns().unwrap() as f64 / 1e9;
    let start: f64 = start_at.parse().unwrap();
    assert!((-0.001..0.05).contains(&(first - start)), "first arrival {first}, start {start}");

    // One grid: the k-th arrival is near k/R from the first. Shards that
    // each started on their own would sit at unrelated phases, and at most
    // one shard's arrivals, a third, would be on the grid. Medians, as a
    // machine busy elsewhere delays some sends (a fifth of them, at a load
    // of three runnable threads per core) by more than a quarter of a gap.
    let gap = 1.0 / 1500.0;
    let residuals: Vec<f64> =
        arrivals.iter().enumerate().map(|(k, (t, _))| t - k as f64 * gap).collect();
    let offset = median(residuals.clone());
    let off_grid = median(residuals.iter().map(|r| (r - offset).abs()).collect());
    assert!(off_grid < gap / 4.0, "arrivals {:.0} us off the grid (median)", off_grid * 1e6);

    // Shard i sends requests i, i+3, ...: its j-th arrival is request
    // i + 3j, on the grid where the other shards' are.
    if hosts.is_some() {
        let phases: Vec<f64> = (0..3)
            .map(|i| {
                let own = arrivals.iter().filter(|(_, from)| *from == Hosts::generator_ip(i));
                median(own.enumerate().map(|(j, (t, _))| t - (i + 3 * j) as f64 * gap).collect())
            })
            .collect();
        for phase in &phases {
            assert!((phase - phases[0]).abs() < gap / 4.0, "shards' phases (s): {phases:?}");
        }
    }

    // The merge adds up to the whole, exactly.
    let files: Vec<&str> = outputs.iter().map(|p| path_str(p)).collect();
    let mut args = vec!["-e"];
    args.extend(&files);
    let merged = merge(&args);
    merged.assert_ok();
    let whole: Value = serde_json::from_str(merged.stdout.trim()).expect("one JSON report");
    assert_eq!(u64_at(&whole, "/requests"), sent, "{merged}");
    assert_eq!(whole["target_requests_per_sec"], 1500.0, "{merged}");
    assert_eq!(whole["merged_from"].as_array().map(Vec::len), Some(3), "{merged}");
    assert_eq!(whole["merge_notes"], Value::Array(vec![]), "{merged}");
    let bytes: u64 = parts.iter().map(|p| u64_at(p, "/bytes")).sum();
    assert_eq!(u64_at(&whole, "/bytes"), bytes);
    if hdrh_available() {
        assert_sum_of_parts(&whole, &parts, "hist");
        assert_sum_of_parts(&whole, &parts, "uncorrected_hist");
    }

    let text = merge(&files);
    text.assert_ok();
    assert!(text.stdout.starts_with("Merged the 3 shards of one plan @ "), "{text}");
    assert!(text.stdout.contains(&format!("{sent} requests in ")), "{text}");
    assert!(text.stdout.contains("Per shard:"), "{text}");
    drop(hosts);
}

fn median(mut values: Vec<f64>) -> f64 {
    assert!(!values.is_empty(), "no values");
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Two runs against different servers (one answers at once, one after
/// 2 ms) merge into one result whose percentiles are those of both runs'
/// latencies together, and whose plan is both plans.
#[test]
fn independent_runs_merge_into_their_sum() {
    let _load = load_lock();
    let fast = default_server();
    let slow =
        serve(pace::serve::ServeOptions { latency: Duration::from_millis(2), ..serve_options() });
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, server) in [("fast", &fast), ("slow", &slow)] {
        let file = dir.path().join(format!("{name}.json"));
        let target = url(server.addr(), "/");
        pace(&["-t1", "-c4", "-d1s", "-R200", "-e", "-o", path_str(&file), &target], LIMIT)
            .assert_ok();
        files.push(file);
    }
    let parts: Vec<Value> = files.iter().map(|f| json(f)).collect();
    let names: Vec<&str> = files.iter().map(|f| path_str(f)).collect();
    let merged = merge(&["-e", "--percentiles", "50,90,99", names[0], names[1]]);
    merged.assert_ok();
    let whole: Value = serde_json::from_str(merged.stdout.trim()).expect("one JSON report");
    let sum = |pointer: &str| parts.iter().map(|p| u64_at(p, pointer)).sum::<u64>();
    assert_eq!(u64_at(&whole, "/requests"), sum("/requests"), "{merged}");
    assert_eq!(whole["target_requests_per_sec"], 400.0, "{merged}");
    // Half the latencies are over 2 ms (the slow server's), so the 90th
    // percentile of both together is too.
    let p90 = u64_at(&whole, "/latency/corrected/percentiles_us/90");
    assert!(p90 >= 2_000, "p90 {p90} us: the slow run's half\n{merged}");
    if hdrh_available() {
        assert_sum_of_parts(&whole, &parts, "hist");
        let hist = whole["hist"].as_str().unwrap();
        let out = python(
            "import sys\nfrom hdrh.histogram import HdrHistogram\n\
             h = HdrHistogram.decode(sys.argv[1])\n\
             print(*(h.get_value_at_percentile(p) for p in (50, 90, 99)))",
            &[hist],
        );
        let expected: Vec<u64> = out.split_whitespace().map(|v| v.parse().unwrap()).collect();
        let reported: Vec<u64> = ["50", "90", "99"]
            .iter()
            .map(|p| u64_at(&whole, &format!("/latency/corrected/percentiles_us/{p}")))
            .collect();
        // hdrh reports a bucket's highest equivalent value, pace (like
        // wrk2) the same: the two agree to the microsecond.
        assert_eq!(reported, expected, "{merged}");
    }
    let text = merge(&names);
    text.assert_ok();
    assert!(text.stdout.starts_with("Merged 2 runs @ "), "{text}");
    assert!(text.stdout.contains("Per run:"), "{text}");
}

/// HdrHistogram logs (`--hlog`) of two runs merge into one distribution
/// holding every latency of both.
#[test]
fn hdrhistogram_logs_merge() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let mut logs = Vec::new();
    let mut requests = 0;
    for name in ["a", "b"] {
        let log = dir.path().join(format!("{name}.hlog"));
        let run =
            pace(&["-t1", "-c2", "-d1s", "-R100", "-e", "--hlog", path_str(&log), &target], LIMIT);
        run.assert_ok();
        let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        requests += u64_at(&v, "/latency/corrected/count");
        logs.push(log);
    }
    let names: Vec<&str> = logs.iter().map(|p| path_str(p)).collect();
    let merged = merge(&["-e", names[0], names[1]]);
    merged.assert_ok();
    let v: Value = serde_json::from_str(merged.stdout.trim()).unwrap();
    assert_eq!(v["report"], "merged_logs");
    assert_eq!(u64_at(&v, "/count"), requests, "{merged}");
    let text = merge(&names);
    text.assert_ok();
    assert!(text.stdout.starts_with("Merged 2 HdrHistogram logs"), "{text}");
    assert!(
        text.stdout.contains("Latency Distribution (HdrHistogram - Recorded Latency)"),
        "{text}"
    );
}

/// What cannot be merged is refused with the reason (exit 2), a wrong
/// command line is a usage error (exit 1); a missing shard is merged with
/// a note saying so.
#[test]
fn merge_refuses_what_does_not_add_up() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let start_at = start_in(Duration::from_secs(1));
    let shard = |i: usize, rate: &str| {
        let file = dir.path().join(format!("s{i}-{rate}.json"));
        let spec = format!("{i}/3");
        let args =
            ["-t1", "-c3", "-d500ms", "-R", rate, "--shard", &spec, "--start-at", &start_at, "-e"];
        let mut args = args.to_vec();
        args.extend(["-o", path_str(&file), &target]);
        (spawn_pace(&args), file)
    };
    let started = [shard(0, "300"), shard(1, "300"), shard(2, "600")];
    let files: Vec<PathBuf> = started
        .into_iter()
        .map(|(running, file)| {
            running.wait(LIMIT).assert_ok();
            file
        })
        .collect();
    let [s0, s1, other_plan] = [0, 1, 2].map(|i| path_str(&files[i]).to_string());

    let refused = |args: &[&str], says: &str| {
        let run = merge(args);
        run.assert_code(2);
        assert!(run.stderr.contains(says), "expected {says:?}\n{run}");
        assert!(run.stdout.is_empty(), "{run}");
    };
    refused(&[&s0, &s1, &other_plan], "plan");
    refused(&[&s0, &s0], "twice");
    refused(&[&s0, "/nonexistent/run.json"], "/nonexistent/run.json");
    let garbage = dir.path().join("garbage.json");
    fs::write(&garbage, "{\"schema_version\": 1, \"report\": \"final\"\n").unwrap();
    refused(&[&s0, path_str(&garbage)], "garbage.json");

    for usage in [&[][..], &["--bogus", &s0], &["-e"]] {
        merge(usage).assert_code(1);
    }

    let missing = merge(&[&s0, &s1]);
    missing.assert_ok();
    assert!(missing.stdout.starts_with("Merged 2 of the 3 shards of one plan"), "{missing}");
    assert!(missing.stderr.contains("shard 2/3"), "a note names the missing shard\n{missing}");
}
