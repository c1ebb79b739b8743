//! When an engine thread sends, and on which connection: the closed loop
//! (a connection sends again as soon as it is ready, after the script's
//! `delay()`) or the thread's share of the plan (each request at its
//! intended time, on the first connection that is ready).
//!
//! The schedule only orders: connections are handed to it with
//! [`Schedule::ready`] when they can carry a request, and
//! [`Schedule::pop_due`] says which request goes out now. It never sees a
//! socket, so a connection that closed while it waited is skipped when its
//! turn comes (the caller says which connections are still ready). With
//! several origins, the caller also says which connections fit the request
//! (those to its origin): the others keep their place in line.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::protocol::Ticket;
use crate::plan::ThreadPlan;

pub enum Schedule {
    ClosedLoop(ClosedLoop),
    Paced(Paced),
}

impl Schedule {
    pub fn closed_loop() -> Schedule {
        Schedule::ClosedLoop(ClosedLoop::default())
    }

    /// The thread's share of the plan; nothing is due at or after `end_ns`.
    pub fn paced(plan: ThreadPlan, end_ns: u64) -> Schedule {
        Schedule::Paced(Paced { plan, end_ns, ready: VecDeque::new() })
    }

    /// Connection `conn` can carry a request, at once or from
    /// `not_before` on (ns). The plan decides when paced requests go, so
    /// `not_before` (the script's `delay()`) only matters in the closed loop.
    pub fn ready(&mut self, ticket: Ticket, not_before: Option<u64>) {
        match self {
            Schedule::ClosedLoop(closed) => match not_before {
                None => closed.now.push_back(ticket),
                Some(at) => {
                    closed.delayed.push(Reverse((at, ticket.serial, ticket.conn, ticket.since)))
                }
            },
            Schedule::Paced(paced) => paced.ready.push_back(ticket),
        }
    }

    /// The connection for the next batch of `depth` requests to send at
    /// `now`, if one is due and a connection is ready for it; `intended`
    /// gets the plan's intended time of each request of the batch (none in
    /// the closed loop, where a request is intended when it is sent). A
    /// batch is due when its first request is. `still_ready` tells whether
    /// a connection handed over earlier can still carry a request (it may
    /// have closed since); a paced request goes on a connection that `fits`
    /// it (the closed loop sends on any: the request is chosen after the
    /// connection).
    pub fn pop_due(
        &mut self,
        now: u64,
        depth: usize,
        still_ready: impl Fn(Ticket) -> bool,
        fits: impl Fn(Ticket) -> bool,
        intended: &mut Vec<u64>,
    ) -> Option<Ticket> {
        intended.clear();
        match self {
            Schedule::ClosedLoop(closed) => closed.pop_due(now, still_ready, |_| true),
            Schedule::Paced(paced) => paced.pop_due(now, depth, still_ready, fits, intended),
        }
    }

    /// The plan's next batch of `depth` requests, when it is due at `now`,
    /// leaves the plan without a connection (to wait for one apart, see
    /// [`super::parked`]); `intended` gets its intended times. False when
    /// none is due (and always in the closed loop).
    pub fn take_due(&mut self, now: u64, depth: usize, intended: &mut Vec<u64>) -> bool {
        intended.clear();
        match self {
            Schedule::Paced(paced) if paced.is_due(now) => {
                paced.take(depth, intended);
                true
            }
            _ => false,
        }
    }

    /// A ready connection that `fits` a request outside the plan (one a
    /// server left unprocessed, to go again at once), if one is ready at
    /// `now`.
    pub fn pop_ready(
        &mut self,
        now: u64,
        still_ready: impl Fn(Ticket) -> bool,
        fits: impl Fn(Ticket) -> bool,
    ) -> Option<Ticket> {
        match self {
            Schedule::ClosedLoop(closed) => closed.pop_due(now, still_ready, fits),
            Schedule::Paced(paced) => take_ticket(&mut paced.ready, still_ready, fits),
        }
    }

    /// When the schedule next wants to send, if that is in the future or
    /// waits for a connection: the closed loop's earliest `delay()` end,
    /// the plan's next intended time (None once the plan is over).
    pub fn next_send_at(&self) -> Option<u64> {
        match self {
            Schedule::ClosedLoop(closed) => closed.delayed.peek().map(|Reverse((at, ..))| *at),
            Schedule::Paced(paced) => {
                let due = paced.plan.next_due_ns();
                (due < paced.end_ns).then_some(due)
            }
        }
    }

    /// The intended time of the plan's oldest request due at `now` and
    /// not sent yet (waiting for a connection), if one is.
    pub fn oldest_due(&self, now: u64) -> Option<u64> {
        self.next_send_at().filter(|&due| due <= now && self.is_paced())
    }

    /// Some connection that `fits` the next request is waiting for the
    /// plan (paced mode).
    pub fn has_ready_connection(&self, fits: impl Fn(Ticket) -> bool) -> bool {
        match self {
            Schedule::ClosedLoop(closed) => !closed.now.is_empty(),
            Schedule::Paced(paced) => paced.ready.iter().any(|&ticket| fits(ticket)),
        }
    }

    /// Whether the plan sets the send times (so schedule lag is measured).
    pub fn is_paced(&self) -> bool {
        matches!(self, Schedule::Paced(_))
    }

    /// The part of the plan not sent yet (None in the closed loop), for
    /// giving up requests that can no longer be sent.
    pub fn rest_of_plan(&mut self) -> Option<&mut ThreadPlan> {
        match self {
            Schedule::ClosedLoop(_) => None,
            Schedule::Paced(paced) => Some(&mut paced.plan),
        }
    }
}

/// wrk's loop: every ready connection sends at once, or when its
/// `delay()` is over.
#[derive(Default)]
pub struct ClosedLoop {
    /// Ready now, in the order they became ready.
    now: VecDeque<Ticket>,
    /// Waiting out a `delay()`: (ready at, serial, connection, ready
    /// since), earliest first.
    delayed: BinaryHeap<Reverse<(u64, u32, usize, u64)>>,
}

impl ClosedLoop {
    fn pop_due(
        &mut self,
        now: u64,
        still_ready: impl Fn(Ticket) -> bool,
        fits: impl Fn(Ticket) -> bool,
    ) -> Option<Ticket> {
        while let Some(&Reverse((at, serial, conn, since))) = self.delayed.peek() {
            if at > now {
                break;
            }
            self.delayed.pop();
            self.now.push_back(Ticket { conn, serial, since });
        }
        take_ticket(&mut self.now, still_ready, fits)
    }
}

/// The first ticket in `line` that is still ready and `fits`; tickets no
/// longer ready before it are dropped, those that do not fit keep their
/// place. With a single origin every ticket fits: the first ready one.
#[inline]
fn take_ticket(
    line: &mut VecDeque<Ticket>,
    still_ready: impl Fn(Ticket) -> bool,
    fits: impl Fn(Ticket) -> bool,
) -> Option<Ticket> {
    let mut i = 0;
    while let Some(&ticket) = line.get(i) {
        if !still_ready(ticket) {
            line.remove(i);
        } else if fits(ticket) {
            return line.remove(i);
        } else {
            i += 1;
        }
    }
    None
}

/// The thread's share of the plan, sent on the connections in the order
/// they became ready, so load spreads over all of them.
pub struct Paced {
    plan: ThreadPlan,
    end_ns: u64,
    ready: VecDeque<Ticket>,
}

impl Paced {
    fn pop_due(
        &mut self,
        now: u64,
        depth: usize,
        still_ready: impl Fn(Ticket) -> bool,
        fits: impl Fn(Ticket) -> bool,
        intended: &mut Vec<u64>,
    ) -> Option<Ticket> {
        if !self.is_due(now) {
            return None;
        }
        // A due request with no ready connection waits (it stays the plan's
        // next request) and its latency still counts from its intended time.
        let ticket = take_ticket(&mut self.ready, still_ready, fits)?;
        self.take(depth, intended);
        Some(ticket)
    }

    /// The plan's next request is due at `now`. The plan ends with the
    /// run: a request due at or after the end is not part of it, even if
    /// the thread looks late.
    fn is_due(&self, now: u64) -> bool {
        let first = self.plan.next_due_ns();
        first <= now && first < self.end_ns
    }

    /// Moves the plan past its next batch of `depth` requests, their
    /// intended times into `intended`.
    fn take(&mut self, depth: usize, intended: &mut Vec<u64>) {
        for _ in 0..depth {
            intended.push(self.plan.next_due_ns());
            self.plan.advance();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;

    const MS: u64 = 1_000_000;

    fn t(conn: usize) -> Ticket {
        Ticket { conn, serial: 1, since: 0 }
    }

    /// `pop_due` for batches of one request: the ticket and the intended
    /// time (None in the closed loop).
    fn pop(s: &mut Schedule, now: u64, still_ready: impl Fn(Ticket) -> bool) -> Option<Due> {
        let mut intended = Vec::new();
        let ticket = s.pop_due(now, 1, still_ready, |_| true, &mut intended)?;
        Some(Due { ticket, intended: intended.first().copied() })
    }

    #[derive(Debug, PartialEq, Eq)]
    struct Due {
        ticket: Ticket,
        intended: Option<u64>,
    }

    fn paced(rate: f64, end_ns: u64) -> Schedule {
        Schedule::paced(Plan::constant(rate).for_thread(0, 1, 0), end_ns)
    }

    #[test]
    fn closed_loop_sends_ready_connections_in_order() {
        let mut s = Schedule::closed_loop();
        s.ready(t(2), None);
        s.ready(t(0), None);
        assert_eq!(pop(&mut s, 5, |_| true), Some(Due { ticket: t(2), intended: None }));
        assert_eq!(pop(&mut s, 5, |_| true), Some(Due { ticket: t(0), intended: None }));
        assert_eq!(pop(&mut s, 5, |_| true), None);
        assert_eq!(s.next_send_at(), None);
    }

    #[test]
    fn closed_loop_waits_out_delays() {
        let mut s = Schedule::closed_loop();
        s.ready(t(1), Some(30 * MS));
        s.ready(t(0), Some(10 * MS));
        assert_eq!(s.next_send_at(), Some(10 * MS));
        assert_eq!(pop(&mut s, 9 * MS, |_| true), None);
        assert_eq!(pop(&mut s, 10 * MS, |_| true).map(|d| d.ticket.conn), Some(0));
        assert_eq!(s.next_send_at(), Some(30 * MS));
        assert_eq!(pop(&mut s, 40 * MS, |_| true).map(|d| d.ticket.conn), Some(1));
    }

    #[test]
    fn closed_connections_are_skipped() {
        let mut s = Schedule::closed_loop();
        s.ready(t(0), None);
        s.ready(t(1), None);
        assert_eq!(pop(&mut s, 1, |ticket| ticket.conn != 0).map(|d| d.ticket.conn), Some(1));
        let mut s = paced(1000.0, u64::MAX);
        s.ready(t(0), None);
        s.ready(t(1), None);
        let due = pop(&mut s, 0, |ticket| ticket.conn == 1).unwrap();
        assert_eq!(due, Due { ticket: t(1), intended: Some(0) });
    }

    #[test]
    fn paced_requests_wait_for_their_time_and_a_connection() {
        let mut s = paced(1000.0, u64::MAX);
        // Due at 0 but no connection yet: it waits, and keeps its time.
        assert_eq!(pop(&mut s, 0, |_| true), None);
        assert_eq!(s.next_send_at(), Some(0));
        s.ready(t(3), None);
        s.ready(t(4), None);
        assert_eq!(pop(&mut s, 2 * MS, |_| true), Some(Due { ticket: t(3), intended: Some(0) }));
        assert_eq!(pop(&mut s, 2 * MS, |_| true), Some(Due { ticket: t(4), intended: Some(MS) }));
        // Due at 2 ms, but every connection is busy.
        assert_eq!(pop(&mut s, 2 * MS, |_| true), None);
        assert!(!s.has_ready_connection(|_| true));
        s.ready(t(3), None);
        assert!(s.has_ready_connection(|_| true));
        // Not due yet.
        assert_eq!(pop(&mut s, 2 * MS - 1, |_| true), None);
        assert_eq!(s.next_send_at(), Some(2 * MS));
    }

    #[test]
    fn a_paced_request_takes_a_connection_that_fits_it() {
        let mut s = paced(1000.0, u64::MAX);
        for conn in 0..4 {
            s.ready(t(conn), None);
        }
        // Connections 2 and 3 go to the request's origin; 2 has closed.
        let fits = |ticket: Ticket| ticket.conn >= 2;
        assert!(s.has_ready_connection(fits));
        let mut intended = Vec::new();
        let ticket = s.pop_due(0, 1, |ticket| ticket.conn != 2, fits, &mut intended);
        assert_eq!((ticket, intended), (Some(t(3)), vec![0]));
        assert!(!s.has_ready_connection(fits));
        // None fits: the request waits, the others keep their places.
        assert_eq!(s.pop_due(MS, 1, |_| true, fits, &mut Vec::new()), None);
        assert_eq!(s.pop_ready(MS, |_| true, |_| true), Some(t(0)));
        assert_eq!(s.pop_ready(MS, |_| true, |ticket| ticket.conn == 1), Some(t(1)));
    }

    #[test]
    fn a_due_request_can_leave_the_plan_without_a_connection() {
        let mut s = paced(1000.0, 2 * MS);
        let mut intended = Vec::new();
        // Due at 0 and 1 ms; nothing before it is due, nothing at the end.
        assert!(s.take_due(0, 1, &mut intended));
        assert_eq!(intended, [0]);
        assert!(!s.take_due(MS - 1, 1, &mut intended));
        assert!(s.take_due(MS, 1, &mut intended));
        assert_eq!(intended, [MS]);
        assert!(!s.take_due(5 * MS, 1, &mut intended));
        assert!(!Schedule::closed_loop().take_due(MS, 1, &mut intended));
    }

    #[test]
    fn the_plan_ends_with_the_run() {
        let mut s = paced(1000.0, 2 * MS);
        for conn in 0..5 {
            s.ready(t(conn), None);
        }
        let sent: Vec<_> = std::iter::from_fn(|| pop(&mut s, 10 * MS, |_| true)).collect();
        assert_eq!(sent.len(), 2);
        assert_eq!(s.next_send_at(), None);
        assert_eq!(s.rest_of_plan().unwrap().unsent_before(2 * MS), 0);
    }

    #[test]
    fn a_batch_takes_as_many_requests_of_the_plan_as_it_holds() {
        let mut s = paced(1000.0, u64::MAX);
        s.ready(t(0), None);
        s.ready(t(1), None);
        let mut intended = Vec::new();
        assert_eq!(s.pop_due(0, 4, |_| true, |_| true, &mut intended), Some(t(0)));
        assert_eq!(intended, vec![0, MS, 2 * MS, 3 * MS]);
        // The next batch is due with its first request, at 4 ms.
        assert_eq!(s.pop_due(4 * MS - 1, 4, |_| true, |_| true, &mut intended), None);
        assert!(intended.is_empty());
        assert_eq!(s.pop_due(4 * MS, 4, |_| true, |_| true, &mut intended), Some(t(1)));
        assert_eq!(intended, vec![4 * MS, 5 * MS, 6 * MS, 7 * MS]);
    }

    #[test]
    fn the_rest_of_the_plan_is_what_was_not_sent() {
        let mut s = paced(1000.0, 10 * MS);
        s.ready(t(0), None);
        pop(&mut s, 0, |_| true).unwrap();
        let rest = s.rest_of_plan().unwrap();
        assert_eq!(rest.unsent_before(10 * MS), 9);
        assert_eq!(rest.unsent_before(5 * MS), 4);
        assert!(Schedule::closed_loop().rest_of_plan().is_none());
    }
}
