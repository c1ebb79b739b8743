//! Requests without a script (issue #12), end to end: the real binary
//! against a test server that records every request as it arrived (method,
//! target, headers, body), so what pace sent is checked byte for byte
//! without Lua; and against the built-in server for HEAD.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use common::{default_server, load_lock, pace, url, Run};

/// Every run here is short; this only catches a hang.
const LIMIT: Duration = Duration::from_secs(30);

// ----- a server that records what it receives ------------------------------------

/// One request as the server read it.
#[derive(Clone, Debug)]
struct Recorded {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Recorded {
    /// The value of the header `name` (any case), if it came once.
    fn header(&self, name: &str) -> Option<&str> {
        let mut values = self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let value = values.next().map(|(_, value)| value.as_str());
        assert!(values.next().is_none(), "{name} came twice: {self:?}");
        value
    }
}

/// Answers every request `200` with a 2-byte body (`ok`; a HEAD gets the
/// same head and no body) and records it. One thread per connection;
/// stopped on drop.
struct Recorder {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the recorder");
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (seen, stop) = (seen.clone(), stop.clone());
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let seen = seen.clone();
                    thread::spawn(move || serve(stream, &seen));
                }
            })
        };
        Recorder { addr, seen, stop, acceptor: Some(acceptor) }
    }

    fn url(&self, path: &str) -> String {
        url(self.addr, path)
    }

    /// The requests received so far, in the order they were read.
    fn seen(&self) -> Vec<Recorded> {
        self.seen.lock().unwrap().clone()
    }

    /// [`Recorder::seen`], forgotten by the server.
    fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut self.seen.lock().unwrap())
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Reads requests (head, then a Content-Length body) until the peer
/// closes, recording and answering each.
fn serve(mut stream: TcpStream, seen: &Mutex<Vec<Recorded>>) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        while let Some((request, used)) = parse(&pending) {
            pending.drain(..used);
            let head_only = request.method == "HEAD";
            seen.lock().unwrap().push(request);
            let answer: &[u8] = if head_only {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            };
            if stream.write_all(answer).is_err() {
                return;
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

/// The complete request at the start of `bytes` and its length, if it is
/// all there.
fn parse(bytes: &[u8]) -> Option<(Recorded, usize)> {
    let mut slots = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut slots);
    let head = match request.parse(bytes).expect("pace sent a malformed request") {
        httparse::Status::Complete(head) => head,
        httparse::Status::Partial => return None,
    };
    let headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
        .collect();
    assert!(
        !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("transfer-encoding")),
        "unexpected Transfer-Encoding: {headers:?}"
    );
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, value)| value.parse().expect("a numeric Content-Length"));
    if bytes.len() < head + length {
        return None;
    }
    let recorded = Recorded {
        method: request.method.unwrap().to_string(),
        target: request.path.unwrap().to_string(),
        headers,
        body: bytes[head..head + length].to_vec(),
    };
    Some((recorded, head + length))
}

// ----- helpers -------------------------------------------------------------------

/// `pace args` to its end, exit 0 and no error of any kind in the report.
fn run_clean(args: &[&str]) -> Run {
    let run = pace(args, LIMIT);
    run.assert_ok();
    let report = run.report();
    assert!(report.requests() > 0, "{run}");
    assert_eq!(report.errors(), Default::default(), "{run}");
    assert_eq!(report.non_2xx_3xx(), None, "{run}");
    run
}

/// `pace args` fails at once with exit 1 and one line on stderr that
/// contains `mentions`, before any connection.
fn assert_usage_error(args: &[&str], mentions: &str) {
    assert_fails(args, 1, mentions);
}

/// `pace args` stops before the run with exit 2 (a file it cannot read).
fn assert_setup_error(args: &[&str], mentions: &str) {
    assert_fails(args, 2, mentions);
}

fn assert_fails(args: &[&str], code: i32, mentions: &str) {
    let run = pace(args, LIMIT);
    run.assert_code(code);
    assert_eq!(run.stdout, "", "{run}");
    assert_eq!(run.stderr.lines().count(), 1, "{run}");
    assert!(run.stderr.starts_with("pace: ") && run.stderr.contains(mentions), "{run}");
}

/// The targets of the requests, in the order the server read them.
fn paths(seen: &[Recorded]) -> Vec<String> {
    seen.iter().map(|r| r.target.clone()).collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

/// How many of the first `n` entries of `a` and `b` agree, `n` the shorter
/// length; and `n`.
fn common_prefix(a: &[String], b: &[String]) -> (usize, usize) {
    let n = a.len().min(b.len());
    (a.iter().zip(b).take_while(|(x, y)| x == y).count(), n)
}

// ----- one request from the command line ----------------------------------------------

#[test]
fn post_with_a_body_sets_content_length_and_the_body_arrives() {
    let _lock = load_lock();
    let server = Recorder::start();
    let url = server.url("/form?x=1");
    let body = "a=b&c=d e";
    run_clean(&[
        "-t2",
        "-c2",
        "-d500ms",
        "-R200",
        "-m",
        "POST",
        "--body",
        body,
        "-H",
        "Content-Type: application/x-www-form-urlencoded",
        &url,
    ]);
    let seen = server.seen();
    assert!(seen.len() >= 20, "{} requests", seen.len());
    let host = server.addr.to_string();
    for request in &seen {
        assert_eq!((request.method.as_str(), request.target.as_str()), ("POST", "/form?x=1"));
        assert_eq!(request.header("Host"), Some(host.as_str()), "{request:?}");
        assert_eq!(request.header("Content-Length"), Some("9"), "{request:?}");
        assert_eq!(
            request.header("content-type"),
            Some("application/x-www-form-urlencoded"),
            "{request:?}"
        );
        assert_eq!(request.body, body.as_bytes());
    }
}

#[test]
fn a_body_file_is_sent_byte_for_byte() {
    let _lock = load_lock();
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..=255u8).chain(*b"\r\n\r\nGET / HTTP/1.1\r\n\r\n").collect();
    let file = write(dir.path(), "body.bin", &bytes);
    run_clean(&[
        "-t1",
        "-c1",
        "-d300ms",
        "-R100",
        "-m",
        "PUT",
        "--body-file",
        &file,
        &server.url("/up"),
    ]);
    let seen = server.seen();
    assert!(!seen.is_empty());
    for request in &seen {
        assert_eq!(request.method, "PUT");
        assert_eq!(request.header("Content-Length"), Some(bytes.len().to_string().as_str()));
        assert_eq!(request.body, bytes);
    }
}

#[test]
fn head_requests_are_read_without_a_body() {
    let _lock = load_lock();
    // The recorder announces 2 body bytes it does not send: a client that
    // waited for them would time out every request.
    let server = Recorder::start();
    let run = run_clean(&["-t1", "-c2", "-d500ms", "-T", "300ms", "-m", "HEAD", &server.url("/h")]);
    let seen = server.seen();
    assert!(seen.iter().all(|r| r.method == "HEAD" && r.body.is_empty()), "{seen:?}");
    assert!(run.report().requests() >= 10, "{run}");
    // The built-in server, closed loop and paced.
    let builtin = default_server();
    let url = url(builtin.addr(), "/");
    run_clean(&["-t1", "-c2", "-d300ms", "-T", "300ms", "-m", "HEAD", &url]);
    run_clean(&["-t2", "-c2", "-d300ms", "-R500", "-T", "300ms", "--method=HEAD", &url]);
}

#[test]
fn a_script_replaces_the_request_options_and_says_so() {
    let _lock = load_lock();
    let builtin = default_server();
    let url = url(builtin.addr(), "/echo");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/print_body.lua");
    let run =
        run_clean(&["-t1", "-c1", "-d200ms", "-s", script, "-m", "POST", "--body", "x", &url]);
    // /echo answers with the request it read: the script's GET.
    assert!(run.stdout.contains("\nGET /echo\nHost: "), "{run}");
    assert!(!run.stdout.contains("POST"), "{run}");
    assert!(
        run.stderr.contains(
            "pace: the script (-s) makes the requests: -m, --body/--body-file are not used"
        ),
        "{run}"
    );
}

// ----- --targets -----------------------------------------------------------------------

/// A targets file for `server`: a GET with a header, a POST with its body
/// file, and a HEAD, with comments, blank lines and CRLF line ends.
fn targets(dir: &Path, server: &Recorder) -> String {
    std::fs::create_dir(dir.join("bodies")).unwrap();
    write(dir, "bodies/thing.json", b"{\"thing\":1}");
    let base = server.url("");
    let text = format!(
        "# three targets\r\n\
         GET {base}/a?q=1\r\n\
         X-Account: 8675309\r\n\
         \r\n\
         POST {base}/b\r\n\
         Content-Type: application/json\r\n\
         @bodies/thing.json\r\n\
         HEAD {base}/c\r\n\
         X-Run: mine\r\n"
    );
    write(dir, "targets.txt", text.as_bytes())
}

#[test]
fn targets_are_sent_in_turn_each_as_written() {
    let _lock = load_lock();
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    let file = targets(dir.path(), &server);
    // No URL: the first target's is the run's. One connection: the
    // server sees the order of the file over and over.
    let run = run_clean(&[
        "-t1",
        "-c1",
        "-d300ms",
        "--targets",
        &file,
        "-H",
        "X-Run: common",
        "-H",
        "Accept: */*",
    ]);
    assert!(run.stdout.starts_with(&format!("Running 300ms test @ {}\n", server.url("/a?q=1"))));
    let seen = server.seen();
    assert!(seen.len() >= 6, "{} requests", seen.len());
    let cycle = ["/a?q=1", "/b", "/c"];
    for (i, path) in paths(&seen).iter().enumerate() {
        assert_eq!(path, cycle[i % 3], "request {i} of {:?}", paths(&seen));
    }
    let host = server.addr.to_string();
    let (a, b, c) = (&seen[0], &seen[1], &seen[2]);
    assert_eq!(a.method, "GET");
    assert_eq!(a.header("X-Account"), Some("8675309"));
    assert_eq!(a.header("X-Run"), Some("common"));
    assert_eq!(a.header("Content-Length"), None);
    assert_eq!(b.method, "POST");
    assert_eq!(b.header("Content-Type"), Some("application/json"));
    assert_eq!(b.header("Content-Length"), Some("11"));
    assert_eq!(b.body, b"{\"thing\":1}");
    assert_eq!(c.method, "HEAD");
    assert_eq!(c.header("X-Run"), Some("mine"), "a target's own header wins");
    for request in [a, b, c] {
        assert_eq!(request.header("Host"), Some(host.as_str()));
        assert_eq!(request.header("Accept"), Some("*/*"));
    }
}

#[test]
fn targets_go_round_robin_over_threads_with_a_rate() {
    let _lock = load_lock();
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    let file = targets(dir.path(), &server);
    let run = run_clean(&["-t2", "-c4", "-d1s", "-R300", "--targets", &file, &server.url("/")]);
    let seen = server.seen();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for path in paths(&seen) {
        *counts.entry(path).or_default() += 1;
    }
    assert_eq!(counts.len(), 3, "{counts:?}");
    // Each thread goes round from its own start: the totals differ by at
    // most one per thread.
    let (min, max) = (counts.values().min().unwrap(), counts.values().max().unwrap());
    assert!(max - min <= 2, "{counts:?}");
    assert_eq!(seen.len() as u64, run.report().requests(), "{run}");
    assert!((250..=320).contains(&seen.len()), "{} requests at 300/s for 1 s", seen.len());
}

#[test]
fn a_random_order_repeats_with_its_seed() {
    let _lock = load_lock();
    let dir = tempfile::tempdir().unwrap();
    let server = Recorder::start();
    let text: String = (0..5).map(|i| format!("GET {}\n", server.url(&format!("/{i}")))).collect();
    let file = write(dir.path(), "targets.txt", text.as_bytes());
    let sequence = |seed: Option<&str>| -> (Vec<String>, String) {
        let mut args = vec!["-t1", "-c1", "-d400ms", "-R250", "--targets", &file];
        args.extend(["--targets-order", "random"]);
        if let Some(seed) = seed {
            args.extend(["--seed", seed]);
        }
        let run = run_clean(&args);
        (paths(&server.take()), run.stderr)
    };
    // The run's seed is printed, and repeats the order.
    let printed = |stderr: &str| {
        let seed = stderr
            .lines()
            .find_map(|line| line.strip_prefix("pace: targets in random order, seed "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("no seed on stderr: {stderr}"))
            .to_string();
        assert!(stderr.contains(&format!("(--seed {seed} repeats the order)")), "{stderr}");
        seed
    };
    let (first, stderr) = sequence(None);
    let seed = printed(&stderr);
    let (again, stderr) = sequence(Some(&seed));
    assert_eq!(printed(&stderr), seed);
    let (same, n) = common_prefix(&first, &again);
    assert!(n >= 50, "{n} requests");
    assert_eq!(same, n, "seed {seed}: {first:?} vs {again:?}");
    // Random, not in turn, and another seed draws another sequence.
    let distinct: std::collections::BTreeSet<&String> = first.iter().collect();
    assert_eq!(distinct.len(), 5, "{first:?}");
    assert!(first.windows(2).any(|w| w[0] == w[1]), "never the same twice in a row: {first:?}");
    let other = if seed == "1" { "2" } else { "1" };
    let (different, _) = sequence(Some(other));
    let (same, n) = common_prefix(&first, &different);
    assert!(same < n.min(30), "seeds {seed} and {other} agree on {same} of {n}");
}

// ----- command-line errors ------------------------------------------------------------

#[test]
fn bad_targets_files_are_command_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.txt", b"# ok\nGET http://127.0.0.1:1/a\n\nX-A: 1\n");
    assert_usage_error(&["--targets", &bad], &format!("{bad}:4: expected 'METHOD URL'"));
    let bad = write(dir.path(), "bad2.txt", b"GET http://127.0.0.1:1/a\nPOST\n");
    assert_usage_error(&["--targets", &bad], &format!("{bad}:2: expected 'METHOD URL'"));
    // A file that cannot be read is a setup error (exit 2), as any file.
    let missing = dir.path().join("none.txt");
    let missing = missing.to_str().unwrap();
    assert_setup_error(
        &["--targets", missing],
        &format!("cannot read --targets file {missing}: No such file or directory"),
    );
    let no_body = write(dir.path(), "nobody.txt", b"POST http://127.0.0.1:1/a\n@gone.json\n");
    assert_setup_error(
        &["--targets", &no_body],
        &format!("{no_body}:2: cannot read body file {}", dir.path().join("gone.json").display()),
    );
    let mixed = write(
        dir.path(),
        "mixed.txt",
        b"GET http://127.0.0.1:1/a\nGET http://127.0.0.1:1/b\n\nGET http://localhost:1/c\n",
    );
    assert_usage_error(
        &["--targets", &mixed, "-t2", "-c3"],
        "the targets name 2 origins (scheme, host and port) and every thread needs a connection \
         to each: with -t 2, -c must be at least 4",
    );
    assert_usage_error(
        &["--targets", &bad, "--targets-order", "shuffle"],
        "invalid value for '--targets-order': 'shuffle' is not 'sequential' or 'random'",
    );
}

#[test]
fn bad_request_options_are_command_line_errors() {
    let url = "http://127.0.0.1:1/";
    let missing = "/nonexistent/body.json";
    assert_setup_error(
        &["--body-file", missing, url],
        "cannot read --body-file /nonexistent/body.json: No such file or directory",
    );
    assert_usage_error(
        &["--body", "x", "--body-file", missing, url],
        "--body and --body-file cannot be used together",
    );
    assert_usage_error(
        &["-m", "GE T", url],
        "invalid value for '-m': 'GE T' is not an HTTP method",
    );
    assert_usage_error(&["-n", "0", url], "-n/--requests must be at least 1");
    assert_usage_error(&["-n", "lots", url], "invalid value for '-n': 'lots' is not a number");
    assert_usage_error(&["--requests=2.5", url], "'--requests': '2.5' is not a whole number");
    assert_usage_error(&[url, "-n"], "option '-n' needs a value");
    assert_usage_error(
        &["--bo", "x", url],
        "option '--bo' is ambiguous; possibilities: '--body' '--body-file'",
    );
    assert_usage_error(&["--seed", "-3", url], "invalid value for '--seed': '-3' is not a whole");
    assert_usage_error(
        &["--targets-order", "random", url],
        "--targets-order needs --targets (or --grpc's --data)",
    );
    assert_usage_error(&["-m", "POST"], "missing URL (try 'pace --help')");
}

// ----- -n/--requests --------------------------------------------------------------

#[test]
fn n_requests_end_a_closed_loop_after_exactly_that_many() {
    let _lock = load_lock();
    let server = Recorder::start();
    let run = run_clean(&["-t2", "-c5", "-n", "1001", &server.url("/")]);
    assert!(run.stdout.starts_with("Running 1001 requests @ "), "{run}");
    assert_eq!(run.report().requests(), 1001, "{run}");
    assert_eq!(server.seen().len(), 1001);
}

#[test]
fn n_requests_are_spread_over_the_shards() {
    let _lock = load_lock();
    let server = Recorder::start();
    let mut total = 0;
    for (shard, expected) in [("0/2", 51), ("1/2", 50)] {
        let run = run_clean(&["-t2", "-c4", "-n", "101", "--shard", shard, &server.url("/")]);
        assert_eq!(run.report().requests(), expected, "{run}");
        total += expected;
        assert_eq!(server.seen().len() as u64, total, "after shard {shard}");
    }
}

#[test]
fn n_requests_with_a_rate_are_a_plan_of_n() {
    let _lock = load_lock();
    let server = Recorder::start();
    // 200 requests at 500/s: the last is due at 398 ms, and the run ends
    // with its response rather than after -d's default 10 s.
    let run = pace(&["-t2", "-c4", "-R", "500", "-n", "200", &server.url("/")], LIMIT);
    run.assert_ok();
    let report = run.report();
    let unsent = report.errors().unsent;
    assert_eq!(report.requests() + unsent, 200, "{run}");
    assert_eq!(server.seen().len() as u64, report.requests(), "{run}");
    let runtime = report.runtime_s();
    assert!((0.398..5.0).contains(&runtime), "runtime {runtime} s: {run}");
}

#[test]
fn n_requests_after_a_warm_up_are_measured_ones() {
    let _lock = load_lock();
    let server = Recorder::start();
    let args = ["-t1", "-c2", "-R", "200", "--warmup", "250ms", "-n", "50", "--json"];
    let run = pace(&[&args[..], &[server.url("/").as_str()]].concat(), LIMIT);
    run.assert_ok();
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("JSON");
    assert_eq!(json["requests_limit"], 50, "{run}");
    let unsent = json["errors"]["unsent"].as_u64().unwrap();
    assert_eq!(json["requests"].as_u64().unwrap() + unsent, 50, "{run}");
    // The warm-up's 50 requests reached the server too.
    assert_eq!(server.seen().len() as u64, 100 - unsent, "{run}");
}

#[test]
fn a_duration_still_bounds_n_requests() {
    let _lock = load_lock();
    let server = default_server();
    let run = run_clean(&["-t1", "-c1", "-d", "300ms", "-n", "100M", &url(server.addr(), "/")]);
    assert!(run.stdout.starts_with("Running 300ms test, at most 100000000 requests @ "), "{run}");
    let report = run.report();
    assert!(report.requests() < 100_000_000, "{run}");
    let runtime = report.runtime_s();
    assert!((0.3..5.0).contains(&runtime), "runtime {runtime} s: {run}");
}
