//! The HTTP/1.1 client's exchange of one connection (`engine/http1.rs`)
//! with a server that sends anything: the engine's `Http1`, driven as the
//! connection layer drives it (batches go out on the tickets it gives,
//! what the server sent arrives in reads, batches time out, the link
//! fails and is opened again, the server closes), with what it delivers
//! recorded by a real `Recorder`.

use std::collections::VecDeque;
use std::sync::Arc;

use super::input::{cut, Input};
use crate::engine::fuzzing::{
    CapturedResponse, Context, Delivery, Http1, Http1Setup, Http1Wire, Opened, Origin, Outgoing,
    Protocol, Recorder, Retry, Ticket, Verdict,
};

const MS: u64 = 1_000_000;

/// What a response may look like: status lines and framings, kept alive
/// or not, complete responses the parser must take.
const RESPONSES: [&str; 8] = [
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n0\r\nT: 1\r\n\r\n",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nContent-Length: 1\r\n\r\nx",
    "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold",
    "HTTP/1.1 500 Oops\r\nConnection: close\r\nContent-Length: 1\r\n\r\n!",
    "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n",
];

/// The client side of HTTP/1.1 on a server's bytes. The input: byte 0 bit
/// 0: capture responses; then a program of ops, an op byte (mod 8) and its
/// choices: 0 a batch goes out on the first ticket held (1 + n mod 3
/// requests, bits 2-4 which are HEAD); 1 a valid response (n mod 8 of
/// [`RESPONSES`]) is added to what the server sends; 2 bytes at random
/// (count, then the bytes); 3 what the server sent arrives, cut at the
/// input's points; 4 batches expire (a timeout of 0, 1 or 3 ms, or
/// 1 s); 5 the server closes; 6 the link fails; 7 time passes.
///
/// What must hold, after every step: no panic; each request sent ends at
/// most once, as a response recorded or lost with its batch (one error per
/// batch, counted by the connection layer), and the requests in flight
/// are exactly those that have not ended; a clean close leaves nothing in
/// flight, and nothing is in flight after a close; a ticket names the
/// connection's current link, and one is given exactly when the
/// connection takes a batch; responses recorded have a final status, and
/// are captured when capturing.
pub fn http1_responses(data: &[u8]) {
    let mut input = Input::new(data);
    let capture = input.byte() & 1 == 1;
    let mut client = Client::new(capture);
    client.connect();
    while !input.is_empty() {
        let op = input.byte() % 8;
        client.run(op, &mut input);
    }
    client.run(3, &mut Input::new(&[0]));
    client.run(5, &mut Input::new(&[]));
}

/// The exchange, what drives it, and what it has been seen to do.
struct Client {
    http1: Http1,
    recorder: Recorder,
    responses: Vec<CapturedResponse>,
    inbox: Vec<Ticket>,
    retries: VecDeque<Retry<Http1Wire>>,
    capture: bool,
    now: u64,
    /// The connection is open (else the next op opens it again).
    alive: bool,
    /// What the server sent that the client has not read.
    unread: Vec<u8>,
    tickets: VecDeque<Ticket>,
    /// Requests handed to the exchange.
    sent: u64,
    /// Requests lost with their batch when the link failed.
    lost: u64,
    captured: u64,
}

impl Client {
    fn new(capture: bool) -> Client {
        let recorder = Recorder::measuring_from_zero();
        Client {
            http1: Http1::new(&Http1Setup { capture }),
            recorder,
            responses: Vec::new(),
            inbox: Vec::new(),
            retries: VecDeque::new(),
            capture,
            now: 1000 * MS,
            alive: false,
            unread: Vec::new(),
            tickets: VecDeque::new(),
            sent: 0,
            lost: 0,
            captured: 0,
        }
    }

    fn run(&mut self, op: u8, input: &mut Input) {
        self.now += MS;
        if !self.alive {
            self.connect();
        }
        match op {
            0 => self.submit(input.byte()),
            1 => self.unread.extend_from_slice(RESPONSES[input.below(8)].as_bytes()),
            2 => {
                let n = input.below(64);
                self.unread.extend_from_slice(input.take(n));
            }
            3 => self.read(&input.cuts()),
            4 => {
                let timeout = [0, MS, 3 * MS, 1000 * MS][input.below(4)];
                let now = self.now;
                let verdict = self.deliver(|http1, out| http1.expire(now, timeout, out));
                self.act(verdict);
            }
            5 => {
                let now = self.now;
                let verdict = self.deliver(|http1, out| http1.closed_by_peer(now, out));
                assert_ne!(verdict, Verdict::Keep, "a closed connection kept");
                self.act(verdict);
            }
            6 => self.act(Verdict::fail(crate::stats::ErrorKind::Read, "the link failed")),
            _ => self.now += 10 * MS,
        }
        self.check();
    }

    /// A new link: the exchange is ready at once.
    fn connect(&mut self) {
        self.alive = true;
        let now = self.now;
        let origin = Origin::for_tests();
        let link = Opened::plain(&origin);
        let verdict = self.deliver(|http1, out| http1.connected(now, &link, out));
        assert_eq!(verdict, Verdict::Keep);
        self.check();
    }

    /// A batch goes out on the first ticket the connection still accepts.
    fn submit(&mut self, choice: u8) {
        while let Some(ticket) = self.tickets.pop_front() {
            if !self.http1.accepts(ticket) {
                continue;
            }
            let depth = 1 + usize::from(choice) % 3;
            let text: Arc<[u8]> = (0..depth)
                .map(|k| match choice >> (2 + k) & 1 {
                    1 => "HEAD / HTTP/1.1\r\n\r\n",
                    _ => "GET / HTTP/1.1\r\n\r\n",
                })
                .collect::<String>()
                .into_bytes()
                .into();
            let heads: Arc<[bool]> = (0..depth).map(|k| choice >> (2 + k) & 1 == 1).collect();
            let context = Context { scheme: "http".into(), authority: "h".into() };
            let wire = Http1::encode_text(&text, &heads, &context).expect("text is sent as it is");
            assert_eq!(Http1::depth(&wire), depth);
            let batch = Outgoing { wire, target: 0, origin: 0 };
            self.sent += depth as u64;
            let now = self.now;
            let verdict = self.deliver(|http1, out| http1.start(batch, &[], now, out));
            assert_eq!(verdict, Verdict::Keep);
            assert!(!self.http1.accepts(ticket), "a ticket used twice");
            // The socket takes it all.
            let written = self.http1.unwritten().len();
            assert_eq!(written, text.len(), "the batch as the script wrote it");
            self.http1.wrote(written);
            self.http1.flushed();
            assert!(self.http1.unwritten().is_empty());
            return;
        }
    }

    /// The server's bytes so far arrive, cut into reads at `cuts`.
    fn read(&mut self, cuts: &[u16]) {
        let unread = std::mem::take(&mut self.unread);
        for piece in cut(&unread, cuts) {
            self.now += 1000;
            let now = self.now;
            let verdict = self.deliver(|http1, out| http1.receive(piece, now, out));
            self.act(verdict);
            let _ = self.http1.receiving_large();
            if !self.alive {
                break;
            }
            self.check();
        }
    }

    /// Calls the exchange with a delivery, then takes in what it handed
    /// over.
    fn deliver(
        &mut self,
        call: impl FnOnce(&mut Http1, &mut Delivery<Http1Wire>) -> Verdict,
    ) -> Verdict {
        let mut out = Delivery::new(
            &mut self.recorder,
            &mut self.responses,
            &mut self.inbox,
            &mut self.retries,
            0,
        );
        let verdict = call(&mut self.http1, &mut out);
        assert!(self.retries.is_empty(), "HTTP/1.1 hands no request back");
        for ticket in self.inbox.drain(..) {
            assert!(self.http1.accepts(ticket) || verdict != Verdict::Keep, "a stale ticket");
            assert!(self.http1.in_flight() == 0, "a ticket with a batch in flight");
            self.tickets.push_back(ticket);
        }
        for response in self.responses.drain(..) {
            assert!((200..=999).contains(&response.status), "captured {}", response.status);
            self.captured += 1;
        }
        verdict
    }

    /// Carries out a verdict as the connection layer does.
    fn act(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Keep => {}
            Verdict::Close | Verdict::CloseAndBackOff => {
                let in_flight = self.http1.in_flight();
                assert_eq!(in_flight, 0, "closed with {in_flight} requests in flight");
                self.end();
            }
            Verdict::Fail(..) => {
                // The whole batch is lost with the link: its unanswered
                // requests end here (one error, as wrk counts it).
                let in_flight = self.http1.in_flight();
                let errors = self.http1.lose_in_flight(&mut self.recorder);
                assert_eq!(errors, u64::from(in_flight > 0), "one error per batch");
                self.lost += in_flight;
                self.end();
            }
        }
    }

    fn end(&mut self) {
        self.http1.forget();
        self.alive = false;
        self.unread.clear();
        assert_eq!(self.http1.in_flight(), 0, "requests in flight after the close");
        assert_eq!(self.http1.oldest_in_flight(), None);
        for &ticket in &self.tickets {
            assert!(!self.http1.accepts(ticket), "a ticket of a closed link accepted");
        }
    }

    /// What must hold between steps.
    fn check(&self) {
        let stats = self.recorder.stats();
        let in_flight = self.http1.in_flight();
        assert_eq!(
            stats.requests + self.lost + in_flight,
            self.sent,
            "sent {}: {} responses, {} lost, {in_flight} in flight",
            self.sent,
            stats.requests,
            self.lost,
        );
        if let Some((status, _)) = stats.outcomes.http().find(|(s, _)| !(200..=999).contains(s)) {
            panic!("a response with status {status} recorded");
        }
        match self.capture {
            true => assert_eq!(self.captured, stats.requests, "responses captured and recorded"),
            false => assert_eq!(self.captured, 0, "responses captured without capture"),
        }
        assert_eq!(in_flight > 0, self.http1.oldest_in_flight().is_some());
        // Idle and alive: its one ticket is held.
        if self.alive && in_flight == 0 {
            assert!(self.tickets.iter().any(|&t| self.http1.accepts(t)), "an idle slot unused");
        }
    }
}
