//! The error codes of HTTP/3 (RFC 9114, section 8.1) and of QPACK (RFC
//! 9204, section 6), with the names reports give them.

/// Why an HTTP/3 connection or stream failed: the code sent to (or
/// received from) the peer, and what went wrong in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct H3Error {
    pub code: u64,
    pub reason: String,
}

impl H3Error {
    pub fn new(code: u64, reason: impl Into<String>) -> H3Error {
        H3Error { code, reason: reason.into() }
    }
}

impl std::fmt::Display for H3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.reason, name(self.code))
    }
}

pub const NO_ERROR: u64 = 0x100;
#[cfg(test)]
pub const INTERNAL_ERROR: u64 = 0x102;
pub const STREAM_CREATION_ERROR: u64 = 0x103;
pub const CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub const FRAME_UNEXPECTED: u64 = 0x105;
pub const FRAME_ERROR: u64 = 0x106;
pub const EXCESSIVE_LOAD: u64 = 0x107;
pub const ID_ERROR: u64 = 0x108;
pub const SETTINGS_ERROR: u64 = 0x109;
pub const MISSING_SETTINGS: u64 = 0x10a;
pub const REQUEST_REJECTED: u64 = 0x10b;
pub const REQUEST_CANCELLED: u64 = 0x10c;
pub const REQUEST_INCOMPLETE: u64 = 0x10d;
pub const MESSAGE_ERROR: u64 = 0x10e;
pub const VERSION_FALLBACK: u64 = 0x110;
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
pub const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;
pub const QPACK_DECODER_STREAM_ERROR: u64 = 0x202;

/// `code` as QUIC carries it in a reset, a stop or a close (every code
/// defined fits; a larger one would be a bug, sent as 0).
pub fn on_the_wire(code: u64) -> quinn_proto::VarInt {
    quinn_proto::VarInt::from_u64(code).unwrap_or_default()
}

/// The name of an error code, as the RFCs write it; a code they do not
/// define (a reserved one, an extension's) in hex.
pub fn name(code: u64) -> String {
    const NAMES: [&str; 17] = [
        "H3_NO_ERROR",
        "H3_GENERAL_PROTOCOL_ERROR",
        "H3_INTERNAL_ERROR",
        "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM",
        "H3_FRAME_UNEXPECTED",
        "H3_FRAME_ERROR",
        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",
        "H3_SETTINGS_ERROR",
        "H3_MISSING_SETTINGS",
        "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",
        "H3_REQUEST_INCOMPLETE",
        "H3_MESSAGE_ERROR",
        "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK",
    ];
    match code {
        NO_ERROR..=VERSION_FALLBACK => NAMES[(code - NO_ERROR) as usize].to_string(),
        QPACK_DECOMPRESSION_FAILED => "QPACK_DECOMPRESSION_FAILED".to_string(),
        QPACK_ENCODER_STREAM_ERROR => "QPACK_ENCODER_STREAM_ERROR".to_string(),
        QPACK_DECODER_STREAM_ERROR => "QPACK_DECODER_STREAM_ERROR".to_string(),
        _ => format!("error 0x{code:x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_the_rfcs_names() {
        assert_eq!(name(NO_ERROR), "H3_NO_ERROR");
        assert_eq!(name(REQUEST_REJECTED), "H3_REQUEST_REJECTED");
        assert_eq!(name(VERSION_FALLBACK), "H3_VERSION_FALLBACK");
        assert_eq!(name(QPACK_DECOMPRESSION_FAILED), "QPACK_DECOMPRESSION_FAILED");
        // A reserved code (0x1f * N + 0x21) is no error of the RFC.
        assert_eq!(name(0x21), "error 0x21");
        let e = H3Error::new(FRAME_UNEXPECTED, "DATA before HEADERS");
        assert_eq!(e.to_string(), "DATA before HEADERS (H3_FRAME_UNEXPECTED)");
    }
}
