//! HTTP/1.1 on the wire, for both ends: the bytes pace sends ([`request`]),
//! the framing of the responses it reads back ([`response`]), and what the
//! built-in server (`crate::serve`) shares with them: the meaning of the
//! headers that decide where a message ends ([`framing`]), the chunked
//! decoder ([`chunked`]) and the byte stream under a connection, plain TCP
//! or TLS ([`transport`]).
//!
//! wrk does the client side with joyent's http_parser. pace lets `httparse`
//! parse request lines, status lines and header blocks (zero-copy, SIMD)
//! and frames bodies itself.

mod block;
pub mod chunked;
pub mod framing;
pub mod request;
pub mod response;
pub mod stream;
pub mod transport;

/// The largest header block, chunk-size line or trailer section accepted.
/// http_parser stops at 80 KiB (`HTTP_MAX_HEADER_SIZE`); 64 KiB is as generous
/// for real servers and bounds what a hostile one can make pace buffer.
const MAX_BLOCK_BYTES: usize = 64 * 1024;

/// The most header fields accepted in one header block or trailer section
/// (hyper's default). http_parser has no such limit, but httparse needs one.
pub(crate) const MAX_HEADERS: usize = 100;
