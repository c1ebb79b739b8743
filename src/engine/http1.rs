//! The HTTP/1.1 exchange of one connection: the request batch in flight
//! (written as the socket takes it) and its responses, framed as they
//! arrive. A connection carries one batch at a time (one slot); a batch of
//! several requests is pipelining, and waits for that many responses.

use std::sync::Arc;

use crate::engine::conn::{Exchange, Ticket};
use crate::engine::delivery::{Delivery, Verdict};
use crate::engine::source::Batch;
use crate::http::response::{Response, ResponseParser};
use crate::stats::ErrorKind;

/// An incomplete response of at least this many bytes may be held back by
/// TCP flow control until it is read: the thread then reads promptly.
const LARGE_RESPONSE: usize = 16 * 1024;

/// Where the batch of the connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Ready for a batch.
    Idle,
    /// Request bytes (or TLS records) still to be written.
    Writing,
    /// Written, responses outstanding.
    Reading,
}

pub struct Http1 {
    state: State,
    /// The request batch in flight (kept for partial writes).
    batch: Batch,
    /// The intended send time of each request of the batch (ns).
    intended: Vec<u64>,
    /// When the batch's first byte was written (ns).
    sent_ns: u64,
    parser: ResponseParser,
    /// Bytes of the batch already written.
    written: usize,
    /// Responses still expected for the batch.
    pending: usize,
    /// Bytes read since the last complete response.
    received: usize,
    /// How many times the connection became ready (see [`Ticket`]).
    serial: u32,
}

impl Http1 {
    pub fn new(capture: bool) -> Http1 {
        Http1 {
            state: State::Idle,
            batch: Batch::new(Arc::from(&[][..]), Arc::from([false])),
            intended: Vec::new(),
            sent_ns: 0,
            parser: ResponseParser::new(capture),
            written: 0,
            pending: 0,
            received: 0,
            serial: 0,
        }
    }

    /// A new socket: nothing in flight; it is ready at once (`since`).
    pub fn connected(&mut self, since: u64, out: &mut Delivery) {
        self.forget();
        self.became_ready(since, out);
    }

    /// The socket is gone: whatever was in flight is forgotten.
    pub fn forget(&mut self) {
        self.state = State::Idle;
        self.pending = 0;
        self.received = 0;
        self.parser.start(false);
        // Tickets of the old socket must not be used on the next one.
        self.serial = self.serial.wrapping_add(1);
    }

    /// The ticket's readiness still holds.
    #[inline]
    pub fn accepts(&self, ticket: Ticket) -> bool {
        self.state == State::Idle && self.serial == ticket.serial
    }

    /// A batch is (at least partly) sent and not answered.
    pub fn in_flight(&self) -> bool {
        matches!(self.state, State::Writing | State::Reading)
    }

    /// Requests sent and not answered.
    pub fn requests_in_flight(&self) -> u64 {
        if self.in_flight() {
            self.pending as u64
        } else {
            0
        }
    }

    /// The target of the batch in flight, if one is.
    pub fn target_in_flight(&self) -> Option<u32> {
        self.in_flight().then_some(self.batch.target)
    }

    /// The intended time of the oldest request in flight.
    pub fn oldest_in_flight(&self) -> Option<u64> {
        self.in_flight().then(|| self.intended.first().copied()).flatten()
    }

    /// The batch in flight has waited longer than `timeout` at `now`.
    pub fn expired(&self, now: u64, timeout: u64) -> bool {
        self.in_flight() && now.saturating_sub(self.sent_ns) > timeout
    }

    /// A large part of a response has arrived and the rest has not.
    pub fn receiving_large(&self) -> bool {
        self.in_flight() && !self.parser.is_idle() && self.received >= LARGE_RESPONSE
    }

    /// Starts `batch`, meant for `intended` (empty in the closed loop,
    /// where a request is intended when it is sent), sent at `sent`.
    pub fn start(&mut self, batch: Batch, intended: &[u64], sent: u64) {
        self.intended.clear();
        if intended.is_empty() {
            self.intended.resize(batch.depth(), sent);
        } else {
            self.intended.extend_from_slice(intended);
        }
        self.sent_ns = sent;
        self.pending = batch.depth();
        self.parser.start(batch.heads[0]);
        self.batch = batch;
        self.written = 0;
        self.state = State::Writing;
    }

    /// The bytes still to write.
    #[inline]
    pub fn unwritten(&self) -> &[u8] {
        match self.state {
            State::Writing => &self.batch.bytes[self.written..],
            _ => &[],
        }
    }

    pub fn wrote(&mut self, n: usize) {
        self.written += n;
    }

    /// Everything was written and flushed.
    pub fn flushed(&mut self) {
        if self.state == State::Writing && self.written >= self.batch.bytes.len() {
            self.state = State::Reading;
        }
    }

    /// Bytes read from the socket, which arrived at `arrived`.
    pub fn receive(&mut self, mut data: &[u8], arrived: u64, out: &mut Delivery) -> Verdict {
        self.received += data.len();
        while !data.is_empty() {
            if self.pending == 0 {
                return Verdict::fail(ErrorKind::Read, "data received with no request outstanding");
            }
            match self.parser.feed(data) {
                Ok(feed) => {
                    data = &data[feed.consumed..];
                    if let Some(response) = feed.done {
                        let verdict = self.complete(response, arrived, out);
                        if verdict != Verdict::Keep {
                            return verdict;
                        }
                    }
                }
                Err(e) => return Verdict::fail(ErrorKind::Read, e.as_str()),
            }
        }
        Verdict::Keep
    }

    /// The peer closed the connection (a zero-byte read) at `now`.
    pub fn closed_by_peer(&mut self, now: u64, out: &mut Delivery) -> Verdict {
        match self.parser.eof() {
            Ok(Some(response)) => match self.complete(response, now, out) {
                Verdict::Keep => Verdict::Close,
                verdict => verdict,
            },
            Ok(None) if !self.in_flight() => Verdict::Close,
            Ok(None) => Verdict::fail(ErrorKind::Read, "connection closed before the response"),
            Err(e) => Verdict::fail(ErrorKind::Read, e.as_str()),
        }
    }

    /// Records a complete response that arrived at `arrived` (the kernel's
    /// receive stamp).
    fn complete(&mut self, response: Response, arrived: u64, out: &mut Delivery) -> Verdict {
        self.received = 0;
        let index = self.batch.depth() - self.pending;
        self.pending -= 1;
        let exchange = Exchange {
            intended: self.intended[index],
            batch_intended: self.intended[0],
            sent: self.sent_ns,
            target: self.batch.target,
        };
        out.response(exchange, arrived, response.status, self.pending == 0, response.captured);
        if self.pending > 0 {
            self.parser.start(self.batch.heads[index + 1]);
            return Verdict::Keep;
        }
        out.succeeded();
        if !response.keep_alive {
            return Verdict::Close;
        }
        if self.state == State::Reading {
            self.became_ready(arrived, out);
        }
        Verdict::Keep
    }

    fn became_ready(&mut self, since: u64, out: &mut Delivery) {
        self.state = State::Idle;
        self.serial = self.serial.wrapping_add(1);
        out.ready(self.serial, since);
    }
}
