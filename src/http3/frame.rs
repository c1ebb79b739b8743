//! HTTP/3 frames (RFC 9114, section 7): type and length as variable-length
//! integers, then the payload. [`FrameReader`] takes a stream's bytes as
//! they come, in pieces of any size, and hands out DATA payloads as they
//! arrive (a body is never buffered) and every other frame whole; frames of
//! unknown types, which a peer may send anywhere (section 9), are skipped
//! unread. What each stream may carry is its reader's caller's business.

use super::error::{H3Error, EXCESSIVE_LOAD, FRAME_ERROR, SETTINGS_ERROR};
use super::varint;

pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const CANCEL_PUSH: u64 = 0x3;
pub const SETTINGS: u64 = 0x4;
pub const PUSH_PROMISE: u64 = 0x5;
pub const GOAWAY: u64 = 0x7;
pub const MAX_PUSH_ID: u64 = 0xd;

/// Frame types of HTTP/2 that HTTP/3 reserves: receiving one is an error.
pub const RESERVED_HTTP2: [u64; 4] = [0x2, 0x6, 0x8, 0x9];

/// Unidirectional stream types (section 6.2).
pub const CONTROL_STREAM: u64 = 0x00;
pub const PUSH_STREAM: u64 = 0x01;
pub const QPACK_ENCODER_STREAM: u64 = 0x02;
pub const QPACK_DECODER_STREAM: u64 = 0x03;

/// The setting pace reads (section 7.2.4.1); QPACK's two (RFC 9204,
/// section 5) stay at their default 0, so neither side sends them.
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x6;

/// Whether frames of this type have a meaning to pace (the others are
/// extensions or reserved types, skipped).
fn known(kind: u64) -> bool {
    matches!(kind, DATA | HEADERS | CANCEL_PUSH | SETTINGS | PUSH_PROMISE | GOAWAY | MAX_PUSH_ID)
        || RESERVED_HTTP2.contains(&kind)
}

/// A piece of a stream, as [`FrameReader::feed`] hands it out.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Part of a DATA frame's payload (in order; a frame may come in
    /// several pieces).
    Data(&'a [u8]),
    /// A whole frame of another known type.
    Frame { kind: u64, payload: &'a [u8] },
}

/// Reads the frames of one stream.
#[derive(Debug)]
pub struct FrameReader {
    /// The type and length of a frame read so far (two varints: at most
    /// 16 bytes), and how many of them.
    header: [u8; 16],
    header_len: usize,
    /// The frame being read, once its header is complete.
    current: Option<Current>,
    /// The payload of a buffered frame.
    payload: Vec<u8>,
    /// The largest frame other than DATA it buffers.
    limit: usize,
}

#[derive(Clone, Copy, Debug)]
struct Current {
    kind: u64,
    remaining: u64,
}

impl FrameReader {
    /// A reader that refuses frames other than DATA longer than `limit`
    /// bytes (a field section, SETTINGS): a peer could otherwise make it
    /// hold any amount of memory.
    pub fn new(limit: usize) -> FrameReader {
        FrameReader { header: [0; 16], header_len: 0, current: None, payload: Vec::new(), limit }
    }

    /// Whether it stands between frames (a stream may end only there).
    pub fn at_boundary(&self) -> bool {
        self.header_len == 0 && self.current.is_none()
    }

    /// Reads `input`, handing each piece to `piece` as it is complete;
    /// stops at the first error, its own or `piece`'s.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        piece: &mut dyn FnMut(Piece<'_>) -> Result<(), H3Error>,
    ) -> Result<(), H3Error> {
        loop {
            let Some(current) = self.current else {
                if input.is_empty() {
                    return Ok(());
                }
                let used = self.read_header(input)?;
                input = &input[used..];
                continue;
            };
            let available =
                input.len().min(usize::try_from(current.remaining).unwrap_or(usize::MAX));
            let (chunk, rest) = input.split_at(available);
            input = rest;
            let remaining = current.remaining - chunk.len() as u64;
            self.current = Some(Current { remaining, ..current });
            match current.kind {
                DATA if !chunk.is_empty() => piece(Piece::Data(chunk))?,
                DATA => {}
                kind if known(kind) => self.payload.extend_from_slice(chunk),
                _ => {}
            }
            if remaining > 0 {
                return Ok(());
            }
            self.current = None;
            if current.kind != DATA && known(current.kind) {
                let payload = std::mem::take(&mut self.payload);
                let result = piece(Piece::Frame { kind: current.kind, payload: &payload });
                self.payload = payload;
                self.payload.clear();
                result?;
            }
        }
    }

    /// Takes header bytes from `input` until the type and length are
    /// complete: how many it used.
    fn read_header(&mut self, input: &[u8]) -> Result<usize, H3Error> {
        let before = self.header_len;
        let take = input.len().min(16 - before);
        self.header[before..before + take].copy_from_slice(&input[..take]);
        self.header_len += take;
        let header = &self.header[..self.header_len];
        let Some((kind, kind_len)) = varint::decode(header) else {
            return Ok(take);
        };
        let Some((length, length_len)) = varint::decode(&header[kind_len..]) else {
            return Ok(take);
        };
        let header_len = kind_len + length_len;
        if kind != DATA && known(kind) && length > self.limit as u64 {
            return Err(H3Error::new(
                EXCESSIVE_LOAD,
                format!(
                    "a frame of type 0x{kind:x} of {length} bytes, more than the {} allowed",
                    self.limit
                ),
            ));
        }
        self.header_len = 0;
        self.current = Some(Current { kind, remaining: length });
        Ok(header_len - before)
    }
}

/// Appends a frame's header: its type and the length of its payload.
pub fn header(kind: u64, length: u64, out: &mut Vec<u8>) {
    varint::encode(kind, out);
    varint::encode(length, out);
}

/// Appends a whole frame.
pub fn frame(kind: u64, payload: &[u8], out: &mut Vec<u8>) {
    header(kind, payload.len() as u64, out);
    out.extend_from_slice(payload);
}

/// The settings of a SETTINGS frame's payload, as (identifier, value) in
/// their order; Err when it is malformed, repeats an identifier or holds
/// one of HTTP/2's settings, which HTTP/3 forbids (section 7.2.4.1).
pub fn parse_settings(payload: &[u8]) -> Result<Vec<(u64, u64)>, H3Error> {
    let mut settings: Vec<(u64, u64)> = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let truncated = || H3Error::new(FRAME_ERROR, "a SETTINGS frame ends inside a setting");
        let (id, used) = varint::decode(rest).ok_or_else(truncated)?;
        let (value, used2) = varint::decode(&rest[used..]).ok_or_else(truncated)?;
        rest = &rest[used + used2..];
        if (0x2..=0x5).contains(&id) {
            return Err(H3Error::new(
                SETTINGS_ERROR,
                format!("HTTP/2's setting 0x{id:x} in SETTINGS"),
            ));
        }
        if settings.iter().any(|&(seen, _)| seen == id) {
            return Err(H3Error::new(
                SETTINGS_ERROR,
                format!("setting 0x{id:x} twice in SETTINGS"),
            ));
        }
        settings.push((id, value));
    }
    Ok(settings)
}

/// The stream (or push) id of a GOAWAY frame's payload.
pub fn parse_goaway(payload: &[u8]) -> Result<u64, H3Error> {
    match varint::decode(payload) {
        Some((id, used)) if used == payload.len() => Ok(id),
        _ => Err(H3Error::new(FRAME_ERROR, "a GOAWAY frame that is not one integer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything `reader` hands out for `input` fed in pieces of `step`
    /// bytes: DATA joined per run of pieces, other frames as (kind, payload).
    fn read(input: &[u8], step: usize, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, H3Error> {
        let mut reader = FrameReader::new(limit);
        let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut in_data = false;
        for chunk in input.chunks(step.max(1)) {
            reader.feed(chunk, &mut |piece| {
                match piece {
                    Piece::Data(bytes) => match out.last_mut() {
                        Some((DATA, data)) if in_data => data.extend_from_slice(bytes),
                        _ => {
                            out.push((DATA, bytes.to_vec()));
                            in_data = true;
                        }
                    },
                    Piece::Frame { kind, payload } => {
                        out.push((kind, payload.to_vec()));
                        in_data = false;
                    }
                }
                Ok(())
            })?;
        }
        assert!(reader.at_boundary(), "ends between frames");
        Ok(out)
    }

    fn stream() -> Vec<u8> {
        let mut out = Vec::new();
        frame(HEADERS, b"\x00\x00\xd9", &mut out);
        frame(0x21, b"an unknown frame, skipped", &mut out); // reserved: 0x1f * 0 + 0x21
        header(DATA, 300, &mut out);
        out.extend((0..300).map(|i| i as u8));
        frame(DATA, b"", &mut out);
        frame(HEADERS, b"\x00\x00", &mut out); // trailers
        out
    }

    #[test]
    fn frames_read_the_same_whole_and_in_pieces() {
        let input = stream();
        let whole = read(&input, input.len(), 1024).unwrap();
        let body: Vec<u8> = (0..300).map(|i| i as u8).collect();
        assert_eq!(
            whole,
            vec![
                (HEADERS, b"\x00\x00\xd9".to_vec()),
                (DATA, body),
                (HEADERS, b"\x00\x00".to_vec())
            ]
        );
        for step in [1, 2, 3, 7, 64] {
            assert_eq!(read(&input, step, 1024).unwrap(), whole, "in pieces of {step}");
        }
    }

    #[test]
    fn a_frame_beyond_the_limit_is_refused_before_it_is_read() {
        let mut input = Vec::new();
        header(HEADERS, 1 << 20, &mut input);
        let e = read(&input, 1, 64 * 1024).unwrap_err();
        assert_eq!(e.code, EXCESSIVE_LOAD, "{e}");
        // DATA and unknown frames of any length go through unbuffered.
        let mut input = Vec::new();
        header(0x21, 100_000, &mut input);
        input.resize(input.len() + 100_000, 0);
        assert_eq!(read(&input, 4096, 16).unwrap(), vec![]);
    }

    #[test]
    fn settings_and_goaway_parse_and_bad_ones_are_refused() {
        let mut payload = Vec::new();
        for (id, value) in [(SETTINGS_MAX_FIELD_SECTION_SIZE, 16_384), (0x21, 7)] {
            varint::encode(id, &mut payload);
            varint::encode(value, &mut payload);
        }
        assert_eq!(parse_settings(&payload).unwrap(), vec![(0x6, 16_384), (0x21, 7)]);
        assert_eq!(parse_settings(&[]).unwrap(), vec![]);
        assert_eq!(parse_settings(&[0x06]).unwrap_err().code, FRAME_ERROR);
        assert_eq!(parse_settings(&[0x02, 0x00]).unwrap_err().code, SETTINGS_ERROR);
        assert_eq!(parse_settings(&[0x06, 0x01, 0x06, 0x02]).unwrap_err().code, SETTINGS_ERROR);
        assert_eq!(parse_goaway(&[0x40, 0x10]).unwrap(), 16);
        assert_eq!(parse_goaway(&[0x04, 0x00]).unwrap_err().code, FRAME_ERROR);
        assert_eq!(parse_goaway(&[]).unwrap_err().code, FRAME_ERROR);
    }

    #[test]
    fn an_error_of_the_caller_stops_the_reading() {
        let mut reader = FrameReader::new(1024);
        let input = stream();
        let mut seen = 0;
        let e = reader
            .feed(&input, &mut |_| {
                seen += 1;
                Err(H3Error::new(FRAME_ERROR, "no"))
            })
            .unwrap_err();
        assert_eq!((seen, e.code), (1, FRAME_ERROR));
    }
}
