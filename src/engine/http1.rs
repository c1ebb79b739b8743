//! HTTP/1.1 on one connection: the request batch in flight (written as the
//! link takes it) and its responses, framed as they arrive. A connection
//! carries one batch at a time (one slot); a batch of several requests is
//! pipelining, and waits for that many responses.

use std::sync::Arc;

use super::link::StreamLink;
use super::protocol::{Context, Delivery, Opened, Outgoing, Protocol, Retry, Ticket, Verdict};
use super::recorder::{Exchange, Recorder};
use crate::http::request::encode;
use crate::http::response::{Response, ResponseParser};
use crate::protocol::Protocol as Choice;
use crate::request::Request;
use crate::stats::{ErrorKind, Outcome};

/// An incomplete response of at least this many bytes may be held back by
/// TCP flow control until it is read: the thread then reads promptly.
const LARGE_RESPONSE: usize = 16 * 1024;

/// A batch as HTTP/1.1 writes it: its bytes, and for each of its requests
/// whether it is a HEAD (its response has no body).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Http1Wire {
    pub bytes: Arc<[u8]>,
    pub heads: Arc<[bool]>,
}

/// What the connections of a thread have in common.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http1Setup {
    /// Keep headers and bodies (for the script's `response()`).
    pub capture: bool,
}

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
    batch: Outgoing<Http1Wire>,
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

impl Protocol for Http1 {
    type Wire = Http1Wire;
    type Setup = Http1Setup;
    type Link = StreamLink;

    const CHOICE: Choice = Choice::Http1;

    fn new(setup: &Http1Setup) -> Http1 {
        let wire = Http1Wire { bytes: Arc::from(&[][..]), heads: Arc::from([false]) };
        Http1 {
            state: State::Idle,
            batch: Outgoing { wire, target: 0, origin: 0 },
            intended: Vec::new(),
            sent_ns: 0,
            parser: ResponseParser::new(setup.capture),
            written: 0,
            pending: 0,
            received: 0,
            serial: 0,
        }
    }

    fn encode(requests: &[Request], _: &Context) -> Result<Http1Wire, String> {
        let mut bytes = Vec::new();
        for request in requests {
            encode(request, &mut bytes);
        }
        let heads = requests.iter().map(Request::is_head).collect();
        Ok(Http1Wire { bytes: bytes.into(), heads })
    }

    /// A script's text is sent as it is, as wrk sends it.
    fn encode_text(
        text: &Arc<[u8]>,
        heads: &Arc<[bool]>,
        _: &Context,
    ) -> Result<Http1Wire, String> {
        Ok(Http1Wire { bytes: text.clone(), heads: heads.clone() })
    }

    #[inline]
    fn depth(wire: &Http1Wire) -> usize {
        wire.heads.len()
    }

    /// A new link: nothing in flight; ready at once (`now`).
    fn connected(&mut self, now: u64, _: &Opened<'_>, out: &mut Delivery<Http1Wire>) -> Verdict {
        self.forget();
        self.became_ready(now, out);
        Verdict::Keep
    }

    fn opening(&self) -> bool {
        false
    }

    fn forget(&mut self) {
        self.state = State::Idle;
        self.pending = 0;
        self.received = 0;
        self.parser.start(false);
        // Tickets of the old link must not be used on the next one.
        self.serial = self.serial.wrapping_add(1);
    }

    /// A batch in flight is one error, whatever its depth (as wrk counts).
    fn lose_in_flight(&mut self, recorder: &mut Recorder) -> u64 {
        if !self.batch_in_flight() {
            return 0;
        }
        recorder.lost(self.batch.target);
        1
    }

    #[inline]
    fn accepts(&self, ticket: Ticket) -> bool {
        self.state == State::Idle && self.serial == ticket.serial
    }

    fn start(
        &mut self,
        batch: Outgoing<Http1Wire>,
        intended: &[u64],
        sent: u64,
        _out: &mut Delivery<Http1Wire>,
    ) -> Verdict {
        let depth = batch.wire.heads.len();
        self.intended.clear();
        if intended.is_empty() {
            self.intended.resize(depth, sent);
        } else {
            self.intended.extend_from_slice(intended);
        }
        self.sent_ns = sent;
        self.pending = depth;
        self.parser.start(batch.wire.heads[0]);
        self.batch = batch;
        self.written = 0;
        self.state = State::Writing;
        Verdict::Keep
    }

    /// HTTP/1.1 leaves no request unprocessed for another connection: a
    /// request handed to it again goes with its whole batch.
    fn retry(
        &mut self,
        retry: Retry<Http1Wire>,
        now: u64,
        out: &mut Delivery<Http1Wire>,
    ) -> Verdict {
        let intended = vec![retry.intended; retry.batch.wire.heads.len()];
        self.start(retry.batch, &intended, now, out)
    }

    fn receive(&mut self, mut data: &[u8], arrived: u64, out: &mut Delivery<Http1Wire>) -> Verdict {
        self.received += data.len();
        while !data.is_empty() {
            if self.pending == 0 {
                return Verdict::fail(ErrorKind::Read, "data received with no request outstanding");
            }
            if self.parser.is_idle() {
                // The next response of the batch begins.
                let answered = self.batch.wire.heads.len() - self.pending;
                let intended = self.intended.get(answered).copied().unwrap_or(self.sent_ns);
                out.first_byte(intended, self.sent_ns, arrived);
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

    #[inline]
    fn unwritten(&mut self) -> &[u8] {
        match self.state {
            State::Writing => &self.batch.wire.bytes[self.written..],
            _ => &[],
        }
    }

    #[inline]
    fn wrote(&mut self, n: usize) {
        self.written += n;
    }

    fn flushed(&mut self) {
        if self.state == State::Writing && self.written >= self.batch.wire.bytes.len() {
            self.state = State::Reading;
        }
    }

    /// A response that ends with the connection (no framing) is complete;
    /// one cut short is a read error.
    fn closed_by_peer(&mut self, now: u64, out: &mut Delivery<Http1Wire>) -> Verdict {
        match self.parser.eof() {
            Ok(Some(response)) => match self.complete(response, now, out) {
                Verdict::Keep => Verdict::Close,
                verdict => verdict,
            },
            Ok(None) if !self.batch_in_flight() => Verdict::Close,
            Ok(None) => Verdict::fail(ErrorKind::Read, "connection closed before the response"),
            Err(e) => Verdict::fail(ErrorKind::Read, e.as_str()),
        }
    }

    /// A batch with no complete response within the timeout fails its
    /// connection (wrk never counted hung requests; wrk2 counted them
    /// every 2 s without closing).
    fn expire(&mut self, now: u64, timeout: u64, _: &mut Delivery<Http1Wire>) -> Verdict {
        if self.batch_in_flight() && now.saturating_sub(self.sent_ns) > timeout {
            return Verdict::fail(ErrorKind::Timeout, "no response within the timeout");
        }
        Verdict::Keep
    }

    fn in_flight(&self) -> u64 {
        if self.batch_in_flight() {
            self.pending as u64
        } else {
            0
        }
    }

    fn oldest_in_flight(&self) -> Option<u64> {
        self.batch_in_flight().then(|| self.intended.first().copied()).flatten()
    }

    fn receiving_large(&self) -> bool {
        self.batch_in_flight() && !self.parser.is_idle() && self.received >= LARGE_RESPONSE
    }
}

impl Http1 {
    /// A batch is (at least partly) sent and not answered.
    fn batch_in_flight(&self) -> bool {
        matches!(self.state, State::Writing | State::Reading)
    }

    /// Records a complete response that arrived at `arrived` (the kernel's
    /// receive stamp).
    fn complete(
        &mut self,
        response: Response,
        arrived: u64,
        out: &mut Delivery<Http1Wire>,
    ) -> Verdict {
        self.received = 0;
        let heads = &self.batch.wire.heads;
        let index = heads.len() - self.pending;
        self.pending -= 1;
        let exchange = Exchange {
            intended: self.intended[index],
            batch_intended: self.intended[0],
            sent: self.sent_ns,
            target: self.batch.target,
        };
        let outcome = Outcome::Http(response.status);
        out.response(exchange, arrived, outcome, self.pending == 0, response.captured);
        if self.pending > 0 {
            self.parser.start(heads[index + 1]);
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

    fn became_ready(&mut self, since: u64, out: &mut Delivery<Http1Wire>) {
        self.state = State::Idle;
        self.serial = self.serial.wrapping_add(1);
        out.ready(self.serial, since);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::origin::Origin;
    use crate::engine::testing::Delivered;

    const MS: u64 = 1_000_000;

    fn context() -> Context {
        Context { scheme: "http".into(), authority: "h".into() }
    }

    /// A batch of `texts` (one request each), as HTTP/1.1 writes it.
    fn batch(texts: &[&str]) -> Outgoing<Http1Wire> {
        let text: Arc<[u8]> = texts.concat().into_bytes().into();
        let heads: Arc<[bool]> = texts.iter().map(|t| t.starts_with("HEAD")).collect();
        let wire = Http1::encode_text(&text, &heads, &context()).unwrap();
        Outgoing { wire, target: 3, origin: 0 }
    }

    /// A connection of `capture`, connected at 1 ms: its first ticket.
    fn connected(capture: bool) -> (Http1, Delivered<Http1Wire>) {
        let mut http1 = Http1::new(&Http1Setup { capture });
        let mut delivered = Delivered::new();
        let origin = Origin::for_tests();
        let verdict =
            delivered.on(&mut http1, |p, out| p.connected(MS, &Opened::plain(&origin), out));
        assert_eq!(verdict, Verdict::Keep);
        assert_eq!(delivered.tickets.len(), 1);
        assert!(http1.accepts(delivered.tickets[0]));
        (http1, delivered)
    }

    /// Writes everything the batch has, as a socket that takes it all.
    fn write_all(http1: &mut Http1) -> Vec<u8> {
        let written = http1.unwritten().to_vec();
        http1.wrote(written.len());
        http1.flushed();
        written
    }

    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    #[test]
    fn the_neutral_request_is_written_with_its_length() {
        let request = Request {
            method: "POST".into(),
            target: "/a".into(),
            fields: vec![("Host".into(), b"h".to_vec())],
            body: Some(Arc::from(&b"xyz"[..])),
        };
        let wire = Http1::encode(&[request.clone(), request], &context()).unwrap();
        let one = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz";
        assert_eq!(wire.bytes.as_ref(), format!("{one}{one}").as_bytes());
        assert_eq!(wire.heads.as_ref(), [false, false]);
    }

    #[test]
    fn a_pipelined_batch_waits_for_all_its_responses() {
        let (mut http1, mut delivered) = connected(false);
        let ticket = delivered.tickets.pop().unwrap();
        let batch = batch(&["GET /a HTTP/1.1\r\n\r\n", "HEAD /b HTTP/1.1\r\n\r\n"]);
        delivered.on(&mut http1, |p, out| p.start(batch, &[2 * MS, 3 * MS], 4 * MS, out));
        assert!(!http1.accepts(ticket), "a busy connection takes no other batch");
        assert_eq!(write_all(&mut http1), b"GET /a HTTP/1.1\r\n\r\nHEAD /b HTTP/1.1\r\n\r\n");
        assert_eq!((http1.in_flight(), http1.oldest_in_flight()), (2, Some(2 * MS)));
        // The first response, then the HEAD's (no body) cut in two reads.
        let head = "HTTP/1.1 404 Not Found\r\nContent-Length: 7\r\n\r\n";
        let data = format!("{OK}{}", &head[..10]);
        let verdict = delivered.on(&mut http1, |p, out| p.receive(data.as_bytes(), 5 * MS, out));
        assert_eq!(verdict, Verdict::Keep);
        assert_eq!((delivered.stats().requests, http1.in_flight()), (1, 1));
        assert!(delivered.tickets.is_empty(), "ready only once the whole batch answered");
        let rest = &head.as_bytes()[10..];
        let verdict = delivered.on(&mut http1, |p, out| p.receive(rest, 7 * MS, out));
        assert_eq!(verdict, Verdict::Keep);
        let stats = delivered.stats();
        assert_eq!((stats.requests, stats.errors.status), (2, 1));
        assert_eq!(stats.outcomes.http().collect::<Vec<_>>(), [(200, 1), (404, 1)]);
        // Latency from each request's intended time to its response's read.
        assert_eq!((stats.corrected.min(), stats.corrected.max()), (3000, 4001));
        // Both responses began in the first read, 1 ms after the send.
        let first_byte = &stats.phases.first_byte;
        assert_eq!((first_byte.len(), first_byte.min(), first_byte.max()), (2, 1000, 1000));
        assert_eq!(http1.in_flight(), 0);
        assert_eq!(delivered.tickets.len(), 1);
        assert_eq!(delivered.tickets[0].since, 7 * MS);
        assert!(http1.accepts(delivered.tickets[0]));
    }

    #[test]
    fn a_close_by_the_peer_mid_batch_is_a_read_error_one_after_it_is_not() {
        let (mut http1, mut delivered) = connected(false);
        let batch = batch(&["GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\n\r\n"]);
        delivered.on(&mut http1, |p, out| p.start(batch, &[], MS, out));
        write_all(&mut http1);
        delivered.on(&mut http1, |p, out| p.receive(OK.as_bytes(), 2 * MS, out));
        let verdict = delivered.on(&mut http1, |p, out| p.closed_by_peer(3 * MS, out));
        assert_eq!(
            verdict,
            Verdict::fail(ErrorKind::Read, "connection closed before the response")
        );
        // The connection layer counts the batch lost: one error, as wrk.
        assert_eq!(http1.lose_in_flight(&mut delivered.recorder), 1);
        http1.forget();
        assert_eq!(http1.in_flight(), 0);
        // Idle, a close is the server ending a keep-alive connection.
        let verdict = delivered.on(&mut http1, |p, out| p.closed_by_peer(4 * MS, out));
        assert_eq!(verdict, Verdict::Close);
        assert_eq!(http1.lose_in_flight(&mut delivered.recorder), 0);
    }

    #[test]
    fn a_response_delimited_by_the_close_completes_with_it() {
        let (mut http1, mut delivered) = connected(true);
        delivered
            .on(&mut http1, |p, out| p.start(batch(&["GET / HTTP/1.1\r\n\r\n"]), &[], MS, out));
        write_all(&mut http1);
        let data = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end";
        assert_eq!(delivered.on(&mut http1, |p, out| p.receive(data, 2 * MS, out)), Verdict::Keep);
        let verdict = delivered.on(&mut http1, |p, out| p.closed_by_peer(3 * MS, out));
        assert_eq!(verdict, Verdict::Close);
        assert_eq!(delivered.stats().requests, 1);
        assert_eq!(delivered.responses.len(), 1);
        assert_eq!(delivered.responses[0].captured.body, b"until the end");
    }

    #[test]
    fn a_batch_without_a_response_expires_after_the_timeout() {
        let (mut http1, mut delivered) = connected(false);
        delivered
            .on(&mut http1, |p, out| p.start(batch(&["GET / HTTP/1.1\r\n\r\n"]), &[], MS, out));
        write_all(&mut http1);
        let timeout = 10 * MS;
        let verdict = delivered.on(&mut http1, |p, out| p.expire(11 * MS, timeout, out));
        assert_eq!(verdict, Verdict::Keep, "sent at 1 ms: 10 ms is not over at 11 ms");
        let verdict = delivered.on(&mut http1, |p, out| p.expire(12 * MS, timeout, out));
        assert_eq!(verdict, Verdict::fail(ErrorKind::Timeout, "no response within the timeout"));
    }

    #[test]
    fn bytes_nobody_asked_for_and_broken_responses_fail_the_connection() {
        let (mut http1, mut delivered) = connected(false);
        let verdict = delivered.on(&mut http1, |p, out| p.receive(OK.as_bytes(), MS, out));
        assert_eq!(
            verdict,
            Verdict::fail(ErrorKind::Read, "data received with no request outstanding")
        );
        let (mut http1, mut delivered) = connected(false);
        delivered
            .on(&mut http1, |p, out| p.start(batch(&["GET / HTTP/1.1\r\n\r\n"]), &[], MS, out));
        write_all(&mut http1);
        let verdict = delivered.on(&mut http1, |p, out| p.receive(b"NOT HTTP\r\n\r\n", MS, out));
        assert!(matches!(verdict, Verdict::Fail(ErrorKind::Read, _)), "{verdict:?}");
        assert_eq!(delivered.stats().outcomes.http_status(200), 0);
    }

    #[test]
    fn a_new_link_voids_the_old_tickets() {
        let (mut http1, mut delivered) = connected(false);
        let old = delivered.tickets.pop().unwrap();
        http1.forget();
        assert!(!http1.accepts(old));
        let origin = Origin::for_tests();
        delivered.on(&mut http1, |p, out| p.connected(2 * MS, &Opened::plain(&origin), out));
        let new = delivered.tickets.pop().unwrap();
        assert!(http1.accepts(new) && !http1.accepts(old));
        assert_eq!(new.since, 2 * MS);
    }
}
