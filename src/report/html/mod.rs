//! The HTML report (`--html FILE`, `pace merge --html`, `pace report`):
//! one self-contained page, nothing fetched from the network, readable
//! without JavaScript (there is none), light or dark as the reader's
//! system prefers, and printable on A4.
//!
//! [`write`] lays the page out; [`tables`] writes its words and tables,
//! [`charts`] decides what its charts show and [`svg`] draws them;
//! [`timeline`] is what a run keeps of each period for the charts over
//! time, and [`escape`] makes any text safe to show.

pub(crate) mod charts;
pub(crate) mod escape;
pub(crate) mod svg;
pub(crate) mod tables;
pub mod timeline;

use std::io::{self, Write};

use super::ReportOptions;
use crate::config::Mode;
use crate::description::Description;
use crate::provenance::masked_url;
use crate::slo::Verdict;
use crate::stats::RunResult;
use timeline::PeriodPoint;

use self::escape::escape;

/// The page's style sheet: colours for both schemes, print layout.
pub(crate) const STYLE: &str = include_str!("style.css");

/// Everything a page is made from.
pub struct Page<'a> {
    pub run: &'a Description,
    pub report: &'a ReportOptions,
    pub result: &'a RunResult,
    /// The verdicts on the run's `--slo` objectives (none without).
    pub verdicts: &'a [Verdict],
    /// The run's periods, in order (none: no charts over time).
    pub timeline: &'a [PeriodPoint],
    pub origin: Origin<'a>,
}

/// Where the figures come from.
pub enum Origin<'a> {
    /// The run that just ended.
    Live,
    /// A run saved with `-e`, in this file (`pace report`).
    Saved(&'a str),
    /// Several saved runs added together (`pace merge`).
    Merged(Merged<'a>),
}

/// What a merge put together.
pub struct Merged<'a> {
    /// `the 3 shards of one plan`, `2 runs`.
    pub what: String,
    /// What an input is: `shard` or `run`.
    pub label: &'static str,
    pub inputs: Vec<Input>,
    /// What could not be merged, and why.
    pub notes: &'a [String],
}

/// One merged input's figures.
pub struct Input {
    /// `0/3` for a shard, its number for a run.
    pub name: String,
    /// The file it was read from.
    pub source: String,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub latency_p99_us: Option<u64>,
    /// Paced runs only.
    pub lag_p99_us: Option<u64>,
    /// Socket errors, statuses > 399 and unsent requests.
    pub errors: u64,
}

/// Writes the page.
pub fn write(out: &mut dyn Write, page: &Page) -> io::Result<()> {
    let url = escape(&masked_url(&page.run.url));
    let paced = matches!(page.run.mode, Mode::Paced(_));
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"pace {version}\">\n\
         <title>pace: {url}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <header><h1>pace report</h1><p class=\"url\">{url}</p></header>\n",
        version = env!("CARGO_PKG_VERSION"),
    )?;
    section(out, "verdict", "Verdict", &tables::verdict(page))?;
    section(out, "settings", "Settings", &tables::settings(page))?;
    section(out, "summary", "Summary", &tables::summary(page))?;
    section(out, "latency", "Latency", &latency(page, paced))?;
    section(out, "over-time", "Over time", &over_time(page, paced))?;
    if paced {
        section(out, "lag", "Schedule lag", &lag(page))?;
    }
    let stages = tables::stages(page);
    if !stages.is_empty() {
        section(out, "stages", "Stages", &stages)?;
    }
    let targets = tables::targets(page);
    if !targets.is_empty() {
        section(out, "targets", "Per target", &targets)?;
    }
    let mut rows = tables::threads(page);
    rows.push_str(&tables::inputs(page));
    section(out, "threads", "Threads", &rows)?;
    write_end(out)
}

/// The footer, and the end of the page.
pub fn write_end(out: &mut dyn Write) -> io::Result<()> {
    write!(
        out,
        "<footer>Written by pace {}. Times as in the text report: us, ms, s.</footer>\n\
         </main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// A section of the page: `title` over `body`.
pub fn section(out: &mut dyn Write, id: &str, title: &str, body: &str) -> io::Result<()> {
    writeln!(out, "<section id=\"{id}\">\n<h2>{title}</h2>\n{body}</section>")
}

/// A chart, or a sentence saying why there is none.
fn chart_or(chart: Option<svg::Chart>, why_not: &str) -> String {
    match chart {
        Some(chart) => chart.render(),
        None => none(why_not),
    }
}

/// A sentence saying why something is not shown.
pub fn none(why: &str) -> String {
    format!("<p class=\"none\">{}</p>\n", escape(why))
}

/// The percentile spectrum and the table of percentiles.
fn latency(page: &Page, paced: bool) -> String {
    let stats = &page.result.total;
    let (chart, intro) = if paced {
        (
            charts::spectrum(
                "spectrum",
                "Latency by percentile",
                &[
                    ("corrected (from the intended send time)", &stats.corrected, false),
                    ("uncorrected (from the actual send)", &stats.uncorrected, true),
                ],
            ),
            "Corrected latency counts from when the plan meant each request to be sent, \
             uncorrected from when it was sent: where the two part, requests waited to be \
             sent (coordinated omission hides that wait).",
        )
    } else {
        (
            charts::spectrum(
                "spectrum",
                "Latency by percentile",
                &[("latency", &stats.corrected, false)],
            ),
            "Closed loop (no -R): each request is sent when its connection is free, so the \
             latency counts from the actual send.",
        )
    };
    let mut out = format!("<p>{}</p>\n", escape(intro));
    out.push_str(&chart_or(chart, "No latency was recorded."));
    out.push_str(&tables::latency(page));
    out
}

/// Latency, throughput, statuses and errors per period.
fn over_time(page: &Page, paced: bool) -> String {
    let periods = page.timeline;
    if periods.is_empty() {
        let why = match page.origin {
            Origin::Live => "No per-period data: the run ended before its first period.",
            Origin::Saved(_) => {
                "No per-period data: the run was saved without -p, so only whole-run figures \
                 are shown (save it with -p to get them)."
            }
            Origin::Merged(_) => {
                "No per-period data: the inputs have no -p periods of one length on one time \
                 line (see the notes above), so only whole-run figures are shown."
            }
        };
        return none(why);
    }
    let length = periods[0].length;
    let mut out = format!(
        "<p>Per period of {}; a response counts in the period it arrived in.</p>\n",
        escape(&crate::units::format_time_us(length.as_micros() as f64))
    );
    out.push_str(&chart_or(charts::latency_over_time(periods, paced), "No latency was recorded."));
    out.push_str(&chart_or(charts::throughput(periods), "No responses."));
    out.push_str(&chart_or(charts::statuses_and_errors(periods), "No responses and no errors."));
    out
}

/// The schedule lag's percentile spectrum: how late pace sent.
fn lag(page: &Page) -> String {
    let chart = charts::spectrum(
        "lag",
        "Schedule lag by percentile",
        &[("lag (actual minus intended send time)", &page.result.total.lag, false)],
    );
    let mut out = String::from(
        "<p>How late each request was sent against the plan. It measures the load \
         generator, not the server: large lag means the corrected latency includes time \
         the requests waited in pace (the warnings above say why).</p>\n",
    );
    out.push_str(&chart_or(chart, "No request was sent."));
    out
}

#[cfg(test)]
mod tests;
