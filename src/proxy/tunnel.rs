//! The CONNECT tunnel through a proxy: the request, and reading the proxy's
//! answer head without reading a byte past it (the server behind the
//! tunnel may speak first: an HTTP/2 server's SETTINGS). A 2xx answer opens
//! the tunnel; anything else fails the connection in words, with the
//! proxy's status line.
//!
//! [`Handshake`] is one connection's exchange on a non-blocking socket, as
//! the engine drives it; [`Tunnel::open`] the same, blocking, for the
//! checks made before the run.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use crate::blocking::{self, Deadline, Ended, HeadError};
use crate::endpoint::Endpoint;
use crate::error::io_reason;
use crate::http::stream::Stream;
use crate::units::format_time_us;

/// The longest answer head read from a proxy: a real one is a few hundred
/// bytes.
const MAX_HEAD: usize = 16 * 1024;

/// What every connection of a run sends to open its tunnel.
#[derive(Clone, Debug)]
pub struct Tunnel {
    /// The whole CONNECT request.
    request: Vec<u8>,
    /// `host:port` behind the tunnel, for messages.
    target: String,
    /// The request carries the proxy's credentials.
    credentials: bool,
}

impl Tunnel {
    /// The tunnel to `target` (`host:port`, IPv6 in brackets), with the
    /// proxy's `Proxy-Authorization` value if it has credentials.
    pub fn new(target: &str, authorization: Option<&str>) -> Tunnel {
        let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
        if let Some(authorization) = authorization {
            request.push_str(&format!("Proxy-Authorization: {authorization}\r\n"));
        }
        request.push_str("\r\n");
        Tunnel {
            request: request.into_bytes(),
            target: target.to_string(),
            credentials: authorization.is_some(),
        }
    }

    /// Connects to the proxy at `proxy` and opens the tunnel, blocking, the
    /// whole exchange within `deadline` (a proxy that trickles its answer
    /// does not stretch it): the socket is then the target's.
    pub fn open(&self, proxy: SocketAddr, deadline: &Deadline) -> Result<Stream, String> {
        let failed = |e: io::Error| match blocking::ended(&e) {
            Some(Ended::TimedOut) => self.timed_out_within(deadline.within()),
            Some(Ended::Stopped) => format!("CONNECT to {}: {e}", self.target),
            None => format!("the proxy at {proxy}: {}", io_reason(&e)),
        };
        let socket = blocking::connect(&Endpoint::Tcp(proxy), deadline).map_err(failed)?;
        let mut exchange = deadline.on(&socket);
        exchange.write_all(&self.request).map_err(failed)?;
        let head = match blocking::read_head(&mut exchange, MAX_HEAD) {
            Ok(head) => head,
            Err(HeadError::Closed(_)) => return Err(closed(self)),
            Err(HeadError::TooLong) => return Err(too_long(self)),
            Err(HeadError::Io(e)) => return Err(failed(e)),
        };
        judge(&head, self)?;
        Ok(socket)
    }

    /// The connection timeout ran out before the tunnel was up.
    pub fn timed_out(&self) -> String {
        format!("the proxy did not answer CONNECT to {} within the timeout", self.target)
    }

    /// The check's deadline, `within`, ran out before the tunnel was up.
    fn timed_out_within(&self, within: Duration) -> String {
        format!(
            "the proxy did not answer CONNECT to {} within {}",
            self.target,
            format_time_us(within.as_micros() as f64)
        )
    }
}

/// One connection's CONNECT exchange, so far.
#[derive(Debug, Default)]
pub struct Handshake {
    /// Bytes of the request written.
    written: usize,
    /// The answer head read so far.
    head: Vec<u8>,
}

impl Handshake {
    /// Writes what the socket takes of the request and reads what came of
    /// the answer. Ok(true): the tunnel is open (the socket holds nothing
    /// of the answer any more); Ok(false): wait for the socket; Err: why
    /// the tunnel could not be opened.
    pub fn advance(&mut self, socket: &Stream, tunnel: &Tunnel) -> Result<bool, String> {
        let mut socket = socket;
        let failed = |e: io::Error| format!("CONNECT through the proxy: {}", io_reason(&e));
        while self.written < tunnel.request.len() {
            match socket.write(&tunnel.request[self.written..]) {
                Ok(0) => return Err(closed(tunnel)),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(failed(e)),
            }
        }
        let mut buf = [0u8; 2048];
        loop {
            // Peeked first, so that only the head is taken from the socket.
            let n = match socket.peek(&mut buf) {
                Ok(0) => return Err(closed(tunnel)),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(failed(e)),
            };
            let seen = self.head.len();
            self.head.extend_from_slice(&buf[..n]);
            let end = head_end(&self.head, seen);
            let taken = end.map_or(n, |end| end - seen);
            self.head.truncate(seen + taken);
            socket.read_exact(&mut buf[..taken]).map_err(failed)?;
            if end.is_some() {
                return judge(&self.head, tunnel).map(|()| true);
            }
            if self.head.len() > MAX_HEAD {
                return Err(too_long(tunnel));
            }
        }
    }
}

fn too_long(tunnel: &Tunnel) -> String {
    format!(
        "the proxy's answer to CONNECT to {} has no end of its head within {} KiB",
        tunnel.target,
        MAX_HEAD / 1024
    )
}

fn closed(tunnel: &Tunnel) -> String {
    format!("the proxy closed the connection before answering CONNECT to {}", tunnel.target)
}

/// Where the head in `bytes` ends (just past its empty line), looking from
/// `from` on (the bytes before it were looked at already).
fn head_end(bytes: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    bytes[start..].windows(4).position(|w| w == b"\r\n\r\n").map(|at| start + at + 4)
}

/// A 2xx answer opens the tunnel; anything else is why it did not.
fn judge(head: &[u8], tunnel: &Tunnel) -> Result<(), String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut answer = httparse::Response::new(&mut headers);
    let (code, reason) = match answer.parse(head) {
        Ok(httparse::Status::Complete(_)) => (answer.code.unwrap_or(0), answer.reason),
        _ => {
            return Err(format!(
                "the proxy's answer to CONNECT to {} is not HTTP: '{}'",
                tunnel.target,
                blocking::first_line(head, 80)
            ));
        }
    };
    if (200..300).contains(&code) {
        return Ok(());
    }
    let status = format!("{code} {}", reason.unwrap_or_default()).trim_end().to_string();
    let hint = match (code, tunnel.credentials) {
        (407, false) => " (give the proxy's credentials: --proxy http://user:password@host:port)",
        // tinyproxy answers 401 to credentials it does not accept.
        (407 | 401, true) => " (it did not accept the credentials of the proxy URL)",
        _ => "",
    };
    Err(format!("proxy refused CONNECT to {}: {status}{hint}", tunnel.target))
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::thread;

    use super::*;
    use crate::signals::Stop;

    fn tunnel() -> Tunnel {
        Tunnel::new("example.com:443", None)
    }

    fn within(seconds: u64) -> Deadline {
        Deadline::after(Duration::from_secs(seconds), &Stop::never())
    }

    #[test]
    fn the_connect_request() {
        let plain = Tunnel::new("example.com:443", None);
        assert_eq!(
            plain.request,
            b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
        );
        let with = Tunnel::new("[::1]:8443", Some("Basic dTpw"));
        assert_eq!(
            String::from_utf8(with.request).unwrap(),
            "CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
        );
    }

    #[test]
    fn the_end_of_the_head_across_reads() {
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\n\r\nxx", 0), Some(19));
        let bytes = b"HTTP/1.1 200 OK\r\n\r\n";
        // The first 17 bytes were looked at: the end straddles the reads.
        assert_eq!(head_end(bytes, 17), Some(19));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\n", 0), None);
        assert_eq!(head_end(b"", 0), None);
    }

    #[test]
    fn statuses_in_words() {
        assert_eq!(judge(b"HTTP/1.0 200 Connection established\r\n\r\n", &tunnel()), Ok(()));
        assert_eq!(judge(b"HTTP/1.1 204 \r\nX: y\r\n\r\n", &tunnel()), Ok(()));
        assert_eq!(
            judge(b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n", &tunnel()).unwrap_err(),
            "proxy refused CONNECT to example.com:443: 403 Forbidden"
        );
        let auth = judge(b"HTTP/1.0 407 Proxy Authentication Required\r\n\r\n", &tunnel());
        assert_eq!(
            auth.unwrap_err(),
            "proxy refused CONNECT to example.com:443: 407 Proxy Authentication Required (give \
             the proxy's credentials: --proxy http://user:password@host:port)"
        );
        let refused = Tunnel::new("example.com:443", Some("Basic x"));
        let wrong = judge(b"HTTP/1.0 407 Proxy Authentication Required\r\n\r\n", &refused);
        assert!(wrong
            .unwrap_err()
            .ends_with("(it did not accept the credentials of the proxy URL)"));
        assert_eq!(
            judge(b"SSH-2.0-OpenSSH\r\n\r\n", &tunnel()).unwrap_err(),
            "the proxy's answer to CONNECT to example.com:443 is not HTTP: 'SSH-2.0-OpenSSH'"
        );
    }

    /// A fake proxy that reads the CONNECT and answers `answer` in pieces
    /// (and then the server's first bytes, which must stay in the socket).
    fn fake_proxy(answer: &'static [&'static [u8]]) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 256];
            while !request.ends_with(b"\r\n\r\n") {
                let n = socket.read(&mut buf).unwrap();
                request.extend_from_slice(&buf[..n]);
            }
            for piece in answer {
                socket.write_all(piece).unwrap();
                thread::sleep(Duration::from_millis(5));
            }
            thread::sleep(Duration::from_millis(500));
        });
        addr
    }

    #[test]
    fn opens_a_tunnel_and_leaves_what_follows_the_head() {
        let proxy = fake_proxy(&[b"HTTP/1.1 200 Connection", b" established\r\n\r", b"\nSERVER"]);
        let mut socket = tunnel().open(proxy, &within(5)).unwrap();
        let mut first = [0u8; 6];
        socket.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"SERVER");
    }

    #[test]
    fn a_refusal_and_a_silent_close_are_said() {
        let proxy = fake_proxy(&[b"HTTP/1.1 403 Forbidden\r\n\r\n<html>"]);
        let error = tunnel().open(proxy, &within(5)).unwrap_err();
        assert_eq!(error, "proxy refused CONNECT to example.com:443: 403 Forbidden");
        let proxy = fake_proxy(&[]);
        let error = tunnel().open(proxy, &within(5)).unwrap_err();
        assert_eq!(
            error,
            "the proxy closed the connection before answering CONNECT to example.com:443"
        );
    }

    #[test]
    fn a_trickled_answer_has_the_whole_deadline_not_one_per_byte() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = listener.local_addr().unwrap();
        thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            for byte in b"HTTP/1.1 200 OK\r\nX: ".iter().cycle() {
                if socket.write_all(&[*byte]).is_err() {
                    return;
                }
                thread::sleep(Duration::from_millis(50));
            }
        });
        let started = std::time::Instant::now();
        let error = tunnel().open(proxy, &within(1)).unwrap_err();
        assert_eq!(error, "the proxy did not answer CONNECT to example.com:443 within 1.00s");
        let most = crate::timing::stretched(Duration::from_secs(4));
        assert!(started.elapsed() < most, "{:?}", started.elapsed());
    }

    #[test]
    fn an_endless_head_is_refused() {
        static LONG: [u8; 20_000] = [b'x'; 20_000];
        static ANSWER: [&[u8]; 2] = [b"HTTP/1.1 200 OK\r\nX: ", &LONG];
        let proxy = fake_proxy(&ANSWER);
        let error = tunnel().open(proxy, &within(5)).unwrap_err();
        assert!(error.contains("no end of its head within 16 KiB"), "{error}");
    }
}
