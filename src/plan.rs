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
        let mut n = 0;
        let mut k = self.next_k;
        while self.start_ns + self.plan.offset_ns(k) < end_ns {
            n += 1;
            k += self.stride;
        }
        n
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
        let p = plan.for_thread(1, 2, 0);
        // Thread 1 owns k = 1, 3, 5, 7, 9 in the first 10 ms.
        assert_eq!(p.unsent_before(10_000_000), 5);
    }
}
