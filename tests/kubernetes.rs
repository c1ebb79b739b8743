//! deploy/kubernetes on a real cluster: run.sh's Indexed Job on the
//! single-node Kubernetes of `deploy/kubernetes/local-cluster.sh up`, its
//! pods on the host network sending to a server on 127.0.0.1.
//!
//! - Three shards of one plan merge to what the server counted, request
//!   for request, each shard its third, all from the same start; a
//!   Prometheus with Kubernetes discovery and the relabelling of
//!   deploy/kubernetes/README.md finds the pods by their annotations and
//!   sums them while they run.
//! - What goes wrong on a cluster is said in words: an image that cannot be
//!   had, a pod no node has room for, a shard that fails, a start time
//!   already past when the pods start.
//!
//! The tests need a cluster, so `cargo test` leaves them out (ignored);
//! `.ci/run` brings one up after the suite and runs them:
//!
//! ```sh
//! deploy/kubernetes/local-cluster.sh up && eval "$(deploy/kubernetes/local-cluster.sh env)"
//! PACE_PROMETHEUS_K8S=target/go/bin/prometheus-k8s \
//!     cargo test --release --test kubernetes -- --ignored --test-threads 1
//! ```
//!
//! `PACE_PROMETHEUS_K8S` is a Prometheus built with Kubernetes discovery
//! (Debian's has none): `.ci/run` builds it from tests/prometheus-k8s.

mod common;

use std::fs;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{default_server, http_get, load_lock, url, DieWithTest, Report};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn run_sh() -> PathBuf {
    Path::new(REPO).join("deploy/kubernetes/run.sh")
}

/// The kubeconfig of the cluster, or a panic that says how to get one.
fn kubeconfig() -> String {
    std::env::var("KUBECONFIG").ok().filter(|k| Path::new(k).exists()).unwrap_or_else(|| {
        panic!(
            "no cluster: run deploy/kubernetes/local-cluster.sh up, then \
             eval \"$(deploy/kubernetes/local-cluster.sh env)\""
        )
    })
}

fn kubectl(args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new("kubectl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl on the PATH (local-cluster.sh env)");
    if let Some(text) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A job name of its own for each run (run.sh's default has one-second
/// resolution, and names of deleted Jobs linger a moment).
fn job_name(what: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    format!("pace-{what}-{}", nanos.as_millis() % 1_000_000_000)
}

/// run.sh, its output in files of `dir`.
struct RunSh {
    child: Child,
    dir: PathBuf,
}

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {:?}\n--- stdout\n{}--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

impl RunSh {
    fn start(dir: &Path, options: &[&str], pace_args: &[&str]) -> RunSh {
        let out = dir.join("out");
        let child = Command::new("bash")
            .arg(run_sh())
            .args(["--pace", env!("CARGO_BIN_EXE_pace"), "--out"])
            .arg(&out)
            .args(options)
            .arg("--")
            .args(pace_args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(fs::File::create(dir.join("stdout")).unwrap())
            .stderr(fs::File::create(dir.join("stderr")).unwrap())
            .die_with_test()
            .spawn()
            .expect("start run.sh");
        RunSh { child, dir: dir.to_path_buf() }
    }

    fn finished(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Waits for run.sh (which gives up on its own at `--timeout`).
    fn wait(mut self, limit: Duration) -> Finished {
        let deadline = Instant::now() + limit;
        while !self.finished() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("run.sh did not end within {limit:?}:\n{}", self.read(None));
            }
            thread::sleep(Duration::from_millis(100));
        }
        let code = self.child.wait().unwrap().code();
        self.read(code)
    }

    fn read(&self, code: Option<i32>) -> Finished {
        let read = |name: &str| fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        Finished { code, stdout: read("stdout"), stderr: read("stderr") }
    }
}

// ----- Prometheus with Kubernetes discovery ------------------------------------------

/// The scrape job of deploy/kubernetes/README.md for pods on the host
/// network: its `relabel_configs` block, as documented, under a
/// Kubernetes pod discovery of this cluster.
fn scrape_config(kubeconfig: &str) -> String {
    let readme = fs::read_to_string(Path::new(REPO).join("deploy/kubernetes/README.md")).unwrap();
    let block = readme
        .split("```yaml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .find(|block| block.starts_with("relabel_configs:"))
        .expect("deploy/kubernetes/README.md has a ```yaml block of relabel_configs");
    let relabel: String = block.lines().map(|line| format!("    {line}\n")).collect();
    format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
         scrape_configs:\n  - job_name: pace-pods\n    kubernetes_sd_configs:\n\
         \x20     - role: pod\n        kubeconfig_file: {kubeconfig}\n{relabel}"
    )
}

struct Prometheus {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(kubeconfig: &str) -> Prometheus {
        let binary = std::env::var("PACE_PROMETHEUS_K8S").unwrap_or_else(|_| {
            panic!(
                "PACE_PROMETHEUS_K8S: a Prometheus with Kubernetes discovery (Debian's has none); \
                 .ci/run builds it from tests/prometheus-k8s"
            )
        });
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("prometheus.yml"), scrape_config(kubeconfig)).unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let child = Command::new(binary)
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.path().join("prometheus.log")).unwrap())
            .die_with_test()
            .spawn()
            .expect("start the Prometheus of PACE_PROMETHEUS_K8S");
        let mut prometheus = Prometheus { child, addr, dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = prometheus.child.try_wait() {
                panic!("prometheus exited ({status}):\n{}", prometheus.log());
            }
            if http_get(addr, "/-/ready").is_some_and(|r| r.split(' ').nth(1) == Some("200")) {
                return prometheus;
            }
            assert!(Instant::now() < deadline, "prometheus not ready:\n{}", prometheus.log());
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The value of a query that gives one number, if it gives one now.
    fn value(&self, query: &str) -> Option<f64> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let response = http_get(self.addr, &format!("/api/v1/query?query={encoded}"))?;
        let body: Value = serde_json::from_str(response.split("\r\n\r\n").nth(1)?).ok()?;
        body["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ----- the tests --------------------------------------------------------------------

#[test]
#[ignore = "needs a cluster: deploy/kubernetes/local-cluster.sh up (see the module's doc)"]
fn three_shards_merge_to_the_servers_count_and_prometheus_sums_them_live() {
    let _load = load_lock();
    let kubeconfig = kubeconfig();
    let server = default_server();
    let prometheus = Prometheus::start(&kubeconfig);
    let dir = tempfile::tempdir().unwrap();
    let name = job_name("merge");
    let target = url(server.addr(), "/");
    let mut run = RunSh::start(
        dir.path(),
        &[
            "--image",
            "pace:local",
            "--host-network",
            "--metrics",
            "--metrics-linger",
            "5",
            "--shards",
            "3",
            "--lead",
            "20",
            "--timeout",
            "60",
            "--name",
            &name,
        ],
        &["-t1", "-c6", "-d5s", "-R600", &target],
    );
    // The sum of the shards' request counters, as Prometheus has it, while
    // run.sh runs: (seconds since the start, value).
    let started = Instant::now();
    let mut sums = Vec::new();
    let mut targets_up = 0.0f64;
    while !run.finished() {
        assert!(started.elapsed() < Duration::from_secs(180), "run.sh did not end");
        if let Some(sum) = prometheus.value("sum(pace_requests_total)") {
            if sums.last().is_none_or(|&(_, last)| last != sum) {
                sums.push((started.elapsed().as_secs_f64().round(), sum));
            }
        }
        if let Some(up) = prometheus.value("count(up{job=\"pace-pods\"} == 1)") {
            targets_up = targets_up.max(up);
        }
        thread::sleep(Duration::from_millis(250));
    }
    let finished = run.wait(Duration::from_secs(10));
    assert_eq!(finished.code, Some(0), "{finished}");

    // The merged report has every request the server counted.
    let merged = Report::new(&finished.stdout);
    assert_eq!(merged.requests(), 3000, "{finished}");
    assert_eq!(server.stats().requests, 3000, "the server's count\n{finished}");
    // Each shard its third, all from the one start time.
    let mut starts = Vec::new();
    for i in 0..3 {
        let file = dir.path().join(format!("out/shard-{i}.json"));
        let text = fs::read_to_string(&file).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["requests"], 1000, "shard {i}: {finished}");
        assert_eq!(last["shard"]["index"], i, "{}", file.display());
        starts.push(last["start_at_unix_s"].as_f64().unwrap());
    }
    assert!(starts.iter().all(|s| *s == starts[0]), "one start time: {starts:?}");
    // Prometheus found the three pods by their annotations, and its sum
    // rose while they sent: a value strictly between none and all of them,
    // then all of them from the pods' final figures (the linger).
    assert_eq!(targets_up, 3.0, "pods scraped; sums {sums:?}\n{}", prometheus.log());
    assert!(
        sums.iter().any(|&(_, sum)| sum > 0.0 && sum < 3000.0),
        "a live sum during the run: {sums:?}"
    );
    assert_eq!(sums.iter().map(|&(_, sum)| sum).fold(0.0, f64::max), 3000.0, "{sums:?}");
    eprintln!("shards' start {starts:?}; Prometheus' sum over the run (s, requests): {sums:?}");
}

#[test]
#[ignore = "needs a cluster: deploy/kubernetes/local-cluster.sh up (see the module's doc)"]
fn what_goes_wrong_on_the_cluster_is_said_in_words() {
    let _load = load_lock();
    kubeconfig();
    let server = default_server();
    let target = url(server.addr(), "/");
    let pace_args = ["-t1", "-c2", "-d2s", "-R100", &target];
    let run = |what: &str, options: &[&str], pace_args: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let name = job_name(what);
        let mut all = vec!["--host-network", "--shards", "1", "--timeout", "15", "--name", &name];
        all.extend_from_slice(options);
        let finished = RunSh::start(dir.path(), &all, pace_args).wait(Duration::from_secs(120));
        (finished, dir)
    };

    // An image the node cannot have: a registry on a closed loopback port.
    let (finished, _dir) =
        run("image", &["--image", "127.0.0.1:1/pace:missing", "--lead", "5"], &pace_args);
    assert_eq!(finished.code, Some(2), "{finished}");
    assert!(finished.stderr.contains("past the start time and still pending"), "{finished}");
    assert!(finished.stderr.contains("its container is waiting: "), "{finished}");
    assert!(finished.stderr.contains("127.0.0.1:1/pace:missing"), "{finished}");

    // A pod no node has room for: another pod holds all but 500m of the
    // node's CPU, and the shard asks for a whole one. Once run.sh has said
    // so, the other pod goes: the shard's pod starts, after its start time,
    // and refuses to send a plan already under way.
    let allocatable =
        kubectl(&["get", "nodes", "-o", "jsonpath={.items[0].status.allocatable.cpu}"], None);
    let millicores = match allocatable.trim().strip_suffix('m') {
        Some(m) => m.parse::<u64>().unwrap(),
        None => allocatable.trim().parse::<u64>().unwrap() * 1000,
    };
    let hog = job_name("hog");
    kubectl(
        &["create", "-f", "-"],
        Some(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {hog}\nspec:\n  hostNetwork: true\n\
             \x20 containers:\n    - name: pause\n      image: pause:local\n\
             \x20     imagePullPolicy: Never\n      resources:\n        requests:\n\
             \x20         cpu: {}m\n",
            millicores - 500
        )),
    );
    let dir = tempfile::tempdir().unwrap();
    let name = job_name("room");
    let options = [
        "--image",
        "pace:local",
        "--host-network",
        "--cpu",
        "1",
        "--lead",
        "3",
        "--timeout",
        "60",
        "--name",
        &name,
    ];
    let mut late = RunSh::start(dir.path(), &options, &pace_args);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !late.finished() && !late.read(None).stderr.contains("not scheduled: ") {
        assert!(Instant::now() < deadline, "{}", late.read(None));
        thread::sleep(Duration::from_millis(200));
    }
    kubectl(&["delete", "pod", &hog, "--wait=false"], None);
    let finished = late.wait(Duration::from_secs(120));
    assert_eq!(finished.code, Some(2), "{finished}");
    assert!(finished.stderr.contains("past the start time and still pending"), "{finished}");
    assert!(finished.stderr.contains("not scheduled: 0/1 nodes are available"), "{finished}");
    assert!(finished.stderr.contains("Insufficient cpu"), "{finished}");
    assert!(finished.stderr.contains("is in the past"), "{finished}");

    // A shard that fails: its script errs; its words reach run.sh's.
    let files = tempfile::tempdir().unwrap();
    let script = files.path().join("fails.lua");
    fs::write(&script, "response = function(status)\n  error(\"boom on purpose\")\nend\n").unwrap();
    let (finished, _dir) = run(
        "fails",
        &["--image", "pace:local", "--lead", "8", "--file", script.to_str().unwrap()],
        &["-t1", "-c2", "-d2s", "-R100", "-s", "fails.lua", &target],
    );
    assert_eq!(finished.code, Some(2), "{finished}");
    assert!(finished.stderr.contains("exit code 3"), "the script's exit code: {finished}");
    assert!(finished.stderr.contains("shard 0 said"), "{finished}");
    assert!(finished.stderr.contains("boom on purpose"), "{finished}");
}
