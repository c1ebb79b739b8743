//! The request side: parsing a request head out of the connection's input
//! buffer, and the body decoder (Content-Length or chunked) that consumes
//! the body as it arrives. The framing headers and chunked bodies are read
//! by the client's code ([`crate::http::framing`], [`crate::http::chunked`]),
//! so that server and client agree on them.

use crate::http::chunked::{ChunkedDecoder, Decoded};
use crate::http::framing::{Framing, RequestBody, TransferCoding};

use super::endpoint::{Endpoint, TOKEN};

/// A request head larger than this is refused (and the input buffer never
/// grows beyond it).
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// The largest `/echo` request body kept, over HTTP/1.1 and HTTP/2; a
/// larger one is answered 413.
pub(super) const MAX_ECHO_BODY: usize = 1024 * 1024;

/// Headers per request; more is a malformed request.
const MAX_HEADERS: usize = 64;

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
    let Ok(framing) = Framing::scan(parsed.headers) else {
        return HeadParse::Invalid;
    };
    let body = match framing.request_body() {
        Ok(RequestBody::Length(length)) => BodyDecoder::Length(length),
        // Only plain chunked: a body in another coding could not be echoed.
        Ok(RequestBody::Chunked) if framing.transfer_coding == TransferCoding::Chunked => {
            BodyDecoder::Chunked(ChunkedDecoder::new())
        }
        // Including both Content-Length and Transfer-Encoding.
        _ => return HeadParse::Invalid,
    };
    let asks = Asks::scan(parsed.headers);
    let endpoint = Endpoint::route(target);
    let echo = (endpoint == Endpoint::Echo).then(|| echo_head(method, target, parsed.headers));
    let request = Request {
        endpoint,
        head_only: method == "HEAD",
        connection: connection(&framing, version),
        has_token: asks.token,
        // An HTTP/1.0 client does not know 100 Continue (RFC 9110 15.2).
        expect_continue: asks.continue_first && version == 1,
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

/// What the server-specific headers ask for.
#[derive(Default)]
struct Asks {
    /// `Expect: 100-continue`.
    continue_first: bool,
    /// `X-Token: tok123` (for `/resource`).
    token: bool,
}

impl Asks {
    fn scan(headers: &[httparse::Header<'_>]) -> Asks {
        let mut asks = Asks::default();
        for header in headers {
            let value = header.value.trim_ascii();
            if header.name.eq_ignore_ascii_case("expect") {
                asks.continue_first |= value.eq_ignore_ascii_case(b"100-continue");
            } else if header.name.eq_ignore_ascii_case("x-token") {
                asks.token |= value == TOKEN.as_bytes();
            }
        }
        asks
    }
}

/// HTTP/1.1 stays open unless asked to close; HTTP/1.0 closes unless asked
/// to stay open.
fn connection(framing: &Framing, minor_version: u8) -> Connection {
    match (minor_version, framing.close, framing.keep_alive) {
        (_, true, _) => Connection::Close,
        (0, false, true) => Connection::KeepAlive10,
        (0, false, false) => Connection::Close,
        _ => Connection::KeepAlive,
    }
}

/// Consumes a request body as its bytes arrive.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BodyDecoder {
    /// Bytes of a Content-Length body still to come.
    Length(u64),
    Chunked(ChunkedDecoder),
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
            BodyDecoder::Chunked(decoder) => match decoder.decode(input, sink) {
                Ok(Decoded { consumed, done: true }) => (consumed, BodyStatus::Done),
                Ok(Decoded { consumed, done: false }) => (consumed, BodyStatus::NeedMore),
                Err(error) => (error.at, BodyStatus::Invalid),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::request::count_requests;
    use crate::http::response::ResponseParser;

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
            BodyDecoder::Chunked(ChunkedDecoder::new())
        );
        assert_eq!(head("GET / HTTP/1.1\r\n\r\n").len, 18);
        assert!(invalid("POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n"));
        assert!(invalid("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"));
        assert!(invalid("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"));
        assert!(invalid("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"));
        assert!(invalid(
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
        ));
        assert!(invalid("GARBAGE\r\n\r\n"));
        assert!(matches!(parse_head(b"GET / HTTP/1.1\r\nHost: x"), HeadParse::Partial));
    }

    /// Feeds `body` to a chunked decoder in pieces of `step` bytes, the way
    /// the connection does: unused bytes stay and more are appended.
    fn decode_in_pieces(body: &[u8], step: usize) -> (Vec<u8>, BodyStatus, usize) {
        let mut decoder = BodyDecoder::Chunked(ChunkedDecoder::new());
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
        let mut endless_line = b"1;".to_vec();
        endless_line.resize(64 * 1024 + 1, b'x');
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

    /// What the server, the client reading a response and the request
    /// counter make of the same framing headers and body: accepted or not.
    fn verdicts(headers: &str, body: &str) -> (bool, bool, bool) {
        let request = format!("POST / HTTP/1.1\r\n{headers}\r\n{body}");
        let server = match parse_head(request.as_bytes()) {
            HeadParse::Complete(mut head) => {
                let (_, status) = head.body.decode(&request.as_bytes()[head.len..], None);
                status == BodyStatus::Done
            }
            _ => false,
        };
        let response = format!("HTTP/1.1 200 OK\r\n{headers}\r\n{body}");
        let client = ResponseParser::new(false)
            .feed(response.as_bytes())
            .is_ok_and(|feed| feed.done.is_some());
        let counter = count_requests(request.as_bytes()).is_ok();
        (server, client, counter)
    }

    #[test]
    fn client_and_server_agree_on_content_length() {
        let body = "x".repeat(42);
        for (value, valid) in [
            ("42", true),
            ("42, 42", true),
            ("42,42 , 42", true),
            ("42, 43", false),
            ("42,", false),
        ] {
            let headers = format!("Content-Length: {value}\r\n");
            assert_eq!(verdicts(&headers, &body), (valid, valid, valid), "{value:?}");
        }
        let repeated = "Content-Length: 42\r\nContent-Length: 42\r\n";
        assert_eq!(verdicts(repeated, &body), (true, true, true));
        let conflicting = "Content-Length: 42\r\nContent-Length: 41\r\n";
        assert_eq!(verdicts(conflicting, &body), (false, false, false));
    }

    #[test]
    fn client_and_server_agree_on_chunked_bodies() {
        let chunked = "Transfer-Encoding: chunked\r\n";
        for (body, valid) in [
            ("3;a=b\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n", true),
            ("3 ; a\r\nabc\r\n0\r\n\r\n", true),
            ("0003\r\nabc\r\n0\r\n\r\n", true),
            ("3\nabc\r\n0\r\n\r\n", false),
            ("3\r\nabc\n0\r\n\r\n", false),
            ("\r\n", false),
            ("ffffffffffffffff\r\n", false),
            ("0\r\nBad Trailer\r\n\r\n", false),
        ] {
            assert_eq!(verdicts(chunked, body), (valid, valid, valid), "{body:?}");
        }
    }
}
