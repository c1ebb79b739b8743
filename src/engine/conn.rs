//! One connection slot of an engine thread: its socket (when it has one),
//! where it is in its life cycle, and the request batch in flight on it.

use std::sync::Arc;

use crate::engine::source::Batch;
use crate::http::response::ResponseParser;
use crate::http::transport::Transport;

/// Where a connection slot is in its life cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// TCP connect started; waiting for the socket to become writable.
    Connecting,
    /// TCP is up; TLS handshake in progress.
    Handshaking,
    /// Ready for a request (handed to the schedule).
    Idle,
    /// Request bytes (or TLS records) still to be written.
    Writing,
    /// Request written, responses outstanding.
    Reading,
    /// No socket; waiting to be reopened (at once, or after a back-off).
    Closed,
}

/// One readiness of one connection: handed to the schedule when the
/// connection can carry a request, and still good when its turn comes only
/// if the connection did not close (and become ready again) meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub conn: usize,
    pub serial: u32,
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
}

pub struct Conn {
    pub stream: Option<Transport>,
    /// The request batch in flight (kept for partial writes).
    pub batch: Batch,
    /// The intended send time of each request of the batch (ns).
    pub intended: Vec<u64>,
    /// When the batch's first byte was written (ns).
    pub sent_ns: u64,
    pub phase: Phase,
    pub parser: ResponseParser,
    /// Bytes of the current request batch already written.
    pub written: usize,
    /// When the current connect attempt started (ns), for connect timeouts.
    pub connect_started_ns: u64,
    /// Responses still expected for the batch in flight.
    pub pending: usize,
    /// Consecutive failures since the last good response; drives back-off.
    pub failures: u32,
    /// Bytes read since the last complete response.
    pub received: usize,
    /// A large part of a response has arrived and the rest has not.
    pub receiving_large: bool,
    /// How many times the connection became ready (see [`Ticket`]).
    pub ready_serial: u32,
}

impl Conn {
    pub fn new(capture: bool) -> Conn {
        Conn {
            stream: None,
            batch: Batch { bytes: Arc::from(&[][..]), heads: Arc::from([false]) },
            intended: Vec::new(),
            sent_ns: 0,
            phase: Phase::Closed,
            parser: ResponseParser::new(capture),
            written: 0,
            connect_started_ns: 0,
            pending: 0,
            failures: 0,
            received: 0,
            receiving_large: false,
            ready_serial: 0,
        }
    }

    /// The exchange of the batch's response `index`.
    pub fn exchange(&self, index: usize) -> Exchange {
        Exchange {
            intended: self.intended[index],
            batch_intended: self.intended[0],
            sent: self.sent_ns,
        }
    }

    /// A request batch has been (at least partly) sent and not answered.
    pub fn in_flight(&self) -> bool {
        matches!(self.phase, Phase::Writing | Phase::Reading)
    }

    /// The socket is being set up (TCP connect or TLS handshake).
    pub fn opening(&self) -> bool {
        matches!(self.phase, Phase::Connecting | Phase::Handshaking)
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
