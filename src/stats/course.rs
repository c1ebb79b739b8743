//! How a run went through time: a summary of each of its periods, kept
//! for every run whatever `-p`, `--hlog` or `--html` ask for, so that the
//! checks of its validity (`crate::report::validity`) can be made after it
//! and made again from its saved JSON (`pace report`, `pace merge`).
//!
//! The periods last a twentieth of the run ([`period_for`]: within
//! 100 ms and 10 s; 1 s for a closed loop bounded by `-n` alone), a whole
//! number of the periods the engine threads hand over. Each keeps:
//!
//! - its corrected latency, in a histogram of one significant digit
//!   (values within 1/16 of themselves: the checks compare medians by
//!   factors of two and floors of a millisecond), about 2 KB;
//! - the requests sent and ended in it
//!   ([`crate::stats::stationarity::Measures`]);
//! - of a Poisson plan, how its sends fell in slots of [`SLOT`]: the
//!   chi-square of the slots' counts against their mean (the index of
//!   dispersion test) and its degrees of freedom, summed over groups of at
//!   most [`GROUP_SLOTS`] slots (a second, within which the planned rate is
//!   taken as constant, so that a ramp is no burst). The threads count
//!   each send in its slot (one increment, [`SlotCounts`]); the counts of
//!   all threads are added before the test, since only their union is
//!   the plan's Poisson process (each thread's stripe of it is more
//!   regular).
//!
//! Beyond [`MAX_PERIODS`] periods, neighbours merge two by two and the
//! period doubles: a run of any length keeps at most that many (a day of
//! 10 s periods is 8,640), some tens of MB at most.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::spectrum::value_at_percentile;
use super::stationarity::{self, Measures};
use super::Interval;

/// The slot the sends of a Poisson plan are counted in: longer than the
/// hiccups a shared machine gives a thread (a scheduler's time slice, a
/// few milliseconds, moves sends within a slot or to the next), shorter
/// than a hold that changes what the server sees.
pub const SLOT: Duration = Duration::from_millis(10);
const SLOT_NS: u64 = 10_000_000;
/// The most slots one chi-square is computed over (a second).
pub const GROUP_SLOTS: u64 = 100;
/// Significant digits of the periods' histograms.
pub const DIGITS: u8 = 1;
/// The most periods a course keeps.
pub const MAX_PERIODS: usize = 10_000;
/// Periods per run, within the bounds below.
const PERIODS_PER_RUN: u32 = 20;
const SHORTEST: Duration = Duration::from_millis(100);
const LONGEST: Duration = Duration::from_secs(10);
/// The period of a run without a duration.
const OPEN_ENDED: Duration = Duration::from_secs(1);

/// The course's period for a run of `duration` (None: until `-n`
/// requests are done).
pub fn period_for(duration: Option<Duration>) -> Duration {
    match duration {
        Some(duration) => (duration / PERIODS_PER_RUN).clamp(SHORTEST, LONGEST),
        None => OPEN_ENDED,
    }
}

/// The slot of a send at `since_start_ns` after the start of the measured
/// run.
#[inline]
pub fn slot_of(since_start_ns: u64) -> u64 {
    since_start_ns / SLOT_NS
}

/// Sends per [`SLOT`], from the start of the measured run: what a thread
/// counted in one period (by the time each send went out, so a thread that
/// hands over late may have counted some of the next period's slots), and
/// the threads' counts added up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlotCounts {
    /// The slot of `counts[0]`.
    first: u64,
    counts: Vec<u32>,
}

impl SlotCounts {
    /// `n` more sends in `slot`.
    #[inline]
    pub fn count(&mut self, slot: u64, n: u32) {
        match slot.checked_sub(self.first).and_then(|at| self.counts.get_mut(at as usize)) {
            Some(count) => *count = count.saturating_add(n),
            None => self.count_outside(slot, n),
        }
    }

    /// [`SlotCounts::count`] for a slot the counts do not cover yet.
    fn count_outside(&mut self, slot: u64, n: u32) {
        if self.counts.is_empty() {
            self.first = slot;
        } else if slot < self.first {
            let before = usize::try_from(self.first - slot).unwrap_or(usize::MAX);
            self.counts.splice(0..0, std::iter::repeat_n(0, before));
            self.first = slot;
        }
        let at = usize::try_from(slot - self.first).unwrap_or(usize::MAX);
        if at >= self.counts.len() {
            self.counts.resize(at + 1, 0);
        }
        self.counts[at] = self.counts[at].saturating_add(n);
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &SlotCounts) {
        for (at, &n) in other.counts.iter().enumerate().filter(|(_, &n)| n > 0) {
            self.count(other.first + at as u64, n);
        }
    }

    /// Forgets the counts, keeping the memory.
    pub fn clear(&mut self) {
        self.counts.clear();
        self.first = 0;
    }

    /// The sends in `slot`.
    fn get(&self, slot: u64) -> u32 {
        slot.checked_sub(self.first)
            .and_then(|at| self.counts.get(at as usize))
            .copied()
            .unwrap_or(0)
    }

    /// Forgets the slots before `slot`.
    fn drop_before(&mut self, slot: u64) {
        let gone = slot.saturating_sub(self.first).min(self.counts.len() as u64);
        self.counts.drain(..gone as usize);
        self.first += gone;
    }
}

/// One period of a course.
#[derive(Clone, Debug, PartialEq)]
pub struct CoursePeriod {
    /// Latency from the intended send time, us ([`DIGITS`] digits).
    pub corrected: Histogram<u64>,
    /// Requests sent (paced runs; 0 in the closed loop).
    pub sent: u64,
    /// Requests ended (responses, read and write errors, timeouts).
    pub ended: u64,
    /// Of a Poisson plan: the chi-square of the sends per slot against
    /// their mean, and its degrees of freedom (0: not counted).
    pub arrival_chi2: f64,
    pub arrival_dof: u64,
}

impl Default for CoursePeriod {
    fn default() -> CoursePeriod {
        CoursePeriod {
            corrected: histogram(),
            sent: 0,
            ended: 0,
            arrival_chi2: 0.0,
            arrival_dof: 0,
        }
    }
}

impl CoursePeriod {
    /// Adds `other` (another thread's, machine's or neighbour's).
    pub fn merge(&mut self, other: &CoursePeriod) {
        // The histogram resizes to take any value.
        self.corrected.add(&other.corrected).expect("auto-resizing histogram");
        self.sent += other.sent;
        self.ended += other.ended;
        self.arrival_chi2 += other.arrival_chi2;
        self.arrival_dof += other.arrival_dof;
    }
}

impl stationarity::Period for CoursePeriod {
    fn measures(&self) -> Measures {
        Measures {
            latency_p50_us: value_at_percentile(&self.corrected, 50.0) as f64,
            sent: self.sent,
            ended: self.ended,
        }
    }
}

/// An empty histogram of a course's precision.
pub fn histogram() -> Histogram<u64> {
    let mut histogram =
        Histogram::new_with_bounds(1, 2, DIGITS).expect("one digit is a valid precision");
    histogram.auto(true);
    histogram
}

/// The periods of a run, in order from the start of its measured part.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Course {
    /// The length of a period (zero: no course was kept).
    pub period: Duration,
    pub periods: Vec<CoursePeriod>,
}

impl Course {
    /// Merges neighbours two by two: half the periods, twice as long.
    fn coarsen(&mut self) {
        let periods = std::mem::take(&mut self.periods);
        let mut pairs = periods.into_iter();
        while let Some(mut first) = pairs.next() {
            if let Some(second) = pairs.next() {
                first.merge(&second);
            }
            self.periods.push(first);
        }
        self.period *= 2;
    }

    /// Folds the periods that start at or after `end` into the last one
    /// that starts before it (the responses that came after the sends).
    fn end_at(&mut self, end: Duration) {
        let period_ns = self.period.as_nanos().max(1);
        let within = end.as_nanos().div_ceil(period_ns).max(1);
        let within = usize::try_from(within).unwrap_or(usize::MAX);
        while self.periods.len() > within {
            let last = self.periods.pop().expect("more than one period");
            self.periods.last_mut().expect("at least one period").merge(&last);
        }
    }
}

/// The running sums of one group of slots.
#[derive(Clone, Copy, Debug, Default)]
struct Group {
    /// The period and the second the group is of.
    key: (usize, u64),
    slots: u64,
    sends: u64,
    squares: u128,
}

impl Group {
    /// The group's chi-square against the slots' mean (None: fewer than
    /// two slots, or no sends, which say nothing).
    fn chi2(&self) -> Option<(f64, u64)> {
        if self.slots < 2 || self.sends == 0 {
            return None;
        }
        let (n, sum) = (self.slots as f64, self.sends as f64);
        let mean = sum / n;
        let spread = self.squares as f64 - sum * sum / n;
        Some((spread.max(0.0) / mean, self.slots - 1))
    }
}

/// Builds a run's course from the engine's periods, as they are complete.
pub struct CourseBuilder {
    course: Course,
    /// The engine's period, and how many of them make one of the course's.
    short: Duration,
    parts: u64,
    /// Whether the sends are counted in slots (a Poisson plan).
    arrivals: bool,
    /// Sends per slot not yet in a group.
    slots: SlotCounts,
    /// The first slot not yet in a group.
    next_slot: u64,
    group: Group,
}

impl CourseBuilder {
    /// The course of a run whose engine hands over every `short`, with
    /// periods of about `target` (a whole number of `short`); `arrivals`:
    /// the sends are counted in slots.
    pub fn new(short: Duration, target: Duration, arrivals: bool) -> CourseBuilder {
        let short_ns = short.as_nanos().max(1);
        let parts = ((target.as_nanos() + short_ns / 2) / short_ns).max(1);
        let parts = u64::try_from(parts).unwrap_or(u64::MAX);
        let period = short.saturating_mul(u32::try_from(parts).unwrap_or(u32::MAX));
        CourseBuilder {
            course: Course { period, periods: Vec::new() },
            short,
            parts,
            arrivals,
            slots: SlotCounts::default(),
            next_slot: 0,
            group: Group::default(),
        }
    }

    /// Takes the engine's next complete period (in order), and its sends
    /// per slot out of it.
    pub fn add(&mut self, interval: &mut Interval) {
        let stats = &mut interval.stats;
        if self.arrivals {
            self.slots.merge(&stats.sends);
            // Every thread handed this period over after its start: the
            // slots before the previous one are complete.
            let before = interval.start.saturating_sub(self.short);
            self.group_slots_before(slot_of(duration_ns(before)));
        }
        stats.sends.clear();
        let mut index = interval.index / self.parts;
        while index >= MAX_PERIODS as u64 {
            self.close_group();
            self.course.coarsen();
            self.parts = self.parts.saturating_mul(2);
            index = interval.index / self.parts;
        }
        let index = index as usize;
        if self.course.periods.len() <= index {
            self.course.periods.resize_with(index + 1, CoursePeriod::default);
        }
        let period = &mut self.course.periods[index];
        period.corrected.add(&stats.corrected).expect("auto-resizing histogram");
        period.sent += stationarity::sent(stats);
        period.ended += stationarity::ended(stats);
    }

    /// The course, the sends having ended `window` after the start: the
    /// slots after it (and the last one it cuts) are left out of the
    /// arrivals, the periods after it are folded into the last before it.
    pub fn finish(mut self, window: Duration) -> Course {
        if self.arrivals {
            self.group_slots_before(slot_of(duration_ns(window)));
            self.close_group();
        }
        self.course.end_at(window);
        // Whole microseconds, as the JSON gives it back.
        let period_us = u64::try_from(self.course.period.as_micros()).unwrap_or(u64::MAX);
        self.course.period = Duration::from_micros(period_us);
        self.course
    }

    /// Puts the slots from the first not yet grouped up to `end` into
    /// their groups.
    fn group_slots_before(&mut self, end: u64) {
        let period_ns = duration_ns(self.course.period).max(1);
        while self.next_slot < end {
            let slot = self.next_slot;
            let at_ns = slot.saturating_mul(SLOT_NS);
            let period = usize::try_from(at_ns / period_ns).unwrap_or(usize::MAX);
            let key = (period, slot / GROUP_SLOTS);
            if key != self.group.key {
                self.close_group();
                self.group.key = key;
            }
            let n = u64::from(self.slots.get(slot));
            self.group.slots += 1;
            self.group.sends += n;
            self.group.squares += u128::from(n) * u128::from(n);
            self.next_slot += 1;
        }
        self.slots.drop_before(end);
    }

    /// Adds the open group's chi-square to its period, and starts afresh.
    fn close_group(&mut self) {
        let group = std::mem::take(&mut self.group);
        let Some((chi2, dof)) = group.chi2() else { return };
        let (index, _) = group.key;
        // A period of the arrivals' after the last of the latencies' (or
        // before a coarsening) goes to the last there is.
        let periods = &mut self.course.periods;
        if periods.is_empty() {
            periods.push(CoursePeriod::default());
        }
        let last = periods.len() - 1;
        let period = &mut periods[index.min(last)];
        period.arrival_chi2 += chi2;
        period.arrival_dof += dof;
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Stats;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn periods_are_a_twentieth_of_the_run_within_bounds() {
        assert_eq!(period_for(Some(Duration::from_secs(5))), 250 * MS);
        assert_eq!(period_for(Some(Duration::from_secs(1))), 100 * MS);
        assert_eq!(period_for(Some(Duration::from_secs(3600))), Duration::from_secs(10));
        assert_eq!(period_for(None), Duration::from_secs(1));
    }

    #[test]
    fn slot_counts_add_up_in_any_order() {
        let mut a = SlotCounts::default();
        a.count(5, 2);
        a.count(7, 1);
        a.count(3, 4);
        assert_eq!((a.first, a.counts.clone()), (3, vec![4, 0, 2, 0, 1]));
        let mut b = SlotCounts::default();
        b.count(8, 1);
        b.merge(&a);
        assert_eq!((b.get(3), b.get(5), b.get(8), b.get(100)), (4, 2, 1, 0));
        b.drop_before(6);
        assert_eq!((b.get(5), b.get(7)), (0, 1));
        b.clear();
        assert_eq!(b, SlotCounts::default());
    }

    /// A period of the engine's: `sends[i]` sends in the i-th slot from
    /// `first_slot`, and `latency_us` for each.
    fn interval(index: u64, length: Duration, first_slot: u64, sends: &[u32]) -> Interval {
        let mut stats = Stats::new(3);
        for (at, &n) in sends.iter().enumerate() {
            if n > 0 {
                stats.sends.count(first_slot + at as u64, n);
            }
            for _ in 0..n {
                stats.lag.record(10).unwrap();
                stats.corrected.record(1000).unwrap();
                stats.requests += 1;
            }
        }
        let start = length * index as u32;
        Interval { index, start, length, stats }
    }

    fn course_of(counts: &[u32], arrivals: bool) -> Course {
        // Periods of 100 ms (ten slots), a course period of 200 ms.
        let mut builder = CourseBuilder::new(100 * MS, 200 * MS, arrivals);
        for (index, chunk) in counts.chunks(10).enumerate() {
            let mut i = interval(index as u64, 100 * MS, index as u64 * 10, chunk);
            builder.add(&mut i);
            assert!(i.stats.sends == SlotCounts::default(), "the sends are taken out");
        }
        builder.finish(100 * MS * (counts.len() as u32).div_ceil(10))
    }

    #[test]
    fn even_sends_have_no_dispersion_and_a_burst_a_large_one() {
        let even = course_of(&[3; 40], true);
        assert_eq!(even.period, 200 * MS);
        assert_eq!(even.periods.len(), 2);
        assert_eq!((even.periods[0].sent, even.periods[0].ended), (60, 60));
        assert_eq!(even.periods[0].arrival_dof, 19);
        assert_eq!(even.periods[0].arrival_chi2, 0.0);
        // Ten slots held, then all their sends at once.
        let mut held = [3; 40];
        held[5..15].fill(0);
        held[15] = 33;
        let course = course_of(&held, true);
        let first = &course.periods[0];
        // mean 3: ten empty slots (3 each) and one of 33 ((30^2)/3 = 300).
        assert_eq!((first.arrival_dof, first.arrival_chi2), (19, 330.0));
        assert_eq!(course.periods[1].arrival_chi2, 0.0);
        // Without arrivals counted, none are judged.
        assert_eq!(course_of(&held, false).periods[0].arrival_dof, 0);
    }

    #[test]
    fn slots_after_the_window_are_left_out() {
        let mut builder = CourseBuilder::new(100 * MS, 100 * MS, true);
        let mut first = interval(0, 100 * MS, 0, &[2; 10]);
        builder.add(&mut first);
        // The responses after the sends: a period without any.
        let mut drain = interval(1, 100 * MS, 10, &[0; 10]);
        builder.add(&mut drain);
        let course = builder.finish(100 * MS);
        assert_eq!(course.periods.len(), 1);
        assert_eq!((course.periods[0].arrival_dof, course.periods[0].arrival_chi2), (9, 0.0));
    }

    #[test]
    fn a_long_run_keeps_a_bounded_number_of_periods() {
        let mut builder = CourseBuilder::new(100 * MS, 100 * MS, false);
        for index in 0..(MAX_PERIODS as u64 * 2 + 3) {
            builder.add(&mut interval(index, 100 * MS, 0, &[1]));
        }
        let course = builder.finish(Duration::from_secs(100_000));
        // Coarsened twice: at 10,000 periods of 100 ms, then of 200 ms.
        assert_eq!(course.period, 400 * MS);
        assert_eq!(course.periods.len(), MAX_PERIODS / 2 + 1);
        assert_eq!(course.periods.iter().map(|p| p.sent).sum::<u64>(), 20_003);
        assert_eq!((course.periods[0].sent, course.periods[MAX_PERIODS / 2].sent), (4, 3));
    }
}
