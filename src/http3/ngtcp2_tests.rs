//! The client's connection ([`super::connection`]) against an HTTP/3
//! server on another QUIC stack: Debian's ngtcp2 example server
//! (`gtlsserver`, ngtcp2 with nghttp3 and GnuTLS, package
//! `ngtcp2-server`) on 127.0.0.1, over a real UDP socket. Its QPACK
//! (nghttp3's, Huffman-coded) must decode, its responses' bodies must
//! have their length. Without the server the test says it skipped; in CI
//! (`CI` set) it fails instead.

use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::connection::Event;
use super::test_client::{get, TestClient};

const SERVER: &str = "/usr/sbin/gtlsserver";

struct Server {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
    certificate: rustls::pki_types::CertificateDer<'static>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server serving a directory with `file` (1000 bytes), or None when
/// it is not installed (outside CI).
fn start() -> Option<Server> {
    if !std::path::Path::new(SERVER).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{SERVER} not found: CI must install ngtcp2-server"
        );
        eprintln!("SKIPPED: {SERVER} is not installed (apt-get install ngtcp2-server)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
    fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
    fs::create_dir(dir.path().join("www")).unwrap();
    fs::write(dir.path().join("www/file"), vec![b'p'; 1000]).unwrap();
    // A free UDP port: the server takes a port number, not 0.
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(SERVER)
        .arg("-q")
        .arg(format!("--htdocs={}", dir.path().join("www").display()))
        .arg("--timeout=5s")
        .args(["127.0.0.1", &port.to_string()])
        .arg(dir.path().join("key.pem"))
        .arg(dir.path().join("cert.pem"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start gtlsserver");
    // Ready once its UDP socket is bound (/proc/net/udp lists it).
    let needle = format!(":{port:04X} ");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !fs::read_to_string("/proc/net/udp").unwrap().contains(&needle) {
        assert!(Instant::now() < deadline, "gtlsserver did not bind its port");
        std::thread::sleep(Duration::from_millis(10));
    }
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    Some(Server { child, addr, _dir: dir, certificate: cert.der().clone() })
}

#[test]
fn requests_to_ngtcp2s_server_get_its_responses() {
    let Some(server) = start() else { return };
    let mut client = TestClient::connect(server.addr, &server.certificate);
    // 30 requests, 10 at a time, every fifth for a file that is not there.
    let mut next = 0u64;
    let mut done = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while done.len() < 30 {
        assert!(Instant::now() < deadline, "{} of 30 responses: {done:?}", done.len());
        for event in client.step() {
            match event {
                Event::Connected | Event::StreamsAvailable | Event::Head { .. } => {}
                Event::Response { token, result } => done.push((token, result)),
                other => panic!("{other:?}"),
            }
        }
        while next < 30 && client.connection.in_flight() < 10 {
            let path = if next % 5 == 4 { "/missing" } else { "/file" };
            if client.connection.send(&get(path), next).is_err() {
                break;
            }
            next += 1;
        }
    }
    done.sort_by_key(|(token, _)| *token);
    for (token, result) in done {
        let response = result.unwrap_or_else(|e| panic!("request {token}: {e}"));
        if token % 5 == 4 {
            assert_eq!(response.status, 404, "request {token}");
        } else {
            assert_eq!((response.status, response.body_bytes), (200, 1000), "request {token}");
            let captured = response.captured.unwrap();
            assert_eq!(captured.body, vec![b'p'; 1000]);
            assert!(
                captured.headers.contains(&("content-length".to_string(), "1000".to_string())),
                "{:?}",
                captured.headers
            );
        }
    }
    client.connection.close(Instant::now());
}
