//! `pace serve --http3` over real UDP on 127.0.0.1, with the client's
//! HTTP/3 connection ([`crate::http3::test_client`]).

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::response::LINE;
use super::{start, ServeOptions, ServerHandle};
use crate::http3::connection::{Event, Refused};
use crate::http3::error::{EXCESSIVE_LOAD, MESSAGE_ERROR};
use crate::http3::response::Response;
use crate::http3::test_client::{get, request, TestClient};

const LIMIT: Duration = Duration::from_secs(10);

fn server(opts: ServeOptions) -> ServerHandle {
    start(ServeOptions { bind: "127.0.0.1:0".parse().unwrap(), http3: true, ..opts }).unwrap()
}

fn client(server: &ServerHandle) -> TestClient {
    TestClient::connect(server.addr(), server.certificate_der().unwrap()).connected()
}

/// The responses among `events`, by token.
fn responses(events: Vec<Event>) -> Vec<(u64, Result<Response, u64>)> {
    let mut out: Vec<_> = events
        .into_iter()
        .filter_map(|event| match event {
            Event::Response { token, result } => Some((token, result.map_err(|e| e.code))),
            _ => None,
        })
        .collect();
    out.sort_by_key(|(token, _)| *token);
    out
}

fn count_responses(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e, Event::Response { .. })).count()
}

/// Sends each request (token: its index) and waits for all the answers.
fn exchange(client: &mut TestClient, requests: &[Vec<u8>]) -> Vec<(u64, Result<Response, u64>)> {
    for (token, frames) in requests.iter().enumerate() {
        client.connection.send(frames, token as u64).unwrap();
    }
    responses(client.run_until(LIMIT, |events| count_responses(events) == requests.len()))
}

fn ok(result: &Result<Response, u64>) -> (u16, &[u8]) {
    let response = result.as_ref().unwrap_or_else(|code| panic!("reset with 0x{code:x}"));
    (response.status, &response.captured.as_ref().unwrap().body)
}

#[test]
fn the_endpoints_answer_over_http3_and_count_in_the_stats() {
    let server = server(ServeOptions::default());
    let mut client = client(&server);
    let echo = request("POST", "/echo", &[("content-type", "text/plain")], b"hello");
    let answers =
        exchange(&mut client, &[get("/"), get("/status/404"), get("/bytes/100000"), echo]);
    assert_eq!(ok(&answers[0].1), (200, &b"Hello, World!"[..]));
    assert_eq!(ok(&answers[1].1), (404, &b"Hello, World!"[..]));
    let (status, body) = ok(&answers[2].1);
    assert_eq!((status, body.len()), (200, 100_000));
    assert!(body.chunks(LINE.len()).all(|line| LINE.starts_with(line)));
    assert_eq!(ok(&answers[3].1), (200, &b"POST /echo\nContent-Type: text/plain\n\nhello"[..]));
    let headers = &answers[0].1.as_ref().unwrap().captured.as_ref().unwrap().headers;
    assert!(headers.contains(&("content-length".into(), "13".into())), "{headers:?}");
    let stats = server.stats();
    assert_eq!((stats.connections, stats.requests), (1, 4));
    // `/stats` over HTTP/3 says the same, and does not count itself.
    let answers = exchange(&mut client, &[get("/stats")]);
    let (_, body) = ok(&answers[0].1);
    assert!(body.starts_with(br#"{"connections":1,"requests":4,"#), "{body:?}");
}

#[test]
fn an_echo_body_too_large_is_refused_on_its_stream() {
    let server = server(ServeOptions::default());
    let mut client = client(&server);
    let large = request("POST", "/echo", &[], &vec![b'x'; (1 << 20) + 1]);
    let answers = exchange(&mut client, &[large, get("/")]);
    assert_eq!(ok(&answers[0].1).0, 413);
    assert_eq!(ok(&answers[1].1).0, 200);
}

#[test]
fn a_delay_holds_its_answer_back() {
    let server = server(ServeOptions::default());
    let mut client = client(&server);
    let sent = Instant::now();
    let answers = exchange(&mut client, &[get("/delay/50")]);
    assert!(sent.elapsed() >= Duration::from_millis(50), "{:?}", sent.elapsed());
    assert_eq!(ok(&answers[0].1).0, 200);
}

#[test]
fn the_added_latency_holds_every_answer_back() {
    let server = server(ServeOptions { latency: Duration::from_millis(30), ..Default::default() });
    let mut client = client(&server);
    let sent = Instant::now();
    let answers = exchange(&mut client, &[get("/"), get("/status/503")]);
    assert!(sent.elapsed() >= Duration::from_millis(30), "{:?}", sent.elapsed());
    assert_eq!((ok(&answers[0].1).0, ok(&answers[1].1).0), (200, 503));
}

#[test]
fn many_concurrent_requests_are_all_answered() {
    let server = server(ServeOptions::default());
    let mut client = client(&server);
    let total = 500;
    let (mut sent, mut answered) = (0, Vec::new());
    let deadline = Instant::now() + LIMIT;
    while answered.len() < total {
        assert!(Instant::now() < deadline, "{} of {total} answered", answered.len());
        while sent < total && client.connection.send(&get("/"), sent as u64).is_ok() {
            sent += 1;
        }
        answered.extend(responses(client.step()));
    }
    assert!(answered.iter().all(|(_, result)| ok(result).0 == 200));
    assert_eq!(server.stats().requests, total as u64);
}

#[test]
fn a_client_opens_no_more_streams_than_allowed() {
    let server = server(ServeOptions::default());
    let mut client = client(&server);
    // Never answered: each holds its stream.
    let opened =
        (0..1000).take_while(|&k| client.connection.send(&get("/hang"), k).is_ok()).count();
    assert_eq!(opened, 128);
    assert_eq!(client.connection.send(&get("/"), 1000), Err(Refused::NoStream));
    // The server reads them all, and still answers on a new connection.
    client.run_until(LIMIT, |_| server.stats().requests == 128);
    let mut other = self::client(&server);
    assert_eq!(ok(&exchange(&mut other, &[get("/")])[0].1).0, 200);
}

#[test]
fn malformed_requests_reset_their_streams_with_the_rfcs_codes() {
    let server = server(ServeOptions::default());
    let mut client = client(&server);
    let huge_header = request("GET", "/", &[("x-big", &"b".repeat(70_000))], &[]);
    let upper_case = request("GET", "/", &[("X-Upper", "1")], &[]);
    let wrong_length = request("POST", "/echo", &[("content-length", "3")], b"hello");
    let connection_specific = request("GET", "/", &[("connection", "close")], &[]);
    let answers =
        exchange(&mut client, &[huge_header, upper_case, wrong_length, connection_specific]);
    let codes: Vec<_> = answers.iter().map(|(_, result)| result.as_ref().err()).collect();
    assert_eq!(
        codes,
        [Some(&EXCESSIVE_LOAD), Some(&MESSAGE_ERROR), Some(&MESSAGE_ERROR), Some(&MESSAGE_ERROR)]
    );
    // The connection goes on.
    assert_eq!(ok(&exchange(&mut client, &[get("/")])[0].1).0, 200);
    assert_eq!(server.stats().requests, 1);
}

#[test]
fn garbage_datagrams_are_ignored() {
    let server = server(ServeOptions::default());
    let garbage = UdpSocket::bind("127.0.0.1:0").unwrap();
    for size in [0, 1, 20, 1200, 1500, 65_000] {
        let bytes: Vec<u8> = (0..size).map(|k| (k * 131 % 251) as u8).collect();
        garbage.send_to(&bytes, server.addr()).unwrap();
    }
    // A QUIC long header with a version nobody speaks, padded to a client's
    // first datagram: answered (version negotiation) or dropped.
    let mut unknown_version = vec![0xc0, 0x0a, 0x0a, 0x0a, 0x0a, 8];
    unknown_version.resize(1200, 0);
    garbage.send_to(&unknown_version, server.addr()).unwrap();
    let mut client = client(&server);
    assert_eq!(ok(&exchange(&mut client, &[get("/")])[0].1).0, 200);
    assert_eq!(server.stats().connections, 1);
}

#[test]
fn a_server_with_http3_stops_cleanly_with_clients_connected() {
    let server = server(ServeOptions { threads: 2, ..ServeOptions::default() });
    let mut client = client(&server);
    assert_eq!(ok(&exchange(&mut client, &[get("/")])[0].1).0, 200);
    let started = Instant::now();
    server.stop();
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
}

#[test]
fn a_udp_port_taken_is_a_clear_error() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let Err(e) = start(ServeOptions { bind: addr, http3: true, ..ServeOptions::default() }) else {
        panic!("served HTTP/3 on a UDP port taken");
    };
    assert!(e.to_string().starts_with(&format!("HTTP/3: cannot bind UDP {addr}: ")), "{e}");
}

/// Debian's ngtcp2 example client (ngtcp2 with nghttp3 and GnuTLS,
/// package `ngtcp2-client`): another stack's QUIC, QPACK and control
/// streams against the server.
const NGTCP2_CLIENT: &str = "/usr/bin/gtlsclient";

#[test]
fn ngtcp2s_client_gets_the_answers() {
    if !std::path::Path::new(NGTCP2_CLIENT).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{NGTCP2_CLIENT} not found: CI must install ngtcp2-client"
        );
        eprintln!("SKIPPED: {NGTCP2_CLIENT} is not installed (apt-get install ngtcp2-client)");
        return;
    }
    let server = server(ServeOptions::default());
    let dir = tempfile::tempdir().unwrap();
    let port = server.addr().port().to_string();
    let url = |path: &str| format!("https://localhost:{port}{path}");
    // It saves each body under the last part of its path.
    let status = Command::new(NGTCP2_CLIENT)
        .args(["-q", "--exit-on-all-streams-close", "--timeout=5s"])
        .arg(format!("--download={}", dir.path().display()))
        .args(["127.0.0.1", &port, &url("/bytes/100000"), &url("/status/201")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run gtlsclient");
    assert!(status.success(), "{status}");
    let bytes = std::fs::read(dir.path().join("100000")).unwrap();
    assert_eq!(bytes.len(), 100_000);
    assert!(bytes.chunks(LINE.len()).all(|line| LINE.starts_with(line)));
    assert_eq!(std::fs::read(dir.path().join("201")).unwrap(), b"Hello, World!");
    assert_eq!(server.stats().requests, 2);
}
