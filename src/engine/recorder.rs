//! What an engine thread measures, as it happens: every exchange's latency
//! (from its intended and from its actual send time), schedule lag,
//! statuses, errors and bytes, the Req/Sec samples, the time series, and
//! the hand-over of each reporting period to the collector.
//!
//! Recording is a few counter increments per response: no locks, no
//! allocation. Measurements go to the collector at period boundaries only
//! when periods are wanted (`-p`, `--hlog`, the live progress); otherwise
//! once, at the end.
//! Handed-over measurements come back emptied, so a run allocates its
//! histograms once, however many periods it has.

use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use crate::plan::ThreadPlan;
use crate::stats::{course, ErrorKind, Outcome, QuicCounts, Stats};

use super::link::SetUpTimes;

/// Req/Sec is sampled per thread at this interval (wrk: 100 ms).
const RATE_SAMPLE_NS: u64 = 100_000_000;

/// When one request of a batch was meant to go and when it went (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exchange {
    /// The plan's intended send time of this request; the send time in
    /// the closed loop.
    pub intended: u64,
    /// The intended time of the batch's first request (`-B` counts a
    /// batch's latency from it).
    pub batch_intended: u64,
    /// When the batch's first byte was written.
    pub sent: u64,
    /// The batch's target (its index in a targets file, 0 otherwise).
    pub target: u32,
}

/// One thread's measurements for one reporting period.
pub struct ThreadInterval {
    pub thread: usize,
    pub index: u64,
    pub stats: Stats,
    /// Set on the thread's last period: when the thread finished, from the
    /// start of the run.
    pub ended: Option<Duration>,
    /// Only a part of the period, handed over early (see
    /// [`RecorderSetup::early_every_ns`]): more of it follows.
    pub early: bool,
}

/// Where a thread's periods go, and where they come back emptied.
pub struct PeriodChannel {
    pub to_collector: Sender<ThreadInterval>,
    pub recycled: Receiver<Stats>,
}

/// How a thread records.
pub struct RecorderSetup {
    pub thread: usize,
    pub digits: u8,
    /// The plan sets the send times: schedule lag is recorded.
    pub paced: bool,
    /// The plan is a Poisson process: each send is counted in its slot
    /// (`crate::stats::course`), for the check of the arrivals.
    pub count_sends: bool,
    /// `-B`: with pipelining, one latency per batch (its last response).
    pub batch_latency: bool,
    /// Length of a reporting period, when periods are wanted.
    pub period_ns: Option<u64>,
    /// When the thread calls a script during the run: how often at most
    /// what it measured goes over before its period ends. A script call
    /// that never returns (LuaJIT cannot interrupt a loop it compiled)
    /// then costs the report no more than this much of the thread's
    /// figures.
    pub early_every_ns: Option<u64>,
    pub periods: PeriodChannel,
    /// Length of a time-series slot, when a time series is wanted.
    pub series_ns: Option<u64>,
    /// The warm-up: the run's first part, measured apart.
    pub warmup_ns: u64,
    /// Where each stage of the plan starts, from the end of the warm-up
    /// (empty without stages).
    pub stage_starts_ns: Vec<u64>,
    /// The labels of the targets recorded apart (empty: none are).
    pub target_labels: Vec<Arc<str>>,
}

#[cfg(any(test, feature = "fuzzing"))]
impl RecorderSetup {
    /// Thread 0 of a closed loop, 3 digits, and nothing else recorded
    /// apart (no periods, series, warm-up, stages or targets): for unit
    /// tests and the fuzz targets.
    pub fn plain(periods: PeriodChannel) -> RecorderSetup {
        RecorderSetup {
            thread: 0,
            digits: 3,
            paced: false,
            count_sends: false,
            batch_latency: false,
            period_ns: None,
            early_every_ns: None,
            periods,
            series_ns: None,
            warmup_ns: 0,
            stage_starts_ns: Vec::new(),
            target_labels: Vec::new(),
        }
    }
}

pub struct Recorder {
    setup: RecorderSetup,
    /// Measurements of the current period.
    stats: Stats,
    period: u64,
    /// When the measured run starts (after the warm-up).
    start_ns: u64,
    /// The warm-up is on: errors and bytes are the warm-up's.
    in_warmup: bool,
    /// Where the stages start (absolute ns).
    stage_starts: Vec<u64>,
    next_period_ns: u64,
    next_sample_ns: u64,
    /// Responses completed since the start, at the last rate sample, and
    /// at the last hand-over.
    completed: u64,
    sampled: u64,
    handed_over: u64,
    /// When measurements may next go over early.
    next_early_ns: u64,
    /// When the latest response arrived (ns).
    last_response_ns: u64,
    /// When the thread last sent (ns).
    last_sent_ns: u64,
    /// Completed responses per time-series slot.
    series: Vec<u64>,
}

impl Recorder {
    /// A [`RecorderSetup::plain`] recorder that measures from time 0 and
    /// hands its periods to nobody: for unit tests and the fuzz targets.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn measuring_from_zero() -> Recorder {
        let (to_collector, _) = std::sync::mpsc::channel();
        let (_, recycled) = std::sync::mpsc::channel();
        let mut recorder =
            Recorder::new(RecorderSetup::plain(PeriodChannel { to_collector, recycled }));
        recorder.start(0);
        recorder
    }

    pub fn new(setup: RecorderSetup) -> Recorder {
        let stats =
            Stats::with_parts(setup.digits, setup.stage_starts_ns.len(), &setup.target_labels);
        Recorder {
            setup,
            stats,
            period: 0,
            start_ns: 0,
            in_warmup: false,
            stage_starts: Vec::new(),
            next_period_ns: u64::MAX,
            next_sample_ns: u64::MAX,
            completed: 0,
            sampled: 0,
            handed_over: 0,
            next_early_ns: 0,
            last_response_ns: 0,
            last_sent_ns: 0,
            series: Vec::new(),
        }
    }

    /// The run starts at `started_ns`; after the warm-up, the measured run:
    /// periods, samples and slots count from there.
    pub fn start(&mut self, started_ns: u64) {
        let start_ns = started_ns.saturating_add(self.setup.warmup_ns);
        self.start_ns = start_ns;
        self.in_warmup = self.setup.warmup_ns > 0;
        self.stage_starts =
            self.setup.stage_starts_ns.iter().map(|at| start_ns.saturating_add(*at)).collect();
        self.next_sample_ns = start_ns.saturating_add(RATE_SAMPLE_NS);
        self.next_period_ns =
            self.setup.period_ns.map_or(u64::MAX, |length| start_ns.saturating_add(length));
    }

    /// When the measured run starts (after the warm-up).
    pub fn measured_start_ns(&self) -> u64 {
        self.start_ns
    }

    /// A request batch went out at `sent` on a connection free since
    /// `free_since`; the plan meant its requests for `intended`. The
    /// differences are the schedule lag (a request of a pipelined batch
    /// sent before its time lags by zero).
    ///
    /// The batch was next in line from its intended time, or from the
    /// thread's previous send if that came later (the thread was behind).
    /// From then on it waited for its connection to become free, then for
    /// the thread: the split that tells a generator short of connections
    /// from one short of CPU ([`crate::stats::Generator`]).
    #[inline]
    pub fn sent(&mut self, intended: &[u64], sent: u64, free_since: u64) {
        if !self.setup.paced {
            return;
        }
        let mut measured = 0u32;
        for &intended in intended.iter().filter(|&&at| at >= self.start_ns) {
            record_us(&mut self.stats.lag, sent.saturating_sub(intended));
            measured += 1;
        }
        if self.setup.count_sends && measured > 0 {
            let slot = course::slot_of(sent.saturating_sub(self.start_ns));
            self.stats.sends.count(slot, measured);
        }
        if let Some(&first) = intended.first().filter(|&&at| at >= self.start_ns) {
            let in_line = first.max(self.last_sent_ns).min(sent);
            let connection_free = free_since.clamp(in_line, sent);
            let generator = &mut self.stats.generator;
            generator.waiting_for_connection_us += (connection_free - in_line) / 1000;
            generator.waiting_for_generator_us += (sent - connection_free) / 1000;
        }
        self.last_sent_ns = sent;
    }

    /// How the thread spent its sending time: the shares (0 to 1) it was
    /// on the CPU, working (on the CPU less its spins) and waiting for a
    /// CPU.
    pub fn thread_time(&mut self, on_cpu: f64, working: f64, cpu_wait: f64) {
        let generator = &mut self.stats.generator;
        generator.busiest_thread_cpu = generator.busiest_thread_cpu.max(on_cpu);
        generator.busiest_thread_work = generator.busiest_thread_work.max(working);
        generator.thread_cpu_wait = generator.thread_cpu_wait.max(cpu_wait);
    }

    /// A response of `exchange` arrived at `arrived` with `outcome`;
    /// `last_of_batch` when it is the batch's last (or only) response.
    #[inline]
    pub fn response(
        &mut self,
        exchange: Exchange,
        arrived: u64,
        outcome: Outcome,
        last_of_batch: bool,
    ) {
        if exchange.intended < self.start_ns {
            let warmup = &mut self.stats.warmup;
            warmup.requests += 1;
            warmup.errors += u64::from(outcome.is_error());
            return;
        }
        self.stats.response(outcome);
        self.completed += 1;
        self.last_response_ns = self.last_response_ns.max(arrived);
        if let Some(slot_ns) = self.setup.series_ns {
            let slot = (arrived.saturating_sub(self.start_ns) / slot_ns) as usize;
            if slot >= self.series.len() {
                self.series.resize(slot + 1, 0);
            }
            self.series[slot] += 1;
        }
        // -B: one latency per batch, from its first request's intended
        // time to its last response.
        let intended = match self.setup.batch_latency {
            false => Some(exchange.intended),
            true => last_of_batch.then_some(exchange.batch_intended),
        };
        if let Some(intended) = intended {
            // A request of a pipelined batch may go out before its
            // intended time: its latency then counts from the send, so
            // that the corrected latency is never below the uncorrected.
            let from = intended.min(exchange.sent);
            let stats = &mut self.stats;
            record_us(&mut stats.corrected, arrived.saturating_sub(from));
            record_us(&mut stats.uncorrected, arrived.saturating_sub(exchange.sent));
        }
        if !self.stage_starts.is_empty() {
            let stage = self.stage_starts.partition_point(|&at| at <= exchange.intended);
            if let Some(stage) = self.stats.stages.get_mut(stage.saturating_sub(1)) {
                stage.requests += 1;
                let from = exchange.intended.min(exchange.sent);
                record_us(&mut stage.corrected, arrived.saturating_sub(from));
            }
        }
        if !self.stats.targets.is_empty() {
            if let Some(target) = self.stats.targets.get_mut(exchange.target as usize) {
                target.response(outcome);
                let from = exchange.intended.min(exchange.sent);
                record_us(&mut target.corrected, arrived.saturating_sub(from));
            }
        }
    }

    /// A request of `target` was lost (a timeout, a read or write error):
    /// an error of that target's, when targets are recorded apart. The
    /// error itself is recorded with [`Recorder::error`].
    pub fn lost(&mut self, target: u32) {
        if self.in_warmup {
            return;
        }
        if let Some(target) = self.stats.targets.get_mut(target as usize) {
            target.errors += 1;
        }
    }

    /// Gives up, at `at_ns`, every request of `plan` due before
    /// `due_before_ns` that was not sent: each is an error of its own
    /// (`unsent`), and how long it had waited goes to its own histogram,
    /// never to a latency one (a wait is only a lower bound of a latency
    /// that never came). The plan moves past them. Recorded a histogram
    /// bucket at a time: any number of them takes as long as the buckets
    /// their waits span. Returns how many were the warm-up's, then how
    /// many the run's (in the plan's order: the first are the warm-up's).
    pub fn give_up(&mut self, plan: &mut ThreadPlan, due_before_ns: u64, at_ns: u64) -> (u64, u64) {
        let unsent = plan.unsent_before(due_before_ns);
        // Those of the warm-up are its errors, and nowhere else.
        let mut recorded = plan.unsent_before(self.start_ns.min(due_before_ns));
        let of_warmup = recorded;
        self.stats.warmup.errors += recorded;
        self.stats.errors.unsent += unsent - recorded;
        let waits = &mut self.stats.unsent_wait;
        while recorded < unsent {
            // Waits shrink from the first unsent request to the last.
            let wait_us = at_ns.saturating_sub(plan.due_ns_after(recorded)) / 1000;
            let wait_us = wait_us.min(crate::stats::MAX_LATENCY_US);
            let floor_us = waits.lowest_equivalent(wait_us);
            // Those due at or before at - floor waited at least the floor.
            let latest_due = at_ns.saturating_sub(floor_us.saturating_mul(1000));
            let in_bucket = plan.unsent_before(latest_due.saturating_add(1)).min(unsent);
            let count = in_bucket.saturating_sub(recorded).max(1);
            // Cannot fail: the value is in range and the histogram resizes.
            let _ = waits.record_n(wait_us, count);
            recorded += count;
        }
        plan.skip(unsent);
        (of_warmup, unsent - of_warmup)
    }

    /// Whether the run's targets are recorded apart (a targets file of
    /// several).
    pub fn records_targets(&self) -> bool {
        !self.stats.targets.is_empty()
    }

    /// `n` of the run's unsent requests were for `target`.
    pub fn unsent_of_target(&mut self, target: u32, n: u64) {
        if let Some(target) = self.stats.targets.get_mut(target as usize) {
            target.unsent += n;
        }
    }

    /// Gives up, at `at_ns`, one request of `target` meant for
    /// `intended_ns` that was never sent or never processed (it waited for
    /// a connection to its origin, or a server's GOAWAY left it, and it
    /// found none before the end): unsent, as those of the plan.
    pub fn give_up_one(&mut self, intended_ns: u64, at_ns: u64, target: u32) {
        if intended_ns < self.start_ns {
            self.stats.warmup.errors += 1;
            return;
        }
        self.unsent_of_target(target, 1);
        self.stats.errors.unsent += 1;
        record_us(&mut self.stats.unsent_wait, at_ns.saturating_sub(intended_ns));
    }

    /// `n` requests were in flight when the run was stopped at once: cut
    /// off, neither answered nor timed out.
    pub fn stopped_in_flight(&mut self, n: u64) {
        if self.in_warmup {
            self.stats.warmup.errors += n;
        } else {
            self.stats.errors.stopped += n;
        }
    }

    /// A server allows at most `limit` concurrent streams per connection,
    /// fewer than `--streams`.
    pub fn stream_limit(&mut self, limit: u32) {
        let known = &mut self.stats.http2.stream_limit;
        *known = Some(known.map_or(limit, |known| known.min(limit)));
    }

    /// A request a GOAWAY left unprocessed goes again.
    pub fn retried_after_goaway(&mut self) {
        self.stats.http2.retried_after_goaway += 1;
    }

    /// A server ended a connection with a GOAWAY of this error code.
    pub fn goaway_with_error(&mut self, code: String) {
        *self.stats.http2.goaways_with_error.entry(code).or_insert(0) += 1;
    }

    /// The script's `request()` gave no request (nil).
    pub fn no_request(&mut self) {
        self.stats.nil_requests += 1;
    }

    pub fn error(&mut self, kind: ErrorKind, cause: &str) {
        if self.in_warmup {
            self.stats.warmup.errors += 1;
        } else {
            self.stats.error(kind, cause);
        }
    }

    /// The first byte of the response to a request intended at `intended`
    /// and sent at `sent` arrived at `arrived` (a warm-up request's is not
    /// measured).
    #[inline]
    pub fn first_byte(&mut self, intended: u64, sent: u64, arrived: u64) {
        if intended >= self.start_ns {
            record_us(&mut self.stats.phases.first_byte, arrived.saturating_sub(sent));
        }
    }

    /// The first reply message of a streaming call intended at `intended`
    /// arrived at `arrived` (a warm-up call's is not measured).
    #[inline]
    pub fn first_message(&mut self, intended: u64, arrived: u64) {
        if intended >= self.start_ns {
            record_us(&mut self.stats.streamed.first_message, arrived.saturating_sub(intended));
        }
    }

    /// The reply of a bidirectional call to its message intended at
    /// `intended` arrived at `arrived` (a warm-up call's is not measured).
    #[inline]
    pub fn reply(&mut self, call_intended: u64, intended: u64, arrived: u64) {
        if call_intended >= self.start_ns {
            record_us(&mut self.stats.streamed.reply_latency, arrived.saturating_sub(intended));
        }
    }

    /// A streaming call intended at `intended` ended having sent `sent`
    /// messages in its stream and received `messages` reply messages;
    /// `complete`: the call ended as calls do (not reset), and its count
    /// is one of a call.
    pub fn streamed(&mut self, intended: u64, sent: u32, messages: u32, complete: bool) {
        if intended < self.start_ns {
            return;
        }
        self.stats.streamed.sent += u64::from(sent);
        self.stats.streamed.messages += u64::from(messages);
        if complete {
            let per_call = &mut self.stats.streamed.messages_per_call;
            per_call.record(u64::from(messages)).expect("auto-resizing histogram");
        }
    }

    /// A connection's link was set up, its phases taking `times`.
    /// An HTTP/3 connection closed with what QUIC measured on it.
    pub fn quic_connection(&mut self, figures: QuicCounts) {
        self.stats.quic.add(&figures);
    }

    pub fn link_set_up(&mut self, times: SetUpTimes) {
        if let Some(connect) = times.connect {
            record_us(&mut self.stats.phases.connect, connect);
        }
        if let Some(handshake) = times.tls_handshake {
            record_us(&mut self.stats.phases.tls_handshake, handshake);
        }
    }

    #[inline]
    pub fn bytes_read(&mut self, n: usize) {
        if !self.in_warmup {
            self.stats.bytes += n as u64;
        }
    }

    /// Takes the rate samples and hands over the periods due at `now`;
    /// returns when it next needs to be called. `oldest_waiting` gives the
    /// intended time of the oldest request still waiting (asked only when
    /// a period is handed over).
    pub fn tick(&mut self, now: u64, oldest_waiting: impl Fn() -> Option<u64>) -> u64 {
        self.in_warmup &= now < self.start_ns;
        while now >= self.next_sample_ns {
            let done = self.completed - self.sampled;
            self.stats.rate_samples.push(done as f64 * 1e9 / RATE_SAMPLE_NS as f64);
            self.sampled = self.completed;
            self.next_sample_ns = self.next_sample_ns.saturating_add(RATE_SAMPLE_NS);
        }
        // Every period is handed over, even one the thread slept through:
        // the collector completes a period when every thread sent it.
        while now >= self.next_period_ns {
            let waited = oldest_waiting().map_or(0, |intended| now.saturating_sub(intended));
            self.stats.oldest_waiting_us = waited / 1000;
            self.hand_over();
            self.next_period_ns =
                self.next_period_ns.saturating_add(self.setup.period_ns.unwrap_or(u64::MAX));
        }
        // Only news goes early, and the thread does not wake for it.
        if let Some(every) = self.setup.early_every_ns {
            if now >= self.next_early_ns && self.completed > self.handed_over {
                self.send_share(true);
                self.next_early_ns = now.saturating_add(every);
            }
        }
        self.next_sample_ns.min(self.next_period_ns)
    }

    /// When the latest response arrived (0 if none did).
    pub fn last_response_ns(&self) -> u64 {
        self.last_response_ns
    }

    /// Hands over the last, partial period (the thread finished at
    /// `ended_ns`) and returns the time series.
    pub fn finish(self, ended_ns: u64) -> Vec<u64> {
        let ended = Duration::from_nanos(ended_ns.saturating_sub(self.start_ns));
        let share = ThreadInterval {
            thread: self.setup.thread,
            index: self.period,
            stats: self.stats,
            ended: Some(ended),
            early: false,
        };
        // The collector only goes away if it failed; nothing to do then.
        let _ = self.setup.periods.to_collector.send(share);
        self.series
    }

    /// Sends the current period's measurements to the collector and goes
    /// on with the next period.
    fn hand_over(&mut self) {
        self.send_share(false);
        self.period += 1;
    }

    /// Sends what was measured of the current period since the last share
    /// (`early`: the period goes on) and goes on with emptied measurements.
    fn send_share(&mut self, early: bool) {
        let blank = match self.setup.periods.recycled.try_recv() {
            Ok(stats) => stats,
            Err(_) => Stats::with_parts(
                self.setup.digits,
                self.stage_starts.len(),
                &self.setup.target_labels,
            ),
        };
        let stats = std::mem::replace(&mut self.stats, blank);
        let (thread, index) = (self.setup.thread, self.period);
        let share = ThreadInterval { thread, index, stats, ended: None, early };
        let _ = self.setup.periods.to_collector.send(share);
        self.handed_over = self.completed;
    }
}

/// Records a time in ns as whole microseconds. The histograms grow to fit
/// any value (up to one day, wrk2's ceiling), so nothing is clamped.
#[inline]
fn record_us(histogram: &mut hdrhistogram::Histogram<u64>, ns: u64) {
    let us = (ns / 1000).min(crate::stats::MAX_LATENCY_US);
    // Cannot fail: the value is in range and the histogram resizes.
    let _ = histogram.record(us);
}

/// For the fuzz target `http2_response` (`crate::fuzzing`), which checks
/// what was recorded against what was sent.
#[cfg(any(test, feature = "fuzzing"))]
impl Recorder {
    /// The measurements of the current period.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    const MS: u64 = 1_000_000;

    fn recorder(
        paced: bool,
        batch_latency: bool,
        period_ns: Option<u64>,
    ) -> (Recorder, mpsc::Receiver<ThreadInterval>) {
        let (to_collector, shares) = mpsc::channel();
        let (_recycle, recycled) = mpsc::channel();
        let setup = RecorderSetup {
            thread: 1,
            digits: 3,
            paced,
            count_sends: false,
            batch_latency,
            period_ns,
            early_every_ns: None,
            periods: PeriodChannel { to_collector, recycled },
            series_ns: Some(100 * MS),
            warmup_ns: 0,
            stage_starts_ns: Vec::new(),
            target_labels: Vec::new(),
        };
        (Recorder::new(setup), shares)
    }

    #[test]
    fn records_both_latencies_and_the_lag() {
        let (mut r, shares) = recorder(true, false, None);
        r.start(0);
        let exchange =
            Exchange { intended: 10 * MS, batch_intended: 10 * MS, sent: 12 * MS, target: 0 };
        r.sent(&[10 * MS], 12 * MS, 0);
        r.response(exchange, 15 * MS, Outcome::Http(200), true);
        r.response(exchange, 16 * MS, Outcome::Http(503), true);
        assert_eq!(r.last_response_ns(), 16 * MS);
        let series = r.finish(20 * MS);
        assert_eq!(series, vec![2]);
        let share = shares.recv().unwrap();
        assert_eq!((share.thread, share.index), (1, 0));
        assert_eq!(share.ended, Some(Duration::from_millis(20)));
        let stats = share.stats;
        assert_eq!((stats.requests, stats.errors.status), (2, 1));
        // 16 - 10 ms from the intended time, 15 - 12 ms from the send.
        assert_eq!(stats.corrected.max(), stats.corrected.highest_equivalent(6_000));
        assert_eq!(stats.uncorrected.min(), stats.uncorrected.lowest_equivalent(3_000));
        assert_eq!(stats.lag.len(), 1);
    }

    #[test]
    fn late_sends_are_split_between_connections_and_the_thread() {
        let (mut r, shares) = recorder(true, false, None);
        r.start(0);
        // On time, the connection free long before: no wait at all.
        r.sent(&[10 * MS], 10 * MS, 0);
        // Due at 20 ms, its connection free at 25 ms, sent at 26 ms.
        r.sent(&[20 * MS], 26 * MS, 25 * MS);
        // Behind: due at 21 ms but in line only after the send at 26 ms;
        // a connection was free all along, the thread sent at 31 ms.
        r.sent(&[21 * MS], 31 * MS, 0);
        // Due at 22 ms, in line from 31 ms, a connection free at 40 ms.
        r.sent(&[22 * MS], 40 * MS, 40 * MS);
        r.finish(50 * MS);
        let stats = shares.recv().unwrap().stats;
        let generator = stats.generator;
        assert_eq!(generator.waiting_for_connection_us, 5_000 + 9_000);
        assert_eq!(generator.waiting_for_generator_us, 1_000 + 5_000);
        // The lag itself counts from each intended time.
        assert_eq!(stats.lag.max(), stats.lag.highest_equivalent(18_000));
    }

    #[test]
    fn each_response_of_a_paced_batch_counts_from_its_intended_time_or_earlier_send() {
        // The second request went out 1 ms before its time, with the first:
        // its latency counts from the send (6 ms), not from 11 ms (5 ms).
        for (batch_latency, expected) in [(false, vec![5_000, 6_000]), (true, vec![6_000])] {
            let (mut r, shares) = recorder(true, batch_latency, None);
            r.start(0);
            // Requests intended at 10 and 11 ms, sent together at 10 ms;
            // their responses arrive at 15 and 16 ms.
            r.sent(&[10 * MS, 11 * MS], 10 * MS, 0);
            let first =
                Exchange { intended: 10 * MS, batch_intended: 10 * MS, sent: 10 * MS, target: 0 };
            r.response(first, 15 * MS, Outcome::Http(200), false);
            r.response(Exchange { intended: 11 * MS, ..first }, 16 * MS, Outcome::Http(200), true);
            r.finish(20 * MS);
            let stats = shares.recv().unwrap().stats;
            let latencies: Vec<u64> = stats
                .corrected
                .iter_recorded()
                .flat_map(|v| {
                    std::iter::repeat_n(v.value_iterated_to(), v.count_at_value() as usize)
                })
                .collect();
            let expected: Vec<u64> =
                expected.iter().map(|&us| stats.corrected.highest_equivalent(us)).collect();
            assert_eq!(latencies, expected, "-B {batch_latency}");
            // The second request went out 1 ms early: no lag, not negative.
            assert_eq!((stats.lag.len(), stats.lag.max()), (2, 0));
        }
    }

    #[test]
    fn closed_loop_and_batches() {
        let (mut r, shares) = recorder(false, true, None);
        r.start(0);
        let exchange = Exchange { intended: MS, batch_intended: MS, sent: MS, target: 0 };
        r.sent(&[MS, MS], MS, 0);
        r.response(exchange, 2 * MS, Outcome::Http(200), false);
        r.response(exchange, 3 * MS, Outcome::Http(200), true);
        r.finish(4 * MS);
        let stats = shares.recv().unwrap().stats;
        assert_eq!(stats.requests, 2);
        // -B: one latency per batch, from its last response.
        assert_eq!(stats.corrected.len(), 1);
        assert!(stats.lag.is_empty());
    }

    #[test]
    fn periods_are_handed_over_on_time_even_when_empty() {
        let (mut r, shares) = recorder(false, false, Some(1_000 * MS));
        r.start(0);
        assert_eq!(r.tick(50 * MS, || None), 100 * MS);
        assert_eq!(r.tick(999 * MS, || None), 1_000 * MS);
        assert!(shares.try_recv().is_err());
        r.tick(1_000 * MS, || None);
        assert_eq!(shares.try_recv().unwrap().index, 0);
        // Asleep through periods 1 and 2: both are handed over.
        r.tick(3_500 * MS, || None);
        r.finish(3_600 * MS);
        let indices: Vec<u64> = shares.try_iter().map(|share| share.index).collect();
        assert_eq!(indices, vec![1, 2, 3]);
    }

    /// A thread that calls a script hands its news over early, at most
    /// every `early_every_ns`, within its period.
    #[test]
    fn news_goes_over_early_when_a_script_may_hang() {
        let (mut r, shares) = recorder(false, false, Some(1_000 * MS));
        r.setup.early_every_ns = Some(10 * MS);
        r.start(0);
        let exchange = Exchange { intended: MS, batch_intended: MS, sent: MS, target: 0 };
        // Nothing measured yet: nothing goes.
        r.tick(2 * MS, || None);
        assert!(shares.try_recv().is_err());
        r.response(exchange, 3 * MS, Outcome::Http(200), true);
        r.tick(3 * MS, || None);
        let share = shares.try_recv().unwrap();
        assert!(share.early && share.index == 0 && share.stats.requests == 1);
        // More news, but too soon; then time for it.
        r.response(exchange, 5 * MS, Outcome::Http(200), true);
        r.tick(5 * MS, || None);
        assert!(shares.try_recv().is_err());
        r.tick(13 * MS, || None);
        assert_eq!(shares.try_recv().unwrap().stats.requests, 1);
        // The period still ends as usual, with what came since.
        r.response(exchange, 20 * MS, Outcome::Http(200), true);
        r.tick(1_000 * MS, || None);
        let share = shares.try_recv().unwrap();
        assert!(!share.early && share.index == 0 && share.stats.requests == 1);
    }

    #[test]
    fn unsent_requests_are_errors_with_their_waits_apart() {
        let (mut r, shares) = recorder(true, false, None);
        r.start(0);
        // Thread 0 of 2 at 1000/s owns k = 0, 2, 4, 6, 8 of the first 10 ms.
        let mut plan = crate::plan::Plan::constant(1000.0).for_thread(0, 2, 0);
        r.give_up(&mut plan, 10 * MS, 10 * MS);
        // The plan moved past them: the next one is k = 10, at 10 ms.
        assert_eq!(plan.next_due_ns(), 10 * MS);
        r.finish(10 * MS);
        let stats = shares.recv().unwrap().stats;
        assert_eq!(stats.errors.unsent, 5);
        let waits: Vec<u64> =
            stats.unsent_wait.iter_recorded().map(|v| v.value_iterated_to()).collect();
        let expected: Vec<u64> = [2_000, 4_000, 6_000, 8_000, 10_000]
            .iter()
            .map(|&us| stats.unsent_wait.highest_equivalent(us))
            .collect();
        assert_eq!(waits, expected);
        // No latency was measured, so none is recorded.
        assert_eq!(stats.requests, 0);
        assert!(stats.corrected.is_empty() && stats.uncorrected.is_empty());
    }

    #[test]
    fn only_requests_due_before_the_limit_are_given_up() {
        let (mut r, shares) = recorder(true, false, None);
        r.start(0);
        let mut plan = crate::plan::Plan::constant(1000.0).for_thread(0, 1, 0);
        // Due at 0, 1, 2 ms: given up at 5 ms, after waiting 5, 4, 3 ms.
        r.give_up(&mut plan, 3 * MS, 5 * MS);
        assert_eq!(plan.next_due_ns(), 3 * MS);
        r.finish(5 * MS);
        let stats = shares.recv().unwrap().stats;
        assert_eq!(stats.errors.unsent, 3);
        let h = &stats.unsent_wait;
        assert_eq!((h.min(), h.max()), (h.lowest_equivalent(3_000), h.highest_equivalent(5_000)));
    }

    #[test]
    fn any_number_of_unsent_requests_is_recorded_at_once() {
        let (mut r, shares) = recorder(true, false, None);
        r.start(0);
        let mut plan = crate::plan::Plan::constant(1e12).for_thread(1, 2, 0);
        // Half a trillion requests: counted and recorded per histogram
        // bucket, never one by one.
        r.give_up(&mut plan, 1_000 * MS, 1_000 * MS);
        r.finish(1_000 * MS);
        let stats = shares.recv().unwrap().stats;
        assert_eq!(stats.errors.unsent, 500_000_000_000);
        assert_eq!(stats.unsent_wait.len(), 500_000_000_000);
        assert_eq!(stats.unsent_wait.max(), stats.unsent_wait.highest_equivalent(1_000_000));
        // Evenly spread waits: the median is half the run.
        let median = stats.unsent_wait.value_at_quantile(0.5);
        assert!((499_000..=501_000).contains(&median), "{median}");
        assert!(stats.corrected.is_empty());
    }

    #[test]
    fn requests_cut_off_by_a_stop_are_their_own_count() {
        let (mut r, shares) = recorder(true, false, None);
        r.start(0);
        r.stopped_in_flight(4);
        r.finish(MS);
        let stats = shares.recv().unwrap().stats;
        assert_eq!((stats.errors.stopped, stats.errors.timeout), (4, 0));
        assert_eq!(stats.errors.socket_total(), 0);
    }

    /// Whatever the plan, the sends and the arrivals, each request's
    /// corrected latency is at least its uncorrected one, so the corrected
    /// distribution is at or above the uncorrected at every percentile and
    /// at the minimum.
    #[test]
    fn corrected_is_never_below_uncorrected() {
        let mut draws = crate::plan::random::Draws::at(42, 0, 0);
        for batch_latency in [false, true] {
            let (mut r, shares) = recorder(true, batch_latency, None);
            r.start(0);
            for _ in 0..20_000 {
                let ms = |draws: &mut crate::plan::random::Draws| {
                    (draws.uniform() * 50.0 * MS as f64) as u64
                };
                let intended = ms(&mut draws);
                // Late or, as a pipelined batch's later requests, early.
                let sent = (intended + ms(&mut draws)).saturating_sub(ms(&mut draws) / 4);
                let arrived = sent + ms(&mut draws) / 10;
                let batch_intended = intended.saturating_sub(ms(&mut draws) / 20);
                let exchange = Exchange { intended, batch_intended, sent, target: 0 };
                r.sent(&[intended], sent, 0);
                r.response(exchange, arrived, Outcome::Http(200), draws.uniform() < 0.5);
            }
            r.finish(100 * MS);
            let stats = shares.recv().unwrap().stats;
            let (c, u) = (&stats.corrected, &stats.uncorrected);
            assert_eq!(c.len(), u.len());
            assert!(c.min() >= u.min(), "-B {batch_latency}: min {} < {}", c.min(), u.min());
            for p in [0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0] {
                let (cp, up) = (c.value_at_percentile(p), u.value_at_percentile(p));
                assert!(cp >= up, "-B {batch_latency}: p{p} corrected {cp} < uncorrected {up}");
            }
        }
    }

    #[test]
    fn the_warmup_is_counted_apart_and_stages_by_intended_time() {
        let (to_collector, shares) = mpsc::channel();
        let (_recycle, recycled) = mpsc::channel();
        let mut r = Recorder::new(RecorderSetup {
            thread: 0,
            digits: 3,
            paced: true,
            count_sends: true,
            batch_latency: false,
            period_ns: None,
            early_every_ns: None,
            periods: PeriodChannel { to_collector, recycled },
            series_ns: None,
            warmup_ns: 100 * MS,
            stage_starts_ns: vec![0, 50 * MS],
            target_labels: Vec::new(),
        });
        r.start(0);
        assert_eq!(r.measured_start_ns(), 100 * MS);
        r.tick(10 * MS, || None);
        r.error(ErrorKind::Connect, "refused");
        r.bytes_read(100);
        let warm =
            Exchange { intended: 20 * MS, batch_intended: 20 * MS, sent: 20 * MS, target: 0 };
        r.sent(&[20 * MS], 20 * MS, 0);
        r.response(warm, 25 * MS, Outcome::Http(503), true);
        r.tick(100 * MS, || None);
        let first =
            Exchange { intended: 120 * MS, batch_intended: 120 * MS, sent: 121 * MS, target: 0 };
        r.sent(&[120 * MS], 121 * MS, 0);
        r.response(first, 122 * MS, Outcome::Http(200), true);
        let second =
            Exchange { intended: 160 * MS, batch_intended: 160 * MS, sent: 160 * MS, target: 0 };
        r.response(second, 163 * MS, Outcome::Http(200), true);
        r.bytes_read(50);
        // At 100/s, 20 requests were due before 200 ms; the plan was not
        // advanced here, so all are unsent, 10 of them in the warm-up.
        let mut plan = crate::plan::Plan::constant(100.0).for_thread(0, 1, 0);
        r.give_up(&mut plan, 200 * MS, 200 * MS);
        r.finish(200 * MS);
        let stats = shares.recv().unwrap().stats;
        assert_eq!(stats.warmup, crate::stats::Warmup { requests: 1, errors: 1 + 1 + 10 });
        assert_eq!((stats.requests, stats.bytes, stats.errors.connect), (2, 50, 0));
        assert_eq!(stats.errors.unsent, 10);
        assert_eq!(stats.lag.len(), 1);
        // The measured send in its slot (21 ms after the start); the
        // warm-up's in none.
        let mut sends = crate::stats::course::SlotCounts::default();
        sends.count(2, 1);
        assert_eq!(stats.sends, sends);
        let stages: Vec<u64> = stats.stages.iter().map(|s| s.requests).collect();
        assert_eq!(stages, vec![1, 1]);
        assert_eq!(
            stats.stages[1].corrected.max(),
            stats.stages[1].corrected.highest_equivalent(3_000)
        );
    }

    #[test]
    fn each_period_says_how_long_the_oldest_request_has_waited() {
        let (mut r, shares) = recorder(true, false, Some(200 * MS));
        r.start(0);
        r.tick(200 * MS, || Some(50 * MS));
        r.tick(400 * MS, || None);
        let waits: Vec<u64> =
            shares.try_iter().map(|share| share.stats.oldest_waiting_us).collect();
        assert_eq!(waits, vec![150_000, 0]);
    }

    /// Deadlines near the end of the clock saturate instead of wrapping
    /// into the past (which would hand over every period at once).
    #[test]
    fn deadlines_at_the_end_of_the_clock_saturate() {
        let (to_collector, shares) = mpsc::channel();
        let (_recycle, recycled) = mpsc::channel();
        let mut r = Recorder::new(RecorderSetup {
            thread: 0,
            digits: 3,
            paced: true,
            count_sends: false,
            batch_latency: false,
            period_ns: Some(u64::MAX),
            early_every_ns: None,
            periods: PeriodChannel { to_collector, recycled },
            series_ns: None,
            warmup_ns: u64::MAX,
            stage_starts_ns: vec![0, u64::MAX],
            target_labels: Vec::new(),
        });
        r.start(u64::MAX - 10);
        assert_eq!(r.measured_start_ns(), u64::MAX);
        assert_eq!(r.tick(u64::MAX - 5, || None), u64::MAX);
        assert!(shares.try_recv().is_err(), "no period is over");
    }

    #[test]
    fn rate_samples_every_100_ms() {
        let (mut r, shares) = recorder(false, false, None);
        r.start(0);
        let exchange = Exchange::default();
        for _ in 0..5 {
            r.response(exchange, MS, Outcome::Http(200), true);
        }
        r.tick(250 * MS, || None);
        r.finish(250 * MS);
        assert_eq!(shares.recv().unwrap().stats.rate_samples, vec![50.0, 0.0]);
    }
}
