//! An engine thread's connections: setting up their links (connect, a
//! proxy's tunnel, TLS), writing, reading with the kernel's receive stamps,
//! timeouts, and reopening closed connections with back-off. What is
//! exchanged on a connection is its protocol's business ([`Protocol`]): it
//! turns request batches into bytes and bytes into completed responses,
//! stamped with the arrival of the read that completed them. Nothing here
//! asks which protocol it is.
//!
//! What happens on the wire is recorded into the thread's [`Recorder`];
//! what the rest of the thread must act on is left for it to take after
//! each [`Connections::poll`]: the slots that became ready for a request
//! batch ([`Connections::take_ready`]), requests a server left unprocessed
//! to send again ([`Connections::take_retries`]) and, when the script wants
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

use super::conn::{backoff_ns, Conn, Phase};
use super::link::{Link, Refused};
use super::origin::Origin;
use super::protocol::{
    CapturedResponse, Delivery, Opened, Outgoing, Protocol, Retry, Ticket, Verdict,
};
use super::recorder::Recorder;
use crate::config::origins::origin_name;
use crate::endpoint::Endpoint;
use crate::error::io_reason;
use crate::stats::ErrorKind;
use crate::sys::{self, Interest, Poller, WallClock};
use crate::tls::describe_read_error;

/// A thread's read buffer starts at this size: enough for typical
/// responses, cheap for thousands of threads.
const READ_BUFFER: usize = 16 * 1024;
/// A read that fills the buffer grows it to this size, so that big bodies
/// take few reads.
const LARGE_READ_BUFFER: usize = 64 * 1024;
/// How soon a connect the server's backlog had no room for is tried again.
const BACKLOG_FULL_RETRY_NS: u64 = 1_000_000;

/// What every connection of a thread has in common.
pub struct ConnectionSetup<P: Protocol> {
    /// Where the connections go: the run's origins, and how many of the
    /// thread's connections go to each (at least one each).
    pub origins: Arc<[Origin]>,
    pub per_origin: Vec<usize>,
    /// The protocol's side of every connection.
    pub protocol: P::Setup,
    pub timeout_ns: u64,
}

pub struct Connections<P: Protocol> {
    origins: Arc<[Origin]>,
    timeout_ns: u64,
    poller: Poller,
    conns: Vec<Conn<P>>,
    /// Connections to reopen: (when, connection), earliest first.
    reopen: BinaryHeap<Reverse<(u64, usize)>>,
    /// Slots that became ready for a batch since the last
    /// [`Connections::take_ready`].
    ready: Vec<Ticket>,
    responses: Vec<CapturedResponse>,
    /// Requests to send again, oldest first.
    retries: VecDeque<Retry<P::Wire>>,
    buf: Vec<u8>,
    /// Converts the kernel's receive stamps to the monotonic clock.
    wall_clock: WallClock,
    /// When the last wait that reported events ended: the data it reported
    /// arrived before then, so converting its receive stamps needs no clock
    /// read.
    polled_at: u64,
    /// Connections in the middle of a large response.
    receiving_large: usize,
    /// The protocols' own timers (only when they have any): (when,
    /// connection), earliest first; an entry is checked when it is due.
    timers: BinaryHeap<Reverse<(u64, usize)>>,
    /// Connections with batches started this turn and not written yet,
    /// in the order of their first send (see [`Protocol::MULTIPLEXED`]).
    unflushed: Vec<usize>,
}

impl<P: Protocol> Connections<P> {
    pub fn new(setup: ConnectionSetup<P>) -> io::Result<Connections<P>> {
        let origin_of_conn: Vec<usize> = (setup.per_origin.iter().enumerate())
            .flat_map(|(origin, &n)| std::iter::repeat_n(origin, n))
            .collect();
        let poller = Poller::new(origin_of_conn.len() + 8)?;
        let conns =
            origin_of_conn.into_iter().map(|origin| Conn::new(origin, P::new(&setup.protocol)));
        Ok(Connections {
            origins: setup.origins,
            timeout_ns: setup.timeout_ns,
            poller,
            conns: conns.collect(),
            reopen: BinaryHeap::new(),
            ready: Vec::new(),
            responses: Vec::new(),
            retries: VecDeque::new(),
            buf: vec![0; READ_BUFFER],
            wall_clock: WallClock::calibrate(),
            polled_at: 0,
            receiving_large: 0,
            timers: BinaryHeap::new(),
            unflushed: Vec::new(),
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

    /// Some connection is still setting up its link, or its protocol's
    /// opening (HTTP/2's SETTINGS).
    pub fn any_opening(&self) -> bool {
        self.conns.iter().any(Conn::opening)
    }

    /// Some request is waiting for its response.
    pub fn any_in_flight(&self) -> bool {
        self.conns.iter().any(|c| c.protocol.in_flight() > 0)
    }

    /// Requests sent (at least in part) and still unanswered.
    pub fn requests_in_flight(&self) -> u64 {
        self.conns.iter().map(|c| c.protocol.in_flight()).sum()
    }

    /// At most `limit` requests are in flight (counted only that far).
    pub fn in_flight_at_most(&self, limit: u64) -> bool {
        let mut counted = 0;
        self.conns.iter().all(|c| {
            counted += c.protocol.in_flight();
            counted <= limit
        })
    }

    /// The intended time of the oldest request in flight, if any.
    pub fn oldest_in_flight(&self) -> Option<u64> {
        self.conns.iter().filter_map(|c| c.protocol.oldest_in_flight()).min()
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
    pub fn take_retries(&mut self) -> std::collections::vec_deque::Drain<'_, Retry<P::Wire>> {
        self.retries.drain(..)
    }

    /// Starts writing `batch` on the connection of the ready `ticket`.
    /// `intended` holds the plan's intended time of each of its requests;
    /// empty in the closed loop, where a request is intended when it is
    /// sent. Returns when the batch went out (ns).
    pub fn send(
        &mut self,
        i: usize,
        batch: Outgoing<P::Wire>,
        intended: &[u64],
        recorder: &mut Recorder,
    ) -> u64 {
        let sent = sys::now_ns();
        let verdict = self.with_protocol(i, recorder, |p, out| p.start(batch, intended, sent, out));
        if self.act(i, verdict, recorder) {
            self.started(i, recorder);
        }
        sent
    }

    /// Sends the oldest request waiting to go again to connection `i`'s
    /// origin on it.
    pub fn send_retry(&mut self, i: usize, recorder: &mut Recorder) {
        let origin = self.conns[i].origin as u32;
        let Some(at) = self.retries.iter().position(|retry| retry.batch.origin == origin) else {
            return;
        };
        let Some(retry) = self.retries.remove(at) else { return };
        let now = sys::now_ns();
        let verdict = self.with_protocol(i, recorder, |p, out| p.retry(retry, now, out));
        if self.act(i, verdict, recorder) {
            self.started(i, recorder);
        }
    }

    /// A batch was started on connection `i`: its bytes go out now, or,
    /// over a multiplexed protocol, with the other batches this turn
    /// starts on the connection ([`Connections::write_started`]). Every
    /// request of a turn was due when the turn began, so the later write
    /// delays none: the first waits for the others' encoding (well under a
    /// microsecond each), where a write each would have cost it nothing
    /// and every later one a system call.
    fn started(&mut self, i: usize, recorder: &mut Recorder) {
        if !P::MULTIPLEXED {
            return self.write_more(i, recorder);
        }
        let conn = &mut self.conns[i];
        if !conn.unflushed {
            conn.unflushed = true;
            self.unflushed.push(i);
        }
    }

    /// Writes what the batches started this turn left to write, a write
    /// per connection. The worker calls it at the end of every turn that
    /// sent.
    pub fn write_started(&mut self, recorder: &mut Recorder) {
        if self.unflushed.is_empty() {
            return;
        }
        let mut unflushed = std::mem::take(&mut self.unflushed);
        for &i in &unflushed {
            self.conns[i].unflushed = false;
            self.write_more(i, recorder);
        }
        // Keep the allocation for the next turn.
        unflushed.clear();
        self.unflushed = unflushed;
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

    /// When the next connection is due to be reopened, or the next
    /// protocol timer fires, if any.
    pub fn next_due_at(&self) -> Option<u64> {
        let reopen = self.reopen.peek().map(|Reverse((at, _))| *at);
        reopen.into_iter().chain(self.next_timer_at()).min()
    }

    /// When the next protocol timer fires, if any.
    pub fn next_timer_at(&self) -> Option<u64> {
        self.timers.peek().map(|Reverse((at, _))| *at)
    }

    /// Reopens the connections whose back-off is over (`first`: where the
    /// first origin's go) and fires the protocol timers that are due.
    pub fn run_due(&mut self, now: u64, first: &Endpoint, recorder: &mut Recorder) {
        while let Some(&Reverse((at, i))) = self.reopen.peek() {
            if at > now {
                break;
            }
            self.reopen.pop();
            if self.conns[i].phase == Phase::Closed {
                self.connect(i, first, now, recorder);
            }
        }
        self.fire_timers(now, recorder);
    }

    /// Fires the protocol timers that are due at `now` (also after the run,
    /// while what is in flight is collected: the messages of a call's
    /// stream still go).
    pub fn fire_timers(&mut self, now: u64, recorder: &mut Recorder) {
        while let Some(&Reverse((at, i))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            if self.conns[i].timer_armed != Some(at) {
                continue; // replaced by a later or earlier one
            }
            self.conns[i].timer_armed = None;
            let open = self.conns[i].phase == Phase::Open;
            match self.conns[i].protocol.next_timer() {
                Some(next) if next <= now && open => {
                    // with_protocol arms the protocol's next timer.
                    let verdict = self.with_protocol(i, recorder, |p, out| p.on_timer(now, out));
                    if self.act(i, verdict, recorder) {
                        self.write_more(i, recorder);
                    }
                }
                Some(next) if open => {
                    self.conns[i].timer_armed = Some(next);
                    self.timers.push(Reverse((next, i)));
                }
                _ => {}
            }
        }
    }

    /// Requests with no complete response within the timeout are counted
    /// as the protocol does (HTTP/1.1 replaces its connection, HTTP/2
    /// resets the streams). Set-ups that hang count as connect errors.
    /// Also refreshes the clock conversion of the receive stamps, which
    /// drifts only with NTP's slew.
    pub fn expire_timeouts(&mut self, now: u64, recorder: &mut Recorder) {
        let timeout = self.timeout_ns;
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            if conn.opening() {
                if now.saturating_sub(conn.connect_started_ns) > timeout {
                    let origin = &self.origins[conn.origin];
                    let cause = match &conn.link {
                        Some(link) if conn.phase == Phase::Linking => link.timed_out(origin),
                        _ => "connect timed out".to_string(),
                    };
                    self.fail(i, ErrorKind::Connect, &cause, recorder);
                }
                continue;
            }
            if conn.phase != Phase::Open {
                continue;
            }
            let verdict = self.with_protocol(i, recorder, |p, out| p.expire(now, timeout, out));
            if self.act(i, verdict, recorder) {
                self.write_more(i, recorder);
            }
        }
        self.wall_clock = WallClock::calibrate();
    }

    /// The run is over: each open connection's protocol has its last words
    /// (see [`Protocol::last_words`]); the links close when dropped.
    pub fn say_goodbye(&mut self, recorder: &mut Recorder) {
        for conn in self.conns.iter_mut().filter(|conn| conn.phase == Phase::Open) {
            let (Some(link), Some(words)) =
                (conn.link.as_mut(), conn.protocol.last_words(recorder))
            else {
                continue;
            };
            let _ = link.write(words);
        }
    }

    // ----- connection life cycle --------------------------------------------

    /// Where connection `i` goes: its origin's endpoint; `first` for the
    /// first origin (its source's, which a script may change). A clone
    /// per connect (of an `Arc` for a Unix socket), none per request.
    fn address(&self, i: usize, first: &Endpoint) -> Endpoint {
        match self.conns[i].origin {
            0 => first.clone(),
            origin => self.origins[origin].endpoint.clone(),
        }
    }

    fn connect(&mut self, i: usize, first: &Endpoint, now: u64, recorder: &mut Recorder) {
        self.conns[i].connect_started_ns = now;
        let endpoint = self.address(i, first);
        let origin = &self.origins[self.conns[i].origin];
        let link = match P::Link::connect(&endpoint, origin) {
            Ok(link) => link,
            Err(Refused::Busy) => return self.close(i, BACKLOG_FULL_RETRY_NS, recorder),
            Err(Refused::Failed(cause)) => {
                return self.fail(i, ErrorKind::Connect, &cause, recorder)
            }
        };
        if let Err(e) = self.poller.add(link.fd(), i as u64, Interest::ReadWrite) {
            return self.fail(i, ErrorKind::Connect, &io_reason(&e), recorder);
        }
        let conn = &mut self.conns[i];
        conn.link = Some(link);
        conn.phase = Phase::Linking;
    }

    fn on_writable(&mut self, i: usize, recorder: &mut Recorder) {
        match self.conns[i].phase {
            Phase::Linking => self.advance_link(i, true, recorder),
            Phase::Open => self.write_more(i, recorder),
            Phase::Closed => {}
        }
    }

    /// `closing`: the peer has closed its side, so the data is followed by
    /// an end of stream that only a read returning 0 reveals.
    fn on_readable(&mut self, i: usize, closing: bool, recorder: &mut Recorder) {
        match self.conns[i].phase {
            Phase::Linking => self.advance_link(i, false, recorder),
            Phase::Open => self.read(i, closing, recorder),
            Phase::Closed => {}
        }
    }

    /// Goes on with the link's set-up; once it is up, the protocol starts.
    /// A set-up that failed is a connect error, in the link's words.
    fn advance_link(&mut self, i: usize, writable: bool, recorder: &mut Recorder) {
        let conn = &mut self.conns[i];
        let Some(link) = conn.link.as_mut() else { return };
        match link.advance(&self.origins[conn.origin], writable) {
            Ok(true) => self.opened(i, recorder),
            Ok(false) => {}
            Err(cause) => self.fail(i, ErrorKind::Connect, &cause, recorder),
        }
    }

    /// The link is up: the protocol starts on it.
    fn opened(&mut self, i: usize, recorder: &mut Recorder) {
        let now = sys::now_ns();
        self.conns[i].phase = Phase::Open;
        if let Some(link) = &self.conns[i].link {
            recorder.link_set_up(link.set_up_times());
        }
        let (tls, alpn) = self.conns[i].tls();
        let origins = self.origins.clone();
        let link = Opened { tls, alpn: alpn.as_deref(), origin: &origins[self.conns[i].origin] };
        let verdict = self.with_protocol(i, recorder, |p, out| p.connected(now, &link, out));
        if self.act(i, verdict, recorder) {
            self.write_more(i, recorder);
        }
    }

    /// Runs `operation` on connection `i`'s protocol with what it delivers
    /// to; a batch that completed ends the connection's run of failures,
    /// and a protocol with timers has its next one noted.
    #[inline]
    fn with_protocol(
        &mut self,
        i: usize,
        recorder: &mut Recorder,
        operation: impl FnOnce(&mut P, &mut Delivery<P::Wire>) -> Verdict,
    ) -> Verdict {
        let mut out =
            Delivery::new(recorder, &mut self.responses, &mut self.ready, &mut self.retries, i);
        let conn = &mut self.conns[i];
        let verdict = operation(&mut conn.protocol, &mut out);
        if out.succeeded {
            conn.failures = 0;
        }
        self.arm_timer(i);
        verdict
    }

    /// Notes connection `i`'s protocol's next timer, when it has timers
    /// and the timer moved.
    #[inline]
    fn arm_timer(&mut self, i: usize) {
        if !P::TIMERS {
            return;
        }
        let conn = &mut self.conns[i];
        let next = conn.protocol.next_timer();
        if let Some(at) = next.filter(|_| next != conn.timer_armed) {
            conn.timer_armed = next;
            self.timers.push(Reverse((at, i)));
        }
    }

    /// Carries out a protocol's verdict on connection `i`; true when the
    /// connection stays open.
    fn act(&mut self, i: usize, verdict: Verdict, recorder: &mut Recorder) -> bool {
        match verdict {
            Verdict::Keep => true,
            Verdict::Close => {
                self.close(i, 0, recorder);
                false
            }
            Verdict::CloseAndBackOff => {
                let failures = self.conns[i].failures + 1;
                self.conns[i].failures = failures;
                self.close(i, backoff_ns(failures), recorder);
                false
            }
            Verdict::Fail(kind, cause) => {
                self.fail(i, kind, &cause, recorder);
                false
            }
        }
    }

    /// Closes connection `i`'s link and forgets what was in flight on it;
    /// it is reopened `after` ns from now.
    fn close(&mut self, i: usize, after: u64, recorder: &mut Recorder) {
        let conn = &mut self.conns[i];
        if let Some(mut link) = conn.link.take() {
            if let Some(words) = conn.protocol.last_words(recorder) {
                let _ = link.write(words);
            }
            self.poller.delete(link.fd());
        }
        conn.protocol.forget();
        conn.phase = Phase::Closed;
        self.set_receiving_large(i, false);
        self.reopen.push(Reverse((sys::now_ns().saturating_add(after), i)));
    }

    /// Counts an error on connection `i`, closes it, and reopens it after
    /// the back-off for its run of failures. What was in flight on it is
    /// lost with it, as its protocol counts it (at least one error).
    /// With several origins, a failed connect names its origin (it is
    /// no target's error: the report's error causes say where).
    fn fail(&mut self, i: usize, kind: ErrorKind, cause: &str, recorder: &mut Recorder) {
        let named;
        let cause = match kind {
            ErrorKind::Connect if self.origins.len() > 1 => {
                let origin = &self.origins[self.conns[i].origin];
                named = format!("{}: {cause}", origin_name(&origin.target));
                &named
            }
            _ => cause,
        };
        let lost = self.conns[i].protocol.lose_in_flight(recorder).max(1);
        for _ in 0..lost {
            recorder.error(kind, cause);
        }
        let failures = self.conns[i].failures + 1;
        self.conns[i].failures = failures;
        self.close(i, backoff_ns(failures), recorder);
    }

    // ----- requests ----------------------------------------------------------

    /// Writes as much of what the protocol has to send as the link takes.
    fn write_more(&mut self, i: usize, recorder: &mut Recorder) {
        let conn = &mut self.conns[i];
        let Some(link) = conn.link.as_mut() else { return };
        loop {
            let data = conn.protocol.unwritten();
            if data.is_empty() {
                break;
            }
            match link.write(data) {
                Ok(0) => return self.fail(i, ErrorKind::Write, "connection closed", recorder),
                Ok(n) => conn.protocol.wrote(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.arm_timer(i),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(i, ErrorKind::Write, &io_reason(&e), recorder),
            }
        }
        match link.flush() {
            Ok(true) => conn.protocol.flushed(),
            Ok(false) => {}
            Err(e) => return self.fail(i, ErrorKind::Write, &io_reason(&e), recorder),
        }
        // What was sent may move the protocol's timer (QUIC arms loss
        // detection when it sends).
        self.arm_timer(i);
    }

    // ----- responses ---------------------------------------------------------

    /// Reads everything the link has and hands it to the protocol. A
    /// short read ends the loop unless the peer is closing (edge-triggered
    /// epoll would not report the end of stream again).
    fn read(&mut self, i: usize, until_end: bool, recorder: &mut Recorder) {
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(link) = self.conns[i].link.as_mut() {
            let drains = link.short_read_drains();
            match link.read(&mut buf) {
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
                    // Before the protocol's opening is done (QUIC's
                    // handshake, HTTP/2's SETTINGS), the connection never
                    // carried a request: its set-up failed.
                    let kind = match self.conns[i].protocol.opening() {
                        true => ErrorKind::Connect,
                        false => ErrorKind::Read,
                    };
                    self.fail(i, kind, &describe_read_error(&e), recorder);
                    break;
                }
            }
        }
        self.buf = buf;
        let conn = &self.conns[i];
        let large = conn.link.is_some() && conn.protocol.receiving_large();
        self.set_receiving_large(i, large);
    }

    /// Hands the bytes of one read, which arrived at `arrived`, to
    /// connection `i`'s protocol, and writes what it answers
    /// (acknowledgements, window updates). Returns false when the
    /// connection was closed meanwhile.
    fn receive(&mut self, i: usize, data: &[u8], arrived: u64, recorder: &mut Recorder) -> bool {
        let verdict = self.with_protocol(i, recorder, |p, out| p.receive(data, arrived, out));
        let open = self.act(i, verdict, recorder);
        if open && !self.conns[i].protocol.unwritten().is_empty() {
            self.write_more(i, recorder);
        }
        open
    }

    /// The peer closed the connection (a zero-byte read).
    fn peer_closed(&mut self, i: usize, recorder: &mut Recorder) {
        let now = sys::now_ns();
        let verdict = self.with_protocol(i, recorder, |p, out| p.closed_by_peer(now, out));
        // A connection the peer closed is reopened, however it ended.
        if self.act(i, verdict, recorder) {
            self.close(i, 0, recorder);
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

/// The connection life cycle over loopback: a real socket to a real peer
/// (a thread of the test, pace's own server, a proxy that answers
/// CONNECT), driven as a worker drives it.
#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::thread;
    use std::time::Instant;

    use super::*;
    use crate::engine::http1::{Http1, Http1Setup, Http1Wire};
    use crate::engine::http2::{Http2, Http2Setup};
    use crate::engine::protocol::Context;
    use crate::engine::testing::Delivered;
    use crate::protocol::Protocol as Choice;
    use crate::proxy::tunnel::Tunnel;
    use crate::request::Request;
    use crate::target::Target;
    use crate::tls::{TlsClient, TlsOptions};

    const SECOND: u64 = 1_000_000_000;
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    fn origin(url: &str, at: SocketAddr, tunnel: Option<Tunnel>, choice: Choice) -> Origin {
        let target = Target::parse(url).unwrap();
        let tls = (target.scheme == crate::target::Scheme::Https).then(|| {
            let options = TlsOptions { insecure: true, ..TlsOptions::default() };
            TlsClient::new(&target.host, &options, choice.alpn()).unwrap()
        });
        Origin {
            target,
            endpoint: Endpoint::Tcp(at),
            tls,
            tunnel: tunnel.map(Arc::new),
            allowed_streams: None,
        }
    }

    fn connections<P: Protocol>(origin: Origin, setup: P::Setup) -> Connections<P> {
        Connections::new(ConnectionSetup {
            origins: Arc::from([origin]),
            per_origin: vec![1],
            protocol: setup,
            timeout_ns: 2 * SECOND,
        })
        .unwrap()
    }

    /// Polls until `done` (or fails the test after 10 s).
    fn drive<P: Protocol>(
        conns: &mut Connections<P>,
        delivered: &mut Delivered<P::Wire>,
        done: impl Fn(&mut Connections<P>, &mut Delivered<P::Wire>) -> bool,
    ) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done(conns, delivered) {
            assert!(Instant::now() < deadline, "not done within 10 s");
            conns.poll(Duration::from_millis(10), None, &mut delivered.recorder);
            delivered.tickets.extend(conns.take_ready());
        }
    }

    fn get() -> Outgoing<Http1Wire> {
        let request = Request {
            method: "GET".into(),
            target: "/".into(),
            fields: vec![("Host".into(), b"h".to_vec())],
            body: None,
        };
        let context = Context { scheme: "http".into(), authority: "h".into() };
        Outgoing { wire: Http1::encode(&[request], &context).unwrap(), target: 0, origin: 0 }
    }

    /// A server of one connection: reads one request head, answers `OK`,
    /// then reads until the client closes.
    fn answer_once(listener: TcpListener) -> thread::JoinHandle<Vec<u8>> {
        thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buf = [0; 1024];
            while !request.ends_with(b"\r\n\r\n") {
                let n = socket.read(&mut buf).unwrap();
                assert!(n > 0, "closed before the request");
                request.extend_from_slice(&buf[..n]);
            }
            socket.write_all(OK).unwrap();
            let _ = socket.read(&mut buf);
            request
        })
    }

    #[test]
    fn connect_open_send_and_answer() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let server = answer_once(listener);
        let origin = origin(&format!("http://{at}/"), at, None, Choice::Http1);
        let mut conns = connections::<Http1>(origin, Http1Setup { capture: false });
        let mut delivered = Delivered::new();
        conns.open_all(&Endpoint::Tcp(at), &mut delivered.recorder);
        assert!(conns.any_opening());
        drive(&mut conns, &mut delivered, |_, d| !d.tickets.is_empty());
        assert!(!conns.any_opening());
        let ticket = delivered.tickets.pop().unwrap();
        assert!(conns.is_ready(ticket));
        conns.send(ticket.conn, get(), &[], &mut delivered.recorder);
        // HTTP/1.1 writes at once: one batch is all a connection takes.
        assert!(conns.conns[ticket.conn].protocol.unwritten().is_empty());
        assert_eq!(conns.requests_in_flight(), 1);
        drive(&mut conns, &mut delivered, |_, d| d.stats().requests == 1);
        assert_eq!(conns.requests_in_flight(), 0);
        assert_eq!(delivered.stats().outcomes.http_status(200), 1);
        drop(conns);
        assert_eq!(server.join().unwrap(), b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    }

    #[test]
    fn a_refused_connect_is_an_error_and_reopens_after_a_back_off() {
        // A port nothing listens on.
        let at = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let origin = origin(&format!("http://{at}/"), at, None, Choice::Http1);
        let mut conns = connections::<Http1>(origin, Http1Setup { capture: false });
        let mut delivered = Delivered::new();
        let endpoint = Endpoint::Tcp(at);
        conns.open_all(&endpoint, &mut delivered.recorder);
        drive(&mut conns, &mut delivered, |_, d| d.stats().errors.connect >= 1);
        assert!(delivered.stats().error_causes.keys().any(|c| c.starts_with("connect: ")));
        // The first failure reopens at once; the second after 10 ms.
        let now = sys::now_ns();
        conns.run_due(now, &endpoint, &mut delivered.recorder);
        drive(&mut conns, &mut delivered, |_, d| d.stats().errors.connect >= 2);
        let next = conns.next_due_at().unwrap();
        assert!(next >= sys::now_ns() + 5_000_000, "reopened without a back-off");
    }

    #[test]
    fn through_a_proxys_tunnel() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = listener.local_addr().unwrap();
        // The proxy answers the CONNECT, then is the server behind it.
        let server = thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0; 1024];
            while !seen.ends_with(b"\r\n\r\n") {
                let n = socket.read(&mut buf).unwrap();
                seen.extend_from_slice(&buf[..n]);
            }
            socket.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").unwrap();
            let mut request = Vec::new();
            while !request.ends_with(b"\r\n\r\n") {
                let n = socket.read(&mut buf).unwrap();
                request.extend_from_slice(&buf[..n]);
            }
            socket.write_all(OK).unwrap();
            let _ = socket.read(&mut buf);
            (seen, request)
        });
        let tunnel = Tunnel::new("target.test:80", None);
        let origin = origin("http://target.test/", proxy, Some(tunnel), Choice::Http1);
        let mut conns = connections::<Http1>(origin, Http1Setup { capture: false });
        let mut delivered = Delivered::new();
        conns.open_all(&Endpoint::Tcp(proxy), &mut delivered.recorder);
        drive(&mut conns, &mut delivered, |_, d| !d.tickets.is_empty());
        let ticket = delivered.tickets.pop().unwrap();
        conns.send(ticket.conn, get(), &[], &mut delivered.recorder);
        drive(&mut conns, &mut delivered, |_, d| d.stats().requests == 1);
        drop(conns);
        let (connect, request) = server.join().unwrap();
        assert!(connect.starts_with(b"CONNECT target.test:80 HTTP/1.1\r\n"));
        assert_eq!(request, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    }

    #[test]
    fn a_tls_handshake_then_http2_by_alpn() {
        let server = crate::serve::start(crate::serve::ServeOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
            tls: true,
            ..crate::serve::ServeOptions::default()
        })
        .unwrap();
        let at = server.addr();
        let origin = origin(&format!("https://localhost:{}/", at.port()), at, None, Choice::Http2);
        let setup = Http2Setup {
            capture: false,
            streams: 4,
            depth: 1,
            grpc: false,
            streaming: Default::default(),
        };
        let mut conns = connections::<Http2>(origin, setup);
        let mut delivered = Delivered::new();
        conns.open_all(&Endpoint::Tcp(at), &mut delivered.recorder);
        // Open once the server's SETTINGS came: a ticket per stream.
        drive(&mut conns, &mut delivered, |_, d| d.tickets.len() == 4);
        assert!(!conns.any_opening());
        let context = Context { scheme: "https".into(), authority: "localhost".into() };
        let request =
            Request { method: "GET".into(), target: "/".into(), fields: Vec::new(), body: None };
        let wire = Http2::encode(&[request], &context).unwrap();
        for ticket in std::mem::take(&mut delivered.tickets) {
            let batch = Outgoing { wire: wire.clone(), target: 0, origin: 0 };
            conns.send(ticket.conn, batch, &[], &mut delivered.recorder);
        }
        // The four streams' frames wait for the end of the turn, and
        // leave together.
        assert!(!conns.conns[0].protocol.unwritten().is_empty(), "written before the turn's end");
        conns.write_started(&mut delivered.recorder);
        assert!(conns.conns[0].protocol.unwritten().is_empty());
        assert_eq!(conns.requests_in_flight(), 4);
        drive(&mut conns, &mut delivered, |_, d| d.stats().requests == 4);
        assert_eq!(delivered.stats().errors.socket_total(), 0);
        server.stop();
    }

    #[test]
    fn http2_over_tls_refuses_a_server_that_did_not_choose_h2() {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let certificate = include_bytes!("../serve/cert/localhost.der");
        let key = include_bytes!("../serve/cert/localhost-key.der");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(&certificate[..])],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(&key[..])),
            )
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let server = thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            let session = rustls::ServerConnection::new(Arc::new(config)).unwrap();
            let mut tls = rustls::StreamOwned::new(session, socket);
            let mut buf = [0; 64];
            // Completes the handshake, then waits for the client to close.
            let _ = tls.read(&mut buf);
        });
        let origin = origin(&format!("https://localhost:{}/", at.port()), at, None, Choice::Http2);
        let setup = Http2Setup {
            capture: false,
            streams: 1,
            depth: 1,
            grpc: false,
            streaming: Default::default(),
        };
        let mut conns = connections::<Http2>(origin, setup);
        let mut delivered = Delivered::new();
        conns.open_all(&Endpoint::Tcp(at), &mut delivered.recorder);
        drive(&mut conns, &mut delivered, |_, d| d.stats().errors.connect == 1);
        let causes: Vec<&String> = delivered.stats().error_causes.keys().collect();
        assert_eq!(causes, ["connect: the server chose http/1.1 by ALPN, not h2"]);
        drop(conns);
        server.join().unwrap();
    }

    #[test]
    fn a_connect_that_hangs_times_out() {
        // A proxy that accepts and never answers the CONNECT (a filtered
        // address would be another host, which the tests never reach).
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = listener.local_addr().unwrap();
        let server = thread::spawn(move || listener.accept().map(|(socket, _)| socket));
        let tunnel = Tunnel::new("target.test:80", None);
        let origin = origin("http://target.test/", proxy, Some(tunnel), Choice::Http1);
        let mut conns = connections::<Http1>(origin, Http1Setup { capture: false });
        let mut delivered = Delivered::<Http1Wire>::new();
        conns.open_all(&Endpoint::Tcp(proxy), &mut delivered.recorder);
        let _socket: TcpStream = server.join().unwrap().unwrap();
        // The connect completes and the CONNECT goes out; no answer comes.
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            conns.poll(Duration::from_millis(10), None, &mut delivered.recorder);
        }
        assert!(conns.any_opening());
        conns.expire_timeouts(sys::now_ns() + 3 * SECOND, &mut delivered.recorder);
        assert_eq!(delivered.stats().errors.connect, 1);
        let cause = delivered.stats().error_causes.keys().next().unwrap().clone();
        assert!(cause.contains("CONNECT") || cause.contains("proxy"), "{cause}");
    }
}
