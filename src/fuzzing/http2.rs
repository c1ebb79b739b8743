//! The HTTP/2 client's exchanges (`engine/http2.rs`, over nghttp2's
//! session) with a server that sends anything: the engine's `Http2` of one
//! connection, driven as the connection layer drives it (requests go out on
//! the tickets it gives, what the server sent arrives in reads, streams
//! time out, the socket fails and is opened again, the server closes),
//! with what it delivers recorded by a real `Recorder`.

use std::collections::VecDeque;
use std::sync::Arc;

use super::frames::{frame, FrameReader, Op, Streams, SETTINGS, STATUSES};
use super::input::{cut, Input};
use crate::engine::fuzzing::{
    CapturedResponse, Context, Delivery, Http2, Http2Setup, Http2Wire, Opened, Origin, Outgoing,
    Protocol, Recorder, Retry, Ticket, Verdict,
};

/// The connection's number, in its tickets.
const CONN: usize = 7;

const MS: u64 = 1_000_000;

/// Requests a batch is made of (one per stream), by choice: with and
/// without a body, HEAD, and a body larger than a stream's default window
/// (it waits for the server's WINDOW_UPDATE).
const REQUESTS: [(&str, usize); 4] = [
    ("GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0),
    ("HEAD /head HTTP/1.1\r\nHost: h\r\n\r\n", 0),
    ("POST /post HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n", 5),
    ("POST /large HTTP/1.1\r\nHost: h\r\nContent-Length: 70000\r\n\r\n", 70_000),
];

/// Timeouts for [`Op::Expire`]: everything sent before now, or older ones.
const TIMEOUTS: [u64; 4] = [0, MS, 3 * MS, 1000 * MS];

/// The client side of HTTP/2 on a server's bytes. The input: byte 0 bit
/// 0: capture responses, bits 1-2: requests per batch (1 + n mod 3), bit
/// 3: the server does not start each connection with an empty SETTINGS
/// (the program sends what it sends first); byte 1: `--streams` (1, 2,
/// 3, 8, 128); then a program of [`Op`]s: the server's frames and bytes,
/// each [`Op::Read`] delivering what was sent so far cut at its points,
/// with requests going out, timeouts, socket failures and the server's
/// close in between. After the program, the client reads what is left,
/// then the server closes.
///
/// What must hold, after every step: no panic; each request sent ends at
/// most once, as a response recorded, an error counted (by the exchange,
/// or by the connection layer for those in flight when it fails) or a
/// retry, and the requests still in flight are exactly those that have
/// not ended (so never more ended than sent); the exchange never closes
/// with requests in flight; after a close nothing is in flight (nothing
/// is counted twice); tickets name this connection and its current
/// socket, batches in flight never exceed the slots, and while the
/// connection takes requests every free slot has a ticket; responses
/// recorded have a final status; what the client writes is the preface
/// and well-formed frames.
pub fn http2_responses(data: &[u8]) {
    let mut input = Input::new(data);
    let config = input.byte();
    let capture = config & 1 == 1;
    let depth = 1 + usize::from(config >> 1 & 3) % 3;
    let greets = config & 8 == 0;
    let streams = [1, 2, 3, 8, 128][usize::from(input.byte() % 5)];
    let mut client = Client::new(capture, streams, depth, greets);
    client.connect();
    while !input.is_empty() {
        client.run(&Op::read(&mut input));
    }
    // The server's bytes end: the client reads what is left, then the
    // server closes.
    if client.alive {
        client.run(&Op::Read { cuts: Vec::new() });
    }
    if client.alive {
        client.run(&Op::PeerClose);
    }
}

/// What the exchange has handed over since it was last looked at.
#[derive(Default)]
struct Inbox {
    responses: Vec<CapturedResponse>,
    tickets: Vec<Ticket>,
    retries: VecDeque<Retry<Http2Wire>>,
}

/// The exchange, what drives it, and what it has been seen to do.
struct Client {
    http2: Http2,
    recorder: Recorder,
    inbox: Inbox,
    capture: bool,
    /// The server starts each connection with an empty SETTINGS.
    greets: bool,
    /// One batch per choice, `depth` requests each.
    batches: Vec<Outgoing<Http2Wire>>,
    now: u64,
    /// The connection is open (else the next op opens it again).
    alive: bool,
    /// What the server sent that the client has not read.
    unread: Vec<u8>,
    /// The streams of this connection, one per request sent (1, 3, 5...;
    /// a request the session refused shifts them, as a stream choice may).
    streams: Streams,
    /// Tickets held, as the schedule holds them.
    tickets: VecDeque<Ticket>,
    /// Requests to send again.
    retries: VecDeque<Retry<Http2Wire>>,
    /// What the client wrote on this connection.
    output: FrameReader,
    /// Requests handed to the exchange (a request sent again counts again).
    sent: u64,
    /// Requests handed back to be sent again.
    retried: u64,
    /// Requests in flight when the connection failed: the connection layer
    /// counts each as an error.
    lost: u64,
    /// Responses handed over for the script.
    captured: u64,
}

impl Client {
    fn new(capture: bool, streams: usize, depth: usize, greets: bool) -> Client {
        let recorder = Recorder::measuring_from_zero();
        Client {
            http2: Http2::new(&Http2Setup {
                capture,
                streams,
                depth,
                grpc: false,
                streaming: Default::default(),
            }),
            recorder,
            inbox: Inbox::default(),
            capture,
            greets,
            batches: (0..REQUESTS.len()).map(|first| batch(first, depth)).collect(),
            now: 1000 * MS,
            alive: false,
            unread: Vec::new(),
            streams: Streams::new(false),
            tickets: VecDeque::new(),
            retries: VecDeque::new(),
            output: FrameReader::new(true),
            sent: 0,
            retried: 0,
            lost: 0,
            captured: 0,
        }
    }

    /// Runs one op, then checks what must hold.
    fn run(&mut self, op: &Op) {
        self.now += MS;
        let status = |choice: u8| STATUSES[usize::from(choice % 16)];
        if let Some(bytes) = op.bytes(&mut self.streams, status) {
            self.unread.extend_from_slice(&bytes);
            return;
        }
        match op {
            Op::Read { cuts } => self.read(cuts),
            Op::Submit { count, choice } => self.submit(1 + count % 4, *choice),
            Op::Expire { timeout } => {
                self.connect_again();
                let timeout = TIMEOUTS[usize::from(timeout % 4)];
                let now = self.now;
                let verdict = self.deliver(|http2, out| http2.expire(now, timeout, out));
                self.act(verdict);
            }
            Op::Fail => {
                if self.alive {
                    self.lost += self.http2.in_flight();
                    self.end();
                }
            }
            Op::PeerClose => {
                if self.alive {
                    let now = self.now;
                    let verdict = self.deliver(|http2, out| http2.closed_by_peer(now, out));
                    assert_ne!(verdict, Verdict::Keep, "a closed connection kept");
                    self.act(verdict);
                }
            }
            _ => unreachable!("{op:?} is bytes"),
        }
        self.check();
    }

    /// A new socket: the exchange starts its session on it.
    fn connect(&mut self) {
        self.alive = true;
        self.streams = Streams::new(false);
        self.output = FrameReader::new(true);
        if self.greets {
            // Before what the program sent meanwhile.
            let mut settings = Vec::new();
            frame(&mut settings, SETTINGS, 0, 0, &[]);
            self.unread.splice(0..0, settings);
        }
        let now = self.now;
        let origin = Origin::for_tests();
        let link = Opened::plain(&origin);
        let verdict = self.deliver(|http2, out| http2.connected(now, &link, out));
        self.act(verdict);
        self.check();
    }

    /// Opens the connection again if it closed, as the connection layer
    /// does (the back-off elapsed).
    fn connect_again(&mut self) {
        if !self.alive {
            self.connect();
        }
    }

    /// The server's bytes so far arrive, cut into reads at `cuts`.
    fn read(&mut self, cuts: &[u16]) {
        self.connect_again();
        let unread = std::mem::take(&mut self.unread);
        for piece in cut(&unread, cuts) {
            self.now += 1000;
            let now = self.now;
            let verdict = self.deliver(|http2, out| http2.receive(piece, now, out));
            self.act(verdict);
            // Asked after each read by the connection layer; it looks at
            // the session's messages half received.
            self.http2.receiving_large();
            if !self.alive {
                break;
            }
            self.check();
        }
    }

    /// Up to `count` batches go out on the tickets held, as the schedule
    /// sends them: a ticket the connection no longer accepts is dropped.
    /// `choice` picks the batch, or (bit 7) a request to send again.
    fn submit(&mut self, count: u8, choice: u8) {
        self.connect_again();
        let mut used = 0;
        while used < count && self.alive {
            let Some(ticket) = self.tickets.pop_front() else { break };
            if !self.http2.accepts(ticket) {
                continue;
            }
            used += 1;
            let now = self.now;
            let retry = if choice & 0x80 != 0 { self.retries.pop_front() } else { None };
            let verdict = match retry {
                Some(retry) => {
                    self.sent += 1;
                    self.streams.open(1);
                    self.deliver(|http2, out| http2.retry(retry, now, out))
                }
                None => {
                    let batch = self.batches[usize::from(choice) % REQUESTS.len()].clone();
                    self.sent += batch.wire.len() as u64;
                    self.streams.open(batch.wire.len());
                    self.deliver(|http2, out| http2.start(batch, &[], now, out))
                }
            };
            let (slots, busy, _) = self.http2.slots_busy_generation();
            assert!(busy <= slots, "{busy} batches in flight on {slots} slots");
            self.act(verdict);
        }
    }

    /// Calls the exchange with a delivery, then takes in what it handed
    /// over.
    fn deliver(
        &mut self,
        call: impl FnOnce(&mut Http2, &mut Delivery<Http2Wire>) -> Verdict,
    ) -> Verdict {
        let inbox = &mut self.inbox;
        let mut out = Delivery::new(
            &mut self.recorder,
            &mut inbox.responses,
            &mut inbox.tickets,
            &mut inbox.retries,
            CONN,
        );
        let verdict = call(&mut self.http2, &mut out);
        let (_, _, generation) = self.http2.slots_busy_generation();
        for ticket in self.inbox.tickets.drain(..) {
            assert_eq!(ticket.conn, CONN, "a ticket for another connection");
            assert_eq!(ticket.serial, generation, "a ticket for another socket");
            self.tickets.push_back(ticket);
        }
        for retry in self.inbox.retries.drain(..) {
            assert!(retry.index < retry.batch.wire.len(), "a retry of request {}", retry.index);
            self.retried += 1;
            self.retries.push_back(retry);
        }
        for response in self.inbox.responses.drain(..) {
            assert!((200..=999).contains(&response.status), "captured {}", response.status);
            self.captured += 1;
        }
        self.drain_output();
        verdict
    }

    /// What the exchange wrote is checked as the socket would take it.
    fn drain_output(&mut self) {
        let unwritten = self.http2.unwritten();
        let n = unwritten.len();
        self.output.feed(unwritten);
        self.http2.wrote(n);
    }

    /// Carries out a verdict as the connection layer does.
    fn act(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Keep => {}
            Verdict::Close | Verdict::CloseAndBackOff => {
                // A clean close forgets what is in flight without counting.
                let in_flight = self.http2.in_flight();
                assert_eq!(in_flight, 0, "closed with {in_flight} requests in flight");
                self.end();
            }
            Verdict::Fail(..) => {
                self.lost += self.http2.in_flight();
                self.end();
            }
        }
    }

    /// The socket is closed: the exchange forgets what was in flight (the
    /// caller counted it).
    fn end(&mut self) {
        self.drain_output();
        assert!(self.output.at_frame_boundary(), "the client's output ends within a frame");
        self.http2.forget();
        self.alive = false;
        // What the server sent on that socket is gone with it; what it
        // sends from now on goes to the next one.
        self.unread.clear();
        let in_flight = self.http2.in_flight();
        assert_eq!(in_flight, 0, "{in_flight} requests still in flight after the close");
        assert_eq!(self.http2.oldest_in_flight(), None);
        for &ticket in &self.tickets {
            assert!(!self.http2.accepts(ticket), "a ticket of a closed socket accepted");
        }
    }

    /// What must hold between steps.
    fn check(&self) {
        let stats = self.recorder.stats();
        let responses = stats.requests + stats.warmup.requests;
        let errors: u64 = stats.error_causes.values().sum();
        let ended = responses + errors + self.retried + self.lost;
        let in_flight = self.http2.in_flight();
        assert_eq!(
            ended + in_flight,
            self.sent,
            "sent {}: {responses} responses, {errors} errors ({:?}), {} retries, {} lost, \
             {in_flight} in flight",
            self.sent,
            stats.error_causes,
            self.retried,
            self.lost,
        );
        if let Some((status, _)) = stats.outcomes.http().find(|(s, _)| !(200..=999).contains(s)) {
            panic!("a response with status {status} recorded");
        }
        if self.capture {
            assert_eq!(self.captured, responses, "responses captured and recorded");
        } else {
            assert_eq!(self.captured, 0, "responses captured without capture");
        }
        assert_eq!(in_flight > 0, self.http2.oldest_in_flight().is_some());
        self.check_tickets();
    }

    /// While the connection takes requests, each free slot has a ticket
    /// (a slot without one would never be used again).
    fn check_tickets(&self) {
        let (slots, busy, generation) = self.http2.slots_busy_generation();
        let probe = Ticket { conn: CONN, serial: generation, since: 0 };
        if !self.alive || !self.http2.accepts(probe) {
            return;
        }
        let held = self.tickets.iter().filter(|t| t.serial == generation).count();
        assert!(
            held >= slots.saturating_sub(busy),
            "{held} tickets for {slots} slots with {busy} busy"
        );
    }
}

/// A batch of `depth` requests from [`REQUESTS`], from the `first` on.
fn batch(first: usize, depth: usize) -> Outgoing<Http2Wire> {
    let (mut text, mut heads) = (Vec::new(), Vec::new());
    for k in 0..depth {
        let (head, body) = REQUESTS[(first + k) % REQUESTS.len()];
        text.extend_from_slice(head.as_bytes());
        text.resize(text.len() + body, b'b');
        heads.push(head.starts_with("HEAD"));
    }
    let context = Context { scheme: "http".into(), authority: "localhost:8080".into() };
    let wire = Http2::encode_text(&Arc::from(text), &Arc::from(heads), &context);
    Outgoing { wire: wire.expect("valid requests"), target: 0, origin: 0 }
}
