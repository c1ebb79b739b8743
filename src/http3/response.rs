//! A response as the client reads it from its request stream (RFC 9114,
//! section 4.1): informational HEADERS (1xx) any number of times, then the
//! final HEADERS with the status, DATA frames, at most one trailing
//! HEADERS, then the end of the stream. Anything else is the server's
//! error, with the code RFC 9114 gives it; the caller resets the stream
//! (or closes the connection, for the connection errors) with it.

use super::error::{H3Error, FRAME_UNEXPECTED, ID_ERROR, MESSAGE_ERROR, REQUEST_INCOMPLETE};
use super::frame::{self, FrameReader, Piece};
use super::qpack;
use crate::http::response::Captured;

/// The largest field section pace reads (the same as nghttp2's default for
/// HTTP/2's header lists, 64 KiB).
pub const MAX_FIELD_SECTION: usize = 64 * 1024;

/// Where the response is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// No final HEADERS yet.
    Head,
    /// Final HEADERS read; DATA may follow.
    Body,
    /// Trailing HEADERS read: nothing may follow.
    Trailers,
}

/// One request stream's response.
#[derive(Debug)]
pub struct ResponseReader {
    frames: FrameReader,
    stage: Stage,
    status: u16,
    /// `content-length`, when the response gave one.
    content_length: Option<u64>,
    body_bytes: u64,
    /// With capture: the headers (lower-case names, as HTTP/3 has them) and
    /// the body, for the script's `response()`.
    captured: Option<Captured>,
}

/// A response read to its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body_bytes: u64,
    pub captured: Option<Captured>,
}

impl ResponseReader {
    /// `capture`: keep the headers and the body.
    pub fn new(capture: bool) -> ResponseReader {
        ResponseReader {
            frames: FrameReader::new(MAX_FIELD_SECTION),
            stage: Stage::Head,
            status: 0,
            content_length: None,
            body_bytes: 0,
            captured: capture.then(Captured::default),
        }
    }

    /// Bytes of the stream, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), H3Error> {
        let Self { frames, stage, status, content_length, body_bytes, captured } = self;
        frames.feed(bytes, &mut |piece| match piece {
            Piece::Data(data) => {
                if *stage != Stage::Body {
                    let what =
                        if *stage == Stage::Head { "before" } else { "after the trailers of" };
                    return Err(H3Error::new(FRAME_UNEXPECTED, format!("DATA {what} a response")));
                }
                *body_bytes += data.len() as u64;
                if content_length.is_some_and(|length| *body_bytes > length) {
                    return Err(H3Error::new(
                        MESSAGE_ERROR,
                        "a body longer than its content-length",
                    ));
                }
                if let Some(captured) = captured {
                    captured.body.extend_from_slice(data);
                }
                Ok(())
            }
            Piece::Frame { kind: frame::HEADERS, payload } => match *stage {
                Stage::Head => {
                    let head = Head::decode(payload, captured.is_some())?;
                    if (100..200).contains(&head.status) {
                        // Informational: the final response is still to come.
                        return Ok(());
                    }
                    *status = head.status;
                    *content_length = head.content_length;
                    if let Some(captured) = captured {
                        captured.headers = head.fields;
                    }
                    *stage = Stage::Body;
                    Ok(())
                }
                Stage::Body => {
                    // Trailers: no pseudo-fields; their fields are not kept.
                    let mut pseudo = false;
                    qpack::decode(payload, &mut |name, _| pseudo |= name.starts_with(b":"))?;
                    if pseudo {
                        return Err(H3Error::new(MESSAGE_ERROR, "a pseudo-field in trailers"));
                    }
                    *stage = Stage::Trailers;
                    Ok(())
                }
                Stage::Trailers => Err(H3Error::new(FRAME_UNEXPECTED, "HEADERS after trailers")),
            },
            Piece::Frame { kind: frame::PUSH_PROMISE, .. } => {
                // pace never sends MAX_PUSH_ID: no push id is allowed.
                Err(H3Error::new(ID_ERROR, "PUSH_PROMISE, though pace allows no push"))
            }
            Piece::Frame { kind, .. } => Err(H3Error::new(
                FRAME_UNEXPECTED,
                format!("a frame of type 0x{kind:x} on a request stream"),
            )),
        })
    }

    /// The final response's head (its status) has been read.
    pub fn has_head(&self) -> bool {
        self.stage != Stage::Head
    }

    /// The stream ended (the server's FIN): the response, or why it is not
    /// whole.
    pub fn finish(self) -> Result<Response, H3Error> {
        if self.stage == Stage::Head || !self.frames.at_boundary() {
            return Err(H3Error::new(REQUEST_INCOMPLETE, "the stream ended inside a response"));
        }
        if self.content_length.is_some_and(|length| length != self.body_bytes) {
            return Err(H3Error::new(
                MESSAGE_ERROR,
                format!(
                    "a body of {} bytes, not its content-length {}",
                    self.body_bytes,
                    self.content_length.unwrap_or_default()
                ),
            ));
        }
        Ok(Response { status: self.status, body_bytes: self.body_bytes, captured: self.captured })
    }
}

/// What pace needs of a response's HEADERS.
struct Head {
    status: u16,
    content_length: Option<u64>,
    fields: Vec<(String, String)>,
}

impl Head {
    /// The status must come first, once, as three digits (RFC 9114,
    /// section 4.3.2); a response's only pseudo-field is `:status`.
    fn decode(block: &[u8], keep: bool) -> Result<Head, H3Error> {
        let malformed =
            |why: &str| H3Error::new(MESSAGE_ERROR, format!("a malformed response: {why}"));
        let mut status = None;
        let mut content_length = None;
        let mut fields = Vec::new();
        let mut error = None;
        let mut regular_seen = false;
        qpack::decode(block, &mut |name, value| {
            if error.is_some() {
                return;
            }
            if name == b":status" {
                let digits = value.len() == 3 && value.iter().all(u8::is_ascii_digit);
                if status.is_some() || regular_seen || !digits {
                    error =
                        Some(malformed("a :status that is not one three-digit pseudo-field first"));
                    return;
                }
                status = std::str::from_utf8(value).ok().and_then(|v| v.parse::<u16>().ok());
                return;
            }
            if name.starts_with(b":") {
                error = Some(malformed("a pseudo-field other than :status"));
                return;
            }
            regular_seen = true;
            if name == b"content-length" {
                match std::str::from_utf8(value).ok().and_then(|v| v.parse::<u64>().ok()) {
                    Some(length) if content_length.is_none_or(|seen| seen == length) => {
                        content_length = Some(length)
                    }
                    _ => error = Some(malformed("a bad or repeated content-length")),
                }
            }
            if keep {
                fields.push((
                    String::from_utf8_lossy(name).into_owned(),
                    String::from_utf8_lossy(value).into_owned(),
                ));
            }
        })?;
        if let Some(error) = error {
            return Err(error);
        }
        let status = status.ok_or_else(|| malformed("no :status"))?;
        Ok(Head { status, content_length, fields })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http3::error::QPACK_DECOMPRESSION_FAILED;

    fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        qpack::encode(fields.iter().map(|&(n, v)| (n.as_bytes(), v.as_bytes())), &mut block);
        let mut out = Vec::new();
        frame::frame(frame::HEADERS, &block, &mut out);
        out
    }

    fn data(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame::frame(frame::DATA, body, &mut out);
        out
    }

    fn read(stream: &[u8], capture: bool) -> Result<Response, H3Error> {
        let mut reader = ResponseReader::new(capture);
        for byte in stream.chunks(1) {
            reader.feed(byte)?;
        }
        reader.finish()
    }

    #[test]
    fn a_response_with_informational_heads_body_and_trailers() {
        let stream = [
            headers(&[(":status", "103"), ("link", "</s.css>")]),
            headers(&[(":status", "200"), ("content-length", "11"), ("x-pace", "1")]),
            data(b"hello "),
            data(b""),
            data(b"world"),
            headers(&[("x-checksum", "0")]),
        ]
        .concat();
        let response = read(&stream, true).unwrap();
        assert_eq!((response.status, response.body_bytes), (200, 11));
        let captured = response.captured.unwrap();
        assert_eq!(captured.body, b"hello world");
        assert_eq!(
            captured.headers,
            [("content-length".to_string(), "11".to_string()), ("x-pace".into(), "1".into())]
        );
        let response = read(&stream, false).unwrap();
        assert_eq!((response.status, response.captured), (200, None));
        // A response without a body.
        assert_eq!(read(&headers(&[(":status", "204")]), false).unwrap().status, 204);
    }

    #[test]
    fn what_a_server_gets_wrong_has_its_code() {
        let ok = headers(&[(":status", "200")]);
        let cases: [(Vec<u8>, u64); 12] = [
            (data(b"x"), FRAME_UNEXPECTED),
            ([ok.clone(), headers(&[]), data(b"x")].concat(), FRAME_UNEXPECTED),
            ([ok.clone(), headers(&[]), headers(&[])].concat(), FRAME_UNEXPECTED),
            ([ok.clone(), headers(&[(":status", "200")])].concat(), MESSAGE_ERROR),
            (headers(&[("x", "1")]), MESSAGE_ERROR),
            (headers(&[(":status", "2000")]), MESSAGE_ERROR),
            (headers(&[("x", "1"), (":status", "200")]), MESSAGE_ERROR),
            (headers(&[(":status", "200"), (":path", "/")]), MESSAGE_ERROR),
            (
                [headers(&[(":status", "200"), ("content-length", "2")]), data(b"abc")].concat(),
                MESSAGE_ERROR,
            ),
            (
                [headers(&[(":status", "200"), ("content-length", "4")]), data(b"abc")].concat(),
                MESSAGE_ERROR,
            ),
            (
                [ok.clone(), {
                    let mut f = Vec::new();
                    frame::frame(frame::SETTINGS, b"", &mut f);
                    f
                }]
                .concat(),
                FRAME_UNEXPECTED,
            ),
            (
                [ok.clone(), {
                    let mut f = Vec::new();
                    frame::frame(frame::PUSH_PROMISE, b"\x00", &mut f);
                    f
                }]
                .concat(),
                ID_ERROR,
            ),
        ];
        for (stream, code) in cases {
            let e = read(&stream, true).unwrap_err();
            assert_eq!(e.code, code, "{stream:02x?}: {e}");
        }
        // The stream ends before the final HEADERS, or inside a frame.
        assert_eq!(
            read(&headers(&[(":status", "100")]), false).unwrap_err().code,
            REQUEST_INCOMPLETE
        );
        assert_eq!(read(&ok[..ok.len() - 1], false).unwrap_err().code, REQUEST_INCOMPLETE);
        assert_eq!(
            read(&[ok.clone(), vec![0x00]].concat(), false).unwrap_err().code,
            REQUEST_INCOMPLETE
        );
        // A field section that refers to a dynamic table.
        let dynamic = [0x01, 0x02, 0x01, 0x00];
        assert_eq!(read(&dynamic, false).unwrap_err().code, QPACK_DECOMPRESSION_FAILED);
    }
}
