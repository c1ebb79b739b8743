//! HTTPS for the server: a fixed certificate and a rustls session driven
//! over a non-blocking socket.
//!
//! The certificate is embedded, as Go's `net/http/httptest` does
//! (`internal/testcert`), instead of being generated at start-up: no
//! certificate generator among the dependencies. It is self-signed, valid
//! from 2000 to 2100 for `localhost`, `127.0.0.1` and `::1`, with an ECDSA
//! P-256 key; `cert/generate.sh` made both files with OpenSSL. **The key is
//! public** (it is in the source): the certificate proves nothing and is
//! only for benchmarking on the local machine.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection};

/// The self-signed certificate (DER).
const CERTIFICATE_DER: &[u8] = include_bytes!("cert/localhost.der");

/// Its private key (PKCS #8, DER). Public: see the module documentation.
const PRIVATE_KEY_DER: &[u8] = include_bytes!("cert/localhost-key.der");

/// TLS records the session may hold before writes report a full buffer.
const SEND_BUFFER_LIMIT: usize = 64 * 1024;

/// What the server presents: the rustls configuration and the certificate
/// (DER) for clients that want to trust it.
pub(super) struct Identity {
    pub config: Arc<ServerConfig>,
    pub certificate_der: &'static [u8],
}

/// The embedded certificate and key, ready to serve.
pub(super) fn local_identity() -> io::Result<Identity> {
    let certificate = CertificateDer::from(CERTIFICATE_DER);
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(PRIVATE_KEY_DER));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![certificate], key)
        .map_err(io::Error::other)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Identity { config: Arc::new(config), certificate_der: CERTIFICATE_DER })
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rustls::client::danger::ServerCertVerifier;
    use rustls::client::WebPkiServerVerifier;
    use rustls::pki_types::{ServerName, UnixTime};
    use rustls::RootCertStore;

    use super::*;

    /// Verifies the embedded certificate as a client that trusts it would.
    fn verify(name: &str, at: UnixTime) -> Result<(), rustls::Error> {
        let mut roots = RootCertStore::empty();
        roots.add(CertificateDer::from(CERTIFICATE_DER)).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
        let name = ServerName::try_from(name).unwrap();
        let certificate = CertificateDer::from(CERTIFICATE_DER);
        verifier.verify_server_cert(&certificate, &[], &name, &[], at).map(|_| ())
    }

    #[test]
    fn certificate_is_valid_for_the_local_names_for_a_century() {
        let year =
            |y: u64| UnixTime::since_unix_epoch(Duration::from_secs((y - 1970) * 31_557_600));
        for name in ["localhost", "127.0.0.1", "::1"] {
            for at in [UnixTime::now(), year(2001), year(2099)] {
                assert_eq!(verify(name, at), Ok(()), "{name}");
            }
        }
        assert!(verify("example.com", UnixTime::now()).is_err());
        assert!(verify("127.0.0.2", UnixTime::now()).is_err());
        assert!(verify("localhost", year(2101)).is_err());
    }
}
