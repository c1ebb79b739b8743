//! Incremental framing of HTTP/1.x responses: finds where each response ends
//! in the byte stream of a connection, whatever the socket reads cut it into.
//!
//! This runs for every response, so the default mode allocates nothing per
//! response and never copies a body: the header block is parsed in place by
//! `httparse` when one read holds all of it (only a block split across reads
//! is gathered in a reused buffer), and body bytes are just counted off
//! (chunked ones by [`super::chunked`], the decoder the built-in server
//! uses too). Capture mode (for a Lua `response()` callback) keeps the
//! headers and the de-chunked body.
//!
//! Reproduced from http_parser (what wrk uses): the body framing (Content-
//! Length, chunked with extensions and trailers, until EOF; none for 1xx, 204
//! and 304), `http_should_keep_alive`, strict CRLFs around chunk data, empty
//! lines skipped before a status line, a bound on the header block (64 KiB
//! here, 80 KiB there).
//!
//! Deliberately different from wrk:
//! - interim 1xx responses (`100 Continue`, `103 Early Hints`) are skipped,
//!   not counted as the response (wrk counts them); `101` ends the exchange;
//! - the response to a HEAD request has no body whatever its headers say
//!   (wrk waits for the body and hangs, wg/wrk#198);
//! - a body delimited by EOF completes on EOF without a read error (wrk 4.x
//!   counts one);
//! - bodies stream through in O(1) memory unless captured, and captured ones
//!   grow geometrically (wrk grows by 1 KiB steps, wg/wrk#506).
//!
//! Framing choices where http_parser is older than RFC 9112 §6.3:
//! `Transfer-Encoding` wins over `Content-Length`, but such a response is not
//! kept alive; a `Transfer-Encoding` whose last coding is not `chunked` means
//! the body runs until EOF; `Connection: close` wins over `keep-alive` in
//! HTTP/1.0 as in HTTP/1.1.

use std::fmt;
use std::mem::MaybeUninit;

use httparse::Status;

use super::block::gather;
use super::chunked::{ChunkedDecoder, ChunkedError, ChunkedErrorKind, Sink};
use super::framing::{Framing, TransferCoding};
use super::MAX_HEADERS;

/// Finds the end of each response on one connection.
#[derive(Debug)]
pub struct ResponseParser {
    capture: bool,
    state: State,
    /// The current response answers a HEAD request.
    head_request: bool,
    /// Status and keep-alive of the response being read, once its head is.
    status: u16,
    keep_alive: bool,
    /// Headers and body of the response being read, in capture mode.
    captured: Option<Captured>,
    /// The start of a header block that one read did not complete. Cleared,
    /// never shrunk, so no allocation happens per response once it has
    /// grown.
    partial: Vec<u8>,
    /// The decoder of a chunked body, reset for each one.
    chunked: ChunkedDecoder,
}

/// Where in a response the next byte belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between responses: nothing of the next one has arrived.
    Idle,
    /// In the status line and header block.
    Head,
    /// In a Content-Length body with this many bytes left (never 0).
    Body(u64),
    /// In a chunked body (trailer section included).
    Chunked,
    /// In a body that ends when the peer closes the connection.
    UntilEof,
}

/// What one call of [`ResponseParser::feed`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    /// How many bytes of the input it used; the rest belongs to the next
    /// response when `done` is set.
    pub consumed: usize,
    /// The response that the used bytes completed, if they did.
    pub done: Option<Response>,
}

/// A complete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The connection may carry the next request (else reconnect).
    pub keep_alive: bool,
    /// Headers and body, in capture mode.
    pub captured: Option<Captured>,
}

/// The headers (trailers included, after the header block's fields) and the
/// de-chunked body of a response, as received; names and values are decoded
/// as UTF-8 with invalid bytes replaced.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Captured {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Why a byte stream is not a valid response. The connection cannot be used
/// any more: close it, and call [`ResponseParser::start`] on the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    MalformedStatusLine,
    /// The bytes are a TLS record: the server speaks TLS (an https port).
    TlsAnswer,
    MalformedHeader,
    TooManyHeaders,
    HeadTooLarge,
    BadContentLength,
    BadChunkSize,
    ChunkLineTooLong,
    BadChunkDataEnd,
    MalformedTrailer,
    TrailersTooLarge,
    Truncated,
}

impl ParseError {
    /// A short description, e.g. for an error breakdown by cause.
    pub fn as_str(self) -> &'static str {
        match self {
            ParseError::MalformedStatusLine => "malformed status line",
            ParseError::TlsAnswer => {
                "the server answered in TLS, not plain HTTP (an https:// URL?)"
            }
            ParseError::MalformedHeader => "malformed header",
            ParseError::TooManyHeaders => "more than 100 headers",
            ParseError::HeadTooLarge => "header block larger than 64 KiB",
            ParseError::BadContentLength => "bad Content-Length",
            ParseError::BadChunkSize => "bad chunk size",
            ParseError::ChunkLineTooLong => "chunk size line longer than 64 KiB",
            ParseError::BadChunkDataEnd => "chunk data not followed by CRLF",
            ParseError::MalformedTrailer => "malformed trailer",
            ParseError::TrailersTooLarge => "trailer section larger than 64 KiB",
            ParseError::Truncated => "connection closed before the response was complete",
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for ParseError {}

impl ParseError {
    fn from_chunked(error: ChunkedError) -> ParseError {
        match error.kind {
            ChunkedErrorKind::BadChunkSize => ParseError::BadChunkSize,
            ChunkedErrorKind::ChunkLineTooLong => ParseError::ChunkLineTooLong,
            ChunkedErrorKind::BadChunkDataEnd => ParseError::BadChunkDataEnd,
            ChunkedErrorKind::MalformedTrailer(httparse::Error::TooManyHeaders) => {
                ParseError::TooManyHeaders
            }
            ChunkedErrorKind::MalformedTrailer(_) => ParseError::MalformedTrailer,
            ChunkedErrorKind::TrailersTooLarge => ParseError::TrailersTooLarge,
        }
    }
}

/// A chunked body's data and trailers, kept in capture mode.
impl Sink for Captured {
    fn data(&mut self, data: &[u8]) {
        self.body.extend_from_slice(data);
    }

    fn trailers(&mut self, fields: &[httparse::Header<'_>]) {
        self.headers.extend(owned_fields(fields));
    }
}

impl ResponseParser {
    /// A parser for a new connection; `capture` keeps headers and bodies.
    pub fn new(capture: bool) -> Self {
        ResponseParser {
            capture,
            state: State::Idle,
            head_request: false,
            status: 0,
            keep_alive: false,
            captured: None,
            partial: Vec::new(),
            chunked: ChunkedDecoder::new(),
        }
    }

    /// Expects the next response, dropping anything left of an unfinished
    /// one (call it on a new connection and after each completed response).
    /// The response to a HEAD request has no body, whatever its headers say.
    pub fn start(&mut self, head_request: bool) {
        self.state = State::Idle;
        self.head_request = head_request;
        self.captured = None;
        self.partial.clear();
    }

    /// No byte of a response arrived since [`start`](Self::start) or the
    /// last completed response.
    pub fn is_idle(&self) -> bool {
        self.state == State::Idle
    }

    /// Parses bytes read from the connection. It stops after the first
    /// response they complete, so call it again with the rest of `data`.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, ParseError> {
        let mut consumed = 0;
        while consumed < data.len() {
            let step = self.step(&data[consumed..])?;
            consumed += step.consumed;
            if step.done.is_some() {
                return Ok(Feed { consumed, done: step.done });
            }
        }
        Ok(Feed { consumed, done: None })
    }

    /// The peer closed the connection: completes a body that runs until EOF.
    /// Between responses this is no error (`Ok(None)`); within any other
    /// response it is.
    pub fn eof(&mut self) -> Result<Option<Response>, ParseError> {
        match self.state {
            State::Idle => Ok(None),
            State::UntilEof => Ok(Some(self.complete())),
            _ => {
                self.start(false);
                Err(ParseError::Truncated)
            }
        }
    }

    /// Parses from the start of `data` (not empty) to the end of the current
    /// element; uses at least one byte unless it only changes the state.
    fn step(&mut self, data: &[u8]) -> Result<Feed, ParseError> {
        match self.state {
            State::Idle => Ok(self.skip_empty_lines(data)),
            State::Head => self.step_head(data),
            State::Body(left) => Ok(self.step_body(data, left)),
            State::Chunked => self.step_chunked(data),
            State::UntilEof => {
                self.keep_body(data);
                Ok(not_done(data.len()))
            }
        }
    }

    /// Skips CR and LF before a status line, as http_parser does (some
    /// servers send a stray CRLF after a body); they do not start a response.
    fn skip_empty_lines(&mut self, data: &[u8]) -> Feed {
        let skipped = data.iter().take_while(|&&byte| byte == b'\r' || byte == b'\n').count();
        if skipped < data.len() {
            self.state = State::Head;
        }
        not_done(skipped)
    }

    fn step_head(&mut self, data: &[u8]) -> Result<Feed, ParseError> {
        let capture = self.capture;
        let (consumed, head) =
            gather(&mut self.partial, data, ParseError::HeadTooLarge, |block| {
                parse_head(block, capture)
            })?;
        let done = head.and_then(|head| self.begin_body(head));
        Ok(Feed { consumed, done })
    }

    /// Decides what follows a parsed head; returns the response if nothing
    /// does.
    fn begin_body(&mut self, head: Head) -> Option<Response> {
        if is_interim(head.status) {
            // The final response follows on the same connection; the
            // interim one's headers are not the response's.
            self.state = State::Head;
            return None;
        }
        let body = body_framing(head.status, self.head_request, &head.framing);
        self.status = head.status;
        self.keep_alive = keeps_alive(head.status, head.minor_version, &head.framing, body);
        if self.capture {
            self.captured = Some(Captured { headers: head.headers, body: Vec::new() });
        }
        self.state = match body {
            BodyFraming::Empty | BodyFraming::Length(0) => return Some(self.complete()),
            BodyFraming::Length(length) => State::Body(length),
            BodyFraming::Chunked => {
                self.chunked.reset();
                State::Chunked
            }
            BodyFraming::UntilEof => State::UntilEof,
        };
        None
    }

    fn step_body(&mut self, data: &[u8], left: u64) -> Feed {
        let used = body_bytes(left, data.len());
        self.keep_body(&data[..used]);
        match left - used as u64 {
            0 => Feed { consumed: used, done: Some(self.complete()) },
            left => {
                self.state = State::Body(left);
                not_done(used)
            }
        }
    }

    fn step_chunked(&mut self, data: &[u8]) -> Result<Feed, ParseError> {
        let decoded =
            self.chunked.decode(data, &mut self.captured).map_err(ParseError::from_chunked)?;
        let done = decoded.done.then(|| self.complete());
        Ok(Feed { consumed: decoded.consumed, done })
    }

    fn keep_body(&mut self, bytes: &[u8]) {
        if let Some(captured) = &mut self.captured {
            captured.body.extend_from_slice(bytes);
        }
    }

    /// Ends the current response and gets ready for the next one.
    fn complete(&mut self) -> Response {
        self.state = State::Idle;
        self.head_request = false;
        Response {
            status: self.status,
            keep_alive: self.keep_alive,
            captured: self.captured.take(),
        }
    }
}

fn not_done(consumed: usize) -> Feed {
    Feed { consumed, done: None }
}

/// How many of the `read` bytes at hand belong to a body part with `left`
/// bytes to go.
fn body_bytes(left: u64, read: usize) -> usize {
    usize::try_from(left).map_or(read, |left| left.min(read))
}

/// What a status line and header block say about the response.
struct Head {
    status: u16,
    minor_version: u8,
    framing: Framing,
    /// The header fields, in capture mode (else empty, not allocated).
    headers: Fields,
}

/// Header fields as captured: name and value.
type Fields = Vec<(String, String)>;

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyFraming {
    Empty,
    Length(u64),
    Chunked,
    UntilEof,
}

/// Parses a status line and header block from the start of `buf`: its length
/// and meaning, or None if `buf` ends before the block does.
fn parse_head(buf: &[u8], capture: bool) -> Result<Option<(usize, Head)>, ParseError> {
    // Uninitialised slots: no per-response cost for filling 100 headers.
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let config = httparse::ParserConfig::default();
    let length = match config.parse_response_with_uninit_headers(&mut response, buf, &mut slots) {
        Ok(Status::Complete(length)) => length,
        Ok(Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::TooManyHeaders),
        Err(_) if is_tls_record(buf) => return Err(ParseError::TlsAnswer),
        // httparse fills in the reason phrase last of the status line.
        Err(_) if response.reason.is_none() => return Err(ParseError::MalformedStatusLine),
        Err(_) => return Err(ParseError::MalformedHeader),
    };
    let (Some(status), Some(minor_version)) = (response.code, response.version) else {
        return Err(ParseError::MalformedStatusLine);
    };
    let framing = Framing::scan(response.headers).map_err(|_| ParseError::BadContentLength)?;
    let headers = if capture { owned_fields(response.headers) } else { Vec::new() };
    Ok(Some((length, Head { status, minor_version, framing, headers })))
}

/// A TLS alert or handshake record header (content type 21 or 22, then
/// version 3.x): what a TLS server sends to a plain-HTTP request.
fn is_tls_record(buf: &[u8]) -> bool {
    matches!(buf, [0x15 | 0x16, 0x03, ..])
}

fn owned_fields(fields: &[httparse::Header<'_>]) -> Fields {
    fields
        .iter()
        .map(|field| (field.name.to_owned(), String::from_utf8_lossy(field.value).into_owned()))
        .collect()
}

/// A 1xx response that precedes the final one (`101 Switching Protocols`
/// does not: after it the connection speaks another protocol).
fn is_interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

/// RFC 9112 §6.3, in its order.
fn body_framing(status: u16, head_request: bool, framing: &Framing) -> BodyFraming {
    if head_request || (100..200).contains(&status) || status == 204 || status == 304 {
        BodyFraming::Empty
    } else if framing.chunked() {
        BodyFraming::Chunked
    } else if framing.transfer_coding != TransferCoding::Absent {
        BodyFraming::UntilEof
    } else if let Some(length) = framing.content_length {
        BodyFraming::Length(length)
    } else {
        BodyFraming::UntilEof
    }
}

/// http_parser's `http_should_keep_alive`, plus the cases after which the
/// connection cannot carry another HTTP/1.1 response.
fn keeps_alive(status: u16, minor_version: u8, framing: &Framing, body: BodyFraming) -> bool {
    let ambiguous_length = body == BodyFraming::Chunked && framing.content_length.is_some();
    if status == 101 || body == BodyFraming::UntilEof || ambiguous_length || framing.close {
        return false;
    }
    minor_version >= 1 || framing.keep_alive
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::MAX_BLOCK_BYTES;

    /// What a test expects of one response: status, keep-alive, body.
    type Expected = (u16, bool, &'static [u8]);

    /// What came out for one response: status, keep-alive, captured body.
    type Outcome = (u16, bool, Vec<u8>);

    /// Feeds `pieces` in order as a caller would, calling `start` with the
    /// next entry of `heads` after each response, then EOF. Returns the
    /// responses or the first error.
    fn run(capture: bool, heads: &[bool], pieces: &[&[u8]]) -> Result<Vec<Response>, ParseError> {
        let mut parser = ResponseParser::new(capture);
        let mut heads = heads.iter().copied();
        parser.start(heads.next().unwrap_or(false));
        let mut responses = Vec::new();
        for piece in pieces {
            let mut offset = 0;
            while offset < piece.len() {
                let feed = parser.feed(&piece[offset..])?;
                assert!(feed.consumed > 0 || feed.done.is_some(), "no progress");
                assert!(offset + feed.consumed <= piece.len());
                offset += feed.consumed;
                if let Some(response) = feed.done {
                    responses.push(response);
                    parser.start(heads.next().unwrap_or(false));
                }
            }
        }
        responses.extend(parser.eof()?);
        Ok(responses)
    }

    fn summary(responses: &[Response]) -> Vec<Outcome> {
        responses
            .iter()
            .map(|r| {
                let body = r.captured.as_ref().map(|c| c.body.clone()).unwrap_or_default();
                (r.status, r.keep_alive, body)
            })
            .collect()
    }

    fn expect(bytes: &[u8], heads: &[bool], expected: &[Expected]) {
        let expected: Vec<_> = expected.iter().map(|&(s, k, b)| (s, k, b.to_vec())).collect();
        let responses = run(true, heads, &[bytes]).unwrap();
        assert_eq!(summary(&responses), expected);
        let plain = run(false, heads, &[bytes]).unwrap();
        let no_bodies: Vec<_> = expected.iter().map(|(s, k, _)| (*s, *k, Vec::new())).collect();
        assert_eq!(summary(&plain), no_bodies);
        assert!(plain.iter().all(|r| r.captured.is_none()));
    }

    fn error_of(bytes: &[u8]) -> ParseError {
        run(false, &[], &[bytes]).unwrap_err()
    }

    #[test]
    fn content_length_body() {
        expect(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", &[], &[(200, true, b"hello")]);
    }

    #[test]
    fn zero_content_length_completes_with_the_head() {
        let mut parser = ResponseParser::new(false);
        let feed = parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP").unwrap();
        assert_eq!(feed.consumed, 38);
        assert_eq!(feed.done.unwrap().status, 200);
        assert!(parser.is_idle());
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
            5;name=value\r\nhello\r\n1 ; a=\"b\"\r\n,\r\n6\r\n world\r\n\
            0;last\r\nX-Checksum: 1234\r\nX-Other: b\r\n\r\n";
        expect(bytes, &[], &[(200, true, b"hello, world")]);
        let response = run(true, &[], &[bytes]).unwrap().remove(0);
        let headers = response.captured.unwrap().headers;
        let expected = [("Transfer-Encoding", "chunked"), ("X-Checksum", "1234"), ("X-Other", "b")];
        let expected: Vec<_> =
            expected.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        assert_eq!(headers, expected);
    }

    #[test]
    fn chunked_wins_over_content_length_but_closes() {
        let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n\
            3\r\nabc\r\n0\r\n\r\n";
        expect(bytes, &[], &[(200, false, b"abc")]);
    }

    #[test]
    fn close_delimited_body_completes_at_eof() {
        expect(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", &[], &[(200, false, b"until the end")]);
        expect(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nx", &[], &[(200, false, b"x")]);
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 1\r\n\r\nxyz";
        expect(bytes, &[], &[(200, false, b"xyz")]);
    }

    #[test]
    fn head_response_has_no_body_despite_content_length() {
        let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n\
            HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        expect(bytes, &[true, false], &[(200, true, b""), (200, true, b"ok")]);
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        expect(chunked, &[true], &[(200, true, b"")]);
    }

    #[test]
    fn no_body_for_204_and_304() {
        let bytes = b"HTTP/1.1 204 No Content\r\n\r\n\
            HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n";
        expect(bytes, &[], &[(204, true, b""), (304, true, b"")]);
    }

    #[test]
    fn interim_responses_are_skipped() {
        let bytes = b"HTTP/1.1 100 Continue\r\n\r\n\
            HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n\
            HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        expect(bytes, &[], &[(200, true, b"ok")]);
        let response = run(true, &[], &[bytes]).unwrap().remove(0);
        let headers = response.captured.unwrap().headers;
        assert_eq!(headers, vec![("Content-Length".to_string(), "2".to_string())]);
    }

    #[test]
    fn interim_response_alone_is_not_a_response() {
        let mut parser = ResponseParser::new(false);
        let feed = parser.feed(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap();
        assert_eq!(feed, Feed { consumed: 25, done: None });
        assert!(!parser.is_idle());
        assert_eq!(parser.eof(), Err(ParseError::Truncated));
    }

    #[test]
    fn switching_protocols_completes_without_keep_alive() {
        let bytes = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
            Connection: Upgrade\r\n\r\n";
        expect(bytes, &[], &[(101, false, b"")]);
    }

    #[test]
    fn connection_close_ends_keep_alive() {
        let bytes =
            b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 1\r\n\r\nx";
        expect(bytes, &[], &[(200, false, b"x")]);
    }

    #[test]
    fn http_1_0_keeps_alive_only_when_asked() {
        let kept = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx";
        expect(kept, &[], &[(200, true, b"x")]);
        let closed = b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx";
        expect(closed, &[], &[(200, false, b"x")]);
    }

    #[test]
    fn pipelined_responses_in_one_read() {
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na\
            HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        expect(two, &[], &[(200, true, b"a"), (404, true, b"")]);
        let three = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na\
            HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n\
            HTTP/1.1 500 Oops\r\nContent-Length: 1\r\n\r\nc";
        expect(three, &[], &[(200, true, b"a"), (200, true, b"b"), (500, true, b"c")]);
    }

    #[test]
    fn stray_empty_lines_between_responses_are_skipped() {
        let bytes = b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na\r\n\r\n\
            HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb\r\n";
        expect(bytes, &[], &[(200, true, b"a"), (200, true, b"b")]);
    }

    #[test]
    fn head_split_across_reads() {
        let pieces: [&[u8]; 4] =
            [b"HTTP/1.1 20", b"0 OK\r\nContent-Len", b"gth: 3\r\n\r", b"\nabc"];
        let responses = run(true, &[], &pieces).unwrap();
        assert_eq!(summary(&responses), vec![(200, true, b"abc".to_vec())]);
    }

    #[test]
    fn malformed_status_lines() {
        for bytes in
            [&b"HTTP/2 200 OK\r\n\r\n"[..], b"HTTP/1.1 2x0 OK\r\n\r\n", b"SSH-2.0-OpenSSH\r\n"]
        {
            assert_eq!(error_of(bytes), ParseError::MalformedStatusLine);
        }
        // A TLS server's alert to a plain-HTTP request.
        assert_eq!(error_of(b"\x15\x03\x03\x00\x02\x02\x32"), ParseError::TlsAnswer);
    }

    #[test]
    fn malformed_headers() {
        assert_eq!(
            error_of(b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n"),
            ParseError::MalformedHeader
        );
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        many.extend(b"X: y\r\n".repeat(MAX_HEADERS + 1));
        assert_eq!(error_of(&many), ParseError::TooManyHeaders);
    }

    #[test]
    fn bad_content_lengths() {
        for value in ["-1", "abc", "1, 2", "", "99999999999999999999"] {
            let bytes = format!("HTTP/1.1 200 OK\r\nContent-Length: {value}\r\n\r\n");
            assert_eq!(error_of(bytes.as_bytes()), ParseError::BadContentLength, "{value:?}");
        }
        let conflicting = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(error_of(conflicting), ParseError::BadContentLength);
    }

    #[test]
    fn bad_chunks() {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (chunks, error) in [
            ("x\r\n", ParseError::BadChunkSize),
            ("\r\n", ParseError::BadChunkSize),
            ("12345678901234567\r\n", ParseError::BadChunkSize),
            ("3\r\nabcX", ParseError::BadChunkDataEnd),
            ("3\r\nabc\rX", ParseError::BadChunkDataEnd),
            ("0\r\nBad Trailer\r\n\r\n", ParseError::MalformedTrailer),
        ] {
            assert_eq!(error_of(format!("{head}{chunks}").as_bytes()), error, "{chunks:?}");
        }
    }

    #[test]
    fn oversized_blocks_are_errors() {
        let huge_value = "v".repeat(MAX_BLOCK_BYTES);
        let head = format!("HTTP/1.1 200 OK\r\nX: {huge_value}\r\n\r\n");
        assert_eq!(error_of(head.as_bytes()), ParseError::HeadTooLarge);
        let split: Vec<&[u8]> = head.as_bytes().chunks(1000).collect();
        assert_eq!(run(false, &[], &split).unwrap_err(), ParseError::HeadTooLarge);
        let endless = format!("HTTP/1.1 200 OK\r\nX: {huge_value}");
        assert_eq!(error_of(endless.as_bytes()), ParseError::HeadTooLarge);

        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let extension = format!("{chunked}1;{huge_value}\r\nx\r\n0\r\n\r\n");
        assert_eq!(error_of(extension.as_bytes()), ParseError::ChunkLineTooLong);
        let trailer = format!("{chunked}0\r\nX: {huge_value}\r\n\r\n");
        assert_eq!(error_of(trailer.as_bytes()), ParseError::TrailersTooLarge);
    }

    #[test]
    fn eof_between_responses_is_fine() {
        let mut parser = ResponseParser::new(false);
        assert_eq!(parser.eof(), Ok(None));
        let feed = parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx\r\n").unwrap();
        assert!(feed.done.is_some());
        parser.start(false);
        assert_eq!(parser.feed(&b"\r\n"[..]).unwrap().consumed, 2);
        assert!(parser.is_idle());
        assert_eq!(parser.eof(), Ok(None));
    }

    #[test]
    fn eof_inside_a_response_is_an_error() {
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        for bytes in [
            "H".to_string(),
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel".to_string(),
            chunked.to_string(),
            format!("{chunked}5\r\nhel"),
            format!("{chunked}5\r\nhello\r"),
            format!("{chunked}0\r\n"),
            format!("{chunked}0\r\nX: y\r\n"),
        ] {
            assert_eq!(error_of(bytes.as_bytes()), ParseError::Truncated, "{bytes:?}");
        }
        assert_eq!(
            ParseError::Truncated.to_string(),
            "connection closed before the response was complete"
        );
    }

    #[test]
    fn start_drops_an_unfinished_response() {
        let mut parser = ResponseParser::new(true);
        parser.feed(b"HTTP/1.1 200 OK\r\nContent-Le").unwrap();
        parser.start(false);
        assert!(parser.is_idle());
        let feed = parser.feed(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert_eq!(feed.done.unwrap().status, 201);
    }

    #[test]
    fn huge_body_streams_without_buffering() {
        let mut parser = ResponseParser::new(false);
        let feed = parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n").unwrap();
        assert!(feed.done.is_none());
        let block = vec![b'x'; 1 << 20];
        for _ in 0..9536 {
            assert_eq!(parser.feed(&block).unwrap(), Feed { consumed: block.len(), done: None });
        }
        let rest = 10_000_000_000 - 9536 * (1 << 20);
        let feed = parser.feed(&block[..rest]).unwrap();
        assert_eq!(feed.consumed, rest);
        assert!(feed.done.unwrap().keep_alive);
        assert_eq!(parser.partial.capacity(), 0);
    }

    /// A stream covering every framing, with the HEAD flag of each response
    /// and what must come out.
    fn mixed_stream() -> (Vec<u8>, Vec<bool>, Vec<Outcome>) {
        let parts: [(&[u8], bool, Expected); 8] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, (200, true, b"hello")),
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\
                  Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n\
                  6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
                false,
                (201, true, b"hello world"),
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", true, (200, true, b"")),
            (b"\r\nHTTP/1.1 204 No Content\r\n\r\n", false, (204, true, b"")),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", false, (304, true, b"")),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                false,
                (200, true, b""),
            ),
            (
                b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc",
                false,
                (200, true, b"abc"),
            ),
            (b"HTTP/1.1 500 Oops\r\nServer: x\r\n\r\nuntil eof", false, (500, false, b"until eof")),
        ];
        let bytes = parts.iter().flat_map(|(bytes, _, _)| bytes.iter().copied()).collect();
        let heads = parts.iter().map(|(_, head, _)| *head).collect();
        let expected = parts.iter().map(|(_, _, (s, k, b))| (*s, *k, b.to_vec())).collect();
        (bytes, heads, expected)
    }

    #[test]
    fn any_single_split_gives_the_same_responses() {
        let (bytes, heads, expected) = mixed_stream();
        for at in 0..=bytes.len() {
            let (left, right) = bytes.split_at(at);
            let responses = run(true, &heads, &[left, right]).unwrap();
            assert_eq!(summary(&responses), expected, "split at {at}");
        }
    }

    #[test]
    fn any_two_splits_give_the_same_responses() {
        let (bytes, heads, expected) = mixed_stream();
        let statuses: Vec<_> = expected.iter().map(|(s, k, _)| (*s, *k)).collect();
        for first in 0..=bytes.len() {
            for second in first..=bytes.len() {
                let pieces = [&bytes[..first], &bytes[first..second], &bytes[second..]];
                let responses = run(false, &heads, &pieces).unwrap();
                let got: Vec<_> = responses.iter().map(|r| (r.status, r.keep_alive)).collect();
                assert_eq!(got, statuses, "splits at {first} and {second}");
            }
        }
    }

    #[test]
    fn one_byte_reads_give_the_same_responses() {
        let (bytes, heads, expected) = mixed_stream();
        let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(summary(&run(true, &heads, &pieces).unwrap()), expected);
        let statuses: Vec<_> = expected.iter().map(|(s, k, _)| (*s, *k, Vec::new())).collect();
        assert_eq!(summary(&run(false, &heads, &pieces).unwrap()), statuses);
    }

    /// A small deterministic generator (xorshift64) for the random tests.
    struct Random(u64);

    impl Random {
        fn below(&mut self, bound: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % bound as u64) as usize
        }

        fn pieces<'a>(&mut self, bytes: &'a [u8]) -> Vec<&'a [u8]> {
            let mut pieces = Vec::new();
            let mut rest = bytes;
            while !rest.is_empty() {
                let (piece, tail) = rest.split_at(1 + self.below(rest.len().min(40)));
                pieces.push(piece);
                rest = tail;
            }
            pieces
        }
    }

    #[test]
    fn random_reads_give_the_same_responses() {
        let (bytes, heads, expected) = mixed_stream();
        let mut random = Random(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let pieces = random.pieces(&bytes);
            assert_eq!(summary(&run(true, &heads, &pieces).unwrap()), expected);
        }
    }

    #[test]
    fn corrupted_streams_never_panic_or_stall() {
        let (bytes, heads, _) = mixed_stream();
        let mut random = Random(42);
        for _ in 0..5000 {
            let mut corrupted = bytes.clone();
            for _ in 0..1 + random.below(4) {
                let at = random.below(corrupted.len());
                corrupted[at] = random.below(256) as u8;
            }
            let cut = random.below(corrupted.len() + 1);
            let pieces = random.pieces(&corrupted[..cut]);
            // `run` asserts progress; any outcome other than a panic is fine.
            let _ = run(random.below(2) == 0, &heads, &pieces);
        }
    }

    /// `cargo test --release --lib http::response -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn bench_typical_nginx_response() {
        let body = vec![b'x'; 612];
        let mut response = b"HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\n\
            Date: Mon, 01 Jan 2024 00:00:00 GMT\r\nContent-Type: text/html\r\n\
            Content-Length: 612\r\nLast-Modified: Tue, 11 Apr 2023 01:45:34 GMT\r\n\
            Connection: keep-alive\r\nETag: \"6434bbbe-264\"\r\nAccept-Ranges: bytes\r\n\r\n"
            .to_vec();
        response.extend(&body);
        let mut parser = ResponseParser::new(false);
        let rounds = 1_000_000;
        let started = std::time::Instant::now();
        for _ in 0..rounds {
            parser.start(false);
            let feed = parser.feed(std::hint::black_box(&response)).unwrap();
            assert!(feed.done.is_some());
        }
        let per_response = started.elapsed().as_nanos() / rounds;
        println!("{per_response} ns per response ({} bytes)", response.len());
    }
}
