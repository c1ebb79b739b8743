//! `pace serve --http3`: HTTP/3 over QUIC on UDP, on the port number of
//! the TCP listener. Each server thread has a second thread beside it with
//! its own UDP socket (the sockets share the port through `SO_REUSEPORT`,
//! so the kernel keeps each client's datagrams on one of them) and its own
//! [`crate::http3::server::Server`], in an epoll loop whose timeout is the
//! earlier of QUIC's next timer and the next response due.
//!
//! The endpoints, the added latency, the stall and `--capacity` are the
//! other protocols': each request gets its response's due time when it is
//! complete, and the response leaves when due, on its stream, as over
//! HTTP/2 (whose conversions from request to response this reuses).
//! As over HTTP/2, `/chunked` sends its lines as plain DATA (no trailer)
//! and no `100 Continue` is sent. Unlike it, `/close` and `/eof` are
//! answered like `/`, the connection going on, and gRPC calls are not
//! served (they get the plain answers).
//! Requests and connections count in the same shared counters, in a slot
//! of their own per thread.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::{ConnectionHandle, StreamId};

use super::endpoint::Endpoint;
use super::http2;
use super::request::MAX_ECHO_BODY;
use super::response::{self, Response, NEVER};
use super::{Shared, ThreadCounters};
use crate::http2::session;
use crate::http3::server::{Body, Event, Limits, Request, Server};
use crate::sys::{now_ns, set_minimal_timer_slack, Interest, Poller};

const SOCKET: u64 = 0;
const WAKER: u64 = 1;

/// The largest UDP datagram.
const DATAGRAM: usize = 65_535;

const LIMITS: Limits = Limits {
    // Per thread.
    max_connections: 1024,
    // HTTP/2's limit (nginx's default).
    max_streams: 128,
    // HTTP/1.1's bound on a request head.
    max_field_section: super::request::MAX_HEAD,
    idle_timeout: Duration::from_secs(30),
    kept_body,
};

/// Only `/echo` keeps a body, up to HTTP/1.1's bound (one byte more is a
/// 413 anyway); of the others only the length is counted.
fn kept_body(path: &[u8]) -> usize {
    match Endpoint::route(&String::from_utf8_lossy(path)) {
        Endpoint::Echo => MAX_ECHO_BODY,
        _ => 0,
    }
}

/// A response waiting for its due time.
struct Pending {
    connection: ConnectionHandle,
    stream: StreamId,
    response: Response,
}

pub(super) struct Http3Worker {
    /// The slot of [`Shared`]'s counters this thread writes.
    counters: usize,
    poller: Poller,
    socket: UdpSocket,
    server: Server,
    shared: Arc<Shared>,
    pending: Vec<Pending>,
}

impl Http3Worker {
    pub(super) fn new(
        counters: usize,
        socket: UdpSocket,
        waker: &OwnedFd,
        shared: Arc<Shared>,
    ) -> io::Result<Http3Worker> {
        let tls = shared.tls.as_ref().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "serve: HTTP/3 needs TLS")
        })?;
        let server = Server::new((**tls).clone(), LIMITS).map_err(io::Error::other)?;
        socket.set_nonblocking(true)?;
        let poller = Poller::new(2)?;
        poller.add(&socket, SOCKET, Interest::Read)?;
        // Only readable when stopping; the flag is what says so.
        poller.add(waker, WAKER, Interest::Read)?;
        Ok(Http3Worker { counters, poller, socket, server, shared, pending: Vec::new() })
    }

    /// The thread's body; a failing poller or socket ends the thread with
    /// a message.
    pub(super) fn run_reporting_errors(mut self) {
        if let Err(e) = self.run() {
            eprintln!("pace serve: HTTP/3 thread {} stopped: {e}", self.counters);
        }
    }

    fn run(&mut self) -> io::Result<()> {
        set_minimal_timer_slack();
        let mut buf = vec![0; DATAGRAM];
        while !self.shared.stopping.load(Ordering::Acquire) {
            let timeout = self.next_timeout();
            self.poller.poll(timeout)?;
            self.receive(&mut buf)?;
            let now = Instant::now();
            if self.server.timeout().is_some_and(|at| at <= now) {
                self.server.on_timeout(now);
            }
            // Answering may bring what quinn-proto held back (a request
            // completed meanwhile): handled in the same round.
            self.handle_events();
            while self.answer_due() {
                self.handle_events();
            }
            self.transmit();
        }
        // The clients hear that the server is gone rather than time out.
        self.server.close_all(Instant::now());
        self.transmit();
        Ok(())
    }

    /// The earlier of QUIC's next timer and the next response due.
    fn next_timeout(&mut self) -> Option<Duration> {
        let quic = self.server.timeout().map(|at| at.saturating_duration_since(Instant::now()));
        let now = now_ns();
        let due = self
            .pending
            .iter()
            .map(|p| p.response.due_ns)
            .filter(|&due| due != NEVER)
            .min()
            .map(|due| Duration::from_nanos(due.saturating_sub(now)));
        quic.into_iter().chain(due).min()
    }

    /// Reads every datagram waiting (the poller is edge-triggered).
    fn receive(&mut self, buf: &mut [u8]) -> io::Result<()> {
        loop {
            match self.socket.recv_from(buf) {
                Ok((n, from)) => self.server.receive(Instant::now(), from, &buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                // An ICMP error of an earlier send, a signal: read on.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionRefused
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Requests get their response's due time; answers nobody waits for
    /// any more are dropped.
    fn handle_events(&mut self) {
        let shared = &*self.shared;
        let counters: &ThreadCounters = &shared.counters[self.counters];
        let mut requests = 0;
        while let Some(event) = self.server.poll() {
            match event {
                Event::Accepted => counters.connection_accepted(),
                Event::Request(request) => {
                    let Request { connection, stream, body_len, .. } = request;
                    let request = http2::request_of(
                        &request.method,
                        &request.path,
                        &request.fields,
                        &request.body,
                    );
                    requests += u64::from(request.endpoint != Endpoint::Stats);
                    let response = http2::answer(request, body_len, now_ns(), shared);
                    self.pending.push(Pending { connection, stream, response });
                }
                Event::Cancelled { connection, stream } => {
                    self.pending.retain(|p| (p.connection, p.stream) != (connection, stream))
                }
                Event::Closed { connection } => self.pending.retain(|p| p.connection != connection),
            }
        }
        counters.requests_read(requests);
    }

    /// Sends the responses due now; whether there were any.
    fn answer_due(&mut self) -> bool {
        let now = now_ns();
        let mut answered = false;
        let mut k = 0;
        while k < self.pending.len() {
            if self.pending[k].response.due_ns > now {
                k += 1;
                continue;
            }
            let Pending { connection, stream, response } = self.pending.swap_remove(k);
            let stats = match response.body {
                response::Body::Stats => response::stats_json(&self.shared),
                _ => Vec::new(),
            };
            let (length, body) = http2::body(&response, &self.shared, stats);
            let status = response.status.to_string();
            let length = length.map(|n| n.to_string());
            let fields = http2::response_fields(&response, &status, length.as_deref());
            let body = body.filter(|_| !response.head_only).map(h3_body);
            self.server.respond(connection, stream, &fields, body, Instant::now());
            answered = true;
        }
        answered
    }

    /// Sends what QUIC has to send; a full socket drops the rest, which
    /// QUIC takes as lost and sends again.
    fn transmit(&mut self) {
        let socket = &self.socket;
        self.server.transmit(Instant::now(), &mut |to: SocketAddr, datagram: &[u8]| loop {
            match socket.send_to(datagram, to) {
                Ok(_) => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                // Unreachable, refused: that datagram is lost, not the rest.
                Err(_) => return true,
            }
        });
    }
}

/// The HTTP/2 session's body as the HTTP/3 server writes it.
fn h3_body(body: session::Body) -> Body {
    match body {
        session::Body::Repeat { pattern, offset, len } => Body::Repeat { pattern, offset, len },
        session::Body::Bytes { bytes, start, end } => {
            Body::Bytes(bytes.get(start..end).unwrap_or_default().to_vec())
        }
        session::Body::Stream { queued, at, .. } => {
            Body::Bytes(queued.get(at..).unwrap_or_default().to_vec())
        }
    }
}
