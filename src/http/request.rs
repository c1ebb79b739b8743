//! Request bytes: building a request as `wrk.format` does, and counting the
//! requests in a buffer to learn the pipeline depth, as wrk's
//! `script_verify_request` does.
//!
//! Counting reproduces wrk's rules and message: the buffer must hold at least
//! one request, and an error names its cause (http_parser's wording where
//! there is one) and the 1-based `line:column` where parsing stopped, e.g.
//! `incomplete request at 3:1`. Deliberately stricter than wrk: a buffer that
//! ends inside a request is an error even after complete ones (wrk pipelined
//! the fragment and then waited forever for its response). Also reported:
//! which requests are HEAD, so that their responses are read without a body.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use httparse::Status;

use super::block::first_error_at;
use super::chunked::{ChunkedDecoder, ChunkedErrorKind, Decoded, Discard};
use super::framing::{BadContentLength, BadRequestFraming, Framing, RequestBody};
use super::MAX_HEADERS;
use crate::request::Request;

/// Appends `request` as HTTP/1.1 sends it to `out`: `METHOD SP target SP
/// HTTP/1.1 CRLF`, the fields in order, a `Content-Length` if there is a
/// body and the fields frame none, an empty line, the body.
pub fn encode(request: &Request, out: &mut Vec<u8>) {
    let body = request.body.as_deref();
    let content_length = body.filter(|_| !has_body_framing(request)).map(|body| body.len());
    let field_bytes: usize =
        request.fields.iter().map(|(name, value)| name.len() + value.len() + 4).sum();
    let body = body.unwrap_or_default();
    // 64: the spaces, the version, the CRLFs and a Content-Length header.
    out.reserve(request.method.len() + request.target.len() + field_bytes + body.len() + 64);
    for part in [request.method.as_bytes(), b" ", request.target.as_bytes(), b" HTTP/1.1\r\n"] {
        out.extend_from_slice(part);
    }
    for (name, value) in &request.fields {
        push_header(out, name.as_bytes(), value);
    }
    if let Some(length) = content_length {
        push_header(out, b"Content-Length", length.to_string().as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

/// The user chose the framing of the body (a Content-Length of their own, or
/// a Transfer-Encoding with a body already encoded for it).
fn has_body_framing(request: &Request) -> bool {
    request.has_field("content-length") || request.has_field("transfer-encoding")
}

fn push_header(request: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    for part in [name, b": ", value, b"\r\n"] {
        request.extend_from_slice(part);
    }
}

/// The requests found in one request buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestBatch {
    /// For each request in order: its method is HEAD, so its response has no
    /// body.
    pub is_head: Vec<bool>,
}

/// Why a request buffer cannot be used, and where: displays as wrk's
/// `<cause> at <line>:<column>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    pub cause: &'static str,
    /// 1-based line of the byte where parsing stopped.
    pub line: usize,
    /// 1-based column of that byte (just past the end for an incomplete
    /// buffer).
    pub column: usize,
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}:{}", self.cause, self.line, self.column)
    }
}

impl std::error::Error for RequestError {}

const INCOMPLETE: &str = "incomplete request";

/// Parses a buffer of one or more pipelined requests, which must all be
/// complete. Empty lines between requests are skipped, as http_parser does.
pub fn count_requests(buf: &[u8]) -> Result<RequestBatch, RequestError> {
    let is_head = parse_all(buf)?.into_iter().map(|(_, is_head)| is_head).collect();
    Ok(RequestBatch { is_head })
}

/// Where each request of a buffer of complete requests (as
/// [`count_requests`] takes it) starts and ends.
pub fn request_spans(buf: &[u8]) -> Result<Vec<Range<usize>>, RequestError> {
    Ok(parse_all(buf)?.into_iter().map(|(span, _)| span).collect())
}

/// The requests of a buffer of complete requests (as [`count_requests`]
/// takes it), protocol-neutral: each request's method, target and fields,
/// and its body as it follows the head (encoded, when the fields say so).
/// A script's request text is parsed so, once, for protocols other than
/// HTTP/1.1 (which sends the text as it is).
pub fn parse_requests(buf: &[u8]) -> Result<Vec<Request>, RequestError> {
    let spans = request_spans(buf)?;
    Ok(spans.into_iter().map(|span| neutral(&buf[span])).collect())
}

/// The one complete, valid request of `text`.
fn neutral(text: &[u8]) -> Request {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut slots);
    // Valid already: its span came from parsing it.
    let head_length = match parsed.parse(text) {
        Ok(Status::Complete(length)) => length,
        _ => text.len(),
    };
    let fields = (parsed.headers.iter())
        .map(|header| (header.name.to_string(), header.value.to_vec()))
        .collect();
    let body = &text[head_length.min(text.len())..];
    Request {
        method: parsed.method.unwrap_or("GET").to_string(),
        target: parsed.path.unwrap_or("/").to_string(),
        fields,
        body: (!body.is_empty()).then(|| Arc::from(body)),
    }
}

/// Every request of `buf`: its span, and whether it is a HEAD.
fn parse_all(buf: &[u8]) -> Result<Vec<(Range<usize>, bool)>, RequestError> {
    let mut requests = Vec::new();
    let mut offset = skip_empty_lines(buf, 0);
    while offset < buf.len() {
        let request =
            parse_request(&buf[offset..]).map_err(|failure| failure.locate(buf, offset))?;
        requests.push((offset..offset + request.length, request.is_head));
        offset = skip_empty_lines(buf, offset + request.length);
    }
    if requests.is_empty() {
        return Err(Failure::incomplete(buf.len()).locate(buf, 0));
    }
    Ok(requests)
}

fn skip_empty_lines(buf: &[u8], from: usize) -> usize {
    from + buf[from..].iter().take_while(|&&byte| byte == b'\r' || byte == b'\n').count()
}

/// One parsed request.
struct Parsed {
    /// Bytes from the start of the request line to the end of the body.
    length: usize,
    is_head: bool,
}

/// A cause and the offset of the byte where parsing stopped, relative to
/// the slice being parsed.
#[derive(Debug)]
struct Failure {
    cause: &'static str,
    offset: usize,
}

impl Failure {
    /// The slice ran out at `length`.
    fn incomplete(length: usize) -> Self {
        Failure { cause: INCOMPLETE, offset: length }
    }

    /// Moves the offset past `preceding` bytes.
    fn after(self, preceding: usize) -> Self {
        Failure { offset: self.offset + preceding, ..self }
    }

    /// The error, for a failure in the slice starting at `start` of `buf`.
    fn locate(self, buf: &[u8], start: usize) -> RequestError {
        let offset = (start + self.offset).min(buf.len());
        let before = &buf[..offset];
        let line_start = before.iter().rposition(|&byte| byte == b'\n').map_or(0, |lf| lf + 1);
        let line = 1 + before.iter().filter(|&&byte| byte == b'\n').count();
        RequestError { cause: self.cause, line, column: 1 + offset - line_start }
    }
}

/// Parses the request at the start of `buf`: request line, headers and the
/// body their framing announces (requests without one have no body).
fn parse_request(buf: &[u8]) -> Result<Parsed, Failure> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut slots);
    let head_length = match request.parse(buf) {
        Ok(Status::Complete(length)) => length,
        Ok(Status::Partial) => return Err(Failure::incomplete(buf.len())),
        Err(error) => {
            let cause = head_cause(error, &request);
            let offset = first_error_at(buf, |prefix| {
                httparse::Request::new(&mut [httparse::EMPTY_HEADER; MAX_HEADERS])
                    .parse(prefix)
                    .is_err()
            });
            return Err(Failure { cause, offset });
        }
    };
    let is_head = request.method == Some("HEAD");
    let framing = Framing::scan(request.headers).map_err(|BadContentLength(index)| Failure {
        cause: "invalid character in content-length header",
        offset: offset_in(buf, request.headers[index].value),
    })?;
    let body = framing.request_body().map_err(|bad| {
        let cause = match bad {
            BadRequestFraming::NotChunked => "request has invalid transfer-encoding",
            BadRequestFraming::LengthAndEncoding => "unexpected content-length header",
        };
        // http_parser checks these at the end of the header block.
        Failure { cause, offset: head_length.saturating_sub(1) }
    })?;
    let body_length =
        body_length(&buf[head_length..], body).map_err(|failure| failure.after(head_length))?;
    Ok(Parsed { length: head_length + body_length, is_head })
}

/// The length of the body at the start of `body`, which must be complete.
fn body_length(body: &[u8], framing: RequestBody) -> Result<usize, Failure> {
    match framing {
        RequestBody::Chunked => chunked_length(body),
        RequestBody::Length(length) => match usize::try_from(length) {
            Ok(length) if length <= body.len() => Ok(length),
            _ => Err(Failure::incomplete(body.len())),
        },
    }
}

/// The length of a complete chunked body at the start of `body`: chunks, the
/// last chunk and the trailer section.
fn chunked_length(body: &[u8]) -> Result<usize, Failure> {
    match ChunkedDecoder::new().decode(body, Discard) {
        Ok(Decoded { consumed, done: true }) => Ok(consumed),
        Ok(Decoded { done: false, .. }) => Err(Failure::incomplete(body.len())),
        Err(error) => {
            let cause = match error.kind {
                ChunkedErrorKind::BadChunkSize => "invalid character in chunk size header",
                ChunkedErrorKind::ChunkLineTooLong => "chunk size line longer than 64 KiB",
                ChunkedErrorKind::BadChunkDataEnd => "CRLF expected after chunk data",
                ChunkedErrorKind::MalformedTrailer(error) => header_cause(error),
                ChunkedErrorKind::TrailersTooLarge => "trailer section larger than 64 KiB",
            };
            Err(Failure { cause, offset: error.at })
        }
    }
}

/// http_parser's description of an error in a request line or headers.
fn head_cause(error: httparse::Error, request: &httparse::Request<'_, '_>) -> &'static str {
    match error {
        httparse::Error::Token | httparse::Error::Status if request.method.is_none() => {
            "invalid HTTP method"
        }
        httparse::Error::Token | httparse::Error::Status if request.path.is_none() => "invalid URL",
        error => header_cause(error),
    }
}

fn header_cause(error: httparse::Error) -> &'static str {
    match error {
        httparse::Error::HeaderName | httparse::Error::HeaderValue => "invalid character in header",
        httparse::Error::NewLine => "LF character expected",
        httparse::Error::Version => "invalid HTTP version",
        httparse::Error::TooManyHeaders => "more than 100 headers",
        httparse::Error::Token | httparse::Error::Status => "invalid request line",
    }
}

/// The offset of `part`, a slice borrowed from `buf`, within `buf`.
fn offset_in(buf: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).saturating_sub(buf.as_ptr() as usize).min(buf.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect()
    }

    /// The request of these parts, as HTTP/1.1 writes it.
    fn build_request(
        method: &str,
        target: &str,
        fields: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Vec<u8> {
        let request = Request {
            method: method.into(),
            target: target.into(),
            fields: fields
                .iter()
                .map(|(name, value)| (name.clone(), value.clone().into()))
                .collect(),
            body: body.map(Arc::from),
        };
        let mut bytes = Vec::new();
        encode(&request, &mut bytes);
        bytes
    }

    fn error(buf: &[u8]) -> String {
        count_requests(buf).unwrap_err().to_string()
    }

    #[test]
    fn builds_a_get() {
        let request = build_request("GET", "/index.html", &pairs(&[("Host", "h:8080")]), None);
        assert_eq!(request, b"GET /index.html HTTP/1.1\r\nHost: h:8080\r\n\r\n");
    }

    #[test]
    fn builds_a_post_with_content_length() {
        let headers = pairs(&[("Host", "h"), ("X-A", "1")]);
        let request = build_request("POST", "/p", &headers, Some(b"a=b"));
        assert_eq!(
            request,
            b"POST /p HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nContent-Length: 3\r\n\r\na=b"
        );
        let empty = build_request("PUT", "/", &[], Some(b""));
        assert_eq!(empty, b"PUT / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    }

    #[test]
    fn keeps_the_users_body_framing() {
        let own = build_request("POST", "/", &pairs(&[("content-length", "3")]), Some(b"abc"));
        assert_eq!(own, b"POST / HTTP/1.1\r\ncontent-length: 3\r\n\r\nabc");
        let chunked = pairs(&[("Transfer-Encoding", "chunked")]);
        let request = build_request("POST", "/", &chunked, Some(b"0\r\n\r\n"));
        assert_eq!(request, b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    }

    #[test]
    fn built_requests_count_as_one() {
        let host = pairs(&[("Host", "h")]);
        let request = build_request("HEAD", "/", &host, None);
        assert_eq!(count_requests(&request).unwrap().is_head, vec![true]);
        let request = build_request("POST", "/", &host, Some(b"body"));
        assert_eq!(count_requests(&request).unwrap().is_head, vec![false]);
    }

    #[test]
    fn text_parses_into_neutral_requests_with_their_bodies_as_written() {
        let text = b"POST /a?b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz\r\n\
                     GET http://o/x HTTP/1.1\r\nX-Bytes: \xff\r\n\r\n\
                     PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nq\r\n0\r\n\r\n";
        let requests = parse_requests(text).unwrap();
        let summary: Vec<(&str, &str, usize)> = requests
            .iter()
            .map(|r| (r.method.as_str(), r.target.as_str(), r.fields.len()))
            .collect();
        assert_eq!(summary, [("POST", "/a?b", 2), ("GET", "http://o/x", 1), ("PUT", "/", 1)]);
        assert_eq!(requests[0].body.as_deref(), Some(&b"xyz"[..]));
        assert_eq!(requests[1].field("x-bytes"), Some(&b"\xff"[..]));
        assert_eq!(requests[1].body, None);
        // A chunked body stays as written (HTTP/2 decodes it).
        assert_eq!(requests[2].body.as_deref(), Some(&b"1\r\nq\r\n0\r\n\r\n"[..]));
        // Encoded again, each is the text it came from (the fields frame
        // the body: no Content-Length is added).
        let mut again = Vec::new();
        encode(&requests[0], &mut again);
        assert_eq!(again, b"POST /a?b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz");
        again.clear();
        encode(&requests[2], &mut again);
        assert_eq!(again, &text[text.len() - 57..]);
        assert_eq!(
            parse_requests(b"GET / HTTP/1.1\r\nHost").unwrap_err().to_string(),
            "incomplete request at 2:5"
        );
    }

    #[test]
    fn counts_one_request() {
        let batch = count_requests(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
        assert_eq!(batch.is_head.len(), 1);
        assert_eq!(batch.is_head, vec![false]);
    }

    #[test]
    fn counts_pipelined_requests() {
        let get = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
        let batch = count_requests(format!("{get}{get}{get}").as_bytes()).unwrap();
        assert_eq!(batch.is_head.len(), 3);
        let mixed = format!("{get}HEAD /h HTTP/1.1\r\n\r\n\r\n{get}\r\n");
        assert_eq!(count_requests(mixed.as_bytes()).unwrap().is_head, vec![false, true, false]);
    }

    #[test]
    fn counts_requests_with_bodies() {
        let post = "POST /form HTTP/1.1\r\nContent-Length: 7\r\n\r\nGET / H";
        let chunked = "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
            4;x=y\r\nGET \r\n1\r\n/\r\n0\r\nTrailer: t\r\n\r\n";
        let get = "GET / HTTP/1.1\r\n\r\n";
        let batch = count_requests(format!("{post}{chunked}{get}").as_bytes()).unwrap();
        assert_eq!(batch.is_head.len(), 3);
    }

    #[test]
    fn incomplete_requests_say_where_the_buffer_ended() {
        assert_eq!(error(b""), "incomplete request at 1:1");
        assert_eq!(error(b"\r\n"), "incomplete request at 2:1");
        assert_eq!(error(b"GET / HTTP/1.1\r\nHost: h\r\n"), "incomplete request at 3:1");
        assert_eq!(error(b"GET / HTTP/1.1\r\n\r\nGET /"), "incomplete request at 3:6");
        assert_eq!(
            error(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"),
            "incomplete request at 4:3"
        );
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n";
        assert_eq!(error(chunked), "incomplete request at 6:1");
    }

    #[test]
    fn malformed_requests_say_where_parsing_stopped() {
        assert_eq!(error(b"G(T / HTTP/1.1\r\n\r\n"), "invalid HTTP method at 1:2");
        assert_eq!(
            error(b"GET / HTTP/1.1\r\n\r\nGET /\x7f HTTP/1.1\r\n\r\n"),
            "invalid URL at 3:6"
        );
        assert_eq!(error(b"GET / HTTP/2.0\r\n\r\n"), "invalid HTTP version at 1:12");
        assert_eq!(
            error(b"GET / HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n"),
            "invalid character in header at 3:4"
        );
    }

    #[test]
    fn malformed_bodies_say_where_parsing_stopped() {
        let length = b"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n";
        assert_eq!(error(length), "invalid character in content-length header at 2:17");
        let size = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n";
        assert_eq!(error(size), "invalid character in chunk size header at 6:1");
        let end = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd";
        assert_eq!(error(end), "CRLF expected after chunk data at 5:4");
        let both = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n";
        assert_eq!(error(both), "unexpected content-length header at 4:2");
        let gzip = b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n";
        assert_eq!(error(gzip), "request has invalid transfer-encoding at 3:2");
    }

    #[test]
    fn garbage_never_panics() {
        let valid = b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
            GET / HTTP/1.1\r\nContent-Length: 2\r\n\r\nab";
        for at in 0..valid.len() {
            for byte in [0u8, b'\r', b'\n', b' ', b':', b'0', b'z', 0xff] {
                let mut corrupted = valid.to_vec();
                corrupted[at] = byte;
                let _ = count_requests(&corrupted);
                let _ = count_requests(&corrupted[..at]);
            }
        }
    }
}
