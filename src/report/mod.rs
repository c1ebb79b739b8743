//! Reports of a finished run, made from a description of the run
//! ([`crate::description`]) and what it measured, as [`ReportOptions`]
//! ask. [`text`] is the wrk/wrk2 text report (with HdrHistogram_c's
//! "Detailed Percentile spectrum", [`crate::stats::spectrum`]);
//! [`periodic`] is the text report of one `-p` period, [`json`] the JSON
//! report, [`hlog`] the HdrHistogram interval log and [`series`] wrx's
//! time series and raw histogram. [`diagnose`] says what went wrong in a
//! paced run, for the text and the JSON report alike, and [`validity`]
//! whether the run can be trusted. [`html`] is the self-contained HTML
//! page with charts.

pub mod concurrency;
pub mod diagnose;
pub mod hlog;
pub mod html;
pub mod json;
pub mod periodic;
pub mod plan;
pub mod reached;
pub mod series;
pub mod targets;
pub mod text;
pub mod validity;

use std::time::Duration;

/// What the reports show, as the command line asks: the same for a live
/// run and for `pace report` or `pace merge` of saved ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportOptions {
    /// `-L` (also with `-U` and `--percentiles`): the latency distribution.
    pub latency: bool,
    /// `-U`: also the uncorrected one.
    pub u_latency: bool,
    /// `--percentiles`: those of the distributions (None: the wrk/wrk2
    /// defaults).
    pub percentiles: Option<Vec<f64>>,
    /// `--timeseries[=T]`: requests per slot of T (wrx: 250 ms).
    pub timeseries: Option<Duration>,
    /// `--thread-timeseries`: the same per thread.
    pub thread_timeseries: bool,
    /// `--histogram`: requests per 1 us latency bin.
    pub histogram: bool,
}

/// The time series' slot when `--thread-timeseries` is given alone (wrx:
/// 250 ms).
const SERIES_SLOT: Duration = Duration::from_millis(250);

impl ReportOptions {
    /// The slot of the time series the run must record, if any.
    pub fn series_slot(&self) -> Option<Duration> {
        self.timeseries.or(self.thread_timeseries.then_some(SERIES_SLOT))
    }

    /// A wrx option asks for wrx's output (its percentiles in the closed
    /// loop's distribution).
    pub fn wrx(&self) -> bool {
        self.histogram || self.timeseries.is_some() || self.thread_timeseries
    }
}
