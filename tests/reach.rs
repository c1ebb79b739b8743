//! Reaching the servers users point pace at (issue 18): `--unix-socket`
//! against `pace serve --unix-socket` (the server counts the requests) and
//! against nginx's `listen unix:` (its access log shows them), over
//! HTTP/1.1, HTTP/2 and TLS; every address of a name tried (`localhost`
//! reaching a server on `::1` only); `-4`/`-6`; `--connect-to` keeping
//! the URL's `Host`; and each failure said in words.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{
    built_in_certificate_pem, in_ci, load_lock, pace, serve, serve_options, spawn_pace,
    spawn_pace_with_env, Listen, Nginx, NginxOptions, Run, Running,
};
use pace::serve::ServeOptions;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

/// `pace serve --unix-socket` in a temporary directory, stopped (SIGTERM)
/// on drop.
struct SocketServer {
    running: Option<Running>,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl SocketServer {
    fn start(extra: &[&str]) -> SocketServer {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pace.sock");
        let mut args = vec!["serve", "--unix-socket", path.to_str().unwrap()];
        args.extend(extra);
        let mut running = spawn_pace(&args);
        wait_for_socket(&path, &mut running);
        SocketServer { running: Some(running), path, _dir: dir }
    }

    fn path(&self) -> &str {
        self.path.to_str().unwrap()
    }

    /// The server's `/stats`, asked over its socket.
    fn stats(&self) -> Value {
        let mut stream = UnixStream::connect(&self.path).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(stream, "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let body = response.split("\r\n\r\n").nth(1).unwrap_or_else(|| panic!("{response}"));
        serde_json::from_str(body).unwrap()
    }

    /// Stops the server; what it printed.
    fn stop(mut self) -> Run {
        let running = self.running.take().unwrap();
        running.signal(libc::SIGTERM);
        running.wait(LIMIT)
    }
}

impl Drop for SocketServer {
    fn drop(&mut self) {
        if let Some(running) = &self.running {
            running.signal(libc::SIGTERM);
        }
    }
}

/// Polls until something accepts on `path`; fails if the server exits or
/// 10 s pass.
fn wait_for_socket(path: &Path, server: &mut Running) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while UnixStream::connect(path).is_err() {
        assert!(server.is_running(), "pace serve exited before listening on {}", path.display());
        assert!(Instant::now() < deadline, "pace serve did not listen on {}", path.display());
        thread::sleep(Duration::from_millis(10));
    }
}

fn json_of(run: &Run) -> Value {
    let last = run.stdout.lines().rev().find(|l| l.starts_with('{'));
    serde_json::from_str(last.unwrap_or_else(|| panic!("no JSON\n{run}"))).unwrap()
}

/// Asserts pace failed with `code` and said `message` on its one line of
/// stderr.
fn assert_fails(run: &Run, code: i32, message: &str) {
    run.assert_code(code);
    assert_eq!(run.stderr, format!("pace: {message}\n"), "{run}");
}

#[test]
fn unix_socket_against_pace_serve_over_http1_and_http2() {
    let _load = load_lock();
    let server = SocketServer::start(&["-t2"]);
    let socket = server.path();
    let before = server.stats()["requests"].as_u64().unwrap();
    let run =
        pace(&["--unix-socket", socket, "-n", "400", "-c4", "-t2", "http://pace.test/"], LIMIT);
    run.assert_ok();
    // wrk's header line as it was, then where the connections went.
    let mut lines = run.stdout.lines();
    assert_eq!(lines.next(), Some("Running 400 requests @ http://pace.test/"), "{run}");
    assert_eq!(lines.next(), Some("  2 threads and 4 connections"), "{run}");
    assert_eq!(lines.next(), Some(&*format!("  connecting to unix:{socket} (--unix-socket)")));
    assert_eq!(run.report().requests(), 400, "{run}");
    assert!(run.report().socket_errors().is_none(), "{run}");
    let after_http1 = server.stats()["requests"].as_u64().unwrap();
    assert_eq!(after_http1 - before, 400, "the server counts what pace sent\n{run}");

    let run = pace(
        &["--unix-socket", socket, "--http2", "-n", "300", "-c2", "-t1", "-e", "http://pace.test/"],
        LIMIT,
    );
    run.assert_ok();
    let json = json_of(&run);
    assert_eq!(json["requests"].as_u64(), Some(300), "{run}");
    assert_eq!(json["protocol"], "h2c", "{run}");
    assert_eq!(json["connected_to"], format!("unix:{socket}"), "{run}");
    let after_http2 = server.stats()["requests"].as_u64().unwrap();
    assert_eq!(after_http2 - after_http1, 300, "{run}");

    // The socket file goes with the server.
    let path = server.path.clone();
    let stopped = server.stop();
    assert!(stopped.stderr.contains(&format!("listening on unix:{}", path.display())), "{stopped}");
    assert!(!path.exists(), "{} left behind", path.display());
}

/// TLS over a Unix socket, as curl allows: the certificate is verified
/// for the URL's host, which is never resolved or connected to.
#[test]
fn tls_over_a_unix_socket_verifies_the_url_host() {
    let _load = load_lock();
    let server = SocketServer::start(&["--tls"]);
    let dir = tempfile::tempdir().unwrap();
    let certificate = dir.path().join("serve.pem");
    std::fs::write(&certificate, built_in_certificate_pem()).unwrap();
    let env = [("SSL_CERT_FILE", certificate.to_str().unwrap())];
    let args = ["--unix-socket", server.path(), "-n", "100", "-c2", "-t1"];
    let run = spawn_pace_with_env(&[&args[..], &["https://localhost/"]].concat(), &env).wait(LIMIT);
    run.assert_ok();
    assert_eq!(run.report().requests(), 100, "{run}");
    assert!(run.report().socket_errors().is_none(), "{run}");
    // Another name: the certificate is not valid for it.
    let run = spawn_pace_with_env(&[&args[..], &["https://pace.test/"]].concat(), &env).wait(LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains(&format!("TLS handshake with unix:{}", server.path())), "{run}");
    assert!(run.stderr.contains("certificate"), "{run}");
}

/// nginx's `listen unix:PATH;`, over HTTP/1.1 and h2c: its access log has
/// exactly pace's requests.
#[test]
fn unix_socket_against_nginx() {
    let _load = load_lock();
    for (listen, protocol, extra) in
        [(Listen::Http1, "HTTP/1.1", None), (Listen::H2c, "HTTP/2.0", Some("--http2"))]
    {
        let options =
            NginxOptions { listen, access_log: true, unix_socket: true, ..NginxOptions::default() };
        let Some(nginx) = Nginx::start_with(options) else { return };
        let socket = nginx.socket_path();
        let mut args = vec!["--unix-socket", socket.to_str().unwrap(), "-n", "200", "-c2", "-t1"];
        args.extend(extra);
        args.push("http://localhost/index.html");
        let run = pace(&args, LIMIT);
        run.assert_ok();
        assert_eq!(run.report().requests(), 200, "{run}");
        assert!(run.report().socket_errors().is_none(), "{run}");
        let log = nginx.access_log();
        assert_eq!(log.len(), 200, "{run}\n{log:?}");
        let expected = format!("{protocol} GET /index.html 200");
        assert!(log.iter().all(|line| *line == expected), "{log:?}");
    }
}

#[test]
fn a_unix_socket_that_cannot_be_used_is_said_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sock");
    let missing = missing.to_str().unwrap();
    let run = pace(&["--unix-socket", missing, "http://localhost/"], LIMIT);
    assert_fails(&run, 2, &format!("--unix-socket: no such socket: {missing}"));
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let file = file.to_str().unwrap();
    let run = pace(&["--unix-socket", file, "http://localhost/"], LIMIT);
    assert_fails(&run, 2, &format!("--unix-socket: not a socket: {file} is a file"));
    // A socket left behind by a server that is gone.
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let stale = stale.to_str().unwrap();
    let run = pace(&["--unix-socket", stale, "http://localhost/"], LIMIT);
    assert_fails(
        &run,
        2,
        &format!("--unix-socket: nothing listens on {stale} (connection refused)"),
    );
    let run = pace(&["--unix-socket", stale, "-4", "http://localhost/"], LIMIT);
    assert_fails(
        &run,
        1,
        "--unix-socket cannot be used with --connect-to or -4/-6: every connection goes to the \
         socket",
    );
}

/// Every address a name resolves to is tried: `localhost` reaches a
/// server listening on `::1` alone, whatever `/etc/hosts` says.
#[test]
fn localhost_reaches_a_server_on_ipv6_only() {
    let _load = load_lock();
    let Some(server) = ipv6_server() else { return };
    let port = server.addr().port();
    let run = pace(&["-n", "100", "-c2", "-t1", &format!("http://localhost:{port}/")], LIMIT);
    run.assert_ok();
    assert_eq!(run.report().requests(), 100, "{run}");
    assert!(run.report().socket_errors().is_none(), "{run}");
    assert_eq!(server.stats().requests, 100, "{run}");
    // -4 leaves only 127.0.0.1, where nothing listens on that port.
    let run = pace(&["-4", "-n", "10", &format!("http://localhost:{port}/")], LIMIT);
    assert_fails(&run, 2, &format!("unable to connect to localhost:{port}: Connection refused"));
    let run = pace(&["-6", "-n", "10", "-c2", "-t1", &format!("http://localhost:{port}/")], LIMIT);
    run.assert_ok();
    assert!(run.stdout.contains("  connecting over IPv6 only (-6)\n"), "{run}");
}

/// The built-in server on `[::1]:0`, or None (loudly; a failure in CI)
/// where the machine has no IPv6 loopback.
fn ipv6_server() -> Option<pace::serve::ServerHandle> {
    let bind = "[::1]:0".parse().unwrap();
    match pace::serve::start(ServeOptions { bind, ..serve_options() }) {
        Ok(server) => Some(server),
        Err(e) if !in_ci() => {
            eprintln!("\n!!!!!!!!!! SKIPPED: no IPv6 loopback here ({e}); this test did not run !!!!!!!!!!\n");
            None
        }
        Err(e) => panic!("CI must have an IPv6 loopback (::1): {e}"),
    }
}

#[test]
fn one_address_family() {
    let _load = load_lock();
    let server = serve(serve_options());
    let url = format!("http://127.0.0.1:{}/", server.addr().port());
    let run = pace(&["-6", &url], LIMIT);
    assert_fails(&run, 2, "127.0.0.1 has no IPv6 address (-6)");
    let run = pace(&["-4", "-n", "50", "-c2", "-t1", "-e", &url], LIMIT);
    run.assert_ok();
    assert_eq!(json_of(&run)["ip_family"], "ipv4", "{run}");
    assert_eq!(json_of(&run)["requests"].as_u64(), Some(50), "{run}");
}

/// A server that answers every request with 204 and keeps each request's
/// `Host` header.
fn host_recorder() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hosts = Arc::new(Mutex::new(Vec::new()));
    let seen = hosts.clone();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    if let Some(host) = line.strip_prefix("Host: ") {
                        seen.lock().unwrap().push(host.trim_end().to_string());
                    }
                    if line == "\r\n"
                        && writer.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").is_err()
                    {
                        return;
                    }
                    line.clear();
                }
            });
        }
    });
    (addr, hosts)
}

/// `--connect-to` sends a name's connections elsewhere; the requests still
/// carry the URL's `Host`. The name (`.invalid`, RFC 6761) never resolves.
#[test]
fn connect_to_keeps_the_host() {
    let _load = load_lock();
    let (addr, hosts) = host_recorder();
    let rule = format!("pace.invalid:8080:127.0.0.1:{}", addr.port());
    let args = ["--connect-to", "other:1:nowhere.invalid:1", "--connect-to", &rule];
    let run = pace(
        &[&args[..], &["-n", "20", "-c1", "-t1", "http://pace.invalid:8080/"]].concat(),
        LIMIT,
    );
    run.assert_ok();
    assert_eq!(run.report().requests(), 20, "{run}");
    assert!(run.stdout.contains(&format!("  connecting to {addr} (--connect-to)\n")), "{run}");
    let hosts = hosts.lock().unwrap().clone();
    assert_eq!(hosts.len(), 20, "{hosts:?}");
    assert!(hosts.iter().all(|host| host == "pace.invalid:8080"), "{hosts:?}");
    // Without the rule the name does not resolve.
    let run = pace(&["-n", "1", "http://pace.invalid:8080/"], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.starts_with("pace: unable to resolve pace.invalid:8080: "), "{run}");
}

/// With a targets file of several origins, `--connect-to` applies to each
/// origin: each name's connections go to its own server, with its `Host`.
#[test]
fn connect_to_applies_per_origin() {
    let _load = load_lock();
    let ((a, a_hosts), (b, b_hosts)) = (host_recorder(), host_recorder());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("targets.txt");
    std::fs::write(&file, "GET http://a.invalid:8080/a\n\nGET http://b.invalid:8080/b\n").unwrap();
    let (rule_a, rule_b) = (
        format!("a.invalid:8080:127.0.0.1:{}", a.port()),
        format!("b.invalid:8080:127.0.0.1:{}", b.port()),
    );
    let saved = dir.path().join("saved.json");
    let saved = saved.to_str().unwrap();
    let targets = ["--targets", file.to_str().unwrap(), "-c2", "-t1"];
    let rules = ["--connect-to", &rule_a, "--connect-to", &rule_b];
    let run = pace(&[&rules[..], &targets, &["-n", "20"]].concat(), LIMIT);
    run.assert_ok();
    assert_eq!(run.report().requests(), 20, "{run}");
    let (a_hosts, b_hosts) = (a_hosts.lock().unwrap().clone(), b_hosts.lock().unwrap().clone());
    assert!(!a_hosts.is_empty() && !b_hosts.is_empty(), "{a_hosts:?} {b_hosts:?}\n{run}");
    assert_eq!(a_hosts.len() + b_hosts.len(), 20, "{run}");
    assert!(a_hosts.iter().all(|host| host == "a.invalid:8080"), "{a_hosts:?}");
    assert!(b_hosts.iter().all(|host| host == "b.invalid:8080"), "{b_hosts:?}");
    // The header names each origin's address; a saved run says it again.
    let line = format!(
        "  connecting http://a.invalid:8080 to 127.0.0.1:{}, http://b.invalid:8080 to \
         127.0.0.1:{} (--connect-to)\n",
        a.port(),
        b.port()
    );
    assert!(run.stdout.contains(&line), "{run}");
    pace(&[&rules[..], &targets, &["-n", "4", "-e", "-o", saved]].concat(), LIMIT).assert_ok();
    let report = pace(&["report", saved], LIMIT);
    report.assert_ok();
    assert!(report.stdout.contains(&line), "{report}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    let to = |i: usize| json["origins"][i]["connected_to"].as_str().map(str::to_string);
    assert_eq!(to(0), Some(format!("127.0.0.1:{}", a.port())), "{json}");
    assert_eq!(to(1), Some(format!("127.0.0.1:{}", b.port())), "{json}");
}

#[test]
fn a_bad_connect_to_is_a_usage_error() {
    let run = pace(&["--connect-to", "pace.test:80:127.0.0.1", "http://pace.test/"], LIMIT);
    assert_fails(
        &run,
        1,
        "invalid value for '--connect-to': 'pace.test:80:127.0.0.1' is not HOST:PORT:ADDR:PORT \
         (too few fields; e.g. example.com:443:127.0.0.1:8443, an IPv6 address in brackets, an \
         empty field for any or the same)",
    );
}

/// A script sees the socket in `wrk.addrs`.
#[test]
fn scripts_see_the_socket() {
    let _load = load_lock();
    let server = SocketServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("addrs.lua");
    std::fs::write(&script, "function setup(thread) io.write(tostring(wrk.addrs[1]), '\\n') end")
        .unwrap();
    let run = pace(
        &[
            "--unix-socket",
            server.path(),
            "-s",
            script.to_str().unwrap(),
            "-n",
            "10",
            "-c1",
            "-t1",
            "http://x/",
        ],
        LIMIT,
    );
    run.assert_ok();
    assert!(run.stdout.starts_with(&format!("unix:{}\nRunning", server.path())), "{run}");
    assert_eq!(run.report().requests(), 10, "{run}");
}
