//! What one engine thread measures, and how threads' measurements add up.
//!
//! Every thread records into its own [`Stats`] (no locks, no sharing); the
//! coordinator adds them with [`Stats::merge`], which is exact because
//! HdrHistograms with the same geometry add count by count.

pub mod confidence;
pub mod course;
pub mod spectrum;
pub mod stationarity;
mod streamed;

pub use streamed::Streamed;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

use crate::signals::Interruption;

/// Highest latency recorded: one day in microseconds, as wrk2 (longer
/// values are recorded as one day).
pub const MAX_LATENCY_US: u64 = 24 * 60 * 60 * 1_000_000;

/// A latency histogram in microseconds from 1, with `digits` significant
/// figures (wrk2's `hdr_init(1, MAX_LATENCY, digits)`).
///
/// It starts with the smallest range and grows as larger values come:
/// the range is what costs memory (at 5 digits a histogram up to one day
/// takes 22 MB, one up to 262 ms takes 2 MB, and every page is touched when
/// it is made), so a run pays for the latencies it sees, not for the ones
/// it might. Nothing is clamped below one day.
pub fn latency_histogram(digits: u8) -> Histogram<u64> {
    let mut histogram =
        Histogram::new_with_bounds(1, 2, digits).expect("digits is validated to 1..=5");
    histogram.auto(true);
    histogram
}

/// Mean and sample standard deviation (n - 1, 0 below two samples) of
/// plain samples, as wrk's `stats_mean` / `stats_stdev` (used for the
/// per-thread Req/Sec samples).
pub fn sample_mean_stdev(samples: &[f64]) -> (f64, f64) {
    let n = samples.len() as f64;
    let mean = if samples.is_empty() { 0.0 } else { samples.iter().sum::<f64>() / n };
    let stdev = if samples.len() < 2 {
        0.0
    } else {
        (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    (mean, stdev)
}

/// How a completed response ended: what the protocol says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// An HTTP response's status code.
    Http(u16),
    /// A gRPC call's status code (its `grpc-status`, `crate::grpc_status`).
    Grpc(u8),
}

impl Outcome {
    /// A failed response (wrk's "Non-2xx or 3xx responses": a status above
    /// 399); it still counts as a completed request.
    #[inline]
    pub fn is_error(self) -> bool {
        match self {
            Outcome::Http(status) => status > 399,
            Outcome::Grpc(code) => code != crate::grpc_status::OK,
        }
    }
}

/// Completed responses by outcome, in order: a short list that keeps its
/// memory when emptied, so counting allocates only the first time an
/// outcome is seen in a run, never per period.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcomes(Vec<(Outcome, u64)>);

impl Outcomes {
    /// One more response of `outcome`.
    #[inline]
    pub fn count(&mut self, outcome: Outcome) {
        self.add(outcome, 1);
    }

    /// `n` more responses of `outcome`.
    pub fn add(&mut self, outcome: Outcome, n: u64) {
        match self.0.binary_search_by_key(&outcome, |(known, _)| *known) {
            Ok(at) => self.0[at].1 += n,
            Err(at) => self.0.insert(at, (outcome, n)),
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Outcomes) {
        for &(outcome, n) in &other.0 {
            self.add(outcome, n);
        }
    }

    /// Forgets the counts, keeping the memory.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Each outcome seen, in order, with its count.
    pub fn iter(&self) -> impl Iterator<Item = (Outcome, u64)> + '_ {
        self.0.iter().copied()
    }

    /// The HTTP statuses seen, in order, with their counts.
    pub fn http(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.iter().filter_map(|(outcome, n)| match outcome {
            Outcome::Http(status) => Some((status, n)),
            Outcome::Grpc(_) => None,
        })
    }

    /// gRPC calls whose status was not OK (among the errors' `status`).
    pub fn grpc_failed(&self) -> u64 {
        self.grpc().filter(|&(code, _)| code != crate::grpc_status::OK).map(|(_, n)| n).sum()
    }

    /// The gRPC status codes seen, in order, with their counts.
    pub fn grpc(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.iter().filter_map(|(outcome, n)| match outcome {
            Outcome::Grpc(code) => Some((code, n)),
            Outcome::Http(_) => None,
        })
    }

    /// How many responses had HTTP status `status`.
    pub fn http_status(&self, status: u16) -> u64 {
        self.iter().find(|&(outcome, _)| outcome == Outcome::Http(status)).map_or(0, |(_, n)| n)
    }
}

/// Socket and HTTP errors, counted as wrk counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Errors {
    /// The connection could not be opened (refused, TLS handshake failed...).
    pub connect: u64,
    /// Reading failed, the response was malformed, or the peer closed the
    /// connection in the middle of a response.
    pub read: u64,
    /// Writing the request failed.
    pub write: u64,
    /// Failed responses ([`Outcome::is_error`]: a status above 399),
    /// still counted as completed requests.
    pub status: u64,
    /// Requests with no complete response within `--timeout`.
    pub timeout: u64,
    /// Requests of the plan that were due before the end of the run and
    /// never sent (no connection was free: the server or the generator fell
    /// behind). How long they had waited is [`Stats::unsent_wait`].
    pub unsent: u64,
    /// Requests in flight when the run was stopped at once (a second
    /// Ctrl-C, a script error): cut off, neither answered nor timed out.
    /// Not a failure of the server, so no share or diagnosis counts them.
    pub stopped: u64,
}

impl Errors {
    /// The errors wrk prints on its `Socket errors:` line.
    pub fn socket_total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout
    }

    pub fn add(&mut self, other: &Errors) {
        self.connect += other.connect;
        self.read += other.read;
        self.write += other.write;
        self.status += other.status;
        self.timeout += other.timeout;
        self.unsent += other.unsent;
        self.stopped += other.stopped;
    }
}

/// The kinds of error a connection can run into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorKind {
    Connect,
    Read,
    Write,
    Timeout,
}

/// The most distinct error causes a run keeps: the causes come from the
/// server (its error codes, its failures), and a hostile one must not
/// make the report as long as the run.
pub const MAX_ERROR_CAUSES: usize = 100;

/// What errors beyond [`MAX_ERROR_CAUSES`] distinct causes are counted as.
pub const OTHER_CAUSES: &str = "other causes (more than 100 distinct)";

/// Adds `n` errors of `cause` to `causes`: under its own name while fewer
/// than [`MAX_ERROR_CAUSES`] are known, else under [`OTHER_CAUSES`] (of
/// its kind: the label before the cause's first `:`).
fn count_cause(causes: &mut BTreeMap<String, u64>, cause: String, n: u64) {
    if let Some(count) = causes.get_mut(&cause) {
        *count += n;
        return;
    }
    let key = match causes.len() < MAX_ERROR_CAUSES {
        true => cause,
        false => {
            let kind = cause.split_once(':').map_or("error", |(kind, _)| kind);
            format!("{kind}: {OTHER_CAUSES}")
        }
    };
    *causes.entry(key).or_insert(0) += n;
}

/// Everything one thread (or, after merging, the whole run) measured.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Latency from the intended send time (wrk2's corrected latency), us.
    /// In closed-loop mode the intended time is the actual send time.
    pub corrected: Histogram<u64>,
    /// Latency from the actual send time, us.
    pub uncorrected: Histogram<u64>,
    /// Schedule lag: actual send time minus intended send time, us. Only
    /// recorded in paced mode; it measures the generator, not the server.
    pub lag: Histogram<u64>,
    /// How long each unsent request of the plan had waited when it was
    /// given up, us. Never part of a latency histogram: a wait is not a
    /// latency, only a lower bound of one that never came.
    pub unsent_wait: Histogram<u64>,
    /// Completed responses.
    pub requests: u64,
    /// Bytes read from the sockets (after TLS decryption), as wrk counts.
    pub bytes: u64,
    pub errors: Errors,
    /// Responses by outcome (HTTP status).
    pub outcomes: Outcomes,
    /// Error counts by cause, e.g. `connect: Connection refused`.
    pub error_causes: BTreeMap<String, u64>,
    /// Per-thread Req/Sec samples (requests per second over each sampling
    /// interval), for the Thread Stats table.
    pub rate_samples: Vec<f64>,
    /// Times the script's `request()` returned nil (no request sent).
    pub nil_requests: u64,
    /// What the warm-up sent (none of it is counted above).
    pub warmup: Warmup,
    /// Per stage of `--stages` (by intended send time); empty without.
    pub stages: Vec<StageStats>,
    /// Per target of a targets file of several; empty otherwise.
    pub targets: Vec<TargetStats>,
    /// Where the schedule lag came from and what the threads cost.
    pub generator: Generator,
    /// What HTTP/2 connections had to do besides requests.
    pub http2: Http2Counts,
    /// What QUIC measured on HTTP/3's connections.
    pub quic: QuicCounts,
    /// How long the phases of connections and responses took.
    pub phases: Phases,
    /// Server-streaming gRPC calls: their messages.
    pub streamed: Streamed,
    /// At the end of the period, how long the request that had waited
    /// longest without a response (in flight, or due and not sent) had
    /// waited since its intended time, us; 0 when none was waiting. A
    /// snapshot for the live progress (a stall shows as it happens), not a
    /// sum: shares combine by the largest.
    pub oldest_waiting_us: u64,
    /// Of a Poisson plan, the sends per slot of [`course::SLOT`] (taken out
    /// by the course of the run, [`course::CourseBuilder`], before the
    /// periods add up into the run's measurements).
    pub sends: course::SlotCounts,
}

/// Why paced sends were late, and how busy the engine threads were: the
/// figures that tell a generator short of CPU from one short of
/// connections. Sums and maxima, so they add up across threads, periods
/// and machines.
///
/// A thread sends the requests of its plan in order. While a request is
/// due and next in line (from its intended time, or from the previous send
/// when the thread is behind), it waits either for a connection to become
/// free or, with one free, for the thread itself (busy elsewhere: a
/// script, other sends; or not given the CPU).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Generator {
    /// Time due requests waited with no connection free (us, summed).
    pub waiting_for_connection_us: u64,
    /// Time due requests waited with a connection free (us, summed).
    pub waiting_for_generator_us: u64,
    /// The largest share of its sending time an engine thread spent on the
    /// CPU (0 to 1; 0 when not measured).
    pub busiest_thread_cpu: f64,
    /// The largest share of its sending time an engine thread spent
    /// working: on the CPU less its spins (on the clock between sends
    /// closer than a wake-up costs, on events before blocking), which wait
    /// rather than work (0 to 1; 0 when not measured). A spin counts its
    /// wall time, preemptions included (its CPU time would cost a system
    /// call per spin), so this is low by up to the thread's wait for a
    /// CPU.
    pub busiest_thread_work: f64,
    /// The largest share of its sending time an engine thread was ready to
    /// run but waited for a CPU (0 to 1; 0 when not measured). A VM host's
    /// steal time is not in it.
    pub thread_cpu_wait: f64,
}

impl Generator {
    fn add(&mut self, other: &Generator) {
        self.waiting_for_connection_us += other.waiting_for_connection_us;
        self.waiting_for_generator_us += other.waiting_for_generator_us;
        self.busiest_thread_cpu = self.busiest_thread_cpu.max(other.busiest_thread_cpu);
        self.busiest_thread_work = self.busiest_thread_work.max(other.busiest_thread_work);
        self.thread_cpu_wait = self.thread_cpu_wait.max(other.thread_cpu_wait);
    }
}

/// How long the phases before a response took, us, as h2load's "time for
/// connect" and "time to 1st byte" (so that a run that opens many
/// connections, with `Connection: close`, shows where its time goes):
/// every connect pace made (TCP, or a Unix socket, to the server or to its
/// proxy; the warm-up's and those before the start too), every TLS
/// handshake (after a proxy's tunnel, when there is one), and the wait of
/// each measured request for its response's first byte, from when it was
/// actually sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Phases {
    pub connect: Histogram<u64>,
    pub tls_handshake: Histogram<u64>,
    pub first_byte: Histogram<u64>,
}

impl Phases {
    pub fn new(digits: u8) -> Phases {
        Phases {
            connect: latency_histogram(digits),
            tls_handshake: latency_histogram(digits),
            first_byte: latency_histogram(digits),
        }
    }

    fn merge(&mut self, other: &Phases) {
        self.connect.add(&other.connect).expect("auto-resizing histogram");
        self.tls_handshake.add(&other.tls_handshake).expect("auto-resizing histogram");
        self.first_byte.add(&other.first_byte).expect("auto-resizing histogram");
    }

    fn clear(&mut self) {
        self.connect.reset();
        self.tls_handshake.reset();
        self.first_byte.reset();
    }
}

/// What HTTP/2 connections did besides carrying requests: counts that add
/// up across threads, periods and machines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Http2Counts {
    /// Requests sent again on another connection because a server's
    /// GOAWAY said it had not processed them (their latency counts from
    /// their intended time, their first try included).
    pub retried_after_goaway: u64,
    /// The lowest concurrent-stream limit a server set below `--streams`
    /// (None: no server capped them).
    pub stream_limit: Option<u32>,
    /// GOAWAY frames with an error code, by code: the end of a connection,
    /// not of a request (what became of each request is counted for it).
    pub goaways_with_error: BTreeMap<String, u64>,
}

/// What QUIC measured on HTTP/3's connections, counted when each closed
/// (after its handshake): counts that add up across threads, periods and
/// machines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuicCounts {
    /// Connections whose figures these are.
    pub connections: u64,
    /// Packets pace sent, and those of them QUIC declared lost (and sent
    /// their frames again).
    pub packets_sent: u64,
    pub packets_lost: u64,
    /// The connections' smoothed RTTs as they closed, summed (us): over
    /// `connections`, their mean.
    pub smoothed_rtt_sum_us: u64,
}

impl QuicCounts {
    pub fn add(&mut self, other: &QuicCounts) {
        self.connections += other.connections;
        self.packets_sent += other.packets_sent;
        self.packets_lost += other.packets_lost;
        self.smoothed_rtt_sum_us += other.smoothed_rtt_sum_us;
    }

    /// The mean smoothed RTT of the connections, us.
    pub fn smoothed_rtt_mean_us(&self) -> Option<f64> {
        (self.connections > 0).then(|| self.smoothed_rtt_sum_us as f64 / self.connections as f64)
    }
}

impl Http2Counts {
    fn add(&mut self, other: &Http2Counts) {
        self.retried_after_goaway += other.retried_after_goaway;
        self.stream_limit = match (self.stream_limit, other.stream_limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (code, n) in &other.goaways_with_error {
            *self.goaways_with_error.entry(code.clone()).or_insert(0) += n;
        }
    }
}

/// What the warm-up (`--warmup`) sent: counted apart from the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Warmup {
    /// Responses to requests intended during the warm-up.
    pub requests: u64,
    /// Errors during the warm-up (socket errors, statuses > 399, requests
    /// of its plan never sent).
    pub errors: u64,
}

/// What one stage of the plan measured: the requests intended in it.
#[derive(Clone, Debug)]
pub struct StageStats {
    /// Completed responses.
    pub requests: u64,
    /// Their latency from the intended send time, us.
    pub corrected: Histogram<u64>,
}

impl StageStats {
    pub fn new(digits: u8) -> StageStats {
        StageStats { requests: 0, corrected: latency_histogram(digits) }
    }

    fn merge(&mut self, other: &StageStats) {
        self.requests += other.requests;
        self.corrected.add(&other.corrected).expect("auto-resizing histogram");
    }
}

/// What the requests of one target of a targets file measured.
#[derive(Clone, Debug)]
pub struct TargetStats {
    /// `METHOD scheme://host:port/path`.
    pub label: Arc<str>,
    /// Completed responses.
    pub requests: u64,
    /// Failed responses ([`Outcome::is_error`]), and requests lost to a
    /// timeout or a read or write error (a failed connect is its origin's,
    /// not a target's: it is in the run's errors only).
    pub errors: u64,
    /// Requests of the plan due in the run that were never sent (paced
    /// runs): in the file's order, those the order named; in random order,
    /// the target's share of them.
    pub unsent: u64,
    pub outcomes: Outcomes,
    /// Latency from the intended send time, us.
    pub corrected: Histogram<u64>,
}

impl TargetStats {
    pub fn new(label: Arc<str>, digits: u8) -> TargetStats {
        TargetStats {
            label,
            requests: 0,
            errors: 0,
            unsent: 0,
            outcomes: Outcomes::default(),
            corrected: latency_histogram(digits),
        }
    }

    /// Records a completed response.
    #[inline]
    pub fn response(&mut self, outcome: Outcome) {
        self.requests += 1;
        self.errors += u64::from(outcome.is_error());
        self.outcomes.count(outcome);
    }

    fn clear(&mut self) {
        self.requests = 0;
        self.errors = 0;
        self.unsent = 0;
        self.outcomes.clear();
        self.corrected.reset();
    }

    fn merge(&mut self, other: &TargetStats) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.unsent += other.unsent;
        self.outcomes.merge(&other.outcomes);
        self.corrected.add(&other.corrected).expect("auto-resizing histogram");
    }
}

/// Adds `other`'s targets to `mine`: the n-th target of a label to the
/// n-th of the same label (one targets file may name a request twice),
/// targets `mine` lacks at the end. Threads of one run have the same
/// targets; runs merged by `pace merge` may not.
fn merge_targets(mine: &mut Vec<TargetStats>, other: &[TargetStats]) {
    let lined_up = mine.len() == other.len()
        && mine
            .iter()
            .zip(other)
            .all(|(a, b)| Arc::ptr_eq(&a.label, &b.label) || a.label == b.label);
    if lined_up {
        mine.iter_mut().zip(other).for_each(|(a, b)| a.merge(b));
        return;
    }
    for (i, target) in other.iter().enumerate() {
        let nth = other[..i].iter().filter(|t| t.label == target.label).count();
        let same = mine.iter().enumerate().filter(|(_, t)| t.label == target.label).nth(nth);
        match same.map(|(j, _)| j) {
            Some(j) => mine[j].merge(target),
            None => mine.push(target.clone()),
        }
    }
}

impl Stats {
    pub fn new(digits: u8) -> Stats {
        Stats {
            corrected: latency_histogram(digits),
            uncorrected: latency_histogram(digits),
            lag: latency_histogram(digits),
            unsent_wait: latency_histogram(digits),
            requests: 0,
            bytes: 0,
            errors: Errors::default(),
            outcomes: Outcomes::default(),
            error_causes: BTreeMap::new(),
            rate_samples: Vec::new(),
            nil_requests: 0,
            warmup: Warmup::default(),
            stages: Vec::new(),
            targets: Vec::new(),
            generator: Generator::default(),
            http2: Http2Counts::default(),
            quic: QuicCounts::default(),
            phases: Phases::new(digits),
            streamed: Streamed::new(digits),
            oldest_waiting_us: 0,
            sends: course::SlotCounts::default(),
        }
    }

    /// Measurements with room for `stages` stages and the targets of
    /// these `labels`.
    pub fn with_parts(digits: u8, stages: usize, labels: &[Arc<str>]) -> Stats {
        Stats {
            stages: (0..stages).map(|_| StageStats::new(digits)).collect(),
            targets: labels.iter().map(|label| TargetStats::new(label.clone(), digits)).collect(),
            ..Stats::new(digits)
        }
    }

    /// Records one error and its cause.
    pub fn error(&mut self, kind: ErrorKind, cause: &str) {
        let (counter, label) = match kind {
            ErrorKind::Connect => (&mut self.errors.connect, "connect"),
            ErrorKind::Read => (&mut self.errors.read, "read"),
            ErrorKind::Write => (&mut self.errors.write, "write"),
            ErrorKind::Timeout => (&mut self.errors.timeout, "timeout"),
        };
        *counter += 1;
        count_cause(&mut self.error_causes, format!("{label}: {cause}"), 1);
    }

    /// Records a completed response.
    #[inline]
    pub fn response(&mut self, outcome: Outcome) {
        self.requests += 1;
        if outcome.is_error() {
            self.errors.status += 1;
        }
        self.outcomes.count(outcome);
    }

    /// Empties these measurements, keeping the histograms' memory.
    pub fn clear(&mut self) {
        self.corrected.reset();
        self.uncorrected.reset();
        self.lag.reset();
        self.unsent_wait.reset();
        self.requests = 0;
        self.bytes = 0;
        self.errors = Errors::default();
        self.outcomes.clear();
        self.error_causes.clear();
        self.rate_samples.clear();
        self.nil_requests = 0;
        self.warmup = Warmup::default();
        self.generator = Generator::default();
        self.http2 = Http2Counts::default();
        self.quic = QuicCounts::default();
        self.phases.clear();
        self.streamed.clear();
        self.oldest_waiting_us = 0;
        self.sends.clear();
        for stage in &mut self.stages {
            stage.requests = 0;
            stage.corrected.reset();
        }
        self.targets.iter_mut().for_each(TargetStats::clear);
    }

    /// Adds another thread's measurements to these.
    pub fn merge(&mut self, other: &Stats) {
        // The histograms resize to take any value, so adding cannot fail.
        self.corrected.add(&other.corrected).expect("auto-resizing histogram");
        self.uncorrected.add(&other.uncorrected).expect("auto-resizing histogram");
        self.lag.add(&other.lag).expect("auto-resizing histogram");
        self.unsent_wait.add(&other.unsent_wait).expect("auto-resizing histogram");
        self.requests += other.requests;
        self.bytes += other.bytes;
        self.errors.add(&other.errors);
        self.outcomes.merge(&other.outcomes);
        for (cause, n) in &other.error_causes {
            count_cause(&mut self.error_causes, cause.clone(), *n);
        }
        self.rate_samples.extend_from_slice(&other.rate_samples);
        self.nil_requests += other.nil_requests;
        self.warmup.requests += other.warmup.requests;
        self.warmup.errors += other.warmup.errors;
        self.generator.add(&other.generator);
        self.http2.add(&other.http2);
        self.quic.add(&other.quic);
        self.phases.merge(&other.phases);
        self.streamed.merge(&other.streamed);
        self.oldest_waiting_us = self.oldest_waiting_us.max(other.oldest_waiting_us);
        self.sends.merge(&other.sends);
        for (i, stage) in other.stages.iter().enumerate() {
            match self.stages.get_mut(i) {
                Some(mine) => mine.merge(stage),
                None => self.stages.push(stage.clone()),
            }
        }
        merge_targets(&mut self.targets, &other.targets);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Causes come from the server: beyond 100 distinct ones, the rest are
    /// one line of their kind, in a thread's figures and when merged.
    #[test]
    fn distinct_causes_are_bounded() {
        let mut a = Stats::new(3);
        for code in 0..150 {
            a.error(ErrorKind::Read, &format!("reset with code {code}"));
        }
        a.error(ErrorKind::Read, "reset with code 7");
        assert_eq!(a.error_causes.len(), MAX_ERROR_CAUSES + 1);
        assert_eq!(a.error_causes["read: reset with code 7"], 2);
        assert_eq!(a.error_causes[&format!("read: {OTHER_CAUSES}")], 50);
        assert_eq!(a.errors.read, 151);
        let mut b = Stats::new(3);
        b.error(ErrorKind::Connect, "refused");
        b.merge(&a);
        assert!(b.error_causes.len() <= MAX_ERROR_CAUSES + 1);
        assert_eq!(b.error_causes.values().sum::<u64>(), 152);
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = Stats::new(3);
        let mut b = Stats::new(3);
        a.corrected.record(100).unwrap();
        b.corrected.record(200).unwrap();
        a.response(Outcome::Http(200));
        b.response(Outcome::Http(404));
        b.error(ErrorKind::Connect, "Connection refused");
        b.rate_samples.push(10.0);
        a.phases.connect.record(50).unwrap();
        b.phases.connect.record(70).unwrap();
        b.phases.tls_handshake.record(900).unwrap();
        b.phases.first_byte.record(120).unwrap();
        a.generator = Generator {
            waiting_for_connection_us: 5,
            waiting_for_generator_us: 1,
            busiest_thread_cpu: 0.5,
            busiest_thread_work: 0.2,
            thread_cpu_wait: 0.01,
        };
        b.generator = Generator {
            waiting_for_connection_us: 2,
            waiting_for_generator_us: 3,
            busiest_thread_cpu: 0.25,
            busiest_thread_work: 0.25,
            thread_cpu_wait: 0.0,
        };
        a.merge(&b);
        assert_eq!(a.corrected.len(), 2);
        assert_eq!(a.requests, 2);
        assert_eq!(a.errors.status, 1);
        assert_eq!(a.errors.connect, 1);
        assert_eq!(a.outcomes.http().collect::<Vec<_>>(), [(200, 1), (404, 1)]);
        assert_eq!(a.error_causes["connect: Connection refused"], 1);
        assert_eq!(a.rate_samples, vec![10.0]);
        let phases = &a.phases;
        assert_eq!(phases.connect.len(), 2);
        assert_eq!((phases.tls_handshake.len(), phases.first_byte.len()), (1, 1));
        // Waits add up, the busiest thread is the busiest of all.
        let expected = Generator {
            waiting_for_connection_us: 7,
            waiting_for_generator_us: 4,
            busiest_thread_cpu: 0.5,
            busiest_thread_work: 0.25,
            thread_cpu_wait: 0.01,
        };
        assert_eq!(a.generator, expected);
    }

    #[test]
    fn targets_add_up_by_label_in_turn() {
        let target = |label: &str, requests: u64| {
            let mut t = TargetStats::new(Arc::from(label), 3);
            for _ in 0..requests {
                t.response(Outcome::Http(200));
                t.corrected.record(requests).unwrap();
            }
            t
        };
        let mut a = Stats::new(3);
        a.targets = vec![target("GET /x", 1), target("GET /x", 2), target("GET /y", 3)];
        let mut b = Stats::new(3);
        // Another order, a label a lacks, the same label twice.
        b.targets = vec![target("GET /z", 4), target("GET /x", 5), target("GET /y", 6)];
        b.targets.push(target("GET /x", 7));
        a.merge(&b);
        let got: Vec<(&str, u64, u64)> =
            a.targets.iter().map(|t| (&*t.label, t.requests, t.corrected.len())).collect();
        assert_eq!(got, [("GET /x", 6, 6), ("GET /x", 9, 9), ("GET /y", 9, 9), ("GET /z", 4, 4)]);
        // Threads of one run: the same targets, added in place.
        let mut c = a.clone();
        c.merge(&a);
        assert_eq!(c.targets[3].requests, 8);
        assert_eq!(c.targets[1].outcomes.http_status(200), 18);
    }

    #[test]
    fn histograms_grow_to_the_values_they_see() {
        let mut h = latency_histogram(3);
        assert_eq!(h.buckets(), 1);
        h.record(100_000).unwrap();
        assert_eq!(h.buckets(), 7);
        h.record(MAX_LATENCY_US).unwrap();
        // wrk2's geometry for one day.
        assert_eq!(h.buckets(), 27);
        let mut merged = latency_histogram(3);
        merged.add(&h).unwrap();
        assert_eq!((merged.len(), merged.max()), (2, h.max()));
    }

    #[test]
    fn clear_empties_everything() {
        let mut a = Stats::new(3);
        a.corrected.record(5).unwrap();
        a.response(Outcome::Http(500));
        a.error(ErrorKind::Read, "x");
        a.rate_samples.push(1.0);
        a.phases.first_byte.record(5).unwrap();
        a.clear();
        assert!(a.corrected.is_empty() && a.error_causes.is_empty());
        assert!(a.phases.first_byte.is_empty());
        assert_eq!(a.outcomes.iter().count(), 0);
        assert_eq!((a.requests, a.errors, a.rate_samples.len()), (0, Errors::default(), 0));
    }
}

/// One thread's counts over the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadTotals {
    pub requests: u64,
    pub bytes: u64,
    pub errors: Errors,
}

impl From<&Stats> for ThreadTotals {
    fn from(stats: &Stats) -> ThreadTotals {
        let mut totals = ThreadTotals::default();
        totals.add(stats);
        totals
    }
}

impl ThreadTotals {
    pub fn add(&mut self, stats: &Stats) {
        self.requests += stats.requests;
        self.bytes += stats.bytes;
        self.errors.add(&stats.errors);
    }
}

/// What a whole run produced: the merged measurements plus what the
/// reports need to put them in context.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// All threads' measurements added together.
    pub total: Stats,
    /// Each thread's counts, in thread order.
    pub threads: Vec<ThreadTotals>,
    /// The sending window the rates are over: from the start of the
    /// measured plan to its end (or the stop), as wrk2 divides by the
    /// run's duration. Responses that came after it still count. A closed
    /// loop that ended because its `-n` requests were done lasts until the
    /// last of them was answered.
    pub runtime: Duration,
    /// Set when SIGINT/SIGTERM ended the run early.
    pub interrupted: Option<Interruption>,
    /// The script stopped every thread (`thread:stop()`): the run, and the
    /// rates, end there (wrk divides by the whole `-d`).
    pub script_stopped: bool,
    /// Completed requests per thread and per [`RunResult::series_interval`]
    /// since the start (wrx's time series).
    pub series: Vec<Vec<u64>>,
    pub series_interval: Duration,
    /// When the measured part of the run began, by the wall clock (after
    /// the warm-up): where `runtime` starts, so that runs of several
    /// machines can be put on one time line.
    pub measured_from: SystemTime,
    /// How the run went through time, for the checks of its validity.
    pub course: course::Course,
}

#[cfg(test)]
impl RunResult {
    /// A run of one thread that measured `total` in `runtime`: not
    /// interrupted, no time series. What the reports' tests start from.
    pub fn measured(total: Stats, runtime: Duration) -> RunResult {
        RunResult {
            threads: vec![ThreadTotals::from(&total)],
            total,
            runtime,
            interrupted: None,
            script_stopped: false,
            series: Vec::new(),
            series_interval: Duration::from_millis(250),
            measured_from: std::time::UNIX_EPOCH,
            course: course::Course::default(),
        }
    }
}

/// The measurements of one reporting period (`-p`, `--hlog`), all threads
/// merged.
#[derive(Clone, Debug)]
pub struct Interval {
    /// 0 for the first period of the run.
    pub index: u64,
    /// Start of the period, from the start of the run.
    pub start: Duration,
    /// Length of the period (the last one may be shorter).
    pub length: Duration,
    pub stats: Stats,
}
