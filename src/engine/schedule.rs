//! When an engine thread sends, and on which connection: the closed loop
//! (a connection sends again as soon as it is ready, after the script's
//! `delay()`) or the thread's share of the plan (each request at its
//! intended time, on the first connection that is ready).
//!
//! The schedule only orders: connections are handed to it with
//! [`Schedule::ready`] when they can carry a request, and
//! [`Schedule::pop_due`] says which request goes out now. It never sees a
//! socket, so a connection that closed while it waited is skipped when its
//! turn comes (the caller says which connections are still ready).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::engine::conn::Ticket;
use crate::plan::ThreadPlan;

/// A request to send now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    pub ticket: Ticket,
    /// The plan's intended send time (ns); None in the closed loop, where a
    /// request is intended when it is sent.
    pub intended: Option<u64>,
}

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
                Some(at) => closed.delayed.push(Reverse((at, ticket.serial, ticket.conn))),
            },
            Schedule::Paced(paced) => paced.ready.push_back(ticket),
        }
    }

    /// The next request to send at `now`, if one is due and a connection is
    /// ready for it. `still_ready` tells whether a connection handed over
    /// earlier can still carry a request (it may have closed since).
    pub fn pop_due(&mut self, now: u64, still_ready: impl Fn(Ticket) -> bool) -> Option<Due> {
        match self {
            Schedule::ClosedLoop(closed) => closed.pop_due(now, still_ready),
            Schedule::Paced(paced) => paced.pop_due(now, still_ready),
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

    /// Some connection is waiting for the plan (paced mode).
    pub fn has_ready_connection(&self) -> bool {
        match self {
            Schedule::ClosedLoop(closed) => !closed.now.is_empty(),
            Schedule::Paced(paced) => !paced.ready.is_empty(),
        }
    }

    /// Whether the plan sets the send times (so schedule lag is measured).
    pub fn is_paced(&self) -> bool {
        matches!(self, Schedule::Paced(_))
    }

    /// The part of the plan not sent yet (None in the closed loop).
    pub fn rest_of_plan(&self) -> Option<&ThreadPlan> {
        match self {
            Schedule::ClosedLoop(_) => None,
            Schedule::Paced(paced) => Some(&paced.plan),
        }
    }
}

/// wrk's loop: every ready connection sends at once, or when its
/// `delay()` is over.
#[derive(Default)]
pub struct ClosedLoop {
    /// Ready now, in the order they became ready.
    now: VecDeque<Ticket>,
    /// Waiting out a `delay()`: (ready at, serial, connection), earliest
    /// first.
    delayed: BinaryHeap<Reverse<(u64, u32, usize)>>,
}

impl ClosedLoop {
    fn pop_due(&mut self, now: u64, still_ready: impl Fn(Ticket) -> bool) -> Option<Due> {
        while let Some(&Reverse((at, serial, conn))) = self.delayed.peek() {
            if at > now {
                break;
            }
            self.delayed.pop();
            self.now.push_back(Ticket { conn, serial });
        }
        while let Some(ticket) = self.now.pop_front() {
            if still_ready(ticket) {
                return Some(Due { ticket, intended: None });
            }
        }
        None
    }
}

/// The thread's share of the plan, sent on the connections in the order
/// they became ready, so load spreads over all of them.
pub struct Paced {
    plan: ThreadPlan,
    end_ns: u64,
    ready: VecDeque<Ticket>,
}

impl Paced {
    fn pop_due(&mut self, now: u64, still_ready: impl Fn(Ticket) -> bool) -> Option<Due> {
        let intended = self.plan.next_due_ns();
        // The plan ends with the run: a request due at or after the end is
        // not part of it, even if the thread looks late.
        if intended > now || intended >= self.end_ns {
            return None;
        }
        // A due request with no ready connection waits (it stays the plan's
        // next request) and its latency still counts from its intended time.
        while let Some(ticket) = self.ready.pop_front() {
            if still_ready(ticket) {
                self.plan.advance();
                return Some(Due { ticket, intended: Some(intended) });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;

    const MS: u64 = 1_000_000;

    fn t(conn: usize) -> Ticket {
        Ticket { conn, serial: 1 }
    }

    fn paced(rate: f64, end_ns: u64) -> Schedule {
        Schedule::paced(Plan::constant(rate).for_thread(0, 1, 0), end_ns)
    }

    #[test]
    fn closed_loop_sends_ready_connections_in_order() {
        let mut s = Schedule::closed_loop();
        s.ready(t(2), None);
        s.ready(t(0), None);
        assert_eq!(s.pop_due(5, |_| true), Some(Due { ticket: t(2), intended: None }));
        assert_eq!(s.pop_due(5, |_| true), Some(Due { ticket: t(0), intended: None }));
        assert_eq!(s.pop_due(5, |_| true), None);
        assert_eq!(s.next_send_at(), None);
    }

    #[test]
    fn closed_loop_waits_out_delays() {
        let mut s = Schedule::closed_loop();
        s.ready(t(1), Some(30 * MS));
        s.ready(t(0), Some(10 * MS));
        assert_eq!(s.next_send_at(), Some(10 * MS));
        assert_eq!(s.pop_due(9 * MS, |_| true), None);
        assert_eq!(s.pop_due(10 * MS, |_| true).map(|d| d.ticket.conn), Some(0));
        assert_eq!(s.next_send_at(), Some(30 * MS));
        assert_eq!(s.pop_due(40 * MS, |_| true).map(|d| d.ticket.conn), Some(1));
    }

    #[test]
    fn closed_connections_are_skipped() {
        let mut s = Schedule::closed_loop();
        s.ready(t(0), None);
        s.ready(t(1), None);
        assert_eq!(s.pop_due(1, |ticket| ticket.conn != 0).map(|d| d.ticket.conn), Some(1));
        let mut s = paced(1000.0, u64::MAX);
        s.ready(t(0), None);
        s.ready(t(1), None);
        let due = s.pop_due(0, |ticket| ticket.conn == 1).unwrap();
        assert_eq!(due, Due { ticket: t(1), intended: Some(0) });
    }

    #[test]
    fn paced_requests_wait_for_their_time_and_a_connection() {
        let mut s = paced(1000.0, u64::MAX);
        // Due at 0 but no connection yet: it waits, and keeps its time.
        assert_eq!(s.pop_due(0, |_| true), None);
        assert_eq!(s.next_send_at(), Some(0));
        s.ready(t(3), None);
        s.ready(t(4), None);
        assert_eq!(s.pop_due(2 * MS, |_| true), Some(Due { ticket: t(3), intended: Some(0) }));
        assert_eq!(s.pop_due(2 * MS, |_| true), Some(Due { ticket: t(4), intended: Some(MS) }));
        // Due at 2 ms, but every connection is busy.
        assert_eq!(s.pop_due(2 * MS, |_| true), None);
        assert!(!s.has_ready_connection());
        s.ready(t(3), None);
        assert!(s.has_ready_connection());
        // Not due yet.
        assert_eq!(s.pop_due(2 * MS - 1, |_| true), None);
        assert_eq!(s.next_send_at(), Some(2 * MS));
    }

    #[test]
    fn the_plan_ends_with_the_run() {
        let mut s = paced(1000.0, 2 * MS);
        for conn in 0..5 {
            s.ready(t(conn), None);
        }
        let sent: Vec<_> = std::iter::from_fn(|| s.pop_due(10 * MS, |_| true)).collect();
        assert_eq!(sent.len(), 2);
        assert_eq!(s.next_send_at(), None);
        assert_eq!(s.rest_of_plan().unwrap().unsent_before(2 * MS), 0);
    }

    #[test]
    fn the_rest_of_the_plan_is_what_was_not_sent() {
        let mut s = paced(1000.0, 10 * MS);
        s.ready(t(0), None);
        s.pop_due(0, |_| true).unwrap();
        let rest = s.rest_of_plan().unwrap();
        assert_eq!(rest.unsent_before(10 * MS), 9);
        assert_eq!(rest.unsent_before(5 * MS), 4);
        assert!(Schedule::closed_loop().rest_of_plan().is_none());
    }
}
