//! What an engine thread sends: requests built from the command line, or
//! what the thread's Lua state says (`request()`, `response()`, `delay()`,
//! `thread:stop()`, `thread.addr`). The worker asks the source and never
//! looks at which one it is.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::http::response::Captured;
use crate::script::{Interrupter, ScriptError, ThreadScript};

/// One write's worth of requests: their bytes, and for each request in
/// them whether it is a HEAD (its response has no body). More than one
/// request is pipelining: the write waits for that many responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub bytes: Arc<[u8]>,
    pub heads: Arc<[bool]>,
}

impl Batch {
    /// How many requests (and responses) the batch holds.
    pub fn depth(&self) -> usize {
        self.heads.len()
    }
}

/// The order in which a source of fixed requests sends its batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// In turn, from the first one given.
    Sequential,
    /// Each batch drawn at random (uniformly, with replacement) by a
    /// generator started from this seed.
    Random { seed: u64 },
}

pub enum RequestSource {
    /// Requests built from the command line, sent in turn (`random`
    /// absent) or drawn at random.
    Fixed { batches: Arc<[Batch]>, next: usize, random: Option<SplitMix64>, addr: SocketAddr },
    /// A Lua state per thread; every batch has the depth and HEAD flags of
    /// the script's first request (as in wrk).
    Script { script: Box<ThreadScript>, heads: Arc<[bool]> },
}

impl RequestSource {
    /// Requests built from the command line (at least one batch, all of
    /// the same depth), sent in turn from the `first`, or in random order.
    pub fn fixed(
        batches: Arc<[Batch]>,
        first: usize,
        addr: SocketAddr,
        order: Order,
    ) -> RequestSource {
        debug_assert!(!batches.is_empty());
        let random = match order {
            Order::Sequential => None,
            Order::Random { seed } => Some(SplitMix64::new(seed)),
        };
        RequestSource::Fixed { next: first % batches.len(), batches, random, addr }
    }

    /// Requests per batch: how many intended times of the plan one batch
    /// takes.
    pub fn depth(&self) -> usize {
        match self {
            RequestSource::Fixed { batches, .. } => batches[0].depth(),
            RequestSource::Script { heads, .. } => heads.len(),
        }
    }

    /// The next request batch; None when the script's `request()` gave
    /// none (nil).
    #[inline]
    pub fn next_batch(&mut self) -> Result<Option<Batch>, ScriptError> {
        match self {
            RequestSource::Fixed { batches, next, random: None, .. } => {
                let batch = batches[*next].clone();
                *next = (*next + 1) % batches.len();
                Ok(Some(batch))
            }
            RequestSource::Fixed { batches, random: Some(random), .. } => {
                Ok(Some(batches[random.below(batches.len())].clone()))
            }
            RequestSource::Script { script, heads } => {
                let bytes = script.request()?;
                Ok(bytes.map(|bytes| Batch { bytes, heads: heads.clone() }))
            }
        }
    }

    /// Responses must be captured (headers and body) for the script.
    pub fn wants_responses(&self) -> bool {
        matches!(self, RequestSource::Script { script, .. } if script.has_response())
    }

    /// A complete response, for the script's `response()`.
    pub fn on_response(&mut self, status: u16, captured: &Captured) -> Result<(), ScriptError> {
        match self {
            RequestSource::Fixed { .. } => Ok(()),
            RequestSource::Script { script, .. } => {
                script.response(status, &captured.headers, &captured.body)
            }
        }
    }

    /// How long a connection waits before its next request (the script's
    /// `delay()`; zero without one).
    #[inline]
    pub fn delay(&mut self) -> Result<Duration, ScriptError> {
        match self {
            RequestSource::Fixed { .. } => Ok(Duration::ZERO),
            RequestSource::Script { script, .. } => script.delay(),
        }
    }

    /// The script called `thread:stop()`: this thread sends no more.
    pub fn stopped(&self) -> bool {
        matches!(self, RequestSource::Script { script, .. } if script.stop_requested())
    }

    /// Where the next connection goes (`thread.addr` may change it).
    pub fn addr(&self) -> SocketAddr {
        match self {
            RequestSource::Fixed { addr, .. } => *addr,
            RequestSource::Script { script, .. } => script.addr(),
        }
    }

    /// Stops a Lua call that does not return, from another thread.
    pub fn interrupter(&self) -> Option<Interrupter> {
        match self {
            RequestSource::Fixed { .. } => None,
            RequestSource::Script { script, .. } => Some(script.interrupter()),
        }
    }

    /// The thread's Lua state, handed back for `done()`.
    pub fn into_script(self) -> Option<ThreadScript> {
        match self {
            RequestSource::Fixed { .. } => None,
            RequestSource::Script { script, .. } => Some(*script),
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a small seeded generator,
/// statistically sound for choosing among requests, one add and three
/// multiply-xorshifts per number, no allocation.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0), by Lemire's multiply-shift: no division,
    /// and a bias below n / 2^64.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(text: &str) -> Batch {
        Batch { bytes: Arc::from(text.as_bytes()), heads: Arc::from([false]) }
    }

    #[test]
    fn fixed_requests_are_sent_in_turn() {
        let batches: Arc<[Batch]> = Arc::from([batch("a"), batch("b"), batch("c")]);
        let addr = "127.0.0.1:1".parse().unwrap();
        let mut source = RequestSource::fixed(batches, 4, addr, Order::Sequential);
        let sent: Vec<Arc<[u8]>> =
            (0..4).map(|_| source.next_batch().unwrap().unwrap().bytes).collect();
        assert_eq!(sent, [b"b", b"c", b"a", b"b"].map(|b| Arc::from(&b[..])));
        assert_eq!(source.depth(), 1);
        assert!(!source.stopped() && !source.wants_responses());
    }

    #[test]
    fn random_order_repeats_with_its_seed_and_reaches_every_batch() {
        let batches: Arc<[Batch]> = Arc::from([batch("a"), batch("b"), batch("c")]);
        let addr = "127.0.0.1:1".parse().unwrap();
        let draw = |seed| {
            let mut source = RequestSource::fixed(batches.clone(), 0, addr, Order::Random { seed });
            (0..300).map(|_| source.next_batch().unwrap().unwrap().bytes[0]).collect::<Vec<u8>>()
        };
        let first = draw(7);
        assert_eq!(first, draw(7));
        assert_ne!(first, draw(8));
        for letter in b"abc" {
            let count = first.iter().filter(|&&b| b == *letter).count();
            assert!((60..=140).contains(&count), "{} drawn {count} times of 300", *letter as char);
        }
    }

    #[test]
    fn splitmix64_matches_its_reference_output() {
        // The first outputs for seed 1234567 of the reference C code
        // (https://prng.di.unimi.it/splitmix64.c).
        let mut random = SplitMix64::new(1234567);
        let expected = [6457827717110365317, 3203168211198807973, 9817491932198370423];
        assert_eq!([random.next_u64(), random.next_u64(), random.next_u64()], expected);
        for n in [1, 2, 3, 1000] {
            assert!((0..100).all(|_| random.below(n) < n));
        }
    }
}
