//! What an engine thread sends: requests built from the command line, or
//! what the thread's Lua state says (`request()`, `response()`, `delay()`,
//! `thread:stop()`, `thread.addr`). The worker asks the source and never
//! looks at which one it is.

use std::sync::Arc;
use std::time::Duration;

use crate::endpoint::Endpoint;
use crate::engine::routed::Routed;
use crate::http::request::RequestError;
use crate::http::response::Captured;
use crate::http2::request::{convert, Request2};
use crate::plan::random::Draws;
use crate::proxy::absolute::AbsoluteForm;
use crate::script::{Interrupter, ScriptError, ThreadScript};

/// One write's worth of requests: their bytes, and for each request in
/// them whether it is a HEAD (its response has no body). More than one
/// request is pipelining: the write waits for that many responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub bytes: Arc<[u8]>,
    pub heads: Arc<[bool]>,
    /// With `--http2`: the requests as HTTP/2 sends them (converted once
    /// per batch, [`crate::http2::request`]).
    pub http2: Option<Arc<[Request2]>>,
    /// Which target of a targets file the batch is (for the per-target
    /// breakdown; 0 otherwise).
    pub target: u32,
    /// Which origin it goes to ([`crate::requests::Origins`]; 0 but with a
    /// targets file naming several).
    pub origin: u32,
}

impl Batch {
    /// A batch of HTTP/1.1 requests.
    pub fn new(bytes: Arc<[u8]>, heads: Arc<[bool]>) -> Batch {
        Batch { bytes, heads, http2: None, target: 0, origin: 0 }
    }

    /// The batch as target `target` of a targets file, to origin `origin`.
    pub fn routed(mut self, target: usize, origin: usize) -> Batch {
        (self.target, self.origin) = (target as u32, origin as u32);
        self
    }

    /// The batch with its HTTP/2 form, for a target of `scheme` and
    /// `authority`.
    pub fn for_http2(mut self, scheme: &str, authority: &str) -> Result<Batch, RequestError> {
        self.http2 = Some(convert(&self.bytes, scheme, authority)?.into());
        Ok(self)
    }

    /// How many requests (and responses) the batch holds.
    pub fn depth(&self) -> usize {
        self.heads.len()
    }
}

/// The order in which a source of fixed requests sends its batches.
#[derive(Clone, Copy, Debug)]
pub enum Order {
    /// In turn, from the first one given.
    Sequential,
    /// Each batch drawn at random (uniformly, with replacement) from this
    /// stream of random numbers.
    Random(Draws),
}

pub enum RequestSource {
    /// Requests built from the command line, sent in turn (`random`
    /// absent) or drawn at random.
    Fixed { batches: Arc<[Batch]>, next: usize, random: Option<Draws>, endpoint: Endpoint },
    /// Requests of a targets file naming several origins, each for a
    /// connection to its own ([`Routed`]).
    Routed(Box<Routed>),
    /// A Lua state per thread; every batch has the depth and HEAD flags of
    /// the script's first request (as in wrk). With `--http2`, `http2`
    /// turns each request into its HTTP/2 form; through a proxy (plain
    /// HTTP), `absolute` into the form a proxy takes.
    Script {
        script: Box<ThreadScript>,
        heads: Arc<[bool]>,
        http2: Option<Http2Form>,
        absolute: Option<AbsoluteForm>,
    },
}

/// How a thread's script requests get their HTTP/2 form: converted when
/// the request changes, reused while `request()` returns the same one (a
/// script without `request()`, or one returning a request it made once).
pub struct Http2Form {
    scheme: String,
    authority: String,
    last: Option<Batch>,
}

impl Http2Form {
    /// For a target of `scheme` (`http`, `https`) and `authority` (the
    /// `Host` a request without one is sent to).
    pub fn new(scheme: &str, authority: &str) -> Http2Form {
        Http2Form { scheme: scheme.to_string(), authority: authority.to_string(), last: None }
    }

    fn of(&mut self, batch: Batch) -> Result<Batch, ScriptError> {
        if let Some(last) = self.last.as_ref().filter(|last| Arc::ptr_eq(&last.bytes, &batch.bytes))
        {
            return Ok(last.clone());
        }
        let batch = batch.for_http2(&self.scheme, &self.authority).map_err(|e| {
            ScriptError(format!(
                "the script's request is not valid HTTP, so not sent over HTTP/2: {e}"
            ))
        })?;
        self.last = Some(batch.clone());
        Ok(batch)
    }
}

impl RequestSource {
    /// Requests built from the command line (at least one batch, all of
    /// the same depth), sent in turn from the `first`, or in random order.
    pub fn fixed(
        batches: Arc<[Batch]>,
        first: usize,
        endpoint: Endpoint,
        order: Order,
    ) -> RequestSource {
        debug_assert!(!batches.is_empty());
        let random = match order {
            Order::Sequential => None,
            Order::Random(draws) => Some(draws),
        };
        RequestSource::Fixed { next: first % batches.len(), batches, random, endpoint }
    }

    /// Requests per batch: how many intended times of the plan one batch
    /// takes.
    pub fn depth(&self) -> usize {
        match self {
            RequestSource::Fixed { batches, .. } => batches[0].depth(),
            RequestSource::Routed(routed) => routed.depth(),
            RequestSource::Script { heads, .. } => heads.len(),
        }
    }

    /// The origin of the request next in the run's order (the one a plan
    /// sends next): 0 but with several origins.
    #[inline]
    pub fn next_origin(&mut self) -> usize {
        match self {
            RequestSource::Routed(routed) => routed.next_origin(),
            _ => 0,
        }
    }

    /// The request [`RequestSource::next_origin`] named has left the plan
    /// (sent, or parked to wait for a connection to its origin).
    #[inline]
    pub fn move_on(&mut self) {
        if let RequestSource::Routed(routed) = self {
            routed.move_on();
        }
    }

    /// How many origins the requests go to.
    pub fn origins(&self) -> usize {
        match self {
            RequestSource::Routed(routed) => routed.origins(),
            _ => 1,
        }
    }

    /// The next request batch, for a connection to `origin` (only a
    /// source of several origins looks at it); None when the script's
    /// `request()` gave none (nil).
    #[inline]
    pub fn next_batch(&mut self, origin: usize) -> Result<Option<Batch>, ScriptError> {
        match self {
            RequestSource::Fixed { batches, next, random: None, .. } => {
                let batch = batches[*next].clone();
                *next = (*next + 1) % batches.len();
                Ok(Some(batch))
            }
            RequestSource::Fixed { batches, random: Some(random), .. } => {
                // `uniform` is below 1; `min` guards the rounding.
                let index = (random.uniform() * batches.len() as f64) as usize;
                Ok(Some(batches[index.min(batches.len() - 1)].clone()))
            }
            RequestSource::Routed(routed) => Ok(Some(routed.next_batch(origin))),
            RequestSource::Script { script, heads, http2, absolute } => {
                let Some(mut bytes) = script.request()? else { return Ok(None) };
                if let Some(form) = absolute {
                    bytes = form.of(bytes).map_err(|e| {
                        ScriptError(format!(
                            "the script's request is not valid HTTP, so not sent through the \
                             proxy: {e}"
                        ))
                    })?;
                }
                let batch = Batch::new(bytes, heads.clone());
                match http2 {
                    None => Ok(Some(batch)),
                    Some(form) => form.of(batch).map(Some),
                }
            }
        }
    }

    /// The request next in the run's order, for `origin`, is passed over
    /// (due when the run stopped): a source of several origins moves on
    /// (the others need not, nor is a script asked for a request).
    pub fn pass_over(&mut self, origin: usize) {
        if let RequestSource::Routed(routed) = self {
            routed.move_on();
            routed.next_batch(origin);
        }
    }

    /// The targets of requests the run will not send (unsent at the end):
    /// of the next `skipped + n` requests of the run's order, how many of
    /// the last `n` each target would have had. In the file's order they
    /// are the ones the order names from where it stands; in random order,
    /// none was drawn, and each target gets its share (the same counts, as
    /// if in the file's order). Empty for a script.
    pub fn targets_ahead(&self, skipped: u64, n: u64) -> Vec<(u32, u64)> {
        match self {
            RequestSource::Fixed { batches, next, .. } => spread(batches, *next, skipped, n),
            RequestSource::Routed(routed) => {
                spread(routed.batches(), routed.position(), skipped, n)
            }
            RequestSource::Script { .. } => Vec::new(),
        }
    }

    /// Responses must be captured (headers and body) for the script.
    pub fn wants_responses(&self) -> bool {
        matches!(self, RequestSource::Script { script, .. } if script.has_response())
    }

    /// A complete response, for the script's `response()`.
    pub fn on_response(&mut self, status: u16, captured: &Captured) -> Result<(), ScriptError> {
        match self {
            RequestSource::Fixed { .. } | RequestSource::Routed(_) => Ok(()),
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
            RequestSource::Fixed { .. } | RequestSource::Routed(_) => Ok(Duration::ZERO),
            RequestSource::Script { script, .. } => script.delay(),
        }
    }

    /// The script called `thread:stop()`: this thread sends no more.
    pub fn stopped(&self) -> bool {
        matches!(self, RequestSource::Script { script, .. } if script.stop_requested())
    }

    /// Where the next connection goes (`thread.addr` may change it).
    pub fn endpoint(&self) -> Endpoint {
        match self {
            RequestSource::Fixed { endpoint, .. } => endpoint.clone(),
            RequestSource::Routed(routed) => routed.endpoint(),
            RequestSource::Script { script, .. } => script.endpoint(),
        }
    }

    /// Stops a Lua call that does not return, from another thread.
    pub fn interrupter(&self) -> Option<Interrupter> {
        match self {
            RequestSource::Fixed { .. } | RequestSource::Routed(_) => None,
            RequestSource::Script { script, .. } => Some(script.interrupter()),
        }
    }

    /// The thread's Lua state, handed back for `done()`.
    pub fn into_script(self) -> Option<ThreadScript> {
        match self {
            RequestSource::Fixed { .. } | RequestSource::Routed(_) => None,
            RequestSource::Script { script, .. } => Some(*script),
        }
    }
}

/// Per batch of `batches`, taken in turn from position `at` after
/// passing over `skipped`: its target and how many of the next `n` it gets.
fn spread(batches: &[Batch], at: usize, skipped: u64, n: u64) -> Vec<(u32, u64)> {
    let len = batches.len() as u64;
    let first = (at as u64 + skipped % len) % len;
    (batches.iter().enumerate())
        .map(|(i, batch)| {
            let offset = (i as u64 + len - first) % len;
            (batch.target, n / len + u64::from(offset < n % len))
        })
        .filter(|&(_, count)| count > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(text: &str) -> Batch {
        Batch::new(Arc::from(text.as_bytes()), Arc::from([false]))
    }

    #[test]
    fn fixed_requests_are_sent_in_turn() {
        let batches: Arc<[Batch]> = Arc::from([batch("a"), batch("b"), batch("c")]);
        let endpoint = Endpoint::Tcp("127.0.0.1:1".parse().unwrap());
        let mut source = RequestSource::fixed(batches, 4, endpoint, Order::Sequential);
        let sent: Vec<Arc<[u8]>> =
            (0..4).map(|_| source.next_batch(0).unwrap().unwrap().bytes).collect();
        assert_eq!(sent, [b"b", b"c", b"a", b"b"].map(|b| Arc::from(&b[..])));
        assert_eq!(source.depth(), 1);
        assert!(!source.stopped() && !source.wants_responses());
    }

    #[test]
    fn unsent_requests_go_to_the_targets_the_order_names_next() {
        let batches: Vec<Batch> =
            ["a", "b", "c"].iter().enumerate().map(|(i, text)| batch(text).routed(i, 0)).collect();
        let batches: Arc<[Batch]> = batches.into();
        let endpoint = Endpoint::Tcp("127.0.0.1:1".parse().unwrap());
        let mut source = RequestSource::fixed(batches, 0, endpoint, Order::Sequential);
        source.next_batch(0).unwrap();
        // Next is "b"; skipping 2 ("b", "c"), the next 4 are a, b, c, a.
        assert_eq!(source.targets_ahead(2, 4), [(0, 2), (1, 1), (2, 1)]);
        assert_eq!(source.targets_ahead(0, 2), [(1, 1), (2, 1)]);
        assert_eq!(source.targets_ahead(5, 0), []);
    }

    #[test]
    fn random_order_repeats_with_its_seed_and_reaches_every_batch() {
        let batches: Arc<[Batch]> = Arc::from([batch("a"), batch("b"), batch("c")]);
        let endpoint = Endpoint::Tcp("127.0.0.1:1".parse().unwrap());
        let draw = |seed| {
            let order = Order::Random(Draws::at(seed, 0, 0));
            let mut source = RequestSource::fixed(batches.clone(), 0, endpoint.clone(), order);
            (0..300).map(|_| source.next_batch(0).unwrap().unwrap().bytes[0]).collect::<Vec<u8>>()
        };
        let first = draw(7);
        assert_eq!(first, draw(7));
        assert_ne!(first, draw(8));
        for letter in b"abc" {
            let count = first.iter().filter(|&&b| b == *letter).count();
            assert!((60..=140).contains(&count), "{} drawn {count} times of 300", *letter as char);
        }
    }
}
