//! Arrival plans: when the k-th request of the run is *intended* to be sent.
//!
//! The plan is global (one schedule for the whole run) and split over the
//! engine threads by striping: thread `i` of `T` owns the requests
//! `k = i, i + T, i + 2T, ...`, so the union of all threads is exactly the
//! global plan and no thread starts with a burst (wrk2 gives every
//! connection its own schedule, which makes the server see bursts).
//! Instances that share one plan (`--shard s/N`) stripe it first: shard s
//! owns k = s, s + N, ..., and its threads stripe that.
//! Latency is measured from these intended times, so a stalled server or a
//! busy generator can never hide behind the wait (coordinated omission).
//!
//! A plan is a rate over time ([`RateCurve`]: constant, or stages that
//! ramp) and how requests fall within it: evenly, or as a Poisson process
//! (random arrivals, as real users make, from a seeded process anyone can
//! repeat). Request k is due when the integral of the rate reaches the
//! k-th arrival of a unit-rate process (k itself when even): a closed form,
//! so no intended time drifts, and counting the requests due before any
//! time takes the same few operations at any rate.

mod poisson;
pub mod random;
mod rate;

use std::time::Duration;

use poisson::{Cursor, PoissonProcess};
pub use rate::RateCurve;

/// How requests fall within the planned rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly spaced (wrk2's plan).
    Constant,
    /// A Poisson process: independent, exponential gaps with mean 1/rate.
    Poisson,
}

/// One stage of `--stages`: the rate moves to `rate` over `duration`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub rate: f64,
}

/// The plan as the command line describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanSpec {
    /// The rate at the start (`-R`; with stages, where the first starts
    /// from, 0 without `-R`), requests per second.
    pub rate: f64,
    /// `--stages`; empty for a constant rate.
    pub stages: Vec<Stage>,
    pub arrival: Arrival,
}

impl PlanSpec {
    /// A constant rate, evenly spaced, no warm-up.
    pub fn constant(rate: f64) -> PlanSpec {
        PlanSpec { rate, stages: Vec::new(), arrival: Arrival::Constant }
    }

    /// The rate over the run from time 0: a warm-up of `warmup` at the
    /// starting rate (the plan's first part, sent but not counted), then
    /// the stages, or the constant rate.
    pub fn curve(&self, warmup: Duration) -> RateCurve {
        if self.stages.is_empty() {
            return RateCurve::Constant(self.rate);
        }
        let stages: Vec<(f64, f64)> =
            self.stages.iter().map(|s| (s.duration.as_secs_f64(), s.rate)).collect();
        RateCurve::stages(self.rate, warmup.as_secs_f64(), &stages)
    }

    /// The intended times of the requests, after a warm-up of `warmup`;
    /// `seed` seeds random arrivals.
    pub fn plan(&self, warmup: Duration, seed: u64) -> Plan {
        let curve = self.curve(warmup);
        let arrivals = match self.arrival {
            // A plan that starts at rate 0 sends its first request when
            // one request's worth has accumulated, not at once.
            Arrival::Constant => Arrivals::Even { first: u64::from(curve.starting_rate() <= 0.0) },
            Arrival::Poisson => Arrivals::Poisson(PoissonProcess::new(seed)),
        };
        Plan { curve, arrivals }
    }

    /// The requests per second the plan (after a warm-up of `warmup`)
    /// wants on average from `from` to `to` (times from its start).
    pub fn mean_rate(&self, warmup: Duration, from: Duration, to: Duration) -> f64 {
        let curve = self.curve(warmup);
        let seconds = (to.saturating_sub(from)).as_secs_f64();
        if seconds <= 0.0 {
            return curve.starting_rate();
        }
        (curve.units_at(to.as_secs_f64()) - curve.units_at(from.as_secs_f64())) / seconds
    }
}

/// Where the requests fall in the integral of the rate.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Arrivals {
    /// Request k when `k + first` requests' worth was wanted.
    Even { first: u64 },
    /// Request k at the k-th arrival of a unit-rate Poisson process.
    Poisson(PoissonProcess),
}

/// The global schedule: the intended time of every request.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    curve: RateCurve,
    arrivals: Arrivals,
}

impl Plan {
    /// Evenly spaced requests at a constant `rate`.
    #[cfg(test)]
    pub fn constant(rate: f64) -> Plan {
        PlanSpec::constant(rate).plan(Duration::ZERO, 0)
    }

    /// The offset (ns from the start) of the request at unit time `units`;
    /// `u64::MAX` past the end of the plan.
    fn offset_of_units(&self, units: f64) -> u64 {
        match &self.curve {
            // As k / rate, but with the multiplication last: at rate 3 the
            // millionth request is due at exactly 1e15 ns.
            RateCurve::Constant(rate) => (units * (1e9 / rate)) as u64,
            curve => curve.time_of(units).map_or(u64::MAX, |seconds| (seconds * 1e9) as u64),
        }
    }

    /// Offset of the global request `k` from the start of the run, in ns
    /// (`u64::MAX` for a request past the end of the plan). Computed from
    /// `k` each time (never accumulated), so it cannot drift.
    pub fn offset_ns(&self, k: u64) -> u64 {
        match &self.arrivals {
            Arrivals::Even { first } => self.offset_of_units((k + first) as f64),
            Arrivals::Poisson(process) => self.offset_of_units(process.arrival(k)),
        }
    }

    /// How many requests of the global plan are due in the first `ns` of
    /// the run (those with `offset_ns(k) < ns`), in closed form: any rate
    /// and any length take the same few operations.
    pub fn count_before(&self, ns: u64) -> u64 {
        let units = self.curve.units_at(ns as f64 / 1e9);
        let mut count = match &self.arrivals {
            Arrivals::Even { first } => (units.ceil() as u64).saturating_sub(*first),
            Arrivals::Poisson(process) => process.count_before(units),
        };
        // The float estimate is within one of the answer; settle it on the
        // exact offsets.
        while count > 0 && self.offset_ns(count - 1) >= ns {
            count -= 1;
        }
        while self.offset_ns(count) < ns {
            count += 1;
        }
        count
    }

    /// The share of this plan owned by thread `thread` of `threads`.
    #[cfg(test)]
    pub fn for_thread(&self, thread: usize, threads: usize, start_ns: u64) -> ThreadPlan {
        self.share(thread as u64, threads as u64, start_ns)
    }

    /// The requests `first, first + stride, ...` of this plan, which
    /// starts at `start_ns`: a thread's share, or a thread's of a shard's
    /// (shard s of N, thread t of T: first s + N·t, stride N·T).
    pub fn share(&self, first: u64, stride: u64, start_ns: u64) -> ThreadPlan {
        ThreadPlan::new(self.clone(), start_ns, first, stride)
    }
}

/// One thread's requests of the global plan, consumed in order.
#[derive(Clone, Debug)]
pub struct ThreadPlan {
    plan: Plan,
    start_ns: u64,
    /// Global index of the next request this thread has not sent yet.
    next_k: u64,
    stride: u64,
    /// Its intended send time (monotonic ns), kept: it is asked often.
    next_due_ns: u64,
    /// Reads a Poisson plan's arrivals in order, cheaply.
    cursor: Option<Box<Cursor>>,
}

impl ThreadPlan {
    fn new(plan: Plan, start_ns: u64, first: u64, stride: u64) -> ThreadPlan {
        let cursor = match plan.arrivals {
            Arrivals::Poisson(process) => Some(Box::new(Cursor::new(process))),
            Arrivals::Even { .. } => None,
        };
        let mut share =
            ThreadPlan { plan, start_ns, next_k: first, stride, next_due_ns: 0, cursor };
        share.next_due_ns = share.due_ns_of(first);
        share
    }

    /// The intended time (monotonic ns) of global request `k`.
    fn due_ns_of(&mut self, k: u64) -> u64 {
        let offset = match &mut self.cursor {
            Some(cursor) => self.plan.offset_of_units(cursor.arrival(k)),
            None => self.plan.offset_ns(k),
        };
        self.start_ns.saturating_add(offset)
    }

    /// Intended send time (monotonic ns) of the next unsent request
    /// (`u64::MAX` once the plan is over).
    #[inline]
    pub fn next_due_ns(&self) -> u64 {
        self.next_due_ns
    }

    /// Marks the next request as sent (or given up).
    #[inline]
    pub fn advance(&mut self) {
        self.next_k += self.stride;
        self.next_due_ns = self.due_ns_of(self.next_k);
    }

    /// Passes over the next `n` requests (given up, never sent) at once,
    /// however many they are.
    pub fn skip(&mut self, n: u64) {
        if n > 0 {
            self.next_k = self.next_k.saturating_add(n.saturating_mul(self.stride));
            self.next_due_ns = self.due_ns_of(self.next_k);
        }
    }

    /// Requests of this thread due before `end_ns` that have not been sent.
    pub fn unsent_before(&self, end_ns: u64) -> u64 {
        let due = self.plan.count_before(end_ns.saturating_sub(self.start_ns));
        due.saturating_sub(self.next_k).div_ceil(self.stride)
    }

    /// Intended send time (monotonic ns) of the thread's `i`-th request
    /// from the next unsent one on (0 is the next one).
    pub fn due_ns_after(&self, i: u64) -> u64 {
        self.start_ns.saturating_add(self.plan.offset_ns(self.next_k + i * self.stride))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_stripe_the_global_plan() {
        let plan = Plan::constant(1000.0);
        let mut all = Vec::new();
        for t in 0..3 {
            let mut p = plan.for_thread(t, 3, 5_000);
            for _ in 0..4 {
                all.push(p.next_due_ns());
                p.advance();
            }
        }
        all.sort_unstable();
        let expected: Vec<u64> = (0..12).map(|k| 5_000 + k * 1_000_000).collect();
        assert_eq!(all, expected);
    }

    /// A plan (no warm-up) of a starting rate, stages (ms, rate) and
    /// arrivals.
    fn plan(rate: f64, stages: &[(u64, f64)], arrival: Arrival, seed: u64) -> Plan {
        spec(rate, stages, arrival).plan(Duration::ZERO, seed)
    }

    fn spec(rate: f64, stages: &[(u64, f64)], arrival: Arrival) -> PlanSpec {
        let stages =
            stages.iter().map(|&(ms, rate)| Stage { duration: Duration::from_millis(ms), rate });
        PlanSpec { rate, stages: stages.collect(), arrival }
    }

    /// The first `n` intended times of the global plan, and the same taken
    /// by `threads` threads striping it, sorted.
    fn global_and_striped(plan: &Plan, threads: usize, n: usize) -> (Vec<u64>, Vec<u64>) {
        let global: Vec<u64> = (0..n as u64).map(|k| plan.offset_ns(k)).collect();
        let mut striped = Vec::new();
        for t in 0..threads {
            let mut share = plan.for_thread(t, threads, 0);
            for _ in 0..n.div_ceil(threads) {
                striped.push(share.next_due_ns());
                share.advance();
            }
        }
        striped.sort_unstable();
        striped.truncate(n);
        (global, striped)
    }

    #[test]
    fn every_plan_is_striped_exactly() {
        for plan in [
            plan(1000.0, &[], Arrival::Poisson, 11),
            plan(0.0, &[(500, 3000.0), (500, 3000.0)], Arrival::Constant, 0),
            plan(100.0, &[(300, 4000.0), (700, 500.0)], Arrival::Poisson, 5),
        ] {
            let (global, striped) = global_and_striped(&plan, 3, 2_000);
            assert!(global.windows(2).all(|w| w[0] <= w[1]), "{plan:?}");
            assert_eq!(striped, global, "{plan:?}");
        }
    }

    #[test]
    fn poisson_plans_repeat_with_their_seed_and_have_exponential_gaps() {
        let (again, other) =
            (plan(2000.0, &[], Arrival::Poisson, 123), plan(2000.0, &[], Arrival::Poisson, 124));
        let plan = plan(2000.0, &[], Arrival::Poisson, 123);
        assert_eq!(plan.offset_ns(777), again.offset_ns(777));
        assert_ne!(plan.offset_ns(777), other.offset_ns(777));
        let n = 100_000u64;
        let mut gaps: Vec<f64> =
            (1..n).map(|k| (plan.offset_ns(k) - plan.offset_ns(k - 1)) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean / 500_000.0 - 1.0).abs() < 0.02, "mean gap {mean} ns");
        gaps.sort_by(f64::total_cmp);
        let median = gaps[gaps.len() / 2] / mean;
        assert!((median - std::f64::consts::LN_2).abs() < 0.02, "median / mean {median}");
        // The count before a time agrees with the offsets.
        for ns in [1_000_000, 7_777_777, 49_000_000] {
            let count = plan.count_before(ns);
            assert!(plan.offset_ns(count - 1) < ns && plan.offset_ns(count) >= ns);
        }
    }

    #[test]
    fn stages_edge_cases() {
        // A ramp from 0: the first request when one request's worth has
        // accumulated (0.5 * 10/s^2 * t^2 = 1: t = 447 ms), not at once.
        let plan = self::plan(0.0, &[(1000, 10.0)], Arrival::Constant, 0);
        assert_eq!(plan.offset_ns(0), 447_213_595);
        // 5 requests' worth in the second, and the plan ends with it.
        assert_eq!(plan.count_before(1_000_000_000), 4);
        assert_eq!(plan.offset_ns(4), 1_000_000_000);
        assert_eq!(plan.offset_ns(5), u64::MAX);
        // One constant stage is a constant rate, from time 0.
        let plan = self::plan(200.0, &[(2000, 200.0)], Arrival::Constant, 0);
        assert_eq!((plan.offset_ns(0), plan.offset_ns(1)), (0, 5_000_000));
        assert_eq!(plan.count_before(2_000_000_000), 400);
        // Fractions of a request per second, and a stage at zero.
        let stages = [(4000, 0.5), (3000, 0.0), (4000, 0.5)];
        let plan = self::plan(0.5, &stages, Arrival::Constant, 0);
        let offsets: Vec<u64> = (0..4).map(|k| plan.offset_ns(k)).collect();
        assert_eq!(offsets[..3], [0, 2_000_000_000, 4_000_000_000]);
        // Nothing during the zero stage: the next comes 2 s into the last.
        assert_eq!(offsets[3], 9_000_000_000);
    }

    #[test]
    fn the_mean_rate_is_over_the_measured_window() {
        let spec = spec(100.0, &[(2000, 300.0)], Arrival::Constant);
        let second = Duration::from_secs(1);
        let measured = spec.mean_rate(second, second, Duration::from_secs(3));
        assert!((measured - 200.0).abs() < 1e-9, "{measured}");
        let constant = PlanSpec::constant(42.0);
        assert_eq!(constant.mean_rate(second, Duration::ZERO, Duration::from_secs(5)), 42.0);
    }

    #[test]
    fn fractional_rates_and_no_drift() {
        let plan = Plan::constant(0.5);
        assert_eq!(plan.offset_ns(3), 6_000_000_000);
        let plan = Plan::constant(3.0);
        // 1e9/3 is not exact, but the millionth request is still on time.
        assert_eq!(plan.offset_ns(3_000_000), 1_000_000_000_000_000);
    }

    #[test]
    fn counts_unsent_requests() {
        let plan = Plan::constant(1000.0);
        let mut p = plan.for_thread(1, 2, 0);
        // Thread 1 owns k = 1, 3, 5, 7, 9 in the first 10 ms.
        assert_eq!(p.unsent_before(10_000_000), 5);
        assert_eq!(p.unsent_before(9_000_000), 4);
        assert_eq!(p.unsent_before(9_000_001), 5);
        p.advance();
        assert_eq!(p.unsent_before(10_000_000), 4);
        assert_eq!(p.due_ns_after(0), 3_000_000);
        assert_eq!(p.due_ns_after(2), 7_000_000);
        assert_eq!(p.unsent_before(0), 0);
        // Skipping passes over requests as advancing one by one does.
        let mut skipped = plan.for_thread(1, 2, 0);
        let mut advanced = plan.for_thread(1, 2, 0);
        skipped.skip(3);
        (0..3).for_each(|_| advanced.advance());
        assert_eq!(skipped.next_due_ns(), advanced.next_due_ns());
        assert_eq!(skipped.unsent_before(10_000_000), advanced.unsent_before(10_000_000));
    }

    #[test]
    fn counts_match_the_offsets_at_any_rate() {
        for rate in [0.5, 3.0, 7.0, 1000.0, 333_333.3, 1e9, 1e12] {
            let plan = Plan::constant(rate);
            for ns in [0, 1, 999, 1_000_000, 123_456_789, 10_000_000_000, 3_600_000_000_000] {
                let count = plan.count_before(ns);
                assert!(count == 0 || plan.offset_ns(count - 1) < ns, "{rate} {ns}");
                assert!(plan.offset_ns(count) >= ns, "{rate} {ns}");
            }
        }
        // A trillion requests per second for an hour, counted at once.
        assert_eq!(Plan::constant(1e12).count_before(3_600_000_000_000), 3_600_000_000_000_000);
    }
}
