//! Shared by the end-to-end tests: running the real `pace` binary with a
//! time limit, reading its text report, the lock that keeps load tests of
//! one test binary from running at the same time, the built-in server and
//! an nginx started for the test.
//!
//! Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::fs;
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use pace::serve::{ServeOptions, ServerHandle};

// ----- one load test at a time ------------------------------------------------

static LOAD: Mutex<()> = Mutex::new(());

/// Held by every test that puts load on the machine, so that the tests of
/// one binary never compete for the (two) cores. A test that failed while
/// holding it poisons it; the next one goes on regardless.
pub fn load_lock() -> MutexGuard<'static, ()> {
    LOAD.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Children that must not outlive the test, even if the test binary is
/// killed (a CI time limit): the kernel kills them when the thread that
/// started them ends.
pub trait DieWithTest {
    fn die_with_test(&mut self) -> &mut Self;
}

impl DieWithTest for Command {
    fn die_with_test(&mut self) -> &mut Self {
        // SAFETY: prctl is async-signal-safe and touches only the child.
        unsafe {
            self.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                Ok(())
            })
        }
    }
}

// ----- running pace ------------------------------------------------------------

/// What a finished `pace` run left behind.
#[derive(Debug)]
pub struct Run {
    pub args: Vec<String>,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// From spawning the process to its exit.
    pub wall: Duration,
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn report(&self) -> Report {
        Report::new(&self.stdout)
    }

    /// Panics, showing everything pace printed, unless it exited with `code`.
    pub fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(self.code(), Some(code), "exit status of pace {:?}\n{self}", self.args);
        self
    }

    /// Exit code 0 and nothing that looks like a panic on stderr.
    pub fn assert_ok(&self) -> &Run {
        self.assert_code(0);
        assert!(!self.stderr.contains("panicked"), "{self}");
        assert!(!self.stderr.contains("internal error"), "{self}");
        self
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pace {:?}: {} after {:?}\n--- stdout ---\n{}--- stderr ---\n{}--------------",
            self.args, self.status, self.wall, self.stdout, self.stderr
        )
    }
}

/// A `pace` process started by [`spawn_pace`], its output collected by two
/// threads so that a full pipe can never block it.
pub struct Running {
    pub args: Vec<String>,
    pub child: Child,
    pub started: Instant,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

fn collect(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Starts `pace args` with stdout and stderr captured.
pub fn spawn_pace(args: &[&str]) -> Running {
    spawn_pace_with_env(args, &[])
}

/// [`spawn_pace`] with these environment variables set.
pub fn spawn_pace_with_env(args: &[&str], env: &[(&str, &str)]) -> Running {
    spawn(Command::new(env!("CARGO_BIN_EXE_pace")), args, env)
}

/// [`spawn_pace`] in the network namespace `netns` (`ip netns exec`).
pub fn spawn_pace_in(netns: &str, args: &[&str]) -> Running {
    let mut command = Command::new("ip");
    command.args(["netns", "exec", netns, env!("CARGO_BIN_EXE_pace")]);
    spawn(command, args, &[])
}

fn spawn(mut command: Command, args: &[&str], env: &[(&str, &str)]) -> Running {
    let mut child = command
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .die_with_test()
        .spawn()
        .expect("start the pace binary");
    let stdout = collect(child.stdout.take().expect("piped stdout"));
    let stderr = collect(child.stderr.take().expect("piped stderr"));
    Running {
        args: args.iter().map(|a| a.to_string()).collect(),
        child,
        started: Instant::now(),
        stdout: Some(stdout),
        stderr: Some(stderr),
    }
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on the pid of our own child, which has not been
        // reaped yet (so the pid cannot have been reused).
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill({}, {signal})", self.pid());
    }

    /// The process has not exited yet.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for the exit; past `limit` (from the start, [`stretched`])
    /// the process is killed and the test fails with whatever it printed.
    pub fn wait(mut self, limit: Duration) -> Run {
        let limit = stretched(limit);
        let deadline = self.started + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for pace") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let status = self.child.wait().expect("reap pace");
                let run = self.finish(status);
                panic!("pace did not finish within {limit:?}; killed it\n{run}");
            }
            thread::sleep(Duration::from_millis(5));
        };
        self.finish(status)
    }

    fn finish(&mut self, status: ExitStatus) -> Run {
        let wall = self.started.elapsed();
        let join = |h: Option<JoinHandle<String>>| {
            h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
        };
        Run {
            args: self.args.clone(),
            status,
            stdout: join(self.stdout.take()),
            stderr: join(self.stderr.take()),
            wall,
        }
    }
}

impl Drop for Running {
    /// A test that panics while pace runs must not leave it running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `pace args` to the end; kills it and fails the test if it takes
/// longer than `limit`.
pub fn pace(args: &[&str], limit: Duration) -> Run {
    spawn_pace(args).wait(limit)
}

// ----- reading the report ------------------------------------------------------

/// A time as pace (and wrk) prints it (`94.00us`, `6.69ms`, `1.02s`,
/// `1.00m`, `2.00h`), in microseconds.
pub fn time_us(text: &str) -> f64 {
    let text = text.trim();
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or_else(|| panic!("no unit in time {text:?}"));
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().unwrap_or_else(|_| panic!("bad number in time {text:?}"));
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => panic!("unknown time unit in {text:?}"),
    };
    value * scale
}

/// A size as wrk prints it (`512.00B`, `4.80MB`, `1.20GB`), in bytes.
pub fn size_bytes(text: &str) -> f64 {
    let text = text.trim().strip_suffix('B').unwrap_or_else(|| panic!("no B in size {text:?}"));
    let (number, scale) = match text.chars().last() {
        Some('K') => (&text[..text.len() - 1], 1024.0),
        Some('M') => (&text[..text.len() - 1], 1024.0 * 1024.0),
        Some('G') => (&text[..text.len() - 1], 1024.0 * 1024.0 * 1024.0),
        Some('T') => (&text[..text.len() - 1], 1024f64.powi(4)),
        _ => (text, 1.0),
    };
    number.parse::<f64>().unwrap_or_else(|_| panic!("bad size {text:?}")) * scale
}

/// `Socket errors: connect a, read b, write c, timeout d[, unsent e]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketErrors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub timeout: u64,
    pub unsent: u64,
}

/// The stdout of a benchmark run.
pub struct Report {
    pub text: String,
}

/// Which HdrHistogram block of a paced report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// `Latency Distribution (HdrHistogram - Recorded Latency)`: corrected.
    Recorded,
    /// `... Uncorrected Latency (measured without ...)`.
    Uncorrected,
    /// wrk's `  Latency Distribution` (closed loop with `-L`).
    Wrk,
}

impl Block {
    fn title(self) -> &'static str {
        match self {
            Block::Recorded => "  Latency Distribution (HdrHistogram - Recorded Latency)",
            Block::Uncorrected => "  Latency Distribution (HdrHistogram - Uncorrected Latency",
            Block::Wrk => "  Latency Distribution",
        }
    }
}

impl Report {
    pub fn new(text: &str) -> Report {
        Report { text: text.to_string() }
    }

    fn line_starting(&self, prefix: &str) -> Option<&str> {
        self.text.lines().find(|l| l.starts_with(prefix))
    }

    /// The value after `prefix` up to `end` on the first line that starts
    /// with `prefix` (after leading spaces).
    fn field(&self, prefix: &str, end: &str) -> Option<&str> {
        let line = self.text.lines().map(str::trim_start).find(|l| l.starts_with(prefix))?;
        let rest = &line[prefix.len()..];
        Some(rest.split(end).next().unwrap_or(rest).trim())
    }

    /// `N` of `  N requests in 3.00s, 4.80MB read`.
    pub fn requests(&self) -> u64 {
        let line = self
            .text
            .lines()
            .find(|l| l.contains(" requests in "))
            .unwrap_or_else(|| panic!("no 'requests in' line:\n{}", self.text));
        line.split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("bad line {line:?}"))
    }

    /// `3.00s` of `N requests in 3.00s, 4.80MB read` (the run time: from
    /// the start to the last response), in seconds.
    pub fn runtime_s(&self) -> f64 {
        let line = self
            .text
            .lines()
            .find(|l| l.contains(" requests in "))
            .unwrap_or_else(|| panic!("no 'requests in' line:\n{}", self.text));
        let time = line
            .split(" requests in ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        time_us(time) / 1e6
    }

    /// Asserts `Requests/sec` is the requests over the run time (as
    /// printed: the time to 3 significant digits, the rate to 2 decimals).
    pub fn assert_rate_is_requests_over_runtime(&self) {
        let (requests, runtime) = (self.requests() as f64, self.runtime_s());
        let rate = self.requests_per_sec();
        let expected = requests / runtime;
        assert!(
            (rate - expected).abs() <= 0.006 * expected + 0.01,
            "Requests/sec {rate} but {requests} requests in {runtime} s\n{}",
            self.text
        );
    }

    /// `4.80MB` of `N requests in 3.00s, 4.80MB read`, in bytes.
    pub fn bytes_read(&self) -> f64 {
        let line = self
            .text
            .lines()
            .find(|l| l.contains(" requests in "))
            .unwrap_or_else(|| panic!("no 'requests in' line:\n{}", self.text));
        let size = line.rsplit(", ").next().unwrap().trim_end_matches(" read");
        size_bytes(size)
    }

    /// `Requests/sec:   1999.94`.
    pub fn requests_per_sec(&self) -> f64 {
        let value = self
            .field("Requests/sec:", "\n")
            .unwrap_or_else(|| panic!("no Requests/sec line:\n{}", self.text));
        value.parse().unwrap_or_else(|_| panic!("bad Requests/sec {value:?}"))
    }

    /// The `(percentile, microseconds)` lines of a latency block, in
    /// report order; `None` when the block is not in the report.
    pub fn percentiles(&self, block: Block) -> Option<Vec<(f64, f64)>> {
        let mut lines = self.text.lines();
        lines.by_ref().find(|l| match block {
            Block::Wrk => *l == block.title(),
            _ => l.starts_with(block.title()),
        })?;
        let mut out = Vec::new();
        for line in lines {
            let Some((p, value)) = line.split_once('%') else { break };
            let Ok(p) = p.trim().parse::<f64>() else { break };
            out.push((p, time_us(value)));
        }
        Some(out)
    }

    /// The latency at `percentile` in `block`, in microseconds.
    pub fn latency_us(&self, block: Block, percentile: f64) -> f64 {
        let lines = self
            .percentiles(block)
            .unwrap_or_else(|| panic!("no {block:?} block in\n{}", self.text));
        lines
            .iter()
            .find(|(p, _)| (p - percentile).abs() < 1e-9)
            .unwrap_or_else(|| {
                panic!("no {percentile}% line in the {block:?} block:\n{}", self.text)
            })
            .1
    }

    /// The `Socket errors:` line, if there is one.
    pub fn socket_errors(&self) -> Option<SocketErrors> {
        let rest = self.field("Socket errors:", "\n")?;
        let mut errors = SocketErrors::default();
        for part in rest.split(", ") {
            let (name, n) =
                part.trim().split_once(' ').unwrap_or_else(|| panic!("bad part {part:?}"));
            let n: u64 = n.parse().unwrap_or_else(|_| panic!("bad count in {part:?}"));
            match name {
                "connect" => errors.connect = n,
                "read" => errors.read = n,
                "write" => errors.write = n,
                "timeout" => errors.timeout = n,
                "unsent" => errors.unsent = n,
                _ => panic!("unknown socket error kind in {rest:?}"),
            }
        }
        Some(errors)
    }

    /// The socket error counts, zero when the line is absent.
    pub fn errors(&self) -> SocketErrors {
        self.socket_errors().unwrap_or_default()
    }

    /// The per-cause lines under `Socket errors:` (`    connect: ...: 12`).
    pub fn error_causes(&self) -> Vec<String> {
        let mut lines =
            self.text.lines().skip_while(|l| !l.trim_start().starts_with("Socket errors:"));
        if lines.next().is_none() {
            return Vec::new();
        }
        lines.take_while(|l| l.starts_with("    ")).map(|l| l.trim().to_string()).collect()
    }

    /// `Non-2xx or 3xx responses: N`, if there is such a line.
    pub fn non_2xx_3xx(&self) -> Option<u64> {
        let value = self.field("Non-2xx or 3xx responses:", "\n")?;
        Some(value.parse().unwrap_or_else(|_| panic!("bad Non-2xx count {value:?}")))
    }

    /// The `Schedule lag:` line.
    pub fn schedule_lag(&self) -> Option<&str> {
        self.line_starting("Schedule lag:")
    }

    /// The `Warning:` lines.
    pub fn warnings(&self) -> Vec<&str> {
        self.text.lines().filter(|l| l.starts_with("Warning:")).collect()
    }
}

/// Asserts the percentiles of `block` never decrease and end with 100%.
pub fn assert_monotonic(report: &Report, block: Block) {
    let lines =
        report.percentiles(block).unwrap_or_else(|| panic!("no {block:?} block:\n{}", report.text));
    assert!(lines.len() >= 4, "{block:?}: {lines:?}");
    for pair in lines.windows(2) {
        assert!(pair[0].0 < pair[1].0, "{block:?}: percentiles out of order: {lines:?}");
        assert!(pair[0].1 <= pair[1].1, "{block:?}: latency decreases: {lines:?}\n{}", report.text);
    }
}

// ----- the built-in server -------------------------------------------------------

/// The built-in server on a free port of 127.0.0.1.
pub fn serve(opts: ServeOptions) -> ServerHandle {
    pace::serve::start(opts).expect("start the built-in server")
}

/// Options for the built-in server on a free loopback port, otherwise the
/// defaults.
pub fn serve_options() -> ServeOptions {
    ServeOptions { bind: "127.0.0.1:0".parse().unwrap(), ..ServeOptions::default() }
}

/// Waits until `server` has seen `n` requests (10 s at most, stretched by
/// `PACE_TEST_SLACK`): a run has begun once its first request arrived.
pub fn until_requests(server: &ServerHandle, n: u64) {
    let deadline = Instant::now() + stretched(Duration::from_secs(10));
    while server.stats().requests < n {
        assert!(Instant::now() < deadline, "{n} requests never reached the server");
        thread::sleep(Duration::from_millis(5));
    }
}

/// The built-in server with default options on a free loopback port.
pub fn default_server() -> ServerHandle {
    serve(serve_options())
}

/// `http://<addr>/<path>`, IPv6 in brackets (SocketAddr's Display does that).
pub fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

/// Whether the server at `path` is installed: when it is not, a test
/// that needs it says so loudly and skips, except in CI ([`in_ci`]),
/// where it fails: CI must install `package`.
pub fn installed(path: &str, package: &str, what: &str) -> bool {
    if Path::new(path).exists() {
        return true;
    }
    if in_ci() {
        panic!("{path} not found: CI must install it (apt-get install {package})");
    }
    eprintln!("\n!!!!!!!!!! SKIPPED: {path} is not installed (apt-get install {package}); this {what} test did not run !!!!!!!!!!\n");
    false
}

// ----- nginx ----------------------------------------------------------------------

const NGINX: &str = "/usr/sbin/nginx";

/// The Unix socket of an nginx started with [`NginxOptions::unix_socket`],
/// in its temporary directory.
const NGINX_SOCKET: &str = "nginx.sock";

/// An nginx in the foreground with its own configuration in a temporary
/// directory, serving `/index.html` (13 bytes) on 127.0.0.1. Killed on drop.
pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
}

/// How the nginx of a test listens and logs.
#[derive(Clone, Debug)]
pub struct NginxOptions {
    pub listen: Listen,
    /// `keepalive_requests`: after this many requests on a connection
    /// nginx closes it (HTTP/1.1) or says GOAWAY (HTTP/2).
    pub keepalive_requests: u64,
    /// `http2_max_concurrent_streams` (nginx's default: 128).
    pub max_concurrent_streams: u32,
    /// Log each request's protocol, method, URI and status to
    /// `access.log` ([`Nginx::access_log`]).
    pub access_log: bool,
    /// Over TLS: this certificate and key (PEM files) instead of the
    /// built-in server's.
    pub certificate: Option<(PathBuf, PathBuf)>,
    /// Over TLS: `ssl_verify_client on` with the CAs of this PEM file
    /// (nginx then answers 400 to requests without a valid certificate).
    pub client_ca: Option<PathBuf>,
    /// Listen on a Unix socket ([`Nginx::socket_path`]) instead of the
    /// port (`listen unix:PATH;`).
    pub unix_socket: bool,
    /// `limit_req` at this many requests a second (a burst of 20 taken
    /// at once), the excess answered 503.
    pub limit_req: Option<u32>,
}

/// The protocol of nginx's port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listen {
    Http1,
    /// HTTP/2 without TLS (prior knowledge).
    H2c,
    /// TLS with the built-in server's certificate, HTTP/2 by ALPN.
    H2,
    /// TLS with that certificate, HTTP/1.1 only.
    Https1,
}

impl Default for NginxOptions {
    fn default() -> Self {
        NginxOptions {
            listen: Listen::Http1,
            keepalive_requests: 1_000_000,
            max_concurrent_streams: 128,
            access_log: false,
            certificate: None,
            client_ca: None,
            unix_socket: false,
            limit_req: None,
        }
    }
}

impl Nginx {
    /// Starts nginx, or returns `None` (after saying so loudly) when it is
    /// not installed. In CI ([`in_ci`]) a missing nginx fails the test.
    pub fn start() -> Option<Nginx> {
        Nginx::start_with(NginxOptions::default())
    }

    /// [`Nginx::start`] listening and logging as `options` say.
    pub fn start_with(options: NginxOptions) -> Option<Nginx> {
        if !installed(NGINX, "nginx-light", "nginx") {
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary directory for nginx");
        let root = dir.path().join("html");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("index.html"), "Hello, World!").unwrap();
        if matches!(options.listen, Listen::H2 | Listen::Https1) {
            fs::write(dir.path().join("cert.pem"), built_in_certificate_pem()).unwrap();
            fs::write(dir.path().join("key.pem"), built_in_key_pem()).unwrap();
        }
        // The port was free a moment ago; a rare clash shows as nginx
        // exiting, and the next attempt takes another port.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let conf = write_nginx_conf(dir.path(), &root, port, &options);
            // `-e`: even the messages before the configuration is read go
            // to the temporary directory, not to /var/log/nginx.
            let mut child = Command::new(NGINX)
                .arg("-p")
                .arg(dir.path())
                .arg("-e")
                .arg(dir.path().join("error.log"))
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .die_with_test()
                .spawn()
                .expect("start nginx");
            let socket = options.unix_socket.then(|| dir.path().join(NGINX_SOCKET));
            if wait_ready(&mut child, addr, socket.as_deref(), dir.path(), options.listen) {
                return Some(Nginx { child, addr, dir });
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("nginx did not start; see its error log above");
    }

    /// What nginx logged, one line per request: `HTTP/2.0 GET /index.html
    /// 200` (with [`NginxOptions::access_log`]). nginx writes each line as
    /// it answers, so after the client is done all of them are there.
    pub fn access_log(&self) -> Vec<String> {
        let text = fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        text.lines().map(str::to_string).collect()
    }

    /// The certificate nginx presents over TLS unless
    /// [`NginxOptions::certificate`] names another (the built-in server's:
    /// its own trust anchor), as a PEM file.
    pub fn certificate_file(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn url(&self) -> String {
        url(self.addr, "/index.html")
    }

    /// The Unix socket nginx listens on (with [`NginxOptions::unix_socket`]).
    pub fn socket_path(&self) -> PathBuf {
        self.dir.path().join(NGINX_SOCKET)
    }

    /// SIGSTOP or SIGCONT (or any signal) to the nginx process.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own, not yet reaped, child.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill(nginx {}, {signal})", self.pid());
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // A stopped nginx dies of SIGKILL too.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls until nginx accepts connections (and, on a plain HTTP/1.1 port,
/// answers a GET), or exits, or 5 s pass. On a Unix `socket`, accepting
/// is the answer.
fn wait_ready(
    child: &mut Child,
    addr: SocketAddr,
    socket: Option<&Path>,
    dir: &Path,
    listen: Listen,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            let log = fs::read_to_string(dir.join("error.log")).unwrap_or_default();
            eprintln!("nginx exited with {status} before answering: {log}");
            return false;
        }
        let ready = match listen {
            _ if socket.is_some() => socket.is_some_and(|path| UnixStream::connect(path).is_ok()),
            Listen::Http1 => {
                http_get(addr, "/index.html").is_some_and(|r| r.starts_with("HTTP/1.1 200"))
            }
            // nginx listens once its configuration is read: the port
            // accepting a connection is the answer.
            _ => TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok(),
        };
        if ready {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

fn write_nginx_conf(dir: &Path, root: &Path, port: u16, options: &NginxOptions) -> PathBuf {
    let d = dir.display();
    let access_log = if options.access_log {
        format!(
            "log_format requests '$server_protocol $request_method $request_uri $status';\n    \
             access_log {d}/access.log requests;"
        )
    } else {
        "access_log off;".to_string()
    };
    let on = match options.unix_socket {
        true => format!("unix:{d}/{NGINX_SOCKET}"),
        false => format!("127.0.0.1:{port}"),
    };
    let listen = match options.listen {
        Listen::Http1 => format!("listen {on};"),
        Listen::H2c => format!("listen {on} http2;"),
        Listen::H2 => format!("listen {on} ssl http2;"),
        Listen::Https1 => format!("listen {on} ssl;"),
    };
    let tls = match options.listen {
        Listen::H2 | Listen::Https1 => tls_conf(dir, options),
        _ => String::new(),
    };
    let (limit_zone, limit) = match options.limit_req {
        Some(rate) => (
            format!("limit_req_zone $binary_remote_addr zone=limited:1m rate={rate}r/s;"),
            "limit_req zone=limited burst=20 nodelay;\n            limit_req_status 503;",
        ),
        None => (String::new(), ""),
    };
    let conf = format!(
        "daemon off;
master_process off;
worker_processes 1;
error_log {d}/error.log;
pid {d}/nginx.pid;
events {{
    worker_connections 1024;
}}
http {{
    {access_log}
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    keepalive_requests {keepalive};
    keepalive_timeout 60s;
    http2_max_concurrent_streams {streams};
    {limit_zone}
    server {{
        {listen}
        {tls}
        root {root};
        location / {{
            {limit}
        }}
        location /post {{
            return 200 \"posted\";
        }}
    }}
}}
",
        keepalive = options.keepalive_requests,
        streams = options.max_concurrent_streams,
        root = root.display()
    );
    let path = dir.join("nginx.conf");
    fs::write(&path, conf).unwrap();
    path
}

/// The TLS directives of a `server` block.
fn tls_conf(dir: &Path, options: &NginxOptions) -> String {
    let (cert, key) = match &options.certificate {
        Some((cert, key)) => (cert.clone(), key.clone()),
        None => (dir.join("cert.pem"), dir.join("key.pem")),
    };
    let mut conf = format!(
        "ssl_certificate {};\n        ssl_certificate_key {};",
        cert.display(),
        key.display()
    );
    if let Some(ca) = &options.client_ca {
        conf += &format!(
            "\n        ssl_verify_client on;\n        ssl_client_certificate {};",
            ca.display()
        );
    }
    conf
}

/// The built-in server's certificate (`pace serve --tls`) in PEM: its own
/// trust anchor, valid for localhost and 127.0.0.1.
pub fn built_in_certificate_pem() -> String {
    pem("CERTIFICATE", include_bytes!("../../src/serve/cert/localhost.der"))
}

/// Its private key (PKCS #8) in PEM, for nginx.
fn built_in_key_pem() -> String {
    pem("PRIVATE KEY", include_bytes!("../../src/serve/cert/localhost-key.der"))
}

fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> =
        text.as_bytes().chunks(64).map(|l| std::str::from_utf8(l).unwrap()).collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
}

// ----- nghttpd: an independent HTTP/2 server --------------------------------------

const NGHTTPD: &str = "/usr/sbin/nghttpd";

/// nghttp2's server (Debian's nghttp2-server), h2c on a free port of
/// 127.0.0.1, serving `dir`'s files; killed on drop.
pub struct Nghttpd {
    child: Child,
    pub addr: SocketAddr,
}

impl Nghttpd {
    /// Starts nghttpd with these extra arguments (`-m 2`, `-w 16`...), or
    /// returns `None` (loudly) when it is not installed; in CI a missing
    /// nghttpd fails the test.
    pub fn start(dir: &Path, args: &[&str]) -> Option<Nghttpd> {
        if !installed(NGHTTPD, "nghttp2-server", "nghttpd") {
            return None;
        }
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let mut child = Command::new(NGHTTPD)
                .args(["--no-tls", "-a", "127.0.0.1", "-d"])
                .arg(dir)
                .args(args)
                .arg(port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .die_with_test()
                .spawn()
                .expect("start nghttpd");
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok() {
                    return Some(Nghttpd { child, addr });
                }
                thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("nghttpd did not start");
    }
}

impl Drop for Nghttpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One blocking HTTP/1.0 GET; the whole response, or `None` on any error.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    use std::io::Write;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

// ----- Python hdrh: an independent HdrHistogram implementation -------------------

/// Where the tests look for a Python with `hdrh` when `$PACE_TEST_PYTHON`
/// is not set: the virtual environment that `.ci/run` and the README's
/// "Tests" section create.
const TEST_VENV_PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/test-venv/bin/python3");

/// How to get Python hdrh, for the messages of a missing one.
const HDRH_INSTALL: &str = "see README.md, Tests: apt-get install python3-venv; \
     python3 -m venv target/test-venv; target/test-venv/bin/pip install hdrhistogram; \
     or set PACE_TEST_PYTHON to a python with hdrh";

/// The Python interpreter of the hdrh checks: `$PACE_TEST_PYTHON` (set by
/// `.ci/run`), else `target/test-venv/bin/python3` if it exists, else
/// `python3` on the PATH.
pub fn python_interpreter() -> PathBuf {
    if let Some(python) = std::env::var_os("PACE_TEST_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    if Path::new(TEST_VENV_PYTHON).exists() {
        return PathBuf::from(TEST_VENV_PYTHON);
    }
    PathBuf::from("python3")
}

/// Whether this is a CI run (`CI` set, as CI services and `.ci/run` do,
/// and not `false` or `0`): there a missing tool fails the test instead of
/// skipping it.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false" | "FALSE" | "False"))
}

/// Whether [`python_interpreter`] can import `hdrh` (PyPI `hdrhistogram`).
/// Locally its absence skips the caller's test after saying so loudly; in
/// CI ([`in_ci`]) it fails the test.
pub fn hdrh_available() -> bool {
    let python = python_interpreter();
    let imported = Command::new(&python)
        .args(["-c", "import hdrh.histogram, hdrh.log"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let why = match &imported {
        Ok(output) if output.status.success() => return true,
        // The last line of a traceback says what went wrong.
        Ok(output) => {
            String::from_utf8_lossy(&output.stderr).trim().lines().last().unwrap_or("").to_string()
        }
        Err(err) => format!("cannot run it: {err}"),
    };
    let python = python.display();
    if in_ci() {
        panic!("Python hdrh is missing ({python}: {why}): CI must install it ({HDRH_INSTALL})");
    }
    eprintln!(
        "\n!!!!!!!!!! SKIPPED: {python} cannot import hdrh ({why}); this check did not run. \
         To run it: {HDRH_INSTALL} !!!!!!!!!!\n"
    );
    false
}

/// Runs `<python> -c script args...` ([`python_interpreter`]) and returns
/// its stdout; fails the test with Python's stderr if the script fails.
pub fn python(script: &str, args: &[&str]) -> String {
    let python = python_interpreter();
    let output = Command::new(&python)
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|err| panic!("run {}: {err}", python.display()));
    assert!(
        output.status.success(),
        "{} failed: {}\n--- script ---\n{script}",
        python.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("python printed UTF-8")
}

// ----- slack for slow machines -------------------------------------------------

/// `bound` (a wall-time limit or an upper bound on a time) stretched by
/// the factor `PACE_TEST_SLACK` (default 1; set 2 or 3 on a machine known
/// to be slow or loaded). Lower bounds, which come from the design, are
/// never stretched.
pub fn stretched(bound: Duration) -> Duration {
    let factor = std::env::var("PACE_TEST_SLACK")
        .ok()
        .and_then(|factor| factor.trim().parse::<f64>().ok())
        .filter(|factor| factor.is_finite() && *factor >= 1.0)
        .unwrap_or(1.0);
    bound.mul_f64(factor)
}
