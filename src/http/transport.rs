//! The byte stream under a connection, for the client and the built-in
//! server alike: plain, or TLS (a rustls client or server session), over a
//! TCP or Unix socket ([`Stream`]), both non-blocking. Reads and writes
//! behave like a non-blocking socket's: `WouldBlock` means wait for
//! readiness, `Ok(0)` from a read is the end of the stream.
//!
//! TLS records that rustls wants to send (handshake messages, alerts,
//! encrypted data) leave as soon as the socket takes them: writes and reads
//! push them out, and what the socket refused stays for [`Transport::flush`].
//! A write reports `WouldBlock` while older records still wait, so a session
//! with a send buffer limit (`set_buffer_limit`) never buffers more.

use std::io::{self, Read, Write};
use std::net::Shutdown;

use rustls::Connection;

use super::stream::Stream;
use crate::sys;

/// A plain or TLS connection over a non-blocking socket.
pub enum Transport {
    Plain(Stream),
    // Boxed: a rustls session is large, and plain connections are common.
    Tls(Stream, Box<Connection>),
}

impl Transport {
    pub fn plain(socket: impl Into<Stream>) -> Transport {
        Transport::Plain(socket.into())
    }

    /// TLS with a client or server session that has not started yet.
    pub fn tls(socket: impl Into<Stream>, session: impl Into<Connection>) -> Transport {
        Transport::Tls(socket.into(), Box::new(session.into()))
    }

    pub fn socket(&self) -> &Stream {
        match self {
            Transport::Plain(socket) | Transport::Tls(socket, _) => socket,
        }
    }

    /// The protocol the TLS handshake chose by ALPN (`h2`, `http/1.1`);
    /// None for a plain connection, or when none was chosen.
    pub fn alpn_protocol(&self) -> Option<Vec<u8>> {
        match self {
            Transport::Plain(_) => None,
            Transport::Tls(_, session) => session.alpn_protocol().map(<[u8]>::to_vec),
        }
    }

    /// On a plain connection (TCP or Unix) a read shorter than the buffer
    /// means the socket is drained, so the read that would return EAGAIN
    /// can be skipped (the next data raises a new edge). TLS may hold
    /// decrypted data back, so it reads until EAGAIN.
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Transport::Plain(_))
    }

    /// Drives the TLS handshake as far as the socket allows. Ok(true) when
    /// the connection is ready for data (always, when plain). A server
    /// need not call it: reads drive the handshake too.
    pub fn handshake(&mut self) -> io::Result<bool> {
        let Transport::Tls(socket, session) = self else { return Ok(true) };
        while session.is_handshaking() {
            if !send_records(socket, session)? {
                return Ok(false);
            }
            match receive_records(&mut &*socket, socket, session) {
                Ok(0) => {
                    let closed = "closed during TLS handshake";
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, closed));
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        // The last handshake flight (e.g. Finished) may still be pending.
        self.flush()
    }

    /// Reads into `buf` (not empty). Ok((0, _)) = the peer closed the
    /// connection; a TLS peer that closes without close_notify has ended the
    /// stream too (for a server, that is just the end of the requests). With
    /// the count comes the kernel's arrival stamp (wall-clock ns) of the
    /// last packet read, when the socket has receive timestamps on
    /// ([`sys::enable_receive_timestamps`]).
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        let (socket, session) = match self {
            Transport::Plain(socket) => return sys::recv_stamped(socket, buf),
            Transport::Tls(socket, session) => (socket, session),
        };
        // One read of plaintext may take several reads of the socket: the
        // stamp is that of the last one that brought data.
        let mut stamped = StampedSocket { socket, stamp: None };
        loop {
            match session.reader().read(buf) {
                Ok(n) => return Ok((n, stamped.stamp)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Ok((0, stamped.stamp))
                }
                Err(e) => return Err(e),
            }
            if receive_records(&mut stamped, socket, session)? == 0 {
                return Ok((0, stamped.stamp));
            }
        }
    }

    /// Writes `data`; returns how much was taken. TLS takes what its send
    /// buffer has room for, encrypts it and sends what the socket accepts;
    /// the rest leaves with later writes or [`Transport::flush`].
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(socket) => socket.send(data),
            Transport::Tls(socket, session) => {
                if !send_records(socket, session)? {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                let taken = session.writer().write(data)?;
                send_records(socket, session)?;
                Ok(taken)
            }
        }
    }

    /// Pushes buffered TLS records to the socket. Ok(true) when nothing is
    /// left to send (always, when plain).
    pub fn flush(&mut self) -> io::Result<bool> {
        match self {
            Transport::Plain(_) => Ok(true),
            Transport::Tls(socket, session) => send_records(socket, session),
        }
    }

    /// TLS records wait for the socket.
    pub fn has_pending(&self) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls(_, session) => session.wants_write(),
        }
    }

    /// Ends our direction of the stream: close_notify (TLS, best effort)
    /// then the FIN. The peer sees the end of data, e.g. of a body
    /// delimited by the close.
    pub fn close_write(&mut self) {
        if let Transport::Tls(socket, session) = self {
            session.send_close_notify();
            let _ = send_records(socket, session);
        }
        let _ = self.socket().shutdown(Shutdown::Write);
    }
}

/// Writes the session's pending records to the socket: Ok(true) when none
/// is left, Ok(false) when the socket is full.
fn send_records(mut socket: &Stream, session: &mut Connection) -> io::Result<bool> {
    while session.wants_write() {
        match session.write_tls(&mut socket) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Reads records from `source` (the socket, maybe through a stamping
/// reader) and processes them; returns the bytes read (0: end of stream).
/// Whatever the session answers (handshake messages, alerts) is sent at
/// once if the socket takes it, also when the records were bad.
fn receive_records(
    source: &mut dyn Read,
    socket: &Stream,
    session: &mut Connection,
) -> io::Result<usize> {
    let read = session.read_tls(source)?;
    if read == 0 {
        return Ok(0);
    }
    let processed = session.process_new_packets();
    let sent = send_records(socket, session);
    processed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    sent?;
    Ok(read)
}

/// The socket under TLS, keeping the arrival stamp of the last read.
struct StampedSocket<'a> {
    socket: &'a Stream,
    stamp: Option<u64>,
}

impl Read for StampedSocket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, stamp) = sys::recv_stamped(self.socket, buf)?;
        self.stamp = stamp.or(self.stamp);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};
    use std::os::unix::net::UnixStream;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
    use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};

    use super::*;

    /// The built-in server's certificate and (public) key.
    const CERTIFICATE: &[u8] = include_bytes!("../serve/cert/localhost.der");
    const KEY: &[u8] = include_bytes!("../serve/cert/localhost-key.der");

    /// Two connected non-blocking sockets: (client, server).
    fn socket_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        for socket in [&client, &server] {
            socket.set_nonblocking(true).unwrap();
            // Small fixed buffers, so that a few MiB fill the connection
            // whatever the machine's autotuning limits (tcp_rmem) are.
            let socket = socket2::SockRef::from(socket);
            socket.set_send_buffer_size(64 * 1024).unwrap();
            socket.set_recv_buffer_size(64 * 1024).unwrap();
        }
        (client, server)
    }

    /// A TLS client (for the server `name`) and server transport, handshake
    /// not started; the server's send buffer is limited to `limit` bytes.
    fn tls_pair(name: &str, limit: usize) -> (Transport, Transport) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        roots.add(CertificateDer::from(CERTIFICATE)).unwrap();
        let client_config = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(KEY));
        let server_config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(CERTIFICATE)], key)
            .unwrap();
        let name = ServerName::try_from(name.to_string()).unwrap();
        let client = ClientConnection::new(Arc::new(client_config), name).unwrap();
        let mut server = ServerConnection::new(Arc::new(server_config)).unwrap();
        server.set_buffer_limit(Some(limit));
        let (client_socket, server_socket) = socket_pair();
        (Transport::tls(client_socket, client), Transport::tls(server_socket, server))
    }

    /// Retries `attempt` until it gives a value (loopback data may take a
    /// moment to arrive).
    fn eventually<T>(mut attempt: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(value) = attempt() {
                return value;
            }
            assert!(Instant::now() < deadline, "timed out");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Reads what is there: Some((bytes, end of stream)) once anything
    /// happened.
    fn read_some(transport: &mut Transport) -> Option<(Vec<u8>, bool)> {
        let mut buf = [0; 4096];
        match transport.read(&mut buf) {
            Ok((0, _)) => Some((Vec::new(), true)),
            Ok((n, _)) => Some((buf[..n].to_vec(), false)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            Err(e) => panic!("read failed: {e}"),
        }
    }

    fn handshake(client: &mut Transport, server: &mut Transport) {
        eventually(|| {
            let server_ready = server.handshake().unwrap();
            (client.handshake().unwrap() && server_ready).then_some(())
        });
    }

    #[test]
    fn plain_round_trip_with_receive_stamps() {
        let (client, server) = socket_pair();
        sys::enable_receive_timestamps(&server).unwrap();
        let (mut client, mut server) = (Transport::plain(client), Transport::plain(server));
        assert!(client.handshake().unwrap() && client.flush().unwrap());
        assert!(server.short_read_drains() && !server.has_pending());
        let mut buf = [0; 16];
        assert_eq!(server.read(&mut buf).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        // Stamping starts through deferred work in the kernel (see sys).
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(client.write(b"hello").unwrap(), 5);
        let (n, stamp) = eventually(|| server.read(&mut buf).ok());
        assert_eq!(&buf[..n], b"hello");
        assert!(stamp.is_some());
        client.close_write();
        assert_eq!(eventually(|| read_some(&mut server)), (Vec::new(), true));
    }

    #[test]
    fn plain_round_trip_over_a_unix_socket() {
        let (client, server) = UnixStream::pair().unwrap();
        client.set_nonblocking(true).unwrap();
        server.set_nonblocking(true).unwrap();
        let (mut client, mut server) = (Transport::plain(client), Transport::plain(server));
        assert_eq!(client.write(b"hello").unwrap(), 5);
        let mut buf = [0; 16];
        // Unix stream sockets never stamp: the engine uses its clock.
        let (n, stamp) = eventually(|| server.read(&mut buf).ok());
        assert_eq!((&buf[..n], stamp), (&b"hello"[..], None));
        client.close_write();
        assert_eq!(eventually(|| read_some(&mut server)), (Vec::new(), true));
    }

    #[test]
    fn tls_round_trip_and_close_notify() {
        let (mut client, mut server) = tls_pair("localhost", 64 * 1024);
        assert!(!client.short_read_drains());
        handshake(&mut client, &mut server);
        assert_eq!(client.write(b"GET / HTTP/1.1\r\n\r\n").unwrap(), 18);
        assert!(client.flush().unwrap());
        let (request, _) = eventually(|| read_some(&mut server));
        assert_eq!(request, b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(server.write(b"reply").unwrap(), 5);
        server.close_write();
        assert_eq!(eventually(|| read_some(&mut client)), (b"reply".to_vec(), false));
        assert_eq!(eventually(|| read_some(&mut client)), (Vec::new(), true));
    }

    #[test]
    fn tls_peer_closing_without_close_notify_ends_the_stream() {
        let (mut client, mut server) = tls_pair("localhost", 64 * 1024);
        handshake(&mut client, &mut server);
        client.socket().shutdown(Shutdown::Both).unwrap();
        assert_eq!(eventually(|| read_some(&mut server)), (Vec::new(), true));
    }

    #[test]
    fn tls_handshake_fails_for_another_name_and_the_server_hears_why() {
        let (mut client, mut server) = tls_pair("example.com", 64 * 1024);
        let error = eventually(|| {
            let _ = server.handshake();
            client.handshake().err()
        });
        assert!(error.to_string().contains("certificate"), "{error}");
        // The client sent its alert: the server's read fails.
        let failed = eventually(|| match server.read(&mut [0; 4096]) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            other => Some(other),
        });
        assert!(failed.is_err(), "{failed:?}");
    }

    /// Sends 4 MiB from `writer` to `reader`, reading only when a write
    /// would block (so that the socket fills up); checks that no write takes
    /// more than `limit` and that the data arrives intact.
    fn send_a_lot(writer: &mut Transport, reader: &mut Transport, limit: usize) {
        let body: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
        let (mut sent, mut received) = (0, Vec::new());
        let mut blocked = false;
        eventually(|| {
            match writer.write(&body[sent..]) {
                Ok(n) => {
                    assert!(n > 0 && n <= limit, "took {n}");
                    sent += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked = true,
                Err(e) => panic!("write failed: {e}"),
            }
            if blocked || sent == body.len() {
                while let Some((data, end)) = read_some(reader) {
                    assert!(!end);
                    received.extend(data);
                }
                writer.flush().unwrap();
            }
            (received.len() == body.len()).then_some(())
        });
        assert!(blocked, "a full socket made writes wait");
        assert!(received == body);
    }

    #[test]
    fn tls_writes_stop_at_the_send_buffer_limit() {
        let limit = 16 * 1024;
        let (mut client, mut server) = tls_pair("localhost", limit);
        handshake(&mut client, &mut server);
        send_a_lot(&mut server, &mut client, limit);
        // The client's session has rustls's default limit (64 KiB): a large
        // request waits for the socket instead of failing.
        send_a_lot(&mut client, &mut server, 64 * 1024);
    }
}
