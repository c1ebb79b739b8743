//! HTTP/3's frames and QPACK (`http3/`) on a peer's bytes: a stream read by
//! `FrameReader` whole and cut at random points, each HEADERS frame's field
//! section decoded, SETTINGS and GOAWAY parsed.

use super::input::{cut, Input};
use crate::http3::error::H3Error;
use crate::http3::frame::{self, FrameReader, Piece};
use crate::http3::qpack;
use crate::http3::response::{Response, ResponseReader};
use crate::http3::streams::{Control, PeerStreams};

/// What a reader handed out for a stream: DATA joined into one piece per
/// run, other frames as (type, payload); and the error it ended with.
type Read = (Vec<(u64, Vec<u8>)>, Option<H3Error>);

fn read(pieces: &[&[u8]], limit: usize) -> Read {
    let mut reader = FrameReader::new(limit);
    let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut in_data = false;
    for piece in pieces {
        let result = reader.feed(piece, &mut |piece| {
            match piece {
                Piece::Data(bytes) => {
                    assert!(!bytes.is_empty(), "an empty DATA piece");
                    match out.last_mut() {
                        Some((frame::DATA, data)) if in_data => data.extend_from_slice(bytes),
                        _ => out.push((frame::DATA, bytes.to_vec())),
                    }
                    in_data = true;
                }
                Piece::Frame { kind, payload } => {
                    assert!(payload.len() <= limit, "a frame beyond the limit was buffered");
                    out.push((kind, payload.to_vec()));
                    in_data = false;
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            return (out, Some(e));
        }
    }
    (out, None)
}

/// The stream read as a response to one request, in these pieces.
fn response(pieces: &[&[u8]]) -> Result<Response, H3Error> {
    let mut reader = ResponseReader::new(true);
    for piece in pieces {
        reader.feed(piece)?;
    }
    reader.finish()
}

/// The stream read as the peer's control stream, in these pieces.
fn control(pieces: &[&[u8]]) -> (Vec<Control>, Option<H3Error>) {
    let mut streams = PeerStreams::default();
    let mut stream = streams.open();
    let mut said = Vec::new();
    for piece in [&[0x00][..]].iter().chain(pieces) {
        if let Err(e) = streams.feed(&mut stream, piece, &mut |c| said.push(c)) {
            return (said, Some(e));
        }
    }
    (said, None)
}

/// A field section's fields: (name, value) in their order.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The fields of a field section, or its error.
fn fields(block: &[u8]) -> Result<Fields, H3Error> {
    let mut fields = Vec::new();
    qpack::decode(block, &mut |name, value| fields.push((name.to_vec(), value.to_vec())))?;
    Ok(fields)
}

/// The input: byte 0 picks the reader's limit (16 << (n mod 8) bytes),
/// then cut points, then the stream. Checks: no panic; the stream reads
/// the same whole and cut (the same pieces, the same error); DATA pieces
/// are never empty and no other frame beyond the limit is buffered; a
/// field section that decodes encodes back (pace's encoder) to one that
/// decodes to the same fields; SETTINGS and GOAWAY parse or fail in words;
/// read as a response and as a control stream, the stream gives the same
/// whole and cut (the same response or error, the same settings and
/// GOAWAYs).
pub fn http3_frames(data: &[u8]) {
    let mut input = Input::new(data);
    let limit = 16usize << (input.byte() % 8);
    let cuts = input.cuts();
    let stream = input.rest();
    let whole = read(&[stream], limit);
    let pieces = cut(stream, &cuts);
    let cut_read = read(&pieces, limit);
    assert_eq!(cut_read, whole, "the stream reads differently cut at {cuts:?}");
    assert_eq!(response(&pieces), response(&[stream]), "a response cut at {cuts:?}");
    assert_eq!(control(&pieces), control(&[stream]), "a control stream cut at {cuts:?}");
    for (kind, payload) in &whole.0 {
        match *kind {
            frame::HEADERS => {
                if let Ok(fields) = fields(payload) {
                    let mut again = Vec::new();
                    qpack::encode(fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut again);
                    assert_eq!(self::fields(&again).ok(), Some(fields), "re-encoded");
                }
            }
            frame::SETTINGS => {
                let _ = frame::parse_settings(payload);
            }
            frame::GOAWAY => {
                let _ = frame::parse_goaway(payload);
            }
            _ => {}
        }
    }
}
