//! TLS client configuration (rustls with the ring provider).
//!
//! Unlike wrk, which never verifies certificates, pace verifies the server
//! certificate against the system's trust store by default; `-k/--insecure`
//! accepts any certificate (handshake signatures are still checked, so the
//! connection is still real TLS). SNI is the URL host when it is a name;
//! rustls sends none for IP-address hosts.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{self, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, InvalidMessage, RootCertStore,
    SignatureScheme,
};

use crate::endpoint::Endpoint;
use crate::error::Error;

/// Everything a connection needs to start a TLS session with the target.
#[derive(Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
}

impl TlsClient {
    /// Builds the client configuration for `host` (the URL host), offering
    /// `h2` by ALPN with `http2`, else `http/1.1`.
    pub fn new(host: &str, insecure: bool, http2: bool) -> Result<TlsClient, Error> {
        let provider = Arc::new(crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Setup(format!("unable to initialize TLS: {e}")))?;
        let mut config = if insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
                .with_no_client_auth()
        } else {
            builder.with_root_certificates(system_roots()?).with_no_client_auth()
        };
        // With HTTP/2, offering HTTP/1.1 too lets a server that lacks h2
        // say so by choosing it (rather than end the handshake), and the
        // run then fails in words.
        config.alpn_protocols = match http2 {
            true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            false => vec![b"http/1.1".to_vec()],
        };
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|e| Error::Setup(format!("invalid TLS server name '{host}': {e}")))?;
        Ok(TlsClient { config: Arc::new(config), server_name })
    }

    /// Completes one blocking handshake with `endpoint`, so that a certificate
    /// the client does not trust (or, with HTTP/2, a server that does not
    /// choose `h2`) is reported once, clearly, before the run instead of as
    /// a connect error on every connection.
    pub fn check_handshake(&self, endpoint: &Endpoint, timeout: Duration) -> Result<(), Error> {
        let failed = |why: String| {
            let hint = if why.contains("certificate") {
                " (use -k/--insecure to skip certificate verification)"
            } else {
                ""
            };
            Error::Setup(format!("TLS handshake with {endpoint} failed: {why}{hint}"))
        };
        let mut session = self.session().map_err(|e| failed(e.to_string()))?;
        let io_failed = |e: io::Error| failed(describe_handshake_error(&e, Some(timeout)));
        let mut socket = endpoint.connect(timeout).map_err(io_failed)?;
        socket.set_timeouts(timeout).map_err(io_failed)?;
        while session.is_handshaking() {
            session.complete_io(&mut socket).map_err(io_failed)?;
        }
        let offered_h2 = self.config.alpn_protocols.iter().any(|p| p == b"h2");
        match session.alpn_protocol() {
            _ if !offered_h2 => Ok(()),
            Some(b"h2") => Ok(()),
            chosen => {
                let chose = chosen.map_or("no protocol by ALPN".to_string(), |p| {
                    format!("{} by ALPN", String::from_utf8_lossy(p))
                });
                Err(Error::Setup(format!(
                    "--http2: the server at {endpoint} does not speak HTTP/2 over TLS: offered h2 and \
                     http/1.1, it chose {chose} (leave out --http2 to benchmark it over HTTP/1.1)"
                )))
            }
        }
    }

    /// A new client session (one per TCP connection; rustls resumes
    /// sessions from its in-memory cache, as wrk's OpenSSL session cache).
    pub fn session(&self) -> Result<ClientConnection, rustls::Error> {
        ClientConnection::new(self.config.clone(), self.server_name.clone())
    }
}

/// A failed TLS handshake in words: a timeout says so and after how long
/// (`timeout`, when the socket had one), and a plain-HTTP answer to TLS is
/// named as what it is.
pub fn describe_handshake_error(error: &io::Error, timeout: Option<Duration>) -> String {
    if matches!(error.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) {
        return match timeout {
            Some(timeout) => format!("no answer within {timeout:?} (timed out)"),
            None => "timed out".to_string(),
        };
    }
    let rustls_error = error.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
    if let Some(rustls::Error::InvalidMessage(InvalidMessage::InvalidContentType)) = rustls_error {
        return "the server answered in plain HTTP, not TLS (an http:// URL?)".to_string();
    }
    let text = error.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

fn system_roots() -> Result<RootCertStore, Error> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(Error::Setup(
            "no trusted CA certificates found on this system (install ca-certificates, \
             or use -k/--insecure to skip verification)"
                .to_string(),
        ));
    }
    Ok(roots)
}

/// `-k`: trust any certificate, but still check handshake signatures.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
