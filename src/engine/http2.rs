//! The HTTP/2 exchanges of one connection: an nghttp2 session over the
//! connection's bytes, and the request batches in flight on its streams.
//!
//! A connection offers *slots*: `--streams` (or fewer, if the server allows
//! fewer concurrent streams) divided by the batch's depth, at least one. A
//! batch takes one slot and one stream per request; its slot is free again
//! (a ticket for the schedule) when all its streams closed. So in the
//! closed loop each slot behaves like a wrk connection, and with a plan a
//! due request goes out on any connection with a free slot.
//!
//! Every response completed by a read is stamped with that read's arrival
//! time: the session reports, synchronously, the streams each read closed.
//! What HTTP/2 can do wrong is counted, by kind: a stream reset by the
//! server (by its error code), a stream the session reset for a protocol
//! error, a response without `:status`, a GOAWAY with an error code, and a
//! stream that times out (reset with `CANCEL` and counted as a timeout).
//! Streams above a GOAWAY's last stream id were not processed: they go
//! again on another connection ([`Retry`]), their latency still counting
//! from their intended time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::link::StreamLink;
use super::protocol::{Context, Delivery, Opened, Outgoing, Protocol, Retry, Ticket, Verdict};
use super::recorder::{Exchange, Recorder};
use crate::http::request::parse_requests;
use crate::http::response::Captured;
use crate::http2::canonical_name;
use crate::http2::request::{of, Request2};
use crate::http2::session::{self, Body, Event, Message, Role, Session};
use crate::protocol::{Protocol as Choice, ALPN_H2};
use crate::request::Request;
use crate::stats::{ErrorKind, Outcome};

/// A stream that received at least this much of a response, not all of
/// it, makes the thread read promptly (as HTTP/1.1's large responses do).
const LARGE_RESPONSE: u64 = 16 * 1024;
/// A request servers refuse (above a GOAWAY's last stream) this many
/// times is given up as an error: a server that turns every connection
/// away must not make pace send the same requests for ever.
const MAX_TRIES: u32 = 3;

/// Where a request of a slot is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// Timed out: reset with CANCEL, already counted.
    Cancelled,
    Done,
}

/// One request of a batch in flight, on its stream.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Which request of the batch.
    request: usize,
    /// The session's slot of its stream.
    stream_slot: usize,
    intended: u64,
    stream_id: i32,
    state: State,
    /// The times a server refused it before (GOAWAY), on other connections.
    tries: u32,
    /// Messages sent in its stream (streaming calls).
    sent_messages: u32,
}

/// A batch as HTTP/2 sends it: each request's header block and body, one
/// stream each.
pub type Http2Wire = Arc<[Request2]>;

/// What the connections of a thread have in common.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Http2Setup {
    /// Keep headers and bodies (for the script's `response()`).
    pub capture: bool,
    /// `--streams`: streams wanted per connection.
    pub streams: usize,
    /// Requests per batch (one stream each).
    pub depth: usize,
    /// The requests are gRPC calls: a response's outcome is its
    /// `grpc-status`.
    pub grpc: bool,
    /// The calls are of a streaming gRPC method.
    pub streaming: Streaming,
}

/// How the calls of a streaming gRPC method go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Streaming {
    /// Each call's reply messages are counted, each one's arrival stamped
    /// (every streaming method).
    pub replies: bool,
    /// The call sends a stream (client-streaming and bidirectional
    /// methods): these messages instead of the request's body.
    pub sends: Option<Sends>,
}

/// The messages each call sends in its stream: `count` of them, taken in
/// turn from `messages`, the i-th intended `interval_ns` x i after the
/// call itself (a plan within the stream).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sends {
    pub messages: Arc<[Arc<[u8]>]>,
    pub count: u32,
    pub interval_ns: u64,
    /// Each message gets a reply of its own (a bidirectional method): the
    /// n-th reply's latency counts from the n-th message's intended time.
    pub answered: bool,
}

/// A batch in flight on a slot.
struct Slot {
    batch: Outgoing<Http2Wire>,
    batch_intended: u64,
    sent_ns: u64,
    entries: Vec<Entry>,
    /// Entries whose stream has not closed.
    open: usize,
}

pub struct Http2 {
    session: Option<Session>,
    capture: bool,
    grpc: bool,
    streaming: Streaming,
    /// When the next message of a call's stream is due: (due, stream
    /// slot, stream id), the soonest first; entries of calls that ended
    /// are skipped when they come up.
    due: BinaryHeap<Reverse<(u64, usize, i32)>>,
    /// Requests per batch (one stream each).
    depth: usize,
    /// `--streams`: streams wanted per connection.
    streams: usize,
    /// Slots this connection offers now.
    slots: usize,
    /// The server's SETTINGS came: the connection carries requests.
    greeted: bool,
    /// The readiness number of this socket's tickets (see [`Ticket`]).
    generation: u32,
    batches: Vec<Slot>,
    free: Vec<usize>,
    busy: usize,
    /// Frames to write; `out[written..]` is not written yet.
    out: Vec<u8>,
    written: usize,
    /// The last stream id of the server's GOAWAY.
    goaway: Option<i32>,
    /// Responses completed on this link.
    completed: u64,
    /// The session's events being handled (kept for its memory).
    events: Vec<Event>,
}

impl Protocol for Http2 {
    type Wire = Http2Wire;
    type Setup = Http2Setup;
    type Link = StreamLink;

    const CHOICE: Choice = Choice::Http2;
    const MULTIPLEXED: bool = true;
    /// The messages of streaming calls go out on their own plan.
    const TIMERS: bool = true;

    /// The exchanges of a connection with `streams` streams for batches of
    /// `depth` requests; `capture` keeps headers and bodies (for the
    /// script's `response()`).
    fn new(setup: &Http2Setup) -> Http2 {
        Http2 {
            session: None,
            capture: setup.capture,
            grpc: setup.grpc,
            streaming: setup.streaming.clone(),
            due: BinaryHeap::new(),
            depth: setup.depth.max(1),
            streams: setup.streams.max(1),
            slots: 0,
            greeted: false,
            generation: 0,
            batches: Vec::new(),
            free: Vec::new(),
            busy: 0,
            out: Vec::new(),
            written: 0,
            goaway: None,
            completed: 0,
            events: Vec::new(),
        }
    }

    fn encode(requests: &[Request], context: &Context) -> Result<Http2Wire, String> {
        let scheme = &context.scheme;
        Ok(requests.iter().map(|request| of(request, scheme, &context.authority)).collect())
    }

    /// A script's text is parsed into requests, then sent as HTTP/2 sends
    /// them.
    fn encode_text(
        text: &Arc<[u8]>,
        _: &Arc<[bool]>,
        context: &Context,
    ) -> Result<Http2Wire, String> {
        let requests = parse_requests(text).map_err(|e| {
            format!("the script's request is not valid HTTP, so not sent over HTTP/2: {e}")
        })?;
        Http2::encode(&requests, context)
    }

    #[inline]
    fn depth(wire: &Http2Wire) -> usize {
        wire.len()
    }

    /// A new link: a new session, its preface and SETTINGS to write. The
    /// connection carries requests once the server's SETTINGS come. Over
    /// TLS, only when the server chose `h2` by ALPN.
    fn connected(&mut self, now: u64, link: &Opened<'_>, out: &mut Delivery<Http2Wire>) -> Verdict {
        self.forget();
        if link.tls && link.alpn != Some(ALPN_H2) {
            let chose = link.alpn.map_or("no protocol".into(), String::from_utf8_lossy);
            let cause = format!("the server chose {chose} by ALPN, not h2");
            return Verdict::fail(ErrorKind::Connect, cause);
        }
        match Session::new(Role::Client, self.capture) {
            Ok(mut session) => {
                if self.streaming.replies {
                    session.count_grpc_messages();
                }
                self.session = Some(session);
            }
            Err(e) => return Verdict::fail(ErrorKind::Connect, e),
        }
        self.pump(now, out)
    }

    /// The server's SETTINGS have not come yet.
    fn opening(&self) -> bool {
        self.session.is_some() && !self.greeted
    }

    /// What was in flight is forgotten (counted by
    /// [`Protocol::lose_in_flight`] first when the link failed).
    fn forget(&mut self) {
        self.session = None;
        self.greeted = false;
        self.slots = 0;
        self.generation = self.generation.wrapping_add(1);
        self.free.clear();
        self.free.extend((0..self.batches.len()).rev());
        // Their streams went with the socket: none is in flight any more.
        self.batches.iter_mut().for_each(|slot| slot.open = 0);
        self.busy = 0;
        self.out.clear();
        self.written = 0;
        self.goaway = None;
        self.completed = 0;
        self.due.clear();
    }

    /// Each stream in flight is an error of its target.
    fn lose_in_flight(&mut self, recorder: &mut Recorder) -> u64 {
        let mut lost = 0;
        for (slot, _) in self.open_entries() {
            recorder.lost(self.batches[slot].batch.target);
            lost += 1;
        }
        lost
    }

    /// The ticket's readiness still holds: same socket, a slot free, and
    /// the server still takes new streams.
    #[inline]
    fn accepts(&self, ticket: Ticket) -> bool {
        ticket.serial == self.generation && self.accepting()
    }

    /// Sends `batch` on a free slot, meant for `intended` (empty in the
    /// closed loop), at `sent`.
    fn start(
        &mut self,
        batch: Outgoing<Http2Wire>,
        intended: &[u64],
        sent: u64,
        out: &mut Delivery<Http2Wire>,
    ) -> Verdict {
        let depth = batch.wire.len();
        let intended_of = |i: usize| intended.get(i).copied().unwrap_or(sent);
        let requests = (0..depth).map(|i| (i, intended_of(i), 0));
        let batch_intended = intended_of(0);
        self.submit(batch, batch_intended, requests, sent, out)
    }

    /// Sends again a request a GOAWAY left unprocessed, on a free slot.
    fn retry(
        &mut self,
        retry: Retry<Http2Wire>,
        sent: u64,
        out: &mut Delivery<Http2Wire>,
    ) -> Verdict {
        let requests = std::iter::once((retry.index, retry.intended, retry.tries));
        self.submit(retry.batch, retry.batch_intended, requests, sent, out)
    }

    fn receive(&mut self, data: &[u8], arrived: u64, out: &mut Delivery<Http2Wire>) -> Verdict {
        let Some(session) = self.session.as_mut() else {
            return Verdict::fail(ErrorKind::Read, "data received before the HTTP/2 session");
        };
        if let Err(e) = session.receive(data) {
            return Verdict::fail(ErrorKind::Read, e);
        }
        self.pump(arrived, out)
    }

    #[inline]
    fn unwritten(&mut self) -> &[u8] {
        &self.out[self.written..]
    }

    fn wrote(&mut self, n: usize) {
        self.written += n;
        if self.written >= self.out.len() {
            self.out.clear();
            self.written = 0;
        }
    }

    fn flushed(&mut self) {}

    fn closed_by_peer(&mut self, _now: u64, _out: &mut Delivery<Http2Wire>) -> Verdict {
        match self.in_flight() {
            0 => Verdict::Close,
            _ => Verdict::fail(ErrorKind::Read, "connection closed before the response"),
        }
    }

    /// Resets the streams that have waited longer than `timeout` at `now`
    /// (`CANCEL`), counting each as a timeout.
    /// A stream given up is done with at once, its slot free again, even
    /// if the server never saw it (one that allows no more streams holds
    /// it back).
    fn expire(&mut self, now: u64, timeout: u64, out: &mut Delivery<Http2Wire>) -> Verdict {
        let Some(session) = self.session.as_mut() else { return Verdict::Keep };
        let mut freed = Vec::new();
        for (i, slot) in self.batches.iter_mut().enumerate().filter(|(_, slot)| slot.open > 0) {
            if now.saturating_sub(slot.sent_ns) <= timeout {
                continue;
            }
            for entry in slot.entries.iter_mut().filter(|e| e.state == State::Open) {
                entry.state = State::Cancelled;
                session.reset(entry.stream_id, session::CANCEL);
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

    /// When the next message of a call's stream is due.
    #[inline]
    fn next_timer(&self) -> Option<u64> {
        self.due.peek().map(|Reverse((due, _, _))| *due)
    }

    fn on_timer(&mut self, now: u64, out: &mut Delivery<Http2Wire>) -> Verdict {
        self.send_due_messages(now);
        self.pump(now, out)
    }

    /// Requests sent and not answered (nor given up).
    fn in_flight(&self) -> u64 {
        self.open_entries().count() as u64
    }

    fn oldest_in_flight(&self) -> Option<u64> {
        self.open_entries().map(|(_, entry)| entry.intended).min()
    }

    /// A stream has received a large part of its response, not all.
    fn receiving_large(&self) -> bool {
        let Some(session) = &self.session else { return false };
        self.open_entries().any(|(_, entry)| {
            session.message(entry.stream_slot).is_some_and(|m| m.body_len >= LARGE_RESPONSE)
        })
    }
}

impl Http2 {
    fn accepting(&self) -> bool {
        self.greeted
            && self.busy < self.slots
            && self.goaway.is_none()
            && self.session.as_ref().is_some_and(Session::request_allowed)
    }

    /// The open requests, with their slot.
    fn open_entries(&self) -> impl Iterator<Item = (usize, &Entry)> {
        self.batches.iter().enumerate().filter(|(_, slot)| slot.open > 0).flat_map(|(i, slot)| {
            slot.entries.iter().filter(|e| e.state == State::Open).map(move |e| (i, e))
        })
    }

    fn submit(
        &mut self,
        batch: Outgoing<Http2Wire>,
        batch_intended: u64,
        requests: impl Iterator<Item = (usize, u64, u32)>,
        sent: u64,
        out: &mut Delivery<Http2Wire>,
    ) -> Verdict {
        let forms = batch.wire.clone();
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
        let Some(session) = self.session.as_mut() else {
            self.free.push(slot);
            return Verdict::fail(ErrorKind::Write, "no HTTP/2 session");
        };
        let depth = self.depth;
        let state = &mut self.batches[slot];
        state.batch_intended = batch_intended;
        state.sent_ns = sent;
        state.entries.clear();
        state.open = 0;
        for (k, (request, intended, tries)) in requests.enumerate() {
            let Some(form) = forms.get(request) else { continue };
            let body = match &self.streaming.sends {
                // The stream's first message goes with the request.
                Some(sends) => Some(Body::Stream {
                    queued: sends.messages[0].to_vec(),
                    at: 0,
                    finished: sends.count <= 1,
                }),
                None => form.body.as_ref().map(|bytes| Body::Bytes {
                    bytes: bytes.clone(),
                    start: 0,
                    end: bytes.len(),
                }),
            };
            let stream_slot = slot * depth + k;
            // A stream's length is not the request body's: no
            // content-length (servers that check it refuse the stream).
            let streamed = self.streaming.sends.is_some();
            let fields =
                form.field_slices().filter(|(name, _)| !streamed || *name != b"content-length");
            match session.submit_request(fields, body, stream_slot) {
                Ok(stream_id) => {
                    let open = State::Open;
                    let sent_messages = u32::from(self.streaming.sends.is_some());
                    if let Some(sends) = self.streaming.sends.as_ref().filter(|s| s.count > 1) {
                        let next = intended + sends.interval_ns;
                        self.due.push(Reverse((next, stream_slot, stream_id)));
                    }
                    state.entries.push(Entry {
                        request,
                        stream_slot,
                        intended,
                        stream_id,
                        state: open,
                        tries,
                        sent_messages,
                    });
                    state.open += 1;
                }
                // The session takes no new stream (a GOAWAY came, or the
                // stream ids ran out): the request goes elsewhere.
                Err(_) => out.retry(Retry {
                    batch: batch.clone(),
                    index: request,
                    intended,
                    batch_intended,
                    tries,
                }),
            }
        }
        state.batch = batch;
        if state.open == 0 {
            self.free.push(slot);
            return Verdict::Close;
        }
        self.busy += 1;
        self.pump(sent, out)
    }

    /// Acts on what the session reports, and queues what it has to send.
    fn pump(&mut self, now: u64, out: &mut Delivery<Http2Wire>) -> Verdict {
        self.handle_events(now, out);
        let Some(session) = self.session.as_mut() else { return Verdict::Keep };
        if let Err(e) = session.send(&mut self.out) {
            return Verdict::fail(ErrorKind::Write, e);
        }
        // Streams may close while sending (refused after a GOAWAY).
        self.handle_events(now, out);
        let session = self.session.as_ref().expect("checked above");
        if let Some(failure) = session.failure() {
            let cause = format!("HTTP/2 protocol error: {}", failure_in_words(failure));
            return Verdict::fail(ErrorKind::Read, cause);
        }
        if self.greeted && session.peer_max_concurrent_streams() == 0 {
            let cause = "the server allows no streams (its SETTINGS_MAX_CONCURRENT_STREAMS is 0)";
            return Verdict::fail(ErrorKind::Connect, cause);
        }
        // After a GOAWAY, the connection ends once its streams are done; a
        // server that turned the connection away without processing any
        // request is tried again after the back-off, not at once.
        if self.goaway.is_some() && self.busy == 0 {
            return match self.completed {
                0 => Verdict::CloseAndBackOff,
                _ => Verdict::Close,
            };
        }
        Verdict::Keep
    }

    fn handle_events(&mut self, now: u64, out: &mut Delivery<Http2Wire>) {
        let Some(session) = self.session.as_mut() else { return };
        let mut events = std::mem::take(&mut self.events);
        events.extend(session.events());
        for event in events.drain(..) {
            match event {
                Event::Settings => self.settings(now, out),
                Event::GoAway { last_stream_id, code } => {
                    self.goaway = Some(last_stream_id);
                    // The frame is no request's error: what became of each
                    // request on the connection is counted for it.
                    if code != session::NO_ERROR {
                        out.recorder.goaway_with_error(code_name(code));
                    }
                }
                Event::Closed { slot, stream_id, code } => {
                    self.closed(slot, stream_id, code, now, out)
                }
                Event::Response { slot, stream_id } => {
                    self.response_begins(slot, stream_id, now, out)
                }
                Event::GrpcMessage { slot, stream_id, index } => {
                    self.reply(slot, stream_id, index, now, out)
                }
                Event::Request { .. } => {}
            }
        }
        self.events = events;
    }

    /// The server's SETTINGS: the slots this connection offers follow its
    /// stream limit; new ones are tickets.
    fn settings(&mut self, now: u64, out: &mut Delivery<Http2Wire>) {
        let Some(session) = &self.session else { return };
        let limit = session.peer_max_concurrent_streams();
        let allowed = self.streams.min(usize::try_from(limit).unwrap_or(usize::MAX));
        if allowed < self.streams {
            out.recorder.stream_limit(limit);
        }
        let before = if self.greeted { self.slots } else { 0 };
        self.greeted = true;
        self.slots = (allowed / self.depth).max(1);
        for _ in before..self.slots {
            out.ready(self.generation, now);
        }
    }

    /// The request in flight on the stream `stream_id` of `stream_slot`.
    fn entry(&self, stream_slot: usize, stream_id: i32) -> Option<&Entry> {
        let (slot, k) = (stream_slot / self.depth, stream_slot % self.depth);
        self.batches.get(slot)?.entries.get(k).filter(|e| e.stream_id == stream_id)
    }

    /// The `index`th reply message of a streaming call arrived at `now`:
    /// the first one's time is the call's time to its first message; of a
    /// bidirectional call, each is the reply to the message of its rank.
    fn reply(
        &self,
        stream_slot: usize,
        stream_id: i32,
        index: u32,
        now: u64,
        out: &mut Delivery<Http2Wire>,
    ) {
        let Some(entry) = self.entry(stream_slot, stream_id) else { return };
        if index == 0 {
            out.recorder.first_message(entry.intended, now);
        }
        if let Some(sends) = self.streaming.sends.as_ref().filter(|s| s.answered) {
            if index < entry.sent_messages {
                let intended = entry.intended + u64::from(index) * sends.interval_ns;
                out.recorder.reply(entry.intended, intended, now);
            }
        }
    }

    /// Sends the messages of calls' streams that are due at `now`, each
    /// from its call's plan (a call sent late sends its due messages at
    /// once).
    fn send_due_messages(&mut self, now: u64) {
        let Some(sends) = &self.streaming.sends else { return };
        let Some(session) = self.session.as_mut() else { return };
        while let Some(&Reverse((due, stream_slot, stream_id))) = self.due.peek() {
            if due > now {
                break;
            }
            self.due.pop();
            let (slot, k) = (stream_slot / self.depth, stream_slot % self.depth);
            let Some(entry) = self.batches.get_mut(slot).and_then(|s| s.entries.get_mut(k)) else {
                continue;
            };
            if entry.stream_id != stream_id || entry.state != State::Open {
                continue;
            }
            let message = &sends.messages[entry.sent_messages as usize % sends.messages.len()];
            entry.sent_messages += 1;
            let last = entry.sent_messages >= sends.count;
            session.send_more(stream_slot, stream_id, message, last);
            if !last {
                let next = entry.intended + u64::from(entry.sent_messages) * sends.interval_ns;
                self.due.push(Reverse((next, stream_slot, stream_id)));
            }
        }
    }

    /// The response on `stream_slot` began at `now` (its first byte).
    fn response_begins(
        &self,
        stream_slot: usize,
        stream_id: i32,
        now: u64,
        out: &mut Delivery<Http2Wire>,
    ) {
        if let Some(entry) = self.entry(stream_slot, stream_id) {
            let sent = self.batches[stream_slot / self.depth].sent_ns;
            out.first_byte(entry.intended, sent, now);
        }
    }

    /// The stream of `stream_slot` closed with `code`.
    fn closed(
        &mut self,
        stream_slot: usize,
        stream_id: i32,
        code: u32,
        now: u64,
        out: &mut Delivery<Http2Wire>,
    ) {
        let (slot, k) = (stream_slot / self.depth, stream_slot % self.depth);
        let Some(state) = self.batches.get_mut(slot) else { return };
        let Some(entry) = state.entries.get_mut(k).filter(|e| e.stream_id == stream_id) else {
            return;
        };
        let was = std::mem::replace(&mut entry.state, State::Done);
        let entry = *entry;
        let Some(session) = self.session.as_mut() else { return };
        if was != State::Open {
            // Given up already (timed out, its slot freed then).
            session.clear_message(stream_slot);
            return;
        }
        state.open -= 1;
        let last_of_batch = state.open == 0;
        let exchange = Exchange {
            intended: entry.intended,
            batch_intended: state.batch_intended,
            sent: state.sent_ns,
            target: state.batch.target,
        };
        let (status, reset_by_peer, ended, messages) =
            session.message(stream_slot).map_or((0, false, false, 0), |m| {
                (m.status, m.reset_by_peer, m.ended, m.grpc_messages)
            });
        if self.streaming.replies {
            let complete = code == session::NO_ERROR && ended;
            out.recorder.streamed(entry.intended, entry.sent_messages, messages, complete);
        }
        let outcome = match self.grpc {
            true => session.message(stream_slot).map_or(Err(NotGrpc::NoStatus), grpc_outcome),
            false => Ok(Outcome::Http(status)),
        };
        // An interim (1xx) status, or a stream closed before the server's
        // END_STREAM, is not a whole response.
        let complete = code == session::NO_ERROR && status >= 200 && ended;
        let captured = if self.capture && complete {
            Some(captured(session.take_message(stream_slot)))
        } else {
            session.clear_message(stream_slot);
            None
        };
        let refused_by_goaway = self.goaway.is_some_and(|last| stream_id > last)
            && code == session::REFUSED_STREAM
            && !reset_by_peer;
        if let (true, Err(not_grpc)) = (complete, outcome) {
            // A whole response, but no gRPC call's: a proxy's error page,
            // a server that does not speak gRPC on this path.
            self.completed += 1;
            out.error(ErrorKind::Read, &not_grpc.in_words(status));
            out.recorder.lost(state.batch.target);
        } else if let (true, Ok(outcome)) = (complete, outcome) {
            self.completed += 1;
            out.response(exchange, now, outcome, last_of_batch, captured);
            out.succeeded();
        } else if code == session::NO_ERROR && ended {
            out.error(ErrorKind::Read, "HTTP/2 response without :status");
            out.recorder.lost(state.batch.target);
        } else if refused_by_goaway && entry.tries + 1 >= MAX_TRIES {
            let cause = format!(
                "HTTP/2: the server did not process the request, {MAX_TRIES} times (GOAWAY)"
            );
            out.error(ErrorKind::Read, &cause);
            out.recorder.lost(state.batch.target);
        } else if refused_by_goaway {
            out.recorder.retried_after_goaway();
            out.retry(Retry {
                batch: state.batch.clone(),
                index: entry.request,
                intended: exchange.intended,
                batch_intended: exchange.batch_intended,
                tries: entry.tries + 1,
            });
        } else {
            let name = code_name(code);
            let cause = if reset_by_peer && code == session::NO_ERROR {
                "HTTP/2 stream reset by the server before the response ended (NO_ERROR)".into()
            } else if reset_by_peer {
                format!("HTTP/2 stream reset by the server: {name}")
            } else {
                format!("HTTP/2 stream error: {name}")
            };
            out.error(ErrorKind::Read, &cause);
            out.recorder.lost(state.batch.target);
        }
        if last_of_batch {
            self.slot_done(slot, now, out);
        }
    }

    /// The last request of `slot`'s batch ended: the slot is free, and a
    /// ticket when the connection takes another batch.
    fn slot_done(&mut self, slot: usize, now: u64, out: &mut Delivery<Http2Wire>) {
        self.busy -= 1;
        self.free.push(slot);
        if self.accepting() {
            out.ready(self.generation, now);
        }
    }
}

/// Why a whole response is no gRPC call's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NotGrpc {
    /// Its HTTP status is not 200 (with a gRPC status it would still be
    /// a call's: gRPC servers answer every call with 200).
    HttpStatus,
    /// Its `content-type` is not gRPC's.
    ContentType,
    /// It ended without a `grpc-status`.
    NoStatus,
}

impl NotGrpc {
    /// The cause, one per kind (and HTTP status).
    fn in_words(self, status: u16) -> String {
        match self {
            NotGrpc::HttpStatus => format!("not a gRPC response: HTTP status {status}"),
            NotGrpc::ContentType => {
                "not a gRPC response: its content-type is not application/grpc".into()
            }
            NotGrpc::NoStatus => "gRPC response without grpc-status".into(),
        }
    }
}

/// A gRPC call's outcome: the `grpc-status` of a response that is a
/// gRPC call's.
fn grpc_outcome(message: &Message) -> Result<Outcome, NotGrpc> {
    match (message.status, message.grpc_content, message.grpc_status) {
        (200, true, Some(code)) => Ok(Outcome::Grpc(code)),
        (200, true, None) => Err(NotGrpc::NoStatus),
        (200, false, _) => Err(NotGrpc::ContentType),
        _ => Err(NotGrpc::HttpStatus),
    }
}

/// An HTTP/2 error code by its name (RFC 9113 7); the codes no RFC
/// names are one cause, whatever their number (a server that picks a new
/// code for every stream must not make as many causes).
fn code_name(code: u32) -> String {
    match code {
        0..=0xd => session::error_code_name(code),
        _ => "an error code no RFC names".to_string(),
    }
}

/// Why pace's side ended the connection, without what the server sent in
/// it (nghttp2's complaint names the stream and quotes the server's
/// fields: `Invalid HTTP header field was received: frame type: 1,
/// stream: 7, name: [x], value: [y] (PROTOCOL_ERROR)`), so that a cause
/// is one per kind of fault, not one per stream or value.
fn failure_in_words(failure: &str) -> String {
    let code = failure.rfind(" (").map_or("", |at| &failure[at..]);
    match failure.split_once(':') {
        Some((what, _)) => format!("{what}{code}"),
        None => failure.to_string(),
    }
}

/// A response's header fields (without the pseudo-headers, names in their
/// HTTP/1.1 case) and body, as the script's `response()` gets them.
fn captured(message: Message) -> Captured {
    let headers = message
        .fields
        .into_iter()
        .filter(|(name, _)| !name.starts_with(b":"))
        .map(|(name, value)| (canonical_name(&name), String::from_utf8_lossy(&value).into_owned()))
        .collect();
    Captured { headers, body: message.body }
}

/// For the fuzz target `http2_response` (`crate::fuzzing`), which checks
/// the tickets given out against the slots.
#[cfg(any(test, feature = "fuzzing"))]
impl Http2 {
    /// The slots offered, the slots busy, and the readiness number.
    pub fn slots_busy_generation(&self) -> (usize, usize, u32) {
        (self.slots, self.busy, self.generation)
    }
}
