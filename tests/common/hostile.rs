//! A scripted hostile HTTP/1.1 server for the end-to-end tests (issue #7):
//! it reads each request (up to its empty line) and answers the way its
//! [`Mode`] says, from a well-behaved but unusual response to a stream of
//! garbage, a reset or no answer at all. And, for hostile clients of
//! `pace serve` (issue 33), the server as a process whose resident memory
//! and descriptors can be read ([`ServeProcess`]), and HTTP/2 frames
//! written by hand ([`h2`]).
//!
//! One std thread per connection, blocking sockets: simple, and plenty for
//! a test that opens a few connections at a time. The listener is bound
//! (to a free port of 127.0.0.1) before [`HostileServer::start`] returns,
//! so pace can be started at once. Connection threads end when pace
//! closes its side (or after [`IDLE_LIMIT`] without progress), so nothing
//! outlives a test for long.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::common::{stretched, DieWithTest, Run, Running};

/// How the server answers every request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Reads the request, then resets the connection (SO_LINGER 0, close:
    /// an RST) without a byte of response.
    ResetBeforeResponse,
    /// Sends the head and 100 of the 1000 body bytes it announces, then
    /// resets the connection.
    ResetWithinResponse,
    /// Sends a complete keep-alive response, then resets the connection.
    ResetAfterResponse,
    /// `HTTP/1.1 twohundred OK`: a status line without a status code.
    GarbageStatusLine,
    /// 4 KiB of pseudo-random bytes instead of a response.
    BinaryJunk,
    /// A header block of 1 MiB (1024 fields of about 1 KiB), then an empty
    /// body.
    HugeHeaderBlock,
    /// A header line without a colon in an otherwise valid response.
    HeaderWithoutColon,
    /// A chunked body whose first chunk size is not hexadecimal.
    InvalidChunkSize,
    /// A chunked body whose first chunk size is 2^64 (17 hex digits).
    OverflowingChunkSize,
    /// Announces 1000 body bytes, sends 10, then closes (a FIN).
    ShortBodyThenClose,
    /// A valid 19-byte response ([`TRICKLED`]), one byte per 100 ms.
    Trickle,
    /// Reads the request and holds the connection without answering.
    NeverAnswer,
    /// `100 Continue` and `103 Early Hints`, then the final `200`.
    InterimBeforeFinal,
    /// A body without length, delimited by closing the connection.
    CloseDelimited,
    /// A complete response followed, in the same write, by a second one
    /// nobody asked for.
    UnsolicitedBytes,
    /// A 200 MB Content-Length body, streamed from one 64 KiB block.
    HugeBody,
}

/// No connection thread waits longer than this for its peer.
pub const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// What [`Mode::Trickle`] sends, one byte per [`TRICKLE_EVERY`]: the
/// shortest keep-alive response, so that it completes in under 2 s.
pub const TRICKLED: &[u8] = b"HTTP/1.1 204 OK\r\n\r\n";
pub const TRICKLE_EVERY: Duration = Duration::from_millis(100);

/// The body length of [`Mode::HugeBody`].
pub const HUGE_BODY: u64 = 200_000_000;

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// The block [`Mode::HugeBody`] sends over and over.
static BODY_BLOCK: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// The server's counts, for the tests to compare with pace's.
#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    /// Requests read completely.
    requests: AtomicU64,
    /// Responses (final ones) written completely.
    answered: AtomicU64,
    /// Bytes written, all modes together.
    bytes_written: AtomicU64,
}

/// A running hostile server; stopped (its listener closed) on drop.
pub struct HostileServer {
    addr: SocketAddr,
    mode: Mode,
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl HostileServer {
    /// Binds a free port of 127.0.0.1 and starts accepting.
    pub fn start(mode: Mode) -> HostileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the hostile server");
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (counts, stop) = (counts.clone(), stop.clone());
            thread::Builder::new()
                .name(format!("hostile-{mode:?}"))
                .spawn(move || accept(listener, mode, counts, stop))
                .expect("start the hostile server's thread")
        };
        HostileServer { addr, mode, counts, stop, acceptor: Some(acceptor) }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Connections accepted (pace's probe connection included).
    pub fn connections(&self) -> u64 {
        self.counts.connections.load(Ordering::Relaxed)
    }

    /// Requests read completely.
    pub fn requests(&self) -> u64 {
        self.counts.requests.load(Ordering::Relaxed)
    }

    /// Final responses written completely.
    pub fn answered(&self) -> u64 {
        self.counts.answered.load(Ordering::Relaxed)
    }

    pub fn bytes_written(&self) -> u64 {
        self.counts.bytes_written.load(Ordering::Relaxed)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the acceptor from accept(); it sees the flag and returns.
        let _ = TcpStream::connect(self.addr);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept(listener: TcpListener, mode: Mode, counts: Arc<Counts>, stop: Arc<AtomicBool>) {
    for stream in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(stream) = stream else { continue };
        counts.connections.fetch_add(1, Ordering::Relaxed);
        let counts = counts.clone();
        // A connection the machine has no thread for is just dropped.
        let _ = thread::Builder::new()
            .name("hostile-conn".to_string())
            .spawn(move || serve_connection(stream, mode, &counts));
    }
}

/// What to do after answering a request.
enum Next {
    /// Read the next request on the same connection.
    Continue,
    /// The connection is done (closed, reset, or given up on).
    Done,
}

fn serve_connection(mut stream: TcpStream, mode: Mode, counts: &Counts) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(IDLE_LIMIT));
    let _ = stream.set_write_timeout(Some(IDLE_LIMIT));
    let mut pending = Vec::new();
    while read_request(&mut stream, &mut pending) {
        counts.requests.fetch_add(1, Ordering::Relaxed);
        let mut out = Counted { stream: &mut stream, counts };
        match answer(&mut out, mode) {
            Ok(Next::Continue) => {}
            Ok(Next::Done) | Err(_) => return,
        }
    }
}

/// Reads up to the end of the next request head (pace's benchmark requests
/// have no body). False at the end of the stream or on an error. Bytes
/// after the head stay in `pending` for the next call.
fn read_request(stream: &mut TcpStream, pending: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            return true;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

/// The connection's stream, counting the bytes written.
struct Counted<'a> {
    stream: &'a mut TcpStream,
    counts: &'a Counts,
}

impl Counted<'_> {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)?;
        self.counts.bytes_written.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// A final response was written completely.
    fn answered(&self) {
        self.counts.answered.fetch_add(1, Ordering::Relaxed);
    }

    /// SO_LINGER 0, then close: the kernel drops what is unsent and sends
    /// an RST instead of a FIN.
    fn reset(&mut self) -> io::Result<Next> {
        socket2::SockRef::from(&*self.stream).set_linger(Some(Duration::ZERO))?;
        // The caller returns Done and the stream is closed when the
        // connection's thread drops it.
        Ok(Next::Done)
    }

    /// A FIN after everything written.
    fn close(&mut self) -> io::Result<Next> {
        self.stream.shutdown(Shutdown::Write)?;
        // Wait for pace to close its side, so that our close cannot turn
        // into an RST because of unread bytes (pace sends nothing more).
        let _ = io::copy(self.stream, &mut io::sink());
        Ok(Next::Done)
    }
}

fn answer(out: &mut Counted<'_>, mode: Mode) -> io::Result<Next> {
    match mode {
        Mode::ResetBeforeResponse => out.reset(),
        Mode::ResetWithinResponse => {
            let mut partial = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec();
            partial.extend_from_slice(&[b'x'; 100]);
            out.send(&partial)?;
            out.reset()
        }
        Mode::ResetAfterResponse => {
            out.send(OK)?;
            out.answered();
            out.reset()
        }
        Mode::GarbageStatusLine => {
            out.send(b"HTTP/1.1 twohundred OK\r\nContent-Length: 2\r\n\r\nok")?;
            Ok(Next::Continue)
        }
        Mode::BinaryJunk => {
            out.send(binary_junk())?;
            Ok(Next::Continue)
        }
        Mode::HugeHeaderBlock => {
            out.send(huge_header_block())?;
            out.answered();
            Ok(Next::Continue)
        }
        Mode::HeaderWithoutColon => {
            out.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-No-Colon-Here\r\n\r\nok")?;
            Ok(Next::Continue)
        }
        Mode::InvalidChunkSize => {
            out.send(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\nabc\r\n0\r\n\r\n",
            )?;
            Ok(Next::Continue)
        }
        Mode::OverflowingChunkSize => {
            out.send(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
            )?;
            // Bytes as if the chunk were real; pace must stop before them.
            out.send(&BODY_BLOCK[..4096])?;
            Ok(Next::Continue)
        }
        Mode::ShortBodyThenClose => {
            let mut short = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec();
            short.extend_from_slice(&[b'x'; 10]);
            out.send(&short)?;
            out.close()
        }
        Mode::Trickle => {
            for byte in TRICKLED.chunks(1) {
                out.send(byte)?;
                thread::sleep(TRICKLE_EVERY);
            }
            out.answered();
            Ok(Next::Continue)
        }
        Mode::NeverAnswer => {
            // Holds the connection until pace closes it.
            let _ = io::copy(out.stream, &mut io::sink());
            Ok(Next::Done)
        }
        Mode::InterimBeforeFinal => {
            // Separate writes: the interim responses and the final one may
            // arrive in separate reads.
            out.send(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            out.send(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")?;
            out.send(OK)?;
            out.answered();
            Ok(Next::Continue)
        }
        Mode::CloseDelimited => {
            let mut response = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n".to_vec();
            response.extend_from_slice(&[b'x'; 1000]);
            out.send(&response)?;
            out.answered();
            out.close()
        }
        Mode::UnsolicitedBytes => {
            let twice = [OK, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"].concat();
            out.send(&twice)?;
            out.answered();
            Ok(Next::Continue)
        }
        Mode::HugeBody => {
            out.send(format!("HTTP/1.1 200 OK\r\nContent-Length: {HUGE_BODY}\r\n\r\n").as_bytes())?;
            let mut left = HUGE_BODY;
            while left > 0 {
                let n = left.min(BODY_BLOCK.len() as u64) as usize;
                out.send(&BODY_BLOCK[..n])?;
                left -= n as u64;
            }
            out.answered();
            Ok(Next::Continue)
        }
    }
}

/// 4 KiB of xorshift bytes; the first is 0xff, so that it cannot be
/// mistaken for the start of a status line or for an empty line.
fn binary_junk() -> &'static [u8] {
    static JUNK: OnceLock<Vec<u8>> = OnceLock::new();
    JUNK.get_or_init(|| {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut junk: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        junk[0] = 0xff;
        junk
    })
}

/// A status line, 1024 header fields of 1 KiB each (1 MiB), and an empty
/// body: under the 100-field limit until far past the 64 KiB one.
fn huge_header_block() -> &'static [u8] {
    static BLOCK: OnceLock<Vec<u8>> = OnceLock::new();
    BLOCK.get_or_init(|| {
        let mut block = b"HTTP/1.1 200 OK\r\n".to_vec();
        let value = "v".repeat(1000);
        for i in 0..1024 {
            block.extend_from_slice(format!("X-Filler-{i:04}: {value}\r\n").as_bytes());
        }
        block.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        block
    })
}

// ----- hostile clients: `pace serve` as a process ---------------------------------

/// `pace serve` started as a child process on a free port of 127.0.0.1,
/// so that what it holds can be read from /proc while a hostile client
/// works on it. Killed on drop.
pub struct ServeProcess {
    child: Child,
    pub addr: SocketAddr,
}

impl ServeProcess {
    /// Starts `pace serve --port 0 <extra>` and waits (at most 10 s) for
    /// its `listening on` line, which says it accepts connections.
    pub fn start(extra: &[&str]) -> ServeProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pace"))
            .args(["serve", "--port", "0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .die_with_test()
            .spawn()
            .expect("start pace serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let (said, heard) = mpsc::channel();
        thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            let first = lines.next().and_then(Result::ok).unwrap_or_default();
            let _ = said.send(first);
            // Whatever else it says is drained, so it never blocks.
            lines.for_each(drop);
        });
        let line = heard.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        let addr = line
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|addr| addr.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            panic!("pace serve {extra:?} did not say where it listens: {line:?}");
        };
        ServeProcess { child, addr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident memory now (`VmRSS` in /proc/PID/status).
    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS")
    }

    /// The most the server has had resident since it started (`VmHWM`,
    /// the peak of `VmRSS`).
    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM")
    }

    /// A size in /proc/PID/status, in KiB.
    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read the server's /proc status");
        let line = status
            .lines()
            .find(|l| l.strip_prefix(field).is_some_and(|rest| rest.starts_with(':')))
            .unwrap_or_else(|| panic!("no {field} in /proc/{}/status", self.pid()));
        line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("a size in kB")
    }

    /// The server's open file descriptors.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .expect("read the server's /proc fd")
            .count()
    }

    /// Waits (polling, at most `limit`) until the server holds at most
    /// `fds` descriptors; returns how many it holds at the end.
    pub fn wait_for_fds_at_most(&self, fds: usize, limit: Duration) -> usize {
        let deadline = Instant::now() + limit;
        loop {
            let open = self.open_fds();
            if open <= fds || Instant::now() >= deadline {
                return open;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// A TCP connection to the server.
    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).expect("connect to pace serve");
        stream.set_nodelay(true).unwrap();
        stream
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads until the server closes the connection (its FIN, or a reset),
/// dropping the bytes, for at most `limit`: true if it closed in time.
pub fn closed_by_server_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return false
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A reset is a close too.
            Err(_) => return true,
        }
    }
}

/// HTTP/2 frames written by hand (RFC 9113 section 4 and 6), enough of
/// the protocol for a client that misbehaves on purpose. Header blocks
/// are HPACK literals without indexing (RFC 7541 6.2.2): no table, no
/// Huffman coding; what the server sends back is read frame by frame, its
/// header blocks never decoded.
pub mod h2 {
    use std::io::{self, Read, Write};
    use std::net::TcpStream;

    pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;

    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;

    pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;

    /// The largest flow-control window (2^31 - 1).
    pub const MAX_WINDOW: u32 = (1 << 31) - 1;
    /// The windows a connection starts with (RFC 9113 6.9.2).
    pub const DEFAULT_WINDOW: u32 = 65_535;
    /// The largest frame payload a peer must accept without asking.
    pub const MAX_FRAME: usize = 16_384;

    /// One frame: type, flags, stream, payload.
    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let length = (payload.len() as u32).to_be_bytes();
        let mut frame = vec![length[1], length[2], length[3], kind, flags];
        frame.extend_from_slice(&stream.to_be_bytes());
        frame.extend_from_slice(payload);
        frame
    }

    pub fn settings(entries: &[(u16, u32)]) -> Vec<u8> {
        let payload: Vec<u8> = entries
            .iter()
            .flat_map(|(id, value)| id.to_be_bytes().into_iter().chain(value.to_be_bytes()))
            .collect();
        frame(SETTINGS, 0, 0, &payload)
    }

    pub fn window_update(stream: u32, increment: u32) -> Vec<u8> {
        frame(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
    }

    /// A whole header block in one HEADERS frame.
    pub fn headers(stream: u32, fields: &[(&str, &str)], end_stream: bool) -> Vec<u8> {
        let block = header_block(fields);
        let flags = END_HEADERS | if end_stream { END_STREAM } else { 0 };
        frame(HEADERS, flags, stream, &block)
    }

    /// `fields` as literals without indexing (RFC 7541 6.2.2).
    pub fn header_block(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        for (name, value) in fields {
            // A new name (index 0).
            block.push(0x00);
            string(&mut block, name.as_bytes());
            string(&mut block, value.as_bytes());
        }
        block
    }

    /// A field that the decoder adds to its dynamic table (a literal with
    /// incremental indexing, RFC 7541 6.2.1), where it becomes
    /// [`NEWEST_ENTRY`].
    pub fn indexed_literal(name: &str, value: &str) -> Vec<u8> {
        let mut field = vec![0x40];
        string(&mut field, name.as_bytes());
        string(&mut field, value.as_bytes());
        field
    }

    /// One byte naming the newest entry of the dynamic table (an indexed
    /// field, index 62: the first after the 61 of the static table).
    pub const NEWEST_ENTRY: u8 = 0x80 | 62;

    /// CONTINUATION frames nghttp2 accepts after a HEADERS frame.
    pub const MAX_CONTINUATIONS: usize = 8;

    /// A request's header fields: `method` of `path` on this server.
    pub fn request<'a>(method: &'a str, path: &'a str) -> [(&'a str, &'a str); 4] {
        [(":method", method), (":scheme", "http"), (":authority", "localhost"), (":path", path)]
    }

    /// An HPACK string literal (RFC 7541 5.2), not Huffman coded: its
    /// length as an integer with a 7-bit prefix (5.1), then the bytes.
    fn string(block: &mut Vec<u8>, bytes: &[u8]) {
        let mut length = bytes.len();
        if length < 0x7f {
            block.push(length as u8);
        } else {
            block.push(0x7f);
            length -= 0x7f;
            while length >= 0x80 {
                block.push((length % 0x80) as u8 | 0x80);
                length /= 0x80;
            }
            block.push(length as u8);
        }
        block.extend_from_slice(bytes);
    }

    /// A frame as received: type, flags, stream and payload.
    #[derive(Debug)]
    pub struct Frame {
        pub kind: u8,
        pub flags: u8,
        pub stream: u32,
        pub payload: Vec<u8>,
    }

    /// Reads the next frame (blocking, within the socket's read timeout).
    pub fn read_frame(stream: &mut TcpStream) -> io::Result<Frame> {
        let mut head = [0u8; 9];
        stream.read_exact(&mut head)?;
        let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; length];
        stream.read_exact(&mut payload)?;
        Ok(Frame { kind: head[3], flags: head[4], stream: id, payload })
    }

    /// Opens an HTTP/2 connection with prior knowledge: the preface and
    /// `settings`, then waits for the server's SETTINGS and acknowledges
    /// them (its stream windows only apply from then on), so that bodies
    /// may be sent as far as its windows allow.
    pub fn handshake(stream: &mut TcpStream, settings: &[(u16, u32)]) -> io::Result<()> {
        let mut start = PREFACE.to_vec();
        start.extend(self::settings(settings));
        stream.write_all(&start)?;
        loop {
            let received = read_frame(stream)?;
            if received.kind == SETTINGS && received.flags & ACK == 0 {
                return stream.write_all(&frame(SETTINGS, ACK, 0, &[]));
            }
        }
    }

    /// Reads frames until stream `id` ends; returns its DATA payloads
    /// joined.
    pub fn read_body(stream: &mut TcpStream, id: u32) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let frame = read_frame(stream)?;
            if frame.stream != id {
                continue;
            }
            if frame.kind == DATA {
                body.extend_from_slice(&frame.payload);
            }
            if frame.flags & END_STREAM != 0 && matches!(frame.kind, DATA | HEADERS) {
                return Ok(body);
            }
        }
    }
}

/// What one run of pace left: its output, and its peak resident memory
/// and CPU time (user plus system) as the kernel counted them.
pub struct Measured {
    pub run: Run,
    pub peak_rss_kib: u64,
    pub cpu: Duration,
}

/// Waits for `running` to exit (killing it, and failing, past `limit`),
/// and reads its resource usage from the kernel: `waitid(..., WNOWAIT)`
/// with the rusage argument of the raw system call sees the exited child
/// (its `ru_maxrss`, its CPU times) without reaping it, so the exit status
/// and the output are still collected as usual.
pub fn measure(running: Running, limit: Duration) -> Measured {
    let pid = running.pid();
    // As far as `wait` waits before it kills pace.
    let deadline = running.started + stretched(limit);
    let mut usage = None;
    while Instant::now() < deadline {
        usage = exited_usage(pid);
        if usage.is_some() {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    // Past the deadline this kills pace and fails the test.
    let run = running.wait(limit);
    let usage = usage.unwrap_or_else(|| panic!("no rusage for pace\n{run}"));
    let seconds = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Measured {
        peak_rss_kib: usage.ru_maxrss as u64,
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        run,
    }
}

/// The resource usage of our child `pid` once it has exited (None while it
/// runs); the child stays a zombie for the caller to reap.
pub fn exited_usage(pid: i32) -> Option<libc::rusage> {
    // SAFETY: all-zero siginfo_t and rusage are valid values of these C
    // structs.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waitid(2) on our own, not yet reaped, child with pointers to
    // live structs of the right types; WNOWAIT leaves it unreaped.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_waitid,
            libc::P_PID,
            pid,
            &mut info as *mut libc::siginfo_t,
            libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
            &mut usage as *mut libc::rusage,
        )
    };
    assert_eq!(rc, 0, "waitid({pid}): {}", std::io::Error::last_os_error());
    // SAFETY: waitid filled in a SIGCHLD siginfo, or left it zeroed (WNOHANG
    // and no change): si_pid is 0 then.
    let exited = unsafe { info.si_pid() } == pid;
    exited.then_some(usage)
}
