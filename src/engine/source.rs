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

pub enum RequestSource {
    /// Requests built from the command line, sent in turn.
    Fixed { batches: Arc<[Batch]>, next: usize, addr: SocketAddr },
    /// A Lua state per thread; every batch has the depth and HEAD flags of
    /// the script's first request (as in wrk).
    Script { script: Box<ThreadScript>, heads: Arc<[bool]> },
}

impl RequestSource {
    /// Requests built from the command line (at least one batch, all of
    /// the same depth), sent in turn from the `first`.
    pub fn fixed(batches: Arc<[Batch]>, first: usize, addr: SocketAddr) -> RequestSource {
        debug_assert!(!batches.is_empty());
        RequestSource::Fixed { next: first % batches.len(), batches, addr }
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
            RequestSource::Fixed { batches, next, .. } => {
                let batch = batches[*next].clone();
                *next = (*next + 1) % batches.len();
                Ok(Some(batch))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(text: &str) -> Batch {
        Batch { bytes: Arc::from(text.as_bytes()), heads: Arc::from([false]) }
    }

    #[test]
    fn fixed_requests_are_sent_in_turn() {
        let batches: Arc<[Batch]> = Arc::from([batch("a"), batch("b"), batch("c")]);
        let mut source = RequestSource::fixed(batches, 4, "127.0.0.1:1".parse().unwrap());
        let sent: Vec<Arc<[u8]>> =
            (0..4).map(|_| source.next_batch().unwrap().unwrap().bytes).collect();
        assert_eq!(sent, [b"b", b"c", b"a", b"b"].map(|b| Arc::from(&b[..])));
        assert_eq!(source.depth(), 1);
        assert!(!source.stopped() && !source.wants_responses());
    }
}
