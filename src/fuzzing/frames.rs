//! HTTP/2 frames for the fuzz targets: built by hand from choices in the
//! input (the layout of RFC 9113 section 4.1, the frames of section 6,
//! header blocks as RFC 7541 HPACK literals and static-table indices), and
//! read back to check what pace writes.
//!
//! A target's input is a program of [`Op`]s: frames the peer sends (valid
//! ones, so that the fuzzer gets past the connection preface and into
//! streams quickly), raw bytes, and what happens around them (the bytes
//! are read, cut at points; requests go out; time passes; the socket
//! fails; the peer closes). Each choice is a byte resolved against a small
//! table of values that matter (a stream the client opened, a status, a
//! setting at its limits), so that any byte is a meaningful choice.

use super::input::Input;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY_FLAG: u8 = 0x20;

/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What the peer does, read from the input. The fields are choices,
/// resolved when the op is run (a stream id against the streams open by
/// then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// SETTINGS, `flags` bit 0: ACK; each entry a setting and a value.
    Settings {
        flags: u8,
        entries: Vec<[u8; 2]>,
    },
    /// HEADERS starting with `first` (a `:status`, or a request's
    /// pseudo-headers), then `fields`; `flags` see [`headers_frame`].
    Headers {
        stream: u8,
        flags: u8,
        first: u8,
        fields: Vec<u8>,
    },
    /// CONTINUATION of a header block, ending it unless `flags` bit 0.
    Continuation {
        stream: u8,
        flags: u8,
        fields: Vec<u8>,
    },
    /// DATA of a length from [`DATA_LENGTHS`]; `flags` bit 0: END_STREAM,
    /// bit 3: PADDED with `flags >> 4` bytes.
    Data {
        stream: u8,
        flags: u8,
        length: u8,
    },
    RstStream {
        stream: u8,
        code: u8,
    },
    GoAway {
        last: u8,
        code: u8,
    },
    /// PING, `flags` bit 0: ACK.
    Ping {
        flags: u8,
    },
    WindowUpdate {
        stream: u8,
        increment: u8,
    },
    /// Any frame: any type, flags and payload, on a chosen stream.
    Frame {
        kind: u8,
        flags: u8,
        stream: u8,
        payload: Vec<u8>,
    },
    /// Bytes as they are.
    Raw(Vec<u8>),
    /// What the peer sent so far arrives, cut into reads at these points.
    Read {
        cuts: Vec<u16>,
    },
    /// Client: up to `count` batches (or requests again after a GOAWAY)
    /// go out on the tickets held. Server: time passes.
    Submit {
        count: u8,
        choice: u8,
    },
    /// Client: time passes and streams older than a timeout are cancelled.
    /// Server: the clock jumps ahead.
    Expire {
        timeout: u8,
    },
    /// The socket fails: the connection is closed and opened again.
    Fail,
    /// The peer closes its end.
    PeerClose,
}

/// Ops there are (the op byte is taken modulo this).
const OPS: u8 = 15;

/// Entries of a SETTINGS frame, fields of a header block, at most.
const MAX_ITEMS: u8 = 4;

impl Op {
    /// The next op of the input (zeros once it runs out).
    pub fn read(input: &mut Input) -> Op {
        let list = |input: &mut Input| {
            let count = input.byte() % (MAX_ITEMS + 1);
            (0..count).map(|_| input.byte()).collect::<Vec<u8>>()
        };
        match input.byte() % OPS {
            0 => {
                let flags = input.byte();
                let count = input.byte() % (MAX_ITEMS + 1);
                let entries = (0..count).map(|_| [input.byte(), input.byte()]).collect();
                Op::Settings { flags, entries }
            }
            1 => Op::Headers {
                stream: input.byte(),
                flags: input.byte(),
                first: input.byte(),
                fields: list(input),
            },
            2 => {
                Op::Continuation { stream: input.byte(), flags: input.byte(), fields: list(input) }
            }
            3 => Op::Data { stream: input.byte(), flags: input.byte(), length: input.byte() },
            4 => Op::RstStream { stream: input.byte(), code: input.byte() },
            5 => Op::GoAway { last: input.byte(), code: input.byte() },
            6 => Op::Ping { flags: input.byte() },
            7 => Op::WindowUpdate { stream: input.byte(), increment: input.byte() },
            8 => {
                let (kind, flags, stream) = (input.byte(), input.byte(), input.byte());
                let length = usize::from(input.byte() % 33);
                Op::Frame { kind, flags, stream, payload: input.take(length).to_vec() }
            }
            9 => {
                let length = usize::from(input.byte());
                Op::Raw(input.take(length).to_vec())
            }
            10 => Op::Read { cuts: input.cuts() },
            11 => Op::Submit { count: input.byte(), choice: input.byte() },
            12 => Op::Expire { timeout: input.byte() },
            13 => Op::Fail,
            _ => Op::PeerClose,
        }
    }

    /// The op as [`Op::read`] reads it (for the property tests).
    #[cfg(test)]
    pub fn write(&self, out: &mut Vec<u8>) {
        let list = |out: &mut Vec<u8>, items: &[u8]| {
            out.push(items.len() as u8);
            out.extend_from_slice(items);
        };
        match self {
            Op::Settings { flags, entries } => {
                out.extend([0, *flags, entries.len() as u8]);
                entries.iter().for_each(|entry| out.extend(entry));
            }
            Op::Headers { stream, flags, first, fields } => {
                out.extend([1, *stream, *flags, *first]);
                list(out, fields);
            }
            Op::Continuation { stream, flags, fields } => {
                out.extend([2, *stream, *flags]);
                list(out, fields);
            }
            Op::Data { stream, flags, length } => out.extend([3, *stream, *flags, *length]),
            Op::RstStream { stream, code } => out.extend([4, *stream, *code]),
            Op::GoAway { last, code } => out.extend([5, *last, *code]),
            Op::Ping { flags } => out.extend([6, *flags]),
            Op::WindowUpdate { stream, increment } => out.extend([7, *stream, *increment]),
            Op::Frame { kind, flags, stream, payload } => {
                out.extend([8, *kind, *flags, *stream]);
                list(out, payload);
            }
            Op::Raw(bytes) => {
                out.push(9);
                list(out, bytes);
            }
            Op::Read { cuts } => {
                out.extend([10, cuts.len() as u8]);
                cuts.iter().for_each(|cut| out.extend(cut.to_le_bytes()));
            }
            Op::Submit { count, choice } => out.extend([11, *count, *choice]),
            Op::Expire { timeout } => out.extend([12, *timeout]),
            Op::Fail => out.push(13),
            Op::PeerClose => out.push(14),
        }
    }

    /// The frame (or bytes) the peer sends for this op, `None` for the
    /// ops that are not bytes. Stream choices name `streams`, which learn
    /// what the frame ends (or opens); `first_field` turns a
    /// [`Op::Headers`]' `first` choice into the start of its header block.
    pub fn bytes(
        &self,
        streams: &mut Streams,
        first_field: fn(u8) -> &'static [u8],
    ) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let opened = streams.opened();
        let id = |choice: u8| streams.id(choice);
        match self {
            Op::Settings { flags, entries } => {
                let payload: Vec<u8> = entries.iter().flat_map(|&[k, v]| setting(k, v)).collect();
                frame(&mut out, SETTINGS, flags & ACK, 0, &payload);
            }
            Op::Headers { stream, flags, first, fields } => {
                let mut block = first_field(*first).to_vec();
                fields
                    .iter()
                    .for_each(|&field| block.extend_from_slice(FIELDS[field_index(field)]));
                let id = id(*stream);
                headers_frame(&mut out, id, *flags, &block);
                streams.sent(id, true, flags & END_STREAM != 0);
            }
            Op::Continuation { stream, flags, fields } => {
                let block: Vec<u8> =
                    fields.iter().flat_map(|&field| FIELDS[field_index(field)]).copied().collect();
                let end = if flags & 1 == 0 { END_HEADERS } else { 0 };
                let id = id(*stream);
                frame(&mut out, CONTINUATION, end, id, &block);
                streams.sent(id, false, false);
            }
            Op::Data { stream, flags, length } => {
                let data = vec![b'd'; DATA_LENGTHS[usize::from(length % 8)]];
                let id = id(*stream);
                padded(&mut out, DATA, flags & END_STREAM, id, *flags, &data);
                streams.sent(id, false, flags & END_STREAM != 0);
            }
            Op::RstStream { stream, code } => {
                let id = id(*stream);
                frame(&mut out, RST_STREAM, 0, id, &error_code(*code).to_be_bytes());
                streams.sent(id, false, true);
            }
            Op::GoAway { last, code } => {
                let last = last_stream_id(*last, opened);
                streams.went_away(last);
                let mut payload = last.to_be_bytes().to_vec();
                payload.extend(error_code(*code).to_be_bytes());
                frame(&mut out, GOAWAY, 0, 0, &payload);
            }
            Op::Ping { flags } => frame(&mut out, PING, flags & ACK, 0, b"pingpong"),
            Op::WindowUpdate { stream, increment } => {
                let increment = INCREMENTS[usize::from(increment % 8)];
                let id = id(*stream);
                frame(&mut out, WINDOW_UPDATE, 0, id, &increment.to_be_bytes());
                streams.sent(id, false, false);
            }
            Op::Frame { kind, flags, stream, payload } => {
                let id = id(*stream);
                frame(&mut out, *kind, *flags, id, payload);
                streams.sent(id, false, false);
            }
            Op::Raw(bytes) => {
                out.extend_from_slice(bytes);
                streams.named = None;
            }
            _ => return None,
        }
        Some(out)
    }
}

/// A frame: 24-bit length, type, flags, stream id (RFC 9113 4.1).
pub fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend([kind, flags]);
    out.extend(stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// A DATA or HEADERS frame, padded with `choice >> 4` bytes when `choice`
/// has bit 3 (RFC 9113 6.1, 6.2).
fn padded(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, choice: u8, data: &[u8]) {
    if choice & PADDED == 0 {
        return frame(out, kind, flags, stream, data);
    }
    let padding = usize::from(choice >> 4);
    let mut payload = vec![padding as u8];
    payload.extend_from_slice(data);
    payload.resize(payload.len() + padding, 0);
    frame(out, kind, flags | PADDED, stream, &payload);
}

/// HEADERS with `block`. `choice` bit 0: END_STREAM; bits 1 and 2 both
/// set: no END_HEADERS (a CONTINUATION must follow); bit 3: padded (see
/// [`padded`]); bit 7: a priority, on the stream itself when bit 6 (a
/// stream error).
fn headers_frame(out: &mut Vec<u8>, stream: u32, choice: u8, block: &[u8]) {
    let mut flags = choice & END_STREAM;
    if choice & 0x6 != 0x6 {
        flags |= END_HEADERS;
    }
    let mut payload = Vec::new();
    if choice & 0x80 != 0 {
        flags |= PRIORITY_FLAG;
        let depends_on = if choice & 0x40 != 0 { stream } else { 0 };
        payload.extend(depends_on.to_be_bytes());
        payload.push(15);
    }
    payload.extend_from_slice(block);
    padded(out, HEADERS, flags, stream, choice, &payload);
}

/// The client's streams as the peer's frames see them: those opened (ids
/// 1, 3, 5...) and which of them the peer's frames ended (END_STREAM,
/// RST_STREAM, GOAWAY), so that a choice names a stream that is still
/// open.
#[derive(Default)]
pub struct Streams {
    /// Per stream opened: the peer's frames ended it.
    ended: Vec<bool>,
    /// The peer opens them, with HEADERS on the next id (it is the client).
    pub peer_opens: bool,
    /// The largest stream id the peer's frames named, unless it sent raw
    /// bytes (which may name any).
    pub named: Option<u32>,
}

impl Streams {
    pub fn new(peer_opens: bool) -> Streams {
        Streams { ended: Vec::new(), peer_opens, named: Some(0) }
    }

    /// `n` more streams were opened.
    pub fn open(&mut self, n: usize) {
        self.ended.resize(self.ended.len() + n, false);
    }

    pub fn opened(&self) -> u32 {
        self.ended.len() as u32
    }

    /// A stream id: mostly a stream still open (the latest for choice 0,
    /// the one before for 1...) or, if none is, the latest; else the next
    /// one (not open yet), else one that is wrong for a reason.
    pub fn id(&self, choice: u8) -> u32 {
        let opened = self.opened();
        let live: Vec<u32> = (0..opened).rev().filter(|&k| !self.ended[k as usize]).collect();
        match choice {
            0..=0xdf if !live.is_empty() => 2 * live[usize::from(choice) % live.len()] + 1,
            // None open: the latest (closed), if any.
            0..=0xdf if opened > 0 => 2 * opened - 1,
            0..=0xef => 2 * opened + 1,
            _ => [0, 2, 0x7fff_ffff, 0x8000_0001, 2 * opened + 3, 2 * opened + 101, 4, 1]
                [usize::from(choice & 7)],
        }
    }

    /// A GOAWAY: the streams above `last` will not be answered.
    fn went_away(&mut self, last: u32) {
        for (k, ended) in self.ended.iter_mut().enumerate() {
            *ended |= 2 * k as u64 + 1 > u64::from(last);
        }
    }

    /// A frame on stream `id` with `end` (END_STREAM, RST_STREAM) went out.
    fn sent(&mut self, id: u32, headers: bool, end: bool) {
        self.named = self.named.map(|named| named.max(id));
        if headers && self.peer_opens && id == 2 * self.opened() + 1 {
            self.open(1);
        }
        if let Some(ended) = (id % 2 == 1).then(|| self.ended.get_mut(id as usize / 2)).flatten() {
            *ended |= end;
        }
    }
}

/// A GOAWAY's last stream id: one of the client's streams so far (the
/// latest for choice 0) or none (0), or beyond them.
fn last_stream_id(choice: u8, opened: u32) -> u32 {
    match choice {
        0..=0xef => match opened.saturating_sub(u32::from(choice) % (opened + 1)) {
            0 => 0,
            k => 2 * k - 1,
        },
        _ => [0x7fff_ffff, 2, 2 * opened + 1, 0xffff_ffff][usize::from(choice & 3)],
    }
}

/// Error codes (RFC 9113 7): NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR,
/// REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM, HTTP_1_1_REQUIRED, unknown.
fn error_code(choice: u8) -> u32 {
    [0, 1, 2, 7, 8, 0xb, 0xd, 0xdead][usize::from(choice % 8)]
}

/// WINDOW_UPDATE increments: ordinary, the largest, zero (an error) and
/// one with the reserved bit.
const INCREMENTS: [u32; 8] = [1, 100, 16_384, 65_535, 1 << 20, 0x7fff_ffff, 0, 0x8000_0001];

/// DATA lengths: the largest frame allowed (16384) and one byte more, and
/// more than a stream's default window.
pub const DATA_LENGTHS: [usize; 8] = [0, 1, 5, 100, 1000, 16_384, 16_385, 70_000];

/// A SETTINGS entry: `key` picks the setting, `value` a value that matters
/// for it (limits, zero, out of range).
fn setting(key: u8, value: u8) -> [u8; 6] {
    const IDS: [u16; 8] = [1, 2, 3, 4, 5, 6, 8, 0x99];
    let id = IDS[usize::from(key % 8)];
    let values: &[u32] = match id {
        // HEADER_TABLE_SIZE
        1 => &[0, 4096, 65_536, u32::MAX],
        // ENABLE_PUSH: a server may not send it as 1; 2 is invalid.
        2 => &[0, 1, 2],
        // MAX_CONCURRENT_STREAMS: the slots of a connection follow it.
        3 => &[0, 1, 2, 3, 8, 100, u32::MAX],
        // INITIAL_WINDOW_SIZE: 0 blocks bodies; 2^31 is invalid.
        4 => &[0, 1, 65_535, 0x7fff_ffff, 0x8000_0000],
        // MAX_FRAME_SIZE: 16383 and 2^24 are invalid.
        5 => &[16_384, 16_383, 65_536, 0xff_ffff, 0x100_0000],
        // MAX_HEADER_LIST_SIZE
        6 => &[0, 10, 100, 65_536],
        _ => &[0, 1, 2],
    };
    let value = values[usize::from(value) % values.len()];
    let mut entry = [0; 6];
    entry[..2].copy_from_slice(&id.to_be_bytes());
    entry[2..].copy_from_slice(&value.to_be_bytes());
    entry
}

/// The start of a response's header block: a `:status` (from the static
/// table, as a literal, through the dynamic table) or none, valid or not.
pub const STATUSES: [&[u8]; 16] = [
    b"\x88",         // :status 200 (static table index 8)
    b"\x89",         // 204
    b"\x8b",         // 304
    b"\x8d",         // 404
    b"\x8e",         // 500
    b"\x48\x03201",  // 201, a literal added to the dynamic table
    b"\xbe",         // dynamic table index 62: the latest added, if any
    b"",             // no :status
    b"\x08\x03100",  // 100 Continue, a literal with the name of index 8
    b"\x08\x03103",  // 103 Early Hints
    b"\x08\x03101",  // 101: no such thing in HTTP/2
    b"\x08\x042000", // four digits
    b"\x08\x03abc",  // not a number
    b"\x08\x00",     // empty
    b"\x08\x03999",  // the largest
    b"\x20\x88",     // a dynamic table size update (to 0), then 200
];

/// The start of a request's header block (for the server): the four
/// pseudo-headers for the endpoints, with methods, and requests that are
/// malformed for a reason.
pub const REQUESTS: [&[u8]; 16] = [
    b"\x82\x86\x84\x01\x01h", // GET http / (static 2, 6, 4), :authority h
    b"\x83\x86\x84\x01\x01h", // POST
    b"\x42\x04HEAD\x86\x84\x01\x01h", // HEAD
    b"\x82\x86\x04\x05/echo\x01\x01h", // GET /echo
    b"\x83\x86\x04\x05/echo\x01\x01h", // POST /echo
    b"\x82\x86\x04\x08/chunked\x01\x01h", // GET /chunked
    b"\x82\x86\x04\x06/close\x01\x01h", // GET /close
    b"\x82\x86\x04\x04/eof\x01\x01h", // GET /eof
    b"\x82\x86\x04\x0b/delay/1000\x01\x01h", // GET /delay/1000 (ms)
    b"\x82\x86\x04\x05/hang\x01\x01h", // GET /hang
    b"\x82\x86\x04\x0c/bytes/70000\x01\x01h", // GET /bytes/70000
    b"\x82\x86\x04\x0b/status/204\x01\x01h", // GET /status/204
    b"\x82\x86\x04\x06/stats\x01\x01h", // GET /stats
    b"\x82\x84\x01\x01h",     // no :scheme
    b"\x86\x84\x01\x01h",     // no :method
    b"\x82\x86\x84\x84\x01\x01h", // :path twice
];

/// Header fields to add to a block: framing, names HTTP/2 forbids, a
/// second `:status`, HPACK instructions misplaced or out of range.
const FIELDS: [&[u8]; 16] = [
    b"\x00\x0econtent-length\x010",
    b"\x00\x0econtent-length\x015",
    b"\x00\x0econtent-length\x03100",
    b"\x00\x0econtent-length\x01x",
    b"\x00\x03x-a\x01b",
    b"\x40\x03x-b\x01c",            // added to the dynamic table
    b"\x00\x04X-Up\x01v",           // an upper-case name: malformed
    b"\x00\x0aconnection\x05close", // connection-specific: malformed
    b"\x00\x02te\x08trailers",
    b"\x00\x05:path\x01/",             // a request pseudo-header
    b"\x88",                           // :status again (a trailer, or twice)
    b"\x20",                           // a table size update not first
    b"\xbf",                           // dynamic table index 63
    b"\xff\xff\xff\xff\x0f",           // an index beyond any table
    b"\x00\x03x-h\x83\xff\xff\xff",    // a Huffman value that is padding only
    b"\x00\x06x-long\x7f\x10xxxxxxxx", // a length (143) beyond the block
];

fn field_index(choice: u8) -> usize {
    usize::from(choice % FIELDS.len() as u8)
}

/// Checks what pace writes as it comes: the client's preface first (when
/// it is the client), then whole frames, SETTINGS first, each of a type
/// pace sends and laid out as that type must be. Panics on a malformed
/// frame.
pub struct FrameReader {
    /// Bytes not yet checked (an incomplete frame, or the preface).
    pending: Vec<u8>,
    /// The preface has still to come.
    preface: bool,
    /// The frames so far.
    pub frames: usize,
    /// Frames on streams above this are answers to streams never opened.
    pub stream_limit: Option<u32>,
}

impl FrameReader {
    /// `client`: pace is the client, its output starts with the preface.
    pub fn new(client: bool) -> FrameReader {
        FrameReader { pending: Vec::new(), preface: client, frames: 0, stream_limit: None }
    }

    /// Takes more output and checks the frames it completes.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        if self.preface {
            let n = self.pending.len().min(PREFACE.len());
            assert_eq!(&self.pending[..n], &PREFACE[..n], "not the connection preface");
            if n < PREFACE.len() {
                return;
            }
            self.pending.drain(..n);
            self.preface = false;
        }
        let mut at = 0;
        while let Some(header) = self.pending.get(at..at + 9) {
            let length = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
            let Some(payload) = self.pending.get(at + 9..at + 9 + length) else { break };
            let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]);
            self.check(header[3], header[4], stream, payload);
            self.frames += 1;
            at += 9 + length;
        }
        self.pending.drain(..at);
    }

    /// The output so far ends where a frame does.
    pub fn at_frame_boundary(&self) -> bool {
        self.pending.is_empty() && !self.preface
    }

    fn check(&self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let what =
            format!("frame {kind} flags {flags:#x} stream {stream} length {}", payload.len());
        assert_eq!(stream >> 31, 0, "{what}: reserved bit set");
        if self.frames == 0 {
            assert_eq!(kind, SETTINGS, "{what}: the first frame is not SETTINGS");
        }
        let on_stream = stream != 0;
        let length = payload.len();
        let padding_fits =
            || flags & PADDED == 0 || payload.first().is_some_and(|&p| usize::from(p) < length);
        let ok = match kind {
            DATA => on_stream && padding_fits(),
            HEADERS | CONTINUATION => on_stream && (kind == CONTINUATION || padding_fits()),
            PRIORITY => on_stream && length == 5,
            RST_STREAM => on_stream && length == 4,
            SETTINGS => !on_stream && length.is_multiple_of(6) && (flags & ACK == 0 || length == 0),
            PING => !on_stream && length == 8,
            GOAWAY => !on_stream && length >= 8,
            WINDOW_UPDATE => {
                length == 4
                    && u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & 0x7fff_ffff
                        != 0
            }
            // pace pushes nothing and sends no other type.
            _ => false,
        };
        assert!(ok, "{what}: malformed");
        // Streams a client opens are odd; a server answers on them.
        if kind == HEADERS || kind == DATA {
            assert_eq!(stream % 2, 1, "{what}: on an even stream");
        }
        if let Some(limit) = self.stream_limit {
            assert!(stream <= limit, "{what}: on a stream the peer never named (up to {limit})");
        }
    }
}
