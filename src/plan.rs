//! Arrival plans: when the k-th request of the run is *intended* to be sent.
//!
//! The plan is global (one schedule for the whole run) and split over the
//! engine threads by striping: thread `i` of `T` owns the requests
//! `k = i, i + T, i + 2T, ...`, so the union of all threads is exactly the
//! global plan and no thread starts with a burst (wrk2 gives every
//! connection its own schedule, which makes the server see bursts).
//! Latency is measured from these intended times, so a stalled server or a
//! busy generator can never hide behind the wait (coordinated omission).

/// The global schedule: constant rate, `rate` requests per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Nanoseconds between consecutive requests of the global plan.
    interval_ns: f64,
}

impl Plan {
    pub fn constant(rate: f64) -> Plan {
        Plan { interval_ns: 1e9 / rate }
    }

    /// Offset of the global request `k` from the start of the run, in ns.
    /// Computed from `k` each time (never accumulated), so it cannot drift.
    pub fn offset_ns(&self, k: u64) -> u64 {
        (k as f64 * self.interval_ns) as u64
    }

    /// How many requests of the global plan are due in the first `ns` of
    /// the run (those with `offset_ns(k) < ns`), in closed form: any rate
    /// and any length take the same few operations.
    pub fn count_before(&self, ns: u64) -> u64 {
        // The float estimate is within one of the answer; settle it on the
        // exact offsets.
        let mut count = (ns as f64 / self.interval_ns).ceil() as u64;
        while count > 0 && self.offset_ns(count - 1) >= ns {
            count -= 1;
        }
        while self.offset_ns(count) < ns {
            count += 1;
        }
        count
    }

    /// The share of this plan owned by thread `thread` of `threads`.
    pub fn for_thread(&self, thread: usize, threads: usize, start_ns: u64) -> ThreadPlan {
        ThreadPlan { plan: *self, start_ns, next_k: thread as u64, stride: threads as u64 }
    }
}

/// One thread's requests of the global plan, consumed in order.
#[derive(Clone, Copy, Debug)]
pub struct ThreadPlan {
    plan: Plan,
    start_ns: u64,
    /// Global index of the next request this thread has not sent yet.
    next_k: u64,
    stride: u64,
}

impl ThreadPlan {
    /// Intended send time (monotonic ns) of the next unsent request.
    #[inline]
    pub fn next_due_ns(&self) -> u64 {
        self.start_ns + self.plan.offset_ns(self.next_k)
    }

    /// Marks the next request as sent (or given up).
    #[inline]
    pub fn advance(&mut self) {
        self.next_k += self.stride;
    }

    /// Requests of this thread due before `end_ns` that have not been sent.
    pub fn unsent_before(&self, end_ns: u64) -> u64 {
        let due = self.plan.count_before(end_ns.saturating_sub(self.start_ns));
        due.saturating_sub(self.next_k).div_ceil(self.stride)
    }

    /// Intended send time (monotonic ns) of the thread's `i`-th request
    /// from the next unsent one on (0 is the next one).
    pub fn due_ns_after(&self, i: u64) -> u64 {
        self.start_ns + self.plan.offset_ns(self.next_k + i * self.stride)
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
