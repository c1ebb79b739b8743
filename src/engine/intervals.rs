//! Puts the threads' per-period measurements back together.
//!
//! Every engine thread hands over its measurements at each period boundary
//! (and once more when it finishes). Period `k` is complete when every
//! thread has sent its share of `k` or has already finished; complete
//! periods are merged, passed on in order (to periodic reports and logs),
//! and added to the run totals. Nothing on the threads' hot path waits for
//! this.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::engine::worker::ThreadInterval;
use crate::stats::{Interval, Stats};

/// A period that not every thread has reported yet.
struct Pending {
    seen: Vec<bool>,
    stats: Stats,
    /// Whether a thread went on past this period (then it is full length).
    continued: bool,
    /// The latest end (from the run start) of the threads that finished in
    /// this period.
    ended: Duration,
}

pub struct IntervalCollector {
    digits: u8,
    length: Duration,
    /// Periods with some threads' shares, by index.
    pending: BTreeMap<u64, Pending>,
    /// For each finished thread, the index of its last period.
    last_of_thread: Vec<Option<u64>>,
    /// Each thread's measurements over all its periods.
    per_thread: Vec<Stats>,
    total: Stats,
}

impl IntervalCollector {
    pub fn new(threads: usize, digits: u8, length: Duration) -> IntervalCollector {
        IntervalCollector {
            digits,
            length,
            pending: BTreeMap::new(),
            last_of_thread: vec![None; threads],
            per_thread: (0..threads).map(|_| Stats::new(digits)).collect(),
            total: Stats::new(digits),
        }
    }

    /// Takes one thread's share of a period; passes every period that
    /// became complete to `emit`.
    pub fn add(&mut self, share: ThreadInterval, emit: &mut dyn FnMut(&Interval)) {
        let threads = self.per_thread.len();
        self.per_thread[share.thread].merge(&share.stats);
        let digits = self.digits;
        let pending = self.pending.entry(share.index).or_insert_with(|| Pending {
            seen: vec![false; threads],
            stats: Stats::new(digits),
            continued: false,
            ended: Duration::ZERO,
        });
        pending.seen[share.thread] = true;
        pending.stats.merge(&share.stats);
        match share.ended {
            Some(ended) => {
                pending.ended = pending.ended.max(ended);
                self.last_of_thread[share.thread] = Some(share.index);
            }
            None => pending.continued = true,
        }
        self.emit_complete(emit);
    }

    fn is_complete(&self, index: u64, seen: &[bool]) -> bool {
        seen.iter()
            .zip(&self.last_of_thread)
            .all(|(&seen, last)| seen || last.is_some_and(|last| last < index))
    }

    fn emit_complete(&mut self, emit: &mut dyn FnMut(&Interval)) {
        while let Some((&index, pending)) = self.pending.first_key_value() {
            if !self.is_complete(index, &pending.seen) {
                return;
            }
            let pending = self.pending.remove(&index).expect("first key exists");
            self.emit(index, pending, emit);
        }
    }

    /// Passes on period `index`: full length, unless every thread in it
    /// finished during it (the last period of the run).
    fn emit(&mut self, index: u64, pending: Pending, emit: &mut dyn FnMut(&Interval)) {
        let start = self.length * index as u32;
        let length = if pending.continued {
            self.length
        } else {
            pending.ended.saturating_sub(start).min(self.length)
        };
        self.total.merge(&pending.stats);
        emit(&Interval { index, start, length, stats: pending.stats });
    }

    /// After all threads finished: passes on anything left and returns the
    /// run totals and each thread's totals.
    pub fn finish(mut self, emit: &mut dyn FnMut(&Interval)) -> (Stats, Vec<Stats>) {
        while let Some((index, pending)) = self.pending.pop_first() {
            self.emit(index, pending, emit);
        }
        (self.total, self.per_thread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(thread: usize, index: u64, requests: u64, ended_ms: Option<u64>) -> ThreadInterval {
        let mut stats = Stats::new(3);
        stats.requests = requests;
        ThreadInterval { thread, index, stats, ended: ended_ms.map(Duration::from_millis) }
    }

    #[test]
    fn emits_periods_in_order_when_all_threads_reported() {
        let mut c = IntervalCollector::new(2, 3, Duration::from_secs(1));
        let mut seen = Vec::new();
        let mut emit = |i: &Interval| seen.push((i.index, i.stats.requests));
        c.add(share(0, 0, 5, None), &mut emit);
        c.add(share(0, 1, 6, None), &mut emit);
        c.add(share(1, 0, 7, None), &mut emit);
        c.add(share(1, 1, 1, Some(1200)), &mut emit);
        c.add(share(0, 2, 3, Some(2500)), &mut emit);
        let (total, threads) = c.finish(&mut emit);
        assert_eq!(seen, vec![(0, 12), (1, 7), (2, 3)]);
        assert_eq!(total.requests, 22);
        assert_eq!(threads[0].requests, 14);
        assert_eq!(threads[1].requests, 8);
    }

    #[test]
    fn last_partial_period_is_cut_at_the_runtime() {
        let mut c = IntervalCollector::new(2, 3, Duration::from_secs(1));
        let mut lengths = Vec::new();
        let mut emit = |i: &Interval| lengths.push(i.length);
        c.add(share(0, 0, 1, None), &mut emit);
        c.add(share(1, 0, 1, None), &mut emit);
        c.add(share(0, 1, 1, Some(1300)), &mut emit);
        c.add(share(1, 1, 1, Some(1500)), &mut emit);
        c.finish(&mut emit);
        assert_eq!(lengths, vec![Duration::from_secs(1), Duration::from_millis(500)]);
    }
}
