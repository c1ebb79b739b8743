//! Service-level objectives (`--slo 'p99<10ms,errors<0.1%'`): a verdict a
//! CI pipeline can act on. [`parse`] reads the objectives, [`check`] says
//! whether a run can measure them (a share of the target rate needs one),
//! [`evaluate`] judges a finished run, and the verdicts are printed after
//! the text report ([`write_verdicts`]), put in the final JSON report, and
//! turn into exit code 4 when one fails ([`gate`]).
//!
//! Evaluation is a pure function of a [`RunResult`] and an [`Expectation`]
//! (what the run was meant to do), never of the engine, so merged results
//! can be judged the same way. Every figure is computed as the reports
//! compute it (`report::spectrum`), so a verdict always agrees with the
//! report above it.
//!
//! The grammar (also in README.md):
//!
//! ```text
//! list      = objective { "," objective }     (--slo may be repeated)
//! objective = metric op threshold             (spaces allowed between them)
//! op        = "<" | "<=" | ">" | ">="
//! metric    = [ "u." | "lag." ] ( "p" N | "mean" | "stdev" | "max" )
//!           | "errors" | "requests" | "rate"
//! ```
//!
//! - `pN` (N from 0 to 100, e.g. `p99.9`; `p100` is the maximum), `mean`,
//!   `stdev`, `max`: the corrected latency (from the intended send time, the
//!   report's headline); `u.` the uncorrected latency, `lag.` the schedule
//!   lag (only with a plan). Thresholds are times with a unit (`10ms`,
//!   `500us`, `1.5s`); a bare number is refused, as it could mean seconds
//!   (wrk's `-d`) or milliseconds.
//! - `errors`: with `%`, the share of the requests issued that failed:
//!   `(connect + read + write + timeout + status + unsent) / (requests +
//!   connect + read + write + timeout + unsent)`, where `requests` are the
//!   completed responses (status errors among them), each socket error
//!   counts as one request that did not complete, and `unsent` are the
//!   requests the plan wanted sent that never were. Without `%`, the count
//!   of those errors.
//! - `requests`: completed responses (a count, SI suffixes allowed: `10k`).
//! - `rate`: with `%`, the achieved rate (completed responses per second of
//!   run time, the report's `Requests/sec`) as a share of the target rate
//!   (the plan's mean rate after the warm-up; needs a plan, `-R` or
//!   `--stages`); without `%`, requests per second (`1.5k`).

mod evaluate;
mod parse;

pub use evaluate::{
    error_share, evaluate, format_value, gate, verdicts, write_verdicts, Expectation, Verdict,
};
pub use parse::{check, metric, parse};

/// One objective: `metric op threshold`.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    pub metric: Metric,
    pub op: Op,
    /// The threshold in `unit` (microseconds for times).
    pub threshold: f64,
    pub unit: Unit,
    /// The threshold as typed, without spaces (`10ms`, `0.1%`).
    pub threshold_text: String,
}

impl Objective {
    /// `p99<10ms`: the metric's name, the operator and the threshold as
    /// typed, without spaces.
    pub fn text(&self) -> String {
        format!("{}{}{}", self.metric.name(), self.op.symbol(), self.threshold_text)
    }

    /// `p99 < 10ms`, for people.
    pub fn spaced(&self) -> String {
        format!("{} {} {}", self.metric.name(), self.op.symbol(), self.threshold_text)
    }
}

/// What an objective measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// A statistic of one of the latency histograms.
    Latency(Source, Stat),
    /// Failed requests: a share of the requests issued (`%`) or a count.
    Errors,
    /// Completed responses.
    Requests,
    /// Achieved requests per second, or its share of the target rate.
    Rate,
}

impl Metric {
    /// The canonical name: `p99.9`, `u.mean`, `lag.max`, `errors`.
    pub fn name(&self) -> String {
        match self {
            Metric::Latency(source, stat) => {
                let stat = match stat {
                    // f64's Display is the shortest exact form: 99, 99.9.
                    Stat::Percentile(p) => format!("p{p}"),
                    Stat::Mean => "mean".to_string(),
                    Stat::Stdev => "stdev".to_string(),
                    Stat::Max => "max".to_string(),
                };
                format!("{}{stat}", source.prefix())
            }
            Metric::Errors => "errors".to_string(),
            Metric::Requests => "requests".to_string(),
            Metric::Rate => "rate".to_string(),
        }
    }
}

/// Which latency histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// From the intended send time (no prefix): the headline figure.
    Corrected,
    /// From the actual send time (`u.`).
    Uncorrected,
    /// Actual minus intended send time (`lag.`): the load generator.
    Lag,
}

impl Source {
    fn prefix(self) -> &'static str {
        match self {
            Source::Corrected => "",
            Source::Uncorrected => "u.",
            Source::Lag => "lag.",
        }
    }
}

/// Which statistic of a histogram, each as the report prints it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stat {
    /// 0 to 100; HdrHistogram's value at that percentile.
    Percentile(f64),
    /// wrk2's mean (over bucket midpoints).
    Mean,
    /// wrk2's population standard deviation.
    Stdev,
    /// The largest value (the highest value of its bucket).
    Max,
}

/// The comparison an objective asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    /// Whether `value op threshold`.
    pub fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Op::Lt => value < threshold,
            Op::Le => value <= threshold,
            Op::Gt => value > threshold,
            Op::Ge => value >= threshold,
        }
    }
}

/// The unit of an objective's threshold and measured value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds (latency and lag).
    Micros,
    /// Percent (0.1 is 0.1%).
    Percent,
    /// A number of requests or errors.
    Count,
    /// Requests per second.
    PerSecond,
}

impl Unit {
    /// The unit's name in the JSON report.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Micros => "us",
            Unit::Percent => "%",
            Unit::Count => "count",
            Unit::PerSecond => "requests/s",
        }
    }
}
