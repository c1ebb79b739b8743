//! For tests: the client's connection ([`super::connection`]) driven over
//! a real UDP socket on 127.0.0.1, against pace's own server or another
//! one, and requests written as HTTP/3 frames.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::ClientConfig;
use rustls::pki_types::CertificateDer;

use super::connection::{Connection, Event};
use super::{frame, qpack};

/// The longest a step waits for a datagram when no timer is due sooner.
const MAX_WAIT: Duration = Duration::from_millis(100);

/// A client's connection over its own UDP socket.
pub struct TestClient {
    pub connection: Connection,
    socket: UdpSocket,
    buf: Vec<u8>,
    out: Vec<u8>,
}

impl TestClient {
    /// Starts the handshake with the server at `server`, trusting
    /// `certificate` (valid for `localhost`). The responses are captured.
    pub fn connect(server: SocketAddr, certificate: &[u8]) -> TestClient {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(server).unwrap();
        socket.set_nonblocking(true).unwrap();
        let config = client_config(CertificateDer::from(certificate.to_vec()));
        let connection =
            Connection::connect(config, server, "localhost", true, Instant::now()).unwrap();
        TestClient { connection, socket, buf: vec![0; 65_536], out: Vec::new() }
    }

    /// One round: sends what the connection has, waits for datagrams (at
    /// most until its next timer, and [`MAX_WAIT`]), reads them, runs the
    /// timer if due; the events it produced.
    pub fn step(&mut self) -> Vec<Event> {
        while let Some(n) = self.connection.transmit(Instant::now(), &mut self.out) {
            self.socket.send(&self.out[..n]).unwrap();
        }
        let wait = self
            .connection
            .timeout()
            .map_or(MAX_WAIT, |at| at.saturating_duration_since(Instant::now()))
            .min(MAX_WAIT);
        let mut poll =
            libc::pollfd { fd: self.socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut poll, 1, wait.as_millis() as i32) };
        loop {
            match self.socket.recv(&mut self.buf) {
                Ok(n) => self.connection.receive(Instant::now(), &self.buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("recv: {e}"),
            }
        }
        if self.connection.timeout().is_some_and(|at| at <= Instant::now()) {
            self.connection.on_timeout(Instant::now());
        }
        std::iter::from_fn(|| self.connection.poll()).collect()
    }

    /// Steps until `done` says so of the events so far (all of them
    /// returned), failing after `limit`.
    pub fn run_until(&mut self, limit: Duration, done: impl Fn(&[Event]) -> bool) -> Vec<Event> {
        let deadline = Instant::now() + limit;
        let mut events = Vec::new();
        while !done(&events) {
            assert!(Instant::now() < deadline, "not done after {limit:?}: {events:?}");
            events.extend(self.step());
        }
        events
    }

    /// Steps until the handshake is done.
    pub fn connected(mut self) -> TestClient {
        self.run_until(Duration::from_secs(10), |events| events.contains(&Event::Connected));
        self
    }
}

/// TLS 1.3 with ALPN h3, trusting `certificate` only.
pub fn client_config(certificate: CertificateDer<'static>) -> ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certificate).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    ClientConfig::new(Arc::new(
        quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls).unwrap(),
    ))
}

/// A request as HTTP/3 frames: HEADERS with the pseudo-headers, `fields`
/// after them, then `body` as DATA if there is one.
pub fn request(method: &str, path: &str, fields: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let pseudo = [
        (&b":method"[..], method.as_bytes()),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", path.as_bytes()),
    ];
    let mut block = Vec::new();
    qpack::encode(
        pseudo.into_iter().chain(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))),
        &mut block,
    );
    let mut out = Vec::new();
    frame::frame(frame::HEADERS, &block, &mut out);
    if !body.is_empty() {
        frame::frame(frame::DATA, body, &mut out);
    }
    out
}

/// A GET of `path` with a user-agent.
pub fn get(path: &str) -> Vec<u8> {
    request("GET", path, &[("user-agent", "pace")], &[])
}
