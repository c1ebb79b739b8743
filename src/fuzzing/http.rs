//! The HTTP parsers: response framing (with the chunked decoder under it)
//! and the request-batch counter, with the encoding of a neutral request
//! (`http::request::encode`) checked against it and parsed back.

use std::sync::Arc;

use crate::http::chunked::{ChunkedDecoder, ChunkedError, Sink};
use crate::http::request::{count_requests, encode, parse_requests};
use crate::http::response::{ParseError, Response, ResponseParser};
use crate::request::Request;

use super::input::{cut, Input};

/// Feeds `pieces` in order as a connection does: the rest of a piece after
/// a response goes to the next one, `start` is called after each response
/// with the next HEAD flag of `heads` (then false), and EOF comes last.
/// Asserts that every call makes progress (uses a byte or completes a
/// response) and stays within its input. Returns the responses or the
/// first error.
pub fn run_responses(
    capture: bool,
    heads: &[bool],
    pieces: &[&[u8]],
) -> Result<Vec<Response>, ParseError> {
    let mut parser = ResponseParser::new(capture);
    let mut heads = heads.iter().copied();
    parser.start(heads.next().unwrap_or(false));
    assert!(parser.is_idle());
    let mut responses = Vec::new();
    for piece in pieces {
        let mut offset = 0;
        while offset < piece.len() {
            let feed = parser.feed(&piece[offset..])?;
            assert!(feed.consumed > 0 || feed.done.is_some(), "no progress at {offset}");
            assert!(offset + feed.consumed <= piece.len(), "consumed past the input");
            offset += feed.consumed;
            match feed.done {
                Some(response) => {
                    assert_eq!(response.captured.is_some(), capture);
                    assert!(parser.is_idle());
                    responses.push(response);
                    parser.start(heads.next().unwrap_or(false));
                }
                None => assert_eq!(offset, piece.len(), "stopped early without a response"),
            }
        }
    }
    let last = parser.eof()?;
    responses.extend(last);
    Ok(responses)
}

/// Status and keep-alive of each response, or the error.
fn outline(outcome: &Result<Vec<Response>, ParseError>) -> Result<Vec<(u16, bool)>, ParseError> {
    outcome
        .as_ref()
        .map(|responses| responses.iter().map(|r| (r.status, r.keep_alive)).collect())
        .map_err(|error| *error)
}

/// The response framer on any byte stream, with HEAD flags and cut points
/// from the input: whole, cut, and one byte at a time, with and without
/// capture. A stream framed whole must frame the same way however it is
/// cut (captured headers and bodies included); one that fails whole must
/// fail cut too. Capture must not change the framing or the error.
pub fn response_stream(data: &[u8]) {
    let mut input = Input::new(data);
    let mask = input.byte();
    let heads: Vec<bool> = (0..8).map(|bit| mask >> bit & 1 == 1).collect();
    let cuts = input.cuts();
    let stream = input.rest();

    let whole = run_responses(true, &heads, &[stream]);
    let plain = run_responses(false, &heads, &[stream]);
    assert_eq!(outline(&whole), outline(&plain), "capture changed the framing");
    let mut cut_ways = vec![cut(stream, &cuts)];
    if stream.len() <= 4096 {
        cut_ways.push(stream.chunks(1).collect());
    }
    for pieces in cut_ways {
        let split = run_responses(true, &heads, &pieces);
        match (&whole, &split) {
            (Ok(whole), Ok(split)) => assert_eq!(whole, split, "cut differently"),
            (Err(_), Err(_)) => {}
            _ => panic!("whole: {whole:?}, cut: {split:?}"),
        }
    }
}

/// A sink that keeps chunk data and trailers.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Kept {
    pub data: Vec<u8>,
    pub trailers: Vec<(String, Vec<u8>)>,
}

impl Sink for Kept {
    fn data(&mut self, data: &[u8]) {
        self.data.extend_from_slice(data);
    }

    fn trailers(&mut self, fields: &[httparse::Header<'_>]) {
        self.trailers.extend(fields.iter().map(|f| (f.name.to_string(), f.value.to_vec())));
    }
}

/// What decoding a chunked body from pieces came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Chunked {
    /// Complete after this many bytes, with this data and trailers.
    Done(usize, Kept),
    /// All input used, the body not complete.
    Incomplete,
    Failed,
}

/// Decodes `pieces` in order with one decoder, checking what each call
/// returns against its input.
pub fn decode_chunked(pieces: &[&[u8]]) -> Chunked {
    let mut decoder = ChunkedDecoder::new();
    let mut kept = Kept::default();
    let mut offset = 0;
    for piece in pieces {
        match decoder.decode(piece, &mut kept) {
            Ok(decoded) if decoded.done => {
                assert!(decoded.consumed <= piece.len());
                return Chunked::Done(offset + decoded.consumed, kept);
            }
            Ok(decoded) => assert_eq!(decoded.consumed, piece.len(), "incomplete, input unused"),
            Err(ChunkedError { at, .. }) => {
                assert!(at < piece.len(), "error at {at}, after the input ({})", piece.len());
                return Chunked::Failed;
            }
        }
        offset += piece.len();
    }
    Chunked::Incomplete
}

/// The chunked decoder on any bytes: whole, cut and byte by byte must
/// agree on where the body ends and what it holds, or all fail. (A
/// malformed trailer section that arrives in pieces is only parsed again
/// once a piece brings a LF, so cut it may still be incomplete where whole
/// it has failed.)
pub fn chunked_body(data: &[u8]) {
    let mut input = Input::new(data);
    let cuts = input.cuts();
    let body = input.rest();
    let whole = decode_chunked(&[body]);
    let mut cut_ways = vec![cut(body, &cuts)];
    if body.len() <= 4096 {
        cut_ways.push(body.chunks(1).collect());
    }
    for pieces in cut_ways {
        match (&whole, decode_chunked(&pieces)) {
            (Chunked::Failed, Chunked::Incomplete) => {}
            (whole, split) => assert_eq!(whole, &split),
        }
    }
}

/// The request counter on any bytes: an error names a position inside the
/// buffer; a buffer of complete requests followed by itself holds twice
/// those requests.
pub fn request_batch(data: &[u8]) {
    match count_requests(data) {
        Ok(batch) => {
            assert!(!batch.is_head.is_empty());
            let twice = [data, data].concat();
            let again = count_requests(&twice).expect("a valid batch twice is valid");
            assert_eq!(again.is_head, [&batch.is_head[..], &batch.is_head[..]].concat());
        }
        Err(error) => {
            let lines = 1 + data.iter().filter(|&&byte| byte == b'\n').count();
            assert!((1..=lines).contains(&error.line), "{error} in {lines} lines");
            assert!(error.column >= 1 && error.column <= data.len() + 1, "{error}");
            assert!(!error.to_string().is_empty());
        }
    }
}

/// The bytes allowed in a token (method, header name).
const TCHAR: &[u8] =
    b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Bytes for a request target after its `/`.
const PATH_CHARS: &[u8] = b"/-._~!$&'()*+,;=:@%?#0123456789ABCDEFabcdefxyzXYZ";

/// Bytes for a header value (a space and a tab, not first).
const VALUE_CHARS: &[u8] = b" \t!\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~";

/// Text of `1..=max` bytes, each from `alphabet`.
fn text_from(input: &mut Input, alphabet: &[u8], max: usize) -> String {
    let length = 1 + input.below(max);
    (0..length).map(|_| char::from(alphabet[input.below(alphabet.len())])).collect()
}

/// A request as `wrk.format` would build it, from the input. `valid`: made
/// of parts that HTTP allows (else of any text). Returns the request, its
/// HEAD flag, and whether it must count as exactly one request.
pub fn arbitrary_request(input: &mut Input, valid: bool) -> (Vec<u8>, bool) {
    if !valid {
        let lossy = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let method = lossy(input.bytes(12));
        let path = lossy(input.bytes(40));
        let headers: Vec<(String, String)> =
            (0..input.below(4)).map(|_| (lossy(input.bytes(16)), lossy(input.bytes(32)))).collect();
        let body = input.bool().then(|| input.bytes(64));
        let request = encoded(&method, &path, &headers, body);
        return (request, method == "HEAD");
    }
    let method = match input.below(4) {
        0 => "GET".to_string(),
        1 => "HEAD".to_string(),
        2 => "POST".to_string(),
        _ => text_from(input, TCHAR, 10),
    };
    let path = format!("/{}", text_from(input, PATH_CHARS, 40).trim_start_matches('/'));
    let mut headers: Vec<(String, String)> = (0..input.below(6))
        .map(|_| {
            let name = text_from(input, TCHAR, 16);
            let value = text_from(input, VALUE_CHARS, 32).trim_start().to_string();
            (name, value)
        })
        .filter(|(name, _)| {
            // The framing headers come from the choice below only.
            !["content-length", "transfer-encoding"].iter().any(|n| name.eq_ignore_ascii_case(n))
        })
        .collect();
    let data = input.bytes(200).to_vec();
    let body = match input.below(4) {
        0 => None,
        1 => Some(data),
        2 => {
            headers.push(("Content-Length".to_string(), data.len().to_string()));
            Some(data)
        }
        _ => {
            headers.push(("Transfer-Encoding".to_string(), "chunked".to_string()));
            Some(chunk(input, &data))
        }
    };
    let request = encoded(&method, &path, &headers, body.as_deref());
    (request, method == "HEAD")
}

/// The request of these parts, as HTTP/1.1 writes it.
fn encoded(method: &str, path: &str, headers: &[(String, String)], body: Option<&[u8]>) -> Vec<u8> {
    let request = Request {
        method: method.to_string(),
        target: path.to_string(),
        fields: headers.iter().map(|(name, value)| (name.clone(), value.clone().into())).collect(),
        body: body.map(Arc::from),
    };
    let mut bytes = Vec::new();
    encode(&request, &mut bytes);
    bytes
}

/// `data` in the chunked coding, cut into chunks at points from the input,
/// with extensions and trailers now and then.
pub fn chunk(input: &mut Input, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(1 + input.below(rest.len()));
        let digits = match input.below(3) {
            0 => format!("{:x}", chunk.len()),
            1 => format!("{:X}", chunk.len()),
            _ => format!("000{:x}", chunk.len()),
        };
        body.extend_from_slice(digits.as_bytes());
        if input.below(4) == 0 {
            body.extend_from_slice(b" ;ext=\"v\";x");
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(chunk);
        body.extend_from_slice(b"\r\n");
        rest = tail;
    }
    body.extend_from_slice(b"0\r\n");
    if input.below(3) == 0 {
        body.extend_from_slice(b"X-Trailer: t\r\n");
    }
    body.extend_from_slice(b"\r\n");
    body
}

/// A request encoded from parts from the input, valid ones or any text:
/// the counter must find exactly the one request in what a valid build
/// gives (with its HEAD flag), parsed back and encoded again it parses to
/// the same request (the parser trims the spaces around a value), and
/// nothing panics on any other.
pub fn built_request(data: &[u8]) {
    let mut input = Input::new(data);
    let valid = input.bool();
    let (request, is_head) = arbitrary_request(&mut input, valid);
    let counted = count_requests(&request);
    let parsed = parse_requests(&request);
    if valid {
        let text = String::from_utf8_lossy(&request);
        assert_eq!(counted.map(|batch| batch.is_head), Ok(vec![is_head]), "{text:?}");
        let parsed = parsed.unwrap_or_else(|e| panic!("{e}: {text:?}"));
        let mut again = Vec::new();
        encode(&parsed[0], &mut again);
        let twice = parse_requests(&again).unwrap_or_else(|e| panic!("{e}: {text:?}"));
        assert_eq!(twice, parsed, "parsed back, encoded again and parsed: {text:?}");
    }
}
