//! HTTP/3 for the client (RFC 9114) over quinn-proto's QUIC: a connection
//! without I/O that sends requests on streams and ends each response while
//! handling the datagram that completed it ([`connection`]), and what
//! HTTP/3 adds above QUIC's streams, which quinn-proto does not carry:
//! QUIC's variable-length integers, the frames, SETTINGS and GOAWAY, the
//! error codes, a response as the client reads it from its stream, the
//! peer's unidirectional streams (control, QPACK's), and QPACK (RFC 9204)
//! without a dynamic table. docs/architecture.md says why quinn-proto and
//! not quiche. The engine's HTTP/3 protocol (`engine::http3`, on its
//! datagram link) drives [`connection`]; [`check`] is the handshake made
//! before a run; `pace serve --http3` answers with [`server`].

pub mod check;
pub mod connection;
pub mod error;
pub mod frame;
mod huffman;
pub mod qpack;
pub mod response;
pub mod server;
pub mod streams;
mod tables;
pub mod varint;

#[cfg(test)]
mod ngtcp2_tests;
#[cfg(test)]
pub(crate) mod test_client;
