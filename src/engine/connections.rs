//! An engine thread's connections and the HTTP/1.1 exchanges on them:
//! connecting (TCP, then TLS), writing request batches, reading and framing
//! responses, timeouts, and reopening closed connections with back-off.
//!
//! What happens on the wire is recorded into the thread's [`Recorder`];
//! what the rest of the thread must act on is left for it to take after
//! each [`Connections::poll`]: the connections that became ready for a
//! request ([`Connections::take_ready`]) and, when the script wants them,
//! the complete responses ([`Connections::take_responses`]). Nothing here
//! decides when to send.
//!
//! The per-request path is kept to the syscalls it needs: a socket is
//! registered with epoll once (edge-triggered, read + write), a request is
//! written directly when it is due (no writable-event round trip), and a
//! read shorter than the buffer ends the read loop (no read that would only
//! return EAGAIN).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use crate::engine::conn::{backoff_ns, Conn, Phase, Ticket};
use crate::engine::recorder::Recorder;
use crate::engine::source::Batch;
use crate::engine::transport::start_connect;
use crate::error::io_reason;
use crate::http::response::{Captured, Response};
use crate::http::transport::Transport;
use crate::stats::ErrorKind;
use crate::sys::{self, Interest, Poller, WallClock};
use crate::tls::{describe_handshake_error, TlsClient};

/// An incomplete response of at least this many bytes may be held back
/// by TCP flow control until it is read: the thread then reads promptly.
const LARGE_RESPONSE: usize = 16 * 1024;
/// A thread's read buffer starts at this size: enough for typical
/// responses, cheap for thousands of threads.
const READ_BUFFER: usize = 16 * 1024;
/// A read that fills the buffer grows it to this size, so that big bodies
/// take few reads.
const LARGE_READ_BUFFER: usize = 64 * 1024;

/// What every connection of a thread has in common.
pub struct ConnectionSetup {
    pub connections: usize,
    pub tls: Option<TlsClient>,
    /// Capture headers and bodies (for the script's `response()`).
    pub capture: bool,
    pub timeout_ns: u64,
}

/// A complete response the script wants to see.
pub struct CapturedResponse {
    pub status: u16,
    pub captured: Captured,
}

pub struct Connections {
    setup: ConnectionSetup,
    poller: Poller,
    conns: Vec<Conn>,
    /// Connections to reopen: (when, connection), earliest first.
    reopen: BinaryHeap<Reverse<(u64, usize)>>,
    /// Connections that became ready for a request since the last
    /// [`Connections::take_ready`].
    ready: Vec<Ticket>,
    responses: Vec<CapturedResponse>,
    buf: Vec<u8>,
    /// Converts the kernel's receive stamps to the monotonic clock.
    wall_clock: WallClock,
    /// Connections in the middle of a large response.
    receiving_large: usize,
}

impl Connections {
    pub fn new(setup: ConnectionSetup) -> io::Result<Connections> {
        let poller = Poller::new(setup.connections + 8)?;
        let conns = (0..setup.connections).map(|_| Conn::new(setup.capture)).collect();
        Ok(Connections {
            poller,
            conns,
            reopen: BinaryHeap::new(),
            ready: Vec::new(),
            responses: Vec::new(),
            buf: vec![0; READ_BUFFER],
            wall_clock: WallClock::calibrate(),
            receiving_large: 0,
            setup,
        })
    }

    /// Starts opening every connection to `addr`.
    pub fn open_all(&mut self, addr: SocketAddr, recorder: &mut Recorder) {
        let now = sys::now_ns();
        for i in 0..self.conns.len() {
            self.connect(i, addr, now, recorder);
        }
    }

    /// Some connection is still connecting or in its TLS handshake.
    pub fn any_opening(&self) -> bool {
        self.conns.iter().any(Conn::opening)
    }

    /// Some request batch is waiting for its responses.
    pub fn any_in_flight(&self) -> bool {
        self.conns.iter().any(Conn::in_flight)
    }

    /// Requests sent (at least in part) and still unanswered.
    pub fn requests_in_flight(&self) -> u64 {
        self.conns.iter().filter(|c| c.in_flight()).map(|c| c.pending as u64).sum()
    }

    /// The intended time of the oldest request in flight, if any.
    pub fn oldest_in_flight(&self) -> Option<u64> {
        self.conns
            .iter()
            .filter(|c| c.in_flight())
            .filter_map(|c| c.intended.first())
            .min()
            .copied()
    }

    /// Since when connection `i` has been ready (ns).
    pub fn ready_since(&self, i: usize) -> u64 {
        self.conns[i].ready_since
    }

    /// The ticket's connection is still ready, as it was when the ticket
    /// was given.
    #[inline]
    pub fn is_ready(&self, ticket: Ticket) -> bool {
        let conn = &self.conns[ticket.conn];
        conn.phase == Phase::Idle && conn.ready_serial == ticket.serial
    }

    /// A large response is half received on some connection.
    pub fn receiving_large_response(&self) -> bool {
        self.receiving_large > 0
    }

    /// The connections that became ready for a request since the last call.
    pub fn take_ready(&mut self) -> std::vec::Drain<'_, Ticket> {
        self.ready.drain(..)
    }

    /// The complete responses captured since the last call, in order.
    pub fn take_responses(&mut self) -> std::vec::Drain<'_, CapturedResponse> {
        self.responses.drain(..)
    }

    /// Starts writing `batch` on the ready connection `i`. `intended` holds
    /// the plan's intended time of each of its requests; empty in the
    /// closed loop, where a request is intended when it is sent. Returns
    /// when the batch went out (ns).
    pub fn send(
        &mut self,
        i: usize,
        batch: Batch,
        intended: &[u64],
        recorder: &mut Recorder,
    ) -> u64 {
        let sent = sys::now_ns();
        let conn = &mut self.conns[i];
        conn.intended.clear();
        if intended.is_empty() {
            conn.intended.resize(batch.depth(), sent);
        } else {
            conn.intended.extend_from_slice(intended);
        }
        conn.sent_ns = sent;
        conn.pending = batch.depth();
        conn.parser.start(batch.heads[0]);
        conn.batch = batch;
        conn.written = 0;
        conn.phase = Phase::Writing;
        self.write_more(i, recorder);
        sent
    }

    /// Waits for socket events at most `timeout` and handles them.
    pub fn poll(&mut self, timeout: Duration, recorder: &mut Recorder) {
        // A failed wait (only EINTR in practice, which returns 0) just
        // means another turn of the loop.
        let n = self.poller.poll(Some(timeout)).unwrap_or(0);
        for k in 0..n {
            let event = self.poller.ready(k);
            let i = event.token as usize;
            if event.writable || event.closed {
                self.on_writable(i, recorder);
            }
            if event.readable || event.closed {
                self.on_readable(i, event.closed, recorder);
            }
        }
    }

    /// When the next connection is due to be reopened, if one is.
    pub fn next_reopen_at(&self) -> Option<u64> {
        self.reopen.peek().map(|Reverse((at, _))| *at)
    }

    /// Reopens, to `addr`, the connections whose back-off is over.
    pub fn reopen_due(&mut self, now: u64, addr: SocketAddr, recorder: &mut Recorder) {
        while let Some(&Reverse((at, i))) = self.reopen.peek() {
            if at > now {
                return;
            }
            self.reopen.pop();
            if self.conns[i].phase == Phase::Closed {
                self.connect(i, addr, now, recorder);
            }
        }
    }

    /// A request with no complete response within the timeout is counted
    /// and its connection replaced (wrk never counted hung requests; wrk2
    /// counted them every 2 s without closing). Connects that hang count as
    /// connect errors. Also refreshes the clock conversion of the receive
    /// stamps, which drifts only with NTP's slew.
    pub fn expire_timeouts(&mut self, now: u64, recorder: &mut Recorder) {
        let timeout = self.setup.timeout_ns;
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            if conn.in_flight() && now.saturating_sub(conn.sent_ns) > timeout {
                self.fail(i, ErrorKind::Timeout, "no response within the timeout", recorder);
            } else if conn.opening() && now.saturating_sub(conn.connect_started_ns) > timeout {
                self.fail(i, ErrorKind::Connect, "connect timed out", recorder);
            }
        }
        self.wall_clock = WallClock::calibrate();
    }

    // ----- connection life cycle --------------------------------------------

    fn connect(&mut self, i: usize, addr: SocketAddr, now: u64, recorder: &mut Recorder) {
        self.conns[i].connect_started_ns = now;
        let stream = match start_connect(addr) {
            Ok(socket) => socket,
            Err(e) => return self.fail(i, ErrorKind::Connect, &io_reason(&e), recorder),
        };
        let stream = match &self.setup.tls {
            None => Transport::plain(stream),
            Some(tls) => match tls.session() {
                Ok(session) => Transport::tls(stream, session),
                Err(e) => return self.fail(i, ErrorKind::Connect, &format!("TLS: {e}"), recorder),
            },
        };
        if let Err(e) = self.poller.add(stream.socket(), i as u64, Interest::ReadWrite) {
            return self.fail(i, ErrorKind::Connect, &io_reason(&e), recorder);
        }
        let conn = &mut self.conns[i];
        conn.stream = Some(stream);
        conn.phase = Phase::Connecting;
        conn.pending = 0;
    }

    fn on_writable(&mut self, i: usize, recorder: &mut Recorder) {
        match self.conns[i].phase {
            Phase::Connecting => self.finish_connect(i, recorder),
            Phase::Handshaking => self.continue_handshake(i, recorder),
            Phase::Writing => self.write_more(i, recorder),
            _ => {}
        }
    }

    /// `closing`: the peer has closed its side, so the data is followed by
    /// an end of stream that only a read returning 0 reveals.
    fn on_readable(&mut self, i: usize, closing: bool, recorder: &mut Recorder) {
        match self.conns[i].phase {
            Phase::Handshaking => self.continue_handshake(i, recorder),
            Phase::Reading | Phase::Writing | Phase::Idle => self.read(i, closing, recorder),
            _ => {}
        }
    }

    fn finish_connect(&mut self, i: usize, recorder: &mut Recorder) {
        let conn = &mut self.conns[i];
        let Some(stream) = conn.stream.as_ref() else { return };
        match stream.socket().take_error() {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) => {
                return self.fail(i, ErrorKind::Connect, &io_reason(&e), recorder)
            }
        }
        // A refused connect can also show up as "not connected" here.
        if let Err(e) = stream.socket().peer_addr() {
            return self.fail(i, ErrorKind::Connect, &io_reason(&e), recorder);
        }
        conn.phase = Phase::Handshaking;
        self.continue_handshake(i, recorder);
    }

    fn continue_handshake(&mut self, i: usize, recorder: &mut Recorder) {
        let Some(stream) = self.conns[i].stream.as_mut() else { return };
        match stream.handshake() {
            Ok(true) => self.became_ready(i, sys::now_ns()),
            Ok(false) => {}
            Err(e) => {
                let cause = format!("TLS handshake: {}", describe_handshake_error(&e, None));
                self.fail(i, ErrorKind::Connect, &cause, recorder);
            }
        }
    }

    /// Connection `i` can carry a request from `since` on (ns).
    fn became_ready(&mut self, i: usize, since: u64) {
        let conn = &mut self.conns[i];
        conn.phase = Phase::Idle;
        conn.ready_since = since;
        conn.ready_serial = conn.ready_serial.wrapping_add(1);
        self.ready.push(Ticket { conn: i, serial: conn.ready_serial });
    }

    /// Closes connection `i`'s socket and forgets its request in flight;
    /// it is reopened `after` ns from now.
    fn close(&mut self, i: usize, after: u64) {
        let conn = &mut self.conns[i];
        if let Some(stream) = conn.stream.take() {
            self.poller.delete(stream.socket());
        }
        conn.pending = 0;
        conn.received = 0;
        conn.phase = Phase::Closed;
        self.set_receiving_large(i, false);
        self.reopen.push(Reverse((sys::now_ns().saturating_add(after), i)));
    }

    /// Counts an error on connection `i`, closes it, and reopens it after
    /// the back-off for its run of failures.
    fn fail(&mut self, i: usize, kind: ErrorKind, cause: &str, recorder: &mut Recorder) {
        recorder.error(kind, cause);
        let failures = self.conns[i].failures + 1;
        self.conns[i].failures = failures;
        self.close(i, backoff_ns(failures));
    }

    // ----- requests ----------------------------------------------------------

    /// Writes as much of the request as the socket takes.
    fn write_more(&mut self, i: usize, recorder: &mut Recorder) {
        let conn = &mut self.conns[i];
        let Some(stream) = conn.stream.as_mut() else { return };
        while conn.written < conn.batch.bytes.len() {
            match stream.write(&conn.batch.bytes[conn.written..]) {
                Ok(0) => return self.fail(i, ErrorKind::Write, "connection closed", recorder),
                Ok(n) => conn.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(i, ErrorKind::Write, &io_reason(&e), recorder),
            }
        }
        match stream.flush() {
            Ok(true) => conn.phase = Phase::Reading,
            Ok(false) => {}
            Err(e) => self.fail(i, ErrorKind::Write, &io_reason(&e), recorder),
        }
    }

    // ----- responses ---------------------------------------------------------

    /// Reads everything the socket has and feeds the response parser. A
    /// short read ends the loop unless the peer is closing (edge-triggered
    /// epoll would not report the end of stream again).
    fn read(&mut self, i: usize, until_end: bool, recorder: &mut Recorder) {
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(stream) = self.conns[i].stream.as_mut() {
            let drains = stream.short_read_drains();
            match stream.read(&mut buf) {
                Ok((0, _)) => {
                    self.peer_closed(i, recorder);
                    break;
                }
                Ok((n, stamp)) => {
                    recorder.bytes_read(n);
                    self.conns[i].received += n;
                    let now = sys::now_ns();
                    let arrived = stamp.map_or(now, |wall| self.wall_clock.to_now_ns(wall, now));
                    let open = self.parse(i, &buf[..n], arrived, recorder);
                    let filled = n == buf.len();
                    if !open || (drains && !until_end && !filled) {
                        break;
                    }
                    if filled && buf.len() < LARGE_READ_BUFFER {
                        buf.resize(LARGE_READ_BUFFER, 0);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(i, ErrorKind::Read, &io_reason(&e), recorder);
                    break;
                }
            }
        }
        self.buf = buf;
        let conn = &self.conns[i];
        let large_and_incomplete = conn.stream.is_some()
            && conn.in_flight()
            && !conn.parser.is_idle()
            && conn.received >= LARGE_RESPONSE;
        self.set_receiving_large(i, large_and_incomplete);
    }

    /// Keeps the count of connections in the middle of a large response.
    fn set_receiving_large(&mut self, i: usize, receiving: bool) {
        let conn = &mut self.conns[i];
        if conn.receiving_large != receiving {
            conn.receiving_large = receiving;
            if receiving {
                self.receiving_large += 1;
            } else {
                self.receiving_large -= 1;
            }
        }
    }

    /// Feeds bytes to connection `i`'s parser. Returns false when the
    /// connection was closed meanwhile.
    fn parse(&mut self, i: usize, mut data: &[u8], arrived: u64, recorder: &mut Recorder) -> bool {
        while !data.is_empty() {
            if self.conns[i].pending == 0 {
                let cause = "data received with no request outstanding";
                self.fail(i, ErrorKind::Read, cause, recorder);
                return false;
            }
            match self.conns[i].parser.feed(data) {
                Ok(feed) => {
                    data = &data[feed.consumed..];
                    if let Some(response) = feed.done {
                        if !self.response_complete(i, response, arrived, recorder) {
                            return false;
                        }
                    }
                }
                Err(e) => {
                    self.fail(i, ErrorKind::Read, e.as_str(), recorder);
                    return false;
                }
            }
        }
        true
    }

    /// The peer closed the connection (a zero-byte read).
    fn peer_closed(&mut self, i: usize, recorder: &mut Recorder) {
        match self.conns[i].parser.eof() {
            Ok(Some(response)) => {
                if self.response_complete(i, response, sys::now_ns(), recorder) {
                    self.close(i, 0);
                }
            }
            Ok(None) if self.conns[i].pending == 0 => self.close(i, 0),
            Ok(None) => {
                let cause = "connection closed before the response";
                self.fail(i, ErrorKind::Read, cause, recorder);
            }
            Err(e) => self.fail(i, ErrorKind::Read, e.as_str(), recorder),
        }
    }

    /// Records a complete response that arrived at `arrived` (the kernel's
    /// receive stamp). Returns false if the connection was closed (not
    /// keep-alive), so the caller stops using it.
    fn response_complete(
        &mut self,
        i: usize,
        response: Response,
        arrived: u64,
        recorder: &mut Recorder,
    ) -> bool {
        let conn = &mut self.conns[i];
        conn.received = 0;
        let index = conn.batch.depth() - conn.pending;
        conn.pending -= 1;
        recorder.response(conn.exchange(index), arrived, response.status, conn.pending == 0);
        if conn.pending > 0 {
            conn.parser.start(conn.batch.heads[index + 1]);
        }
        if let Some(captured) = response.captured {
            self.responses.push(CapturedResponse { status: response.status, captured });
        }
        let conn = &mut self.conns[i];
        if conn.pending > 0 {
            return true;
        }
        conn.failures = 0;
        if !response.keep_alive {
            self.close(i, 0);
            return false;
        }
        if conn.phase == Phase::Reading {
            self.became_ready(i, arrived);
        }
        true
    }
}
