//! HTTP/2 end to end (`--http2`, `--streams`): against nginx (h2c by
//! prior knowledge, h2 by ALPN over TLS) counted request by request in its
//! access log, against the built-in server (streams, stalls, timeouts,
//! scripts), and against a server written here that resets streams. What
//! HTTP/2 does wrong is counted, not hidden; nothing is lost silently.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{
    default_server, load_lock, pace, serve, serve_options, spawn_pace_with_env, stretched, url,
    Listen, Nghttpd, Nginx, NginxOptions, Run,
};
use pace::serve::ServeOptions;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

macro_rules! script {
    ($name:literal) => {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/", $name, ".lua")
    };
}

fn json_of(run: &Run) -> Value {
    let last = run.stdout.lines().rev().find(|l| l.starts_with('{'));
    serde_json::from_str(last.unwrap_or_else(|| panic!("no JSON\n{run}"))).unwrap()
}

fn logging_nginx(listen: Listen) -> Option<Nginx> {
    Nginx::start_with(NginxOptions { listen, access_log: true, ..NginxOptions::default() })
}

/// Every line nginx logged is an HTTP/2 GET of `/index.html` answered 200,
/// and there is one per request pace counted.
fn assert_logged_over_http2(nginx: &Nginx, requests: u64, run: &Run) {
    let log = nginx.access_log();
    assert_eq!(log.len() as u64, requests, "nginx logged {} requests\n{run}", log.len());
    for line in &log {
        assert_eq!(line, "HTTP/2.0 GET /index.html 200", "{run}");
    }
}

#[test]
fn h2c_against_nginx_counted_request_by_request() {
    let _load = load_lock();
    let Some(nginx) = logging_nginx(Listen::H2c) else { return };
    let run = pace(&["--http2", "-t1", "-c2", "-d1s", &nginx.url()], LIMIT);
    run.assert_ok();
    assert!(run.stdout.contains("  HTTP/2 (h2c, prior knowledge), 1 stream per connection\n"));
    let requests = run.report().requests();
    assert!(requests > 0, "{run}");
    assert!(run.report().socket_errors().is_none(), "{run}");
    assert_logged_over_http2(&nginx, requests, &run);
}

/// A plan over streams: every request of it, on time, as the server saw it.
#[test]
fn a_paced_plan_over_streams() {
    let _load = load_lock();
    let Some(nginx) = logging_nginx(Listen::H2c) else { return };
    let args = ["--http2", "--streams", "4", "-t2", "-c2", "-d1s", "-R500", "-e", &nginx.url()];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let v = json_of(&run);
    assert_eq!((v["protocol"].as_str(), v["streams"].as_u64()), (Some("h2c"), Some(4)));
    assert_eq!(v["requests"].as_u64(), Some(500), "{run}");
    assert_eq!(v["errors"]["unsent"].as_u64(), Some(0), "{run}");
    assert_logged_over_http2(&nginx, 500, &run);
}

/// h2 by ALPN: the certificate verified against a CA file (SSL_CERT_FILE),
/// or not verified with -k.
#[test]
fn h2_over_tls_verified_with_a_ca_file_or_not_with_k() {
    let _load = load_lock();
    let Some(nginx) = logging_nginx(Listen::H2) else { return };
    let target = format!("https://localhost:{}/index.html", nginx.addr.port());
    let ca = nginx.certificate_file();
    let trusted = [("SSL_CERT_FILE", ca.to_str().unwrap())];
    let run =
        spawn_pace_with_env(&["--http2", "-t1", "-c2", "-d500ms", &target], &trusted).wait(LIMIT);
    run.assert_ok();
    assert!(run.stdout.contains("  HTTP/2 (h2, over TLS by ALPN), 1 stream per connection\n"));
    let verified = run.report().requests();
    assert!(verified > 0 && run.report().socket_errors().is_none(), "{run}");
    let run = pace(&["--http2", "-k", "-t1", "-c2", "-d500ms", &target], LIMIT);
    run.assert_ok();
    let requests = verified + run.report().requests();
    assert_logged_over_http2(&nginx, requests, &run);
}

/// A TLS server that does not choose h2 by ALPN fails the run at once, in
/// words; so does an h2c URL on a server that speaks only HTTP/1.1.
#[test]
fn a_server_without_http2_is_refused_in_words() {
    let _load = load_lock();
    let Some(tls) =
        Nginx::start_with(NginxOptions { listen: Listen::Https1, ..Default::default() })
    else {
        return;
    };
    let target = format!("https://127.0.0.1:{}/index.html", tls.addr.port());
    let run = pace(&["--http2", "-k", "-d1s", &target], LIMIT);
    run.assert_code(2);
    assert!(
        run.stderr.contains(
            "does not speak HTTP/2 over TLS: offered h2 and http/1.1, it chose http/1.1 by ALPN"
        ),
        "{run}"
    );
    assert!(run.stderr.contains("leave out --http2"), "{run}");
    let Some(plain) = Nginx::start() else { return };
    let run = pace(&["--http2", "-d1s", &plain.url()], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains("does not speak h2c (HTTP/2 without TLS)"), "{run}");
    assert!(run.stdout.is_empty(), "{run}");
}

/// Ten streams on one connection to a slow endpoint carry about ten times
/// what one does, on one TCP connection.
#[test]
fn streams_multiply_what_one_connection_carries() {
    let _load = load_lock();
    let latency = Duration::from_millis(50);
    let carried = |streams: &str| {
        let server = serve(ServeOptions { latency, ..serve_options() });
        let target = url(server.addr(), "/");
        let args = ["--http2", "--streams", streams, "-t1", "-c1", "-d2s", &target];
        let run = pace(&args, LIMIT);
        run.assert_ok();
        // Before the run pace checks the address (as wrk does) and that the
        // server speaks h2c, a connection each, with no request.
        assert_eq!(server.stats().connections, 2 + 1, "one connection\n{run}");
        assert!(run.report().socket_errors().is_none(), "{run}");
        run.report().requests() as f64
    };
    let (one, ten) = (carried("1"), carried("10"));
    // One stream: a request per 50 ms, about 40 in 2 s; ten: about 400.
    assert!((20.0..=41.0).contains(&one), "{one} requests with one stream");
    assert!(ten >= 6.0 * one && ten <= 10.5 * one + 10.0, "{ten} with ten streams, {one} with one");
}

/// nginx allows 4 streams per connection: pace uses 4 of the 10 asked for
/// (no stream is refused for going over), and says so.
#[test]
fn a_server_that_caps_streams_lower() {
    let _load = load_lock();
    let options = NginxOptions {
        listen: Listen::H2c,
        max_concurrent_streams: 4,
        access_log: true,
        ..NginxOptions::default()
    };
    let Some(nginx) = Nginx::start_with(options) else { return };
    let run = pace(&["--http2", "--streams", "10", "-t1", "-c2", "-d1s", &nginx.url()], LIMIT);
    run.assert_ok();
    let note = "  HTTP/2: the server allows 4 concurrent streams per connection, fewer than \
                --streams: 4 were used\n";
    assert!(run.stdout.contains(note), "{run}");
    // The header says what is used, not what was asked for.
    let header = "  HTTP/2 (h2c, prior knowledge), 4 streams per connection\n";
    assert!(run.stdout.contains(header), "{run}");
    assert!(run.report().socket_errors().is_none(), "{run}");
    assert_logged_over_http2(&nginx, run.report().requests(), &run);
    let run =
        pace(&["--http2", "--streams", "10", "-t1", "-c2", "-d300ms", "-e", &nginx.url()], LIMIT);
    assert_eq!(json_of(&run)["streams_allowed"].as_u64(), Some(4), "{run}");
}

/// The built-in server allows 128 streams per connection: asked for 500,
/// the header says the 128 used (the server's SETTINGS, read before the
/// run), the note under the summary says why.
#[test]
fn the_header_says_the_streams_the_server_allows() {
    let _load = load_lock();
    let server = default_server();
    let run = pace(
        &["--http2", "--streams", "500", "-t1", "-c1", "-n", "200", &url(server.addr(), "/")],
        LIMIT,
    );
    run.assert_ok();
    assert!(
        run.stdout.contains("  HTTP/2 (h2c, prior knowledge), 128 streams per connection\n"),
        "{run}"
    );
    assert!(run.stdout.contains("fewer than --streams: 128 were used"), "{run}");
}

/// nginx says GOAWAY after 50 requests on a connection: the streams above
/// its last one go again on a new connection, nothing is lost or counted
/// twice (the access log has exactly pace's requests), no error.
#[test]
fn goaway_after_keepalive_requests_loses_no_request() {
    let _load = load_lock();
    let options = NginxOptions {
        listen: Listen::H2c,
        keepalive_requests: 50,
        access_log: true,
        ..NginxOptions::default()
    };
    let Some(nginx) = Nginx::start_with(options) else { return };
    let run =
        pace(&["--http2", "--streams", "10", "-t1", "-c2", "-d1s", "-e", &nginx.url()], LIMIT);
    run.assert_ok();
    let v = json_of(&run);
    let requests = v["requests"].as_u64().unwrap();
    assert!(requests > 200, "several GOAWAYs in a second\n{run}");
    let e = &v["errors"];
    for kind in ["connect", "read", "write", "timeout", "unsent"] {
        assert_eq!(e[kind].as_u64(), Some(0), "{kind}\n{run}");
    }
    assert_logged_over_http2(&nginx, requests, &run);
    // Ten streams in flight when the 50th request's GOAWAY comes: some
    // were above it and went again.
    assert!(v["retried_after_goaway"].as_u64() > Some(0), "{run}");
}

/// nghttpd, another HTTP/2 server, with a stream limit of 2 and bodies of
/// 1 MiB: the windows never cap a stream (every body arrives whole: the
/// bytes read are at least the bodies), and the limit is kept.
#[test]
fn nghttpd_large_bodies_and_a_stream_limit() {
    let _load = load_lock();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big"), vec![b'x'; 1 << 20]).unwrap();
    let Some(server) = Nghttpd::start(dir.path(), &["-m", "2"]) else { return };
    let target = format!("http://{}/big", server.addr);
    let run = pace(&["--http2", "--streams", "8", "-t1", "-c2", "-d1s", "-e", &target], LIMIT);
    run.assert_ok();
    let v = json_of(&run);
    let requests = v["requests"].as_u64().unwrap();
    assert!(requests > 0, "{run}");
    assert!(v["bytes"].as_u64().unwrap() >= requests << 20, "{run}");
    assert_eq!(v["status_codes"]["200"].as_u64(), Some(requests), "{run}");
    assert_eq!(v["streams_allowed"].as_u64(), Some(2), "{run}");
    let errors = &v["errors"];
    assert!(["connect", "read", "write", "timeout"].iter().all(|k| errors[k] == 0), "{run}");
}

/// wrk's example scripts run unchanged over HTTP/2: a static POST with a
/// body and a header, a token taken from a response header, a path and a
/// header that change per request, three requests in one string (three
/// streams).
#[test]
fn lua_scripts_run_unchanged_over_http2() {
    let _load = load_lock();
    let server = default_server();
    let echo = url(server.addr(), "/echo");
    let run = pace(&["--http2", "-t2", "-c4", "-d500ms", "-s", script!("post"), &echo], LIMIT);
    run.assert_ok();
    let line = run.stdout.lines().find(|l| l.starts_with("post: ")).unwrap_or_default();
    assert!(line.ends_with(" mismatched=0") && !line.contains("echoed=0 "), "{run}");

    let run = pace(&["--http2", "-t1", "-c2", "-d500ms", "-s", script!("counter"), &echo], LIMIT);
    run.assert_ok();
    let line = run.stdout.lines().find(|l| l.starts_with("counter: ")).unwrap_or_default();
    assert!(line.ends_with(" mismatched=0") && !line.contains("echoed=0 "), "{run}");

    let root = url(server.addr(), "/");
    let run = pace(&["--http2", "-t1", "-c2", "-d500ms", "-s", script!("auth"), &root], LIMIT);
    run.assert_ok();
    let line = run.stdout.lines().find(|l| l.starts_with("auth: ")).unwrap_or_default();
    assert!(line.contains("token=tok123") && line.ends_with(" rejected=0"), "{run}");
    assert!(!line.contains("resources=0 "), "{run}");

    let before = server.stats().requests;
    let run = pace(&["--http2", "-t1", "-c2", "-d500ms", "-s", script!("pipeline"), &root], LIMIT);
    run.assert_ok();
    let requests = run.report().requests();
    assert!(
        requests > 0 && requests.is_multiple_of(3),
        "{requests} responses, batches of 3\n{run}"
    );
    assert_eq!(server.stats().requests - before, requests, "{run}");
}

/// Streams that get no answer are reset with CANCEL and counted as
/// timeouts; their connection carries on (it is not replaced).
#[test]
fn a_stream_that_times_out_is_reset_and_counted() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/hang");
    let run = pace(&["--http2", "--streams", "2", "-t1", "-c1", "-d1s", "-T200ms", &target], LIMIT);
    run.assert_ok();
    let errors = run.report().errors();
    // Two streams time out every 200 ms or so: about 8 in a second.
    assert!(errors.timeout >= 4 && errors.timeout <= 12, "{errors:?}\n{run}");
    // Two before the run (the address and h2c checks), one for the run.
    assert_eq!(server.stats().connections, 2 + 1, "the connection was kept\n{run}");
}

/// A server that resets every stream with REFUSED_STREAM: each request is
/// a read error of that cause; none is a latency.
#[test]
fn reset_streams_are_counted_by_code() {
    let _load = load_lock();
    let server = ResettingServer::start(7, Answer::Nothing); // REFUSED_STREAM
    let target = format!("http://{}/", server.addr);
    let run =
        pace(&["--http2", "--streams", "2", "-t1", "-c1", "-n", "20", "-d2s", &target], LIMIT);
    run.assert_ok();
    let report = run.report();
    assert_eq!(report.requests(), 0, "{run}");
    let errors = report.errors();
    assert!(errors.read >= 20, "{errors:?}\n{run}");
    let cause = "read: HTTP/2 stream reset by the server: REFUSED_STREAM: ";
    assert!(report.error_causes().iter().any(|c| c.starts_with(cause)), "{run}");
}

/// A RST_STREAM with NO_ERROR ends a stream without an error code: after
/// the server's END_STREAM the response is whole (RFC 9113 8.1: a server
/// may answer before the request ended, then reset it), before it the
/// response was cut short and is an error, not a latency.
#[test]
fn a_reset_with_no_error_counts_only_whole_responses() {
    let _load = load_lock();
    for (answer, whole) in [(Answer::Partial, false), (Answer::Whole, true)] {
        let server = ResettingServer::start(0, answer); // NO_ERROR
        let target = format!("http://{}/", server.addr);
        let args = ["--http2", "--streams", "2", "-t1", "-c1", "-n", "20", "-d2s", &target];
        let run = pace(&args, LIMIT);
        run.assert_ok();
        let report = run.report();
        let errors = report.errors();
        if whole {
            assert!(report.requests() >= 20, "{run}");
            assert_eq!(errors.read, 0, "{errors:?}\n{run}");
        } else {
            assert_eq!(report.requests(), 0, "{run}");
            assert!(errors.read >= 20, "{errors:?}\n{run}");
            let cause = "read: HTTP/2 stream reset by the server before the response ended";
            assert!(report.error_causes().iter().any(|c| c.starts_with(cause)), "{run}");
        }
    }
}

/// An HTTP/2 server that answers every stream the same hostile way:
/// enough of the protocol for that, written here (a frame layer, no HPACK
/// decoder: it never reads a header block). It counts the connections it
/// took.
struct ResettingServer {
    addr: std::net::SocketAddr,
    connections: Arc<AtomicUsize>,
}

/// What the server sends on a stream before it resets it.
#[derive(Clone, Copy)]
enum Answer {
    Nothing,
    /// `:status 200` and some body, the stream left open.
    Partial,
    /// `:status 200` and a body that ends the stream (END_STREAM).
    Whole,
}

/// How the server treats each connection.
#[derive(Clone, Copy)]
enum Hostile {
    /// Resets every stream with `code` (`None`: a new code no RFC names
    /// for every stream) after `Answer`.
    Reset(Option<u32>, Answer),
    /// Says in its SETTINGS that it allows no stream at all, from its
    /// connection with this number on (1: the first).
    NoStreams { from: usize },
    /// Answers every request with a GOAWAY that processed nothing (last
    /// stream 0), with this error code.
    GoAwayAtOnce(u32),
}

impl ResettingServer {
    fn start(code: u32, answer: Answer) -> ResettingServer {
        ResettingServer::hostile(Hostile::Reset(Some(code), answer))
    }

    fn hostile(how: Hostile) -> ResettingServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        thread::spawn(move || {
            for socket in listener.incoming().flatten() {
                let number = counted.fetch_add(1, Ordering::Relaxed) + 1;
                thread::spawn(move || serve_hostile(socket, how, number));
            }
        });
        ResettingServer { addr, connections }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }
}

/// The server side of connection `number`: SETTINGS, then for each
/// HEADERS frame its hostile answer, until the client goes.
fn serve_hostile(mut socket: TcpStream, how: Hostile, number: usize) {
    let mut preface = [0u8; 24];
    if socket.read_exact(&mut preface).is_err() {
        return;
    }
    // SETTINGS: empty, or SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 0.
    let settings = match how {
        Hostile::NoStreams { from } if number >= from => frame(4, 0, 0, &[0, 3, 0, 0, 0, 0]),
        _ => frame(4, 0, 0, &[]),
    };
    let _ = socket.write_all(&settings);
    loop {
        let mut head = [0u8; 9];
        if socket.read_exact(&mut head).is_err() {
            return;
        }
        let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; length];
        if socket.read_exact(&mut payload).is_err() {
            return;
        }
        let reply = match (kind, how) {
            (4, _) if flags & 1 == 0 => frame(4, 1, 0, &[]),
            (1, Hostile::Reset(code, answer)) => {
                let code = code.unwrap_or(0x1000 + stream);
                // 0x88: HPACK static table entry 8, `:status 200`.
                let mut reply = match answer {
                    Answer::Nothing => vec![],
                    Answer::Partial | Answer::Whole => frame(1, END_HEADERS, stream, &[0x88]),
                };
                match answer {
                    Answer::Nothing => {}
                    Answer::Partial => reply.extend(frame(0, 0, stream, b"part")),
                    Answer::Whole => reply.extend(frame(0, END_STREAM, stream, b"whole")),
                }
                reply.extend(frame(3, 0, stream, &code.to_be_bytes()));
                reply
            }
            (1, Hostile::GoAwayAtOnce(code)) => {
                let mut payload = 0u32.to_be_bytes().to_vec();
                payload.extend_from_slice(&code.to_be_bytes());
                frame(7, 0, 0, &payload)
            }
            (6, _) if flags & 1 == 0 => frame(6, 1, 0, &payload),
            _ => continue,
        };
        if socket.write_all(&reply).is_err() {
            return;
        }
    }
}

/// A server that resets every stream with a new error code makes one
/// cause, not one per stream (a report as long as the run, before).
#[test]
fn new_error_codes_for_every_stream_are_one_cause() {
    let _load = load_lock();
    let server = ResettingServer::hostile(Hostile::Reset(None, Answer::Nothing));
    let target = format!("http://{}/", server.addr);
    let run = pace(&["--http2", "--streams", "4", "-t1", "-c2", "-n", "300", &target], LIMIT);
    run.assert_ok();
    let causes = run.report().error_causes();
    assert_eq!(causes.len(), 1, "{run}");
    assert!(
        causes[0]
            .starts_with("read: HTTP/2 stream reset by the server: an error code no RFC names"),
        "{run}"
    );
}

/// A server whose SETTINGS allow no stream is refused before the run, in
/// words.
#[test]
fn a_server_that_allows_no_streams_is_refused_before_the_run() {
    let _load = load_lock();
    let server = ResettingServer::hostile(Hostile::NoStreams { from: 1 });
    let target = format!("http://{}/", server.addr);
    let run = pace(&["--http2", "-t1", "-c2", "-d1s", "-T1s", &target], LIMIT);
    run.assert_code(2);
    let says = format!(
        "pace: --http2: the server at {} allows no streams (its SETTINGS_MAX_CONCURRENT_STREAMS \
         is 0): it takes no HTTP/2 requests",
        server.addr
    );
    assert!(run.stderr.contains(&says), "{run}");
    // The reachability probe and the check, no run.
    assert!(server.connections() <= 2, "{} connections\n{run}", server.connections());
}

/// A server whose SETTINGS allow no stream after the checks (the probe's
/// connection, then the HTTP/2 check's): each
/// connection fails in words (a connect error, backed off), the run ends on
/// time, and no script is blamed (there is none).
#[test]
fn a_server_that_stops_allowing_streams_fails_in_words_on_time() {
    let _load = load_lock();
    let server = ResettingServer::hostile(Hostile::NoStreams { from: 3 });
    let target = format!("http://{}/", server.addr);
    let run = pace(&["--http2", "-t1", "-c2", "-d1s", "-T1s", &target], LIMIT);
    run.assert_ok();
    assert!(!run.stderr.contains("script"), "{run}");
    // The plan's second, then at most the timeout for what is in flight.
    assert!(run.wall < stretched(Duration::from_secs(10)), "{run}");
    let causes = run.report().error_causes();
    assert!(
        causes.iter().all(|c| c.starts_with(
            "connect: the server allows no streams (its SETTINGS_MAX_CONCURRENT_STREAMS is 0)"
        )),
        "{run}"
    );
    assert_eq!(run.report().requests(), 0, "{run}");
}

/// A server that turns every connection away with GOAWAY(0): the
/// connections back off, each request is tried at most three times and
/// then counted as an error in words, never as unsent, and the GOAWAY
/// frames are counted apart from the requests.
#[test]
fn goaway_that_processes_nothing_is_backed_off_and_given_up() {
    let _load = load_lock();
    let server = ResettingServer::hostile(Hostile::GoAwayAtOnce(11)); // ENHANCE_YOUR_CALM
    let target = format!("http://{}/", server.addr);
    let run = pace(&["--http2", "-t1", "-c1", "-n", "5", "-d3s", &target], LIMIT);
    run.assert_ok();
    // Without a back-off, hundreds of connections in the run's 3 s; with
    // one (10 ms doubling to 1 s), about ten.
    let connections = server.connections();
    assert!(connections < 40, "{connections} connections\n{run}");
    let report = run.report();
    assert_eq!(report.requests(), 0, "{run}");
    let errors = report.errors();
    assert_eq!(errors.unsent, 0, "sent, refused: not unsent\n{run}");
    assert!(errors.read >= 1, "{run}");
    let refused = "read: HTTP/2: the server did not process the request, 3 times (GOAWAY)";
    assert!(report.error_causes().iter().any(|c| c.starts_with(refused)), "{run}");
    assert!(run.stdout.contains("  HTTP/2: the server ended connections with GOAWAY: "), "{run}");
    assert!(run.stdout.contains(" ENHANCE_YOUR_CALM"), "{run}");
}

const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// One HTTP/2 frame: type, flags, stream, payload (RFC 9113 4.1).
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = (payload.len() as u32).to_be_bytes();
    let mut frame = vec![length[1], length[2], length[3], kind, flags];
    frame.extend_from_slice(&stream.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}
