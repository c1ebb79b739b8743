//! A request as the server reads it from its stream (RFC 9114, section
//! 4.1): HEADERS, DATA frames, at most one trailing HEADERS, then the end
//! of the stream. A malformed request is the stream's error
//! (`H3_MESSAGE_ERROR`); frames out of place, or a field section QPACK
//! cannot decode, are the connection's.

use quinn_proto::{ConnectionHandle, StreamId};

use super::{Fields, Limits, Request};
use crate::http3::error::{self, H3Error};
use crate::http3::frame::{self, FrameReader, Piece};
use crate::http3::qpack;

/// Why a request stream failed.
pub(super) enum Failure {
    /// The stream's alone: reset and stopped with the code.
    Stream(H3Error),
    /// The connection's: closed with the code.
    Connection(H3Error),
}

/// Fields that are HTTP/1.1's connection's business, malformed in HTTP/3
/// (RFC 9114, section 4.2).
const CONNECTION_SPECIFIC: [&[u8]; 5] =
    [b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"];

/// A field's share of a field section's size (RFC 9114, section 4.2.2).
const FIELD_OVERHEAD: usize = 32;

/// Reads one request stream's frames: HEADERS, DATA, maybe trailers.
pub(super) struct RequestReader {
    frames: FrameReader,
    limits: Limits,
    head: Option<Head>,
    /// What is kept of the body, and its whole length so far.
    body: Vec<u8>,
    body_len: u64,
    /// The request's `content-length`, when it says one.
    content_length: Option<u64>,
    /// How much of the body to keep (from the head's `:path`).
    keep: usize,
    trailers: bool,
}

impl RequestReader {
    pub(super) fn new(limits: Limits) -> RequestReader {
        RequestReader {
            frames: FrameReader::new(limits.max_field_section),
            limits,
            head: None,
            body: Vec::new(),
            body_len: 0,
            content_length: None,
            keep: 0,
            trailers: false,
        }
    }

    pub(super) fn feed(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        let RequestReader { frames, limits, head, body, body_len, content_length, keep, trailers } =
            self;
        let mut failure = None;
        let result = frames.feed(bytes, &mut |piece| {
            let outcome = match piece {
                Piece::Data(data) => match head {
                    Some(_) if !*trailers => {
                        let room = keep.saturating_sub(body.len());
                        body.extend_from_slice(&data[..data.len().min(room)]);
                        *body_len += data.len() as u64;
                        Ok(())
                    }
                    _ => Err(Failure::Connection(H3Error::new(
                        error::FRAME_UNEXPECTED,
                        "DATA outside a request's body",
                    ))),
                },
                Piece::Frame { kind: frame::HEADERS, payload } => match head {
                    None => {
                        parse_head(payload, limits.max_field_section).map(|(parsed, length)| {
                            *keep = (limits.kept_body)(&parsed.path);
                            *content_length = length;
                            *head = Some(parsed);
                        })
                    }
                    Some(_) if !*trailers => {
                        *trailers = true;
                        check_trailers(payload, limits.max_field_section)
                    }
                    Some(_) => Err(Failure::Connection(H3Error::new(
                        error::FRAME_UNEXPECTED,
                        "HEADERS after a request's trailers",
                    ))),
                },
                Piece::Frame { kind, .. } => Err(Failure::Connection(H3Error::new(
                    error::FRAME_UNEXPECTED,
                    format!("a frame of type 0x{kind:x} on a request stream"),
                ))),
            };
            outcome.map_err(|f| {
                let code = match &f {
                    Failure::Stream(e) | Failure::Connection(e) => e.code,
                };
                failure = Some(f);
                // Only to stop the reader: `failure` says what happened.
                H3Error::new(code, "")
            })
        });
        match (result, failure) {
            (Ok(()), _) => Ok(()),
            (Err(_), Some(failure)) => Err(failure),
            // The reader's own: a frame beyond the limit, for a request
            // stream the request's error.
            (Err(e), None) if e.code == error::EXCESSIVE_LOAD => Err(Failure::Stream(e)),
            (Err(e), None) => Err(Failure::Connection(e)),
        }
    }

    /// The request on `stream` of `connection`, once its stream ended.
    pub(super) fn finish(
        self,
        connection: ConnectionHandle,
        stream: StreamId,
    ) -> Result<Request, Failure> {
        if !self.frames.at_boundary() {
            return Err(Failure::Connection(H3Error::new(
                error::FRAME_ERROR,
                "a request stream ends inside a frame",
            )));
        }
        let Some(Head { method, path, fields }) = self.head else {
            return Err(Failure::Stream(H3Error::new(
                error::REQUEST_INCOMPLETE,
                "a request stream ends without HEADERS",
            )));
        };
        if self.content_length.is_some_and(|length| length != self.body_len) {
            return Err(malformed("a body whose length is not its content-length"));
        }
        let (body, body_len) = (self.body, self.body_len);
        Ok(Request { connection, stream, method, path, fields, body, body_len })
    }
}

fn malformed(why: impl Into<String>) -> Failure {
    Failure::Stream(H3Error::new(error::MESSAGE_ERROR, why))
}

/// The fields of a field section, checked for what every field section
/// must be: decodable, within `limit` decoded, names in lower case.
fn decode_fields(block: &[u8], limit: usize) -> Result<Fields, Failure> {
    let mut fields = Vec::new();
    let mut size = 0usize;
    let mut too_large = false;
    qpack::decode(block, &mut |name, value| {
        size = size.saturating_add(name.len() + value.len() + FIELD_OVERHEAD);
        too_large |= size > limit;
        if !too_large {
            fields.push((name.to_vec(), value.to_vec()));
        }
    })
    .map_err(Failure::Connection)?;
    if too_large {
        return Err(Failure::Stream(H3Error::new(
            error::EXCESSIVE_LOAD,
            format!("a field section of more than {limit} bytes"),
        )));
    }
    if let Some((name, _)) = fields.iter().find(|(name, _)| name.iter().any(u8::is_ascii_uppercase))
    {
        return Err(malformed(format!(
            "the field name {} is not in lower case",
            String::from_utf8_lossy(name)
        )));
    }
    Ok(fields)
}

/// A request's head, before its body.
struct Head {
    method: Vec<u8>,
    path: Vec<u8>,
    fields: Fields,
}

/// A request's head and its `content-length`, if it has one.
fn parse_head(block: &[u8], limit: usize) -> Result<(Head, Option<u64>), Failure> {
    let mut method = None;
    let mut scheme = None;
    let mut path = None;
    let mut authority = None;
    let mut fields = Vec::new();
    for (name, value) in decode_fields(block, limit)? {
        let slot = match &name[..] {
            b":method" => &mut method,
            b":scheme" => &mut scheme,
            b":path" => &mut path,
            b":authority" => &mut authority,
            pseudo if pseudo.starts_with(b":") => {
                return Err(malformed(format!(
                    "the pseudo-header {} in a request",
                    String::from_utf8_lossy(pseudo)
                )))
            }
            _ => {
                fields.push((name, value));
                continue;
            }
        };
        if !fields.is_empty() {
            return Err(malformed("a pseudo-header after a regular field"));
        }
        if slot.replace(value).is_some() {
            return Err(malformed("a pseudo-header twice"));
        }
    }
    // CONNECT (which has neither :scheme nor :path) is not served.
    let (Some(method), Some(_), Some(path)) = (method, scheme, path) else {
        return Err(malformed("a request without :method, :scheme or :path"));
    };
    if path.is_empty() {
        return Err(malformed("an empty :path"));
    }
    check_regular_fields(&fields)?;
    let content_length = match fields.iter().find(|(name, _)| name == b"content-length") {
        None => None,
        Some((_, value)) => Some(
            crate::http::framing::decimal(value)
                .ok_or_else(|| malformed("a content-length that is not a number"))?,
        ),
    };
    Ok((Head { method, path, fields }, content_length))
}

/// Trailers: regular fields only.
fn check_trailers(block: &[u8], limit: usize) -> Result<(), Failure> {
    let fields = decode_fields(block, limit)?;
    if fields.iter().any(|(name, _)| name.starts_with(b":")) {
        return Err(malformed("a pseudo-header in trailers"));
    }
    check_regular_fields(&fields)
}

fn check_regular_fields(fields: &[(Vec<u8>, Vec<u8>)]) -> Result<(), Failure> {
    for (name, value) in fields {
        if CONNECTION_SPECIFIC.contains(&&name[..]) {
            return Err(malformed(format!(
                "the connection-specific field {}",
                String::from_utf8_lossy(name)
            )));
        }
        if name == b"te" && value != b"trailers" {
            return Err(malformed("te other than trailers"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use quinn_proto::{Dir, Side};

    use super::*;
    use crate::http3::error::{
        EXCESSIVE_LOAD, FRAME_ERROR, FRAME_UNEXPECTED, MESSAGE_ERROR, QPACK_DECOMPRESSION_FAILED,
        REQUEST_INCOMPLETE,
    };

    const LIMITS: Limits = Limits {
        max_connections: 1,
        max_streams: 1,
        max_field_section: 1024,
        idle_timeout: Duration::from_secs(1),
        kept_body: |path| if path == b"/keep" { 4 } else { 0 },
    };

    fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        qpack::encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())), &mut block);
        let mut out = Vec::new();
        frame::frame(frame::HEADERS, &block, &mut out);
        out
    }

    fn get(path: &str, more: &[(&str, &str)]) -> Vec<u8> {
        let pseudo = [(":method", "GET"), (":scheme", "https"), (":path", path)];
        headers(&pseudo.iter().chain(more).copied().collect::<Vec<_>>())
    }

    fn data(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame::frame(frame::DATA, body, &mut out);
        out
    }

    /// The stream's bytes fed byte by byte, then its end: the request, or
    /// the failure's code and whether it is the connection's.
    fn read(stream: &[u8]) -> Result<Request, (u64, bool)> {
        let mut reader = RequestReader::new(LIMITS);
        let id = StreamId::new(Side::Client, Dir::Bi, 0);
        let failed = |f: Failure| match f {
            Failure::Stream(e) => (e.code, false),
            Failure::Connection(e) => (e.code, true),
        };
        for byte in stream.chunks(1) {
            reader.feed(byte).map_err(failed)?;
        }
        reader.finish(ConnectionHandle(0), id).map_err(failed)
    }

    #[test]
    fn a_request_with_a_body_and_trailers_reads_whole() {
        let mut stream = get("/keep", &[("x-a", "1")]);
        stream.extend(data(b"hello"));
        stream.extend(data(b" world"));
        stream.extend(headers(&[("x-trailer", "end")]));
        let request = read(&stream).unwrap();
        assert_eq!((&request.method[..], &request.path[..]), (&b"GET"[..], &b"/keep"[..]));
        assert_eq!(request.fields, [(b"x-a".to_vec(), b"1".to_vec())]);
        // Only what the path keeps; the whole length is counted.
        assert_eq!((&request.body[..], request.body_len), (&b"hell"[..], 11));
        assert_eq!(read(&get("/other", &[])).unwrap().body_len, 0);
    }

    #[test]
    fn what_a_client_gets_wrong_has_the_rfcs_code() {
        let with = |mut head: Vec<u8>, rest: &[u8]| {
            head.extend_from_slice(rest);
            head
        };
        let mut settings = Vec::new();
        frame::frame(frame::SETTINGS, &[], &mut settings);
        // (code, whether the connection's)
        let stream_error = |code| (code, false);
        let connection_error = |code| (code, true);
        let cases: [(Vec<u8>, (u64, bool)); 11] = [
            (headers(&[(":method", "GET"), (":scheme", "https")]), stream_error(MESSAGE_ERROR)),
            (
                headers(&[(":method", "GET"), ("x-a", "1"), (":path", "/"), (":scheme", "h")]),
                stream_error(MESSAGE_ERROR),
            ),
            (get("/", &[(":status", "200")]), stream_error(MESSAGE_ERROR)),
            (get("/", &[("X-Upper", "1")]), stream_error(MESSAGE_ERROR)),
            (get("/", &[("transfer-encoding", "chunked")]), stream_error(MESSAGE_ERROR)),
            (
                with(get("/", &[("content-length", "2")]), &data(b"abc")),
                stream_error(MESSAGE_ERROR),
            ),
            (get("/", &[("x-big", &"b".repeat(2000))]), stream_error(EXCESSIVE_LOAD)),
            (Vec::new(), stream_error(REQUEST_INCOMPLETE)),
            (with(data(b"x"), &get("/", &[])), connection_error(FRAME_UNEXPECTED)),
            (with(get("/", &[]), &settings), connection_error(FRAME_UNEXPECTED)),
            (with(get("/", &[]), &data(b"abc")[..3]), connection_error(FRAME_ERROR)),
        ];
        for (stream, expected) in cases {
            assert_eq!(read(&stream).unwrap_err(), expected, "{stream:02x?}");
        }
        let mut dynamic = Vec::new();
        frame::frame(frame::HEADERS, &[0x02, 0x00], &mut dynamic);
        assert_eq!(read(&dynamic).unwrap_err(), (QPACK_DECOMPRESSION_FAILED, true));
    }
}
