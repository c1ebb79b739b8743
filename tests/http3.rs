//! HTTP/3 end to end (`--http3`): against Debian's ngtcp2 server (another
//! QUIC stack and HTTP/3 layer, counted request by request in its log)
//! and against `pace serve --http3` (counted in its statistics: timeouts,
//! scripts, histograms read back by the Python hdrh package), and what
//! goes wrong said in words, before the run where it can be.

mod common;

use std::collections::HashMap;
use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    built_in_certificate_pem, hdrh_available, installed, load_lock, pace, python, serve,
    serve_options, Run,
};
use pace::serve::{ServeOptions, ServerHandle};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);
const NGTCP2: &str = "/usr/sbin/gtlsserver";

macro_rules! script {
    ($name:literal) => {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/", $name, ".lua")
    };
}

/// The built-in server over HTTPS and HTTP/3 (on the same port number).
fn h3_server(options: ServeOptions) -> ServerHandle {
    serve(ServeOptions { tls: true, http3: true, ..options })
}

fn h3_url(server: &ServerHandle, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", server.addr().port())
}

fn json_of(run: &Run) -> Value {
    let last = run.stdout.lines().rev().find(|l| l.starts_with('{'));
    serde_json::from_str(last.unwrap_or_else(|| panic!("no JSON\n{run}"))).unwrap()
}

/// ngtcp2's example HTTP/3 server (GnuTLS) on 127.0.0.1, serving
/// `/index.html` (13 bytes) with a self-signed certificate for
/// `localhost`, logging to a file. Killed on drop.
struct Ngtcp2 {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Drop for Ngtcp2 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ngtcp2 {
    fn start() -> Option<Ngtcp2> {
        Ngtcp2::start_with(&[])
    }

    /// With more of its options (`--rx-loss=0.1`).
    fn start_with(options: &[&str]) -> Option<Ngtcp2> {
        if !installed(NGTCP2, "ngtcp2-server", "HTTP/3") {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
        fs::create_dir(dir.path().join("www")).unwrap();
        fs::write(dir.path().join("www/index.html"), "Hello, World!").unwrap();
        // The server takes a port number, not 0: one the kernel just gave.
        let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = fs::File::create(dir.path().join("log")).unwrap();
        // Its log line by line (stdio would hold it back in a buffer).
        let child = Command::new("stdbuf")
            .args(["-oL", "-eL", NGTCP2])
            .arg(format!("--htdocs={}", dir.path().join("www").display()))
            .arg("--timeout=30s")
            .args(options)
            .args(["127.0.0.1", &port.to_string()])
            .arg(dir.path().join("key.pem"))
            .arg(dir.path().join("cert.pem"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start gtlsserver");
        // Ready once its UDP socket is bound (/proc/net/udp lists it).
        let needle = format!(":{port:04X} ");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !fs::read_to_string("/proc/net/udp").unwrap().contains(&needle) {
            assert!(Instant::now() < deadline, "gtlsserver did not bind its port");
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(Ngtcp2 { child, addr: SocketAddr::from(([127, 0, 0, 1], port)), dir })
    }

    fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }

    fn certificate(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    /// The requests the server read whole (and answered at once: its log
    /// says so for each).
    fn answered(&self) -> usize {
        let log = fs::read_to_string(self.dir.path().join("log")).unwrap();
        log.matches(" headers ended\n").count()
    }
}

#[test]
fn requests_over_streams_to_ngtcp2s_server_are_the_ones_it_answered() {
    let _load = load_lock();
    let Some(server) = Ngtcp2::start() else { return };
    let cacert = server.certificate();
    let args = [
        "--http3",
        "--cacert",
        cacert.to_str().unwrap(),
        "-t1",
        "-c2",
        "--streams",
        "4",
        "-n",
        "400",
        "-e",
        &server.url("/index.html"),
    ];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let v = json_of(&run);
    assert_eq!((v["protocol"].as_str(), v["streams"].as_u64()), (Some("h3"), Some(4)), "{run}");
    assert_eq!(v["requests"].as_u64(), Some(400), "{run}");
    assert_eq!(v["bytes"].as_u64().map(|b| b >= 400 * 13), Some(true), "{run}");
    assert!(run.report().socket_errors().is_none(), "{run}");
    // The server's log is written as it goes: it has them all by now
    // (pace saw each response end).
    assert_eq!(server.answered(), 400, "{run}");
}

/// The server drops a tenth of the packets pace sends: QUIC's loss
/// detection (a timer of the protocol's, armed as pace sends) finds them
/// and sends their frames again, every request is answered, and the
/// report counts the packets lost.
#[test]
fn packets_the_server_loses_are_sent_again_and_counted() {
    let _load = load_lock();
    let Some(server) = Ngtcp2::start_with(&["--rx-loss=0.1"]) else { return };
    let url = server.url("/index.html");
    let run =
        pace(&["--http3", "-k", "-t1", "-c2", "--streams", "2", "-n", "200", "-e", &url], LIMIT);
    run.assert_ok();
    let v = json_of(&run);
    assert_eq!(v["requests"].as_u64(), Some(200), "{run}");
    assert_eq!(v["errors"]["timeout"].as_u64(), Some(0), "{run}");
    assert_eq!(v["error_causes"].as_object().map(|causes| causes.len()), Some(0), "{run}");
    let lost = v["quic"]["packets_lost"].as_u64().unwrap();
    let sent = v["quic"]["packets_sent"].as_u64().unwrap();
    // A tenth of what pace sent, give or take chance (and QUIC declares a
    // packet lost only once it would be worth sending again).
    assert!(lost > 0 && lost < sent / 2, "{lost} of {sent} packets lost\n{run}");
}

#[test]
fn statuses_and_a_paced_plan_over_http3() {
    let _load = load_lock();
    let Some(server) = Ngtcp2::start() else { return };
    let url = server.url("/missing");
    let run =
        pace(&["--http3", "-k", "-t1", "-c2", "--streams", "2", "-d1s", "-R200", &url], LIMIT);
    run.assert_ok();
    assert!(run.stdout.contains("  HTTP/3 (h3, over QUIC), 2 streams per connection\n"), "{run}");
    assert_eq!(run.report().non_2xx_3xx(), Some(200), "{run}");
    assert!(run.stdout.contains("Status codes: 404: 200"), "{run}");
    assert_eq!(server.answered(), 200, "{run}");
}

#[test]
fn what_http3_cannot_do_is_said_before_the_run() {
    let _load = load_lock();
    let Some(server) = Ngtcp2::start() else { return };
    // The server's certificate is not trusted without -k or --cacert.
    let run = pace(&["--http3", "-d1s", &server.url("/")], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains("does not trust the server's certificate"), "{run}");
    assert!(run.stderr.contains("-k"), "{run}");
    // Nothing listening on the UDP port: ICMP's answer, not a timeout.
    let closed = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("https://127.0.0.1:{port}/");
    let run = pace(&["--http3", "-k", "-d1s", &url], LIMIT);
    run.assert_code(2);
    assert!(
        run.stderr.contains(&format!("nothing listening on UDP port {port} of 127.0.0.1")),
        "{run}"
    );
    assert!(run.wall < Duration::from_secs(4), "waited for a timeout\n{run}");
    // What QUIC cannot go with, refused as usage.
    let https = server.url("/");
    for (args, words) in [
        (vec!["--http3", "http://127.0.0.1:1/"], "--http3 needs https:// URLs"),
        (vec!["--http3", "--http2", https.as_str()], "--http2 and --http3 cannot be used"),
        (vec!["--http3", "--proxy", "http://127.0.0.1:1", https.as_str()], "--proxy cannot"),
        (vec!["--http3", "--unix-socket", "/tmp/x.sock", https.as_str()], "--unix-socket cannot"),
        (vec!["--http3", "--grpc", "a.B/C", https.as_str()], "--grpc speaks HTTP/2"),
    ] {
        let run = pace(&args, LIMIT);
        run.assert_code(1);
        assert!(run.stderr.contains(words), "{run}");
    }
}

#[test]
fn the_built_in_servers_count_is_pace_s_and_quic_says_what_it_measured() {
    let _load = load_lock();
    let server = h3_server(serve_options());
    let url = h3_url(&server, "/");
    let run =
        pace(&["--http3", "-k", "-t1", "-c3", "--streams", "5", "-d1s", "--latency", &url], LIMIT);
    run.assert_ok();
    let report = run.report();
    assert!(report.requests() > 0, "{run}");
    assert!(report.socket_errors().is_none(), "{run}");
    assert_eq!(report.requests(), server.stats().requests, "{run}");
    assert!(run.stdout.contains("  HTTP/3 (h3, over QUIC), 5 streams per connection\n"), "{run}");
    // QUIC's figures: the run's 3 connections, closed at its end.
    let quic =
        run.stdout.lines().find(|l| l.starts_with("  QUIC: ")).unwrap_or_else(|| panic!("{run}"));
    assert!(quic.starts_with("  QUIC: 3 connections, "), "{run}");
    assert!(quic.contains(" lost (") && quic.contains("smoothed RTT"), "{run}");
    // Each connection's handshake is its TLS handshake phase (-L shows them).
    assert!(run.stdout.contains("TLS handshake"), "{run}");
}

#[test]
fn an_http3_run_s_json_histograms_decode_with_hdrh_and_its_counts_add_up() {
    if !hdrh_available() {
        return;
    }
    let _load = load_lock();
    let server = h3_server(serve_options());
    let url = h3_url(&server, "/");
    let run = pace(
        &["--http3", "-k", "-t1", "-c2", "--streams", "2", "-d1s", "-R400", "-e", &url],
        LIMIT,
    );
    run.assert_ok();
    let v = json_of(&run);
    assert_eq!(v["protocol"].as_str(), Some("h3"), "{run}");
    assert_eq!(v["requests"].as_u64(), Some(400), "{run}");
    assert_eq!(server.stats().requests, 400, "{run}");
    let quic = &v["quic"];
    assert_eq!(quic["connections"].as_u64(), Some(2), "{run}");
    assert!(quic["packets_sent"].as_u64() > Some(400 / 10), "{run}");
    assert!(quic["smoothed_rtt_mean_us"].as_f64() > Some(0.0), "{run}");
    assert_eq!(v["phases"]["tls_handshake"]["count"].as_u64(), Some(2), "{run}");
    // Each response's head is its first byte.
    assert_eq!(v["phases"]["first_byte"]["count"].as_u64(), Some(400), "{run}");
    let decode = "import sys\nfrom hdrh.histogram import HdrHistogram\n\
                  h = HdrHistogram.decode(sys.argv[1])\n\
                  print(h.get_total_count(), h.get_value_at_percentile(99.0))";
    let out = python(decode, &[v["hist"].as_str().unwrap()]);
    let mut words = out.split_whitespace();
    assert_eq!(words.next(), Some("400"), "{out}");
    let p99: u64 = words.next().unwrap().parse().unwrap();
    let reported = v["latency"]["corrected"]["percentiles_us"]["99"].as_u64().unwrap();
    // The same histogram: the same p99, to HdrHistogram's rounding.
    assert!(p99.abs_diff(reported) <= reported / 100 + 1, "hdrh {p99} us, pace {reported} us");
}

#[test]
fn requests_that_get_no_answer_time_out_and_their_streams_are_given_up() {
    let _load = load_lock();
    let server = h3_server(serve_options());
    let url = h3_url(&server, "/hang");
    let run = pace(
        &["--http3", "-k", "-t1", "-c1", "--streams", "3", "-d1s", "-T300ms", "-e", &url],
        LIMIT,
    );
    run.assert_ok();
    let v = json_of(&run);
    let timeouts = v["errors"]["timeout"].as_u64().unwrap();
    // 3 streams at a time, each given up after 300 ms: 3 per 300 ms of the
    // second, and those in flight at the end.
    assert!((3..=15).contains(&timeouts), "{timeouts} timeouts\n{run}");
    assert_eq!(v["requests"].as_u64(), Some(0), "{run}");
    // Cancelled streams do not hold the connection's slots: new ones went.
    assert!(server.stats().requests >= timeouts, "{run}");
}

#[test]
fn a_script_reads_http3_responses_headers() {
    let _load = load_lock();
    let server = h3_server(serve_options());
    let url = h3_url(&server, "/");
    let run = pace(&["--http3", "-k", "-t1", "-c1", "-d1s", "-s", script!("auth"), &url], LIMIT);
    run.assert_ok();
    // The token came in the X-Token header of an HTTP/3 response, named as
    // over HTTP/1.1; every later request went to /resource with it.
    let done =
        run.stdout.lines().find(|l| l.starts_with("auth: ")).unwrap_or_else(|| panic!("{run}"));
    assert!(done.starts_with("auth: token=tok123 "), "{run}");
    assert!(done.ends_with(" rejected=0"), "{run}");
    assert!(!done.contains("resources=0 "), "{run}");
}

/// A script's POST with a header and a body, to a name that --connect-to
/// sends to the server, its certificate checked against --cacert for the
/// name --tls-server-name gives: over QUIC as over TCP.
#[test]
fn the_request_and_tls_options_work_over_http3_as_over_tcp() {
    let _load = load_lock();
    let server = h3_server(serve_options());
    let port = server.addr().port();
    let dir = tempfile::tempdir().unwrap();
    let cacert = dir.path().join("ca.pem");
    fs::write(&cacert, built_in_certificate_pem()).unwrap();
    // print_body.lua's response(), with a POST of its own.
    let script = dir.path().join("post.lua");
    let text = format!(
        r#"wrk.method = "POST"
wrk.body = "hello over QUIC"
wrk.headers["X-Test"] = "h3"
dofile("{}")
"#,
        script!("print_body")
    );
    fs::write(&script, text).unwrap();
    let connect_to = format!("pace.test:{port}:127.0.0.1:{port}");
    let url = format!("https://pace.test:{port}/echo");
    let args = [
        "--http3",
        "--cacert",
        cacert.to_str().unwrap(),
        "--tls-server-name",
        "localhost",
        "--connect-to",
        &connect_to,
        "-t1",
        "-c1",
        "-n",
        "3",
        "-s",
        script.to_str().unwrap(),
        &url,
    ];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    // The built-in server's /echo: the request as it received it.
    assert!(run.stdout.contains("\nPOST /echo\n"), "{run}");
    assert!(run.stdout.contains("\nX-Test: h3\n"), "{run}");
    assert!(run.stdout.contains("hello over QUIC"), "{run}");
    assert_eq!(run.report().requests(), 3, "{run}");
    assert_eq!(server.stats().requests, 3, "{run}");
}

/// A targets file of two origins over HTTP/3: each origin checked by its
/// own QUIC handshake, its connections its own, and each server's count
/// its targets' rows (the plan shares the rate evenly between them).
#[test]
fn two_origins_of_a_targets_file_each_get_their_share() {
    let _load = load_lock();
    let (a, b) = (h3_server(serve_options()), h3_server(serve_options()));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("targets.txt");
    let text = format!("GET {}\nGET {}\n", h3_url(&a, "/a"), h3_url(&b, "/b"));
    fs::write(&file, text).unwrap();
    let args =
        ["--http3", "-k", "--targets", file.to_str().unwrap(), "-t1", "-c2", "-d1s", "-R200"];
    let run = pace(&[&args[..], &["-e"]].concat(), LIMIT);
    run.assert_ok();
    let v = json_of(&run);
    assert_eq!(v["requests"].as_u64(), Some(200), "{run}");
    assert_eq!((a.stats().requests, b.stats().requests), (100, 100), "{run}");
    assert_eq!(v["quic"]["connections"].as_u64(), Some(2), "{run}");
    // Each server saw its check's connection and one of the run's.
    assert_eq!((a.stats().connections, b.stats().connections), (2, 2), "{run}");
}

/// Two shards of one plan over HTTP/3 send it once between them.
#[test]
fn two_shards_send_the_plan_once_between_them() {
    let _load = load_lock();
    let server = h3_server(serve_options());
    let url = h3_url(&server, "/");
    let start_at = format!(
        "{:.3}",
        (std::time::SystemTime::now() + Duration::from_secs(3))
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    );
    let shard = |index: &str| {
        let args = ["--http3", "-k", "-t1", "-c2", "-d1s", "-R300", "--start-at", &start_at];
        common::spawn_pace(&[&args[..], &["--shard", index, "-e", &url]].concat())
    };
    let (first, second) = (shard("0/2"), shard("1/2"));
    let (first, second) = (first.wait(LIMIT), second.wait(LIMIT));
    first.assert_ok();
    second.assert_ok();
    let requests = |run: &Run| json_of(run)["requests"].as_u64().unwrap();
    assert_eq!((requests(&first), requests(&second)), (150, 150), "{first}\n{second}");
    assert_eq!(server.stats().requests, 300, "{first}\n{second}");
}

/// A server that answers `answered` requests on each connection, then
/// sends GOAWAY with the next request's stream id, and answers no more
/// there: an HTTP/3 server over quinn-proto written for the test, whose
/// answers are frames written by hand (a 200 with no body: QPACK's static
/// `:status 200`).
struct GoingAway {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl GoingAway {
    fn start(answered_per_connection: u64) -> GoingAway {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(2))).unwrap();
        let addr = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let (stop2, answered2) = (stop.clone(), answered.clone());
        let thread = std::thread::spawn(move || {
            serve_then_go_away(&socket, answered_per_connection, &stop2, &answered2)
        });
        GoingAway { addr, stop, answered, thread: Some(thread) }
    }
}

impl Drop for GoingAway {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve_then_go_away(
    socket: &UdpSocket,
    per_connection: u64,
    stop: &AtomicBool,
    answered: &AtomicU64,
) {
    use quinn_proto::{DatagramEvent, Dir, Endpoint, EndpointConfig, ServerConfig, StreamEvent};
    let key = rcgen::KeyPair::generate().unwrap();
    let cert =
        rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap().self_signed(&key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let config = Arc::new(ServerConfig::with_crypto(Arc::new(crypto)));
    let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), Some(config), true, None);
    // Per connection: its QUIC state, its control stream, the requests
    // answered on it.
    let mut connections = HashMap::new();
    let mut buf = vec![0u8; 65_536];
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if let Ok((n, from)) = socket.recv_from(&mut buf) {
            out.clear();
            let data = bytes::BytesMut::from(&buf[..n]);
            match endpoint.handle(now, from, None, None, data, &mut out) {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    out.clear();
                    if let Ok((handle, quic)) = endpoint.accept(incoming, now, &mut out, None) {
                        connections.insert(handle, (quic, None, 0u64));
                    }
                }
                Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                    if let Some((quic, _, _)) = connections.get_mut(&handle) {
                        quic.handle_event(event);
                    }
                }
                Some(DatagramEvent::Response(transmit)) => {
                    let _ = socket.send_to(&out[..transmit.size], transmit.destination);
                }
                None => {}
            }
        }
        let now = Instant::now();
        for (&handle, (quic, control, served)) in connections.iter_mut() {
            if quic.poll_timeout().is_some_and(|at| at <= now) {
                quic.handle_timeout(now);
            }
            while let Some(event) = quic.poll_endpoint_events() {
                if let Some(event) = endpoint.handle_event(handle, event) {
                    quic.handle_event(event);
                }
            }
            while let Some(event) = quic.poll() {
                match event {
                    quinn_proto::Event::Connected => {
                        let id = quic.streams().open(Dir::Uni).unwrap();
                        // The control stream: its type, an empty SETTINGS.
                        quic.send_stream(id).write(&[0x00, 0x04, 0x00]).unwrap();
                        *control = Some(id);
                    }
                    quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                        while let Some(id) = quic.streams().accept(Dir::Bi) {
                            if *served >= per_connection {
                                continue; // above the GOAWAY: never answered
                            }
                            *served += 1;
                            answered.fetch_add(1, Ordering::Relaxed);
                            // HEADERS: QPACK's prefix, then static entry 25.
                            let mut stream = quic.send_stream(id);
                            stream.write(&[0x01, 0x03, 0x00, 0x00, 0xd9]).unwrap();
                            let _ = stream.finish();
                            if *served == per_connection {
                                // The next request's id: client streams go by 4.
                                let next = u64::from(id) + 4;
                                let mut goaway = vec![0x07];
                                let mut id_bytes = Vec::new();
                                for shift in [56u32, 48, 40, 32, 24, 16, 8, 0] {
                                    id_bytes.push((next >> shift) as u8);
                                }
                                // An 8-byte varint: its top two bits 11.
                                id_bytes[0] |= 0xc0;
                                goaway.push(id_bytes.len() as u8);
                                goaway.extend_from_slice(&id_bytes);
                                if let Some(control) = *control {
                                    quic.send_stream(control).write(&goaway).unwrap();
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            out.clear();
            while let Some(transmit) = quic.poll_transmit(now, 1, &mut out) {
                let _ = socket.send_to(&out[..transmit.size], transmit.destination);
                out.clear();
            }
        }
    }
}

/// Requests above a GOAWAY go again on a new connection, none lost, their
/// latency counted from their intended time, and the report says how many.
#[test]
fn requests_above_a_goaway_go_again_on_a_new_connection() {
    let _load = load_lock();
    let server = GoingAway::start(5);
    let url = format!("https://localhost:{}/", server.addr.port());
    let args = ["--http3", "-k", "-t1", "-c1", "--streams", "4", "-n", "40", "-e", &url];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let v = json_of(&run);
    assert_eq!(v["requests"].as_u64(), Some(40), "{run}");
    assert_eq!(v["error_causes"].as_object().map(|causes| causes.len()), Some(0), "{run}");
    assert_eq!(server.answered.load(Ordering::Relaxed), 40, "{run}");
    // 4 in flight when each GOAWAY came: up to 3 above it went again.
    let retried = v["retried_after_goaway"].as_u64().unwrap();
    assert!(retried > 0, "{run}");
    // The report says so, in HTTP/3's words.
    let run = pace(&[&args[..args.len() - 2], &[url.as_str()]].concat(), LIMIT);
    run.assert_ok();
    let said = "requests the server rejected (H3_REQUEST_REJECTED, or above its GOAWAY) went \
                again on another connection, their latency counted from their intended time";
    assert!(run.stdout.contains(said), "{run}");
}
