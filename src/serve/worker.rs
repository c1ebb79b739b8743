//! One server thread: an edge-triggered epoll loop over its listener, the
//! shared stop eventfd and its connections, with a timer queue for
//! responses that are not due yet.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rustix::io::Errno;
use rustix::net::{accept_with, SocketFlags};
use socket2::{SockRef, Socket};

use super::conn::{Conn, Outcome, Wake};
use super::http2::Http2Conn;
use super::{tls, Shared, ThreadCounters};
use crate::http::stream::Stream;
use crate::http::transport::Transport;
use crate::sys::{now_ns, set_minimal_timer_slack, Interest, Poller};

/// Poller tokens. A connection's token is its slot index (low 32 bits)
/// and the slot's generation (high 32 bits), so an event or timer for a
/// closed connection never reaches the next one in the same slot; slot
/// indices never come near these two values.
const LISTENER: u64 = u64::MAX;
const WAKER: u64 = u64::MAX - 1;

/// Events taken per wait.
const EVENTS_PER_WAIT: usize = 256;

pub(super) struct Worker {
    index: usize,
    poller: Poller,
    listener: Socket,
    /// The listener is TCP (not a Unix socket): connections get
    /// TCP_NODELAY.
    tcp: bool,
    shared: Arc<Shared>,
    slots: Vec<Slot>,
    free_slots: Vec<usize>,
    /// Wake-ups: (due time, connection token), earliest first.
    timers: BinaryHeap<Reverse<(u64, u64)>>,
}

struct Slot {
    generation: u32,
    conn: Option<Served>,
}

/// A connection, as HTTP/1.1 (where every one starts) or HTTP/2 (boxed:
/// HTTP/1.1's is the hot path, kept inline).
#[allow(clippy::large_enum_variant)]
enum Served {
    Http1(Conn),
    Http2(Box<Http2Conn>),
}

impl Served {
    fn timer(&mut self) -> &mut Option<u64> {
        match self {
            Served::Http1(conn) => &mut conn.timer,
            Served::Http2(conn) => &mut conn.timer,
        }
    }

    fn transport(&self) -> &Transport {
        match self {
            Served::Http1(conn) => conn.transport(),
            Served::Http2(conn) => conn.transport(),
        }
    }

    fn service(
        &mut self,
        now: u64,
        wake: Wake,
        shared: &Shared,
        counters: &ThreadCounters,
    ) -> Outcome {
        match self {
            Served::Http1(conn) => conn.service(now, wake, shared, counters),
            Served::Http2(conn) => conn.service(now, wake, shared, counters),
        }
    }
}

fn token(slot: usize, generation: u32) -> u64 {
    (u64::from(generation) << 32) | slot as u64
}

/// The connection a token names, if it is still the one that got it.
fn lookup(slots: &mut [Slot], token: u64) -> Option<&mut Served> {
    let slot = slots.get_mut((token & u64::from(u32::MAX)) as usize)?;
    if u64::from(slot.generation) != token >> 32 {
        return None;
    }
    slot.conn.as_mut()
}

impl Worker {
    pub(super) fn new(
        index: usize,
        listener: Socket,
        tcp: bool,
        waker: &OwnedFd,
        shared: Arc<Shared>,
    ) -> io::Result<Worker> {
        let poller = Poller::new(EVENTS_PER_WAIT)?;
        poller.add(&listener, LISTENER, Interest::Read)?;
        // The server handle owns the waker and outlives the thread. It only
        // becomes readable when stopping; the flag is what says so.
        poller.add(waker, WAKER, Interest::Read)?;
        Ok(Worker {
            index,
            poller,
            listener,
            tcp,
            shared,
            slots: Vec::new(),
            free_slots: Vec::new(),
            timers: BinaryHeap::new(),
        })
    }

    /// The thread's body; a failing poller ends the thread with a message.
    pub(super) fn run_reporting_errors(mut self) {
        if let Err(e) = self.run() {
            eprintln!("pace serve: thread {} stopped: {e}", self.index);
        }
    }

    fn run(&mut self) -> io::Result<()> {
        set_minimal_timer_slack();
        while !self.shared.stopping.load(Ordering::Acquire) {
            let timeout = self.next_timeout();
            let events = self.poller.poll(timeout)?;
            for k in 0..events {
                let ready = self.poller.ready(k);
                match ready.token {
                    LISTENER => self.accept_all(),
                    WAKER => {}
                    token => {
                        let wake = match (ready.readable, ready.closed) {
                            (_, true) => Wake::Hangup,
                            (true, false) => Wake::Input,
                            (false, false) => Wake::Quiet,
                        };
                        self.service(token, now_ns(), wake);
                    }
                }
            }
            self.fire_timers();
        }
        Ok(())
    }

    fn next_timeout(&self) -> Option<Duration> {
        let Reverse((due, _)) = self.timers.peek()?;
        Some(Duration::from_nanos(due.saturating_sub(now_ns())))
    }

    /// Services every connection whose wake-up is due.
    fn fire_timers(&mut self) {
        let now = now_ns();
        while let Some(&Reverse((due, token))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            // Only the connection's current wake-up counts; others are
            // leftovers of plans that changed.
            let Some(conn) = lookup(&mut self.slots, token) else { continue };
            if *conn.timer() == Some(due) {
                *conn.timer() = None;
                self.service(token, now, Wake::Quiet);
            }
        }
    }

    fn service(&mut self, token: u64, now: u64, wake: Wake) {
        // Borrowed field by field: cloning the Arc here would bounce its
        // shared count between the server threads on every event.
        let shared = &*self.shared;
        let counters = &shared.counters[self.index];
        let Some(conn) = lookup(&mut self.slots, token) else { return };
        match conn.service(now, wake, shared, counters) {
            Outcome::Close => self.close(token),
            Outcome::Open { wake_at: Some(due) } if *conn.timer() != Some(due) => {
                *conn.timer() = Some(due);
                self.timers.push(Reverse((due, token)));
            }
            Outcome::Open { .. } => {}
            Outcome::Http2 => self.hand_over(token, now),
        }
    }

    /// The connection of `token` turned out to speak HTTP/2: the HTTP/2
    /// server takes its socket and what was read, and reads on.
    fn hand_over(&mut self, token: u64, now: u64) {
        let index = (token & u64::from(u32::MAX)) as usize;
        let Some(Served::Http1(conn)) = self.slots[index].conn.take() else { return };
        let (transport, received, preface_deadline) = conn.into_http2();
        match Http2Conn::new(transport, &received, preface_deadline, now, &self.shared) {
            Ok(conn) => {
                self.slots[index].conn = Some(Served::Http2(Box::new(conn)));
                // What the socket still holds raises no new edge.
                self.service(token, now, Wake::Input);
            }
            Err(_) => self.close(token),
        }
    }

    fn accept_all(&mut self) {
        loop {
            match accept_with(&self.listener, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC) {
                Ok(fd) => self.adopt(Stream::from(fd)),
                Err(Errno::INTR | Errno::CONNABORTED) => {}
                // WOULDBLOCK: all accepted. Anything else (out of file
                // descriptors...) leaves the connection in the backlog
                // until the next one arrives.
                Err(_) => return,
            }
        }
    }

    fn adopt(&mut self, socket: Stream) {
        // Responses are complete when written; Nagle would only delay them.
        if self.tcp {
            let _ = SockRef::from(&socket).set_tcp_nodelay(true);
        }
        let transport = match &self.shared.tls {
            None => Transport::plain(socket),
            Some(config) => match tls::session(config) {
                Ok(session) => Transport::tls(socket, session),
                Err(_) => return,
            },
        };
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.slots.push(Slot { generation: 0, conn: None });
            self.slots.len() - 1
        });
        let token = token(slot, self.slots[slot].generation);
        // Readiness is edge-triggered, so asking for writability up front
        // costs nothing and saves re-registering when a write blocks.
        if self.poller.add(transport.socket(), token, Interest::ReadWrite).is_err() {
            self.free_slots.push(slot);
            return;
        }
        let conn = Conn::new(transport, now_ns(), &self.shared);
        self.slots[slot].conn = Some(Served::Http1(conn));
        self.shared.counters[self.index].connection_accepted();
    }

    fn close(&mut self, token: u64) {
        let index = (token & u64::from(u32::MAX)) as usize;
        let slot = &mut self.slots[index];
        if let Some(conn) = slot.conn.take() {
            self.poller.delete(conn.transport().socket());
        }
        slot.generation = slot.generation.wrapping_add(1);
        self.free_slots.push(index);
    }
}
