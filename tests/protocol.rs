//! HTTP/1.1 framing end to end against the built-in server's endpoints:
//! chunked, close-delimited and large bodies, `Connection: close`,
//! `100 Continue`, bodiless statuses; IPv6, `-H` without a space, TLS.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::{
    default_server, in_ci, load_lock, pace, serve, serve_options, spawn_pace_with_env, url, Report,
    Run,
};
use pace::serve::{ServeOptions, ServerHandle};

const LIMIT: Duration = Duration::from_secs(10);
const ECHO_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/print_body.lua");

/// `pace -t1 -c2 -d1s <path>`: exit 0, more than one request per
/// connection (the connections went on after a response), no socket errors,
/// no error statuses, and pace counted one response per request the
/// server read (an interim `100 Continue` counted as a response, or a
/// response split in two, would break that).
fn closed_loop(server: &ServerHandle, path: &str) -> (Run, Report) {
    let target = url(server.addr(), path);
    let before = server.stats().requests;
    let run = pace(&["-t1", "-c2", "-d1s", &target], LIMIT);
    run.assert_ok();
    let report = run.report();
    let requests = report.requests();
    assert!(requests >= 2 * 2, "{path}: only {requests} requests\n{run}");
    let errors = report.errors();
    assert_eq!(errors.read, 0, "{path}: read errors\n{run}");
    assert!(report.socket_errors().is_none(), "{path}: socket errors\n{run}");
    assert_eq!(report.non_2xx_3xx(), None, "{path}\n{run}");
    let served = server.stats().requests - before;
    assert!(
        served >= requests && served <= requests + 2,
        "{path}: server read {served} requests, pace counted {requests}\n{run}"
    );
    (run, report)
}

#[test]
fn chunked_bodies() {
    let _load = load_lock();
    let server = default_server();
    closed_loop(&server, "/chunked");
    let (run, report) = closed_loop(&server, "/chunked?n=100");
    // 100 chunks of 64 bytes each, plus framing and headers.
    assert!(report.bytes_read() >= report.requests() as f64 * 6400.0, "{run}");
}

#[test]
fn close_delimited_bodies() {
    let _load = load_lock();
    let server = default_server();
    let connections_before = server.stats().connections;
    let (run, report) = closed_loop(&server, "/eof");
    // Every response ends with the connection: one connection each.
    let connections = server.stats().connections - connections_before;
    assert!(
        connections >= report.requests(),
        "{connections} connections for {} requests\n{run}",
        report.requests()
    );
}

#[test]
fn connection_close_reconnects() {
    let _load = load_lock();
    let server = default_server();
    let connections_before = server.stats().connections;
    let (run, report) = closed_loop(&server, "/close");
    let connections = server.stats().connections - connections_before;
    // One per request, plus the probe and the last reconnects.
    let requests = report.requests();
    assert!(
        connections >= requests && connections <= requests + 4,
        "{connections} connections for {requests} requests\n{run}"
    );
}

#[test]
fn interim_100_continue() {
    let _load = load_lock();
    let server = default_server();
    closed_loop(&server, "/continue");
}

#[test]
fn large_bodies() {
    let _load = load_lock();
    let server = default_server();
    let (run, report) = closed_loop(&server, "/bytes/1000000");
    let requests = report.requests() as f64;
    let read = report.bytes_read();
    // A response is 1 MB of body and ~100 bytes of headers; at the end a
    // response or two may still have been on the way. The report rounds
    // to 3 significant digits (`1.05GB`): 1% either way.
    assert!(read >= 0.99 * requests * 1_000_000.0, "{read} bytes for {requests} responses\n{run}");
    assert!(
        read <= 1.01 * (requests + 2.0) * 1_000_200.0,
        "{read} bytes for {requests} responses\n{run}"
    );
}

#[test]
fn bodiless_statuses() {
    let _load = load_lock();
    let server = default_server();
    // 204 and 304 have no body and no Content-Length: waiting for a body
    // (or for the close) would give timeouts or read errors.
    closed_loop(&server, "/status/204");
    closed_loop(&server, "/status/304");
}

#[test]
fn ipv6_loopback() {
    if TcpListener::bind("[::1]:0").is_err() {
        eprintln!("\n!!!!!!!!!! SKIPPED: no IPv6 loopback (::1) on this machine !!!!!!!!!!\n");
        return;
    }
    let _load = load_lock();
    let server = serve(ServeOptions { bind: "[::1]:0".parse().unwrap(), ..serve_options() });
    let target = url(server.addr(), "/");
    assert!(target.starts_with("http://[::1]:"), "{target}");
    let run = pace(&["-t1", "-c2", "-d500ms", &target], LIMIT);
    run.assert_ok();
    assert!(run.stdout.starts_with(&format!("Running 500ms test @ {target}\n")), "{run}");
    let report = run.report();
    assert!(report.requests() >= 2 * 2, "{run}");
    assert!(report.socket_errors().is_none(), "{run}");
    assert!(server.stats().requests >= report.requests(), "{run}");
}

#[test]
fn headers_reach_the_server() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/resource");
    // /resource answers 200 with `X-Token: tok123`, else 401.
    for header in ["X-Token:tok123", "X-Token: tok123"] {
        let run = pace(&["-t1", "-c1", "-d300ms", "-H", header, &target], LIMIT);
        run.assert_ok();
        let report = run.report();
        assert!(report.requests() >= 2, "{run}");
        assert_eq!(report.non_2xx_3xx(), None, "-H {header:?} did not reach the server\n{run}");
    }
    let run = pace(&["-t1", "-c1", "-d300ms", &target], LIMIT);
    run.assert_ok();
    let report = run.report();
    assert_eq!(report.non_2xx_3xx(), Some(report.requests()), "without the header: 401s\n{run}");
}

fn tls_server() -> ServerHandle {
    serve(ServeOptions { tls: true, ..serve_options() })
}

fn https(server: &ServerHandle) -> String {
    format!("https://{}/", server.addr())
}

#[test]
fn tls_insecure() {
    let _load = load_lock();
    let server = tls_server();
    let target = https(&server);
    let run = pace(&["-k", "-t1", "-c2", "-d1s", &target], LIMIT);
    run.assert_ok();
    let report = run.report();
    assert!(report.requests() >= 2 * 2, "{run}");
    assert_eq!(report.errors().connect, 0, "{run}");
    assert!(report.socket_errors().is_none(), "{run}");
    assert!(server.stats().requests >= report.requests(), "{run}");
}

#[test]
fn tls_verifies_certificates_by_default() {
    let _load = load_lock();
    let server = tls_server();
    let target = https(&server);
    let run = pace(&["-t1", "-c2", "-d1s", &target], LIMIT);
    // The self-signed certificate is not trusted: pace completes one
    // handshake before the run (src/engine, Engine::prepare) and refuses
    // to start, with one line naming the certificate problem and the way
    // round it, and exit 2 (the target cannot be used).
    run.assert_code(2);
    assert_eq!(run.stdout, "", "no header, no report\n{run}");
    let stderr = run.stderr.trim_end();
    assert_eq!(stderr.lines().count(), 1, "one line on stderr\n{run}");
    let handshake = format!("pace: TLS handshake with {} failed: ", server.addr());
    if stderr.starts_with("pace: no trusted CA certificates found on this system") && !in_ci() {
        // Nothing to verify against: refused as well, but the handshake
        // check did not run.
        eprintln!("\n!!!!!!!!!! no system trust store (apt-get install ca-certificates): the certificate check did not run !!!!!!!!!!\n");
    } else {
        assert!(stderr.starts_with(&handshake), "{run}");
        assert!(stderr.contains("certificate"), "the certificate problem is not named\n{run}");
        assert!(
            stderr.ends_with(
                "(trust its CA with --cacert FILE, or use -k/--insecure to skip certificate \
                 verification)"
            ),
            "{run}"
        );
    }
    // The handshake is all that happened: no request reached the server.
    assert_eq!(server.stats().requests, 0, "{run}");
}

/// SSL_CERT_FILE names the certificates to trust instead of the system's
/// (rustls-native-certs reads it, and SSL_CERT_DIR): with the built-in
/// server's certificate in it (its own trust anchor), pace verifies the
/// server without -k.
#[test]
fn ssl_cert_file_names_the_certificates_to_trust() {
    let _load = load_lock();
    let server = tls_server();
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("serve.pem");
    std::fs::write(&pem, common::built_in_certificate_pem()).unwrap();
    let trusted = [("SSL_CERT_FILE", pem.to_str().unwrap())];
    let run =
        spawn_pace_with_env(&["-t1", "-c2", "-d500ms", &https(&server)], &trusted).wait(LIMIT);
    run.assert_ok();
    assert!(run.report().requests() > 0, "{run}");
    assert!(run.report().socket_errors().is_none(), "{run}");
}

/// README's way to start `pace serve` in the background: its `listening
/// on URL` line on stderr says it accepts connections, so a benchmark
/// started right after that line (no sleep) finds it.
#[test]
fn pace_serve_says_when_it_listens() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let _load = load_lock();
    let mut server = Command::new(env!("CARGO_BIN_EXE_pace"))
        .args(["serve", "--tls", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pace serve");
    let stderr = server.stderr.take().unwrap();
    let (said, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stderr).read_line(&mut line);
        let _ = said.send(line);
    });
    let line = heard.recv_timeout(LIMIT);
    let run = line.as_ref().ok().and_then(|line| {
        let url = line.strip_prefix("pace serve: listening on ")?.split(' ').next()?;
        Some(pace(&["-k", "-t1", "-c1", "-d300ms", url], LIMIT))
    });
    let _ = server.kill();
    let _ = server.wait();
    let run = run.unwrap_or_else(|| panic!("no 'listening on' line: {line:?}"));
    run.assert_ok();
    assert!(run.report().requests() > 0, "{run}");
}

/// https against a plain-HTTP port says so in words before the run.
#[test]
fn https_against_plain_http_says_so() {
    let _load = load_lock();
    let server = default_server();
    let run = pace(&["-k", "-d1s", &format!("https://{}/", server.addr())], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains("the server answered in plain HTTP, not TLS"), "{run}");
}

/// http against a TLS port: each attempt is a read error that names it.
#[test]
fn http_against_tls_says_so() {
    let _load = load_lock();
    let server = tls_server();
    let run = pace(&["-t1", "-c1", "-d300ms", &format!("http://{}/", server.addr())], LIMIT);
    run.assert_ok();
    let causes = run.report().error_causes();
    assert!(
        causes.iter().all(|c| c.starts_with("read: the server answered in TLS, not plain HTTP")),
        "{causes:?}\n{run}"
    );
    assert!(!causes.is_empty(), "{run}");
}

/// A TLS handshake that gets no answer times out, and says after how
/// long, instead of "Resource temporarily unavailable".
#[test]
fn a_silent_tls_handshake_times_out() {
    let _load = load_lock();
    // The kernel accepts the connection; nothing ever answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = format!("https://{}/", silent.local_addr().unwrap());
    let run = pace(&["-k", "-d1s", "-T500ms", &target], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains("no answer within 500ms (timed out)"), "{run}");
}

/// `user:password@` in the URL is sent as Basic authorization, as curl
/// sends it.
#[test]
fn url_credentials_are_sent_as_basic_authorization() {
    let _load = load_lock();
    let server = default_server();
    let target = format!("http://alice:s%40cret@{}/echo", server.addr());
    let run = pace(&["-t1", "-c1", "-d200ms", "-s", ECHO_SCRIPT, &target], LIMIT);
    run.assert_ok();
    // alice:s@cret in base64.
    assert!(run.stdout.contains("Authorization: Basic YWxpY2U6c0BjcmV0"), "{run}");
}
