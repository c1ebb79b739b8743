//! How an engine thread waits between two turns of its loop: on the clock
//! (sleeping or spinning) or on socket events.
//!
//! Every wake-up from idle costs about 20 us of CPU on these VMs, so paced
//! mode wakes once per send, not once per response: it sleeps on the clock
//! until the next intended send time and collects the responses that
//! arrived meanwhile when it wakes. Their completion times are the kernel's
//! receive stamps, so their latencies are the same as if they had been
//! read at once. It waits on socket events instead only when that is what
//! it is waiting for:
//! - a request is overdue and no connection is ready: the next response
//!   frees one;
//! - a large response is half received: TCP flow control would hold the
//!   rest of it (and its arrival stamp) back until the thread reads;
//! - a request of a run over several origins waits apart for a connection
//!   to its origin (the plan went on without it): the response that frees
//!   one should send it at once, not at the next intended send.
//!
//! A clock wait shorter than a wake-up costs is spun instead: cheaper, and
//! on time. The closed loop always waits on events: responses are what it
//! is waiting for.
//!
//! A wait on events spins a while before it blocks, for the same reason:
//! a blocked thread is woken tens of microseconds after its response
//! arrived, and with one connection that delay is in every round trip
//! (measured against nginx on another core: 16,000 requests/s blocking,
//! 35,000 spinning through its 25-30 us round trip). How long to spin is
//! learned ([`EventSpin`]): about as long as recent events took to come,
//! and not at all when they come later than a spin is worth, or when so
//! many requests are in flight that the server is busy meanwhile anyway.
//!
//! A sleep ends late: on these VMs by 35 to 40 us, steadily. That lateness
//! would be in every schedule lag and every corrected latency, so a paced
//! thread learns it ([`Lateness`]: a low percentile of its recent sleeps'
//! lateness), sleeps that much less and spins the rest: the spin covers
//! the lateness's variation, not the lateness itself.

use std::time::Duration;

/// Longest wait without looking at the stop flag and the run's clock.
const MAX_WAIT_NS: u64 = 50_000_000;
/// Clock waits shorter than this are spun: about what a sleep and its
/// wake-up cost in CPU on these VMs.
const SPIN_BELOW_NS: u64 = 20_000;
/// How many recent sleeps or event waits a thread learns from.
const WINDOW: usize = 64;
/// Which sleep's lateness it wakes early by: the 10th percentile.
const LATENESS_RANK: usize = WINDOW / 10;
/// Longest spin on socket events before blocking: a few wake-ups' worth.
/// Waits that usually take longer block at once.
const MAX_EVENT_SPIN_NS: u64 = 100_000;
/// Most requests in flight at which a thread spins on events (see
/// [`EventSpin::spin`]).
const MAX_IN_FLIGHT_TO_SPIN: u64 = 2;
/// Waking earlier than this would turn a slow machine's sleep into a spin.
const MAX_EARLY_NS: u64 = 1_000_000;

/// What the thread knows when it is about to wait.
#[derive(Clone, Copy, Debug)]
pub struct Outlook {
    pub now: u64,
    /// The next time something other than a send needs the thread: the end
    /// of the run, a rate sample, a period hand-over, a timeout scan.
    pub deadline: u64,
    /// When the schedule next wants to send (see
    /// [`super::schedule::Schedule::next_send_at`]).
    pub next_send: Option<u64>,
    /// The plan sets the send times.
    pub paced: bool,
    /// A connection is ready for the plan's next request.
    pub connection_ready: bool,
    /// A large response is half received on some connection.
    pub receiving_large_response: bool,
    /// A due request waits apart for a connection to its origin.
    pub waiting_for_origin: bool,
}

/// How to wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Spin on the clock until `until`, then collect what arrived.
    Spin { until: u64 },
    /// Sleep on the clock until `wake`, spin until `until` (responses do
    /// not wake the thread), then collect what arrived.
    Sleep { wake: u64, until: u64 },
    /// Block on socket events until one arrives or `until`.
    Events { until: u64 },
}

/// The last [`WINDOW`] durations of something, handed over whole each
/// time the window fills.
#[derive(Clone, Debug)]
struct Recent {
    samples: [u64; WINDOW],
    seen: usize,
}

impl Default for Recent {
    fn default() -> Recent {
        Recent { samples: [0; WINDOW], seen: 0 }
    }
}

impl Recent {
    /// Keeps `ns`; returns the window when this sample filled it.
    fn push(&mut self, ns: u64) -> Option<[u64; WINDOW]> {
        self.samples[self.seen % WINDOW] = ns;
        self.seen += 1;
        self.seen.is_multiple_of(WINDOW).then_some(self.samples)
    }
}

/// The `rank`-th smallest of `window`.
fn nth_smallest(mut window: [u64; WINDOW], rank: usize) -> u64 {
    *window.select_nth_unstable(rank).1
}

/// How late a paced thread's sleeps end, learned from the last ones.
#[derive(Clone, Debug, Default)]
pub struct Lateness {
    recent: Recent,
    /// How much earlier than a send the thread wakes.
    early_ns: u64,
}

impl Lateness {
    pub fn early_ns(&self) -> u64 {
        self.early_ns
    }

    /// A sleep ended `late_ns` after it was meant to; every window of
    /// sleeps sets the early wake-up to their 10th percentile.
    pub fn observe(&mut self, late_ns: u64) {
        if let Some(window) = self.recent.push(late_ns) {
            self.early_ns = nth_smallest(window, LATENESS_RANK).min(MAX_EARLY_NS);
        }
    }
}

/// How long a thread spins on socket events before it blocks, learned
/// from how soon the first event came in its last waits (those that had
/// to wait at all). It starts by spinning the most, to find out.
#[derive(Clone, Debug)]
pub struct EventSpin {
    recent: Recent,
    spin_ns: u64,
}

impl Default for EventSpin {
    fn default() -> EventSpin {
        EventSpin { recent: Recent::default(), spin_ns: MAX_EVENT_SPIN_NS }
    }
}

impl EventSpin {
    /// How long to spin on events, given whether at most so many requests
    /// are unanswered; None: just block. It spins only with one or two:
    /// then the server has nothing else to do while pace wakes up, and the
    /// spin buys round trips (against nginx on another core, -c2 went from
    /// 39,000 to 87,000 requests/s, with less CPU per request). With more
    /// in flight the server works on the others meanwhile, and spinning
    /// costs more CPU than the wake-ups it saves (-c50: 18% more per
    /// request for 12% more requests/s).
    pub fn spin(&self, in_flight_at_most: impl FnOnce(u64) -> bool) -> Option<Duration> {
        in_flight_at_most(MAX_IN_FLIGHT_TO_SPIN).then_some(Duration::from_nanos(self.spin_ns))
    }

    /// A wait's first event came `after` it began. Every window of waits
    /// sets the spin to a quarter more than their 90th percentile, at most
    /// [`MAX_EVENT_SPIN_NS`], or to none when most of them took longer
    /// than that: blocking is then cheaper. (A blocked wait's duration
    /// includes the wake-up, so waits just under the limit while blocking
    /// still read as over it: the spin resumes only when they are clearly
    /// shorter.)
    pub fn observe(&mut self, after: Duration) {
        let ns = after.as_nanos().min(u64::MAX as u128) as u64;
        if let Some(window) = self.recent.push(ns) {
            let median = nth_smallest(window, WINDOW / 2);
            let p90 = nth_smallest(window, WINDOW * 9 / 10);
            self.spin_ns = if median > MAX_EVENT_SPIN_NS {
                0
            } else {
                p90.saturating_add(p90 / 4).min(MAX_EVENT_SPIN_NS)
            };
        }
    }
}

/// Chooses the wait for an [`Outlook`], waking `early_ns` before a send
/// (see [`Lateness`]).
pub fn choose(outlook: &Outlook, early_ns: u64) -> Wait {
    let Outlook { now, deadline, next_send, .. } = *outlook;
    let limit = deadline.min(now.saturating_add(MAX_WAIT_NS));
    let until_send = next_send.map_or(limit, |at| at.min(limit));
    if !outlook.paced {
        return Wait::Events { until: until_send };
    }
    let send_is_ahead = next_send.is_none_or(|at| at > now);
    if outlook.receiving_large_response || outlook.waiting_for_origin {
        // Read promptly, but still wake for the next send (a request of
        // several origins parks then if its origin has no connection; one
        // that is overdue and was not parked waits for a response too).
        let wakes_to_send =
            outlook.connection_ready || (outlook.waiting_for_origin && send_is_ahead);
        let until = if wakes_to_send { until_send } else { limit };
        return Wait::Events { until };
    }
    if send_is_ahead || outlook.connection_ready {
        // Early only for a send: housekeeping deadlines need no precision.
        let early = if next_send == Some(until_send) { early_ns } else { 0 };
        return if until_send.saturating_sub(now) < early + SPIN_BELOW_NS {
            Wait::Spin { until: until_send }
        } else {
            Wait::Sleep { wake: until_send - early, until: until_send }
        };
    }
    // Overdue with every connection busy: the next response frees one.
    Wait::Events { until: limit }
}

/// Waiting on socket events alone, until `until` (or the stop check).
pub fn events_until(now: u64, until: u64) -> Duration {
    Duration::from_nanos(until.min(now.saturating_add(MAX_WAIT_NS)).saturating_sub(now))
}

impl Wait {
    /// Spends the clock part of the wait, learning how late sleeps end and
    /// adding the time it spun to `spun_ns`; returns how long to then block
    /// on socket events (zero after a clock wait: just collect).
    pub fn on_the_clock(
        self,
        clock: impl Fn() -> u64,
        lateness: &mut Lateness,
        spun_ns: &mut u64,
    ) -> Duration {
        let mut spin = |until| {
            let started = clock();
            let mut now = started;
            while now < until {
                std::hint::spin_loop();
                now = clock();
            }
            *spun_ns += now - started;
        };
        match self {
            Wait::Spin { until } => {
                spin(until);
                Duration::ZERO
            }
            Wait::Sleep { wake, until } => {
                std::thread::sleep(Duration::from_nanos(wake.saturating_sub(clock())));
                lateness.observe(clock().saturating_sub(wake));
                spin(until);
                Duration::ZERO
            }
            Wait::Events { until } => Duration::from_nanos(until.saturating_sub(clock())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    /// A paced thread at `now` = 10 ms with nothing special going on.
    fn paced(next_send: u64) -> Outlook {
        Outlook {
            now: 10 * MS,
            deadline: 100 * MS,
            next_send: Some(next_send),
            paced: true,
            connection_ready: true,
            receiving_large_response: false,
            waiting_for_origin: false,
        }
    }

    #[test]
    fn paced_sleeps_on_the_clock_until_the_next_send() {
        assert_eq!(choose(&paced(11 * MS), 0), Wait::Sleep { wake: 11 * MS, until: 11 * MS });
        // Even with every connection busy: responses wait in the sockets.
        let busy = Outlook { connection_ready: false, ..paced(11 * MS) };
        assert_eq!(choose(&busy, 0), Wait::Sleep { wake: 11 * MS, until: 11 * MS });
    }

    #[test]
    fn short_waits_are_spun() {
        assert_eq!(choose(&paced(10 * MS + 5 * US), 0), Wait::Spin { until: 10 * MS + 5 * US });
        assert_eq!(choose(&paced(10 * MS + 19 * US), 0), Wait::Spin { until: 10 * MS + 19 * US });
        assert_eq!(
            choose(&paced(10 * MS + 20 * US), 0),
            Wait::Sleep { wake: 10 * MS + 20 * US, until: 10 * MS + 20 * US }
        );
    }

    #[test]
    fn other_deadlines_and_the_stop_check_come_first() {
        let soon = Outlook { deadline: 10 * MS + 500 * US, ..paced(50 * MS) };
        assert_eq!(
            choose(&soon, 0),
            Wait::Sleep { wake: 10 * MS + 500 * US, until: 10 * MS + 500 * US }
        );
        let far = Outlook { deadline: u64::MAX, ..paced(u64::MAX) };
        assert_eq!(choose(&far, 0), Wait::Sleep { wake: 60 * MS, until: 60 * MS });
        let over = Outlook { next_send: None, ..paced(0) };
        assert_eq!(choose(&over, 0), Wait::Sleep { wake: 60 * MS, until: 60 * MS });
    }

    #[test]
    fn an_overdue_request_waits_for_a_connection_on_events() {
        let overdue = Outlook { connection_ready: false, ..paced(9 * MS) };
        assert_eq!(choose(&overdue, 0), Wait::Events { until: 60 * MS });
    }

    #[test]
    fn a_half_received_large_response_is_read_promptly() {
        let large = Outlook { receiving_large_response: true, ..paced(12 * MS) };
        assert_eq!(choose(&large, 0), Wait::Events { until: 12 * MS });
        let busy = Outlook { connection_ready: false, ..large };
        assert_eq!(choose(&busy, 0), Wait::Events { until: 60 * MS });
    }

    #[test]
    fn a_parked_request_waits_on_events_until_the_next_send() {
        let parked = Outlook { waiting_for_origin: true, ..paced(12 * MS) };
        assert_eq!(choose(&parked, 0), Wait::Events { until: 12 * MS });
        let busy = Outlook { connection_ready: false, ..parked };
        assert_eq!(choose(&busy, 0), Wait::Events { until: 12 * MS });
        // Overdue and not parked (its origin's line is full): a response
        // frees a connection, the clock does not.
        let overdue = Outlook { now: 13 * MS, deadline: 20 * MS, ..busy };
        assert_eq!(choose(&overdue, 0), Wait::Events { until: 20 * MS });
    }

    #[test]
    fn the_closed_loop_waits_on_events() {
        let closed = Outlook { paced: false, next_send: None, ..paced(0) };
        assert_eq!(choose(&closed, 0), Wait::Events { until: 60 * MS });
        let delayed = Outlook { next_send: Some(15 * MS), ..closed };
        assert_eq!(choose(&delayed, 0), Wait::Events { until: 15 * MS });
    }

    #[test]
    fn clock_waits_end_on_time_and_then_just_collect() {
        // A fake clock that advances 1 us per read.
        let now = Cell::new(0u64);
        let clock = || {
            now.set(now.get() + US);
            now.get()
        };
        let (mut lateness, mut spun) = (Lateness::default(), 0);
        let spin = Wait::Spin { until: 15 * US };
        assert_eq!(spin.on_the_clock(clock, &mut lateness, &mut spun), Duration::ZERO);
        assert_eq!(now.get(), 15 * US);
        // Spun from its first read (1 us) to `until`.
        assert_eq!(spun, 14 * US);
        let events = Wait::Events { until: 100 * US };
        assert_eq!(events.on_the_clock(clock, &mut lateness, &mut spun), Duration::from_micros(84));
        assert_eq!(spun, 14 * US);
        // A real sleep to `wake`, then the fake clock spins to `until`
        // (from its third read: the sleep and the lateness take two).
        let started = std::time::Instant::now();
        let at = now.get();
        let sleep = Wait::Sleep { wake: at + 2 * MS, until: at + 2 * MS + 30 * US };
        assert_eq!(sleep.on_the_clock(clock, &mut lateness, &mut spun), Duration::ZERO);
        assert!(started.elapsed() >= Duration::from_millis(2));
        assert_eq!(now.get(), at + 2 * MS + 30 * US);
        assert_eq!(spun, 14 * US + (2 * MS + 30 * US - 3 * US));
    }

    #[test]
    fn the_spin_on_events_follows_how_soon_they_come() {
        let mut spin = EventSpin::default();
        let one = |limit| 1 <= limit;
        let spun = |spin: &EventSpin| spin.spin(one).unwrap();
        // It starts by spinning the most, to find out.
        assert_eq!(spun(&spin), Duration::from_nanos(MAX_EVENT_SPIN_NS));
        // Round trips of 20 us, one in ten of 40 us: a quarter more than
        // their 90th percentile.
        for k in 0..WINDOW {
            spin.observe(Duration::from_micros(if k % 10 == 0 { 40 } else { 20 }));
        }
        assert_eq!(spun(&spin), Duration::from_micros(50));
        // With more than two requests in flight the server is busy anyway:
        // no spin, and nothing to learn.
        assert_eq!(spin.spin(|limit| 3 <= limit), None);
        // Mostly slower than a spin is worth: blocked at once.
        for k in 0..WINDOW as u64 {
            spin.observe(Duration::from_micros(if k < 20 { 30 } else { 500 }));
        }
        assert_eq!(spun(&spin), Duration::ZERO);
        // Waits that get short again (a blocked one reads a wake-up longer)
        // bring the spin back, at most the limit.
        for _ in 0..WINDOW {
            spin.observe(Duration::from_micros(90));
        }
        assert_eq!(spun(&spin), Duration::from_nanos(MAX_EVENT_SPIN_NS));
    }

    #[test]
    fn a_send_wakes_as_early_as_sleeps_are_late() {
        let mut lateness = Lateness::default();
        // Sleeps end 30..93 us late: a window later, the thread wakes by
        // their 10th percentile, 36 us, early.
        for late in 0..64 {
            assert_eq!(lateness.early_ns(), 0);
            lateness.observe((30 + late) * US);
        }
        assert_eq!(lateness.early_ns(), 36 * US);
        let early = lateness.early_ns();
        assert_eq!(
            choose(&paced(11 * MS), early),
            Wait::Sleep { wake: 11 * MS - 36 * US, until: 11 * MS }
        );
        // Closer than the early wake-up and a sleep's cost: spun.
        assert_eq!(
            choose(&paced(10 * MS + 50 * US), early),
            Wait::Spin { until: 10 * MS + 50 * US }
        );
        // Housekeeping deadlines sleep plainly.
        let housekeeping = Outlook { deadline: 10 * MS + 500 * US, ..paced(50 * MS) };
        let wake = 10 * MS + 500 * US;
        assert_eq!(choose(&housekeeping, early), Wait::Sleep { wake, until: wake });
        // A machine that got very slow is not spun through.
        for _ in 0..64 {
            lateness.observe(5 * MS);
        }
        assert_eq!(lateness.early_ns(), MAX_EARLY_NS);
    }
}
