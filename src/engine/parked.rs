//! Requests of the plan that fell due while no connection to their origin
//! was ready (a run over several origins): each origin's wait in a line of
//! its own, so that the requests after them, for other origins, still go at
//! their times. With one origin there is nothing to park: a due request
//! waits at the head of the plan, as every later one would behind it.
//!
//! A parked request keeps its intended times; its latency and its schedule
//! lag count from them when a connection to its origin takes it, and if
//! none does before the end it is unsent, as a request the plan could not
//! send.

use std::collections::VecDeque;

/// How many batches one origin may hold parked. Beyond it (an origin that
/// takes nothing for a long while at a high rate) the plan waits for that
/// origin's connection again, as with one origin, rather than hold an
/// unbounded list: 2^20 batches is 8 MiB of intended times per origin.
const MOST_PER_ORIGIN: usize = 1 << 20;

pub struct Parked {
    /// Per origin, the intended times of its parked batches, `depth` per
    /// batch, oldest first.
    lines: Vec<VecDeque<u64>>,
    depth: usize,
    /// Batches parked over all origins.
    batches: usize,
}

impl Parked {
    /// Lines for `origins` origins, of batches of `depth` requests.
    pub fn new(origins: usize, depth: usize) -> Parked {
        Parked { lines: vec![VecDeque::new(); origins], depth: depth.max(1), batches: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.batches == 0
    }

    /// Whether `origin`'s line can take another batch.
    pub fn has_room(&self, origin: usize) -> bool {
        self.lines[origin].len() < MOST_PER_ORIGIN * self.depth
    }

    /// Parks a batch of `origin` meant for the times `intended`.
    pub fn park(&mut self, origin: usize, intended: &[u64]) {
        debug_assert_eq!(intended.len(), self.depth);
        self.lines[origin].extend(intended);
        self.batches += 1;
    }

    /// The origins with a parked batch, in order.
    pub fn waiting(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.lines.len()).filter(|&origin| !self.lines[origin].is_empty())
    }

    /// Moves `origin`'s oldest parked batch into `intended`; false when it
    /// has none.
    pub fn take(&mut self, origin: usize, intended: &mut Vec<u64>) -> bool {
        let line = &mut self.lines[origin];
        if line.is_empty() {
            return false;
        }
        intended.clear();
        intended.extend(line.drain(..self.depth));
        self.batches -= 1;
        true
    }

    /// The intended time of the oldest parked request, if any.
    pub fn oldest(&self) -> Option<u64> {
        self.lines.iter().filter_map(|line| line.front().copied()).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_origin_keeps_its_own_line_oldest_first() {
        let mut parked = Parked::new(3, 2);
        assert!(parked.is_empty() && parked.oldest().is_none());
        parked.park(2, &[30, 31]);
        parked.park(0, &[40, 41]);
        parked.park(2, &[50, 51]);
        assert_eq!(parked.waiting().collect::<Vec<_>>(), [0, 2]);
        assert_eq!(parked.oldest(), Some(30));
        let mut intended = vec![99];
        assert!(parked.take(2, &mut intended));
        assert_eq!(intended, [30, 31]);
        assert_eq!(parked.oldest(), Some(40));
        assert!(!parked.take(1, &mut intended));
        assert!(parked.take(2, &mut intended) && parked.take(0, &mut intended));
        assert_eq!(intended, [40, 41]);
        assert!(parked.is_empty());
    }

    #[test]
    fn a_line_holds_a_bounded_number_of_batches() {
        let mut parked = Parked::new(2, 1);
        for at in 0..MOST_PER_ORIGIN as u64 {
            assert!(parked.has_room(0));
            parked.park(0, &[at]);
        }
        assert!(!parked.has_room(0));
        assert!(parked.has_room(1));
    }
}
