//! The requests of a targets file that names several origins, each sent
//! on a connection to its own origin.
//!
//! The run keeps one order of requests: the file's, round and round, or
//! drawn at random (`--targets-order`). How it is kept depends on who
//! decides when a request goes:
//! - with a plan (`-R`), the plan's k-th request is due at its time
//!   whichever origin it goes to: [`Routed::next_origin`] says the origin
//!   of the request next in the one order, and that request goes on a free
//!   connection of its origin, or waits for one apart from the plan
//!   ([`super::parked`]) so that the requests after it, for other origins,
//!   still go at their times; either way it leaves the order
//!   ([`Routed::move_on`]) and takes its origin's next request when sent;
//! - in the closed loop, a connection that becomes free sends the next
//!   request of its own origin: each origin has a cursor into its part of
//!   the order (in the file's order the part is the origin's targets in
//!   turn; in random order a target drawn among the origin's).
//!
//! Both are the one order: the requests of one origin come in the same
//! turn (or with the same chances) either way, and the origins' shares of
//! the requests are their shares of the targets when the connections keep
//! up (the connections are spread in those proportions).

use std::sync::Arc;

use super::protocol::Outgoing;
use crate::endpoint::Endpoint;
use crate::plan::random::Draws;

/// What a thread sends to several origins, batches in the wire form `W`.
pub struct Routed<W> {
    /// Every target's batch, in the file's order; each knows its origin.
    batches: Arc<[Outgoing<W>]>,
    /// Per origin, its part of the order.
    lanes: Vec<Lane>,
    /// The next position in the file's order (sequential order).
    next: usize,
    /// Random order: the thread's stream of random numbers.
    random: Option<Draws>,
    /// The origin of the request next in the one order, once asked for
    /// (until that request is sent).
    upcoming: Option<usize>,
    /// Where the first origin's connections go (a source's endpoint, as a
    /// script's `thread.addr`).
    endpoint: Endpoint,
}

/// One origin's batches (indices into the file's order) and its cursor.
struct Lane {
    batches: Vec<usize>,
    next: usize,
}

impl<W: Clone> Routed<W> {
    /// `batches` (each knowing its origin, of `origins`), sent from
    /// position `first` of the file's order, or at random.
    pub fn new(
        batches: Arc<[Outgoing<W>]>,
        origins: usize,
        first: usize,
        random: Option<Draws>,
        endpoint: Endpoint,
    ) -> Routed<W> {
        let next = first % batches.len();
        let lanes = (0..origins)
            .map(|origin| {
                let of_origin: Vec<usize> =
                    (0..batches.len()).filter(|&i| batches[i].origin as usize == origin).collect();
                // The first of the origin's targets at or after `first`.
                let before = of_origin.iter().filter(|&&i| i < next).count();
                let next = before % of_origin.len().max(1);
                Lane { batches: of_origin, next }
            })
            .collect();
        Routed { batches, lanes, next, random, upcoming: None, endpoint }
    }

    /// The origin of the request next in the one order (paced runs).
    pub fn next_origin(&mut self) -> usize {
        let (batches, next, random) = (&self.batches, &mut self.next, &mut self.random);
        *self.upcoming.get_or_insert_with(|| {
            let index = match random {
                Some(draws) => draw(draws, batches.len()),
                None => {
                    let index = *next;
                    *next = (index + 1) % batches.len();
                    index
                }
            };
            batches[index].origin as usize
        })
    }

    /// The request [`Routed::next_origin`] named has left the plan (sent,
    /// parked, or passed over): the one order moves on.
    pub fn move_on(&mut self) {
        self.upcoming = None;
    }

    /// How many origins the requests go to.
    pub fn origins(&self) -> usize {
        self.lanes.len()
    }

    /// The next request of `origin`, for a connection to it.
    pub fn next_batch(&mut self, origin: usize) -> Outgoing<W> {
        let lane = &mut self.lanes[origin];
        let index = match &mut self.random {
            Some(draws) => lane.batches[draw(draws, lane.batches.len())],
            None => {
                let index = lane.batches[lane.next];
                lane.next = (lane.next + 1) % lane.batches.len();
                index
            }
        };
        self.batches[index].clone()
    }

    /// Every target's batch, in the file's order.
    pub fn batches(&self) -> &[Outgoing<W>] {
        &self.batches
    }

    /// The first batch's wire form (every batch has its depth).
    pub fn first_wire(&self) -> &W {
        &self.batches[0].wire
    }

    /// Where the one order stands: the position in the file's order of the
    /// request it names next (random order: where it stood last).
    pub fn position(&self) -> usize {
        let len = self.batches.len();
        match self.upcoming {
            // Naming it moved the position past it.
            Some(_) => (self.next + len - 1) % len,
            None => self.next,
        }
    }

    pub fn endpoint(&self) -> Endpoint {
        self.endpoint.clone()
    }
}

/// An index below `n`, uniformly.
fn draw(draws: &mut Draws, n: usize) -> usize {
    // `uniform` is below 1; `min` guards the rounding.
    ((draws.uniform() * n as f64) as usize).min(n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Targets named by a letter, to the origin of the digit after it.
    fn routed(spec: &[(&str, usize)], first: usize, random: Option<Draws>) -> Routed<String> {
        let batches: Arc<[Outgoing<String>]> = spec
            .iter()
            .enumerate()
            .map(|(i, (name, origin))| Outgoing {
                wire: name.to_string(),
                target: i as u32,
                origin: *origin as u32,
            })
            .collect();
        let origins = spec.iter().map(|(_, o)| o + 1).max().unwrap();
        Routed::new(batches, origins, first, random, Endpoint::Tcp("127.0.0.1:1".parse().unwrap()))
    }

    fn name(batch: &Outgoing<String>) -> String {
        batch.wire.clone()
    }

    const FILE: [(&str, usize); 5] = [("a", 0), ("b", 1), ("c", 0), ("d", 2), ("e", 1)];

    #[test]
    fn paced_requests_follow_the_files_order() {
        let mut source = routed(&FILE, 1, None);
        let sent: Vec<String> = (0..7)
            .map(|_| {
                let origin = source.next_origin();
                // Asking again names the same request until it is sent.
                assert_eq!(source.next_origin(), origin);
                source.move_on();
                name(&source.next_batch(origin))
            })
            .collect();
        assert_eq!(sent, ["b", "c", "d", "e", "a", "b", "c"]);
    }

    #[test]
    fn closed_loop_connections_take_their_origins_next_request() {
        let mut source = routed(&FILE, 3, None);
        let sent: Vec<String> = [0, 0, 0, 1, 1, 2, 1].map(|o| name(&source.next_batch(o))).into();
        // From position 3 ("d"): origin 0's next is "a", origin 1's "e".
        assert_eq!(sent, ["a", "c", "a", "e", "b", "d", "e"]);
    }

    #[test]
    fn random_order_keeps_the_shares_and_the_origins() {
        let mut source = routed(&FILE, 0, Some(Draws::at(7, 0, 0)));
        let mut per_origin = [0i32; 3];
        for _ in 0..5_000 {
            let origin = source.next_origin();
            source.move_on();
            let batch = source.next_batch(origin);
            assert_eq!(batch.origin as usize, origin);
            per_origin[origin] += 1;
        }
        // Shares 2/5, 2/5, 1/5.
        for (count, expected) in per_origin.iter().zip([2_000, 2_000, 1_000]) {
            assert!((count - expected).abs() < 200, "{per_origin:?}");
        }
    }
}
