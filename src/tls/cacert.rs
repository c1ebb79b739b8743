//! `--cacert`'s verifier: webpki's, which also accepts, as curl does, a
//! self-signed CA certificate that the server uses as its own when it is
//! exactly one of the certificates given.
//!
//! `openssl req -x509` makes such a certificate (its default extensions
//! say `CA:TRUE`), and webpki refuses a CA certificate in the server's
//! place (`CaUsedAsEndEntity`). Given exactly in `--cacert`, it is
//! trusted by its bytes, as OpenSSL trusts a self-signed certificate in
//! its store; what webpki checks besides still holds: its validity period
//! (webpki checks it before it refuses the CA), the name it is valid for,
//! and the handshake's signature, made with its key.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, DigitallySignedStruct, Error, OtherError, RootCertStore, SignatureScheme,
};

/// Verifies against the CAs of `--cacert`, and accepts a CA certificate of
/// `--cacert` as the server's own.
#[derive(Debug)]
pub struct CacertVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    given: Vec<CertificateDer<'static>>,
}

/// The certificates of `--cacert`, each checked to be a trust anchor.
#[derive(Clone, Debug)]
pub struct Cacert {
    pub roots: Arc<RootCertStore>,
    pub certificates: Vec<CertificateDer<'static>>,
}

impl CacertVerifier {
    /// A verifier that trusts `cacert`.
    pub fn new(cacert: &Cacert, provider: Arc<CryptoProvider>) -> Result<CacertVerifier, Error> {
        let webpki = WebPkiServerVerifier::builder_with_provider(cacert.roots.clone(), provider)
            .build()
            .map_err(|e| Error::General(format!("--cacert cannot be used ({e})")))?;
        Ok(CacertVerifier { webpki, given: cacert.certificates.clone() })
    }

    /// The server's certificate is one given, refused only for being a CA:
    /// accepted if it is valid for `server_name`.
    fn accept_given(
        &self,
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
    ) -> Result<ServerCertVerified, Error> {
        let certificate = webpki::EndEntityCert::try_from(end_entity).map_err(certificate_error)?;
        certificate.verify_is_valid_for_subject_name(server_name).map_err(certificate_error)?;
        Ok(ServerCertVerified::assertion())
    }
}

impl ServerCertVerifier for CacertVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verified = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verified {
            Err(error)
                if is_ca_used_as_end_entity(&error)
                    && self.given.iter().any(|given| given == end_entity) =>
            {
                self.accept_given(end_entity, server_name)
            }
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// webpki refused a CA certificate in the server's place.
pub fn is_ca_used_as_end_entity(error: &Error) -> bool {
    matches!(
        error,
        Error::InvalidCertificate(CertificateError::Other(OtherError(inner)))
            if matches!(inner.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity))
    )
}

/// A webpki error as rustls carries it.
fn certificate_error(error: webpki::Error) -> Error {
    let why = match error {
        webpki::Error::CertNotValidForName(context) => CertificateError::NotValidForNameContext {
            expected: context.expected,
            presented: context.presented,
        },
        other => CertificateError::Other(OtherError(Arc::new(other))),
    };
    Error::InvalidCertificate(why)
}
