//! One connection of an engine thread: its socket (when it has one), where
//! it is in its life cycle, and the protocol exchanging requests and
//! responses on it (HTTP/1.1 or HTTP/2).

use crate::engine::http1::Http1;
use crate::engine::http2::Http2;
use crate::http::transport::Transport;
use crate::proxy::tunnel::Handshake;

/// Where a connection is in its life cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// TCP connect started; waiting for the socket to become writable.
    Connecting,
    /// TCP is up to a proxy; opening the CONNECT tunnel through it.
    Tunneling,
    /// TCP is up; TLS handshake in progress.
    Handshaking,
    /// Set up: the protocol carries requests (HTTP/2 once the server's
    /// SETTINGS came).
    Open,
    /// No socket; waiting to be reopened (at once, or after a back-off).
    Closed,
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

/// When one request of a batch was meant to go and when it went (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exchange {
    /// The plan's intended send time of this request; the send time in
    /// the closed loop.
    pub intended: u64,
    /// The intended time of the batch's first request (`-B` counts a
    /// batch's latency from it).
    pub batch_intended: u64,
    /// When the batch's first byte was written.
    pub sent: u64,
    /// The batch's target ([`crate::engine::Batch::target`]).
    pub target: u32,
}

/// The protocol of a connection. HTTP/1.1's exchange stays inline, on the
/// hot path of every request; HTTP/2's is boxed (one more load per event
/// does not matter against a whole session's work).
#[allow(clippy::large_enum_variant)]
pub enum Protocol {
    Http1(Http1),
    Http2(Box<Http2>),
}

pub struct Conn {
    /// Which origin of the thread's it connects to.
    pub origin: usize,
    pub stream: Option<Transport>,
    pub phase: Phase,
    pub protocol: Protocol,
    /// When the current connect attempt started (ns), for connect timeouts.
    pub connect_started_ns: u64,
    /// Consecutive failures since the last good response; drives back-off.
    pub failures: u32,
    /// A large part of a response has arrived and the rest has not.
    pub receiving_large: bool,
    /// The CONNECT exchange, while [`Phase::Tunneling`].
    pub tunnel: Option<Box<Handshake>>,
}

impl Conn {
    pub fn new(origin: usize, protocol: Protocol) -> Conn {
        Conn {
            origin,
            stream: None,
            phase: Phase::Closed,
            protocol,
            connect_started_ns: 0,
            failures: 0,
            receiving_large: false,
            tunnel: None,
        }
    }

    /// Some request is (at least partly) sent and not answered.
    pub fn in_flight(&self) -> bool {
        match &self.protocol {
            Protocol::Http1(http1) => http1.in_flight(),
            Protocol::Http2(http2) => http2.in_flight(),
        }
    }

    /// How many requests are (at least partly) sent and not answered.
    pub fn requests_in_flight(&self) -> u64 {
        match &self.protocol {
            Protocol::Http1(http1) => http1.requests_in_flight(),
            Protocol::Http2(http2) => http2.requests_in_flight(),
        }
    }

    /// The socket is being set up (TCP connect, a proxy's tunnel, TLS
    /// handshake, or the HTTP/2 greeting).
    pub fn opening(&self) -> bool {
        match self.phase {
            Phase::Connecting | Phase::Tunneling | Phase::Handshaking => true,
            Phase::Open => matches!(&self.protocol, Protocol::Http2(http2) if !http2.greeted()),
            Phase::Closed => false,
        }
    }

    /// The ticket's readiness still holds.
    #[inline]
    pub fn accepts(&self, ticket: Ticket) -> bool {
        self.phase == Phase::Open
            && match &self.protocol {
                Protocol::Http1(http1) => http1.accepts(ticket),
                Protocol::Http2(http2) => http2.accepts(ticket),
            }
    }
}

/// Delay before reconnecting after `failures` consecutive failures: none
/// for the first (servers close idle keep-alive connections all the time),
/// then 10 ms doubling up to 1 s, so a dead server sees at most about one
/// SYN per connection per second instead of a storm (wg/wrk#340).
pub fn backoff_ns(failures: u32) -> u64 {
    match failures {
        0 | 1 => 0,
        n => (10_000_000u64 << (n - 2).min(7)).min(1_000_000_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        assert_eq!(backoff_ns(1), 0);
        assert_eq!(backoff_ns(2), 10_000_000);
        assert_eq!(backoff_ns(3), 20_000_000);
        assert_eq!(backoff_ns(9), 1_000_000_000);
        assert_eq!(backoff_ns(40), 1_000_000_000);
    }
}
