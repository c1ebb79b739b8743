//! HTTP/1.1 on the wire: the bytes pace sends ([`request`]) and the framing of
//! the responses it reads back ([`response`]).
//!
//! wrk does both with joyent's http_parser. pace lets `httparse` parse request
//! lines, status lines and header blocks (zero-copy, SIMD) and frames bodies
//! itself. This module holds what both directions share: the limits and the
//! meaning of the headers that decide where a message ends.

pub mod request;
pub mod response;

use httparse::{InvalidChunkSize, Status};

/// The largest header block, chunk-size line or trailer section accepted.
/// http_parser stops at 80 KiB (`HTTP_MAX_HEADER_SIZE`); 64 KiB is as generous
/// for real servers and bounds what a hostile one can make pace buffer.
const MAX_BLOCK_BYTES: usize = 64 * 1024;

/// The most header fields accepted in one header block or trailer section
/// (hyper's default). http_parser has no such limit, but httparse needs one.
const MAX_HEADERS: usize = 100;

/// What the headers of a message say about its framing and its connection.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Framing {
    /// The Content-Length, once every occurrence agreed on it.
    content_length: Option<u64>,
    /// A Transfer-Encoding header is present.
    transfer_encoding: bool,
    /// `chunked` is the final transfer coding, so the body is chunked.
    chunked: bool,
    /// `Connection` lists `close`.
    close: bool,
    /// `Connection` lists `keep-alive`.
    keep_alive: bool,
}

/// The index of a header whose Content-Length is not a number or disagrees
/// with an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BadContentLength(usize);

impl Framing {
    /// Reads the framing headers of one parsed header block. Names are
    /// case-insensitive; repeated headers combine as lists (RFC 9110 §5.3).
    fn scan(headers: &[httparse::Header<'_>]) -> Result<Framing, BadContentLength> {
        let mut framing = Framing::default();
        for (index, header) in headers.iter().enumerate() {
            let name = header.name;
            if name.eq_ignore_ascii_case("content-length") {
                let length = content_length(header.value)
                    .filter(|length| framing.content_length.is_none_or(|known| known == *length))
                    .ok_or(BadContentLength(index))?;
                framing.content_length = Some(length);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                framing.transfer_encoding = true;
                // Only the last coding frames the body, and a later header
                // field continues the list of an earlier one.
                framing.chunked = list_items(header.value)
                    .last()
                    .is_some_and(|coding| coding.eq_ignore_ascii_case(b"chunked"));
            } else if name.eq_ignore_ascii_case("connection") {
                for option in list_items(header.value) {
                    framing.close |= option.eq_ignore_ascii_case(b"close");
                    framing.keep_alive |= option.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        Ok(framing)
    }
}

/// The non-empty, trimmed items of a comma-separated header value.
fn list_items(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&byte| byte == b',').map(<[u8]>::trim_ascii).filter(|item| !item.is_empty())
}

/// A Content-Length value: one decimal number, or a list repeating the same
/// number (`42, 42`, which RFC 9110 §8.6 allows a recipient to accept).
fn content_length(value: &[u8]) -> Option<u64> {
    let mut length = None;
    for item in value.split(|&byte| byte == b',') {
        let item = decimal(item.trim_ascii())?;
        if length.is_some_and(|known| known != item) {
            return None;
        }
        length = Some(item);
    }
    length
}

/// An unsigned decimal number without sign or spaces that fits in a u64.
fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |number, &digit| {
        if !digit.is_ascii_digit() {
            return None;
        }
        number.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    })
}

/// `httparse::parse_chunk_size`, except that the size needs at least one hex
/// digit: httparse reads a bare CRLF as size 0, RFC 9112 and http_parser do
/// not. Complete gives the length of the line (through its CRLF) and the size.
fn parse_chunk_size(buf: &[u8]) -> Result<Status<(usize, u64)>, InvalidChunkSize> {
    match buf.first() {
        None => Ok(Status::Partial),
        Some(first) if first.is_ascii_hexdigit() => httparse::parse_chunk_size(buf),
        Some(_) => Err(InvalidChunkSize),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header { name, value: value.as_bytes() }
    }

    #[test]
    fn content_length_accepts_numbers_and_repeated_lists() {
        assert_eq!(content_length(b"0"), Some(0));
        assert_eq!(content_length(b" 42 "), Some(42));
        assert_eq!(content_length(b"42, 42,42"), Some(42));
        assert_eq!(content_length(b"18446744073709551615"), Some(u64::MAX));
    }

    #[test]
    fn content_length_rejects_garbage_conflicts_and_overflow() {
        for bad in
            [&b""[..], b"-1", b"+1", b"1 2", b"0x10", b"42, 43", b"42,", b"18446744073709551616"]
        {
            assert_eq!(content_length(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn framing_reads_lengths_codings_and_connection_options() {
        let framing = Framing::scan(&[
            header("content-LENGTH", "7"),
            header("Content-Length", "7"),
            header("Transfer-Encoding", "gzip"),
            header("transfer-encoding", "Chunked"),
            header("Connection", "Upgrade, CLOSE"),
        ])
        .unwrap();
        assert_eq!(
            framing,
            Framing {
                content_length: Some(7),
                transfer_encoding: true,
                chunked: true,
                close: true,
                keep_alive: false,
            }
        );
        let framing = Framing::scan(&[header("Transfer-Encoding", "chunked, gzip")]).unwrap();
        assert!(framing.transfer_encoding && !framing.chunked);
        let framing = Framing::scan(&[header("Connection", "keep-alive")]).unwrap();
        assert!(framing.keep_alive && !framing.close);
    }

    #[test]
    fn framing_rejects_conflicting_content_lengths() {
        let headers =
            [header("Content-Length", "1"), header("X", "y"), header("Content-Length", "2")];
        assert_eq!(Framing::scan(&headers), Err(BadContentLength(2)));
    }

    #[test]
    fn chunk_size_needs_a_hex_digit() {
        assert_eq!(parse_chunk_size(b"a;x=y\r\n"), Ok(Status::Complete((7, 10))));
        assert_eq!(parse_chunk_size(b"1F"), Ok(Status::Partial));
        assert_eq!(parse_chunk_size(b""), Ok(Status::Partial));
        assert_eq!(parse_chunk_size(b"\r\n"), Err(InvalidChunkSize));
        assert_eq!(parse_chunk_size(b";x\r\n"), Err(InvalidChunkSize));
        assert_eq!(parse_chunk_size(b"1g\r\n"), Err(InvalidChunkSize));
    }
}
