//! The Kubernetes deployment (`deploy/kubernetes/`) without a cluster.
//!
//! - The manifest `run.sh --render-only` prints is the Indexed Job the
//!   README describes, and the real pace accepts the arguments it gives the
//!   pods, exactly as typed after Kubernetes' own `$(VAR)` expansion.
//! - `run.sh` itself, with a stand-in `kubectl` that plays the cluster:
//!   the test starts the shards from the manifest run.sh created, as the Job
//!   controller would (the real pace against the built-in server, at the
//!   start time run.sh chose), and run.sh collects their JSON reports from
//!   their logs and merges them; a failed Job, a Job that never ends and
//!   wrong command lines end it with clear messages.
//! - `run.sh` is clean under shellcheck, and the image runs pace as the
//!   user the manifest asks for.

mod common;

use std::fs::{self, File};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

use common::{default_server, in_ci, load_lock, url};

const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/kubernetes");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// How every JSON report line of pace starts; run.sh keeps these lines of a
/// pod's log and leaves pace's messages and what scripts print.
const REPORT_LINE: &str = "{\"schema_version\":";

fn run_sh() -> PathBuf {
    Path::new(DEPLOY).join("run.sh")
}

// ----- running run.sh -------------------------------------------------------------------

/// What a finished run.sh left behind.
struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run.sh: {}\n--- stdout ---\n{}--- stderr ---\n{}--------------",
            self.status, self.stdout, self.stderr
        )
    }
}

/// `bash run.sh args` started in `dir` (outputs into files there), with
/// `env` set and `PACE_*` variables of the caller's environment removed.
struct RunSh {
    child: Child,
    dir: PathBuf,
    started: Instant,
}

impl RunSh {
    fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> RunSh {
        let mut command = Command::new(bash());
        command.arg(run_sh()).args(args).current_dir(dir).stdin(Stdio::null());
        for (name, _) in std::env::vars() {
            if name.starts_with("PACE_") {
                command.env_remove(name);
            }
        }
        command
            .envs(env.iter().copied())
            .stdout(File::create(dir.join("run.stdout")).unwrap())
            .stderr(File::create(dir.join("run.stderr")).unwrap());
        let child = command.spawn().expect("start bash run.sh");
        RunSh { child, dir: dir.to_path_buf(), started: Instant::now() }
    }

    /// Waits for the exit; past `limit` run.sh is killed and the test fails.
    fn wait(mut self, limit: Duration) -> Finished {
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Finished {
                    status,
                    stdout: fs::read_to_string(self.dir.join("run.stdout")).unwrap(),
                    stderr: fs::read_to_string(self.dir.join("run.stderr")).unwrap(),
                };
            }
            if self.started.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "run.sh did not finish within {limit:?}\n--- stderr ---\n{}",
                    fs::read_to_string(self.dir.join("run.stderr")).unwrap_or_default()
                );
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RunSh {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// bash, found on the PATH (tests run run.sh with a PATH of their own).
fn bash() -> PathBuf {
    which("bash").expect("bash on the PATH")
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// run.sh with these arguments, which must not need kubectl.
fn run_sh_offline(args: &[&str]) -> Finished {
    let dir = tempfile::tempdir().unwrap();
    RunSh::start(dir.path(), args, &[]).wait(Duration::from_secs(30))
}

/// The manifest `run.sh --render-only OPTIONS -- PACE_ARGS` prints.
fn render(options: &[&str], pace_args: &[&str]) -> String {
    let mut args = vec!["--render-only"];
    args.extend_from_slice(options);
    args.push("--");
    args.extend_from_slice(pace_args);
    let run = run_sh_offline(&args);
    assert_eq!(run.code(), Some(0), "{run}");
    run.stdout
}

// ----- reading the manifest ---------------------------------------------------------------

/// The one YAML document of `text`.
fn yaml(text: &str) -> Yaml {
    let mut docs = YamlLoader::load_from_str(text)
        .unwrap_or_else(|e| panic!("not YAML: {e}\n--- manifest ---\n{text}"));
    assert_eq!(docs.len(), 1, "one document expected:\n{text}");
    docs.remove(0)
}

fn string<'a>(node: &'a Yaml, what: &str) -> &'a str {
    node.as_str().unwrap_or_else(|| panic!("{what} is not a string: {node:?}"))
}

fn integer(node: &Yaml, what: &str) -> i64 {
    node.as_i64().unwrap_or_else(|| panic!("{what} is not an integer: {node:?}"))
}

/// The pace container of the Job's pod template.
fn container(job: &Yaml) -> &Yaml {
    let containers = job["spec"]["template"]["spec"]["containers"].as_vec().expect("containers");
    assert_eq!(containers.len(), 1, "one container: {containers:?}");
    &containers[0]
}

/// The container's arguments, every one a string (Kubernetes refuses a
/// number or a boolean in args).
fn pod_args(job: &Yaml) -> Vec<String> {
    let args = container(job)["args"].as_vec().expect("args is a list");
    args.iter().map(|a| string(a, "an argument").to_string()).collect()
}

/// Kubernetes' expansion of a container's args (the kubelet's
/// third_party/forked/golang/expansion): `$(NAME)` of a variable in `vars`
/// is its value, `$$` is `$`, anything else stays as written.
fn k8s_expand(arg: &str, vars: &[(&str, &str)]) -> String {
    let b = arg.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b[i + 1] {
            b'$' => out.push(b'$'),
            b'(' => match b[i + 2..].iter().position(|&c| c == b')') {
                Some(len) => {
                    let name = &arg[i + 2..i + 2 + len];
                    match vars.iter().find(|(n, _)| *n == name) {
                        Some((_, value)) => out.extend_from_slice(value.as_bytes()),
                        None => out.extend_from_slice(&b[i..i + 3 + len]),
                    }
                    i += 3 + len;
                    continue;
                }
                None => out.extend_from_slice(b"$("),
            },
            other => out.extend_from_slice(&[b'$', other]),
        }
        i += 2;
    }
    String::from_utf8(out).expect("UTF-8 in, UTF-8 out")
}

/// The arguments pod `index` runs pace with.
fn shard_args(job: &Yaml, index: usize) -> Vec<String> {
    let index = index.to_string();
    pod_args(job).iter().map(|a| k8s_expand(a, &[("JOB_COMPLETION_INDEX", &index)])).collect()
}

fn rfc3339(text: &str) -> SystemTime {
    let parsed = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("'{text}' is not an RFC 3339 time: {e}"));
    SystemTime::from(parsed)
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

// ----- the manifest -------------------------------------------------------------------------

#[test]
fn the_manifest_is_an_indexed_job_of_n_shards() {
    let target = format!("http://127.0.0.1:{}/", closed_port());
    let pace_args = ["-t4", "-c300", "-d30s", "-R30000", &target];
    let before = SystemTime::now();
    let text = render(
        &[
            "--image=registry.example/team/pace:1.0",
            "--shards",
            "3",
            "--lead",
            "60",
            "--name",
            "bench-1",
            "--cpu",
            "4",
            "--memory",
            "1Gi",
            "--timeout",
            "600",
        ],
        &pace_args,
    );
    let after = SystemTime::now();
    let placeholder = text
        .match_indices("${")
        .any(|(at, _)| text[at + 2..].starts_with(|c: char| c.is_ascii_uppercase()));
    assert!(!placeholder, "a placeholder was left:\n{text}");
    let job = yaml(&text);

    assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"), "{text}");
    assert_eq!(job["kind"].as_str(), Some("Job"));
    assert_eq!(job["metadata"]["name"].as_str(), Some("bench-1"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    assert_eq!(integer(&spec["completions"], "completions"), 3);
    assert_eq!(integer(&spec["parallelism"], "parallelism"), 3);
    assert_eq!(integer(&spec["backoffLimit"], "backoffLimit"), 0, "a shard is never retried");
    // The lead time plus the timeout: the Job ends even if nobody waits.
    assert_eq!(integer(&spec["activeDeadlineSeconds"], "activeDeadlineSeconds"), 660);
    assert!(integer(&spec["ttlSecondsAfterFinished"], "ttl") > 0);
    let rules = spec["podFailurePolicy"]["rules"].as_vec().expect("podFailurePolicy rules");
    assert_eq!(rules[0]["action"].as_str(), Some("Ignore"));
    assert_eq!(rules[0]["onPodConditions"][0]["type"].as_str(), Some("DisruptionTarget"));
    assert_eq!(rules[1]["action"].as_str(), Some("FailJob"));
    assert_eq!(rules[1]["onExitCodes"]["containerName"].as_str(), Some("pace"));

    let pod = &spec["template"];
    assert_eq!(pod["metadata"]["labels"]["pace.run"].as_str(), Some("bench-1"));
    assert_eq!(pod["spec"]["restartPolicy"].as_str(), Some("Never"));
    let spread = &pod["spec"]["topologySpreadConstraints"][0];
    assert_eq!(spread["topologyKey"].as_str(), Some("kubernetes.io/hostname"));
    assert_eq!(spread["whenUnsatisfiable"].as_str(), Some("ScheduleAnyway"));
    assert_eq!(spread["labelSelector"]["matchLabels"]["pace.run"].as_str(), Some("bench-1"));
    assert_eq!(pod["spec"]["securityContext"]["runAsNonRoot"].as_bool(), Some(true));

    let pace = container(&job);
    assert_eq!(pace["name"].as_str(), Some("pace"));
    assert_eq!(pace["image"].as_str(), Some("registry.example/team/pace:1.0"));
    let index_env = &pace["env"][0];
    assert_eq!(index_env["name"].as_str(), Some("JOB_COMPLETION_INDEX"));
    assert_eq!(
        index_env["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
    );
    for kind in ["requests", "limits"] {
        let resources = &pace["resources"][kind];
        assert_eq!(resources["cpu"].as_str(), Some("4"), "{kind}");
        assert_eq!(resources["memory"].as_str(), Some("1Gi"), "{kind}");
    }

    let args = pod_args(&job);
    assert_eq!(args[..3], ["--shard", "$(JOB_COMPLETION_INDEX)/3", "--start-at"], "{args:?}");
    assert_eq!(args[4], "--json");
    // One seed for all shards, so that they draw the same random numbers.
    assert_eq!(args[5], "--seed");
    args[6].parse::<u64>().unwrap_or_else(|_| panic!("a seed: {args:?}"));
    assert_eq!(args[7..], pace_args, "the pace arguments follow, as given");
    // Now + lead, in whole seconds.
    let start = rfc3339(&args[3]);
    assert!(start >= before + Duration::from_secs(59), "{} too early", args[3]);
    assert!(start <= after + Duration::from_secs(60), "{} too late", args[3]);

    // The real pace accepts what the pods run: each shard gets past the
    // command line (exit code 1) to the target, where nothing listens (2).
    for index in [0, 2] {
        let args = shard_args(&job, index);
        assert_eq!(args[1], format!("{index}/3"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = common::pace(&args, Duration::from_secs(20));
        run.assert_code(2);
        assert!(run.stderr.contains("unable to connect"), "{run}");
    }

    // --spread hard requires the spread.
    let hard = yaml(&render(&["--image", "pace", "--spread", "hard"], &["http://x/"]));
    assert_eq!(
        hard["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"]
            .as_str(),
        Some("DoNotSchedule")
    );
}

#[test]
fn the_template_itself_is_yaml() {
    let text = fs::read_to_string(Path::new(DEPLOY).join("job.yaml")).unwrap();
    let job = yaml(&text);
    assert_eq!(job["kind"].as_str(), Some("Job"));
    assert_eq!(pod_args(&job).last().map(String::as_str), Some("${PACE_ARGS}"));
}

#[test]
fn pace_arguments_reach_the_pod_as_typed() {
    // YAML's and the shell's special characters, Kubernetes' `$(VAR)` and
    // `$$`, control characters, bytes beyond ASCII, words YAML would read
    // as numbers, booleans or null, and an empty argument.
    let pace_args = [
        "--seed",
        "7",
        "-H",
        "X-Price: $5 \"quoted\" back\\slash",
        "--body",
        "line 1\nline 2\ttab\u{1}\r",
        "http://127.0.0.1:9/a?b=1&c=2#frag",
        "--",
        "$(HOME)",
        "$$",
        "$",
        "$(",
        "5 € $",
        "100",
        "true",
        "null",
        "~",
        "- item",
        "key: value",
        "{a: 1}",
        "*alias",
        "# comment",
        "",
    ];
    let text = render(&["--image", "pace", "--shards", "2"], &pace_args);
    let job = yaml(&text);
    let args = shard_args(&job, 1);
    assert_eq!(args[1], "1/2");
    // A seed was given: run.sh adds none.
    assert_eq!(args[5..], pace_args, "\n--- manifest ---\n{text}");
    for seed in ["--seed=7", "--see", "--se=7"] {
        let job = yaml(&render(&["--image", "pace"], &[seed, "http://x/"]));
        assert_eq!(pod_args(&job)[5..], [seed, "http://x/"]);
    }
}

#[test]
fn with_metrics_the_pods_are_scraped() {
    let annotations = |job: &Yaml| job["spec"]["template"]["metadata"]["annotations"].clone();
    // Without --metrics: nothing listens, and Prometheus is told so.
    let plain = yaml(&render(&["--image", "pace"], &["http://x/"]));
    assert_eq!(annotations(&plain)["prometheus.io/scrape"].as_str(), Some("false"));
    assert!(!pod_args(&plain).iter().any(|a| a.starts_with("--metrics")));

    let target = format!("http://127.0.0.1:{}/", closed_port());
    let text = render(&["--image", "pace", "--metrics", "--metrics-linger=20"], &["-R10", &target]);
    let job = yaml(&text);
    let annotations = annotations(&job);
    assert_eq!(annotations["prometheus.io/scrape"].as_str(), Some("true"), "{text}");
    assert_eq!(annotations["prometheus.io/path"].as_str(), Some("/metrics"));
    let port = string(&annotations["prometheus.io/port"], "the port annotation");
    let declared = &container(&job)["ports"][0];
    assert_eq!(declared["name"].as_str(), Some("metrics"));
    assert_eq!(integer(&declared["containerPort"], "containerPort").to_string(), port);
    let args = pod_args(&job);
    let at = args.iter().position(|a| a == "--metrics").expect("--metrics in the args");
    assert_eq!(args[at + 1..at + 4], [format!(":{port}"), "--metrics-linger".into(), "20s".into()]);
    assert_eq!(args[at + 4..], ["-R10", target.as_str()]);
    // The real pace takes them: past the command line (1) to the setup
    // (2: nothing listens at the target, or here the port is taken).
    let args = shard_args(&job, 0);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::pace(&args, Duration::from_secs(20));
    run.assert_code(2);

    let bad =
        run_sh_offline(&["--render-only", "--image", "p", "--metrics-linger", "x", "--", "u"]);
    assert_eq!(bad.code(), Some(1), "{bad}");
    assert!(bad.stderr.contains("--metrics-linger 'x' is not a whole number"), "{bad}");
}

// ----- run.sh with a stand-in cluster ----------------------------------------------------------

/// A stand-in `kubectl` on a PATH of its own: it writes each call into
/// `calls` and answers from files the test writes: `job-status` and
/// `job-message` (get job; no file: an error), `pods` (get pods),
/// `logs/POD` (logs), `nodes` (get nodes: allocatable CPU and memory, a
/// node a line; 4 CPUs and 16Gi without the file), `pending` (get pods of
/// a phase: why they wait); the manifest of `create -f` is copied to
/// `created.yaml`, unless `job-exists` exists.
struct FakeCluster {
    dir: tempfile::TempDir,
}

const FAKE_KUBECTL: &str = r#"#!/usr/bin/env bash
set -euo pipefail
cluster=$(dirname "$(dirname "$0")")
printf '%s\n' "$*" >>"$cluster/calls"
if [[ $1 == --namespace ]]; then shift 2; fi
case "$1 $2" in
    "create configmap") ;;
    "create -f")
        if [[ -e $cluster/job-exists ]]; then
            echo 'Error from server (AlreadyExists): jobs.batch "x" already exists' >&2; exit 1
        fi
        cp "$3" "$cluster/created.yaml" ;;
    "get job")
        if [[ $* == *message* ]]; then cat "$cluster/job-message"; else cat "$cluster/job-status"; fi ;;
    "get nodes")
        if [[ -e $cluster/nodes ]]; then cat "$cluster/nodes"; else echo "4 16Gi"; fi ;;
    "get pods")
        if [[ $* == *wide* ]]; then echo "NAME  READY  STATUS"
        elif [[ $* == *field-selector* ]]; then cat "$cluster/pending" 2>/dev/null || true
        else cat "$cluster/pods"; fi ;;
    "logs "*) cat "$cluster/logs/$2" ;;
    "delete "*) ;;
    *) echo "fake kubectl: unexpected call: $*" >&2; exit 1 ;;
esac
"#;

impl FakeCluster {
    fn new() -> FakeCluster {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("bin")).unwrap();
        fs::create_dir(dir.path().join("logs")).unwrap();
        let cluster = FakeCluster { dir };
        cluster.write_script("bin/kubectl", FAKE_KUBECTL);
        cluster.write("job-status", "");
        cluster.write("pods", "");
        cluster
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Written whole (a rename), so that kubectl never reads half a file.
    fn write(&self, name: &str, content: &str) {
        let tmp = self.path(&format!("{name}.tmp"));
        fs::write(&tmp, content).unwrap();
        fs::rename(tmp, self.path(name)).unwrap();
    }

    fn write_script(&self, name: &str, content: &str) {
        self.write(name, content);
        fs::set_permissions(self.path(name), fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The environment of run.sh: the stand-in kubectl first on the PATH.
    fn path_env(&self) -> String {
        format!("{}:{}", self.path("bin").display(), std::env::var("PATH").unwrap_or_default())
    }

    fn calls(&self) -> String {
        fs::read_to_string(self.path("calls")).unwrap_or_default()
    }

    /// The manifest run.sh created, once it did.
    fn wait_for_job(&self, run: &mut RunSh, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(text) = fs::read_to_string(self.path("created.yaml")) {
                return text;
            }
            if let Some(status) = run.child.try_wait().unwrap() {
                let stderr = fs::read_to_string(run.dir.join("run.stderr")).unwrap();
                panic!("run.sh ended ({status}) before creating the Job:\n{stderr}");
            }
            assert!(Instant::now() < deadline, "run.sh created no Job within {limit:?}");
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A pace shard, its stdout and stderr into one log as a container's are.
fn start_shard(args: &[String], cwd: &Path, log: &Path) -> Child {
    let log = File::create(log).unwrap();
    Command::new(env!("CARGO_BIN_EXE_pace"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start pace")
}

fn wait_child(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a shard did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn run_sh_runs_the_shards_at_the_start_time_and_collects_their_reports() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let cluster = FakeCluster::new();
    let name = "pace-test-run";

    // A script whose done() prints a line starting with '{' that is not a
    // report, to stdout, after the report: run.sh must leave it out.
    let files = cluster.path("files");
    fs::create_dir(&files).unwrap();
    fs::write(files.join("done.lua"), "done = function() print('{\"not\": \"a report\"}') end\n")
        .unwrap();
    // `pace merge` stands in too: it says what it was given, and fails an
    // objective (exit code 4), which run.sh must pass on.
    cluster.write_script(
        "bin/pace-merge-stub",
        "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" >\"$(dirname \"$0\")/../merge-args\"\n\
         echo \"merged $(($# - 1)) arguments\"\nexit 4\n",
    );
    cluster.write("job-status", "2/0/0/");

    let out = cluster.path("out");
    let script = files.join("done.lua");
    let stub = cluster.path("bin/pace-merge-stub");
    let mut run = RunSh::start(
        cluster.dir.path(),
        &[
            "--image",
            "registry.example/pace:test",
            "--shards",
            "2",
            // Time for this test to start the shards once the Job exists,
            // on a loaded machine too.
            "--lead",
            "5",
            "--name",
            name,
            "--out",
            out.to_str().unwrap(),
            "--file",
            script.to_str().unwrap(),
            "--pace",
            stub.to_str().unwrap(),
            "--slo",
            "p99<1s",
            "--merge-arg",
            "-U",
            "--",
            "-t1",
            "-c2",
            "-d1s",
            "-R100",
            "-s",
            "done.lua",
            &target,
        ],
        &[("PATH", &cluster.path_env()), ("PACE_NAMESPACE", "bench")],
    );

    // The Job controller's part: pod I runs the manifest's arguments with
    // its index, in the directory that holds the --file files.
    let manifest = cluster.wait_for_job(&mut run, Duration::from_secs(20));
    let job = yaml(&manifest);
    assert_eq!(integer(&job["spec"]["completions"], "completions"), 2);
    let start_at = pod_args(&job)[3].clone();
    let pods = [format!("{name}-0-x7k2p"), format!("{name}-1-b9dqw")];
    let mut shards: Vec<Child> = (0..2)
        .map(|i| {
            start_shard(&shard_args(&job, i), &files, &cluster.path(&format!("logs/{}", pods[i])))
        })
        .collect();
    for (i, shard) in shards.iter_mut().enumerate() {
        let status = wait_child(shard, Duration::from_secs(30));
        let log = fs::read_to_string(cluster.path(&format!("logs/{}", pods[i]))).unwrap();
        assert!(status.success(), "shard {i}: {status}\n{log}");
    }
    // Index 1 also had a pod that was evicted and replaced: its log is not
    // the result.
    let evicted = format!("{name}-1-evict");
    cluster.write(&format!("logs/{evicted}"), "pace: terminated\n");
    cluster.write(
        "pods",
        &format!("0 {} Succeeded\n1 {evicted} Failed\n1 {} Succeeded\n", pods[0], pods[1]),
    );
    cluster.write("job-status", "/2//SuccessCriteriaMet,Complete,");

    let finished = run.wait(Duration::from_secs(60));
    assert_eq!(finished.code(), Some(4), "pace merge's exit code\n{finished}");
    assert!(finished.stdout.contains("merged 5 arguments"), "{finished}");
    assert!(finished.stderr.contains(&format!("starting at {start_at}")), "{finished}");

    // What went to pace merge: the options, then the shards in order.
    let merge_args = fs::read_to_string(cluster.path("merge-args")).unwrap();
    let shard_files: Vec<String> =
        (0..2).map(|i| out.join(format!("shard-{i}.json")).display().to_string()).collect();
    assert_eq!(
        merge_args.lines().collect::<Vec<_>>(),
        ["merge", "--slo", "p99<1s", "-U", &shard_files[0], &shard_files[1]],
        "{finished}"
    );
    assert_eq!(fs::read_to_string(out.join("report.txt")).unwrap(), "merged 5 arguments\n");
    assert_eq!(fs::read_to_string(out.join("job.yaml")).unwrap(), manifest);

    // Each shard's file holds its report lines and nothing else; the rest
    // of its log went to stderr, marked with the shard.
    let mut requests = 0;
    for (i, path) in shard_files.iter().enumerate() {
        let text = fs::read_to_string(path).unwrap();
        assert!(text.lines().all(|l| l.starts_with(REPORT_LINE)), "shard {i}:\n{text}");
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["report"], "final", "shard {i}");
        assert_eq!(last["shard"]["index"], i, "shard {i}");
        assert_eq!(last["shard"]["count"], 2, "shard {i}");
        assert_eq!(last["start_at"], start_at.as_str(), "shard {i}");
        assert_eq!(last["errors"]["unsent"], 0, "shard {i}: {last}");
        requests += last["requests"].as_u64().unwrap();
        assert!(
            finished.stderr.contains(&format!("shard {i}: {{\"not\": \"a report\"}}")),
            "{finished}"
        );
    }
    // 100 requests a second for a second: the plan's 100, once each.
    assert_eq!(requests, 100, "{finished}");

    // The cluster saw: the namespace on every call, the files as a
    // ConfigMap, the Job, the logs of the pods that succeeded, the clean-up.
    let calls = cluster.calls();
    assert!(calls.lines().all(|c| c.starts_with("--namespace bench ")), "{calls}");
    assert!(
        calls.contains(&format!("create configmap {name}-files --from-file={}", script.display())),
        "{calls}"
    );
    assert!(calls.contains(&format!("create -f {}", out.join("job.yaml").display())), "{calls}");
    for pod in &pods {
        assert!(calls.contains(&format!("logs {pod} -c pace")), "{calls}");
    }
    assert!(!calls.contains(&format!("logs {evicted}")), "{calls}");
    assert!(calls.contains(&format!("delete job {name}")), "{calls}");
    assert!(calls.contains(&format!("delete configmap {name}-files")), "{calls}");
}

#[test]
fn a_failed_job_ends_run_sh_with_the_shards_messages() {
    let cluster = FakeCluster::new();
    let name = "pace-test-failed";
    let late = "pace: --start-at 2026-11-23T10:00:00Z is 3.200s in the past, after this \
                instance's first request was due";
    cluster.write("job-status", "0/1/1/FailureTarget,Failed,");
    cluster.write(
        "job-message",
        &format!("Container pace for pod default/{name}-1-q8v4z failed with exit code 1"),
    );
    cluster.write("pods", &format!("0 {name}-0-a1b2c Succeeded\n1 {name}-1-q8v4z Failed\n"));
    cluster.write(&format!("logs/{name}-0-a1b2c"), "{\"schema_version\":1,\"report\":\"final\"}\n");
    cluster.write(&format!("logs/{name}-1-q8v4z"), &format!("{late}\n"));
    let out = cluster.path("out");
    let finished = RunSh::start(
        cluster.dir.path(),
        &[
            "--image",
            "pace",
            "--name",
            name,
            "--out",
            out.to_str().unwrap(),
            "--no-merge",
            "--keep",
            "--",
            "-R10",
            "http://app/",
        ],
        &[("PATH", &cluster.path_env())],
    )
    .wait(Duration::from_secs(30));
    assert_eq!(finished.code(), Some(2), "{finished}");
    assert!(finished.stderr.contains("failed with exit code 1"), "{finished}");
    assert!(finished.stderr.contains(&format!("shard 1 said ({}", out.display())), "{finished}");
    assert!(finished.stderr.contains(late), "{finished}");
    assert!(!finished.stderr.contains("shard 0 said"), "only a report: {finished}");
    assert_eq!(fs::read_to_string(out.join("shard-1.log")).unwrap(), format!("{late}\n"));
    assert!(!out.join("shard-0.json").exists(), "no results of a failed run");
    // --keep: the Job stays for a look.
    let calls = cluster.calls();
    assert!(!calls.contains("delete"), "{calls}");
    assert!(!calls.contains("--namespace"), "kubectl's namespace: {calls}");
}

#[test]
fn a_job_that_does_not_end_is_given_up() {
    let cluster = FakeCluster::new();
    // Nor can its status be read: run.sh keeps asking until its deadline.
    fs::remove_file(cluster.path("job-status")).unwrap();
    cluster.write("pods", "0 stuck-0-a Succeeded\n1 stuck-1-b Running\n");
    cluster.write("logs/stuck-0-a", "");
    cluster.write("logs/stuck-1-b", "");
    let started = Instant::now();
    let finished = RunSh::start(
        cluster.dir.path(),
        &[
            "--image",
            "pace",
            "--name",
            "stuck",
            "--lead",
            "1",
            "--timeout",
            "1",
            "--no-merge",
            "--",
            "http://app/",
        ],
        &[("PATH", &cluster.path_env())],
    )
    .wait(Duration::from_secs(30));
    assert_eq!(finished.code(), Some(2), "{finished}");
    assert!(finished.stderr.contains("did not finish within 1s of its start time"), "{finished}");
    assert!(finished.stderr.contains("status unknown (kubectl failed)"), "{finished}");
    assert!(started.elapsed() >= Duration::from_secs(1), "{finished}");
    assert!(cluster.calls().contains("delete job stuck"), "{}", cluster.calls());
}

#[test]
fn a_job_name_in_use_is_left_alone() {
    let cluster = FakeCluster::new();
    cluster.write("job-exists", "");
    let files = cluster.path("files");
    fs::create_dir(&files).unwrap();
    fs::write(files.join("t.txt"), "GET http://app/\n").unwrap();
    let finished = RunSh::start(
        cluster.dir.path(),
        &[
            "--image",
            "pace",
            "--name",
            "taken",
            "--no-merge",
            "--file",
            files.join("t.txt").to_str().unwrap(),
            "--",
            "--targets",
            "t.txt",
        ],
        &[("PATH", &cluster.path_env())],
    )
    .wait(Duration::from_secs(30));
    assert_eq!(finished.code(), Some(1), "{finished}");
    assert!(finished.stderr.contains("AlreadyExists"), "{finished}");
    // Its own ConfigMap is removed, the Job that was there is not.
    let calls = cluster.calls();
    assert!(calls.contains("delete configmap taken-files"), "{calls}");
    assert!(!calls.contains("delete job"), "{calls}");
}

#[test]
fn on_the_host_network_each_pod_has_a_metrics_port_of_its_own() {
    let plain = yaml(&render(&["--image", "pace", "--metrics"], &["http://x/"]));
    assert_eq!(plain["spec"]["template"]["spec"]["hostNetwork"].as_bool(), Some(false));
    let text = render(
        &["--image", "pace", "--host-network", "--metrics", "--shards", "3"],
        &["-R10", "http://127.0.0.1:8080/"],
    );
    let job = yaml(&text);
    assert_eq!(job["spec"]["template"]["spec"]["hostNetwork"].as_bool(), Some(true), "{text}");
    // No port declared: on the host network it would be a host port, which
    // only one pod of a node could have.
    assert!(container(&job)["ports"].is_badvalue(), "{text}");
    let annotations = &job["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/port"].as_str(), Some("946"));
    for index in 0..3 {
        let args = shard_args(&job, index);
        let at = args.iter().position(|a| a == "--metrics").expect("--metrics");
        assert_eq!(args[at + 1], format!(":946{index}"), "{args:?}");
    }
    let bad = run_sh_offline(&[
        "--render-only",
        "--image",
        "p",
        "--host-network",
        "--metrics",
        "--shards",
        "11",
        "--",
        "u",
    ]);
    assert_eq!(bad.code(), Some(1), "{bad}");
    assert!(bad.stderr.contains("at most 10 shards"), "{bad}");
}

#[test]
fn the_pods_fit_the_nodes_or_run_sh_says_why_not() {
    // One node of 2 CPUs and 4Gi for 3 pods: 600m and 512Mi each.
    let cluster = FakeCluster::new();
    cluster.write("nodes", "2 4194304Ki\n");
    let mut run = RunSh::start(
        cluster.dir.path(),
        &["--image", "pace", "--shards", "3", "--lead", "1", "--no-merge", "--", "http://app/"],
        &[("PATH", &cluster.path_env())],
    );
    let job = yaml(&cluster.wait_for_job(&mut run, Duration::from_secs(30)));
    let limits = &container(&job)["resources"]["limits"];
    assert_eq!(limits["cpu"].as_str(), Some("600m"));
    assert_eq!(limits["memory"].as_str(), Some("512Mi"));
    drop(run);
    // Sizes that cannot be run are said before anything is made: one no
    // node holds; ones each node holds, but not all the pods at once (some
    // would wait for others to end, past their start); no CPU at all.
    let refusals: [(&str, &[&str], &str); 3] = [
        (
            "2 4194304Ki\n1500m 2Gi\n",
            &["--cpu", "4"],
            "--cpu 4 does not fit: the largest node has 2000m CPU",
        ),
        (
            "2 4194304Ki\n",
            &["--shards", "3", "--cpu", "1"],
            "3 pods of --cpu 1 --memory 512Mi do not fit at once: the nodes' allocatable CPU \
             and memory hold 2",
        ),
        ("2 4194304Ki\n", &["--cpu", "0m"], "--cpu 0m: a pod needs some CPU"),
    ];
    for (nodes, sizes, said) in refusals {
        let cluster = FakeCluster::new();
        cluster.write("nodes", nodes);
        let mut args = vec!["--image", "pace", "--no-merge"];
        args.extend_from_slice(sizes);
        args.extend_from_slice(&["--", "http://app/"]);
        let finished = RunSh::start(cluster.dir.path(), &args, &[("PATH", &cluster.path_env())])
            .wait(Duration::from_secs(30));
        assert_eq!(finished.code(), Some(1), "{finished}");
        assert!(finished.stderr.contains(said), "{finished}");
        assert!(!cluster.calls().contains("create"), "{}", cluster.calls());
    }
}

#[test]
fn a_pod_that_never_starts_is_said_in_kubernetes_words() {
    let cluster = FakeCluster::new();
    cluster.write("job-status", "0/0/0/");
    cluster.write("pods", "0 late-0-a Pending\n1 late-1-b Pending\n");
    cluster.write(
        "pending",
        "late-0-a\ts:0/1 nodes are available: 1 Insufficient cpu.\tw: \n\
         late-1-b\ts:\tw:ErrImageNeverPull Container image \"pace:local\" is not present with pull \
         policy of Never\n",
    );
    let finished = RunSh::start(
        cluster.dir.path(),
        &[
            "--image",
            "pace",
            "--name",
            "late",
            "--lead",
            "1",
            "--timeout",
            "8",
            "--no-merge",
            "--",
            "http://app/",
        ],
        &[("PATH", &cluster.path_env())],
    )
    .wait(Duration::from_secs(60));
    assert_eq!(finished.code(), Some(2), "{finished}");
    assert!(
        finished
            .stderr
            .contains("pod late-0-a: not scheduled: 0/1 nodes are available: 1 Insufficient cpu."),
        "{finished}"
    );
    assert!(
        finished
            .stderr
            .contains("pod late-1-b: its container is waiting: ErrImageNeverPull Container image"),
        "{finished}"
    );
}

#[test]
fn run_sh_refuses_what_it_cannot_use() {
    let cases: &[(&[&str], &str)] = &[
        (&["--render-only", "--", "http://x/"], "no image"),
        (&["--render-only", "--image", "pace", "--shards", "0", "--", "http://x/"], "--shards '0'"),
        (&["--render-only", "--image", "pace", "--lead", "soon", "--", "http://x/"], "--lead"),
        (&["--render-only", "--image", "pace"], "no pace arguments"),
        (&["--render-only", "--image", "a b", "--", "http://x/"], "not an image reference"),
        (&["--render-only", "--image", "pace", "--name", "Big_Name", "--", "http://x/"], "--name"),
        (&["--render-only", "--image", "pace", "--cpu", "lots", "--", "http://x/"], "--cpu"),
        (
            &["--render-only", "--image", "pace", "--spread", "wide", "--", "http://x/"],
            "soft or hard",
        ),
        (
            &[
                "--render-only",
                "--image",
                "pace",
                "--file",
                "/nonexistent/x.lua",
                "--",
                "http://x/",
            ],
            "not a readable file",
        ),
        (
            &["--render-only", "--image", "pace", "--", "--shard", "0/2", "http://x/"],
            "sets --shard and --start-at",
        ),
        (
            &["--render-only", "--image", "pace", "--", "--start-at=0", "http://x/"],
            "sets --shard and --start-at",
        ),
        (
            &["--render-only", "--image", "pace", "--", "--sha", "0/2", "http://x/"],
            "sets --shard and --start-at",
        ),
        (&["--render-only", "--image", "pace", "--", "--output=r.json", "http://x/"], "stdout"),
        (&["--render-only", "--image", "pace", "--", "-o", "r.json", "http://x/"], "stdout"),
        (
            &["--render-only", "--image", "pace", "--", "--slo", "p99<1ms", "http://x/"],
            "give --slo to run.sh",
        ),
        (
            &["--render-only", "--image", "pace", "--bogus", "--", "http://x/"],
            "unknown option '--bogus'",
        ),
        (&["--render-only", "--image"], "--image needs a value"),
    ];
    for (args, message) in cases {
        let run = run_sh_offline(args);
        assert_eq!(run.code(), Some(1), "{args:?}\n{run}");
        assert!(run.stderr.contains(message), "{args:?}: expected '{message}'\n{run}");
        assert!(run.stderr.starts_with("run.sh: "), "{run}");
    }
    // Words after the pace arguments' own -- belong to the Lua script.
    render(&["--image", "pace"], &["-s", "s.lua", "http://x/", "--", "-o", "--shard"]);

    // No kubectl: said before anything is created.
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    fs::create_dir(&bin).unwrap();
    for tool in ["dirname", "date"] {
        symlink(which(tool).unwrap(), bin.join(tool)).unwrap();
    }
    let run = RunSh::start(
        dir.path(),
        &["--image", "pace", "--no-merge", "--", "http://x/"],
        &[("PATH", bin.to_str().unwrap())],
    )
    .wait(Duration::from_secs(30));
    assert_eq!(run.code(), Some(1), "{run}");
    assert!(run.stderr.contains("kubectl not found"), "{run}");
    assert!(!dir.path().join("pace-results").exists(), "nothing written: {run}");
}

// ----- the script and the image ---------------------------------------------------------------

#[test]
fn the_scripts_are_shellcheck_clean() {
    let Some(shellcheck) = which("shellcheck") else {
        let install = "apt-get install shellcheck";
        if in_ci() {
            panic!("shellcheck is missing: CI must install it ({install})");
        }
        eprintln!(
            "\n!!!!!!!!!! SKIPPED: shellcheck is not installed; the scripts were not checked. \
             To check them: {install} !!!!!!!!!!\n"
        );
        return;
    };
    let local_cluster = run_sh().with_file_name("local-cluster.sh");
    for script in [run_sh(), local_cluster] {
        let output = Command::new(&shellcheck).arg(&script).output().expect("run shellcheck");
        assert!(
            output.status.success(),
            "shellcheck {}:\n{}{}",
            script.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn the_image_runs_pace_as_the_manifests_user() {
    let dockerfile = fs::read_to_string(Path::new(DEPLOY).join("Dockerfile")).unwrap();
    let instructions: Vec<&str> = dockerfile
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(instructions.contains(&r#"ENTRYPOINT ["pace"]"#), "{dockerfile}");
    // Built and run on the same Debian release (the same glibc).
    let from: Vec<&str> = instructions.iter().filter(|l| l.starts_with("FROM ")).copied().collect();
    assert_eq!(from.len(), 2, "a build stage and a runtime stage: {from:?}");
    let release = ["bookworm", "trixie", "bullseye"]
        .into_iter()
        .find(|r| from[0].contains(r))
        .unwrap_or_else(|| panic!("which Debian release? {}", from[0]));
    assert!(from[1].contains(release) && from[1].contains("slim"), "{from:?}");
    // A numeric user (Kubernetes' runAsNonRoot checks it), the manifest's.
    let user = instructions.iter().rev().find_map(|l| l.strip_prefix("USER ")).expect("USER");
    let uid: i64 = user.split(':').next().unwrap().parse().expect("a numeric USER");
    assert_ne!(uid, 0);
    let job = yaml(&fs::read_to_string(Path::new(DEPLOY).join("job.yaml")).unwrap());
    let security = &job["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(integer(&security["runAsUser"], "runAsUser"), uid);
    // target/ stays out of the build context.
    let ignore = fs::read_to_string(Path::new(ROOT).join(".dockerignore")).unwrap();
    assert!(ignore.lines().any(|l| l.trim().trim_matches('/') == "target"), "{ignore}");
}
