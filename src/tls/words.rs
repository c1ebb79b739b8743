//! rustls' errors in words. rustls' own texts print its enums as Rust
//! writes them for programmers (`invalid peer certificate:
//! Other(OtherError(CaUsedAsEndEntity))`); every error a connection can
//! meet is said here as a sentence, and what rustls may add later gets a
//! sentence too.

use rustls::pki_types::UnixTime;
use rustls::{
    AlertDescription, CertificateError, Error, InconsistentKeys, InvalidMessage, OtherError,
    PeerIncompatible,
};

/// A rustls error in words; `certificate` names the certificate a
/// certificate error is about (`the server's certificate`).
pub fn tls_error(error: &Error, certificate: &str) -> String {
    match error {
        Error::InvalidCertificate(why) => certificate_error(why, certificate),
        Error::AlertReceived(alert) => {
            format!("the server ended the connection with the TLS alert {}", alert_name(*alert))
        }
        Error::InvalidMessage(InvalidMessage::InvalidContentType) => {
            "the server answered in plain HTTP, not TLS (an http:// URL?)".to_string()
        }
        Error::InvalidMessage(_) => "the server sent a malformed TLS message".to_string(),
        Error::InappropriateMessage { .. } | Error::InappropriateHandshakeMessage { .. } => {
            "the server sent a TLS message out of order".to_string()
        }
        Error::PeerIncompatible(why) => incompatible(why),
        Error::PeerMisbehaved(_) => "the server broke the rules of the TLS protocol".to_string(),
        Error::NoCertificatesPresented => "the server sent no certificate".to_string(),
        Error::UnsupportedNameType => "the server name is of a kind TLS cannot send".to_string(),
        Error::DecryptError => "a TLS record from the server could not be decrypted".to_string(),
        Error::EncryptError => "a TLS record could not be encrypted".to_string(),
        Error::PeerSentOversizedRecord => {
            "the server sent a TLS record larger than TLS allows".to_string()
        }
        Error::NoApplicationProtocol => {
            "the server speaks none of the protocols offered by ALPN".to_string()
        }
        Error::HandshakeNotComplete => "the TLS handshake did not complete".to_string(),
        Error::FailedToGetCurrentTime => "the system clock could not be read".to_string(),
        Error::FailedToGetRandomBytes => "the system gave no random bytes".to_string(),
        Error::InconsistentKeys(InconsistentKeys::KeyMismatch) => {
            "the key is not the certificate's".to_string()
        }
        Error::InconsistentKeys(_) => {
            "the key could not be checked against the certificate".to_string()
        }
        Error::InvalidCertRevocationList(_) => {
            "a certificate revocation list is not valid".to_string()
        }
        Error::InvalidEncryptedClientHello(_) => {
            "the server refused the encrypted client hello".to_string()
        }
        Error::BadMaxFragmentSize => "the TLS fragment size is out of range".to_string(),
        Error::General(text) => format!("TLS failed: {text}"),
        Error::Other(other) => other_error(other, certificate),
        _ => "the TLS connection failed".to_string(),
    }
}

/// Why a certificate was not accepted.
fn certificate_error(error: &CertificateError, certificate: &str) -> String {
    use CertificateError as E;
    let why = match error {
        E::BadEncoding => "is not a valid X.509 certificate".to_string(),
        E::Expired => "has expired".to_string(),
        E::ExpiredContext { not_after, .. } => format!("expired on {}", date(*not_after)),
        E::NotValidYet => "is not valid yet (is this machine's clock right?)".to_string(),
        E::NotValidYetContext { not_before, .. } => {
            format!("is not valid before {} (is this machine's clock right?)", date(*not_before))
        }
        E::Revoked => "has been revoked".to_string(),
        E::UnknownRevocationStatus
        | E::ExpiredRevocationList
        | E::ExpiredRevocationListContext { .. } => {
            "could not be checked for revocation".to_string()
        }
        E::UnhandledCriticalExtension => {
            "has a critical extension that rustls does not know".to_string()
        }
        E::UnknownIssuer => "is not signed by a CA that pace trusts".to_string(),
        E::BadSignature => "has a signature that its issuer's key does not verify".to_string(),
        E::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
            "is signed with an algorithm that does not match its issuer's key".to_string()
        }
        E::NotValidForName => "is not valid for the name pace verifies".to_string(),
        E::NotValidForNameContext { expected, presented } => {
            let names = match presented.as_slice() {
                [] => "no name (it has no subjectAltName)".to_string(),
                names => {
                    names.iter().map(|name| presented_name(name)).collect::<Vec<_>>().join(", ")
                }
            };
            format!("is not valid for {}: it names {names}", expected.to_str())
        }
        E::InvalidPurpose | E::InvalidPurposeContext { .. } => {
            "is not for TLS servers (its extended key usage leaves that out)".to_string()
        }
        E::InvalidOcspResponse => "came with an OCSP response that is not valid".to_string(),
        E::ApplicationVerificationFailure => "was refused".to_string(),
        E::Other(other) => return other_error(other, certificate),
        // UnsupportedSignatureAlgorithm(Context), and what rustls adds.
        _ => "is signed with an algorithm that rustls does not support".to_string(),
    };
    format!("{certificate} {why}")
}

/// A name a certificate presents, as webpki reports it (`DnsName("a.test")`,
/// `IpAddress(127.0.0.1)`), as the name alone.
fn presented_name(reported: &str) -> &str {
    let inner = ["DnsName(", "IpAddress("]
        .iter()
        .find_map(|kind| reported.strip_prefix(kind)?.strip_suffix(')'));
    inner.map_or(reported, |name| name.trim_matches('"'))
}

/// What webpki found wrong, carried by rustls as an opaque error.
fn other_error(other: &OtherError, certificate: &str) -> String {
    let Some(error) = other.0.downcast_ref::<webpki::Error>() else {
        return format!("TLS failed: {}", other.0);
    };
    use webpki::Error as E;
    let why = match error {
        E::CaUsedAsEndEntity => CA_USED_AS_END_ENTITY,
        E::UnsupportedCertVersion => VERSION_1,
        E::EndEntityUsedAsCa => "has an issuer in its chain that is not a CA certificate",
        E::PathLenConstraintViolated
        | E::NameConstraintViolation
        | E::MaximumPathDepthExceeded
        | E::MaximumPathBuildCallsExceeded
        | E::MaximumSignatureChecksExceeded
        | E::MaximumNameConstraintComparisonsExceeded => {
            "has a chain to its CA that breaks the CA's constraints"
        }
        E::UnsupportedCriticalExtension => "has a critical extension that rustls does not know",
        E::CertDistrusted => "is distrusted",
        _ => "is not a certificate rustls accepts",
    };
    format!("{certificate} {why}")
}

/// The words of webpki's `CaUsedAsEndEntity`.
pub const CA_USED_AS_END_ENTITY: &str =
    "is a CA certificate (basicConstraints CA:TRUE, as openssl req -x509 makes one) used as \
     the server's own";

/// The words of webpki's `UnsupportedCertVersion`.
pub const VERSION_1: &str = "is an X.509 version 1 certificate: rustls reads version 3 \
                             certificates only (openssl req -x509 makes one; openssl x509 -req \
                             does with -extfile)";

/// Why the server and pace found no TLS they both speak.
fn incompatible(why: &PeerIncompatible) -> String {
    let what = match why {
        PeerIncompatible::NoCipherSuitesInCommon => "no cipher suite",
        PeerIncompatible::NoKxGroupsInCommon => "no key exchange group",
        PeerIncompatible::NoSignatureSchemesInCommon
        | PeerIncompatible::NoCertificateRequestSignatureSchemesInCommon => "no signature scheme",
        PeerIncompatible::ServerTlsVersionIsDisabledByOurConfig
        | PeerIncompatible::SupportedVersionsExtensionRequired => {
            "no TLS version (pace speaks TLS 1.2 and 1.3)"
        }
        _ => "no TLS parameters",
    };
    format!("the server and pace have {what} in common")
}

/// An alert by its name in the TLS RFCs (`handshake_failure`).
pub fn alert_name(alert: AlertDescription) -> String {
    use AlertDescription as A;
    let name = match alert {
        A::CloseNotify => "close_notify",
        A::UnexpectedMessage => "unexpected_message",
        A::BadRecordMac => "bad_record_mac",
        A::DecryptionFailed => "decryption_failed",
        A::RecordOverflow => "record_overflow",
        A::DecompressionFailure => "decompression_failure",
        A::HandshakeFailure => "handshake_failure",
        A::NoCertificate => "no_certificate",
        A::BadCertificate => "bad_certificate",
        A::UnsupportedCertificate => "unsupported_certificate",
        A::CertificateRevoked => "certificate_revoked",
        A::CertificateExpired => "certificate_expired",
        A::CertificateUnknown => "certificate_unknown",
        A::IllegalParameter => "illegal_parameter",
        A::UnknownCA => "unknown_ca",
        A::AccessDenied => "access_denied",
        A::DecodeError => "decode_error",
        A::DecryptError => "decrypt_error",
        A::ExportRestriction => "export_restriction",
        A::ProtocolVersion => "protocol_version",
        A::InsufficientSecurity => "insufficient_security",
        A::InternalError => "internal_error",
        A::InappropriateFallback => "inappropriate_fallback",
        A::UserCanceled => "user_canceled",
        A::NoRenegotiation => "no_renegotiation",
        A::MissingExtension => "missing_extension",
        A::UnsupportedExtension => "unsupported_extension",
        A::CertificateUnobtainable => "certificate_unobtainable",
        A::UnrecognisedName => "unrecognized_name",
        A::BadCertificateStatusResponse => "bad_certificate_status_response",
        A::BadCertificateHashValue => "bad_certificate_hash_value",
        A::UnknownPSKIdentity => "unknown_psk_identity",
        A::CertificateRequired => "certificate_required",
        A::NoApplicationProtocol => "no_application_protocol",
        A::EncryptedClientHelloRequired => "ech_required",
        other => return format!("number {}", u8::from(other)),
    };
    name.to_string()
}

/// A certificate's time in RFC 3339 (`2026-01-31T12:00:00Z`).
fn date(time: UnixTime) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(time.as_secs());
    crate::units::format_rfc3339(at)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::pki_types::ServerName;
    use rustls::PeerMisbehaved;

    use super::*;

    const SERVER: &str = "the server's certificate";

    fn webpki(error: webpki::Error) -> Error {
        Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(error))))
    }

    /// Nothing here reads like Rust: no `Name(...)` or `CamelCase`.
    fn assert_words(text: &str) {
        assert!(!text.contains('(') || !text.contains("Error"), "{text}");
        let camel = text.split(|c: char| !c.is_alphanumeric()).any(|word| {
            let mut chars = word.chars();
            chars.next().is_some_and(char::is_uppercase) && chars.any(char::is_uppercase)
        });
        assert!(!camel || text.contains("TLS") || text.contains("CA"), "{text}");
    }

    #[test]
    fn certificate_errors_in_words() {
        for (error, said) in [
            (webpki(webpki::Error::CaUsedAsEndEntity), CA_USED_AS_END_ENTITY),
            (webpki(webpki::Error::UnsupportedCertVersion), VERSION_1),
            (CertificateError::UnknownIssuer.into(), "is not signed by a CA that pace trusts"),
            (
                CertificateError::ExpiredContext {
                    time: UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_800_000_000)),
                    not_after: UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                        1_700_000_000,
                    )),
                }
                .into(),
                "expired on 2023-11-14T22:13:20Z",
            ),
            (
                CertificateError::NotValidForNameContext {
                    expected: ServerName::try_from("api.test").unwrap(),
                    presented: vec!["DnsName(\"localhost\")".into(), "IpAddress(127.0.0.1)".into()],
                }
                .into(),
                "is not valid for api.test: it names localhost, 127.0.0.1",
            ),
        ] {
            let text = tls_error(&error, SERVER);
            assert_eq!(text, format!("{SERVER} {said}"));
            assert_words(&text);
        }
    }

    #[test]
    fn other_errors_in_words() {
        for (error, said) in [
            (
                Error::AlertReceived(AlertDescription::HandshakeFailure),
                "the server ended the connection with the TLS alert handshake_failure",
            ),
            (
                Error::PeerIncompatible(PeerIncompatible::NoCipherSuitesInCommon),
                "the server and pace have no cipher suite in common",
            ),
            (
                Error::PeerMisbehaved(PeerMisbehaved::TooManyEmptyFragments),
                "the server broke the rules of the TLS protocol",
            ),
            (Error::DecryptError, "a TLS record from the server could not be decrypted"),
            (
                webpki(webpki::Error::MaximumPathDepthExceeded),
                "the server's certificate has a chain to its CA that breaks the CA's constraints",
            ),
        ] {
            assert_eq!(tls_error(&error, SERVER), said);
            assert_words(said);
        }
        assert_eq!(alert_name(AlertDescription::Unknown(200)), "number 200");
    }
}
