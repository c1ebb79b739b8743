//! The seam between the connection layer and a protocol: the operations
//! every protocol implements (HTTP/1.1 in [`super::http1`], HTTP/2 in
//! [`super::http2`], HTTP/3 in [`super::http3`]), with the same
//! signatures, so that the connection layer ([`super::connections`])
//! drives any of them without asking which it is. The protocol is a type parameter of the connections and the
//! worker: one dispatch when the run starts, static calls on the hot path.
//!
//! A protocol turns request batches into bytes to write and the bytes it
//! reads into completed responses, stamped with the arrival of the read
//! that completed them. It hands back, through a [`Delivery`], the
//! responses to the recorder (and to the script), the slots that became
//! ready for a batch (tickets for the schedule) and the requests to send
//! again elsewhere; it tells what to do with the connection with a
//! [`Verdict`]. It never decides when to send.
//!
//! Under the protocol is its link ([`Protocol::Link`]): a byte stream
//! for HTTP/1.1 and HTTP/2 (TCP or a Unix socket, plain or TLS, possibly
//! through a proxy's CONNECT tunnel, [`super::link::StreamLink`]), a
//! datagram link for HTTP/3, whose QUIC owns its TLS
//! ([`super::datagram::DatagramLink`]); its timers
//! ([`Protocol::next_timer`]) join the worker's deadline.

use std::borrow::Cow;
use std::collections::VecDeque;

use crate::http::response::Captured;
use crate::protocol::Protocol as Choice;
use crate::request::Request;
use crate::stats::{ErrorKind, Outcome};

use super::origin::Origin;
use super::recorder::{Exchange, Recorder};

/// One protocol's side of a connection.
pub trait Protocol: Sized + Send + 'static {
    /// A request batch as this protocol writes it, encoded once per batch.
    type Wire: Clone + Send + Sync + 'static;
    /// What all the connections of a thread have in common.
    type Setup: Clone + Send + 'static;
    /// The link the protocol runs over.
    type Link: super::link::Link;

    /// The protocol the command line chose.
    const CHOICE: Choice;
    /// The protocol arms timers of its own ([`Protocol::next_timer`]).
    const TIMERS: bool = false;
    /// Many batches share a connection at once (streams): what the batches
    /// started in one turn of the worker's loop leave in one write, at the
    /// end of the turn, instead of a write each.
    const MULTIPLEXED: bool = false;

    /// A connection's side, idle until [`Protocol::connected`].
    fn new(setup: &Self::Setup) -> Self;

    /// `requests` (neutral) as this protocol writes them; `context` says
    /// what a request that names no authority goes to. None: the protocol
    /// cannot send them (the error says why).
    fn encode(requests: &[Request], context: &Context) -> Result<Self::Wire, String>;

    /// A script's batch, HTTP/1.1 text whose requests are HEAD as `heads`
    /// says, as this protocol writes it.
    fn encode_text(
        text: &std::sync::Arc<[u8]>,
        heads: &std::sync::Arc<[bool]>,
        context: &Context,
    ) -> Result<Self::Wire, String>;

    /// How many requests (and responses) a batch holds.
    fn depth(wire: &Self::Wire) -> usize;

    /// The link is up: the protocol starts on it (nothing in flight).
    fn connected(&mut self, now: u64, link: &Opened<'_>, out: &mut Delivery<Self::Wire>)
        -> Verdict;

    /// The protocol's own opening is not done yet (HTTP/2: the server's
    /// SETTINGS have not come).
    fn opening(&self) -> bool;

    /// The link is gone: whatever was in flight is forgotten (see
    /// [`Protocol::lose_in_flight`] for counting it first).
    fn forget(&mut self);

    /// The link failed: the requests in flight are lost, each recorded as
    /// lost for its target; returns how many errors that is (HTTP/1.1
    /// counts one for a batch, as wrk does; HTTP/2 one per stream).
    fn lose_in_flight(&mut self, recorder: &mut Recorder) -> u64;

    /// The ticket's readiness still holds.
    fn accepts(&self, ticket: Ticket) -> bool;

    /// Starts `batch` on a ready slot, meant for `intended` (empty in the
    /// closed loop, where a request is intended when it is sent), at
    /// `sent`.
    fn start(
        &mut self,
        batch: Outgoing<Self::Wire>,
        intended: &[u64],
        sent: u64,
        out: &mut Delivery<Self::Wire>,
    ) -> Verdict;

    /// Sends again, on a ready slot, a request another connection left
    /// unprocessed.
    fn retry(
        &mut self,
        retry: Retry<Self::Wire>,
        now: u64,
        out: &mut Delivery<Self::Wire>,
    ) -> Verdict;

    /// Bytes read from the link, which arrived at `arrived`.
    fn receive(&mut self, data: &[u8], arrived: u64, out: &mut Delivery<Self::Wire>) -> Verdict;

    /// The bytes (or the next datagram) to write, made ready when asked
    /// (QUIC packs into one datagram what the turn queued).
    fn unwritten(&mut self) -> &[u8];

    /// The connection is closing: the protocol records its last figures
    /// (QUIC's) and says what goes out before the link goes (QUIC's
    /// CONNECTION_CLOSE, without which the server keeps the connection
    /// until its idle timeout; a byte stream's close is the kernel's FIN,
    /// so nothing by default).
    fn last_words(&mut self, _recorder: &mut Recorder) -> Option<&[u8]> {
        None
    }

    /// `n` of them were written.
    fn wrote(&mut self, n: usize);

    /// Everything written reached the socket (TLS records included).
    fn flushed(&mut self);

    /// The peer closed the connection at `now`.
    fn closed_by_peer(&mut self, now: u64, out: &mut Delivery<Self::Wire>) -> Verdict;

    /// Requests that have waited longer than `timeout` at `now` are given
    /// up, each counted as a timeout.
    fn expire(&mut self, now: u64, timeout: u64, out: &mut Delivery<Self::Wire>) -> Verdict;

    /// When the protocol next needs [`Protocol::on_timer`] (only with
    /// [`Protocol::TIMERS`]).
    fn next_timer(&self) -> Option<u64> {
        None
    }

    /// Its timer is due at `now`.
    fn on_timer(&mut self, _now: u64, _out: &mut Delivery<Self::Wire>) -> Verdict {
        Verdict::Keep
    }

    /// Requests sent (at least in part) and not answered.
    fn in_flight(&self) -> u64;

    /// The intended time of the oldest request in flight.
    fn oldest_in_flight(&self) -> Option<u64>;

    /// A large part of a response has arrived and the rest has not: the
    /// thread reads promptly (flow control may hold the rest back).
    fn receiving_large(&self) -> bool;
}

/// A link that is up, as the protocol starting on it sees it.
#[derive(Clone, Copy)]
pub struct Opened<'a> {
    /// Over TLS, which chose `alpn`.
    pub tls: bool,
    pub alpn: Option<&'a [u8]>,
    /// Where the link goes: a protocol that runs its own TLS (QUIC) takes
    /// its TLS client and server name from it.
    pub origin: &'a Origin,
}

/// For tests and fuzz targets: a plain link to `origin`.
#[cfg(any(test, feature = "fuzzing"))]
impl<'a> Opened<'a> {
    pub fn plain(origin: &'a Origin) -> Opened<'a> {
        Opened { tls: false, alpn: None, origin }
    }
}

/// What a request that names no authority goes to: its scheme and
/// authority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// `http` or `https`.
    pub scheme: String,
    /// `host[:port]`, as a `Host` header gives it.
    pub authority: String,
}

/// A batch as a protocol writes it, with what the recorder and the
/// connection layer need of it.
#[derive(Clone, Debug)]
pub struct Outgoing<W> {
    pub wire: W,
    /// Which target of a targets file it is (0 otherwise).
    pub target: u32,
    /// Which origin it goes to.
    pub origin: u32,
}

/// One readiness of a connection to carry a request batch: handed to the
/// schedule, and still good when its turn comes only if the connection did
/// not close (or, for HTTP/1.1, carry another batch) meanwhile. `since` is
/// when it became ready (its response arrived, or its set-up completed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub conn: usize,
    pub serial: u32,
    pub since: u64,
}

/// A complete response the script wants to see.
pub struct CapturedResponse {
    pub status: u16,
    pub captured: Captured,
}

/// A request a server did not process (HTTP/2: above the last stream id
/// of its GOAWAY), to go again on another connection: its latency still
/// counts from its intended time.
#[derive(Clone, Debug)]
pub struct Retry<W> {
    pub batch: Outgoing<W>,
    /// Which request of the batch.
    pub index: usize,
    pub intended: u64,
    pub batch_intended: u64,
    /// The times servers refused it so far.
    pub tries: u32,
}

/// What to do with the connection after a protocol's operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// Close it and open a new one at once (it ended cleanly).
    Close,
    /// Close it, and open a new one after the back-off: the server turned
    /// it away without processing a request (no error of a request's).
    CloseAndBackOff,
    /// Count this error, close it, and reopen it after the back-off.
    Fail(ErrorKind, Cow<'static, str>),
}

impl Verdict {
    pub fn fail(kind: ErrorKind, cause: impl Into<Cow<'static, str>>) -> Verdict {
        Verdict::Fail(kind, cause.into())
    }
}

/// Where a protocol delivers what happened on connection `conn`.
pub struct Delivery<'a, W> {
    pub recorder: &'a mut Recorder,
    responses: &'a mut Vec<CapturedResponse>,
    ready: &'a mut Vec<Ticket>,
    retries: &'a mut VecDeque<Retry<W>>,
    conn: usize,
    /// A batch completed: the connection's run of failures is over.
    pub succeeded: bool,
}

impl<'a, W> Delivery<'a, W> {
    pub fn new(
        recorder: &'a mut Recorder,
        responses: &'a mut Vec<CapturedResponse>,
        ready: &'a mut Vec<Ticket>,
        retries: &'a mut VecDeque<Retry<W>>,
        conn: usize,
    ) -> Delivery<'a, W> {
        Delivery { recorder, responses, ready, retries, conn, succeeded: false }
    }

    /// A response of `exchange` arrived at `arrived` with `outcome`;
    /// `last_of_batch` when it is its batch's last.
    #[inline]
    pub fn response(
        &mut self,
        exchange: Exchange,
        arrived: u64,
        outcome: Outcome,
        last_of_batch: bool,
        captured: Option<Captured>,
    ) {
        self.recorder.response(exchange, arrived, outcome, last_of_batch);
        if let Some(captured) = captured {
            // A gRPC call's HTTP status: a call with a status is an HTTP 200.
            let status = match outcome {
                Outcome::Http(status) => status,
                Outcome::Grpc(_) => 200,
            };
            self.responses.push(CapturedResponse { status, captured });
        }
    }

    /// The first byte of the response to a request intended at `intended`
    /// and sent at `sent` arrived at `arrived`.
    #[inline]
    pub fn first_byte(&mut self, intended: u64, sent: u64, arrived: u64) {
        self.recorder.first_byte(intended, sent, arrived);
    }

    /// The connection can carry a batch from `since` on (its readiness
    /// number `serial`, see [`Ticket`]).
    #[inline]
    pub fn ready(&mut self, serial: u32, since: u64) {
        self.ready.push(Ticket { conn: self.conn, serial, since });
    }

    /// A request was lost on this connection.
    pub fn error(&mut self, kind: ErrorKind, cause: &str) {
        self.recorder.error(kind, cause);
    }

    /// A request to send again on another connection.
    pub fn retry(&mut self, retry: Retry<W>) {
        self.retries.push_back(retry);
    }

    /// A batch completed.
    #[inline]
    pub fn succeeded(&mut self) {
        self.succeeded = true;
    }
}
