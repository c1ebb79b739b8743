//! The request side: parsing a request head out of the connection's input
//! buffer, and the body decoder (Content-Length or chunked) that consumes
//! the body as it arrives.

use super::response::{Endpoint, TOKEN};

/// A request head larger than this is refused (and the input buffer never
/// grows beyond it).
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// Headers per request; more is a malformed request.
const MAX_HEADERS: usize = 64;

/// The longest chunk-size or trailer line accepted while it is incomplete.
const MAX_LINE: usize = 4096;

/// What the response to a request depends on, extracted from the head so
/// that the input buffer can be reused at once.
#[derive(Debug)]
pub(super) struct Request {
    pub endpoint: Endpoint,
    /// HEAD: the response gets headers only.
    pub head_only: bool,
    pub connection: Connection,
    /// The client sent `X-Token: tok123` (for `/resource`).
    pub has_token: bool,
    /// The client asked for `100 Continue` before sending its body.
    pub expect_continue: bool,
    /// For `/echo`: the text of the request so far; the body is appended.
    pub echo: Option<Vec<u8>>,
}

/// Whether the connection stays open after the response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Connection {
    KeepAlive,
    /// HTTP/1.0 keep-alive: the response must say `Connection: keep-alive`.
    KeepAlive10,
    Close,
}

/// A complete head: the request, the decoder for its body, and how many
/// bytes of input the head took.
#[derive(Debug)]
pub(super) struct Head {
    pub request: Request,
    pub body: BodyDecoder,
    pub len: usize,
}

#[derive(Debug)]
pub(super) enum HeadParse {
    Complete(Head),
    /// More bytes are needed.
    Partial,
    Invalid,
}

/// Parses the head at the start of `input`.
pub(super) fn parse_head(input: &[u8]) -> HeadParse {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let len = match parsed.parse(input) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return HeadParse::Partial,
        Err(_) => return HeadParse::Invalid,
    };
    let (Some(method), Some(target), Some(version)) = (parsed.method, parsed.path, parsed.version)
    else {
        return HeadParse::Invalid;
    };
    let mut facts = HeaderFacts::default();
    for header in parsed.headers.iter() {
        if facts.note(header.name, header.value).is_err() {
            return HeadParse::Invalid;
        }
    }
    let body = match (facts.chunked, facts.content_length) {
        (true, Some(_)) => return HeadParse::Invalid,
        (true, None) => BodyDecoder::Chunked(ChunkState::Size),
        (false, length) => BodyDecoder::Length(length.unwrap_or(0)),
    };
    let endpoint = Endpoint::route(target);
    let echo = (endpoint == Endpoint::Echo).then(|| echo_head(method, target, parsed.headers));
    let request = Request {
        endpoint,
        head_only: method == "HEAD",
        connection: facts.connection(version),
        has_token: facts.has_token,
        // An HTTP/1.0 client does not know 100 Continue (RFC 9110 15.2).
        expect_continue: facts.expect_continue && version == 1,
        echo,
    };
    HeadParse::Complete(Head { request, body, len })
}

/// The first part of an `/echo` body: `METHOD TARGET`, then the headers.
fn echo_head(method: &str, target: &str, headers: &[httparse::Header]) -> Vec<u8> {
    let mut text = Vec::with_capacity(256);
    text.extend_from_slice(method.as_bytes());
    text.push(b' ');
    text.extend_from_slice(target.as_bytes());
    text.push(b'\n');
    for header in headers {
        text.extend_from_slice(header.name.as_bytes());
        text.extend_from_slice(b": ");
        text.extend_from_slice(header.value);
        text.push(b'\n');
    }
    text.push(b'\n');
    text
}

/// What the headers say about framing, persistence and the endpoints.
#[derive(Default)]
struct HeaderFacts {
    content_length: Option<u64>,
    chunked: bool,
    close: bool,
    keep_alive: bool,
    expect_continue: bool,
    has_token: bool,
}

/// A header that makes the request malformed.
struct BadHeader;

impl HeaderFacts {
    fn note(&mut self, name: &str, value: &[u8]) -> Result<(), BadHeader> {
        if name.eq_ignore_ascii_case("content-length") {
            let length = parse_decimal(value.trim_ascii()).ok_or(BadHeader)?;
            // Repeated Content-Length headers must agree (RFC 9112 6.3).
            if self.content_length.is_some_and(|seen| seen != length) {
                return Err(BadHeader);
            }
            self.content_length = Some(length);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Only plain chunked is understood; a body in any other coding
            // cannot be delimited.
            if !value.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                return Err(BadHeader);
            }
            self.chunked = true;
        } else if name.eq_ignore_ascii_case("connection") {
            for option in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                self.close |= option.eq_ignore_ascii_case(b"close");
                self.keep_alive |= option.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            self.expect_continue |= value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        } else if name.eq_ignore_ascii_case("x-token") {
            self.has_token |= value.trim_ascii() == TOKEN.as_bytes();
        }
        Ok(())
    }

    /// HTTP/1.1 stays open unless asked to close; HTTP/1.0 closes unless
    /// asked to stay open.
    fn connection(&self, minor_version: u8) -> Connection {
        match (minor_version, self.close, self.keep_alive) {
            (_, true, _) => Connection::Close,
            (0, false, true) => Connection::KeepAlive10,
            (0, false, false) => Connection::Close,
            _ => Connection::KeepAlive,
        }
    }
}

/// A non-negative decimal number of at most 19 digits (always fits u64).
pub(super) fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
}

/// Consumes a request body as its bytes arrive.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BodyDecoder {
    /// Bytes of a Content-Length body still to come.
    Length(u64),
    Chunked(ChunkState),
}

/// Where a chunked decoder is.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ChunkState {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes to go.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines until an empty one.
    Trailers,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum BodyStatus {
    NeedMore,
    Done,
    Invalid,
}

impl BodyDecoder {
    /// Consumes body bytes from the start of `input`, appending the body's
    /// data to `sink` if there is one. Returns how many bytes were used.
    pub fn decode(&mut self, input: &[u8], sink: Option<&mut Vec<u8>>) -> (usize, BodyStatus) {
        match self {
            BodyDecoder::Length(remaining) => {
                let take = input.len().min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                if let Some(sink) = sink {
                    sink.extend_from_slice(&input[..take]);
                }
                *remaining -= take as u64;
                let status = if *remaining == 0 { BodyStatus::Done } else { BodyStatus::NeedMore };
                (take, status)
            }
            BodyDecoder::Chunked(state) => decode_chunked(state, input, sink),
        }
    }
}

fn decode_chunked(
    state: &mut ChunkState,
    input: &[u8],
    mut sink: Option<&mut Vec<u8>>,
) -> (usize, BodyStatus) {
    let mut used = 0;
    loop {
        let rest = &input[used..];
        if let ChunkState::Data(left) = *state {
            if rest.is_empty() {
                return (used, BodyStatus::NeedMore);
            }
            let take = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            if let Some(sink) = sink.as_deref_mut() {
                sink.extend_from_slice(&rest[..take]);
            }
            used += take;
            let left = left - take as u64;
            *state = if left == 0 { ChunkState::DataEnd } else { ChunkState::Data(left) };
            continue;
        }
        let Some((line, line_len)) = split_line(rest) else {
            let status =
                if rest.len() > MAX_LINE { BodyStatus::Invalid } else { BodyStatus::NeedMore };
            return (used, status);
        };
        used += line_len;
        match *state {
            ChunkState::Size => match parse_chunk_size(line) {
                Some(0) => *state = ChunkState::Trailers,
                Some(size) => *state = ChunkState::Data(size),
                None => return (used, BodyStatus::Invalid),
            },
            ChunkState::DataEnd if line.is_empty() => *state = ChunkState::Size,
            ChunkState::DataEnd => return (used, BodyStatus::Invalid),
            // Trailer fields are read and ignored.
            ChunkState::Trailers if line.is_empty() => return (used, BodyStatus::Done),
            ChunkState::Trailers | ChunkState::Data(_) => {}
        }
    }
}

/// The first line of `input` without its line ending (CRLF, or a bare LF
/// as RFC 9112 allows a recipient to accept), and its length with the
/// ending; None if the line is not complete yet.
fn split_line(input: &[u8]) -> Option<(&[u8], usize)> {
    let end = input.iter().position(|&b| b == b'\n')?;
    let line = &input[..end];
    Some((line.strip_suffix(b"\r").unwrap_or(line), end + 1))
}

/// `1a` or `1a;name=value`: hexadecimal, at most 15 digits.
fn parse_chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.split(|&b| b == b';').next().unwrap_or(line).trim_ascii();
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let digits = std::str::from_utf8(digits).ok()?;
    u64::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        match parse_head(text.as_bytes()) {
            HeadParse::Complete(head) => head,
            other => panic!("{text:?} parsed as {other:?}"),
        }
    }

    fn invalid(text: &str) -> bool {
        matches!(parse_head(text.as_bytes()), HeadParse::Invalid)
    }

    #[test]
    fn persistence_follows_version_and_connection_header() {
        let conn = |t: &str| head(t).request.connection;
        assert_eq!(conn("GET / HTTP/1.1\r\n\r\n"), Connection::KeepAlive);
        assert_eq!(conn("GET / HTTP/1.1\r\nConnection: close\r\n\r\n"), Connection::Close);
        assert_eq!(conn("GET / HTTP/1.0\r\n\r\n"), Connection::Close);
        assert_eq!(
            conn("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"),
            Connection::KeepAlive10
        );
        assert_eq!(conn("GET / HTTP/1.1\r\nConnection: TE, close\r\n\r\n"), Connection::Close);
    }

    #[test]
    fn framing_headers() {
        assert_eq!(
            head("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n").body,
            BodyDecoder::Length(5)
        );
        assert_eq!(
            head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").body,
            BodyDecoder::Chunked(ChunkState::Size)
        );
        assert_eq!(head("GET / HTTP/1.1\r\n\r\n").len, 18);
        assert!(invalid("POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n"));
        assert!(invalid("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"));
        assert!(invalid("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"));
        assert!(invalid(
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
        ));
        assert!(invalid("GARBAGE\r\n\r\n"));
        assert!(matches!(parse_head(b"GET / HTTP/1.1\r\nHost: x"), HeadParse::Partial));
    }

    /// Feeds `body` to a chunked decoder in pieces of `step` bytes, the way
    /// the connection does: unused bytes stay and more are appended.
    fn decode_in_pieces(body: &[u8], step: usize) -> (Vec<u8>, BodyStatus, usize) {
        let mut decoder = BodyDecoder::Chunked(ChunkState::Size);
        let mut sink = Vec::new();
        let (mut buffered, mut fed, mut consumed) = (Vec::new(), 0, 0);
        loop {
            let (used, status) = decoder.decode(&buffered, Some(&mut sink));
            buffered.drain(..used);
            consumed += used;
            if status != BodyStatus::NeedMore || fed == body.len() {
                return (sink, status, consumed);
            }
            let next = (fed + step).min(body.len());
            buffered.extend_from_slice(&body[fed..next]);
            fed = next;
        }
    }

    #[test]
    fn chunked_body_in_any_split() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
        for step in 1..body.len() {
            let (data, status, consumed) = decode_in_pieces(body, step);
            assert_eq!(status, BodyStatus::Done, "step {step}");
            assert_eq!(data, b"hello, world");
            assert_eq!(consumed, body.len() - 4, "the next request is left alone");
        }
    }

    #[test]
    fn malformed_chunked_bodies() {
        for body in [&b"x\r\n"[..], b"5\r\nhelloXX\r\n", b"12345678901234567\r\n"] {
            assert_eq!(decode_in_pieces(body, 64).1, BodyStatus::Invalid, "{body:?}");
        }
        let endless_line = vec![b'1'; MAX_LINE + 1];
        assert_eq!(decode_in_pieces(&endless_line, 64).1, BodyStatus::Invalid);
    }

    #[test]
    fn content_length_body_stops_at_its_end() {
        let mut decoder = BodyDecoder::Length(5);
        let mut sink = Vec::new();
        assert_eq!(decoder.decode(b"hel", Some(&mut sink)), (3, BodyStatus::NeedMore));
        assert_eq!(decoder.decode(b"loGET", Some(&mut sink)), (2, BodyStatus::Done));
        assert_eq!(sink, b"hello");
    }
}
