//! HTTPS for the server: a fixed certificate, and the rustls session of
//! each connection (driven by [`crate::http::transport::Transport`]).
//!
//! The certificate is embedded, as Go's `net/http/httptest` does
//! (`internal/testcert`), instead of being generated at start-up: no
//! certificate generator among the dependencies. It is self-signed, valid
//! from 2000 to 2100 for `localhost`, `127.0.0.1` and `::1`, with an ECDSA
//! P-256 key; `cert/generate.sh` made both files with OpenSSL. **The key is
//! public** (it is in the source): the certificate proves nothing and is
//! only for benchmarking on the local machine.

use std::io;
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
    // HTTP/2 preferred, as servers do; a connection that chose it starts
    // with the preface, which hands it over (see serve::http2).
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Identity { config: Arc::new(config), certificate_der: CERTIFICATE_DER })
}

/// A session for one accepted connection. Its send buffer is bounded, so
/// that writes report `WouldBlock` instead of encrypting a whole large
/// response into memory.
pub(super) fn session(config: &Arc<ServerConfig>) -> io::Result<ServerConnection> {
    let mut session = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
    session.set_buffer_limit(Some(SEND_BUFFER_LIMIT));
    Ok(session)
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
