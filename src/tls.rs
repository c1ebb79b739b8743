//! TLS client configuration (rustls with the ring provider).
//!
//! Unlike wrk, which never verifies certificates, pace verifies the server
//! certificate against a trust store: `--cacert`'s CAs when given, else
//! the system's (rustls-native-certs: `SSL_CERT_FILE`/`SSL_CERT_DIR` when
//! set, else the distribution's bundle). `-k/--insecure` accepts any
//! certificate (handshake signatures are still checked, so the connection
//! is still real TLS) and makes `--cacert` moot. SNI and the name verified
//! are `--tls-server-name`, else the URL host when it is a name; rustls
//! sends no SNI for an IP address. `--cert`/`--key` give a client
//! certificate to servers that ask for one (mutual TLS).
//!
//! The files are read and checked once, when the command line is
//! ([`TlsOptions`]), so a wrong one is an error before any connection;
//! each is read with its bound ([`crate::files`]).
//! rustls' errors reach the user in words ([`words`]), never as rustls
//! prints them.

mod cacert;
mod words;

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::ResolvesClientCert;
use rustls::crypto::{self, CryptoProvider};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    AlertDescription, ClientConfig, ClientConnection, DigitallySignedStruct, InconsistentKeys,
    ProtocolVersion, RootCertStore, SignatureScheme,
};

use crate::blocking::{self, Deadline, Exchange};
use crate::endpoint::Endpoint;
use crate::error::{io_reason, Error};
use crate::files::{self, read_bounded};
use crate::http::stream::Stream;
use cacert::{is_ca_used_as_end_entity, Cacert, CacertVerifier};
use words::{alert_name, tls_error};

/// What certificate errors of the handshake are about.
const SERVER_CERTIFICATE: &str = "the server's certificate";

/// The TLS options of the command line, their files read and checked.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// `-k`: accept any server certificate (`cacert` is then unused).
    pub insecure: bool,
    /// `--cacert`: the CAs to trust instead of the system's.
    pub cacert: Option<Cacert>,
    /// `--cert`/`--key`: the client certificate, for servers that ask.
    pub client_certificate: Option<Arc<CertifiedKey>>,
    /// `--tls-server-name`: SNI and the name verified, instead of the URL
    /// host.
    pub server_name: Option<ServerName<'static>>,
}

/// Everything a connection needs to start a TLS session with the target.
#[derive(Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
    /// `--cacert` was given (and `-k` was not): what to advise differs.
    cacert: bool,
}

impl TlsClient {
    /// Builds the client configuration for `host` (the URL host), as
    /// `options` say, offering `alpn` (the protocol's identifiers,
    /// [`crate::protocol::Protocol::alpn`]).
    pub fn new(host: &str, options: &TlsOptions, alpn: &[&[u8]]) -> Result<TlsClient, Error> {
        let provider = Arc::new(crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Setup(format!("unable to initialize TLS: {e}")))?;
        let builder = match (options.insecure, &options.cacert) {
            (true, _) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider))),
            (false, Some(cacert)) => {
                let verifier = CacertVerifier::new(cacert, provider)
                    .map_err(|e| Error::Setup(tls_error(&e, "--cacert")))?;
                builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier))
            }
            (false, None) => builder.with_root_certificates(system_roots()?),
        };
        let mut config = match &options.client_certificate {
            Some(key) => {
                builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(key.clone())))
            }
            None => builder.with_no_client_auth(),
        };
        // With HTTP/2, offering HTTP/1.1 too lets a server that lacks h2
        // say so by choosing it (rather than end the handshake), and the
        // run then fails in words.
        config.alpn_protocols = alpn.iter().map(|id| id.to_vec()).collect();
        let server_name = match &options.server_name {
            Some(name) => name.clone(),
            None => ServerName::try_from(host.to_string())
                .map_err(|e| Error::Setup(format!("invalid TLS server name '{host}': {e}")))?,
        };
        let cacert = options.cacert.is_some() && !options.insecure;
        Ok(TlsClient { config: Arc::new(config), server_name, cacert })
    }

    /// The client's TLS configuration, for a QUIC stack that runs TLS
    /// itself (HTTP/3).
    pub fn config(&self) -> Arc<ClientConfig> {
        self.config.clone()
    }

    /// The name the client sends (SNI) and checks the certificate against.
    pub fn server_name(&self) -> String {
        self.server_name.to_str().into_owned()
    }

    /// Completes one blocking handshake with `endpoint`, so that a certificate
    /// the client does not trust, a client certificate the server refuses
    /// (or, with HTTP/2, a server that does not choose `h2`) is reported
    /// once, clearly, before the run instead of as an error on every
    /// connection. `then` goes on over the connection (HTTP/2 reads the
    /// server's settings). The whole exchange is within `deadline` (a
    /// server that trickles its handshake does not stretch it).
    pub fn check_handshake<T>(
        &self,
        endpoint: &Endpoint,
        deadline: &Deadline,
        then: impl FnOnce(&mut dyn Exchange) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let socket = blocking::connect(endpoint, deadline);
        self.check_handshake_on(socket, &endpoint.to_string(), deadline, then)
    }

    /// [`TlsClient::check_handshake`] on `socket`, connected to `addr` (a
    /// proxy's tunnel to it), or the error of connecting.
    pub fn check_handshake_on<T>(
        &self,
        socket: io::Result<Stream>,
        addr: &str,
        deadline: &Deadline,
        then: impl FnOnce(&mut dyn Exchange) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let timeout = deadline.within();
        // This session alone notes whether the server asks for a client
        // certificate, to say so when it refuses the connection.
        let has_certificate = self.config.client_auth_cert_resolver.has_certs();
        let noted = Arc::new(NotesRequest {
            inner: self.config.client_auth_cert_resolver.clone(),
            asked: AtomicBool::new(false),
        });
        let mut config = (*self.config).clone();
        config.client_auth_cert_resolver = noted.clone();
        let failed = |why: String| Error::Setup(format!("TLS handshake with {addr} failed: {why}"));
        let mut session = ClientConnection::new(Arc::new(config), self.server_name.clone())
            .map_err(|e| failed(tls_error(&e, SERVER_CERTIFICATE)))?;
        let asked = || noted.asked.load(Ordering::Relaxed);
        let io_failed = |e: io::Error| {
            let why = describe_handshake_error(&e, Some(timeout));
            match asked() && !has_certificate && ended_by_server(&e) {
                true => failed(no_certificate_given(&why)),
                false => failed(format!("{why}{}", self.hint(&e))),
            }
        };
        let socket = socket.map_err(io_failed)?;
        let mut exchange = deadline.on(&socket);
        while session.is_handshaking() {
            session.complete_io(&mut exchange).map_err(io_failed)?;
        }
        if asked() && session.protocol_version() == Some(ProtocolVersion::TLSv1_3) {
            await_verdict(&mut session, &mut exchange).map_err(io_failed)?;
        }
        if asked() && !has_certificate {
            // The server let the connection be: it may want a certificate
            // only sometimes, or refuse in HTTP (nginx's 400 "No required
            // SSL certificate was sent").
            eprintln!(
                "pace: warning: the server at {addr} asked for a client certificate and none \
                 was given; if it requires one, it will refuse the requests (use --cert and --key)"
            );
        }
        let offered_h2 = self.config.alpn_protocols.iter().any(|p| p == b"h2");
        match session.alpn_protocol() {
            _ if !offered_h2 => {}
            Some(b"h2") => {}
            chosen => {
                let chose = chosen.map_or("no protocol by ALPN".to_string(), |p| {
                    format!("{} by ALPN", String::from_utf8_lossy(p))
                });
                return Err(Error::Setup(format!(
                    "--http2: the server at {addr} does not speak HTTP/2 over TLS: offered h2 and \
                     http/1.1, it chose {chose} (leave out --http2 to benchmark it over HTTP/1.1)"
                )));
            }
        }
        then(&mut rustls::Stream::new(&mut session, &mut exchange))
    }

    /// A new client session (one per TCP connection; rustls resumes
    /// sessions from its in-memory cache, as wrk's OpenSSL session cache),
    /// or why not, in words.
    pub fn session(&self) -> Result<ClientConnection, String> {
        ClientConnection::new(self.config.clone(), self.server_name.clone())
            .map_err(|e| tls_error(&e, SERVER_CERTIFICATE))
    }

    /// What to try when the server's certificate was not accepted.
    fn hint(&self, error: &io::Error) -> &'static str {
        use rustls::CertificateError as E;
        let Some(rustls::Error::InvalidCertificate(why)) = rustls_error(error) else { return "" };
        match why {
            E::NotValidForName | E::NotValidForNameContext { .. } => {
                " (--tls-server-name NAME verifies another name, or use -k/--insecure to skip \
                 certificate verification)"
            }
            _ if is_ca_used_as_end_entity(rustls_error(error).unwrap()) => match self.cacert {
                true => {
                    " and not itself in --cacert (give --cacert exactly this certificate: pace \
                     then trusts it as curl does; or use -k/--insecure to skip certificate \
                     verification)"
                }
                false => {
                    " (trust exactly this certificate with --cacert FILE, as curl does, or use \
                     -k/--insecure to skip certificate verification)"
                }
            },
            E::Other(other) if is_version_1(other) => {
                " (-k/--insecure does not help: rustls needs to read the certificate to check \
                 the handshake)"
            }
            E::UnknownIssuer if self.cacert => {
                " (--cacert FILE must hold the CA that signed it, or the certificate itself; or \
                 use -k/--insecure to skip certificate verification)"
            }
            _ => {
                " (trust its CA with --cacert FILE, or use -k/--insecure to skip certificate \
                 verification)"
            }
        }
    }
}

/// webpki found an X.509 version 1 certificate.
fn is_version_1(other: &rustls::OtherError) -> bool {
    matches!(other.0.downcast_ref::<webpki::Error>(), Some(webpki::Error::UnsupportedCertVersion))
}

/// Under TLS 1.3 the client is done with the handshake once it has sent
/// its certificate (or none) and its Finished, before the server has
/// judged them: the server's verdict is what it sends next, session
/// tickets or an alert. Reads that, so that a refusal fails the handshake.
fn await_verdict(session: &mut ClientConnection, socket: &mut impl io::Read) -> io::Result<()> {
    match session.read_tls(socket) {
        Ok(0) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection right after the handshake",
        )),
        Ok(_) => session
            .process_new_packets()
            .map(drop)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        // A server that sends no tickets says nothing within the check's
        // time: it did not refuse.
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A failed TLS handshake in words: a timeout says so and after how long
/// (`timeout`, when the socket had one), a plain-HTTP answer to TLS is
/// named as what it is, and so is a server refusing the client's
/// certificate (or its absence).
pub fn describe_handshake_error(error: &io::Error, timeout: Option<Duration>) -> String {
    if matches!(error.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) {
        return match timeout {
            Some(timeout) => format!("no answer within {timeout:?} (timed out)"),
            None => "timed out".to_string(),
        };
    }
    describe_read_error(error)
}

/// A failed read in words: under TLS 1.3 a server's refusal of the client
/// certificate arrives after the handshake, as the first thing read.
pub fn describe_read_error(error: &io::Error) -> String {
    match rustls_error(error) {
        Some(tls @ rustls::Error::AlertReceived(alert)) => {
            describe_refusal(*alert).unwrap_or_else(|| tls_error(tls, SERVER_CERTIFICATE))
        }
        Some(tls) => tls_error(tls, SERVER_CERTIFICATE),
        None => io_reason(error),
    }
}

/// The alerts a server ends the handshake with over the client's
/// certificate, in words.
fn describe_refusal(alert: AlertDescription) -> Option<String> {
    match alert {
        AlertDescription::CertificateRequired => Some(
            "the server asked for a client certificate and none was given (use --cert and --key)"
                .to_string(),
        ),
        AlertDescription::BadCertificate
        | AlertDescription::UnsupportedCertificate
        | AlertDescription::CertificateRevoked
        | AlertDescription::CertificateExpired
        | AlertDescription::CertificateUnknown
        | AlertDescription::UnknownCA => {
            Some(format!("the server refused the client certificate (alert {})", alert_name(alert)))
        }
        _ => None,
    }
}

/// The handshake failed after the server asked for a client certificate
/// and none was given: that is the likely cause (TLS 1.2 servers end the
/// handshake with a plain handshake_failure, some just close).
fn no_certificate_given(why: &str) -> String {
    const NONE_GIVEN: &str = "the server asked for a client certificate and none was given";
    match why.starts_with(NONE_GIVEN) {
        true => why.to_string(),
        false => format!("{NONE_GIVEN} (use --cert and --key): {why}"),
    }
}

/// The server ended the handshake (an alert, or the connection closed),
/// rather than the client (a certificate it does not trust).
fn ended_by_server(error: &io::Error) -> bool {
    matches!(rustls_error(error), Some(rustls::Error::AlertReceived(_)))
        || matches!(
            error.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
        )
}

fn rustls_error(error: &io::Error) -> Option<&rustls::Error> {
    error.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

/// `--cacert FILE`: the CA certificates (PEM) to trust instead of the
/// system's.
pub fn load_cacert(path: &Path) -> Result<Cacert, Error> {
    let certificates = certificates("--cacert", path, &read_bounded(path, files::CACERT)?)?;
    let mut roots = RootCertStore::empty();
    for (n, certificate) in certificates.iter().enumerate() {
        roots.add(certificate.clone()).map_err(|e| {
            let why = tls_error(&e, "it");
            wrong(
                "--cacert",
                path,
                format!("certificate {} cannot be a trust anchor: {why}", n + 1),
            )
        })?;
    }
    Ok(Cacert { roots: Arc::new(roots), certificates })
}

/// `--cert FILE` and `--key FILE`: the client certificate (PEM, its
/// intermediates after it) and its private key (PEM: PKCS #8,
/// RSA or EC), checked to match. Without `--key` the key is looked for in
/// the certificate's file, as curl does.
pub fn load_client_certificate(
    cert: &Path,
    key: Option<&Path>,
) -> Result<Arc<CertifiedKey>, Error> {
    let text = read_bounded(cert, files::CERT)?;
    let chain = certificates("--cert", cert, &text)?;
    let (key_option, key_path, key) = match key {
        Some(path) => {
            ("--key", path, private_key("--key", path, &read_bounded(path, files::KEY)?)?)
        }
        None => match PrivateKeyDer::from_pem_slice(&text) {
            Ok(key) => ("--cert", cert, key),
            Err(_) => {
                return Err(wrong(
                    "--cert",
                    cert,
                    "holds no private key: name the key's file with --key".to_string(),
                ))
            }
        },
    };
    let provider = crypto::ring::default_provider();
    let signing_key = provider.key_provider.load_private_key(key).map_err(|e| {
        wrong(key_option, key_path, format!("the key cannot be used: {}", tls_error(&e, "it")))
    })?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => {
            Ok(Arc::new(certified))
        }
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => Err(wrong(
            key_option,
            key_path,
            format!("the key is not the certificate's ({})", cert.display()),
        )),
        // rustls reads no version 1 certificate, so it cannot compare its
        // key; curl sends one, and so does pace: a server that reads it
        // refuses a wrong key in the handshake.
        Err(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)))
            if is_version_1(&other) =>
        {
            Ok(Arc::new(certified))
        }
        Err(other) => Err(wrong("--cert", cert, tls_error(&other, "the certificate"))),
    }
}

/// `--tls-server-name NAME`: a DNS name or an IP address.
pub fn parse_server_name(text: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(text.to_string())
        .map_err(|_| format!("'{text}' is not a DNS name or an IP address"))
}

/// A file read, but not what the option needs: what was typed must change.
fn wrong(option: &str, path: &Path, why: String) -> Error {
    Error::Usage(format!("{option} {}: {why}", path.display()))
}

/// Every certificate in a PEM file, at least one.
fn certificates(
    option: &str,
    path: &Path,
    text: &[u8],
) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certificates = CertificateDer::pem_slice_iter(text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| wrong(option, path, not_pem(e)))?;
    if certificates.is_empty() {
        let why = "holds no certificate (PEM: -----BEGIN CERTIFICATE-----)";
        return Err(wrong(option, path, why.to_string()));
    }
    Ok(certificates)
}

/// The first private key in a PEM file.
fn private_key(option: &str, path: &Path, text: &[u8]) -> Result<PrivateKeyDer<'static>, Error> {
    let why = match PrivateKeyDer::from_pem_slice(text) {
        Ok(key) => return Ok(key),
        Err(pem::Error::NoItemsFound) if contains(text, b"ENCRYPTED") => {
            "the key is encrypted: pace reads unencrypted keys only (openssl pkey -in FILE \
             -out PLAIN decrypts one)"
                .to_string()
        }
        Err(pem::Error::NoItemsFound) => "holds no private key (PEM: -----BEGIN PRIVATE KEY-----, \
                                          RSA PRIVATE KEY or EC PRIVATE KEY)"
            .to_string(),
        Err(e) => not_pem(e),
    };
    Err(wrong(option, path, why))
}

/// A PEM file that does not parse, in words.
fn not_pem(error: pem::Error) -> String {
    let why = match error {
        pem::Error::MissingSectionEnd { .. } => "a section has no END line".to_string(),
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed".to_string(),
        pem::Error::Base64Decode(_) => "a section is not valid base64".to_string(),
        other => other.to_string(),
    };
    format!("not a valid PEM file: {why}")
}

fn contains(text: &[u8], word: &[u8]) -> bool {
    text.windows(word.len()).any(|window| window == word)
}

fn system_roots() -> Result<RootCertStore, Error> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(Error::Setup(
            "no trusted CA certificates found on this system (install ca-certificates, \
             name a CA file with --cacert, or use -k/--insecure to skip verification)"
                .to_string(),
        ));
    }
    Ok(roots)
}

/// Notes whether the server asked for a client certificate, then answers
/// as `inner` does.
#[derive(Debug)]
struct NotesRequest {
    inner: Arc<dyn ResolvesClientCert>,
    asked: AtomicBool,
}

impl ResolvesClientCert for NotesRequest {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.asked.store(true, Ordering::Relaxed);
        self.inner.resolve(root_hint_subjects, sigschemes)
    }

    fn has_certs(&self) -> bool {
        self.inner.has_certs()
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const RSA_PKCS1: &str = include_str!("../tests/fixtures/tls/rsa-pkcs1.pem");
    const RSA_PKCS8: &str = include_str!("../tests/fixtures/tls/rsa-pkcs8.pem");
    const EC_SEC1: &str = include_str!("../tests/fixtures/tls/ec-sec1.pem");
    const EC_PKCS8: &str = include_str!("../tests/fixtures/tls/ec-pkcs8.pem");

    /// A self-signed certificate for `key` (PKCS #8 PEM), in PEM.
    fn certificate_for(key: &str) -> String {
        let key = rcgen::KeyPair::from_pem(key).unwrap();
        let params = rcgen::CertificateParams::new(vec!["client.test".to_string()]).unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    /// Files written to a temporary directory, by name.
    struct Files(tempfile::TempDir);

    impl Files {
        fn new(files: &[(&str, &str)]) -> Files {
            let dir = tempfile::tempdir().unwrap();
            for (name, text) in files {
                std::fs::write(dir.path().join(name), text).unwrap();
            }
            Files(dir)
        }

        fn path(&self, name: &str) -> PathBuf {
            self.0.path().join(name)
        }
    }

    fn usage_error<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
        match result {
            Err(Error::Usage(message)) => message,
            other => panic!("not a usage error: {other:?}"),
        }
    }

    #[test]
    fn cacert_trusts_every_certificate_of_the_file() {
        let bundle = certificate_for(EC_PKCS8) + &certificate_for(RSA_PKCS8);
        let files = Files::new(&[("ca.pem", &bundle)]);
        let cacert = load_cacert(&files.path("ca.pem")).unwrap();
        assert_eq!((cacert.roots.len(), cacert.certificates.len()), (2, 2));
    }

    #[test]
    fn cacert_errors_name_the_file_and_why() {
        let files = Files::new(&[
            ("key.pem", EC_PKCS8),
            (
                "garbage.pem",
                "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
            ),
            ("cut.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n"),
        ]);
        let missing = files.path("missing.pem");
        match load_cacert(&missing) {
            Err(Error::Setup(message)) => assert_eq!(
                message,
                format!("cannot read --cacert {}: No such file or directory", missing.display())
            ),
            other => panic!("{other:?}"),
        }
        let message = usage_error(load_cacert(&files.path("key.pem")));
        assert!(message.ends_with("holds no certificate (PEM: -----BEGIN CERTIFICATE-----)"));
        let message = usage_error(load_cacert(&files.path("garbage.pem")));
        assert!(message.ends_with("not a valid PEM file: a section is not valid base64"));
        let message = usage_error(load_cacert(&files.path("cut.pem")));
        assert!(message.ends_with("not a valid PEM file: a section has no END line"));
        // Well-formed PEM around bytes that are no certificate.
        let files = Files::new(&[(
            "junk.pem",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )]);
        let message = usage_error(load_cacert(&files.path("junk.pem")));
        assert!(message.contains("certificate 1 cannot be a trust anchor"), "{message}");
    }

    #[test]
    fn client_keys_in_every_format_load() {
        for (key, pkcs8) in [
            (EC_PKCS8, EC_PKCS8),
            (EC_SEC1, EC_PKCS8),
            (RSA_PKCS1, RSA_PKCS8),
            (RSA_PKCS8, RSA_PKCS8),
        ] {
            let files = Files::new(&[("cert.pem", &certificate_for(pkcs8)), ("key.pem", key)]);
            let loaded =
                load_client_certificate(&files.path("cert.pem"), Some(&files.path("key.pem")));
            assert_eq!(loaded.unwrap().cert.len(), 1, "{}", key.lines().next().unwrap());
        }
    }

    #[test]
    fn the_key_may_be_in_the_certificate_file() {
        let both = certificate_for(EC_PKCS8) + EC_SEC1;
        let files = Files::new(&[("both.pem", &both), ("cert.pem", &certificate_for(EC_PKCS8))]);
        assert!(load_client_certificate(&files.path("both.pem"), None).is_ok());
        let message = usage_error(load_client_certificate(&files.path("cert.pem"), None));
        assert!(message.ends_with("holds no private key: name the key's file with --key"));
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused() {
        let files = Files::new(&[("cert.pem", &certificate_for(EC_PKCS8)), ("key.pem", RSA_PKCS1)]);
        let (cert, key) = (files.path("cert.pem"), files.path("key.pem"));
        let message = usage_error(load_client_certificate(&cert, Some(&key)));
        assert_eq!(
            message,
            format!(
                "--key {}: the key is not the certificate's ({})",
                key.display(),
                cert.display()
            )
        );
    }

    #[test]
    fn client_key_errors_say_why() {
        let encrypted =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        let files = Files::new(&[
            ("cert.pem", &certificate_for(EC_PKCS8)),
            ("encrypted.pem", encrypted),
            ("empty.pem", ""),
        ]);
        let cert = files.path("cert.pem");
        let message =
            usage_error(load_client_certificate(&cert, Some(&files.path("encrypted.pem"))));
        assert!(message.contains("the key is encrypted"), "{message}");
        let message = usage_error(load_client_certificate(&cert, Some(&files.path("empty.pem"))));
        assert!(message.contains("holds no private key (PEM"), "{message}");
        match load_client_certificate(&cert, Some(&files.path("missing.pem"))) {
            Err(Error::Setup(message)) => {
                assert!(message.starts_with("cannot read --key "), "{message}")
            }
            other => panic!("{other:?}"),
        }
        // Bytes in a key's PEM that are no key.
        let files = Files::new(&[
            ("cert.pem", &certificate_for(EC_PKCS8)),
            ("junk.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
        ]);
        let message = usage_error(load_client_certificate(
            &files.path("cert.pem"),
            Some(&files.path("junk.pem")),
        ));
        assert!(message.contains("the key cannot be used"), "{message}");
    }

    #[test]
    fn server_names_are_dns_names_or_addresses() {
        assert!(parse_server_name("pace.test").is_ok());
        assert!(parse_server_name("127.0.0.1").is_ok());
        assert!(parse_server_name("::1").is_ok());
        assert_eq!(
            parse_server_name("not a name").unwrap_err(),
            "'not a name' is not a DNS name or an IP address"
        );
    }

    #[test]
    fn refusals_of_the_client_certificate_are_said_in_words() {
        let alert = |alert| {
            let error =
                io::Error::new(io::ErrorKind::InvalidData, rustls::Error::AlertReceived(alert));
            describe_handshake_error(&error, None)
        };
        assert_eq!(
            alert(AlertDescription::CertificateRequired),
            "the server asked for a client certificate and none was given (use --cert and --key)"
        );
        assert_eq!(
            alert(AlertDescription::UnknownCA),
            "the server refused the client certificate (alert unknown_ca)"
        );
        let failure = "the server ended the connection with the TLS alert handshake_failure";
        assert_eq!(alert(AlertDescription::HandshakeFailure), failure);
        // When the server asked and none was given, that is said first.
        assert_eq!(
            no_certificate_given(failure),
            format!(
                "the server asked for a client certificate and none was given (use --cert and \
                 --key): {failure}"
            )
        );
        let said = alert(AlertDescription::CertificateRequired);
        assert_eq!(no_certificate_given(&said), said);
        // The same after the handshake, on a read.
        let error = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(AlertDescription::CertificateRequired),
        );
        assert_eq!(describe_read_error(&error), said);
        let reset = io::Error::from_raw_os_error(libc::ECONNRESET);
        assert_eq!(describe_read_error(&reset), "Connection reset by peer");
    }
}
