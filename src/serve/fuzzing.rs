//! The built-in server on hostile input, for the fuzz targets and property
//! tests (`crate::fuzzing`): its request parsing on its own, a whole
//! connection ([`Conn`]) over a socket pair, and one that speaks HTTP/2
//! ([`Http2Conn`]).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

use super::conn::{Conn, Outcome, Wake};
use super::http2::Http2Conn;
use super::request::{parse_head, BodyDecoder, BodyStatus, HeadParse, MAX_HEAD};
use super::response::Response;
use super::{ServeOptions, Shared, ThreadCounters};
use crate::fuzzing::frames::{frame, FrameReader, Op, Streams, PREFACE, REQUESTS, SETTINGS};
use crate::fuzzing::input::{cut, Input};
use crate::fuzzing::run_responses;
use crate::http::request::count_requests;
use crate::http::response::ResponseParser;
use crate::http::transport::Transport;

/// Default body sizes to serve: none, the default, and one too large to
/// copy next to its headers (streamed).
const BODY_SIZES: [usize; 4] = [0, 13, 100, 20_000];

/// The server's settings. No head timeout: the server's clock jumps
/// hours at a time here, so every head split over two reads would time
/// out, and the splits are what is being tried.
fn shared(input: &mut Input) -> Shared {
    let body_size = BODY_SIZES[input.below(BODY_SIZES.len())];
    Shared::new(
        &ServeOptions { body_size, head_timeout: None, ..ServeOptions::default() },
        None,
        None,
    )
}

/// Where the parsing of [`serve_requests`] is.
enum State {
    Head,
    Body { request: super::request::Request, decoder: BodyDecoder },
}

/// The server's request parsing as its connections do it, on a stream
/// that arrives a few bytes at a time: heads from what has arrived, bodies
/// as they arrive. Each call uses no more than it was given and a body
/// that needs more has used everything; the response to each request
/// frames as one response for the client's parser; and the requests the
/// server took are the requests the request counter finds in the same
/// bytes (the server is the stricter of the two). Returns the HEAD flags
/// of the requests taken.
pub fn serve_requests(data: &[u8]) -> Vec<bool> {
    let mut input = Input::new(data);
    let shared = shared(&mut input);
    let step = 1 + input.below(64);
    let stream = input.rest();
    let (mut offset, mut arrived) = (0, step.min(stream.len()));
    let mut state = State::Head;
    // The HEAD flags of the requests taken, and where the last one ended.
    let (mut taken, mut taken_end) = (Vec::new(), 0);
    loop {
        let available = &stream[offset..arrived];
        state = match state {
            State::Head => match parse_head(available) {
                HeadParse::Complete(head) => {
                    assert!(head.len > 0 && head.len <= available.len());
                    offset += head.len;
                    State::Body { request: head.request, decoder: head.body }
                }
                HeadParse::Partial if available.len() < MAX_HEAD && arrived < stream.len() => {
                    arrived = (arrived + step).min(stream.len());
                    State::Head
                }
                HeadParse::Partial | HeadParse::Invalid => break,
            },
            State::Body { mut request, mut decoder } => {
                let (used, status) = decoder.decode(available, request.echo.as_mut());
                assert!(used <= available.len());
                offset += used;
                match status {
                    BodyStatus::NeedMore => {
                        assert_eq!(used, available.len(), "a body that needs more used all");
                        if arrived == stream.len() {
                            break;
                        }
                        arrived = (arrived + step).min(stream.len());
                        State::Body { request, decoder }
                    }
                    BodyStatus::Invalid => break,
                    BodyStatus::Done => {
                        let head_only = request.head_only;
                        let closes = request.connection == super::request::Connection::Close;
                        check_response(Response::answer(request, 1, &shared), &shared);
                        taken.push(head_only);
                        taken_end = offset;
                        if closes {
                            break;
                        }
                        State::Head
                    }
                }
            }
        };
    }
    if !taken.is_empty() {
        let counted = count_requests(&stream[..taken_end]);
        let text = String::from_utf8_lossy(&stream[..taken_end]);
        assert_eq!(counted.map(|batch| batch.is_head).as_ref(), Ok(&taken), "{text:?}");
    }
    taken
}

/// A response, rendered, must be one response to the client's parser,
/// with its status (unless its body is too large to render at once).
fn check_response(response: Response, shared: &Shared) {
    let mut out = Vec::new();
    if response.render(&mut out, shared).is_some() {
        return;
    }
    let parsed = run_responses(false, &[response.head_only], &[&out[..]]);
    let text = String::from_utf8_lossy(&out);
    let statuses: Vec<u16> = parsed.expect(&text).iter().map(|r| r.status).collect();
    assert_eq!(statuses, [response.status], "{text:?}");
}

/// The client's end of a connection, and the server's, both non-blocking.
/// A Unix socket pair in a `TcpStream`: the server's code only reads,
/// writes and shuts down a stream socket, and unlike loopback TCP a pair
/// leaves no port in TIME_WAIT behind (the fuzzer makes thousands of
/// connections a second).
fn connection() -> io::Result<(TcpStream, TcpStream)> {
    let (client, server) = UnixStream::pair()?;
    let [client, server] = [client, server].map(|socket| TcpStream::from(OwnedFd::from(socket)));
    for socket in [&client, &server] {
        socket.set_nonblocking(true)?;
    }
    Ok((client, server))
}

/// Service calls after the client's FIN, at most.
const ROUNDS_AFTER_EOF: usize = 8;

/// Client writes the server's full socket may refuse, at most.
const MAX_REFUSED_WRITES: usize = 64;

/// Output read per drain, at most (a `/bytes/<huge>` response never ends).
const DRAIN_MAX: usize = 4 << 20;

/// What the client has read of the server's output.
struct Client {
    socket: TcpStream,
    /// Frames the output when no request is HEAD (the framer would need to
    /// know which responses answer one).
    parser: Option<ResponseParser>,
    /// The server closed its end.
    eof: bool,
    /// The last bytes read.
    tail: Vec<u8>,
}

/// What the server writes for `100 Continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

impl Client {
    /// Reads what the server wrote, checking that it frames as responses.
    fn drain(&mut self) {
        let mut buf = [0; 64 * 1024];
        let mut total = 0;
        while total < DRAIN_MAX && !self.eof {
            match self.socket.read(&mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    total += n;
                    self.tail.extend_from_slice(&buf[..n]);
                    self.tail.drain(..self.tail.len().saturating_sub(CONTINUE.len()));
                    if let Some(parser) = &mut self.parser {
                        let mut rest = &buf[..n];
                        while !rest.is_empty() {
                            let feed = parser.feed(rest).unwrap_or_else(|error| {
                                panic!(
                                    "server output: {error}: {:?}",
                                    String::from_utf8_lossy(rest)
                                )
                            });
                            rest = &rest[feed.consumed..];
                            if feed.done.is_some() {
                                parser.start(false);
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // WouldBlock: all read; a reset: the server closed with
                // input unread, which drops what was in flight.
                Err(_) => break,
            }
        }
    }
}

/// A server connection ([`Conn`], the code that runs in `pace serve`) fed
/// the input over a socket in pieces, then the client's FIN. The
/// server's clock jumps ahead at every call, so that delayed responses
/// come due. It must not panic, must close or wait after the FIN, and
/// (when no request is HEAD) what it writes must frame as responses for
/// pace's client, complete when it closes (but for a final response that
/// never comes after `100 Continue`: `/hang`).
pub fn serve_connection(data: &[u8]) {
    let mut input = Input::new(data);
    let shared = shared(&mut input);
    let cuts = input.cuts();
    let stream = input.rest();
    let counters = ThreadCounters::default();
    let Ok((client, server)) = connection() else { return };
    let mut now = START;
    let mut conn = Conn::new(Transport::plain(server), now, &shared);
    let has_head = stream.windows(4).any(|window| window == b"HEAD");
    let mut client = Client {
        socket: client,
        parser: (!has_head).then(|| ResponseParser::new(false)),
        eof: false,
        tail: Vec::new(),
    };
    let mut service = |conn: &mut Conn, wake| {
        now += 1 << 47;
        conn.service(now, wake, &shared, &counters)
    };
    let mut outcome = Outcome::Open { wake_at: None };
    // A server that stops reading (a full queue behind `/hang`) leaves the
    // rest of the input unsent.
    let mut refused = 0;
    for mut piece in cut(stream, &cuts) {
        while !piece.is_empty() && outcome != Outcome::Close && refused < MAX_REFUSED_WRITES {
            match client.socket.write(piece) {
                Ok(n) => piece = &piece[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => refused += 1,
                Err(_) => break,
            }
            outcome = service(&mut conn, Wake::Input);
            client.drain();
        }
    }
    let _ = client.socket.shutdown(Shutdown::Write);
    let mut wake = Wake::Hangup;
    for _ in 0..ROUNDS_AFTER_EOF {
        if outcome == Outcome::Close {
            break;
        }
        outcome = service(&mut conn, wake);
        wake = Wake::Input;
        client.drain();
    }
    let closed = outcome == Outcome::Close;
    drop(conn);
    if closed {
        client.drain();
        if let (true, Some(parser)) = (client.eof, &mut client.parser) {
            // After `100 Continue` for `/hang` the final response never
            // comes.
            let text = String::from_utf8_lossy(stream);
            let complete = parser.eof().is_ok() || client.tail == CONTINUE;
            assert!(complete, "the server closed within a response to {text:?}");
        }
    }
}

/// A connection of the server as its worker holds it: HTTP/1.1 until the
/// preface hands it over to HTTP/2.
enum Served {
    Http1(Box<Conn>),
    Http2(Box<Http2Conn>),
}

/// The server's end of [`serve_http2`], serviced as its worker does.
struct Server<'a> {
    conn: Option<Served>,
    shared: &'a Shared,
    counters: ThreadCounters,
    now: u64,
    outcome: Outcome,
    /// The connection was handed over to HTTP/2 (it may have closed since).
    http2: bool,
}

impl Server<'_> {
    /// One service call at `now` plus `advance`; hands the connection over
    /// to HTTP/2 when its first bytes are the preface, as the worker does.
    fn service(&mut self, wake: Wake, advance: u64) {
        self.now += advance;
        let (shared, counters, now) = (self.shared, &self.counters, self.now);
        self.outcome = match &mut self.conn {
            Some(Served::Http1(conn)) => conn.service(now, wake, shared, counters),
            Some(Served::Http2(conn)) => conn.service(now, wake, shared, counters),
            None => Outcome::Close,
        };
        if let Outcome::Open { wake_at: Some(due) } = self.outcome {
            assert!(due > now, "woken at {due}, not after now ({now}): a busy loop");
        }
        if self.outcome == Outcome::Http2 {
            let Some(Served::Http1(conn)) = self.conn.take() else {
                panic!("an HTTP/2 connection asked to be handed over");
            };
            let (transport, received, preface_deadline) = conn.into_http2();
            assert!(received.starts_with(PREFACE), "handed over without the preface");
            // Handed over, even if what came with the preface ends it (a
            // flood of CONTINUATION frames is a fatal error for nghttp2).
            self.http2 = true;
            match Http2Conn::new(transport, &received, preface_deadline, now, shared) {
                Ok(conn) => {
                    self.conn = Some(Served::Http2(Box::new(conn)));
                    // What the socket still holds raises no new edge.
                    self.service(Wake::Input, 0);
                }
                Err(_) => self.outcome = Outcome::Close,
            }
        }
        if self.outcome == Outcome::Close {
            self.conn = None;
        }
    }

    fn closed(&self) -> bool {
        self.conn.is_none()
    }
}

/// The client's end of [`serve_http2`]: what it has still to send, and
/// what it read of the server's output.
struct Peer {
    socket: TcpStream,
    unsent: Vec<u8>,
    /// Everything sent, from the start.
    sent: Vec<u8>,
    streams: Streams,
    /// The server's output once it is HTTP/2's.
    frames: FrameReader,
    /// The server closed its end.
    eof: bool,
}

impl Peer {
    /// Reads what the server wrote; once it speaks HTTP/2, checks that it
    /// is well-formed frames on the streams the client opened.
    fn drain(&mut self, http2: bool) {
        let mut buf = [0; 64 * 1024];
        let mut total = 0;
        while total < DRAIN_MAX && !self.eof {
            match self.socket.read(&mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    total += n;
                    if http2 {
                        self.frames.stream_limit = self.streams.named;
                        self.frames.feed(&buf[..n]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
}

/// The clock jumps this far for [`Op::Expire`]: every `/delay` comes due.
const JUMP: u64 = 1 << 47;

/// The server's clock when a connection starts.
const START: u64 = 1_000_000_000;

/// The built-in server's HTTP/2 (`serve/http2.rs`, handed over from
/// `serve/conn.rs` by the preface) with a client that sends anything,
/// over a Unix socket pair. The input: 2 bytes: body size as in
/// `serve_conn`; byte 2 bit 0: the client does *not* start with the
/// preface and an empty SETTINGS (the program sends what it sends); then
/// a program of [`Op`]s (see `crate::fuzzing::frames`) as the client:
/// requests (the endpoints, HEAD, malformed ones), DATA, resets, PING,
/// WINDOW_UPDATE, GOAWAY, any frame, raw bytes; [`Op::Read`] sends what
/// was built so far cut at its points, servicing the server after each
/// piece; [`Op::Submit`] lets 1 ms pass, [`Op::Expire`] jumps the clock
/// ahead; [`Op::Fail`] resets the client's socket, [`Op::PeerClose`]
/// sends its FIN. After the program the client sends the rest, its FIN,
/// and the server is serviced a few more times.
///
/// What must hold: no panic; the connection is handed over to HTTP/2
/// exactly when the client's first bytes are the preface; a wake-up is
/// always after now (no busy loop); once HTTP/2, what the server writes is
/// well-formed frames, SETTINGS first, HEADERS and DATA on odd streams,
/// none on a stream the client never named; after the FIN it closes
/// (dropping what would never be answered: `/hang`).
pub fn serve_http2(data: &[u8]) {
    let mut input = Input::new(data);
    let shared = shared(&mut input);
    let greets = input.byte() & 1 == 0;
    let Ok((client, server)) = connection() else { return };
    let mut server = Server {
        conn: Some(Served::Http1(Box::new(Conn::new(Transport::plain(server), START, &shared)))),
        shared: &shared,
        counters: ThreadCounters::default(),
        now: START,
        outcome: Outcome::Open { wake_at: None },
        http2: false,
    };
    let mut peer = Peer {
        socket: client,
        unsent: Vec::new(),
        sent: Vec::new(),
        streams: Streams::new(true),
        frames: FrameReader::new(false),
        eof: false,
    };
    if greets {
        peer.unsent.extend_from_slice(PREFACE);
        frame(&mut peer.unsent, SETTINGS, 0, 0, &[]);
    }
    let request = |choice: u8| REQUESTS[usize::from(choice % 16)];
    while !input.is_empty() && !server.closed() {
        let op = Op::read(&mut input);
        if let Some(bytes) = op.bytes(&mut peer.streams, request) {
            peer.unsent.extend_from_slice(&bytes);
            continue;
        }
        match op {
            Op::Read { cuts } => send(&mut peer, &mut server, &cuts),
            Op::Submit { .. } => server.service(Wake::Quiet, 1_000_000),
            Op::Expire { .. } => server.service(Wake::Quiet, JUMP),
            Op::Fail => {
                let _ = peer.socket.shutdown(Shutdown::Both);
                peer.eof = true;
                break;
            }
            Op::PeerClose => break,
            _ => unreachable!("{op:?} is bytes"),
        }
        peer.drain(server.http2);
    }
    send(&mut peer, &mut server, &[]);
    let _ = peer.socket.shutdown(Shutdown::Write);
    let mut wake = Wake::Hangup;
    for _ in 0..ROUNDS_AFTER_EOF {
        if server.closed() {
            break;
        }
        server.service(wake, JUMP);
        wake = Wake::Input;
        peer.drain(server.http2);
    }
    if peer.sent.starts_with(PREFACE) {
        assert!(server.http2, "the preface came and the connection is not HTTP/2's");
    }
    // Every `/delay` came due, and an answer that never comes (`/hang`)
    // is dropped when the client has gone: nothing keeps the connection.
    if server.http2 {
        assert!(server.closed(), "open after the client's FIN");
    }
}

/// Sends what the client has built, cut at `cuts`, servicing the server
/// after each piece (as long as it reads).
fn send(peer: &mut Peer, server: &mut Server, cuts: &[u16]) {
    let unsent = std::mem::take(&mut peer.unsent);
    let mut refused = 0;
    for mut piece in cut(&unsent, cuts) {
        while !piece.is_empty() && !server.closed() && refused < MAX_REFUSED_WRITES {
            match peer.socket.write(piece) {
                Ok(n) => {
                    peer.sent.extend_from_slice(&piece[..n]);
                    piece = &piece[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => refused += 1,
                Err(_) => return,
            }
            server.service(Wake::Input, 1000);
            peer.drain(server.http2);
        }
    }
}
