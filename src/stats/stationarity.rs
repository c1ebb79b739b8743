//! Whether a run (or one step of a capacity search) held a steady state:
//! a queue that keeps building shows as latency and requests in flight
//! that grow from one period to the next, even while the whole run's
//! percentiles still look fine.
//!
//! Each measure is judged over the periods in order by two rules, and
//! grows only when both say so:
//!
//! - **A trend** (the Mann-Kendall test): of all pairs of periods, clearly
//!   more have the later value above the earlier one than below it (one
//!   sided, about 1% of steady runs would pass by chance). It needs no
//!   model of the values and ignores how far apart they are, so one slow
//!   period cannot make a trend.
//! - **A size**: the last third of the periods is at least
//!   [`GROWTH`] times the first third (their medians), and above it by a
//!   floor of the measure's own (a millisecond of latency, a few
//!   requests): a drift of a few percent, a cache warming, is a trend but
//!   no queue.
//!
//! Latency per period is its median corrected latency (from the intended
//! send time, so a backlog of due requests counts); in flight is what was
//! sent and had not ended at the period's end, counted from the periods'
//! sends and ends.

use super::spectrum::value_at_percentile;
use super::Stats;

/// Fewer periods than this say nothing about a trend.
pub const MIN_PERIODS: usize = 6;
/// The Mann-Kendall statistic's one-sided 1% point.
const TREND_Z: f64 = 2.33;
/// The last third against the first: a queue at least doubles what waits.
pub const GROWTH: f64 = 2.0;
/// Latency must grow by at least this much (us)...
pub const LATENCY_FLOOR_US: f64 = 1000.0;
/// ...and requests in flight by at least this many.
const IN_FLIGHT_FLOOR: f64 = 4.0;

/// How a measure went through the periods.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trend {
    Steady,
    /// It kept growing: the medians of the first and last thirds.
    Growing {
        from: f64,
        to: f64,
    },
}

/// The verdict on a run's periods.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stationarity {
    /// Neither latency nor requests in flight kept growing.
    Stationary,
    /// Too few periods to judge (how many there were).
    TooFewPeriods(usize),
    /// Median corrected latency kept growing (us).
    LatencyGrowing { from_us: f64, to_us: f64 },
    /// Requests in flight kept growing.
    InFlightGrowing { from: f64, to: f64 },
}

impl Stationarity {
    /// Whether the periods held a steady state.
    pub fn holds(self) -> bool {
        matches!(self, Stationarity::Stationary)
    }

    /// What went wrong, in words (empty when nothing did).
    pub fn why(self) -> String {
        use crate::units::format_time_us;
        match self {
            Stationarity::Stationary => String::new(),
            Stationarity::TooFewPeriods(n) => {
                format!("{n} periods, too few to tell a steady state (at least {MIN_PERIODS})")
            }
            Stationarity::LatencyGrowing { from_us, to_us } => format!(
                "latency kept growing, p50 {} to {}: a queue building",
                format_time_us(from_us),
                format_time_us(to_us)
            ),
            Stationarity::InFlightGrowing { from, to } => {
                format!("requests in flight kept growing, {from:.0} to {to:.0}: a queue building")
            }
        }
    }
}

/// What the rules read of one period: its median corrected latency, and
/// the requests sent and ended in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measures {
    pub latency_p50_us: f64,
    pub sent: u64,
    pub ended: u64,
}

/// A period the rules can judge: a period's measurements, or what a run
/// keeps of them (`crate::stats::course`).
pub trait Period {
    fn measures(&self) -> Measures;
}

impl Period for &Stats {
    fn measures(&self) -> Measures {
        Measures {
            latency_p50_us: value_at_percentile(&self.corrected, 50.0) as f64,
            sent: sent(self),
            ended: ended(self),
        }
    }
}

/// Requests sent: a paced run records one schedule lag per send (0 in the
/// closed loop, which records none).
pub fn sent(stats: &Stats) -> u64 {
    stats.lag.len()
}

/// Requests ended: with a response, a socket error or a timeout.
pub fn ended(stats: &Stats) -> u64 {
    stats.requests + stats.errors.read + stats.errors.write + stats.errors.timeout
}

/// Judges `periods`, in order: the periods of one run or one step.
pub fn judge<P: Period>(periods: &[P]) -> Stationarity {
    if periods.len() < MIN_PERIODS {
        return Stationarity::TooFewPeriods(periods.len());
    }
    let measures: Vec<Measures> = periods.iter().map(Period::measures).collect();
    let latency: Vec<f64> = measures.iter().map(|period| period.latency_p50_us).collect();
    if let Trend::Growing { from, to } = trend(&latency, LATENCY_FLOOR_US) {
        return Stationarity::LatencyGrowing { from_us: from, to_us: to };
    }
    match trend(&in_flight(&measures), IN_FLIGHT_FLOOR) {
        Trend::Growing { from, to } => Stationarity::InFlightGrowing { from, to },
        Trend::Steady => Stationarity::Stationary,
    }
}

/// Requests sent and not ended at each period's end, from the first
/// period's start.
fn in_flight(periods: &[Measures]) -> Vec<f64> {
    let mut waiting = 0f64;
    periods
        .iter()
        .map(|period| {
            waiting += period.sent as f64 - period.ended as f64;
            waiting
        })
        .collect()
}

/// Whether `values` kept growing, by both rules of the module's comment,
/// `floor` being the least growth that counts.
pub fn trend(values: &[f64], floor: f64) -> Trend {
    let n = values.len();
    if n < MIN_PERIODS || mann_kendall_z(values) < TREND_Z {
        return Trend::Steady;
    }
    let third = n / 3;
    let (from, to) = (median(&values[..third]), median(&values[n - third..]));
    if to >= from * GROWTH && to - from >= floor {
        Trend::Growing { from, to }
    } else {
        Trend::Steady
    }
}

/// The Mann-Kendall statistic as a standard normal score (with the
/// continuity correction; ties count as neither rise nor fall, and the
/// variance is not reduced for them, which only makes a trend harder to
/// find).
fn mann_kendall_z(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let s: f64 = (0..values.len())
        .flat_map(|i| (i + 1..values.len()).map(move |j| (i, j)))
        .map(|(i, j)| match values[j].partial_cmp(&values[i]) {
            Some(std::cmp::Ordering::Greater) => 1.0,
            Some(std::cmp::Ordering::Less) => -1.0,
            _ => 0.0,
        })
        .sum();
    let variance = n * (n - 1.0) * (2.0 * n + 5.0) / 18.0;
    if s > 0.0 {
        (s - 1.0) / variance.sqrt()
    } else {
        0.0
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_that_builds_grows() {
        // 2 ms more every period: a server 10% short of the rate.
        let values: Vec<f64> = (0..10).map(|i| 500.0 + 2000.0 * i as f64).collect();
        assert!(matches!(trend(&values, LATENCY_FLOOR_US), Trend::Growing { .. }));
    }

    #[test]
    fn noise_and_one_slow_period_are_steady() {
        let noise = [510.0, 480.0, 530.0, 495.0, 505.0, 470.0, 520.0, 500.0, 490.0, 515.0];
        assert_eq!(trend(&noise, LATENCY_FLOOR_US), Trend::Steady);
        let mut spike = noise;
        spike[9] = 90_000.0;
        assert_eq!(trend(&spike, LATENCY_FLOOR_US), Trend::Steady);
    }

    #[test]
    fn a_small_drift_is_a_trend_but_no_queue() {
        let drift: Vec<f64> = (0..10).map(|i| 500.0 + 10.0 * i as f64).collect();
        assert!(mann_kendall_z(&drift) > TREND_Z);
        assert_eq!(trend(&drift, LATENCY_FLOOR_US), Trend::Steady);
    }

    #[test]
    fn growth_below_the_floor_does_not_count() {
        // Tripled, but by 200 us: no queue worth a verdict.
        let values: Vec<f64> = (0..10).map(|i| 100.0 + 30.0 * i as f64).collect();
        assert_eq!(trend(&values, LATENCY_FLOOR_US), Trend::Steady);
    }

    #[test]
    fn few_periods_cannot_be_judged() {
        let stats = Stats::new(3);
        assert_eq!(judge(&[&stats, &stats]), Stationarity::TooFewPeriods(2));
        assert!(!Stationarity::TooFewPeriods(2).holds());
    }

    fn period(latency_us: u64, sent: u64, answered: u64) -> Stats {
        let mut stats = Stats::new(3);
        for _ in 0..sent {
            stats.lag.record(10).unwrap();
        }
        for _ in 0..answered {
            stats.corrected.record(latency_us).unwrap();
        }
        stats.requests = answered;
        stats
    }

    #[test]
    fn judged_on_latency_then_on_requests_in_flight() {
        let steady: Vec<Stats> = (0..8).map(|_| period(800, 100, 100)).collect();
        assert_eq!(judge(&steady.iter().collect::<Vec<_>>()), Stationarity::Stationary);
        let queue: Vec<Stats> = (0..8).map(|i| period(800 + 3000 * i, 100, 100)).collect();
        assert!(matches!(
            judge(&queue.iter().collect::<Vec<_>>()),
            Stationarity::LatencyGrowing { .. }
        ));
        // Ten more sent than answered every period: the latency of what was
        // answered says nothing yet.
        let piling: Vec<Stats> = (0..8).map(|_| period(800, 100, 90)).collect();
        let judged = judge(&piling.iter().collect::<Vec<_>>());
        assert!(matches!(judged, Stationarity::InFlightGrowing { .. }), "{judged:?}");
        assert!(judged.why().contains("in flight"));
    }
}
