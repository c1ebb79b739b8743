//! HTTP/3 end to end (`--http3`): against Debian's ngtcp2 server (another
//! QUIC stack and HTTP/3 layer, counted request by request in its log)
//! and what goes wrong said in words, before the run where it can be.

mod common;

use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{installed, load_lock, pace, Run};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);
const NGTCP2: &str = "/usr/sbin/gtlsserver";

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
