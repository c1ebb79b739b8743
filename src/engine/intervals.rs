//! Puts the threads' per-period measurements back together.
//!
//! Every engine thread hands over its measurements at each period boundary
//! (and once more when it finishes). Period `k` is complete when every
//! thread has sent its share of `k` or has already finished; complete
//! periods are merged, added to the run totals, and passed on in order
//! with the totals so far (to the periodic reports and logs, and to the
//! live progress). Nothing on the threads' hot path waits for this. A
//! period's first share becomes the period's measurements (moved, not
//! copied); the others, once added, go back to their thread emptied, as
//! do the periods once passed on, so the histograms of a run are
//! allocated once. Each complete period also goes to the run's course
//! (`crate::stats::course`), which takes the sends per slot out of it.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::time::Duration;

use crate::engine::recorder::ThreadInterval;
use crate::stats::course::CourseBuilder;
use crate::stats::{Interval, Stats, ThreadTotals};

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
    /// The length of a period.
    length: Duration,
    /// Periods with some threads' shares, by index.
    pending: BTreeMap<u64, Pending>,
    /// For each finished thread, the index of its last period.
    last_of_thread: Vec<Option<u64>>,
    /// Each thread's counts over all its periods.
    per_thread: Vec<ThreadTotals>,
    /// The run's measurements: every period passed on so far.
    total: Stats,
    /// Where each thread's measurements go back emptied.
    recycle: Vec<Sender<Stats>>,
    /// Emptied period measurements, for the next period.
    spare: Vec<Stats>,
    /// The run's course, as its periods are complete.
    course: CourseBuilder,
}

impl IntervalCollector {
    /// `recycle[i]` takes thread `i`'s measurements back; the periods go
    /// to `course` too.
    pub fn new(
        digits: u8,
        length: Duration,
        recycle: Vec<Sender<Stats>>,
        course: CourseBuilder,
    ) -> IntervalCollector {
        IntervalCollector {
            length,
            pending: BTreeMap::new(),
            last_of_thread: vec![None; recycle.len()],
            per_thread: vec![ThreadTotals::default(); recycle.len()],
            total: Stats::new(digits),
            recycle,
            spare: Vec::new(),
            course,
        }
    }

    /// Takes one thread's share of a period; passes every period that
    /// became complete to `emit`, with the run's measurements up to and
    /// including it.
    pub fn add(&mut self, share: ThreadInterval, emit: &mut dyn FnMut(&Interval, &Stats)) {
        let threads = self.per_thread.len();
        self.per_thread[share.thread].add(&share.stats);
        let continues = share.ended.is_none();
        let back = match self.pending.entry(share.index) {
            Entry::Vacant(entry) => {
                entry.insert(Pending {
                    seen: vec![false; threads],
                    stats: share.stats,
                    continued: false,
                    ended: Duration::ZERO,
                });
                self.spare.pop()
            }
            Entry::Occupied(mut entry) => {
                let mut stats = share.stats;
                entry.get_mut().stats.merge(&stats);
                stats.clear();
                Some(stats)
            }
        };
        // A thread that finished takes nothing back, and its measurements
        // are not needed again.
        if let Some(stats) = back.filter(|_| continues) {
            let _ = self.recycle[share.thread].send(stats);
        }
        // More of an early share's period follows: it is not complete yet.
        if share.early {
            return;
        }
        let pending = self.pending.get_mut(&share.index).expect("inserted above");
        pending.seen[share.thread] = true;
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

    fn emit_complete(&mut self, emit: &mut dyn FnMut(&Interval, &Stats)) {
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
    fn emit(&mut self, index: u64, pending: Pending, emit: &mut dyn FnMut(&Interval, &Stats)) {
        let start = self.length.checked_mul(index as u32).unwrap_or(Duration::MAX);
        let length = if pending.continued {
            self.length
        } else {
            pending.ended.saturating_sub(start).min(self.length)
        };
        let mut interval = Interval { index, start, length, stats: pending.stats };
        self.course.add(&mut interval);
        self.total.merge(&interval.stats);
        emit(&interval, &self.total);
        let mut stats = interval.stats;
        stats.clear();
        self.spare.push(stats);
    }

    /// After all threads finished: passes on anything left and returns the
    /// run totals, each thread's counts and the course (to be finished at
    /// the end of the sends).
    pub fn finish(
        mut self,
        emit: &mut dyn FnMut(&Interval, &Stats),
    ) -> (Stats, Vec<ThreadTotals>, CourseBuilder) {
        while let Some((index, pending)) = self.pending.pop_first() {
            self.emit(index, pending, emit);
        }
        (self.total, self.per_thread, self.course)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn share(thread: usize, index: u64, requests: u64, ended_ms: Option<u64>) -> ThreadInterval {
        let mut stats = Stats::new(3);
        stats.requests = requests;
        ThreadInterval {
            thread,
            index,
            stats,
            ended: ended_ms.map(Duration::from_millis),
            early: false,
        }
    }

    fn collector(threads: usize) -> (IntervalCollector, Vec<mpsc::Receiver<Stats>>) {
        let (recycle, recycled) = (0..threads).map(|_| mpsc::channel()).unzip();
        let second = Duration::from_secs(1);
        let course = CourseBuilder::new(second, second, false);
        (IntervalCollector::new(3, second, recycle, course), recycled)
    }

    #[test]
    fn emits_periods_in_order_when_all_threads_reported() {
        let (mut c, recycled) = collector(2);
        let mut seen = Vec::new();
        let mut emit =
            |i: &Interval, total: &Stats| seen.push((i.index, i.stats.requests, total.requests));
        c.add(share(0, 0, 5, None), &mut emit);
        c.add(share(0, 1, 6, None), &mut emit);
        c.add(share(1, 0, 7, None), &mut emit);
        c.add(share(1, 1, 1, Some(1200)), &mut emit);
        c.add(share(0, 2, 3, Some(2500)), &mut emit);
        let (total, threads, _) = c.finish(&mut emit);
        // Each period comes with the run's measurements up to its end.
        assert_eq!(seen, vec![(0, 12, 12), (1, 7, 19), (2, 3, 22)]);
        assert_eq!(total.requests, 22);
        assert_eq!(threads[0].requests, 14);
        assert_eq!(threads[1].requests, 8);
        // Shares merged into a period's first go back to threads that go
        // on, emptied; thread 0's share of period 1 came first, so it
        // got a spare back instead.
        let back: Vec<Vec<Stats>> = recycled.iter().map(|r| r.try_iter().collect()).collect();
        assert_eq!((back[0].len(), back[1].len()), (0, 1));
        assert!(back
            .iter()
            .flatten()
            .all(|stats| stats.requests == 0 && stats.corrected.is_empty()));
    }

    /// A thread that calls a script hands parts of a period over early;
    /// the period waits for the rest, and the parts add up.
    #[test]
    fn early_parts_of_a_period_wait_for_its_end() {
        let (mut c, recycled) = collector(2);
        let seen = std::cell::RefCell::new(Vec::new());
        let mut emit =
            |i: &Interval, _: &Stats| seen.borrow_mut().push((i.index, i.stats.requests));
        let early =
            |thread, requests| ThreadInterval { early: true, ..share(thread, 0, requests, None) };
        c.add(early(0, 2), &mut emit);
        c.add(share(1, 0, 7, None), &mut emit);
        c.add(early(0, 3), &mut emit);
        assert!(seen.borrow().is_empty());
        c.add(share(0, 0, 1, None), &mut emit);
        assert_eq!(*seen.borrow(), vec![(0, 13)]);
        let (total, threads, _) = c.finish(&mut emit);
        assert_eq!((total.requests, threads[0].requests), (13, 6));
        // Thread 0 goes on: what it handed over came back emptied.
        assert_eq!(recycled[0].try_iter().count(), 2);
    }

    #[test]
    fn last_partial_period_is_cut_at_the_runtime() {
        let (mut c, _recycled) = collector(2);
        let mut lengths = Vec::new();
        let mut emit = |i: &Interval, _: &Stats| lengths.push(i.length);
        c.add(share(0, 0, 1, None), &mut emit);
        c.add(share(1, 0, 1, None), &mut emit);
        c.add(share(0, 1, 1, Some(1300)), &mut emit);
        c.add(share(1, 1, 1, Some(1500)), &mut emit);
        c.finish(&mut emit);
        assert_eq!(lengths, vec![Duration::from_secs(1), Duration::from_millis(500)]);
    }
}
