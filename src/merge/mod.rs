//! `pace merge FILE...`: the results of several runs (`-e`, `--hlog`),
//! typically the shards of one plan sent from several machines, reported
//! as one run, exactly: see [`combine`].
//!
//! The merged run is reported by the same code as a live one (text with
//! `-L`/`-U`, JSON with `-e`, `--slo` verdicts and exit code 4), followed
//! by a line per input. Everything is written at the end, to stdout or
//! completely to `-o FILE`, and with `--html` to an HTML page.
//!
//! `pace report FILE` ([`report`]) is the same for one saved run, without
//! the merge: its text report again (with any `-L`, `-U`, `--percentiles`
//! asked for now), and its HTML page.

mod combine;
mod hlog;
mod runs;
pub mod saved;

/// The configuration a saved run's settings describe (`pace compare`
/// diagnoses each run with it).
pub use combine::config;

use std::io::{self, Write};
use std::path::PathBuf;

use crate::config::{BenchConfig, Mode, OutputOptions};
use crate::error::Error;
use crate::outfile::{self, write_error, OutputFile};
use crate::report::html::{self, timeline::PeriodPoint};
use crate::report::{json, text};
use crate::slo::{self, Objective};
use crate::stats::{Interval, RunResult};

/// What `pace merge` was asked.
#[derive(Debug, Default)]
pub struct MergeArgs {
    pub files: Vec<PathBuf>,
    /// `-L`, `-U`.
    pub latency: bool,
    pub u_latency: bool,
    /// `-e`, `--percentiles`, `-o`.
    pub outputs: OutputOptions,
    pub slo: Vec<Objective>,
}

/// What a page is made of besides the configuration and the result.
struct PageParts<'a> {
    periods: &'a [Interval],
    origin: html::Origin<'a>,
}

/// Runs `pace merge`; returns the exit code.
pub fn run(args: &MergeArgs) -> Result<i32, Error> {
    let logs = args.files.iter().filter(|path| hlog::is_log(path)).count();
    if logs > 0 && logs < args.files.len() {
        return Err(Error::Usage(
            "merge either results of -e or --hlog logs, not both (a log holds only latencies)"
                .into(),
        ));
    }
    if logs > 0 {
        if !args.slo.is_empty() {
            return Err(Error::Usage("--slo needs results of -e, not --hlog logs".into()));
        }
        if args.outputs.html.is_some() {
            return Err(Error::Usage("--html needs results of -e, not --hlog logs".into()));
        }
        let merged = hlog::merge(&args.files).map_err(Error::Setup)?;
        return write_out(args, |out| hlog::write(out, args, &merged)).map(|()| 0);
    }
    let saved = args
        .files
        .iter()
        .map(|path| saved::read(path))
        .collect::<Result<Vec<_>, String>>()
        .map_err(Error::Setup)?;
    let merged = combine::combine(&saved).map_err(Error::Setup)?;
    let cfg = configure(&merged.settings, args)?;
    // A page that cannot be written stops the merge before any output.
    let page = open_page(args)?;
    for note in &merged.notes {
        eprintln!("pace merge: {note}");
    }
    let lines = runs::lines(&saved);
    write_out(args, |out| {
        if cfg.outputs.json {
            for period in &merged.periods {
                json::write_line(out, &json::period_report(&cfg, period)?)?;
            }
            let mut report = serde_json::to_value(json::final_report(&cfg, &merged.result)?)?;
            report["merged_from"] = serde_json::to_value(&lines)?;
            report["merge_notes"] = serde_json::to_value(&merged.notes)?;
            serde_json::to_writer(&mut *out, &report)?;
            return writeln!(out);
        }
        runs::write_header(out, &cfg, merged.kind, saved.len())?;
        text::write_report(out, &cfg, &merged.result)?;
        runs::write_lines(out, merged.kind, &lines, matches!(cfg.mode, Mode::Paced(_)))?;
        slo::write_verdicts(out, &slo::verdicts(&cfg, &merged.result))
    })?;
    if let Some(page) = page {
        let inputs = lines
            .iter()
            .enumerate()
            .map(|(i, line)| html::Input {
                name: runs::name(line, i),
                source: line.source.clone(),
                requests: line.requests,
                requests_per_sec: line.requests_per_sec,
                latency_p99_us: line.latency_p99_us,
                lag_p99_us: line.lag_p99_us,
                errors: line.errors,
            })
            .collect();
        let origin = html::Origin::Merged(html::Merged {
            what: runs::describe(merged.kind, saved.len()),
            label: runs::label(merged.kind),
            inputs,
            notes: &merged.notes,
        });
        let parts = PageParts { periods: &merged.periods, origin };
        write_page(page, &cfg, &merged.result, parts)?;
    }
    Ok(slo::gate(&cfg, &merged.result))
}

/// Runs `pace report`: the one saved run of `args.files`, reported again
/// as text on stdout and, with `--html`, as a page; returns the exit code.
pub fn report(args: &MergeArgs) -> Result<i32, Error> {
    let [path] = args.files.as_slice() else {
        return Err(Error::Usage("pace report takes one file (pace merge adds several)".into()));
    };
    let run = saved::read(path).map_err(Error::Setup)?;
    let cfg = configure(&run.settings, args)?;
    let page = open_page(args)?;
    for caveat in &run.caveats {
        eprintln!("pace report: {caveat}");
    }
    write_out(args, |out| {
        if let Some(provenance) = &cfg.provenance {
            provenance.write_lines(out, json::started_at(&cfg, &run.result))?;
        }
        text::write_header(out, &cfg)?;
        text::write_report(out, &cfg, &run.result)?;
        slo::write_verdicts(out, &slo::verdicts(&cfg, &run.result))
    })?;
    if let Some(page) = page {
        let parts = PageParts { periods: &run.periods, origin: html::Origin::Saved(&run.source) };
        write_page(page, &cfg, &run.result, parts)?;
    }
    Ok(slo::gate(&cfg, &run.result))
}

/// The configuration the reports of saved runs with `settings` are made
/// from, with the report options of the command line.
fn configure(settings: &saved::Settings, args: &MergeArgs) -> Result<BenchConfig, Error> {
    let mut cfg = combine::config(settings).map_err(Error::Setup)?;
    cfg.latency = args.latency || args.u_latency;
    cfg.u_latency = args.u_latency;
    cfg.outputs = OutputOptions { output: None, html: None, ..args.outputs.clone() };
    cfg.slo = args.slo.clone();
    let expectation = slo::Expectation::of(&cfg);
    slo::check(&cfg.slo, &expectation).map_err(|why| Error::Usage(format!("--slo: {why}")))?;
    Ok(cfg)
}

/// The `--html` file, opened (its temporary file created) up front.
fn open_page(args: &MergeArgs) -> Result<Option<OutputFile>, Error> {
    let Some(path) = &args.outputs.html else { return Ok(None) };
    OutputFile::create(path).map(Some).map_err(|e| write_error(path, e))
}

/// Writes the page of `result` into `file` and puts it in place.
fn write_page(
    mut file: OutputFile,
    cfg: &BenchConfig,
    result: &RunResult,
    parts: PageParts,
) -> Result<(), Error> {
    let timeline: Vec<PeriodPoint> =
        parts.periods.iter().map(|p| PeriodPoint::of(cfg, p)).collect();
    let page = html::Page { cfg, result, timeline: &timeline, origin: parts.origin };
    let path = file.path().to_path_buf();
    html::write(file.writer(), &page).map_err(|e| write_error(&path, e))?;
    file.commit().map_err(|e| write_error(&path, e))
}

/// Writes the report made by `write` to stdout, or completely to `-o`.
fn write_out(
    args: &MergeArgs,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), Error> {
    let mut report = Vec::new();
    write(&mut report).map_err(|e| Error::Internal(format!("cannot format the report: {e}")))?;
    outfile::write_all_or_nothing(args.outputs.output.as_deref(), &report, "report")
}
