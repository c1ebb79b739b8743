//! HTTPS for the server: a self-signed certificate made at start-up and a
//! rustls session driven over a non-blocking socket.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;

use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection};

/// TLS records the session may hold before writes report a full buffer.
const SEND_BUFFER_LIMIT: usize = 64 * 1024;

/// What the server presents: the rustls configuration and the certificate
/// (DER) for clients that want to trust it.
pub(super) struct Identity {
    pub config: Arc<ServerConfig>,
    pub certificate_der: Vec<u8>,
}

/// A fresh key pair and a self-signed certificate for the local names.
pub(super) fn self_signed() -> io::Result<Identity> {
    let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    let generated = rcgen::generate_simple_self_signed(names).map_err(io::Error::other)?;
    let certificate = generated.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(generated.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![certificate.clone()], key)
        .map_err(io::Error::other)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Identity { config: Arc::new(config), certificate_der: certificate.to_vec() })
}

/// A server-side TLS session over a non-blocking socket. Reads and writes
/// behave like the socket's: `WouldBlock` means wait for readiness.
pub(super) struct TlsStream {
    session: ServerConnection,
    socket: TcpStream,
}

impl TlsStream {
    pub fn new(config: &Arc<ServerConfig>, socket: TcpStream) -> io::Result<TlsStream> {
        let mut session = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
        session.set_buffer_limit(Some(SEND_BUFFER_LIMIT));
        Ok(TlsStream { session, socket })
    }

    pub fn socket(&self) -> &TcpStream {
        &self.socket
    }

    /// Decrypted bytes; `Ok(0)` at the end of the stream, `WouldBlock` when
    /// the socket has nothing more (the handshake advances on the way).
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.session.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The peer closed the socket without close_notify: for a
                // server that is just the end of the requests.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            if self.session.read_tls(&mut self.socket)? == 0 {
                return Ok(0);
            }
            let processed = self.session.process_new_packets();
            // Handshake messages and alerts leave at once; if the socket is
            // full, the writable event finishes the job.
            match self.flush() {
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                _ => {}
            }
            processed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
    }

    /// Encrypts up to the session's buffer limit; `WouldBlock` while older
    /// records still wait for the socket.
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.flush()?;
        let accepted = self.session.writer().write(buf)?;
        match self.flush() {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(accepted),
        }
    }

    /// Writes pending records to the socket.
    pub fn flush(&mut self) -> io::Result<()> {
        while self.session.wants_write() {
            if self.session.write_tls(&mut self.socket)? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }

    pub fn has_pending(&self) -> bool {
        self.session.wants_write()
    }

    /// close_notify, then the TCP FIN: the end of a close-delimited body.
    pub fn close_write(&mut self) {
        self.session.send_close_notify();
        let _ = self.flush();
        let _ = self.socket.shutdown(Shutdown::Write);
    }
}
