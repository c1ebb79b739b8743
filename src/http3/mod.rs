//! HTTP/3's own wire (RFC 9114): QUIC's variable-length integers, the
//! frames of the request and control streams, SETTINGS and GOAWAY, the
//! error codes, a response as the client reads it from its stream, the
//! peer's unidirectional streams (control, QPACK's), and QPACK (RFC 9204)
//! without a dynamic table: what pace
//! needs of HTTP/3 above the QUIC streams, written here because the
//! QUIC stack chosen for `--http3` (quinn-proto, for its CPU per request:
//! docs/architecture.md) carries streams only. The engine's HTTP/3
//! protocol and `pace serve --http3` are to be built on it (issue 30).

pub mod error;
pub mod frame;
mod huffman;
pub mod qpack;
pub mod response;
pub mod streams;
mod tables;
pub mod varint;
