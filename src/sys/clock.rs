//! The clocks: the monotonic clock every timestamp in pace uses, its
//! conversion to and from the wall clock, a thread's CPU time and its
//! wait for a CPU, and the timer slack of paced waits.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Nanoseconds on the monotonic clock. Every timestamp in pace (intended,
/// sent, completed) uses this clock. Its zero lies an hour before the
/// first call (or at boot, if that is later), so that a plan start set in
/// the recent past (`--start-at`) is still a time on it.
///
/// Read a few times per request, so read plainly: the vDSO's clock and
/// integer nanoseconds, without `Instant`'s checked arithmetic.
#[inline]
pub fn now_ns() -> u64 {
    static BASE: OnceLock<u64> = OnceLock::new();
    let now = clock_ns(rustix::time::ClockId::Monotonic);
    let base = *BASE.get_or_init(|| now.saturating_sub(3_600_000_000_000));
    now.saturating_sub(base)
}

/// `clock`'s time in nanoseconds.
fn clock_ns(clock: rustix::time::ClockId) -> u64 {
    let t = rustix::time::clock_gettime(clock);
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
}

/// The wall-clock time of `ns` on [`now_ns`]'s clock.
pub fn wall_clock_of(ns: u64) -> SystemTime {
    let (now, wall) = (now_ns(), SystemTime::now());
    if ns <= now {
        wall.checked_sub(Duration::from_nanos(now - ns)).unwrap_or(UNIX_EPOCH)
    } else {
        wall + Duration::from_nanos(ns - now)
    }
}

/// CPU time the calling thread has used, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(rustix::time::ClockId::ThreadCPUTime)
}

/// How long the calling thread has been ready to run but waiting for a
/// CPU, in nanoseconds (the run-queue delay of `/proc/thread-self/schedstat`;
/// None where the kernel does not keep it). A VM host's steal time is not
/// in it.
pub fn thread_cpu_wait_ns() -> Option<u64> {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

/// Lets the kernel fire this thread's timers as close to their deadline as
/// it can (the default slack is 50 us, which would show up in every paced
/// send).
pub fn set_minimal_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects
    // the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Converts wall-clock stamps (ns since the epoch, as the kernel's receive
/// timestamps are) to this process's monotonic [`now_ns`] scale.
///
/// The offset between the two clocks is measured with care (the read of
/// the wall clock bracketed by two monotonic reads, best of a few tries,
/// so that a preemption between the reads cannot skew it) and kept until
/// [`WallClock::calibrate`] is called again; it only drifts by NTP's slew.
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    /// Wall-clock ns minus monotonic ns.
    offset: i128,
}

impl WallClock {
    pub fn calibrate() -> WallClock {
        let mut best = (u64::MAX, 0i128);
        for _ in 0..5 {
            let before = now_ns();
            let wall = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i128);
            let after = now_ns();
            let spread = after - before;
            if spread < best.0 {
                let middle = (before + spread / 2) as i128;
                best = (spread, wall - middle);
            }
        }
        WallClock { offset: best.1 }
    }

    /// A wall-clock stamp on the monotonic scale, never later than the
    /// present (a calibration error or a step of the wall clock could say
    /// otherwise). `passed` is a time known to be past: the clock (`now`)
    /// is read only for a stamp later than that, which is rare when
    /// `passed` is when the thread learned that data had arrived.
    pub fn to_now_ns(self, wall_ns: u64, passed: u64, now: impl FnOnce() -> u64) -> u64 {
        let mono = (wall_ns as i128 - self.offset).clamp(0, u64::MAX as i128) as u64;
        if mono <= passed {
            mono
        } else {
            mono.min(now())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn thread_cpu_time_counts_work_not_sleep() {
        let _timing = crate::timing::lock();
        let before = thread_cpu_ns();
        std::thread::sleep(Duration::from_millis(20));
        let slept = thread_cpu_ns() - before;
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        let spun = thread_cpu_ns() - before - slept;
        assert!(slept < 10_000_000, "{slept} ns of CPU for a 20 ms sleep");
        assert!(spun > 1_000_000, "{spun} ns of CPU for a 20 ms spin");
    }

    #[test]
    fn cpu_wait_counts_time_runnable_without_the_cpu() {
        let _timing = crate::timing::lock();
        if thread_cpu_wait_ns().is_none() {
            return; // a kernel without schedstats: nothing to read
        }
        // Two threads spin 40 ms on one CPU: each waits while the other
        // runs.
        // SAFETY: sched_getcpu takes no arguments.
        let cpu = unsafe { libc::sched_getcpu() } as usize;
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let spinners: Vec<_> = (0..2)
            .map(|_| {
                let start = start.clone();
                std::thread::spawn(move || {
                    // SAFETY: a zeroed cpu_set_t is an empty set; the call
                    // reads `set` and pins only the calling thread.
                    let pinned = unsafe {
                        let mut set: libc::cpu_set_t = std::mem::zeroed();
                        libc::CPU_SET(cpu, &mut set);
                        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0
                    };
                    start.wait();
                    let before = thread_cpu_wait_ns().unwrap();
                    let started = Instant::now();
                    while started.elapsed() < Duration::from_millis(40) {
                        std::hint::spin_loop();
                    }
                    pinned.then(|| thread_cpu_wait_ns().unwrap() - before)
                })
            })
            .collect();
        let waits: Option<Vec<u64>> =
            spinners.into_iter().map(|spinner| spinner.join().unwrap()).collect();
        // Where threads may not be pinned, they need not share a CPU.
        let Some(waits) = waits else { return };
        let waited: u64 = waits.iter().sum();
        assert!(waited > 10_000_000, "{waited} ns waiting for a shared CPU");
    }

    #[test]
    fn clock_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }

    #[test]
    fn a_stamp_is_converted_without_a_clock_read_unless_it_is_later_than_known() {
        let clock = WallClock { offset: 1_000 };
        let unread = || panic!("the clock was read for a stamp known to be past");
        assert_eq!(clock.to_now_ns(5_000, 4_000, unread), 4_000);
        assert_eq!(clock.to_now_ns(500, 4_000, unread), 0);
        // Later than what is known to be past: never later than the present.
        assert_eq!(clock.to_now_ns(9_000, 4_000, || 6_000), 6_000);
        assert_eq!(clock.to_now_ns(9_000, 4_000, || 9_000), 8_000);
    }
}
