//! The HTTP/3 exchanges of one connection: an HTTP/3 connection over QUIC
//! ([`crate::http3::connection`]) on a datagram link, and the request
//! batches in flight on its streams.
//!
//! Slots work as over HTTP/2 ([`super::http2`]): `--streams` divided by
//! the batch's depth, at least one; a batch takes a slot and one stream
//! per request, and the slot is a ticket again when all its streams
//! ended. A request the server's stream limit holds back waits here, in
//! order, for a stream (its latency counting from its intended time), and
//! the limit is said once.
//!
//! Each response is stamped with the arrival of the datagram whose
//! handling completed it. QUIC's own timers (loss detection, delayed
//! acknowledgements, the idle timeout) are this protocol's timer, a
//! deadline of the worker's wait. What only QUIC can do wrong is counted:
//! a handshake that fails (its words: no h3 offered, a certificate, an
//! ICMP port unreachable comes from the link), the connection closed by
//! the server with its code, a stream reset with its code, the idle
//! timeout; requests the server rejected (H3_REQUEST_REJECTED, or above a
//! GOAWAY) go again on another connection.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::datagram::DatagramLink;
use super::link::SetUpTimes;
use super::protocol::{Context, Delivery, Opened, Outgoing, Protocol, Retry, Ticket, Verdict};
use super::recorder::{Exchange, Recorder};
use crate::endpoint::Endpoint;
use crate::http::request::parse_requests;
use crate::http::response::Captured;
use crate::http2::canonical_name;
use crate::http2::request::of;
use crate::http3::connection::{client_config, Connection, Event, Refused};
use crate::http3::error::{self, H3Error};
use crate::http3::frame;
use crate::http3::qpack;
use crate::http3::response::Response;
use crate::protocol::Protocol as Choice;
use crate::request::Request;
use crate::stats::{ErrorKind, Outcome, QuicCounts};
use crate::sys;

/// A request servers reject this many times is given up as an error (as
/// over HTTP/2: a server that turns every connection away must not make
/// pace send the same requests for ever).
const MAX_TRIES: u32 = 3;
/// HTTP/3's frame types (RFC 9114, section 7.2).
const DATA: u64 = 0x0;
const HEADERS: u64 = 0x1;

/// A batch as HTTP/3 sends it: each request's HEADERS frame (QPACK) and
/// DATA frame, written once, one stream each.
pub type Http3Wire = Arc<[Arc<[u8]>]>;

/// What the connections of a thread have in common.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Http3Setup {
    /// Keep headers and bodies (for the script's `response()`).
    pub capture: bool,
    /// `--streams`: streams wanted per connection.
    pub streams: usize,
    /// Requests per batch (one stream each).
    pub depth: usize,
}

/// Where a request of a slot is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Held back by the server's stream limit: not sent yet.
    Waiting,
    Open,
    Done,
}

/// One request of a batch, on its stream.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Which request of the batch.
    request: usize,
    intended: u64,
    /// What its response comes back with: its slot's place and the
    /// slot's round, so that a late answer to a request given up is not
    /// taken for the next one's.
    token: u64,
    state: State,
    /// The times servers rejected it before, on other connections.
    tries: u32,
}

/// A batch in flight on a slot.
struct Slot {
    batch: Outgoing<Http3Wire>,
    batch_intended: u64,
    sent_ns: u64,
    entries: Vec<Entry>,
    /// Entries that have not ended.
    open: usize,
}

pub struct Http3 {
    connection: Option<Connection>,
    capture: bool,
    depth: usize,
    streams: usize,
    /// Slots this connection offers now.
    slots: usize,
    /// The handshake is done: the connection carries requests.
    greeted: bool,
    /// The readiness number of this connection's tickets (see [`Ticket`]).
    generation: u32,
    batches: Vec<Slot>,
    free: Vec<usize>,
    busy: usize,
    /// Tokens of the requests held back by the server's stream limit,
    /// oldest first.
    waiting: VecDeque<u64>,
    /// The stream limit was said (once a connection).
    limit_said: bool,
    /// Rounds of slots given out: the high half of a token.
    rounds: u32,
    /// The next datagram to write (empty: none ready).
    datagram: Vec<u8>,
    /// The server sent GOAWAY: no new request goes on this connection.
    goaway: bool,
    /// Why the connection ended, once it did.
    ended: Option<String>,
    /// Responses completed on this connection.
    completed: u64,
    /// When QUIC next needs its timer, in pace's ns.
    timer: Option<u64>,
    /// When the handshake started.
    handshake_started: u64,
    /// What QUIC measured on this connection went to the recorder.
    measured_told: bool,
    clock: Clock,
}

impl Protocol for Http3 {
    type Wire = Http3Wire;
    type Setup = Http3Setup;
    type Link = DatagramLink;

    const CHOICE: Choice = Choice::Http3;
    const MULTIPLEXED: bool = true;
    const TIMERS: bool = true;

    fn new(setup: &Http3Setup) -> Http3 {
        Http3 {
            connection: None,
            capture: setup.capture,
            depth: setup.depth.max(1),
            streams: setup.streams.max(1),
            slots: 0,
            greeted: false,
            generation: 0,
            batches: Vec::new(),
            free: Vec::new(),
            busy: 0,
            waiting: VecDeque::new(),
            limit_said: false,
            rounds: 0,
            datagram: Vec::new(),
            goaway: false,
            ended: None,
            completed: 0,
            timer: None,
            handshake_started: 0,
            measured_told: false,
            clock: Clock::now(),
        }
    }

    fn encode(requests: &[Request], context: &Context) -> Result<Http3Wire, String> {
        Ok(requests.iter().map(|request| frames(request, context)).collect())
    }

    /// A script's text is parsed into requests, then sent as HTTP/3 sends
    /// them.
    fn encode_text(
        text: &Arc<[u8]>,
        _: &Arc<[bool]>,
        context: &Context,
    ) -> Result<Http3Wire, String> {
        let requests = parse_requests(text).map_err(|e| {
            format!("the script's request is not valid HTTP, so not sent over HTTP/3: {e}")
        })?;
        Http3::encode(&requests, context)
    }

    #[inline]
    fn depth(wire: &Http3Wire) -> usize {
        wire.len()
    }

    /// The socket is ready: QUIC's handshake starts, with the origin's TLS
    /// client (ALPN h3) and server name. The connection carries requests
    /// once the handshake is done.
    fn connected(&mut self, now: u64, link: &Opened<'_>, out: &mut Delivery<Http3Wire>) -> Verdict {
        self.forget();
        let origin = link.origin;
        let Some(tls) = &origin.tls else {
            return Verdict::fail(ErrorKind::Connect, "HTTP/3 needs TLS: an https:// URL");
        };
        // The socket is connected: QUIC's idea of the peer's address only
        // has to stay the same (a script's thread.addr may send it elsewhere).
        let peer = match &origin.endpoint {
            Endpoint::Tcp(addr) => *addr,
            Endpoint::Unix(_) => return Verdict::fail(ErrorKind::Connect, "QUIC runs over UDP"),
        };
        let started = client_config(tls.config()).and_then(|config| {
            let at = self.clock.instant(now);
            Connection::connect(config, peer, &tls.server_name(), self.capture, at)
        });
        self.handshake_started = now;
        match started {
            Ok(connection) => self.connection = Some(connection),
            Err(e) => return Verdict::fail(ErrorKind::Connect, e),
        }
        self.pump(now, out)
    }

    /// The handshake is not done yet.
    fn opening(&self) -> bool {
        self.connection.is_some() && !self.greeted
    }

    fn forget(&mut self) {
        self.connection = None;
        self.greeted = false;
        self.slots = 0;
        self.generation = self.generation.wrapping_add(1);
        self.free.clear();
        self.free.extend((0..self.batches.len()).rev());
        self.batches.iter_mut().for_each(|slot| slot.open = 0);
        self.busy = 0;
        self.waiting.clear();
        self.limit_said = false;
        self.datagram.clear();
        self.goaway = false;
        self.ended = None;
        self.completed = 0;
        self.timer = None;
        self.measured_told = false;
    }

    /// Each request not ended is an error of its target.
    fn lose_in_flight(&mut self, recorder: &mut Recorder) -> u64 {
        let mut lost = 0;
        for slot in self.batches.iter().filter(|slot| slot.open > 0) {
            for _ in slot.entries.iter().filter(|e| e.state != State::Done) {
                recorder.lost(slot.batch.target);
                lost += 1;
            }
        }
        lost
    }

    #[inline]
    fn accepts(&self, ticket: Ticket) -> bool {
        ticket.serial == self.generation && self.accepting()
    }

    fn start(
        &mut self,
        batch: Outgoing<Http3Wire>,
        intended: &[u64],
        sent: u64,
        out: &mut Delivery<Http3Wire>,
    ) -> Verdict {
        let depth = batch.wire.len();
        let intended_of = |i: usize| intended.get(i).copied().unwrap_or(sent);
        let requests = (0..depth).map(|i| (i, intended_of(i), 0));
        let batch_intended = intended_of(0);
        self.submit(batch, batch_intended, requests, sent, out)
    }

    fn retry(
        &mut self,
        retry: Retry<Http3Wire>,
        sent: u64,
        out: &mut Delivery<Http3Wire>,
    ) -> Verdict {
        let requests = std::iter::once((retry.index, retry.intended, retry.tries));
        self.submit(retry.batch, retry.batch_intended, requests, sent, out)
    }

    /// One datagram, which arrived at `arrived`.
    fn receive(&mut self, data: &[u8], arrived: u64, out: &mut Delivery<Http3Wire>) -> Verdict {
        let at = self.clock.instant(arrived);
        let Some(connection) = self.connection.as_mut() else {
            return Verdict::fail(ErrorKind::Read, "a datagram before the QUIC connection");
        };
        connection.receive(at, data);
        self.pump(arrived, out)
    }

    /// The next datagram QUIC has to send, packed now with everything the
    /// turn queued.
    fn unwritten(&mut self) -> &[u8] {
        if self.datagram.is_empty() {
            if let Some(connection) = self.connection.as_mut() {
                connection.transmit(Instant::now(), &mut self.datagram);
                // Sending arms loss detection: the timer moves.
                self.timer = connection.timeout().map(|at| self.clock.ns(at));
            }
        }
        &self.datagram
    }

    /// What QUIC measured on the connection goes to the recorder; its
    /// CONNECTION_CLOSE (H3_NO_ERROR) to the server, which lets the
    /// connection go at once.
    fn last_words(&mut self, recorder: &mut Recorder) -> Option<&[u8]> {
        let connection = self.connection.as_mut()?;
        if self.greeted && !self.measured_told {
            self.measured_told = true;
            let path = connection.stats().path;
            recorder.quic_connection(QuicCounts {
                connections: 1,
                packets_sent: path.sent_packets,
                packets_lost: path.lost_packets,
                smoothed_rtt_sum_us: path.rtt.as_micros() as u64,
            });
        }
        if self.ended.is_some() {
            return None;
        }
        let now = Instant::now();
        connection.close(now);
        connection.transmit(now, &mut self.datagram)?;
        Some(&self.datagram)
    }

    /// A datagram is written whole or not at all.
    fn wrote(&mut self, _: usize) {
        self.datagram.clear();
    }

    fn flushed(&mut self) {}

    /// UDP has no close: a datagram link never reports one.
    fn closed_by_peer(&mut self, _now: u64, _out: &mut Delivery<Http3Wire>) -> Verdict {
        Verdict::Close
    }

    /// Requests that have waited longer than `timeout` are given up (their
    /// streams reset with H3_REQUEST_CANCELLED), each counted as a timeout.
    fn expire(&mut self, now: u64, timeout: u64, out: &mut Delivery<Http3Wire>) -> Verdict {
        let mut freed = Vec::new();
        for (i, slot) in self.batches.iter_mut().enumerate().filter(|(_, slot)| slot.open > 0) {
            if now.saturating_sub(slot.sent_ns) <= timeout {
                continue;
            }
            for entry in slot.entries.iter_mut().filter(|e| e.state != State::Done) {
                if entry.state == State::Open {
                    if let Some(connection) = self.connection.as_mut() {
                        connection.cancel(entry.token);
                    }
                }
                entry.state = State::Done;
                out.error(ErrorKind::Timeout, "no response within the timeout");
                out.recorder.lost(slot.batch.target);
                slot.open -= 1;
            }
            freed.push(i);
        }
        if freed.is_empty() {
            return Verdict::Keep;
        }
        for slot in freed {
            self.slot_done(slot, now, out);
        }
        self.pump(now, out)
    }

    #[inline]
    fn next_timer(&self) -> Option<u64> {
        self.timer
    }

    fn on_timer(&mut self, now: u64, out: &mut Delivery<Http3Wire>) -> Verdict {
        let at = self.clock.instant(now);
        if let Some(connection) = self.connection.as_mut() {
            connection.on_timeout(at);
        }
        self.pump(now, out)
    }

    fn in_flight(&self) -> u64 {
        self.unended().count() as u64
    }

    fn oldest_in_flight(&self) -> Option<u64> {
        self.unended().map(|entry| entry.intended).min()
    }

    /// QUIC's flow control gives the reader no reason to hurry: every
    /// datagram is read as it comes.
    fn receiving_large(&self) -> bool {
        false
    }
}

impl Http3 {
    fn accepting(&self) -> bool {
        self.greeted && self.busy < self.slots && !self.goaway && self.ended.is_none()
    }

    /// The requests that have not ended.
    fn unended(&self) -> impl Iterator<Item = &Entry> {
        self.batches
            .iter()
            .filter(|slot| slot.open > 0)
            .flat_map(|slot| slot.entries.iter().filter(|e| e.state != State::Done))
    }

    fn submit(
        &mut self,
        batch: Outgoing<Http3Wire>,
        batch_intended: u64,
        requests: impl Iterator<Item = (usize, u64, u32)>,
        sent: u64,
        out: &mut Delivery<Http3Wire>,
    ) -> Verdict {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.batches.push(Slot {
                    batch: batch.clone(),
                    batch_intended,
                    sent_ns: sent,
                    entries: Vec::with_capacity(self.depth),
                    open: 0,
                });
                self.batches.len() - 1
            }
        };
        self.rounds = self.rounds.wrapping_add(1);
        let round = u64::from(self.rounds) << 32;
        let state = &mut self.batches[slot];
        state.batch = batch;
        state.batch_intended = batch_intended;
        state.sent_ns = sent;
        state.entries.clear();
        for (k, (request, intended, tries)) in requests.enumerate() {
            let token = round | (slot * self.depth + k) as u64;
            state.entries.push(Entry { request, intended, token, state: State::Waiting, tries });
            self.waiting.push_back(token);
        }
        state.open = state.entries.len();
        if state.open == 0 {
            self.free.push(slot);
            return Verdict::Keep;
        }
        self.busy += 1;
        self.pump(sent, out)
    }

    /// Sends the requests waiting for a stream, oldest first, as far as the
    /// server's stream limit allows.
    fn send_waiting(&mut self, out: &mut Delivery<Http3Wire>) {
        while let Some(&token) = self.waiting.front() {
            let place = self.place(token);
            let Some(connection) = self.connection.as_mut() else { return };
            let Some((slot, k)) =
                place.filter(|&(slot, k)| self.batches[slot].entries[k].state == State::Waiting)
            else {
                self.waiting.pop_front();
                continue;
            };
            let state = &mut self.batches[slot];
            match connection.send(&state.batch.wire[state.entries[k].request], token) {
                Ok(()) => {
                    state.entries[k].state = State::Open;
                    self.waiting.pop_front();
                }
                Err(Refused::NoStream) => {
                    // Said once, when the first refusal shows the limit:
                    // before any stream ended, the streams open are it.
                    let open = connection.in_flight();
                    if !self.limit_said && self.completed == 0 && open < self.streams {
                        out.recorder.stream_limit(open as u32);
                    }
                    self.limit_said = true;
                    return;
                }
                Err(Refused::NotOpen) => return,
            }
        }
    }

    /// The requests still waiting for a stream on a connection that takes
    /// no more (it ended, or the server goes away) go to another one, their
    /// latency still counting from their intended time.
    fn send_waiting_elsewhere(&mut self, now: u64, out: &mut Delivery<Http3Wire>) {
        while let Some(token) = self.waiting.pop_front() {
            let Some((slot, k)) = self.place(token) else { continue };
            let state = &mut self.batches[slot];
            let entry = &mut state.entries[k];
            if entry.state != State::Waiting {
                continue;
            }
            entry.state = State::Done;
            out.retry(Retry {
                batch: state.batch.clone(),
                index: entry.request,
                intended: entry.intended,
                batch_intended: state.batch_intended,
                tries: entry.tries,
            });
            state.open -= 1;
            if state.open == 0 {
                self.slot_done(slot, now, out);
            }
        }
    }

    /// The slot and entry of `token`, if it is still theirs.
    fn place(&self, token: u64) -> Option<(usize, usize)> {
        let index = (token & u64::from(u32::MAX)) as usize;
        let (slot, k) = (index / self.depth, index % self.depth);
        let entry = self.batches.get(slot)?.entries.get(k)?;
        (entry.token == token).then_some((slot, k))
    }

    /// Acts on what the connection reports, sends what waits for a stream,
    /// and notes QUIC's next deadline.
    fn pump(&mut self, now: u64, out: &mut Delivery<Http3Wire>) -> Verdict {
        while let Some(event) = self.connection.as_mut().and_then(Connection::poll) {
            match event {
                Event::Connected => self.handshake_done(now, out),
                Event::Head { token } => self.head(token, now, out),
                Event::Response { token, result } => self.response(token, result, now, out),
                Event::GoAway { .. } => self.goaway = true,
                Event::StreamsAvailable => {}
                Event::Closed { reason } => self.ended = Some(reason),
            }
        }
        match self.ended.is_some() || self.goaway {
            true => self.send_waiting_elsewhere(now, out),
            false => self.send_waiting(out),
        }
        if let Some(connection) = self.connection.as_mut() {
            self.timer = connection.timeout().map(|at| self.clock.ns(at));
        }
        if let Some(reason) = &self.ended {
            // A handshake that failed is a connect error; once the
            // connection carried requests, each ended with its own error.
            return match (self.greeted, self.completed) {
                (false, _) => Verdict::fail(ErrorKind::Connect, reason.clone()),
                (true, 0) => Verdict::CloseAndBackOff,
                (true, _) => Verdict::Close,
            };
        }
        // After a GOAWAY, the connection ends once its requests are done.
        if self.goaway && self.busy == 0 {
            return match self.completed {
                0 => Verdict::CloseAndBackOff,
                _ => Verdict::Close,
            };
        }
        Verdict::Keep
    }

    /// The handshake is done: its time is the connection's TLS handshake
    /// (QUIC's carries TLS's), and the connection's slots are tickets.
    fn handshake_done(&mut self, now: u64, out: &mut Delivery<Http3Wire>) {
        let handshake = now.saturating_sub(self.handshake_started);
        out.recorder.link_set_up(SetUpTimes { connect: None, tls_handshake: Some(handshake) });
        self.greeted = true;
        self.slots = (self.streams / self.depth).max(1);
        for _ in 0..self.slots {
            out.ready(self.generation, now);
        }
    }

    /// The response to `token` began at `now` (its head: the first byte's
    /// phase, as over HTTP/2).
    fn head(&self, token: u64, now: u64, out: &mut Delivery<Http3Wire>) {
        let Some((slot, k)) = self.place(token) else { return };
        let state = &self.batches[slot];
        let entry = &state.entries[k];
        if entry.state == State::Open {
            out.first_byte(entry.intended, state.sent_ns, now);
        }
    }

    /// The response to `token` ended at `now`, whole or not.
    fn response(
        &mut self,
        token: u64,
        result: Result<Response, H3Error>,
        now: u64,
        out: &mut Delivery<Http3Wire>,
    ) {
        let Some((slot, k)) = self.place(token) else { return };
        let state = &mut self.batches[slot];
        let entry = &mut state.entries[k];
        if entry.state != State::Open {
            return; // given up already (timed out)
        }
        entry.state = State::Done;
        let entry = *entry;
        state.open -= 1;
        let last_of_batch = state.open == 0;
        match result {
            Ok(response) => {
                self.completed += 1;
                let exchange = Exchange {
                    intended: entry.intended,
                    batch_intended: state.batch_intended,
                    sent: state.sent_ns,
                    target: state.batch.target,
                };
                let captured = response.captured.map(canonical);
                out.response(
                    exchange,
                    now,
                    Outcome::Http(response.status),
                    last_of_batch,
                    captured,
                );
                out.succeeded();
            }
            Err(e) if e.code == error::REQUEST_REJECTED && entry.tries + 1 >= MAX_TRIES => {
                let cause = format!(
                    "HTTP/3: the server did not process the request, {MAX_TRIES} times \
                     (H3_REQUEST_REJECTED)"
                );
                out.error(ErrorKind::Read, &cause);
                out.recorder.lost(state.batch.target);
            }
            Err(e) if e.code == error::REQUEST_REJECTED => {
                out.recorder.retried_after_goaway();
                out.retry(Retry {
                    batch: state.batch.clone(),
                    index: entry.request,
                    intended: entry.intended,
                    batch_intended: state.batch_intended,
                    tries: entry.tries + 1,
                });
            }
            Err(e) => {
                out.error(ErrorKind::Read, &format!("HTTP/3: {e}"));
                out.recorder.lost(state.batch.target);
            }
        }
        if last_of_batch {
            self.slot_done(slot, now, out);
        }
    }

    /// The last request of `slot`'s batch ended: the slot is free, and a
    /// ticket when the connection takes another batch.
    fn slot_done(&mut self, slot: usize, now: u64, out: &mut Delivery<Http3Wire>) {
        self.busy -= 1;
        self.free.push(slot);
        if self.accepting() {
            out.ready(self.generation, now);
        }
    }
}

/// A request as HTTP/3 frames: HEADERS (its fields, QPACK without the
/// dynamic table), then DATA with its body if it has one.
fn frames(request: &Request, context: &Context) -> Arc<[u8]> {
    let form = of(request, &context.scheme, &context.authority);
    let mut block = Vec::new();
    qpack::encode(form.field_slices(), &mut block);
    let mut frames = Vec::with_capacity(block.len() + 16);
    frame::frame(HEADERS, &block, &mut frames);
    if let Some(body) = form.body.as_deref().filter(|body| !body.is_empty()) {
        frame::frame(DATA, body, &mut frames);
    }
    frames.into()
}

/// A response's header fields with names in their HTTP/1.1 case, as the
/// script's `response()` gets them over the other protocols.
fn canonical(captured: Captured) -> Captured {
    let headers = (captured.headers.into_iter())
        .map(|(name, value)| (canonical_name(name.as_bytes()), value))
        .collect();
    Captured { headers, body: captured.body }
}

/// pace's clock (ns, monotonic) as quinn-proto's [`Instant`], which reads
/// the same monotonic clock: one pair of readings taken together maps
/// either onto the other.
#[derive(Clone, Copy, Debug)]
struct Clock {
    instant: Instant,
    ns: u64,
}

impl Clock {
    fn now() -> Clock {
        Clock { instant: Instant::now(), ns: sys::now_ns() }
    }

    fn instant(&self, ns: u64) -> Instant {
        match ns.checked_sub(self.ns) {
            Some(after) => self.instant + Duration::from_nanos(after),
            None => {
                let before = Duration::from_nanos(self.ns - ns);
                self.instant.checked_sub(before).unwrap_or(self.instant)
            }
        }
    }

    fn ns(&self, at: Instant) -> u64 {
        match at.checked_duration_since(self.instant) {
            Some(after) => self.ns.saturating_add(after.as_nanos() as u64),
            None => self.ns.saturating_sub((self.instant - at).as_nanos() as u64),
        }
    }
}
