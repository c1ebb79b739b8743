//! An engine thread's connections: connecting (TCP, then TLS), writing,
//! reading with the kernel's receive stamps, timeouts, and reopening closed
//! connections with back-off. What is exchanged on a connection is its
//! protocol's business ([`Http1`], [`Http2`]): it turns request batches
//! into bytes and bytes into completed responses, stamped with the arrival
//! of the read that completed them.
//!
//! What happens on the wire is recorded into the thread's [`Recorder`];
//! what the rest of the thread must act on is left for it to take after
//! each [`Connections::poll`]: the slots that became ready for a request
//! batch ([`Connections::take_ready`]), requests a server left unprocessed
//! to send again ([`Connections::take_retry`]) and, when the script wants
//! them, the complete responses ([`Connections::take_responses`]). Nothing
//! here decides when to send.
//!
//! The per-request path is kept to the syscalls it needs: a socket is
//! registered with epoll once (edge-triggered, read + write), a request is
//! written directly when it is due (no writable-event round trip), and a
//! read shorter than the buffer ends the read loop (no read that would only
//! return EAGAIN).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::config::origins::origin_name;
use crate::endpoint::Endpoint;
use crate::engine::conn::{backoff_ns, Conn, Phase, Protocol, Ticket};
use crate::engine::delivery::{CapturedResponse, Delivery, Retry, Verdict};
use crate::engine::http1::Http1;
use crate::engine::http2::Http2;
use crate::engine::origin::Origin;
use crate::engine::recorder::Recorder;
use crate::engine::source::Batch;
use crate::engine::transport::start_connect;
use crate::error::io_reason;
use crate::http::transport::Transport;
use crate::stats::ErrorKind;
use crate::sys::{self, Interest, Poller, WallClock};
use crate::tls::{describe_handshake_error, describe_read_error};

/// A thread's read buffer starts at this size: enough for typical
/// responses, cheap for thousands of threads.
const READ_BUFFER: usize = 16 * 1024;
/// A read that fills the buffer grows it to this size, so that big bodies
/// take few reads.
const LARGE_READ_BUFFER: usize = 64 * 1024;
/// How soon a connect the server's backlog had no room for is tried again.
const BACKLOG_FULL_RETRY_NS: u64 = 1_000_000;

/// What the connections speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Http1,
    /// HTTP/2 with `streams` streams per connection, for batches of
    /// `depth` requests.
    Http2 {
        streams: usize,
        depth: usize,
    },
}

/// What every connection of a thread has in common.
pub struct ConnectionSetup {
    /// Where the connections go: the run's origins, and how many of the
    /// thread's connections go to each (at least one each).
    pub origins: Arc<[Origin]>,
    pub per_origin: Vec<usize>,
    pub wire: Wire,
    /// Capture headers and bodies (for the script's `response()`).
    pub capture: bool,
    pub timeout_ns: u64,
}

pub struct Connections {
    setup: ConnectionSetup,
    poller: Poller,
    conns: Vec<Conn>,
    /// Connections to reopen: (when, connection), earliest first.
    reopen: BinaryHeap<Reverse<(u64, usize)>>,
    /// Slots that became ready for a batch since the last
    /// [`Connections::take_ready`].
    ready: Vec<Ticket>,
    responses: Vec<CapturedResponse>,
    /// Requests to send again, oldest first.
    retries: VecDeque<Retry>,
    buf: Vec<u8>,
    /// Converts the kernel's receive stamps to the monotonic clock.
    wall_clock: WallClock,
    /// When the last wait that reported events ended: the data it reported
    /// arrived before then, so converting its receive stamps needs no clock
    /// read.
    polled_at: u64,
    /// Connections in the middle of a large response.
    receiving_large: usize,
}

impl Connections {
    pub fn new(setup: ConnectionSetup) -> io::Result<Connections> {
        let origin_of_conn: Vec<usize> = (setup.per_origin.iter().enumerate())
            .flat_map(|(origin, &n)| std::iter::repeat_n(origin, n))
            .collect();
        let poller = Poller::new(origin_of_conn.len() + 8)?;
        let conns = origin_of_conn
            .into_iter()
            .map(|origin| {
                Conn::new(
                    origin,
                    match setup.wire {
                        Wire::Http1 => Protocol::Http1(Http1::new(setup.capture)),
                        Wire::Http2 { streams, depth } => {
                            Protocol::Http2(Box::new(Http2::new(setup.capture, streams, depth)))
                        }
                    },
                )
            })
            .collect();
        Ok(Connections {
            poller,
            conns,
            reopen: BinaryHeap::new(),
            ready: Vec::new(),
            responses: Vec::new(),
            retries: VecDeque::new(),
            buf: vec![0; READ_BUFFER],
            wall_clock: WallClock::calibrate(),
            polled_at: 0,
            receiving_large: 0,
            setup,
        })
    }

    /// Starts opening every connection; `first` is where the first
    /// origin's go (a script's `thread.addr` may change it, see
    /// [`Connections::address`]).
    pub fn open_all(&mut self, first: &Endpoint, recorder: &mut Recorder) {
        let now = sys::now_ns();
        for i in 0..self.conns.len() {
            self.connect(i, first, now, recorder);
        }
    }

    /// Some connection is still connecting, in its TLS handshake, or
    /// waiting for the server's HTTP/2 SETTINGS.
    pub fn any_opening(&self) -> bool {
        self.conns.iter().any(Conn::opening)
    }

    /// Some request batch is waiting for its responses.
    pub fn any_in_flight(&self) -> bool {
        self.conns.iter().any(Conn::in_flight)
    }

    /// Requests sent (at least in part) and still unanswered.
    pub fn requests_in_flight(&self) -> u64 {
        self.conns.iter().map(Conn::requests_in_flight).sum()
    }

    /// At most `limit` requests are in flight (counted only that far).
    pub fn in_flight_at_most(&self, limit: u64) -> bool {
        let mut counted = 0;
        self.conns.iter().all(|c| {
            counted += c.requests_in_flight();
            counted <= limit
        })
    }

    /// The intended time of the oldest request in flight, if any.
    pub fn oldest_in_flight(&self) -> Option<u64> {
        self.conns
            .iter()
            .filter_map(|c| match &c.protocol {
                Protocol::Http1(http1) => http1.oldest_in_flight(),
                Protocol::Http2(http2) => http2.oldest_in_flight(),
            })
            .min()
    }

    /// The origin connection `i` goes to.
    #[inline]
    pub fn origin_of(&self, i: usize) -> usize {
        self.conns[i].origin
    }

    /// Some request waiting to be sent again goes to connection `i`'s
    /// origin.
    pub fn has_retry_for(&self, i: usize) -> bool {
        let origin = self.conns[i].origin as u32;
        self.retries.iter().any(|retry| retry.batch.origin == origin)
    }

    /// The ticket's connection can still carry a batch, as it could when
    /// the ticket was given.
    #[inline]
    pub fn is_ready(&self, ticket: Ticket) -> bool {
        self.conns[ticket.conn].accepts(ticket)
    }

    /// A large response is half received on some connection.
    pub fn receiving_large_response(&self) -> bool {
        self.receiving_large > 0
    }

    /// The slots that became ready for a batch since the last call.
    pub fn take_ready(&mut self) -> std::vec::Drain<'_, Ticket> {
        self.ready.drain(..)
    }

    /// The complete responses captured since the last call, in order.
    pub fn take_responses(&mut self) -> std::vec::Drain<'_, CapturedResponse> {
        self.responses.drain(..)
    }

    /// Some request waits to be sent again.
    pub fn has_retry(&self) -> bool {
        !self.retries.is_empty()
    }

    /// The requests still waiting to be sent again (at the end of the run).
    pub fn take_retries(&mut self) -> std::collections::vec_deque::Drain<'_, Retry> {
        self.retries.drain(..)
    }

    /// Starts writing `batch` on the connection of the ready `ticket`.
    /// `intended` holds the plan's intended time of each of its requests;
    /// empty in the closed loop, where a request is intended when it is
    /// sent. Returns when the batch went out (ns).
    pub fn send(
        &mut self,
        i: usize,
        batch: Batch,
        intended: &[u64],
        recorder: &mut Recorder,
    ) -> u64 {
        let sent = sys::now_ns();
        match &mut self.conns[i].protocol {
            Protocol::Http1(http1) => http1.start(batch, intended, sent),
            Protocol::Http2(http2) => {
                let mut out = Delivery::new(
                    recorder,
                    &mut self.responses,
                    &mut self.ready,
                    &mut self.retries,
                    i,
                );
                let verdict = http2.start(batch, intended, sent, &mut out);
                if !self.act(i, verdict, recorder) {
                    return sent;
                }
            }
        }
        self.write_more(i, recorder);
        sent
    }

    /// Sends the oldest request waiting to go again to connection `i`'s
    /// origin on it (an HTTP/2 connection with a free slot).
    pub fn send_retry(&mut self, i: usize, recorder: &mut Recorder) {
        let origin = self.conns[i].origin as u32;
        let Some(at) = self.retries.iter().position(|retry| retry.batch.origin == origin) else {
            return;
        };
        let Some(retry) = self.retries.remove(at) else { return };
        let Protocol::Http2(http2) = &mut self.conns[i].protocol else {
            self.retries.push_front(retry);
            return;
        };
        let mut out =
            Delivery::new(recorder, &mut self.responses, &mut self.ready, &mut self.retries, i);
        let verdict = http2.retry(retry, sys::now_ns(), &mut out);
        if self.act(i, verdict, recorder) {
            self.write_more(i, recorder);
        }
    }

    /// Waits for socket events at most `timeout` and handles them; with
    /// `spin`, spins on them for up to that long before it blocks and says
    /// how long it spun and how long the first one took (see
    /// [`sys::Poller::poll_spinning`]).
    pub fn poll(
        &mut self,
        timeout: Duration,
        spin: Option<Duration>,
        recorder: &mut Recorder,
    ) -> sys::Waited {
        // A failed wait (only EINTR in practice, which returns 0) just
        // means another turn of the loop.
        let Ok(waited) = self.poller.poll_spinning(timeout, spin) else {
            return sys::Waited::default();
        };
        if waited.events > 0 {
            self.polled_at = sys::now_ns();
        }
        for k in 0..waited.events {
            let event = self.poller.ready(k);
            let i = event.token as usize;
            if event.writable || event.closed {
                self.on_writable(i, recorder);
            }
            if event.readable || event.closed {
                self.on_readable(i, event.closed, recorder);
            }
        }
        waited
    }

    /// When the next connection is due to be reopened, if one is.
    pub fn next_reopen_at(&self) -> Option<u64> {
        self.reopen.peek().map(|Reverse((at, _))| *at)
    }

    /// Reopens the connections whose back-off is over (`first`: where the
    /// first origin's go).
    pub fn reopen_due(&mut self, now: u64, first: &Endpoint, recorder: &mut Recorder) {
        while let Some(&Reverse((at, i))) = self.reopen.peek() {
            if at > now {
                return;
            }
            self.reopen.pop();
            if self.conns[i].phase == Phase::Closed {
                self.connect(i, first, now, recorder);
            }
        }
    }

    /// A request with no complete response within the timeout is counted:
    /// an HTTP/1.1 connection is replaced (wrk never counted hung requests;
    /// wrk2 counted them every 2 s without closing), an HTTP/2 stream is
    /// reset. Connects that hang count as connect errors. Also refreshes
    /// the clock conversion of the receive stamps, which drifts only with
    /// NTP's slew.
    pub fn expire_timeouts(&mut self, now: u64, recorder: &mut Recorder) {
        let timeout = self.setup.timeout_ns;
        for i in 0..self.conns.len() {
            let conn = &mut self.conns[i];
            if conn.opening() {
                if now.saturating_sub(conn.connect_started_ns) > timeout {
                    let tunnel = &self.setup.origins[conn.origin].tunnel;
                    let cause = match (conn.phase, tunnel) {
                        (Phase::Tunneling, Some(tunnel)) => tunnel.timed_out(),
                        _ => "connect timed out".to_string(),
                    };
                    self.fail(i, ErrorKind::Connect, &cause, recorder);
                }
                continue;
            }
            match &mut conn.protocol {
                Protocol::Http1(http1) if http1.expired(now, timeout) => {
                    self.fail(i, ErrorKind::Timeout, "no response within the timeout", recorder);
                }
                Protocol::Http1(_) => {}
                Protocol::Http2(http2) => {
                    let mut out = Delivery::new(
                        recorder,
                        &mut self.responses,
                        &mut self.ready,
                        &mut self.retries,
                        i,
                    );
                    let verdict = http2.expire(now, timeout, &mut out);
                    if self.act(i, verdict, recorder) {
                        self.write_more(i, recorder);
                    }
                }
            }
        }
        self.wall_clock = WallClock::calibrate();
    }

    // ----- connection life cycle --------------------------------------------

    /// Where connection `i` goes: its origin's endpoint; `first` for the
    /// first origin (its source's, which a script may change). A clone
    /// per connect (of an `Arc` for a Unix socket), none per request.
    fn address(&self, i: usize, first: &Endpoint) -> Endpoint {
        match self.conns[i].origin {
            0 => first.clone(),
            origin => self.setup.origins[origin].endpoint.clone(),
        }
    }

    fn connect(&mut self, i: usize, first: &Endpoint, now: u64, recorder: &mut Recorder) {
        self.conns[i].connect_started_ns = now;
        let endpoint = self.address(i, first);
        let stream = match start_connect(&endpoint) {
            Ok(socket) => socket,
            // A Unix socket's backlog is full: try again shortly, as TCP
            // retries a SYN the backlog dropped, without an error.
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    && matches!(endpoint, Endpoint::Unix(_)) =>
            {
                return self.close(i, BACKLOG_FULL_RETRY_NS)
            }
            Err(e) => {
                return self.fail(i, ErrorKind::Connect, &endpoint.connect_failure(&e), recorder)
            }
        };
        let stream = match &self.setup.origins[self.conns[i].origin].tls {
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
    }

    fn on_writable(&mut self, i: usize, recorder: &mut Recorder) {
        match self.conns[i].phase {
            Phase::Connecting => self.finish_connect(i, recorder),
            Phase::Tunneling => self.continue_tunnel(i, recorder),
            Phase::Handshaking => self.continue_handshake(i, recorder),
            Phase::Open => self.write_more(i, recorder),
            Phase::Closed => {}
        }
    }

    /// `closing`: the peer has closed its side, so the data is followed by
    /// an end of stream that only a read returning 0 reveals.
    fn on_readable(&mut self, i: usize, closing: bool, recorder: &mut Recorder) {
        match self.conns[i].phase {
            Phase::Tunneling => self.continue_tunnel(i, recorder),
            Phase::Handshaking => self.continue_handshake(i, recorder),
            Phase::Open => self.read(i, closing, recorder),
            Phase::Connecting | Phase::Closed => {}
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
        if let Err(e) = stream.socket().check_connected() {
            return self.fail(i, ErrorKind::Connect, &io_reason(&e), recorder);
        }
        if self.setup.origins[conn.origin].tunnel.is_some() {
            conn.phase = Phase::Tunneling;
            conn.tunnel = Some(Box::default());
            return self.continue_tunnel(i, recorder);
        }
        conn.phase = Phase::Handshaking;
        self.continue_handshake(i, recorder);
    }

    /// Goes on with the CONNECT exchange through the proxy; once the
    /// tunnel is open, the connection goes on as if connected to the
    /// target. A refusal is a connect error, in the proxy's words.
    fn continue_tunnel(&mut self, i: usize, recorder: &mut Recorder) {
        let conn = &mut self.conns[i];
        let tunnel = self.setup.origins[conn.origin].tunnel.as_ref();
        let (Some(stream), Some(handshake), Some(tunnel)) =
            (conn.stream.as_ref(), conn.tunnel.as_mut(), tunnel)
        else {
            return;
        };
        match handshake.advance(stream.socket(), tunnel) {
            Ok(true) => {}
            Ok(false) => return,
            Err(cause) => return self.fail(i, ErrorKind::Connect, &cause, recorder),
        }
        conn.tunnel = None;
        conn.phase = Phase::Handshaking;
        self.continue_handshake(i, recorder);
    }

    fn continue_handshake(&mut self, i: usize, recorder: &mut Recorder) {
        let Some(stream) = self.conns[i].stream.as_mut() else { return };
        match stream.handshake() {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                let cause = format!("TLS handshake: {}", describe_handshake_error(&e, None));
                return self.fail(i, ErrorKind::Connect, &cause, recorder);
            }
        }
        let chosen = stream.alpn_protocol();
        if let Protocol::Http2(_) = self.conns[i].protocol {
            // HTTP/2 over TLS only when the server chose it by ALPN.
            let tls = self.setup.origins[self.conns[i].origin].tls.is_some();
            if tls && chosen.as_deref() != Some(b"h2".as_slice()) {
                let chose = chosen.map_or("no protocol".to_string(), |p| {
                    String::from_utf8_lossy(&p).into_owned()
                });
                let cause = format!("the server chose {chose} by ALPN, not h2");
                return self.fail(i, ErrorKind::Connect, &cause, recorder);
            }
        }
        self.opened(i, recorder);
    }

    /// The socket (and TLS) is up: the protocol starts on it.
    fn opened(&mut self, i: usize, recorder: &mut Recorder) {
        let now = sys::now_ns();
        self.conns[i].phase = Phase::Open;
        let mut out =
            Delivery::new(recorder, &mut self.responses, &mut self.ready, &mut self.retries, i);
        match &mut self.conns[i].protocol {
            Protocol::Http1(http1) => http1.connected(now, &mut out),
            Protocol::Http2(http2) => {
                let verdict = http2.connected(&mut out);
                if self.act(i, verdict, recorder) {
                    self.write_more(i, recorder);
                }
            }
        }
    }

    /// Carries out a protocol's verdict on connection `i`; true when the
    /// connection stays open.
    fn act(&mut self, i: usize, verdict: Verdict, recorder: &mut Recorder) -> bool {
        match verdict {
            Verdict::Keep => true,
            Verdict::Close => {
                self.close(i, 0);
                false
            }
            Verdict::Fail(kind, cause) => {
                self.fail(i, kind, &cause, recorder);
                false
            }
        }
    }

    /// Closes connection `i`'s socket and forgets what was in flight on
    /// it; it is reopened `after` ns from now.
    fn close(&mut self, i: usize, after: u64) {
        let conn = &mut self.conns[i];
        if let Some(stream) = conn.stream.take() {
            self.poller.delete(stream.socket());
        }
        match &mut conn.protocol {
            Protocol::Http1(http1) => http1.forget(),
            Protocol::Http2(http2) => http2.forget(),
        }
        conn.phase = Phase::Closed;
        conn.tunnel = None;
        self.set_receiving_large(i, false);
        self.reopen.push(Reverse((sys::now_ns().saturating_add(after), i)));
    }

    /// Counts an error on connection `i`, closes it, and reopens it after
    /// the back-off for its run of failures. Every HTTP/2 stream in flight
    /// on it is lost with it, each an error of its own.
    /// With several origins, a failed connect names its origin (it is
    /// no target's error: the report's error causes say where).
    fn fail(&mut self, i: usize, kind: ErrorKind, cause: &str, recorder: &mut Recorder) {
        let named;
        let cause = match kind {
            ErrorKind::Connect if self.setup.origins.len() > 1 => {
                let origin = &self.setup.origins[self.conns[i].origin];
                named = format!("{}: {cause}", origin_name(&origin.target));
                &named
            }
            _ => cause,
        };
        let lost = match &self.conns[i].protocol {
            Protocol::Http2(http2) => {
                http2.targets_in_flight().for_each(|target| recorder.lost(target));
                http2.requests_in_flight().max(1)
            }
            Protocol::Http1(http1) => {
                if let Some(target) = http1.target_in_flight() {
                    recorder.lost(target);
                }
                1
            }
        };
        for _ in 0..lost {
            recorder.error(kind, cause);
        }
        let failures = self.conns[i].failures + 1;
        self.conns[i].failures = failures;
        self.close(i, backoff_ns(failures));
    }

    // ----- requests ----------------------------------------------------------

    /// Writes as much of what the protocol has to send as the socket takes.
    fn write_more(&mut self, i: usize, recorder: &mut Recorder) {
        let conn = &mut self.conns[i];
        let Some(stream) = conn.stream.as_mut() else { return };
        loop {
            let data = match &conn.protocol {
                Protocol::Http1(http1) => http1.unwritten(),
                Protocol::Http2(http2) => http2.unwritten(),
            };
            if data.is_empty() {
                break;
            }
            match stream.write(data) {
                Ok(0) => return self.fail(i, ErrorKind::Write, "connection closed", recorder),
                Ok(n) => match &mut conn.protocol {
                    Protocol::Http1(http1) => http1.wrote(n),
                    Protocol::Http2(http2) => http2.wrote(n),
                },
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(i, ErrorKind::Write, &io_reason(&e), recorder),
            }
        }
        match stream.flush() {
            Ok(true) => {
                if let Protocol::Http1(http1) = &mut conn.protocol {
                    http1.flushed();
                }
            }
            Ok(false) => {}
            Err(e) => self.fail(i, ErrorKind::Write, &io_reason(&e), recorder),
        }
    }

    // ----- responses ---------------------------------------------------------

    /// Reads everything the socket has and hands it to the protocol. A
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
                    let arrived = match stamp {
                        Some(wall) => self.wall_clock.to_now_ns(wall, self.polled_at, sys::now_ns),
                        None => sys::now_ns(),
                    };
                    let open = self.receive(i, &buf[..n], arrived, recorder);
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
                    self.fail(i, ErrorKind::Read, &describe_read_error(&e), recorder);
                    break;
                }
            }
        }
        self.buf = buf;
        let conn = &self.conns[i];
        let large = conn.stream.is_some()
            && match &conn.protocol {
                Protocol::Http1(http1) => http1.receiving_large(),
                Protocol::Http2(http2) => http2.receiving_large(),
            };
        self.set_receiving_large(i, large);
    }

    /// Hands the bytes of one read, which arrived at `arrived`, to
    /// connection `i`'s protocol. Returns false when the connection was
    /// closed meanwhile.
    fn receive(&mut self, i: usize, data: &[u8], arrived: u64, recorder: &mut Recorder) -> bool {
        let mut out =
            Delivery::new(recorder, &mut self.responses, &mut self.ready, &mut self.retries, i);
        let conn = &mut self.conns[i];
        let verdict = match &mut conn.protocol {
            Protocol::Http1(http1) => http1.receive(data, arrived, &mut out),
            Protocol::Http2(http2) => http2.receive(data, arrived, &mut out),
        };
        if out.succeeded {
            conn.failures = 0;
        }
        let http2 = matches!(conn.protocol, Protocol::Http2(_));
        let open = self.act(i, verdict, recorder);
        // HTTP/2 answers what it read (acknowledgements, window updates).
        if open && http2 {
            self.write_more(i, recorder);
        }
        open
    }

    /// The peer closed the connection (a zero-byte read).
    fn peer_closed(&mut self, i: usize, recorder: &mut Recorder) {
        let now = sys::now_ns();
        let mut out =
            Delivery::new(recorder, &mut self.responses, &mut self.ready, &mut self.retries, i);
        let conn = &mut self.conns[i];
        let verdict = match &mut conn.protocol {
            Protocol::Http1(http1) => http1.closed_by_peer(now, &mut out),
            Protocol::Http2(http2) => http2.closed_by_peer(),
        };
        if out.succeeded {
            conn.failures = 0;
        }
        // A connection the peer closed is reopened, however it ended.
        if self.act(i, verdict, recorder) {
            self.close(i, 0);
        }
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
}
