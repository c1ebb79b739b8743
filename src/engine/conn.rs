//! One connection of an engine thread: its link (when it has one), where
//! it is in its life cycle, and its protocol's side of the exchanges.

use super::link::Link;
use super::protocol::{Protocol, Ticket};

/// Where a connection is in its life cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The link is being set up (connect, a proxy's tunnel, TLS).
    Linking,
    /// The link is up: the protocol runs on it (and may still be opening:
    /// HTTP/2 until the server's SETTINGS come).
    Open,
    /// No link; waiting to be reopened (at once, or after a back-off).
    Closed,
}

pub struct Conn<P: Protocol> {
    /// Which origin of the thread's it connects to.
    pub origin: usize,
    pub link: Option<P::Link>,
    pub phase: Phase,
    pub protocol: P,
    /// When the current connect attempt started (ns), for connect timeouts.
    pub connect_started_ns: u64,
    /// Consecutive failures since the last good response; drives back-off.
    pub failures: u32,
    /// A large part of a response has arrived and the rest has not.
    pub receiving_large: bool,
    /// Batches were started on it this turn and wait for the turn's end to
    /// be written together ([`Protocol::MULTIPLEXED`]).
    pub unflushed: bool,
    /// The protocol timer in the connections' heap for it (each time is
    /// put there once, however many operations see it next).
    pub timer_armed: Option<u64>,
}

impl<P: Protocol> Conn<P> {
    pub fn new(origin: usize, protocol: P) -> Conn<P> {
        Conn {
            origin,
            link: None,
            phase: Phase::Closed,
            protocol,
            connect_started_ns: 0,
            failures: 0,
            receiving_large: false,
            unflushed: false,
            timer_armed: None,
        }
    }

    /// The connection is being set up: its link, or its protocol's opening.
    pub fn opening(&self) -> bool {
        match self.phase {
            Phase::Linking => true,
            Phase::Open => self.protocol.opening(),
            Phase::Closed => false,
        }
    }

    /// The ticket's readiness still holds.
    #[inline]
    pub fn accepts(&self, ticket: Ticket) -> bool {
        self.phase == Phase::Open && self.protocol.accepts(ticket)
    }

    /// Over TLS, with what it chose by ALPN (for the protocol's start).
    pub fn tls(&self) -> (bool, Option<Vec<u8>>) {
        match &self.link {
            Some(link) => (link.tls(), link.alpn()),
            None => (false, None),
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
