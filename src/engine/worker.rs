//! One engine thread: its loop reads as "wait, handle what happened, send
//! what is due", over four parts with one job each:
//! - the [`Connections`] speak the run's protocol on their links;
//! - the [`Schedule`] says which request is due and on which connection
//!   (the closed loop, or the thread's share of the plan);
//! - the [`Source`] says what to send (batches made before the run, or a
//!   script's);
//! - the [`Recorder`] measures.
//!
//! How the thread waits is [`wake::choose`]'s decision.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::connections::Connections;
use super::parked::Parked;
use super::protocol::{Outgoing, Protocol, Ticket};
use super::recorder::Recorder;
use super::schedule::Schedule;
use super::source::Source;
use super::start_line::StartLine;
use super::wake::{self, EventSpin, Lateness, Outlook};
use crate::plan::Plan;
use crate::stats::ErrorKind;
use crate::sys;
use crate::workload::{ScriptError, Scripted};

/// How long a closed-loop connection whose `request()` returned nil waits
/// before asking again.
const NO_REQUEST_RETRY_NS: u64 = 10_000_000;

/// What a thread knows of the run besides its parts.
pub struct RunSetup {
    /// This thread's first request of the global plan and the stride to
    /// its next ones (its shard's and thread's stripe).
    pub first_k: u64,
    pub stride: u64,
    /// The global plan (None: closed loop).
    pub plan: Option<Plan>,
    /// How long the plan lasts (the warm-up included; `u64::MAX`: until
    /// the budget is spent).
    pub duration_ns: u64,
    /// The requests this thread may still send (`-n` in the closed loop).
    pub budget: Option<u64>,
    pub timeout_ns: u64,
}

/// What a thread hands back when it is done (its measurements went to the
/// collector, period by period).
pub struct WorkerResult<S> {
    /// When the measured part began (after the warm-up).
    pub start_ns: u64,
    /// When the sending window ended: the end of the plan or `-d`, the
    /// stop, or (a closed loop whose `-n` requests were done) the last
    /// response. The rates are over the window.
    pub window_end_ns: u64,
    /// Completed requests per time-series slot.
    pub series: Vec<u64>,
    /// The thread's script, handed back for `done()`.
    pub script: Option<S>,
    /// The script error that stopped the run.
    pub script_error: Option<String>,
    /// The script stopped this thread (`thread:stop()`).
    pub script_stopped: bool,
}

pub struct Worker<P: Protocol, S> {
    run: RunSetup,
    connections: Connections<P>,
    schedule: Schedule,
    source: Source<P, S>,
    recorder: Recorder,
    script_error: Option<String>,
    /// Set by a signal or by a script error in any thread: every thread
    /// stops sending, and lets the requests in flight answer.
    stop: Arc<AtomicBool>,
    /// Set by a second signal (or the watchdog): every thread stops at
    /// once; what is still in flight is cut off.
    hurry: Arc<AtomicBool>,
    /// The intended times of the batch being sent (reused).
    intended: Vec<u64>,
    /// How late this thread's sleeps end: it wakes that much early.
    lateness: Lateness,
    event_spin: EventSpin,
    /// Time spent spinning, on the clock or on events, since the run
    /// began: on the CPU but not working (see [`Recorder::thread_time`]).
    spun_ns: u64,
    /// A paced run over several origins: the due requests waiting for a
    /// connection to their origin.
    parked: Option<Parked>,
}

impl<P: Protocol, S: Scripted> Worker<P, S> {
    pub fn new(
        run: RunSetup,
        connections: Connections<P>,
        source: Source<P, S>,
        recorder: Recorder,
        stop: Arc<AtomicBool>,
        hurry: Arc<AtomicBool>,
    ) -> Worker<P, S> {
        Worker {
            run,
            connections,
            schedule: Schedule::closed_loop(),
            source,
            recorder,
            script_error: None,
            stop,
            hurry,
            intended: Vec::new(),
            lateness: Lateness::default(),
            event_spin: EventSpin::default(),
            spun_ns: 0,
            parked: None,
        }
    }

    /// Opens the connections, waits for the common start, runs the
    /// benchmark until the end (or a stop), then collects the responses in
    /// flight, each for up to the timeout. What fell due and found no
    /// connection before the end is not sent after it (see
    /// [`Recorder::give_up`]): the sending window is the plan's.
    pub fn run(mut self, start_line: &StartLine) -> WorkerResult<S> {
        sys::set_minimal_timer_slack();
        self.connections.open_all(&self.source.endpoint(), &mut self.recorder);
        self.open_connections();
        let Some(start_ns) = start_line.wait() else {
            let now = sys::now_ns();
            return self.result(now, now, now);
        };
        // A start set by --start-at may lie ahead.
        self.wait_until(start_ns);
        self.recorder.start(start_ns);
        let end_ns = start_ns.saturating_add(self.run.duration_ns);
        if let Some(plan) = &self.run.plan {
            let share = plan.share(self.run.first_k, self.run.stride, start_ns);
            self.schedule = Schedule::paced(share, end_ns);
            let origins = self.source.origins();
            if origins > 1 {
                self.parked = Some(Parked::new(origins, self.source.depth()));
            }
        }
        // As every later request, the first one waits for the script's
        // delay() (wrk: "including the first").
        self.absorb();
        let (cpu_before, cpu_wait_before) = (sys::thread_cpu_ns(), sys::thread_cpu_wait_ns());
        self.run_until(start_ns, end_ns);

        let sending_ended = end_ns.min(sys::now_ns());
        let cpu = sys::thread_cpu_ns().saturating_sub(cpu_before);
        let cpu_wait = sys::thread_cpu_wait_ns()
            .zip(cpu_wait_before)
            .map_or(0, |(after, before)| after.saturating_sub(before));
        let sending = sending_ended.saturating_sub(start_ns);
        if sending > 0 {
            let share = |ns: u64| (ns as f64 / sending as f64).min(1.0);
            let working = cpu.saturating_sub(self.spun_ns);
            self.recorder.thread_time(share(cpu), share(working), share(cpu_wait));
        }
        if self.done_sending() {
            self.pass_over_due_at_stop(sending_ended);
        }
        // What fell due in the window and is still waiting was never sent.
        self.give_up_unsent(sending_ended);
        self.collect_in_flight();
        self.connections.say_goodbye(&mut self.recorder);
        // Requests a server left unprocessed (a GOAWAY) that found no
        // connection again before the end (or during the wait for the last
        // responses): an error when a server refused them, unsent when
        // none ever took them.
        let now = sys::now_ns();
        for retry in self.connections.take_retries() {
            let target = retry.batch.target;
            if retry.tries == 0 {
                self.recorder.give_up_one(retry.intended, now, target);
                continue;
            }
            let cause = format!(
                "{}: not processed by the server (GOAWAY), and no connection took it again \
                 before the end",
                P::CHOICE
            );
            self.recorder.error(ErrorKind::Read, &cause);
            self.recorder.lost(target);
        }
        let finished_ns = if self.hurried() {
            sys::now_ns()
        } else {
            sending_ended.max(self.recorder.last_response_ns())
        };
        self.count_cut_off();
        // The rates are over the sending window; a closed loop that ended
        // because its -n requests were done lasts until they were answered.
        let window_end = if self.run.budget == Some(0) { finished_ns } else { sending_ended };
        let measured_from = self.recorder.measured_start_ns();
        self.result(measured_from, window_end, finished_ns)
    }

    /// Stops a script call of this thread's that does not return, from
    /// another thread.
    pub fn interrupter(&self) -> Option<Box<dyn crate::workload::Interrupt>> {
        self.source.interrupter()
    }

    /// What the thread hands back; `finished_ns` (its last response, or
    /// the stop) ends its last period.
    fn result(self, start_ns: u64, window_end_ns: u64, finished_ns: u64) -> WorkerResult<S> {
        WorkerResult {
            start_ns,
            window_end_ns,
            series: self.recorder.finish(finished_ns),
            script_stopped: self.source.stopped(),
            script: self.source.into_script(),
            script_error: self.script_error,
        }
    }

    /// A signal, or a script error in any thread: no more sends.
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// A second signal, or the watchdog: no more waiting either.
    fn hurried(&self) -> bool {
        self.hurry.load(Ordering::Relaxed)
    }

    /// This thread sends nothing more: stopped, its script said so, or its
    /// `-n` budget is spent (and nothing it took is still parked).
    fn done_sending(&self) -> bool {
        self.stopped()
            || self.source.stopped()
            || self.script_error.is_some()
            || (self.budget_spent() && self.parked.as_ref().is_none_or(Parked::is_empty))
    }

    /// The `-n` budget allows no more requests from the plan.
    fn budget_spent(&self) -> bool {
        self.run.budget == Some(0)
    }

    /// Waits on the clock until `at` (or a stop), precisely.
    fn wait_until(&mut self, at: u64) {
        while !self.stopped() {
            let now = sys::now_ns();
            let early = self.lateness.early_ns();
            if now.saturating_add(early) >= at {
                break;
            }
            let nap = (at - early - now).min(50_000_000);
            std::thread::sleep(Duration::from_nanos(nap));
        }
        while sys::now_ns() < at && !self.stopped() {
            std::hint::spin_loop();
        }
    }

    /// Before the plan starts: let every connection finish its TCP (and
    /// TLS) set-up, so the first requests are not charged for it. A
    /// connection still opening after the timeout goes on opening during
    /// the run (and fails there when it times out).
    fn open_connections(&mut self) {
        let deadline = sys::now_ns().saturating_add(self.run.timeout_ns);
        while self.connections.any_opening() && !self.stopped() {
            let now = sys::now_ns();
            if now >= deadline {
                break;
            }
            let until = deadline.min(self.connections.next_due_at().unwrap_or(deadline));
            self.connections.poll(wake::events_until(now, until), None, &mut self.recorder);
            self.run_due();
        }
    }

    /// The main loop: wait, handle what happened, send what is due.
    fn run_until(&mut self, start_ns: u64, end_ns: u64) {
        let scan_every = self.timeout_scan_interval();
        let mut next_scan = start_ns.saturating_add(scan_every);
        loop {
            let now = sys::now_ns();
            // First: a request due before the end goes out even when the
            // thread woke after the end.
            self.send_due(now);
            if now >= end_ns || self.done_sending() {
                return;
            }
            if now >= next_scan {
                self.connections.expire_timeouts(now, &mut self.recorder);
                next_scan = now.saturating_add(scan_every);
            }
            let (connections, schedule) = (&self.connections, &self.schedule);
            let parked = self.parked.as_ref().and_then(Parked::oldest);
            let oldest_waiting = || {
                let in_flight = connections.oldest_in_flight();
                in_flight.into_iter().chain(schedule.oldest_due(now)).chain(parked).min()
            };
            let next_tick = self.recorder.tick(now, oldest_waiting);
            let mut deadline = end_ns.min(next_scan).min(next_tick);
            if let Some(at) = self.connections.next_due_at() {
                deadline = deadline.min(at);
            }
            let origin = self.source.next_origin();
            let connections = &self.connections;
            let fits = |ticket: Ticket| connections.origin_of(ticket.conn) == origin;
            let outlook = Outlook {
                now,
                deadline,
                // A spent budget sends nothing more from the plan (what
                // is parked still goes when its connection is free).
                next_send: self.schedule.next_send_at().filter(|_| !self.budget_spent()),
                paced: self.schedule.is_paced(),
                connection_ready: self.schedule.has_ready_connection(fits),
                receiving_large_response: self.connections.receiving_large_response(),
                waiting_for_origin: parked.is_some(),
            };
            let wait = wake::choose(&outlook, self.lateness.early_ns());
            let timeout = wait.on_the_clock(sys::now_ns, &mut self.lateness, &mut self.spun_ns);
            let connections = &self.connections;
            let spin = if timeout.is_zero() {
                None // after a clock wait: only collecting is left
            } else {
                self.event_spin.spin(|limit| connections.in_flight_at_most(limit))
            };
            let waited = self.connections.poll(timeout, spin, &mut self.recorder);
            self.spun_ns += waited.spun.as_nanos() as u64;
            if let Some(after) = waited.first_after {
                self.event_spin.observe(after);
            }
            self.absorb();
        }
    }

    /// Sends every batch that is due, each on a ready connection to its
    /// origin, and writes them (over a multiplexed protocol, a write per
    /// connection for all the batches it took).
    fn send_due(&mut self, now: u64) {
        self.start_due(now);
        self.connections.write_started(&mut self.recorder);
    }

    /// Starts every batch that is due, each on a ready connection to its
    /// origin; with several origins, one that has none ready parks it.
    fn start_due(&mut self, mut now: u64) {
        let depth = self.source.depth();
        while !self.done_sending() {
            let connections = &self.connections;
            let is_ready = |ticket| connections.is_ready(ticket);
            // A request a server left unprocessed goes first: it is late.
            if connections.has_retry() {
                let fits = |ticket: Ticket| connections.has_retry_for(ticket.conn);
                if let Some(ticket) = self.schedule.pop_ready(now, is_ready, fits) {
                    self.connections.send_retry(ticket.conn, &mut self.recorder);
                    continue;
                }
            }
            // Then a parked one, older than any still in the plan.
            if let Some(sent) = self.send_parked(now) {
                now = sent;
                continue;
            }
            if self.budget_spent() {
                return;
            }
            // The plan's next request goes to this origin.
            let origin = self.source.next_origin();
            let connections = &self.connections;
            let is_ready = |ticket| connections.is_ready(ticket);
            let fits = |ticket: Ticket| connections.origin_of(ticket.conn) == origin;
            let Some(ticket) =
                self.schedule.pop_due(now, depth, is_ready, fits, &mut self.intended)
            else {
                if self.park_due(now, origin, depth) {
                    continue;
                }
                return;
            };
            self.source.move_on();
            let origin = self.connections.origin_of(ticket.conn);
            let batch = match self.source.next_batch(origin, ticket.conn) {
                Ok(Some(batch)) => batch,
                Ok(None) => {
                    self.no_request(ticket, now);
                    continue;
                }
                Err(error) => return self.script_failed(error),
            };
            if let Some(budget) = &mut self.run.budget {
                *budget = budget.saturating_sub(P::depth(&batch.wire) as u64);
            }
            now = self.send(ticket, batch);
        }
    }

    /// Sends `batch` on the connection of `ticket`, for the intended times
    /// in `self.intended`; returns when it was sent (the send took time: a
    /// later request of the plan may be due by then).
    fn send(&mut self, ticket: Ticket, batch: Outgoing<P::Wire>) -> u64 {
        let sent = self.connections.send(ticket.conn, batch, &self.intended, &mut self.recorder);
        self.recorder.sent(&self.intended, sent, ticket.since);
        sent
    }

    /// Sends the oldest parked batch of an origin that has a connection
    /// ready; returns when it was sent, None when nothing was.
    fn send_parked(&mut self, now: u64) -> Option<u64> {
        let parked = self.parked.as_mut().filter(|parked| !parked.is_empty())?;
        let connections = &self.connections;
        let is_ready = |ticket| connections.is_ready(ticket);
        let (origin, ticket) = parked.waiting().find_map(|origin| {
            let fits = |ticket: Ticket| connections.origin_of(ticket.conn) == origin;
            Some((origin, self.schedule.pop_ready(now, is_ready, fits)?))
        })?;
        parked.take(origin, &mut self.intended);
        // A source of several origins always has a request for each.
        let batch = self.source.next_batch(origin, ticket.conn).ok().flatten()?;
        Some(self.send(ticket, batch))
    }

    /// The plan's next batch, for `origin`, is due at `now` and no
    /// connection to its origin is ready: with several origins it waits
    /// apart, parked, and the plan goes on (false: it stays the plan's
    /// next, and the plan waits with it).
    fn park_due(&mut self, now: u64, origin: usize, depth: usize) -> bool {
        let Some(parked) = self.parked.as_mut().filter(|parked| parked.has_room(origin)) else {
            return false;
        };
        if !self.schedule.take_due(now, depth, &mut self.intended) {
            return false;
        }
        parked.park(origin, &self.intended);
        self.source.move_on();
        if let Some(budget) = &mut self.run.budget {
            *budget = budget.saturating_sub(depth as u64);
        }
        true
    }

    /// Gives up, at `at`, what fell due and was not sent: the parked
    /// requests (each of its own target), then the plan's due requests (the
    /// targets the order names next).
    fn give_up_unsent(&mut self, at: u64) {
        if let Some(parked) = &mut self.parked {
            loop {
                let Some(origin) = parked.waiting().next() else { break };
                parked.take(origin, &mut self.intended);
                // Only a source of several origins parks (and it makes
                // nothing per connection).
                let target = match self.source.next_batch(origin, 0) {
                    Ok(Some(batch)) => batch.target,
                    _ => 0,
                };
                for &intended in &self.intended {
                    self.recorder.give_up_one(intended, at, target);
                }
            }
        }
        let Some(plan) = self.schedule.rest_of_plan() else { return };
        let (of_warmup, of_run) = self.recorder.give_up(plan, at, at);
        if of_run > 0 && self.recorder.records_targets() {
            for (target, n) in self.source.targets_ahead(of_warmup, of_run) {
                self.recorder.unsent_of_target(target, n);
            }
        }
    }

    /// The script's `request()` gave no request (nil) for the connection
    /// of `ticket`: counted, and the connection tries again for its next
    /// send (wrk's connection sends nothing more); in the closed loop after
    /// a pause, so that a script that keeps returning nil does not spin.
    fn no_request(&mut self, ticket: Ticket, now: u64) {
        self.recorder.no_request();
        let retry = (!self.schedule.is_paced()).then_some(now.saturating_add(NO_REQUEST_RETRY_NS));
        self.schedule.ready(ticket, retry);
    }

    /// Acts on what the last poll brought: complete responses go to the
    /// script, ready connections to the schedule (after the script's
    /// `delay()`), closed connections whose back-off is over are reopened.
    fn absorb(&mut self) {
        self.deliver_responses();
        // The clock is read only for a script's delay().
        let mut now = None;
        for ticket in self.connections.take_ready() {
            let delay = match self.source.delay() {
                Ok(delay) => delay,
                Err(error) => {
                    self.script_error.get_or_insert(error.to_string());
                    continue;
                }
            };
            let delay_ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
            let not_before = (!delay.is_zero())
                .then(|| now.get_or_insert_with(sys::now_ns).saturating_add(delay_ns));
            self.schedule.ready(ticket, not_before);
        }
        if self.script_error.is_some() {
            self.stop.store(true, Ordering::Relaxed);
        }
        self.run_due();
    }

    /// Reopens the connections whose back-off is over, and fires the
    /// protocol timers that are due.
    fn run_due(&mut self) {
        let Some(at) = self.connections.next_due_at() else { return };
        let now = sys::now_ns();
        if at <= now {
            self.connections.run_due(now, &self.source.endpoint(), &mut self.recorder);
        }
    }

    /// A script call failed: the run stops (all threads), the report of
    /// what was measured is still printed, and pace exits with code 3.
    fn script_failed(&mut self, error: ScriptError) {
        self.script_error.get_or_insert(error.to_string());
        self.stop.store(true, Ordering::Relaxed);
    }

    /// How often requests are checked against the timeout.
    fn timeout_scan_interval(&self) -> u64 {
        (self.run.timeout_ns / 4).clamp(1_000_000, 100_000_000)
    }

    /// The run was stopped (a signal, the script, or its `-n` requests
    /// are done) at `stopped_at`: a request due then with a connection
    /// ready for it was not sent because of the stop, not for want of a
    /// connection, so it is no part of the run.
    fn pass_over_due_at_stop(&mut self, stopped_at: u64) {
        let depth = self.source.depth();
        loop {
            let origin = self.source.next_origin();
            let connections = &self.connections;
            let is_ready = |ticket| connections.is_ready(ticket);
            let fits = |ticket: Ticket| connections.origin_of(ticket.conn) == origin;
            let due = self.schedule.pop_due(stopped_at, depth, is_ready, fits, &mut self.intended);
            if due.is_none() {
                return;
            }
            self.source.pass_over(origin);
        }
    }

    /// After the sends: the requests in flight may still answer, each
    /// until its own timeout; their latencies count. A request an HTTP/2
    /// server's GOAWAY left unprocessed is one of them (sent in the window,
    /// not new load): it goes again for up to the timeout, unless the run
    /// was stopped. A second signal ends the wait at once.
    fn collect_in_flight(&mut self) {
        let scan_every = self.timeout_scan_interval();
        let retry_until = sys::now_ns().saturating_add(self.run.timeout_ns);
        loop {
            let now = sys::now_ns();
            let retrying = self.connections.has_retry() && !self.stopped() && now < retry_until;
            if self.hurried() || !(self.connections.any_in_flight() || retrying) {
                return;
            }
            self.connections.expire_timeouts(now, &mut self.recorder);
            let mut until = now.saturating_add(scan_every);
            if retrying {
                until = until.min(retry_until);
                if let Some(at) = self.connections.next_due_at() {
                    until = until.min(at.max(now));
                }
            }
            // The streams of calls in flight still send on their plan.
            if let Some(at) = self.connections.next_timer_at() {
                until = until.min(at.max(now));
            }
            self.connections.poll(wake::events_until(now, until), None, &mut self.recorder);
            self.connections.fire_timers(sys::now_ns(), &mut self.recorder);
            // Responses still reach the script; nothing new is sent.
            self.deliver_responses();
            if retrying {
                self.run_due();
                self.send_retries();
            } else {
                self.connections.take_ready().for_each(drop);
            }
        }
    }

    /// Sends what waits to go again on the slots that became ready.
    fn send_retries(&mut self) {
        let tickets: Vec<Ticket> = self.connections.take_ready().collect();
        for ticket in tickets {
            if self.connections.has_retry_for(ticket.conn) && self.connections.is_ready(ticket) {
                self.connections.send_retry(ticket.conn, &mut self.recorder);
            }
        }
        self.connections.write_started(&mut self.recorder);
    }

    /// Hands the complete responses to the script's `response()`, in order
    /// (none after a script error).
    fn deliver_responses(&mut self) {
        for response in self.connections.take_responses() {
            if self.script_error.is_none() {
                if let Err(error) = self.source.on_response(response.status, &response.captured) {
                    self.script_error = Some(error.to_string());
                }
            }
        }
    }

    /// Requests still in flight when the thread stops at once were cut
    /// off by the stop: their own count, not timeouts (they did not have
    /// their timeout), and no diagnosis rests on them.
    fn count_cut_off(&mut self) {
        let cut_off = self.connections.requests_in_flight();
        if cut_off > 0 {
            self.recorder.stopped_in_flight(cut_off);
        }
    }
}

/// A worker run end to end against pace's own server on loopback: the
/// closed loop's `-n`, and a plan's share sent at its times.
#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::endpoint::Endpoint;
    use crate::engine::connections::ConnectionSetup;
    use crate::engine::http1::{Http1, Http1Setup};
    use crate::engine::origin::Origin;
    use crate::engine::protocol::Context;
    use crate::engine::recorder::{PeriodChannel, RecorderSetup, ThreadInterval};
    use crate::plan::PlanSpec;
    use crate::request::Request;
    use crate::serve::{self, ServeOptions, ServerHandle};
    use crate::stats::Stats;
    use crate::target::Target;
    use crate::workload::{NoScript, Order};

    const MS: u64 = 1_000_000;

    fn server() -> ServerHandle {
        let options = ServeOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
            ..ServeOptions::default()
        };
        serve::start(options).unwrap()
    }

    /// A worker of `connections` to `server`, with `run`; and where its
    /// periods go.
    fn worker(
        server: &ServerHandle,
        connections: usize,
        paced: bool,
        run: RunSetup,
    ) -> (Worker<Http1, NoScript>, mpsc::Receiver<ThreadInterval>) {
        let at = server.addr();
        let target = Target::parse(&format!("http://{at}/")).unwrap();
        let origin = Origin {
            target,
            endpoint: Endpoint::Tcp(at),
            tls: None,
            tunnel: None,
            allowed_streams: None,
        };
        let connections = Connections::new(ConnectionSetup {
            origins: Arc::from([origin]),
            per_origin: vec![connections],
            protocol: Http1Setup { capture: false },
            timeout_ns: 2_000 * MS,
        })
        .unwrap();
        let request = Request {
            method: "GET".into(),
            target: "/".into(),
            fields: vec![("Host".into(), at.to_string().into_bytes())],
            body: None,
        };
        let context = Context { scheme: "http".into(), authority: at.to_string() };
        let wire = Http1::encode(&[request], &context).unwrap();
        let batches = Arc::from([Outgoing { wire, target: 0, origin: 0 }]);
        let source = Source::fixed(batches, 1, 0, Endpoint::Tcp(at), Order::Sequential);
        let (to_collector, periods) = mpsc::channel();
        let (_, recycled) = mpsc::channel();
        let channel = PeriodChannel { to_collector, recycled };
        let recorder = Recorder::new(RecorderSetup { paced, ..RecorderSetup::plain(channel) });
        let stop = Arc::new(AtomicBool::new(false));
        let hurry = Arc::new(AtomicBool::new(false));
        (Worker::new(run, connections, source, recorder, stop, hurry), periods)
    }

    /// Everything the worker measured (one period: none were asked for).
    fn measured(periods: mpsc::Receiver<ThreadInterval>) -> Stats {
        let mut total = Stats::new(3);
        for share in periods.try_iter() {
            total.merge(&share.stats);
        }
        total
    }

    #[test]
    fn the_closed_loop_sends_its_budget_and_no_more() {
        let server = server();
        let run = RunSetup {
            first_k: 0,
            stride: 1,
            plan: None,
            duration_ns: u64::MAX,
            budget: Some(25),
            timeout_ns: 2_000 * MS,
        };
        let (worker, periods) = worker(&server, 2, false, run);
        let result = worker.run(&StartLine::new(1, None));
        let stats = measured(periods);
        assert_eq!((stats.requests, stats.errors.socket_total()), (25, 0));
        assert_eq!(stats.outcomes.http_status(200), 25);
        // The window of a closed loop bounded by -n ends with its last
        // response.
        assert!(result.window_end_ns > result.start_ns);
        server.stop();
    }

    #[test]
    fn a_plan_sends_its_share_at_its_times() {
        let server = server();
        // 1000/s for 50 ms: 50 requests, thread 0 of 1.
        let plan = PlanSpec::constant(1000.0).plan(Duration::ZERO, 0);
        let run = RunSetup {
            first_k: 0,
            stride: 1,
            plan: Some(plan),
            duration_ns: 50 * MS,
            budget: None,
            timeout_ns: 2_000 * MS,
        };
        let (worker, periods) = worker(&server, 4, true, run);
        let result = worker.run(&StartLine::new(1, None));
        let stats = measured(periods);
        // Every request of the plan ended as a response or as unsent.
        assert_eq!(stats.requests + stats.errors.unsent, 50);
        assert_eq!(stats.lag.len(), stats.requests);
        // The window is the plan's.
        assert_eq!(result.window_end_ns - result.start_ns, 50 * MS);
        server.stop();
    }
}
