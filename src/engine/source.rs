//! What an engine thread sends, as its protocol writes it: the requests
//! made before the run, encoded once for all threads; requests made as
//! they are sent (gRPC calls from templates), each encoded then; or what
//! the thread's script says (`request()`, `response()`, `delay()`,
//! `thread:stop()`, `thread.addr`), each new request encoded once. The
//! worker asks the source and never looks at which one it is.

use std::sync::Arc;
use std::time::Duration;

use super::protocol::{Context, Outgoing, Protocol};
use super::routed::Routed;
use crate::endpoint::Endpoint;
use crate::http::response::Captured;
use crate::proxy::absolute::AbsoluteForm;
use crate::workload::{Batch, Interrupt, MakeRequests, Order, ScriptError, Scripted};

/// A thread's source of request batches in the wire form of `P`.
pub enum Source<P: Protocol, S> {
    /// Batches made before the run, sent in turn (`random` absent) or
    /// drawn at random.
    Fixed {
        batches: Arc<[Outgoing<P::Wire>]>,
        next: usize,
        random: Option<crate::plan::random::Draws>,
        endpoint: Endpoint,
    },
    /// Batches of several origins, each for a connection to its own
    /// ([`Routed`]).
    Routed(Box<Routed<P::Wire>>),
    /// A script per thread; every batch has the depth and HEAD flags of
    /// the script's first request (as in wrk). Through a proxy in plain
    /// HTTP, `absolute` rewrites each request into the form a proxy takes.
    Scripted { script: S, text: ScriptText<P>, absolute: Option<AbsoluteForm> },
    /// Requests made as they are sent, each encoded then.
    Made { maker: Box<dyn MakeRequests>, context: Context, endpoint: Endpoint },
}

/// How a script's requests are encoded: once per distinct request, the
/// last one kept (a script without `request()`, or one returning a
/// request it made once, sends the same text again and again).
pub struct ScriptText<P: Protocol> {
    heads: Arc<[bool]>,
    context: Context,
    last: Option<(Arc<[u8]>, P::Wire)>,
}

impl<P: Protocol> ScriptText<P> {
    pub fn new(heads: Arc<[bool]>, context: Context) -> ScriptText<P> {
        ScriptText { heads, context, last: None }
    }

    fn encode(&mut self, text: Arc<[u8]>) -> Result<P::Wire, ScriptError> {
        if let Some((last, wire)) = &self.last {
            if Arc::ptr_eq(last, &text) {
                return Ok(wire.clone());
            }
        }
        let wire = P::encode_text(&text, &self.heads, &self.context).map_err(ScriptError)?;
        self.last = Some((text, wire.clone()));
        Ok(wire)
    }
}

/// Encodes the batches made before the run (the same list for every
/// thread) once, in the wire form of `P`.
pub fn encode_all<P: Protocol>(
    batches: &[Batch],
    context: &Context,
) -> Result<Arc<[Outgoing<P::Wire>]>, String> {
    batches
        .iter()
        .map(|batch| {
            let wire = P::encode(&batch.requests, context)?;
            Ok(Outgoing { wire, target: batch.target, origin: batch.origin })
        })
        .collect()
}

impl<P: Protocol, S: Scripted> Source<P, S> {
    /// Batches made before the run, sent in turn from `first`, or in
    /// random order; to `origins` origins (several: routed).
    pub fn fixed(
        batches: Arc<[Outgoing<P::Wire>]>,
        origins: usize,
        first: usize,
        endpoint: Endpoint,
        order: Order,
    ) -> Source<P, S> {
        debug_assert!(!batches.is_empty());
        let random = match order {
            Order::Sequential => None,
            Order::Random(draws) => Some(draws),
        };
        if origins > 1 {
            return Source::Routed(Box::new(Routed::new(
                batches, origins, first, random, endpoint,
            )));
        }
        Source::Fixed { next: first % batches.len(), batches, random, endpoint }
    }

    /// Requests per batch: how many intended times of the plan one batch
    /// takes.
    pub fn depth(&self) -> usize {
        match self {
            Source::Fixed { batches, .. } => P::depth(&batches[0].wire),
            Source::Routed(routed) => P::depth(routed.first_wire()),
            Source::Scripted { text, .. } => text.heads.len(),
            Source::Made { .. } => 1,
        }
    }

    /// The origin of the request next in the run's order (the one a plan
    /// sends next): 0 but with several origins.
    #[inline]
    pub fn next_origin(&mut self) -> usize {
        match self {
            Source::Routed(routed) => routed.next_origin(),
            _ => 0,
        }
    }

    /// The request [`Source::next_origin`] named has left the plan (sent,
    /// or parked to wait for a connection to its origin).
    #[inline]
    pub fn move_on(&mut self) {
        if let Source::Routed(routed) = self {
            routed.move_on();
        }
    }

    /// How many origins the requests go to.
    pub fn origins(&self) -> usize {
        match self {
            Source::Routed(routed) => routed.origins(),
            _ => 1,
        }
    }

    /// The next request batch, for the connection numbered `connection`
    /// in the thread, to `origin` (only a source of several origins looks
    /// at it); None when the script's `request()` gave none (nil).
    #[inline]
    pub fn next_batch(
        &mut self,
        origin: usize,
        connection: usize,
    ) -> Result<Option<Outgoing<P::Wire>>, ScriptError> {
        match self {
            Source::Fixed { batches, next, random: None, .. } => {
                let batch = batches[*next].clone();
                *next = (*next + 1) % batches.len();
                Ok(Some(batch))
            }
            Source::Fixed { batches, random: Some(random), .. } => {
                // `uniform` is below 1; `min` guards the rounding.
                let index = (random.uniform() * batches.len() as f64) as usize;
                Ok(Some(batches[index.min(batches.len() - 1)].clone()))
            }
            Source::Routed(routed) => Ok(Some(routed.next_batch(origin))),
            Source::Scripted { script, text, absolute } => {
                let Some(mut bytes) = script.request()? else { return Ok(None) };
                if let Some(form) = absolute {
                    bytes = form.of(bytes).map_err(|e| {
                        ScriptError(format!(
                            "the script's request is not valid HTTP, so not sent through the \
                             proxy: {e}"
                        ))
                    })?;
                }
                let wire = text.encode(bytes)?;
                Ok(Some(Outgoing { wire, target: 0, origin: 0 }))
            }
            Source::Made { maker, context, .. } => {
                let batch = maker.next(connection).map_err(ScriptError)?;
                let wire = P::encode(&batch.requests, context).map_err(ScriptError)?;
                Ok(Some(Outgoing { wire, target: 0, origin: 0 }))
            }
        }
    }

    /// The request next in the run's order, for `origin`, is passed over
    /// (due when the run stopped): a source of several origins moves on
    /// (the others need not, nor is a script asked for a request).
    pub fn pass_over(&mut self, origin: usize) {
        if let Source::Routed(routed) = self {
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
            Source::Fixed { batches, next, .. } => spread(batches, *next, skipped, n),
            Source::Routed(routed) => spread(routed.batches(), routed.position(), skipped, n),
            Source::Scripted { .. } | Source::Made { .. } => Vec::new(),
        }
    }

    /// Responses must be captured (headers and body) for the script.
    pub fn wants_responses(&self) -> bool {
        matches!(self, Source::Scripted { script, .. } if script.wants_responses())
    }

    /// A complete response, for the script's `response()`.
    pub fn on_response(&mut self, status: u16, captured: &Captured) -> Result<(), ScriptError> {
        match self {
            Source::Fixed { .. } | Source::Routed(_) | Source::Made { .. } => Ok(()),
            Source::Scripted { script, .. } => {
                script.response(status, &captured.headers, &captured.body)
            }
        }
    }

    /// How long a connection waits before its next request (the script's
    /// `delay()`; zero without one).
    #[inline]
    pub fn delay(&mut self) -> Result<Duration, ScriptError> {
        match self {
            Source::Fixed { .. } | Source::Routed(_) | Source::Made { .. } => Ok(Duration::ZERO),
            Source::Scripted { script, .. } => script.delay(),
        }
    }

    /// The script called `thread:stop()`: this thread sends no more.
    pub fn stopped(&self) -> bool {
        matches!(self, Source::Scripted { script, .. } if script.stop_requested())
    }

    /// Where the next connection goes (`thread.addr` may change it).
    pub fn endpoint(&self) -> Endpoint {
        match self {
            Source::Fixed { endpoint, .. } | Source::Made { endpoint, .. } => endpoint.clone(),
            Source::Routed(routed) => routed.endpoint(),
            Source::Scripted { script, .. } => script.endpoint(),
        }
    }

    /// The thread calls a script during the run.
    pub fn is_scripted(&self) -> bool {
        matches!(self, Source::Scripted { .. })
    }

    /// Stops a script call that does not return, from another thread.
    pub fn interrupter(&self) -> Option<Box<dyn Interrupt>> {
        match self {
            Source::Fixed { .. } | Source::Routed(_) | Source::Made { .. } => None,
            Source::Scripted { script, .. } => Some(Box::new(script.interrupter())),
        }
    }

    /// The thread's script, handed back (for `done()`).
    pub fn into_script(self) -> Option<S> {
        match self {
            Source::Fixed { .. } | Source::Routed(_) | Source::Made { .. } => None,
            Source::Scripted { script, .. } => Some(script),
        }
    }
}

/// Per batch of `batches`, taken in turn from position `at` after
/// passing over `skipped`: its target and how many of the next `n` it gets.
fn spread<W>(batches: &[Outgoing<W>], at: usize, skipped: u64, n: u64) -> Vec<(u32, u64)> {
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
    use crate::engine::http1::{Http1, Http1Wire};
    use crate::plan::random::Draws;
    use crate::workload::NoScript;

    fn batch(text: &str) -> Outgoing<Http1Wire> {
        let wire = Http1Wire { bytes: Arc::from(text.as_bytes()), heads: Arc::from([false]) };
        Outgoing { wire, target: 0, origin: 0 }
    }

    fn endpoint() -> Endpoint {
        Endpoint::Tcp("127.0.0.1:1".parse().unwrap())
    }

    fn source(
        batches: &[Outgoing<Http1Wire>],
        first: usize,
        order: Order,
    ) -> Source<Http1, NoScript> {
        Source::fixed(Arc::from(batches), 1, first, endpoint(), order)
    }

    fn text(batch: Outgoing<Http1Wire>) -> u8 {
        batch.wire.bytes[0]
    }

    #[test]
    fn fixed_requests_are_sent_in_turn() {
        let mut source = source(&[batch("a"), batch("b"), batch("c")], 4, Order::Sequential);
        let sent: Vec<u8> =
            (0..4).map(|_| text(source.next_batch(0, 0).unwrap().unwrap())).collect();
        assert_eq!(sent, b"bcab");
        assert_eq!(source.depth(), 1);
        assert!(!source.stopped() && !source.wants_responses());
    }

    #[test]
    fn unsent_requests_go_to_the_targets_the_order_names_next() {
        let batches: Vec<_> = ["a", "b", "c"]
            .iter()
            .enumerate()
            .map(|(i, name)| Outgoing { target: i as u32, ..batch(name) })
            .collect();
        let mut source = source(&batches, 0, Order::Sequential);
        source.next_batch(0, 0).unwrap();
        // Next is "b"; skipping 2 ("b", "c"), the next 4 are a, b, c, a.
        assert_eq!(source.targets_ahead(2, 4), [(0, 2), (1, 1), (2, 1)]);
        assert_eq!(source.targets_ahead(0, 2), [(1, 1), (2, 1)]);
        assert_eq!(source.targets_ahead(5, 0), []);
    }

    #[test]
    fn random_order_repeats_with_its_seed_and_reaches_every_batch() {
        let batches = [batch("a"), batch("b"), batch("c")];
        let draw = |seed| {
            let mut source = source(&batches, 0, Order::Random(Draws::at(seed, 0, 0)));
            (0..300).map(|_| text(source.next_batch(0, 0).unwrap().unwrap())).collect::<Vec<u8>>()
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
