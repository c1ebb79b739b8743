//! What concurrency a run offered: the requests it had in flight on
//! average, against the slots it had to carry them (connections, each
//! with its streams over HTTP/2). By Little's law the mean in flight is
//! the time requests spent in flight, summed, over the run's time: each
//! answered request's latency from its actual send (the uncorrected
//! one), and each timed-out request's whole timeout.
//!
//! In a closed loop every slot sends again as soon as its response is
//! handled, so a slot is idle only while pace itself turns it around: a
//! mean well below the slots says that the generator, not the server,
//! held the concurrency down (see `diagnose`'s `generator_held_slots`).

use std::io::{self, Write};

use crate::description::Description;
use crate::stats::{spectrum, RunResult};

/// The concurrency a run offered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Concurrency {
    pub connections: usize,
    /// Requests one connection carries at once: `--streams` or fewer when
    /// a server allowed fewer (HTTP/2), 1 over HTTP/1.1.
    pub streams: usize,
    /// Requests in flight on average over the run (None: nothing was in
    /// flight, or the run had no time).
    pub mean_in_flight: Option<f64>,
}

impl Concurrency {
    pub fn of(run: &Description, result: &RunResult) -> Concurrency {
        let stats = &result.total;
        let answered = &stats.uncorrected;
        let answered_us = if answered.is_empty() {
            0.0
        } else {
            spectrum::mean(answered) * answered.len() as f64
        };
        let timed_out_us = stats.errors.timeout as f64 * run.timeout.as_secs_f64() * 1e6;
        let runtime_us = result.runtime.as_secs_f64() * 1e6;
        let in_flight_us = answered_us + timed_out_us;
        let connections = run.connections_of_instance();
        let streams = run.slots_per_connection(stats.http2.stream_limit);
        // The answers that came after the end (requests in flight at the
        // stop) count whole: at most one latency per slot more than the
        // run's window holds, so the slots cap the mean.
        let slots = connections.saturating_mul(streams) as f64;
        Concurrency {
            connections,
            streams,
            mean_in_flight: (runtime_us > 0.0 && in_flight_us > 0.0)
                .then(|| (in_flight_us / runtime_us).min(slots)),
        }
    }

    /// Connections times their streams.
    pub fn slots(self) -> usize {
        self.connections.saturating_mul(self.streams)
    }

    /// The mean in flight as a share of the slots (None as the mean).
    pub fn busy_share(self) -> Option<f64> {
        let slots = self.slots();
        self.mean_in_flight.filter(|_| slots > 0).map(|mean| mean / slots as f64)
    }

    /// `100 slots (10 connections x 10 streams)`, or `10 connections`.
    pub fn describe_slots(self) -> String {
        match self.streams {
            1 if self.connections == 1 => "1 connection".to_string(),
            1 => format!("{} connections", self.connections),
            streams => {
                format!(
                    "{} slots ({} connections x {streams} streams)",
                    self.slots(),
                    self.connections
                )
            }
        }
    }
}

/// The text report's line (with `-L`, after wrk's lines):
/// `  In flight: 12.40 requests on average, of 100 slots (10 connections x 10 streams)`.
pub fn write_line(out: &mut dyn Write, concurrency: Concurrency) -> io::Result<()> {
    let Some(mean) = concurrency.mean_in_flight else { return Ok(()) };
    writeln!(out, "  In flight: {mean:.2} requests on average, of {}", concurrency.describe_slots())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::BenchConfig;
    use crate::protocol::Protocol;
    use crate::stats::Stats;
    use crate::target::Target;

    fn run(connections: usize, streams: usize) -> Description {
        Description::of(&BenchConfig {
            connections,
            threads: 1,
            streams,
            protocol: if streams > 1 { Protocol::Http2 } else { Protocol::Http1 },
            timeout: Duration::from_secs(2),
            ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap())
        })
    }

    /// Little's law: 1,000 answers of 2 ms each and one time-out of 2 s
    /// over 1 s kept 4 requests in flight on average.
    #[test]
    fn mean_in_flight_is_the_time_in_flight_over_the_run() {
        let mut total = Stats::new(3);
        total.uncorrected.record_n(2000, 1000).unwrap();
        total.errors.timeout = 1;
        let result = RunResult::measured(total, Duration::from_secs(1));
        let concurrency = Concurrency::of(&run(10, 1), &result);
        let mean = concurrency.mean_in_flight.unwrap();
        assert!((mean - 4.0).abs() < 0.01, "{mean}");
        assert_eq!(concurrency.slots(), 10);
        assert!((concurrency.busy_share().unwrap() - 0.4).abs() < 0.01);
        let mut text = Vec::new();
        write_line(&mut text, concurrency).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "  In flight: 4.00 requests on average, of 10 connections\n"
        );
    }

    /// HTTP/2 slots are connections times the streams the server allowed.
    #[test]
    fn streams_are_slots_as_the_server_allowed_them() {
        let mut total = Stats::new(3);
        total.http2.stream_limit = Some(8);
        let result = RunResult::measured(total, Duration::from_secs(1));
        let concurrency = Concurrency::of(&run(10, 100), &result);
        assert_eq!(concurrency.slots(), 80);
        assert_eq!(concurrency.describe_slots(), "80 slots (10 connections x 8 streams)");
        // Nothing in flight: no mean, and no line.
        assert_eq!(concurrency.mean_in_flight, None);
        let mut text = Vec::new();
        write_line(&mut text, concurrency).unwrap();
        assert!(text.is_empty());
    }
}
