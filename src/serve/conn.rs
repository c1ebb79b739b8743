//! One client connection: reads and parses requests, queues their
//! responses in order, and writes each when it is due.
//!
//! The socket is registered edge-triggered, so every call reads until the
//! socket has nothing more (or the queue is full) and writes until it
//! would block. Nothing is allocated per request on the default path: the
//! input buffer, the response queue and the output buffer keep their
//! capacity for the life of the connection.
//!
//! A request head that has begun must end within the head timeout, and a
//! TLS handshake within it from the accept; past it the connection is
//! answered 408 (or, still handshaking, just closed). An idle connection,
//! between requests or before its first, is not timed: a benchmark opens
//! its connections before it starts, and paces its requests.

use std::collections::VecDeque;
use std::io;

use super::endpoint::Endpoint;
use super::request::{self, BodyDecoder, BodyStatus, HeadParse, Request, MAX_ECHO_BODY, MAX_HEAD};
use super::response::{Body, Response, Stream, ECHO_TOO_LARGE, NEVER};
use super::{Shared, ThreadCounters};
use crate::http::transport::Transport;

/// Initial size of a connection's input buffer (it grows for large heads).
const INPUT_INITIAL: usize = 8 * 1024;

/// Responses queued per connection before reading pauses (a client that
/// pipelines without reading, or a long stall).
const MAX_PENDING: usize = 4096;

/// Bytes of `/echo` bodies queued per connection before reading pauses:
/// 4096 pipelined echoes of 1 MiB would be 4 GiB.
const MAX_PENDING_ECHO: usize = 4 * 1024 * 1024;

/// Responses are rendered into the output buffer until it holds this much,
/// so that pipelined responses leave in one write.
const OUTPUT_BATCH: usize = 64 * 1024;

/// How long a closing connection keeps draining input after its last
/// response, so that unread requests do not turn the close into a reset
/// that could destroy that response.
const LINGER_NS: u64 = 1_000_000_000;

/// What a request head that took too long is told.
const HEAD_TOO_SLOW: &str = "request head not complete within the head timeout\n";

/// Why the connection is being serviced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wake {
    /// Its timer, or writability only: no new input was signalled.
    Quiet,
    /// Input arrived.
    Input,
    /// Input arrived and the peer hung up (or failed): read to the end.
    Hangup,
}

/// What the event loop does with the connection next.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Keep it; call again on readiness or at `wake_at` (now_ns time).
    Open {
        wake_at: Option<u64>,
    },
    Close,
    /// Its first bytes are the HTTP/2 connection preface: hand it over
    /// ([`Conn::into_http2`]).
    Http2,
}

/// The HTTP/2 connection preface (RFC 9113 3.4), which a client speaking
/// HTTP/2 sends first, with prior knowledge (h2c) or after choosing h2 by
/// ALPN.
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(super) struct Conn {
    transport: Transport,
    input: Input,
    parse: Parse,
    /// Responses in request order, each with its due time.
    pending: VecDeque<Response>,
    /// The bytes of the `/echo` bodies in `pending`.
    pending_echo: usize,
    /// Rendered responses; `out[out_pos..]` is still to be written.
    out: Vec<u8>,
    out_pos: usize,
    /// The rest of a large body, written after `out`.
    stream: Option<Stream>,
    /// A malformed request or a closing response was seen: later input is
    /// discarded.
    input_done: bool,
    /// The peer sent its FIN (or the read failed).
    peer_eof: bool,
    /// A response that closes the connection has been rendered.
    close_when_flushed: bool,
    /// Draining input until then before closing.
    linger_until: Option<u64>,
    /// The wake-up the event loop has queued for this connection.
    pub(super) timer: Option<u64>,
    /// No request has been read yet: the input may be HTTP/2's preface.
    fresh: bool,
    /// The preface came: the connection is HTTP/2's.
    http2: bool,
    /// The TLS handshake is not over yet (never, on a plain connection).
    handshaking: bool,
    /// When the head begun (or the TLS handshake) must be complete; None
    /// while nothing is unfinished, or with no head timeout.
    head_deadline: Option<u64>,
}

enum Parse {
    Head,
    Body { request: Request, decoder: BodyDecoder },
}

/// The result of one parsing step.
enum Step {
    NeedInput,
    /// Something was consumed or queued; parse on.
    Continue,
    /// A request was completed (and counts).
    Request,
}

impl Conn {
    /// A connection accepted at `now`.
    pub(super) fn new(transport: Transport, now: u64, shared: &Shared) -> Conn {
        let handshaking = tls_handshaking(&transport);
        Conn {
            transport,
            input: Input::new(),
            parse: Parse::Head,
            pending: VecDeque::new(),
            pending_echo: 0,
            out: Vec::new(),
            out_pos: 0,
            stream: None,
            input_done: false,
            peer_eof: false,
            close_when_flushed: false,
            linger_until: None,
            timer: None,
            fresh: true,
            http2: false,
            handshaking,
            head_deadline: if handshaking { shared.head_deadline(now) } else { None },
        }
    }

    /// The socket and what was read of it, for the HTTP/2 server, with
    /// the head deadline running: that of the preface if it came in
    /// parts, or of a TLS handshake just over (None if neither).
    pub(super) fn into_http2(self) -> (Transport, Vec<u8>, Option<u64>) {
        (self.transport, self.input.data().to_vec(), self.head_deadline)
    }

    pub(super) fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Does whatever can be done at `now`: read (if the socket signalled
    /// it), parse, write due responses.
    pub(super) fn service(
        &mut self,
        now: u64,
        wake: Wake,
        shared: &Shared,
        counters: &ThreadCounters,
    ) -> Outcome {
        if let Some(deadline) = self.linger_until {
            return self.linger(now, wake != Wake::Quiet, deadline);
        }
        let read_to_end = wake == Wake::Hangup;
        let mut read = wake != Wake::Quiet;
        loop {
            if read && self.read_input(now, read_to_end, shared, counters).is_err() {
                return Outcome::Close;
            }
            if self.http2 {
                return Outcome::Http2;
            }
            self.watch_head(now, shared);
            if self.head_deadline.is_some_and(|deadline| now >= deadline) {
                if self.handshaking {
                    return Outcome::Close;
                }
                self.head_deadline = None;
                self.reject(Response::fatal(408, HEAD_TOO_SLOW, now, shared));
            }
            let was_full = self.pending_full();
            if self.write_output(now, shared).is_err() {
                return Outcome::Close;
            }
            // Reading stopped at a full queue and writing made room: the
            // data waiting in the buffer and the socket will not raise a
            // new edge, so go back for it now.
            read = was_full && !self.pending_full() && !self.peer_eof;
            if !read {
                return self.next_step(now);
            }
        }
    }

    fn pending_full(&self) -> bool {
        self.pending.len() >= MAX_PENDING || self.pending_echo >= MAX_PENDING_ECHO
    }

    fn queue(&mut self, response: Response) {
        self.pending_echo += echo_len(&response);
        self.pending.push_back(response);
    }

    fn unqueue(&mut self) -> Option<Response> {
        let response = self.pending.pop_front()?;
        self.pending_echo -= echo_len(&response);
        Some(response)
    }

    /// Starts the head timer when the client has left a head unfinished,
    /// and stops it when the head is complete, or when it is the server
    /// that holds the rest back (its queue is full): only the client's
    /// slowness is timed. A TLS connection is timed from its accept until
    /// its handshake is over.
    fn watch_head(&mut self, now: u64, shared: &Shared) {
        if self.handshaking {
            if tls_handshaking(&self.transport) {
                return;
            }
            self.handshaking = false;
            self.head_deadline = None;
        }
        let waiting_for_client = !self.input_done && !self.pending_full();
        let unfinished = waiting_for_client
            && matches!(self.parse, Parse::Head)
            && !self.input.data().is_empty();
        if !unfinished {
            self.head_deadline = None;
        } else if self.head_deadline.is_none() {
            self.head_deadline = shared.head_deadline(now);
        }
    }

    /// Parses what is buffered, then reads until the socket is empty,
    /// parsing after every read.
    fn read_input(
        &mut self,
        now: u64,
        read_to_end: bool,
        shared: &Shared,
        counters: &ThreadCounters,
    ) -> io::Result<()> {
        self.parse_input(now, shared);
        while !self.pending_full() && !self.peer_eof {
            let spare = self.input.spare();
            let room = spare.len();
            if room == 0 {
                break;
            }
            match self.transport.read(spare) {
                Ok((0, _)) => self.peer_eof = true,
                Ok((n, _)) => {
                    self.input.filled(n);
                    counters.requests_read(self.parse_input(now, shared));
                    // The rest is for the HTTP/2 server to read.
                    if self.http2 {
                        break;
                    }
                    // A short read from a TCP socket means its queue is
                    // empty, and later data raises a new edge: this saves
                    // the read that would only say EAGAIN. Unless the peer
                    // hung up: that edge has been consumed already.
                    if n < room && !read_to_end && self.transport.short_read_drains() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Parses buffered input into queued responses; returns the number of
    /// requests completed (`/stats` excluded).
    fn parse_input(&mut self, now: u64, shared: &Shared) -> u64 {
        let mut completed = 0;
        while !self.pending_full() {
            if self.input_done {
                self.input.clear();
                break;
            }
            let step = match std::mem::replace(&mut self.parse, Parse::Head) {
                Parse::Head => self.parse_head(now, shared),
                Parse::Body { request, decoder } => self.parse_body(request, decoder, now, shared),
            };
            match step {
                Step::NeedInput => break,
                Step::Continue => {}
                Step::Request => completed += 1,
            }
        }
        completed
    }

    fn parse_head(&mut self, now: u64, shared: &Shared) -> Step {
        if self.fresh {
            let data = self.input.data();
            let compared = data.len().min(HTTP2_PREFACE.len());
            if data[..compared] == HTTP2_PREFACE[..compared] {
                if compared < HTTP2_PREFACE.len() {
                    return Step::NeedInput;
                }
                self.http2 = true;
                return Step::NeedInput;
            }
            // TLS chose h2: whatever this is, it is no HTTP/1.1 request
            // to answer, and a bad preface ends the connection (RFC 9113
            // 3.4).
            if self.transport.alpn_protocol().as_deref() == Some(b"h2") {
                self.input_done = true;
                self.close_when_flushed = true;
                return Step::Continue;
            }
        }
        let head = match request::parse_head(self.input.data()) {
            HeadParse::Complete(head) => head,
            HeadParse::Partial if self.input.data().len() < MAX_HEAD => return Step::NeedInput,
            HeadParse::Partial | HeadParse::Invalid => {
                return self.reject(Response::fatal(400, "bad request\n", now, shared));
            }
        };
        self.input.consume(head.len);
        self.fresh = false;
        let request = head.request;
        let echo_too_large =
            matches!(head.body, BodyDecoder::Length(n) if n > MAX_ECHO_BODY as u64);
        if request.echo.is_some() && echo_too_large {
            return self.reject(Response::fatal(413, ECHO_TOO_LARGE, now, shared));
        }
        let has_body = head.body != BodyDecoder::Length(0);
        if (request.expect_continue && has_body) || request.endpoint == Endpoint::Continue {
            self.queue(Response::interim(now, shared));
        }
        self.parse = Parse::Body { request, decoder: head.body };
        Step::Continue
    }

    fn parse_body(
        &mut self,
        mut request: Request,
        mut decoder: BodyDecoder,
        now: u64,
        shared: &Shared,
    ) -> Step {
        let (used, status) = decoder.decode(self.input.data(), request.echo.as_mut());
        self.input.consume(used);
        if request.echo.as_ref().is_some_and(|echo| echo.len() > MAX_ECHO_BODY) {
            return self.reject(Response::fatal(413, ECHO_TOO_LARGE, now, shared));
        }
        match status {
            BodyStatus::NeedMore => {
                self.parse = Parse::Body { request, decoder };
                Step::NeedInput
            }
            BodyStatus::Invalid => self.reject(Response::fatal(400, "bad request\n", now, shared)),
            BodyStatus::Done => {
                let counted = request.endpoint != Endpoint::Stats;
                let response = Response::answer(request, now, shared);
                self.input_done |= response.connection == request::Connection::Close;
                self.queue(response);
                if counted {
                    Step::Request
                } else {
                    Step::Continue
                }
            }
        }
    }

    /// Queues a response that ends the connection and ignores the rest of
    /// the input.
    fn reject(&mut self, response: Response) -> Step {
        self.queue(response);
        self.input_done = true;
        Step::Continue
    }

    /// Renders due responses and writes until done or the socket is full.
    fn write_output(&mut self, now: u64, shared: &Shared) -> io::Result<()> {
        if !self.transport.flush()? {
            return Ok(());
        }
        loop {
            let written = if self.out_pos < self.out.len() {
                self.transport.write(&self.out[self.out_pos..])
            } else if let Some(stream) = &self.stream {
                self.transport.write(stream.chunk(&shared.default_body))
            } else {
                self.out.clear();
                self.out_pos = 0;
                if self.render_due(now, shared) {
                    continue;
                }
                return Ok(());
            };
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.wrote(n, shared),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn wrote(&mut self, n: usize, shared: &Shared) {
        if self.out_pos < self.out.len() {
            self.out_pos += n;
        } else if let Some(stream) = &mut self.stream {
            if stream.advance(n, &shared.default_body) {
                self.stream = None;
            }
        }
    }

    /// Renders the due responses at the head of the queue into the empty
    /// output buffer; false if none was due.
    fn render_due(&mut self, now: u64, shared: &Shared) -> bool {
        let mut rendered = false;
        // A closing response is the last one; a streamed body must finish
        // before the next response starts.
        while self.out.len() < OUTPUT_BATCH && self.stream.is_none() && !self.close_when_flushed {
            if self.pending.front().is_none_or(|r| r.due_ns > now) {
                break;
            }
            let Some(response) = self.unqueue() else { break };
            self.stream = response.render(&mut self.out, shared);
            self.close_when_flushed = response.connection == request::Connection::Close;
            rendered = true;
        }
        rendered
    }

    fn flushed(&self) -> bool {
        self.out_pos == self.out.len() && self.stream.is_none() && !self.transport.has_pending()
    }

    /// After reading and writing: close, linger, or wait (until when).
    fn next_step(&mut self, now: u64) -> Outcome {
        if self.close_when_flushed && self.flushed() {
            if self.peer_eof {
                self.transport.close_write();
                return Outcome::Close;
            }
            let deadline = close_gracefully(&mut self.transport, now);
            self.linger_until = Some(deadline);
            return Outcome::Open { wake_at: Some(deadline) };
        }
        let head_due = self.pending.front().map(|r| r.due_ns);
        if self.peer_eof {
            // Answer what the peer sent before its FIN, unless nothing is
            // left to answer or the next answer never comes (/hang); either
            // way, finish writing what was rendered first.
            let nothing_due = head_due.is_none() || head_due == Some(NEVER);
            if self.flushed() && nothing_due {
                return Outcome::Close;
            }
        }
        let answer_due = head_due.filter(|&due| due > now && due != NEVER);
        Outcome::Open { wake_at: earliest(answer_due, self.head_deadline) }
    }

    /// Closing: read and drop input until the peer closes or time is up.
    fn linger(&mut self, now: u64, readable: bool, deadline: u64) -> Outcome {
        self.input.clear();
        linger(&mut self.transport, self.input.spare(), now, readable, deadline)
    }
}

/// The bytes of an `/echo` body a queued response holds.
fn echo_len(response: &Response) -> usize {
    match &response.body {
        Body::Echo(text) => text.len(),
        _ => 0,
    }
}

/// A TLS connection whose handshake is not over. Asked of the session, not
/// by driving the handshake: bytes read here, outside the reads, would
/// leave what they decrypt unread until more came (the socket's next
/// readiness would not say readable).
fn tls_handshaking(transport: &Transport) -> bool {
    matches!(transport, Transport::Tls(_, session) if session.is_handshaking())
}

/// The earlier of two wake-ups.
pub(super) fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Ends our side of a connection the peer may still be sending on: the
/// FIN (after TLS's close_notify); then its input is to be drained
/// ([`linger`]) until it closes too or the returned deadline, so that
/// unread bytes do not turn the close into a reset that could destroy
/// what was last sent.
pub(super) fn close_gracefully(transport: &mut Transport, now: u64) -> u64 {
    transport.close_write();
    now.saturating_add(LINGER_NS)
}

/// A closing connection: reads and drops input (into `buf`) until the
/// peer closes or the `deadline` of [`close_gracefully`] passes.
pub(super) fn linger(
    transport: &mut Transport,
    buf: &mut [u8],
    now: u64,
    readable: bool,
    deadline: u64,
) -> Outcome {
    if now >= deadline || (readable && !drain_input(transport, buf)) {
        return Outcome::Close;
    }
    Outcome::Open { wake_at: Some(deadline) }
}

/// Reads and drops input until the socket is empty; false at the end of
/// the stream or on an error.
fn drain_input(transport: &mut Transport, buf: &mut [u8]) -> bool {
    loop {
        match transport.read(buf) {
            Ok((0, _)) => return false,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// The input buffer: `buf[start..end]` is read and not yet parsed.
struct Input {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Input {
    fn new() -> Input {
        Input { buf: vec![0; INPUT_INITIAL], start: 0, end: 0 }
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.clear();
        }
    }

    fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Room to read into: moves unparsed bytes to the front when the end
    /// is reached, and grows up to [`MAX_HEAD`] for a large head. Empty
    /// only when a full-size head is still incomplete.
    fn spare(&mut self) -> &mut [u8] {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < MAX_HEAD {
                self.buf.resize((self.buf.len() * 2).min(MAX_HEAD), 0);
            }
        }
        &mut self.buf[self.end..]
    }

    fn filled(&mut self, n: usize) {
        self.end += n;
    }
}
