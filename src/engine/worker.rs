//! One engine thread: an event loop that owns its connections, sends
//! requests (as fast as responses come back, or following its share of the
//! plan), reads responses and records everything into its own [`Stats`].
//!
//! The per-request path is kept to the syscalls it needs: a socket is
//! registered with epoll once (edge-triggered, read + write), a request is
//! written directly when it is due (no writable-event round trip), and a
//! read shorter than the buffer ends the read loop (no read that would only
//! return EAGAIN).
//!
//! Paced mode wakes once per send, not once per response: between sends
//! the thread sleeps on the clock alone and collects the responses at the
//! next wake-up, timed by the kernel's receive stamps (see
//! [`Worker::sleep_then_collect`]). It falls back to waiting on epoll when
//! a request is overdue with no idle connection, or a large response is half
//! received.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::conn::{backoff_ns, Conn, Phase};
use crate::engine::transport::start_connect;
use crate::engine::{StartLine, ThreadRequests};
use crate::http::response::Response;
use crate::http::transport::Transport;
use crate::plan::{Plan, ThreadPlan};
use crate::script::ThreadScript;
use crate::stats::{ErrorKind, Stats};
use crate::sys::{self, Interest, Poller, WallClock};
use crate::tls::TlsClient;

/// Req/Sec is sampled per thread at this interval (wrk: 100 ms).
const RATE_SAMPLE_NS: u64 = 100_000_000;
/// Longest the loop sleeps without looking at the stop flag.
const MAX_SLEEP_NS: u64 = 50_000_000;
/// Paced mode spins instead of sleeping when the next send is closer than
/// this: about what a sleep and wake-up cost in CPU on these VMs.
const SPIN_BELOW_NS: u64 = 20_000;
/// An incomplete response of at least this many bytes may be held back
/// by TCP flow control until it is read: paced mode then reads promptly.
const LARGE_RESPONSE: usize = 16 * 1024;
/// Read buffer per thread. Large enough that big bodies take few reads.
const READ_BUFFER: usize = 64 * 1024;
/// How long a thread waits for its connections before the plan starts.
const CONNECT_PHASE_NS: u64 = 2_000_000_000;

/// What a thread needs to know, shared read-only by all threads.
pub struct WorkerSetup {
    pub index: usize,
    pub threads: usize,
    pub connections: usize,
    pub addr: SocketAddr,
    pub tls: Option<TlsClient>,
    /// For each request of a batch, whether it is a HEAD.
    pub heads: Arc<[bool]>,
    pub plan: Option<Plan>,
    pub duration_ns: u64,
    pub timeout_ns: u64,
    pub batch_latency: bool,
    pub digits: u8,
    /// Length of a reporting period: the thread hands over its measurements
    /// at every period boundary.
    pub interval_ns: u64,
    /// Where finished periods go.
    pub intervals: Sender<ThreadInterval>,
    /// Length of a time-series slot, when a time series is wanted.
    pub series_ns: Option<u64>,
}

/// One thread's measurements for one reporting period.
pub struct ThreadInterval {
    pub thread: usize,
    pub index: u64,
    pub stats: Stats,
    /// Set on the thread's last period: when the thread finished, from the
    /// start of the run.
    pub ended: Option<Duration>,
}

/// What a thread hands back when it is done (its last, partial period has
/// been sent like the others).
pub struct WorkerResult {
    pub start_ns: u64,
    pub finished_ns: u64,
    pub unsent: u64,
    /// Completed requests per time-series slot.
    pub series: Vec<u64>,
    /// The thread's Lua state, handed back for `done()`.
    pub script: Option<ThreadScript>,
    /// The script error that stopped the run.
    pub script_error: Option<String>,
}

pub struct Worker {
    setup: WorkerSetup,
    requests: ThreadRequests,
    poller: Poller,
    conns: Vec<Conn>,
    /// Paced mode: idle connections in the order they became idle, so load
    /// spreads over all of them.
    idle: VecDeque<usize>,
    /// Connections waiting to reconnect, earliest first.
    reconnects: BinaryHeap<Reverse<(u64, usize)>>,
    /// Connections waiting out the script's `delay()`, earliest first.
    delayed: BinaryHeap<Reverse<(u64, usize)>>,
    plan: Option<ThreadPlan>,
    /// Measurements of the current reporting period.
    stats: Stats,
    /// Index of the current reporting period.
    interval: u64,
    /// Responses completed since the start (all periods).
    completed: u64,
    /// When the latest response completed (ns).
    last_response_ns: u64,
    start_ns: u64,
    /// When the plan ends (start + duration).
    end_ns: u64,
    series: Vec<u64>,
    /// Converts the kernel's receive stamps; recalibrated every rate sample.
    wall_clock: WallClock,
    buf: Vec<u8>,
    /// Connections in the middle of receiving a response.
    receiving: usize,
    /// No new requests are sent once this is false (end of run or stop).
    sending: bool,
    /// The script called `thread:stop()`, or failed: this thread is done.
    thread_stopped: bool,
    script_error: Option<String>,
    stop: Arc<AtomicBool>,
}

impl Worker {
    pub fn new(
        setup: WorkerSetup,
        requests: ThreadRequests,
        stop: Arc<AtomicBool>,
    ) -> io::Result<Worker> {
        let poller = Poller::new(setup.connections + 8)?;
        let capture = matches!(&requests, ThreadRequests::Script(s) if s.has_response());
        let conns = (0..setup.connections).map(|_| Conn::new(capture)).collect();
        let stats = Stats::new(setup.digits);
        let thread_stopped = matches!(&requests, ThreadRequests::Script(s) if s.stop_requested());
        Ok(Worker {
            setup,
            requests,
            poller,
            conns,
            idle: VecDeque::new(),
            reconnects: BinaryHeap::new(),
            delayed: BinaryHeap::new(),
            plan: None,
            stats,
            interval: 0,
            completed: 0,
            last_response_ns: 0,
            start_ns: 0,
            end_ns: 0,
            series: Vec::new(),
            wall_clock: WallClock::calibrate(),
            buf: vec![0; READ_BUFFER],
            receiving: 0,
            sending: false,
            thread_stopped,
            script_error: None,
            stop,
        })
    }

    /// Opens the connections, waits for the common start, runs the
    /// benchmark until the end (or a stop), then collects the responses
    /// still in flight for up to the timeout.
    pub fn run(mut self, start_line: &StartLine) -> WorkerResult {
        sys::set_minimal_timer_slack();
        let now = sys::now_ns();
        for i in 0..self.conns.len() {
            self.connect(i, now);
        }
        self.open_connections();

        let Some(start_ns) = start_line.wait() else {
            let now = sys::now_ns();
            self.hand_over_interval(true);
            return self.result(now, now, 0);
        };
        self.start_ns = start_ns;
        let end_ns = start_ns + self.setup.duration_ns;
        self.end_ns = end_ns;
        self.sending = true;
        match self.setup.plan {
            Some(plan) => {
                self.plan = Some(plan.for_thread(self.setup.index, self.setup.threads, start_ns))
            }
            None => {
                let idle: Vec<usize> = self.idle.drain(..).collect();
                for i in idle {
                    // As every later request, the first one waits for the
                    // script's delay() (wrk: "including the first").
                    self.became_idle(i);
                }
            }
        }

        self.run_until(start_ns, end_ns);
        self.sending = false;
        let sending_ended = end_ns.min(sys::now_ns());
        let unsent = self.plan.map_or(0, |p| p.unsent_before(sending_ended));
        if !self.stopped() {
            self.collect_in_flight(end_ns + self.setup.timeout_ns);
        }
        // The run lasts until the end of the plan (or the stop), or until
        // the last response that came after it; waiting for responses that
        // never came does not count.
        let finished_ns =
            if self.stopped() { sys::now_ns() } else { sending_ended.max(self.last_response_ns) };
        self.count_abandoned();
        self.hand_over_interval(true);
        self.result(start_ns, finished_ns, unsent)
    }

    fn result(self, start_ns: u64, finished_ns: u64, unsent: u64) -> WorkerResult {
        let script = match self.requests {
            ThreadRequests::Script(script) => Some(*script),
            ThreadRequests::Fixed(_) => None,
        };
        WorkerResult {
            start_ns,
            finished_ns,
            unsent,
            series: self.series,
            script,
            script_error: self.script_error,
        }
    }

    /// Sends the current period's measurements to the coordinator and
    /// starts a new period.
    fn hand_over_interval(&mut self, last: bool) {
        let stats = std::mem::replace(&mut self.stats, Stats::new(self.setup.digits));
        let ended = last.then(|| Duration::from_nanos(sys::now_ns().saturating_sub(self.start_ns)));
        let finished =
            ThreadInterval { thread: self.setup.index, index: self.interval, stats, ended };
        // The coordinator only goes away if it failed; nothing to do then.
        let _ = self.setup.intervals.send(finished);
        self.interval += 1;
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Before the plan starts: let every connection finish its TCP (and
    /// TLS) set-up, so the first requests are not charged for it.
    fn open_connections(&mut self) {
        let deadline = sys::now_ns() + CONNECT_PHASE_NS;
        while self.conns.iter().any(Conn::opening) && !self.stopped() {
            let now = sys::now_ns();
            if now >= deadline {
                break;
            }
            self.poll(now, deadline.min(now + MAX_SLEEP_NS));
        }
    }

    /// The main loop.
    fn run_until(&mut self, start_ns: u64, end_ns: u64) {
        let mut next_sample = start_ns + RATE_SAMPLE_NS;
        let mut sampled_requests = self.completed;
        let mut next_interval = start_ns + self.setup.interval_ns;
        let timeout_scan = (self.setup.timeout_ns / 4).clamp(1_000_000, 100_000_000);
        let mut next_timeout_scan = start_ns + timeout_scan;
        loop {
            let now = sys::now_ns();
            if now >= end_ns || self.stopped() || self.thread_stopped {
                return;
            }
            self.dispatch_due(now);
            if now >= next_sample {
                let done = self.completed - sampled_requests;
                self.stats.rate_samples.push(done as f64 * 1e9 / RATE_SAMPLE_NS as f64);
                sampled_requests = self.completed;
                next_sample += RATE_SAMPLE_NS;
                self.wall_clock = WallClock::calibrate();
            }
            if now >= next_interval {
                self.hand_over_interval(false);
                next_interval += self.setup.interval_ns;
            }
            if now >= next_timeout_scan {
                self.expire_timeouts(now);
                next_timeout_scan = now + timeout_scan;
            }
            let mut wake = end_ns.min(next_sample).min(next_timeout_scan).min(next_interval);
            if let Some(Reverse((at, _))) = self.delayed.peek() {
                wake = wake.min(*at);
            }
            match &self.plan {
                Some(plan)
                    if self.receiving == 0
                        && (plan.next_due_ns() > now || !self.idle.is_empty()) =>
                {
                    self.sleep_then_collect(now, wake.min(plan.next_due_ns()));
                }
                Some(plan) if !self.idle.is_empty() => self.poll(now, wake.min(plan.next_due_ns())),
                _ => self.poll(now, wake),
            }
        }
    }

    /// Paced mode with nothing overdue: sleep on the clock alone until the
    /// next send, then collect everything that arrived meanwhile. Responses
    /// do not wake the thread (every wake-up from idle costs about 20 us of
    /// CPU on a VM); they wait in the socket buffers and their completion
    /// time is the kernel's receive stamp, so the latency is the same as if
    /// they had been read at once. One wake-up per send, not two per
    /// request.
    ///
    /// A wait shorter than a wake-up costs is spent spinning on the clock
    /// instead: cheaper, and on time (high rates per thread).
    ///
    /// Not while a large response is half received: TCP flow control would
    /// make the rest of it wait for our reads, and its arrival stamp with
    /// it. (A small response split over two segments fits in the socket
    /// buffer and arrives on its own.)
    fn sleep_then_collect(&mut self, now: u64, wake_at: u64) {
        let nap = wake_at.saturating_sub(now).min(MAX_SLEEP_NS);
        if nap >= SPIN_BELOW_NS {
            std::thread::sleep(Duration::from_nanos(nap));
        } else {
            while sys::now_ns() < wake_at {
                std::hint::spin_loop();
            }
        }
        let now = sys::now_ns();
        self.poll(now, now);
    }

    /// After the end: no new requests, but the ones in flight may still
    /// answer (until `deadline`); their latencies count.
    fn collect_in_flight(&mut self, deadline: u64) {
        while self.conns.iter().any(Conn::in_flight) && !self.stopped() {
            let now = sys::now_ns();
            if now >= deadline {
                return;
            }
            self.poll(now, deadline.min(now + MAX_SLEEP_NS));
        }
    }

    /// Requests still unanswered when the thread stops never got a response
    /// within the timeout: count them as timeouts rather than lose them.
    fn count_abandoned(&mut self) {
        if self.stopped() {
            return;
        }
        let abandoned = self.conns.iter().filter(|c| c.in_flight()).count();
        for _ in 0..abandoned {
            self.stats.error(ErrorKind::Timeout, "no response before the end of the run");
        }
    }

    /// Waits for socket events until `wake_at` (or the stop-check bound)
    /// and handles them, then restarts connections whose back-off expired.
    fn poll(&mut self, now: u64, wake_at: u64) {
        let timeout = Duration::from_nanos(wake_at.saturating_sub(now).min(MAX_SLEEP_NS));
        // A failed wait (only EINTR in practice, which returns 0) just
        // means another turn of the loop.
        let n = self.poller.poll(Some(timeout)).unwrap_or(0);
        for k in 0..n {
            let event = self.poller.ready(k);
            let i = event.token as usize;
            if event.writable || event.closed {
                self.on_writable(i);
            }
            if event.readable || event.closed {
                self.on_readable(i, event.closed);
            }
        }
        let now = sys::now_ns();
        self.restart_backed_off(now);
        self.send_delayed(now);
    }

    // ----- sending -------------------------------------------------------

    /// Paced mode: gives every due request of the plan to an idle
    /// connection. A due request with no idle connection waits (it stays
    /// the plan's next request) and its latency still counts from its
    /// intended time.
    fn dispatch_due(&mut self, mut now: u64) {
        if !self.sending {
            return;
        }
        while let Some(plan) = self.plan.as_mut() {
            let intended = plan.next_due_ns();
            // The plan ends with the run: a request due at or after the end
            // is not part of it, even if a response lets us look late.
            if intended > now || intended >= self.end_ns {
                return;
            }
            let Some(i) = self.idle.pop_front() else { return };
            plan.advance();
            self.send(i, intended, true);
            now = sys::now_ns();
        }
    }

    /// A connection is ready for its next request: closed loop sends one
    /// at once (after the script's `delay()`, if it has one); paced mode
    /// queues the connection for the plan.
    fn became_idle(&mut self, i: usize) {
        self.conns[i].phase = Phase::Idle;
        if self.sending && self.plan.is_none() {
            return match self.script_delay() {
                Some(delay) if delay > 0 => {
                    self.conns[i].phase = Phase::Delayed;
                    self.delayed.push(Reverse((sys::now_ns() + delay, i)));
                }
                Some(_) => self.send(i, sys::now_ns(), false),
                None => {}
            };
        }
        self.idle.push_back(i);
        self.dispatch_due(sys::now_ns());
    }

    /// The script's `delay()` in ns (0 without one); None if it failed.
    /// wrk2 has no `delay()`, and with `-R` the plan sets the send times,
    /// so it is only called in closed-loop mode.
    fn script_delay(&mut self) -> Option<u64> {
        let ThreadRequests::Script(script) = &mut self.requests else { return Some(0) };
        if !script.has_delay() {
            return Some(0);
        }
        match script.delay() {
            Ok(delay) => Some(delay.as_nanos() as u64),
            Err(e) => {
                self.script_failed(e.to_string());
                None
            }
        }
    }

    /// Sends on the connections whose `delay()` is over.
    fn send_delayed(&mut self, now: u64) {
        while let Some(&Reverse((at, i))) = self.delayed.peek() {
            if at > now {
                return;
            }
            self.delayed.pop();
            if self.conns[i].phase == Phase::Delayed && self.sending && !self.thread_stopped {
                self.send(i, now, false);
            }
        }
    }

    /// A script call failed: the run stops (all threads), the report of
    /// what was measured is still printed, and pace exits with code 3.
    fn script_failed(&mut self, error: String) {
        self.script_error.get_or_insert(error);
        self.thread_stopped = true;
        self.sending = false;
        self.stop.store(true, Ordering::Relaxed);
    }

    /// After a script call: `thread:stop()` ends this thread's sending.
    fn check_thread_stop(&mut self) {
        if let ThreadRequests::Script(script) = &self.requests {
            if script.stop_requested() {
                self.thread_stopped = true;
                self.sending = false;
            }
        }
    }

    /// Starts writing the request batch on connection `i`. `intended` is
    /// the plan's time for it (closed loop: now); in paced mode the
    /// schedule lag is recorded.
    fn send(&mut self, i: usize, intended: u64, paced: bool) {
        let request = match &mut self.requests {
            ThreadRequests::Fixed(bytes) => bytes.clone(),
            ThreadRequests::Script(script) => match script.request() {
                Ok(bytes) => bytes,
                Err(e) => return self.script_failed(e.to_string()),
            },
        };
        let sent = sys::now_ns();
        if paced {
            self.stats.lag.saturating_record(sent.saturating_sub(intended) / 1000);
        }
        let conn = &mut self.conns[i];
        conn.request = request;
        conn.intended_ns = intended;
        conn.sent_ns = sent;
        conn.pending = self.setup.heads.len();
        conn.written = 0;
        conn.parser.start(self.setup.heads[0]);
        conn.phase = Phase::Writing;
        self.write_more(i);
        self.check_thread_stop();
    }

    /// Writes as much of the request as the socket takes.
    fn write_more(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        let Some(stream) = conn.stream.as_mut() else { return };
        while conn.written < conn.request.len() {
            match stream.write(&conn.request[conn.written..]) {
                Ok(0) => return self.fail(i, ErrorKind::Write, "connection closed"),
                Ok(n) => conn.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(i, ErrorKind::Write, &io_cause(&e)),
            }
        }
        match stream.flush() {
            Ok(true) => conn.phase = Phase::Reading,
            Ok(false) => {}
            Err(e) => self.fail(i, ErrorKind::Write, &io_cause(&e)),
        }
    }

    // ----- events ----------------------------------------------------------

    fn on_writable(&mut self, i: usize) {
        match self.conns[i].phase {
            Phase::Connecting => self.finish_connect(i),
            Phase::Handshaking => self.continue_handshake(i),
            Phase::Writing => self.write_more(i),
            _ => {}
        }
    }

    /// `closing`: the peer has closed its side, so the data is followed by
    /// an end of stream that only a read returning 0 reveals.
    fn on_readable(&mut self, i: usize, closing: bool) {
        match self.conns[i].phase {
            Phase::Handshaking => self.continue_handshake(i),
            Phase::Reading | Phase::Writing | Phase::Idle => self.read(i, closing),
            _ => {}
        }
    }

    fn finish_connect(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        let Some(stream) = conn.stream.as_ref() else { return };
        match stream.socket().take_error() {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) => return self.fail(i, ErrorKind::Connect, &io_cause(&e)),
        }
        // A refused connect can also show up as "not connected" here.
        if let Err(e) = stream.socket().peer_addr() {
            return self.fail(i, ErrorKind::Connect, &io_cause(&e));
        }
        conn.phase = Phase::Handshaking;
        self.continue_handshake(i);
    }

    fn continue_handshake(&mut self, i: usize) {
        let Some(stream) = self.conns[i].stream.as_mut() else { return };
        match stream.handshake() {
            Ok(true) => self.became_idle(i),
            Ok(false) => {}
            Err(e) => self.fail(i, ErrorKind::Connect, &format!("TLS handshake: {e}")),
        }
    }

    /// Reads everything the socket has and feeds the response parser. A
    /// short read ends the loop unless the peer is closing (edge-triggered
    /// epoll would not report the end of stream again).
    fn read(&mut self, i: usize, until_end: bool) {
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(stream) = self.conns[i].stream.as_mut() {
            let drains = stream.short_read_drains();
            match stream.read(&mut buf) {
                Ok((0, _)) => {
                    self.peer_closed(i);
                    break;
                }
                Ok((n, stamp)) => {
                    self.stats.bytes += n as u64;
                    self.conns[i].received += n;
                    let now = sys::now_ns();
                    let arrived = stamp.map_or(now, |wall| self.wall_clock.to_now_ns(wall, now));
                    if !self.parse(i, &buf[..n], arrived) || (drains && !until_end && n < buf.len())
                    {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(i, ErrorKind::Read, &io_cause(&e));
                    break;
                }
            }
        }
        self.buf = buf;
        let conn = &self.conns[i];
        let large_and_incomplete = conn.stream.is_some()
            && conn.in_flight()
            && !conn.parser.is_idle()
            && conn.received >= LARGE_RESPONSE;
        self.set_receiving(i, large_and_incomplete);
    }

    /// Keeps the count of connections in the middle of a response.
    fn set_receiving(&mut self, i: usize, receiving: bool) {
        let conn = &mut self.conns[i];
        if conn.receiving != receiving {
            conn.receiving = receiving;
            if receiving {
                self.receiving += 1;
            } else {
                self.receiving -= 1;
            }
        }
    }

    /// Feeds bytes to connection `i`'s parser. Returns false when the
    /// connection was closed or replaced meanwhile.
    fn parse(&mut self, i: usize, mut data: &[u8], arrived: u64) -> bool {
        while !data.is_empty() {
            if self.conns[i].pending == 0 {
                self.fail(i, ErrorKind::Read, "data received with no request outstanding");
                return false;
            }
            match self.conns[i].parser.feed(data) {
                Ok(feed) => {
                    data = &data[feed.consumed..];
                    if let Some(response) = feed.done {
                        if !self.response_complete(i, response, arrived) {
                            return false;
                        }
                    }
                }
                Err(e) => {
                    self.fail(i, ErrorKind::Read, e.as_str());
                    return false;
                }
            }
        }
        true
    }

    /// The peer closed the connection (a zero-byte read).
    fn peer_closed(&mut self, i: usize) {
        match self.conns[i].parser.eof() {
            Ok(Some(response)) => {
                if self.response_complete(i, response, sys::now_ns()) {
                    self.reconnect(i);
                }
            }
            Ok(None) if self.conns[i].pending == 0 => self.reconnect(i),
            Ok(None) => self.fail(i, ErrorKind::Read, "connection closed before the response"),
            Err(e) => self.fail(i, ErrorKind::Read, e.as_str()),
        }
    }

    /// Records a complete response. Returns false if the connection was
    /// closed (not keep-alive), so the caller stops using it.
    /// `now` is when the response arrived (the kernel's receive stamp).
    fn response_complete(&mut self, i: usize, response: Response, now: u64) -> bool {
        self.stats.response(response.status);
        self.completed += 1;
        self.last_response_ns = now;
        if let Some(slot_ns) = self.setup.series_ns {
            let slot = (now.saturating_sub(self.start_ns) / slot_ns) as usize;
            if slot >= self.series.len() {
                self.series.resize(slot + 1, 0);
            }
            self.series[slot] += 1;
        }
        let conn = &mut self.conns[i];
        conn.received = 0;
        conn.pending -= 1;
        if conn.pending == 0 || !self.setup.batch_latency {
            self.stats.corrected.saturating_record(now.saturating_sub(conn.intended_ns) / 1000);
            self.stats.uncorrected.saturating_record(now.saturating_sub(conn.sent_ns) / 1000);
        }
        if conn.pending > 0 {
            let next = self.setup.heads.len() - conn.pending;
            conn.parser.start(self.setup.heads[next]);
        }
        self.script_response(&response);
        if self.conns[i].pending > 0 {
            return true;
        }
        let conn = &mut self.conns[i];
        conn.failures = 0;
        if !response.keep_alive {
            self.reconnect(i);
            return false;
        }
        if conn.phase == Phase::Reading {
            self.became_idle(i);
        }
        true
    }

    /// Hands a captured response to the script's `response()`.
    fn script_response(&mut self, response: &Response) {
        let (ThreadRequests::Script(script), Some(captured)) =
            (&mut self.requests, &response.captured)
        else {
            return;
        };
        match script.response(response.status, &captured.headers, &captured.body) {
            Ok(()) => self.check_thread_stop(),
            Err(e) => self.script_failed(e.to_string()),
        }
    }

    // ----- connection life cycle --------------------------------------------

    fn connect(&mut self, i: usize, now: u64) {
        self.conns[i].connect_started_ns = now;
        let addr = match &self.requests {
            ThreadRequests::Script(script) => script.addr(),
            ThreadRequests::Fixed(_) => self.setup.addr,
        };
        let stream = match start_connect(addr) {
            Ok(socket) => socket,
            Err(e) => return self.fail(i, ErrorKind::Connect, &io_cause(&e)),
        };
        let stream = match &self.setup.tls {
            None => Transport::plain(stream),
            Some(tls) => match tls.session() {
                Ok(session) => Transport::tls(stream, session),
                Err(e) => return self.fail(i, ErrorKind::Connect, &format!("TLS: {e}")),
            },
        };
        if let Err(e) = self.poller.add(stream.socket(), i as u64, Interest::ReadWrite) {
            return self.fail(i, ErrorKind::Connect, &io_cause(&e));
        }
        let conn = &mut self.conns[i];
        conn.stream = Some(stream);
        conn.phase = Phase::Connecting;
        conn.pending = 0;
    }

    /// Closes connection `i`'s socket and forgets its request in flight.
    fn close(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        if let Some(stream) = conn.stream.take() {
            self.poller.delete(stream.socket());
        }
        conn.pending = 0;
        conn.received = 0;
        // Only idle connections wait in the queue; a connection closed
        // after its response (`Connection: close`) is not searched for.
        let was_idle = conn.phase == Phase::Idle;
        conn.phase = Phase::BackingOff;
        if was_idle {
            self.idle.retain(|&c| c != i);
        }
        self.set_receiving(i, false);
    }

    /// Closes and reopens at once (the server closed an idle keep-alive
    /// connection, or answered `Connection: close`).
    fn reconnect(&mut self, i: usize) {
        self.close(i);
        self.connect(i, sys::now_ns());
    }

    /// Counts an error on connection `i`, closes it, and schedules a
    /// reconnect after the back-off for its run of failures.
    fn fail(&mut self, i: usize, kind: ErrorKind, cause: &str) {
        self.stats.error(kind, cause);
        self.close(i);
        let conn = &mut self.conns[i];
        conn.failures += 1;
        let at = sys::now_ns() + backoff_ns(conn.failures);
        self.reconnects.push(Reverse((at, i)));
    }

    fn restart_backed_off(&mut self, now: u64) {
        while let Some(&Reverse((at, i))) = self.reconnects.peek() {
            if at > now {
                return;
            }
            self.reconnects.pop();
            if self.conns[i].phase == Phase::BackingOff {
                self.connect(i, now);
            }
        }
    }

    /// A request with no complete response within the timeout is counted
    /// and its connection replaced (wrk never counted hung requests; wrk2
    /// counted them every 2 s without closing). Connects that hang count as
    /// connect errors.
    fn expire_timeouts(&mut self, now: u64) {
        let timeout = self.setup.timeout_ns;
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            if conn.in_flight() && now.saturating_sub(conn.sent_ns) > timeout {
                self.fail(i, ErrorKind::Timeout, "no response within the timeout");
            } else if conn.opening() && now.saturating_sub(conn.connect_started_ns) > timeout {
                self.fail(i, ErrorKind::Connect, "connect timed out");
            }
        }
    }
}

/// An I/O error as an error cause: the OS message without the
/// `(os error N)` suffix, so causes read well in the report.
fn io_cause(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}
