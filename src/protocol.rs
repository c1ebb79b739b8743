//! The protocols pace speaks over its connections, as the command line
//! chooses them: a type the configuration, the TLS client (its ALPN), the
//! proxy (what needs a tunnel), the engine (which implementation) and the
//! reports (its name) share.

use std::fmt;

use crate::target::Scheme;

/// HTTP/2's ALPN identifier.
pub const ALPN_H2: &[u8] = b"h2";
/// HTTP/3's ALPN identifier.
pub const ALPN_H3: &[u8] = b"h3";
/// HTTP/1.1's ALPN identifier.
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// The protocol a run speaks over its connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 (wrk's): one request (or pipelined batch) at a time on a
    /// connection.
    #[default]
    Http1,
    /// `--http2`: h2 by ALPN over TLS, h2c with prior knowledge over TCP;
    /// `--streams` requests at a time on a connection.
    Http2,
    /// `--http3`: h3 over QUIC (UDP), https only; `--streams` requests at
    /// a time on a connection.
    Http3,
}

impl Protocol {
    /// The protocol's name as the JSON gives it, on a connection of
    /// `scheme`: `http/1.1`, `h2` (HTTP/2 over TLS) or `h2c` (over TCP).
    pub fn name(self, scheme: Scheme) -> &'static str {
        match (self, scheme) {
            (Protocol::Http1, _) => "http/1.1",
            (Protocol::Http2, Scheme::Https) => "h2",
            (Protocol::Http2, Scheme::Http) => "h2c",
            (Protocol::Http3, _) => "h3",
        }
    }

    /// The protocol of a name [`Protocol::name`] gives.
    pub fn from_name(name: &str) -> Option<Protocol> {
        match name {
            "http/1.1" => Some(Protocol::Http1),
            "h2" | "h2c" => Some(Protocol::Http2),
            "h3" => Some(Protocol::Http3),
            _ => None,
        }
    }

    /// Carries several requests at once on a connection (`--streams`).
    pub fn multiplexed(self) -> bool {
        self != Protocol::Http1
    }

    /// The ALPN identifiers a TLS client offers for it, preferred first.
    pub fn alpn(self) -> &'static [&'static [u8]] {
        match self {
            Protocol::Http1 => &[ALPN_HTTP1],
            Protocol::Http2 => &[ALPN_H2, ALPN_HTTP1],
            Protocol::Http3 => &[ALPN_H3],
        }
    }
}

/// `HTTP/1.1`, `HTTP/2`, `HTTP/3`: the protocol for people.
impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Http1 => "HTTP/1.1",
            Protocol::Http2 => "HTTP/2",
            Protocol::Http3 => "HTTP/3",
        })
    }
}
