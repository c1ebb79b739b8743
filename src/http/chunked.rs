//! The chunked transfer coding (RFC 9112 §7.1), decoded as the bytes
//! arrive, in whatever pieces: the one decoder behind the client's response
//! bodies, the request counter's pipelined requests and the built-in
//! server's request bodies.
//!
//! As strict as http_parser (what wrk uses) and httparse: a chunk-size line
//! starts with a hex digit and ends with CRLF, chunk data is followed by
//! exactly CRLF. Between the size and the CRLF, spaces and tabs may come
//! before the `;` that starts the extensions, which are skipped (any byte
//! but CR and LF). The trailer section is parsed like a header block, by
//! httparse, and handed to the [`Sink`].
//!
//! Bounded against a hostile peer: a chunk size must stay below `u64::MAX`
//! (as in http_parser; leading zeros are fine), a chunk-size line is at most
//! 64 KiB with its extensions, the trailer section at most 64 KiB and 100
//! fields. Chunk data is never buffered; only a trailer section split across
//! inputs is gathered (a section that is just the final CRLF never is).

use httparse::Status;

use super::block::{first_error_at, gather};
use super::{MAX_BLOCK_BYTES, MAX_HEADERS};

/// Decodes one chunked body. Call [`decode`](Self::decode) with each piece
/// of input until it says the body is complete.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ChunkedDecoder {
    state: State,
    /// Bytes of the current chunk-size line so far.
    line_length: usize,
    /// The start of a trailer section that one input did not complete.
    partial: Vec<u8>,
}

/// Where in the body the next byte belongs. The chunk-size line states carry
/// the size read so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a chunk-size line: a hex digit must come.
    #[default]
    SizeStart,
    /// In the hex digits of the chunk size.
    Size(u64),
    /// After the digits: spaces and tabs until `;` or CR.
    AfterSize(u64),
    /// In the chunk extensions, skipped until CR.
    Extensions(u64),
    /// After the CR of a chunk-size line: LF must come.
    SizeLf(u64),
    /// In chunk data with this many bytes left (never 0).
    Data(u64),
    /// After chunk data: CR must come.
    DataCr,
    /// After chunk data and CR: LF must come.
    DataLf,
    /// In the trailer section after the last chunk.
    Trailers,
    /// The body is complete.
    Done,
}

/// What one call of [`ChunkedDecoder::decode`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// How many bytes of the input belong to the body; the rest (once it is
    /// complete) belongs to whatever follows it.
    pub consumed: usize,
    /// The body is complete, trailer section included.
    pub done: bool,
}

/// Why the input is not a chunked body, and where it stopped making sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkedError {
    pub kind: ChunkedErrorKind,
    /// The offset in the input of the byte at which decoding stopped (0 if
    /// that byte came in an earlier input).
    pub at: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkedErrorKind {
    /// No hex digit, another byte where only the grammar's may come, or a
    /// size of `u64::MAX` or more.
    BadChunkSize,
    /// A chunk-size line longer than 64 KiB.
    ChunkLineTooLong,
    /// Chunk data not followed by CRLF.
    BadChunkDataEnd,
    /// The trailer section is not header fields (or more than 100).
    MalformedTrailer(httparse::Error),
    /// A trailer section longer than 64 KiB.
    TrailersTooLarge,
}

/// Where a decoder puts what it decodes.
pub trait Sink {
    /// The next piece of chunk data.
    fn data(&mut self, data: &[u8]);

    /// The trailer fields, once the section is complete (not called when it
    /// is empty).
    fn trailers(&mut self, _fields: &[httparse::Header<'_>]) {}
}

/// A sink that keeps nothing.
pub struct Discard;

impl Sink for Discard {
    fn data(&mut self, _data: &[u8]) {}
}

/// The de-chunked data; trailers are dropped.
impl Sink for Vec<u8> {
    fn data(&mut self, data: &[u8]) {
        self.extend_from_slice(data);
    }
}

/// A sink that may not be there.
impl<S: Sink> Sink for Option<S> {
    fn data(&mut self, data: &[u8]) {
        if let Some(sink) = self {
            sink.data(data);
        }
    }

    fn trailers(&mut self, fields: &[httparse::Header<'_>]) {
        if let Some(sink) = self {
            sink.trailers(fields);
        }
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn data(&mut self, data: &[u8]) {
        (**self).data(data);
    }

    fn trailers(&mut self, fields: &[httparse::Header<'_>]) {
        (**self).trailers(fields);
    }
}

impl ChunkedDecoder {
    pub fn new() -> ChunkedDecoder {
        ChunkedDecoder::default()
    }

    /// Gets ready for a new body, keeping the trailer buffer's capacity.
    pub fn reset(&mut self) {
        self.state = State::SizeStart;
        self.line_length = 0;
        self.partial.clear();
    }

    /// Decodes bytes from the start of `input`, passing chunk data and
    /// trailers to `sink`. It uses all of `input` unless the body ends
    /// before; after an error the decoder is unusable until reset.
    pub fn decode(&mut self, input: &[u8], mut sink: impl Sink) -> Result<Decoded, ChunkedError> {
        let mut at = 0;
        while at < input.len() && self.state != State::Done {
            let rest = &input[at..];
            let used = match self.state {
                State::Data(left) => {
                    let used =
                        usize::try_from(left).map_or(rest.len(), |left| left.min(rest.len()));
                    sink.data(&rest[..used]);
                    self.state = match left - used as u64 {
                        0 => State::DataCr,
                        left => State::Data(left),
                    };
                    used
                }
                State::Trailers => self
                    .trailers(rest, &mut sink)
                    .map_err(|error| ChunkedError { at: at + error.at, ..error })?,
                _ => {
                    self.state =
                        self.next_state(rest[0]).map_err(|kind| ChunkedError { kind, at })?;
                    1
                }
            };
            at += used;
        }
        Ok(Decoded { consumed: at, done: self.state == State::Done })
    }

    /// The state after one byte of a chunk-size line or of the CRLF after
    /// chunk data.
    fn next_state(&mut self, byte: u8) -> Result<State, ChunkedErrorKind> {
        use ChunkedErrorKind::{BadChunkDataEnd, BadChunkSize, ChunkLineTooLong};
        let next = match (self.state, byte) {
            (State::DataCr, b'\r') => return Ok(State::DataLf),
            (State::DataLf, b'\n') => return Ok(State::SizeStart),
            (State::DataCr | State::DataLf, _) => return Err(BadChunkDataEnd),
            (State::SizeStart, _) => State::Size(hex_digit(byte).ok_or(BadChunkSize)?),
            (State::Size(size) | State::AfterSize(size), b' ' | b'\t') => State::AfterSize(size),
            (State::Size(size) | State::AfterSize(size), b';') => State::Extensions(size),
            (State::Size(size) | State::AfterSize(size) | State::Extensions(size), b'\r') => {
                State::SizeLf(size)
            }
            (State::Size(size), _) => {
                State::Size(append_hex_digit(size, byte).ok_or(BadChunkSize)?)
            }
            (State::Extensions(_), b'\n') => return Err(BadChunkSize),
            (State::Extensions(size), _) => State::Extensions(size),
            (State::SizeLf(0), b'\n') => State::Trailers,
            (State::SizeLf(size), b'\n') => State::Data(size),
            _ => return Err(BadChunkSize),
        };
        self.line_length += 1;
        if self.line_length > MAX_BLOCK_BYTES {
            return Err(ChunkLineTooLong);
        }
        if matches!(next, State::Data(_) | State::Trailers) {
            self.line_length = 0;
        }
        Ok(next)
    }

    /// Reads the trailer section from the start of `input`; returns how many
    /// bytes it used (the state moves to `Done` once the section is).
    fn trailers(&mut self, input: &[u8], sink: &mut impl Sink) -> Result<usize, ChunkedError> {
        // Nearly every chunked body ends without trailers.
        if self.partial.is_empty() && input.starts_with(b"\r\n") {
            self.state = State::Done;
            return Ok(2);
        }
        let held = self.partial.len();
        let too_large = ChunkedError { kind: ChunkedErrorKind::TrailersTooLarge, at: 0 };
        let (used, section) =
            gather(&mut self.partial, input, too_large, |block| parse_trailers(block, sink))
                .map_err(|error| ChunkedError { at: error.at.saturating_sub(held), ..error })?;
        if section.is_some() {
            self.state = State::Done;
        }
        Ok(used)
    }
}

/// Parses a trailer section (header fields, then an empty line) from the
/// start of `block`: its length once complete. Errors are located in
/// `block`.
fn parse_trailers(block: &[u8], sink: &mut impl Sink) -> Result<Option<(usize, ())>, ChunkedError> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match httparse::parse_headers(block, &mut slots) {
        Ok(Status::Complete((length, fields))) => {
            if !fields.is_empty() {
                sink.trailers(fields);
            }
            Ok(Some((length, ())))
        }
        Ok(Status::Partial) => Ok(None),
        Err(error) => {
            let at = first_error_at(block, |prefix| {
                httparse::parse_headers(prefix, &mut [httparse::EMPTY_HEADER; MAX_HEADERS]).is_err()
            });
            Err(ChunkedError { kind: ChunkedErrorKind::MalformedTrailer(error), at })
        }
    }
}

fn hex_digit(byte: u8) -> Option<u64> {
    char::from(byte).to_digit(16).map(u64::from)
}

/// `size` with one more hex digit, if that is a hex digit and the size stays
/// below `u64::MAX`.
fn append_hex_digit(size: u64, byte: u8) -> Option<u64> {
    let size = size.checked_mul(16)?.checked_add(hex_digit(byte)?)?;
    (size < u64::MAX).then_some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that keeps data and trailers, to check both.
    #[derive(Debug, Default, PartialEq, Eq)]
    struct Kept {
        data: Vec<u8>,
        trailers: Vec<(String, String)>,
    }

    impl Sink for Kept {
        fn data(&mut self, data: &[u8]) {
            self.data.extend_from_slice(data);
        }

        fn trailers(&mut self, fields: &[httparse::Header<'_>]) {
            self.trailers.extend(fields.iter().map(|field| {
                (field.name.to_string(), String::from_utf8_lossy(field.value).into_owned())
            }));
        }
    }

    /// Feeds `pieces` in order, which must complete the body; returns what
    /// was kept and the bytes consumed, or the first error (its offset
    /// counted from the start of all the input).
    fn decode(pieces: &[&[u8]]) -> Result<(Kept, usize), ChunkedError> {
        let mut decoder = ChunkedDecoder::new();
        let mut kept = Kept::default();
        let mut offset = 0;
        for piece in pieces {
            let decoded = decoder
                .decode(piece, &mut kept)
                .map_err(|error| ChunkedError { at: offset + error.at, ..error })?;
            offset += decoded.consumed;
            if decoded.done {
                return Ok((kept, offset));
            }
            assert_eq!(decoded.consumed, piece.len(), "an incomplete body uses all its input");
        }
        panic!("incomplete body");
    }

    fn decode_whole(body: &[u8]) -> Result<(Kept, usize), ChunkedError> {
        decode(&[body])
    }

    fn error_kind(body: &[u8]) -> ChunkedErrorKind {
        decode_whole(body).unwrap_err().kind
    }

    /// Incomplete: the decoder used everything and wants more.
    fn incomplete(body: &[u8]) -> bool {
        let mut decoder = ChunkedDecoder::new();
        decoder.decode(body, Discard) == Ok(Decoded { consumed: body.len(), done: false })
    }

    const BODY: &[u8] = b"5\r\nhello\r\n7;ext=1;q=\"a b\"\r\n, world\r\n\
        1 \t; x\r\n!\r\n00000000000000000\r\nX-Trailer: t\r\nOther: u v\r\n\r\nNEXT";

    fn expected() -> Kept {
        let trailers = [("X-Trailer", "t"), ("Other", "u v")];
        Kept {
            data: b"hello, world!".to_vec(),
            trailers: trailers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn decodes_extensions_and_trailers_and_stops_at_the_end() {
        assert_eq!(decode_whole(BODY), Ok((expected(), BODY.len() - 4)));
    }

    #[test]
    fn every_split_gives_the_same_result() {
        for first in 0..=BODY.len() {
            for second in first..=BODY.len() {
                let pieces = [&BODY[..first], &BODY[first..second], &BODY[second..]];
                assert_eq!(decode(&pieces), Ok((expected(), BODY.len() - 4)), "{first} {second}");
            }
        }
        let bytes: Vec<&[u8]> = BODY.chunks(1).collect();
        assert_eq!(decode(&bytes), Ok((expected(), BODY.len() - 4)));
    }

    #[test]
    fn last_chunk_without_trailers() {
        let (kept, consumed) = decode_whole(b"0\r\n\r\nGET").unwrap();
        assert_eq!((kept, consumed), (Kept::default(), 5));
        for split in 0..=5 {
            let body = b"0\r\n\r\n";
            let (_, consumed) = decode(&[&body[..split], &body[split..]]).unwrap();
            assert_eq!(consumed, 5);
        }
    }

    #[test]
    fn done_is_final() {
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.decode(b"0\r\n\r\n", Discard), Ok(Decoded { consumed: 5, done: true }));
        assert_eq!(decoder.decode(b"1\r\n", Discard), Ok(Decoded { consumed: 0, done: true }));
        decoder.reset();
        assert_eq!(decoder.decode(b"1\r\n", Discard), Ok(Decoded { consumed: 3, done: false }));
    }

    #[test]
    fn sizes_at_and_beyond_the_u64_limit_are_errors() {
        let largest = b"fffffffffffffffe\r\n";
        assert!(incomplete(largest));
        let mut decoder = ChunkedDecoder::new();
        decoder.decode(largest, Discard).unwrap();
        assert_eq!(decoder.state, State::Data(u64::MAX - 1));
        assert!(incomplete(b"000000000000000000000000fffffffffffffffe\r\n"));
        for size in [&b"ffffffffffffffff"[..], b"10000000000000000", b"12345678901234567"] {
            let mut body = size.to_vec();
            body.extend(b"\r\n");
            let error = decode_whole(&body).unwrap_err();
            assert_eq!(error.kind, ChunkedErrorKind::BadChunkSize);
            assert_eq!(error.at, size.len() - 1, "stops at the digit that overflows");
        }
    }

    #[test]
    fn large_chunks_stream_through() {
        let mut decoder = ChunkedDecoder::new();
        decoder.decode(b"100000000\r\n", Discard).unwrap();
        let block = vec![b'x'; 1 << 20];
        for _ in 0..4096 {
            let decoded = decoder.decode(&block, Discard).unwrap();
            assert_eq!(decoded, Decoded { consumed: block.len(), done: false });
        }
        let decoded = decoder.decode(b"\r\n0\r\n\r\n", Discard).unwrap();
        assert_eq!(decoded, Decoded { consumed: 7, done: true });
        assert_eq!(decoder.partial.capacity(), 0);
    }

    #[test]
    fn malformed_size_lines() {
        for (body, at) in [
            (&b"\r\n"[..], 0),
            (b"x\r\n", 0),
            (b" 1\r\n", 0),
            (b";x\r\n", 0),
            (b"1g\r\n", 1),
            (b"1 2\r\n", 2),
            (b"1\n", 1),
            (b"1\rx", 2),
            (b"1;ext\nx\r\n", 5),
            (b"1;ext\rx", 6),
            (b"-1\r\n", 0),
            (b"0x1\r\n", 1),
        ] {
            let error = decode_whole(body).unwrap_err();
            let expected = ChunkedError { kind: ChunkedErrorKind::BadChunkSize, at };
            assert_eq!(error, expected, "{:?}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn chunk_data_must_end_with_crlf() {
        for (body, at) in [(&b"3\r\nabcX"[..], 6), (b"3\r\nabc\rX", 7), (b"3\r\nabc\n\r", 6)] {
            let error = decode_whole(body).unwrap_err();
            assert_eq!(error, ChunkedError { kind: ChunkedErrorKind::BadChunkDataEnd, at });
        }
    }

    #[test]
    fn malformed_trailers_say_where() {
        let error = decode_whole(b"0\r\nGood: 1\r\nBad Name: 2\r\n\r\n").unwrap_err();
        assert_eq!(error.kind, ChunkedErrorKind::MalformedTrailer(httparse::Error::HeaderName));
        assert_eq!(error.at, 3 + 9 + 3, "the space in the name");
        let many = format!("0\r\n{}\r\n", "X: y\r\n".repeat(MAX_HEADERS + 1));
        assert_eq!(
            error_kind(many.as_bytes()),
            ChunkedErrorKind::MalformedTrailer(httparse::Error::TooManyHeaders)
        );
    }

    #[test]
    fn lines_are_bounded() {
        let long_extension = format!("1;{}\r\nx\r\n0\r\n\r\n", "e".repeat(MAX_BLOCK_BYTES));
        let error = decode_whole(long_extension.as_bytes()).unwrap_err();
        assert_eq!(
            error,
            ChunkedError { kind: ChunkedErrorKind::ChunkLineTooLong, at: MAX_BLOCK_BYTES }
        );
        let zeros = vec![b'0'; MAX_BLOCK_BYTES + 1];
        assert_eq!(error_kind(&zeros), ChunkedErrorKind::ChunkLineTooLong);
        let fits = format!("1;{}\r\nx\r\n0\r\n\r\n", "e".repeat(MAX_BLOCK_BYTES - 4));
        assert!(decode_whole(fits.as_bytes()).is_ok());

        let trailer = format!("0\r\nX: {}\r\n\r\n", "v".repeat(MAX_BLOCK_BYTES));
        assert_eq!(error_kind(trailer.as_bytes()), ChunkedErrorKind::TrailersTooLarge);
        let pieces: Vec<&[u8]> = trailer.as_bytes().chunks(1000).collect();
        assert_eq!(decode(&pieces).unwrap_err().kind, ChunkedErrorKind::TrailersTooLarge);
        let endless = format!("0\r\nX: {}", "v".repeat(MAX_BLOCK_BYTES));
        assert_eq!(error_kind(endless.as_bytes()), ChunkedErrorKind::TrailersTooLarge);
    }

    #[test]
    fn incomplete_bodies_want_more() {
        for body in [
            &b""[..],
            b"5",
            b"5;x",
            b"5\r",
            b"5\r\nhel",
            b"5\r\nhello\r",
            b"0\r\n",
            b"0\r\nX: y\r\n",
        ] {
            assert!(incomplete(body), "{:?}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn data_goes_to_the_sink_as_it_arrives() {
        let mut decoder = ChunkedDecoder::new();
        let mut data = Vec::new();
        decoder.decode(b"a\r\nhello", &mut data).unwrap();
        assert_eq!(data, b"hello");
        decoder.decode(b" worl", &mut data).unwrap();
        assert_eq!(data, b"hello worl");
        let mut nothing: Option<Vec<u8>> = None;
        let decoded = decoder.decode(b"\r\n3\r\nabc\r\n0\r\nX: y\r\n\r\n", &mut nothing).unwrap();
        assert_eq!(decoded, Decoded { consumed: 21, done: true });
        assert_eq!(nothing, None);
    }

    /// A small deterministic generator (xorshift64).
    struct Random(u64);

    impl Random {
        fn below(&mut self, bound: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % bound as u64) as usize
        }
    }

    #[test]
    fn corrupted_bodies_never_panic_and_always_progress() {
        let mut random = Random(7);
        for _ in 0..20_000 {
            let mut corrupted = BODY.to_vec();
            for _ in 0..1 + random.below(3) {
                let at = random.below(corrupted.len());
                corrupted[at] = random.below(256) as u8;
            }
            let mut decoder = ChunkedDecoder::new();
            let mut rest = &corrupted[..];
            while !rest.is_empty() {
                let piece = &rest[..1 + random.below(rest.len().min(16))];
                match decoder.decode(piece, Discard) {
                    Ok(Decoded { done: true, consumed }) => {
                        assert!(consumed <= piece.len());
                        break;
                    }
                    Ok(Decoded { consumed, .. }) => assert_eq!(consumed, piece.len()),
                    Err(error) => {
                        assert!(error.at < piece.len());
                        break;
                    }
                }
                rest = &rest[piece.len()..];
            }
        }
    }
}
