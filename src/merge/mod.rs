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

pub mod combine;
mod hlog;
mod runs;
pub mod saved;

use std::io::{self, Write};
use std::path::PathBuf;

use crate::description::Description;
use crate::error::Error;
use crate::outfile::{self, write_error, OutputFile};
use crate::output::{OutputOptions, Reporting};
use crate::report::html::{self, timeline::PeriodPoint};
use crate::report::{json, text, ReportOptions};
use crate::slo::{self, Objective, Verdict};
use crate::stats::{Interval, RunResult};

/// What `pace merge` was asked.
#[derive(Debug, Default)]
pub struct MergeArgs {
    pub files: Vec<PathBuf>,
    /// `-L`, `-U`, `--percentiles`.
    pub report: ReportOptions,
    /// `-e`, `-o`, `--html`.
    pub outputs: OutputOptions,
    pub slo: Vec<Objective>,
    /// `--step N`: of searches' files (`pace search -e`), their step N.
    pub step: Option<usize>,
}

/// What a page is made of besides the description and the result.
struct PageParts<'a> {
    periods: &'a [Interval],
    verdicts: &'a [Verdict],
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
        .map(|path| saved::read(path, args.step))
        .collect::<Result<Vec<_>, String>>()
        .map_err(Error::Setup)?;
    let merged = combine::combine(&saved).map_err(Error::Setup)?;
    let reporting = configure(merged.description.clone(), args)?;
    let Reporting { run, report: options, .. } = &reporting;
    let verdicts = slo::verdicts(&args.slo, run, &merged.result);
    // A page that cannot be written stops the merge before any output.
    let page = open_page(args)?;
    for note in &merged.notes {
        eprintln!("pace merge: {note}");
    }
    let lines = runs::lines(&saved);
    write_out(args, |out| {
        if args.outputs.json {
            for period in &merged.periods {
                json::write_line(out, &json::period_report(run, options, period)?)?;
            }
            let mut report = json::final_report(run, options, &merged.result, &verdicts)?;
            if let Some(whole) = &mut report.run {
                whole.merged_from = Some(lines.clone());
                whole.merge_notes = Some(merged.notes.clone());
            }
            return json::write_line(out, &report);
        }
        runs::write_header(out, run, merged.kind, saved.len())?;
        text::write_report(out, run, options, &merged.result)?;
        runs::write_lines(out, merged.kind, &lines, run.plan().is_some())?;
        slo::write_verdicts(out, &verdicts)
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
        let parts = PageParts { periods: &merged.periods, verdicts: &verdicts, origin };
        write_page(page, &reporting, &merged.result, parts)?;
    }
    Ok(slo::gate(&verdicts, args.outputs.json))
}

/// Runs `pace report`: the one saved run of `args.files`, reported again
/// as text on stdout and, with `--html`, as a page; returns the exit code.
pub fn report(args: &MergeArgs) -> Result<i32, Error> {
    let [path] = args.files.as_slice() else {
        return Err(Error::Usage("pace report takes one file (pace merge adds several)".into()));
    };
    let saved = saved::read(path, args.step).map_err(Error::Setup)?;
    let reporting = configure(saved.description.clone(), args)?;
    let Reporting { run, report: options, .. } = &reporting;
    let verdicts = slo::verdicts(&args.slo, run, &saved.result);
    let page = open_page(args)?;
    let notes = saved.merge.iter().flat_map(|merge| &merge.notes);
    for caveat in saved.caveats.iter().chain(notes) {
        eprintln!("pace report: {caveat}");
    }
    write_out(args, |out| {
        if let Some(provenance) = &run.provenance {
            provenance.write_lines(out, json::started_at(run, &saved.result))?;
        }
        // A saved merge reports as `pace merge` did: its header, and a
        // line per input after the report.
        let merged = saved.merge.as_ref().map(|merge| (runs::kind_of(&merge.inputs), merge));
        match merged {
            Some((kind, merge)) => runs::write_header(out, run, kind, merge.inputs.len())?,
            None => text::write_header(out, run)?,
        }
        text::write_report(out, run, options, &saved.result)?;
        if let Some((kind, merge)) = merged {
            runs::write_lines(out, kind, &merge.inputs, run.plan().is_some())?;
        }
        slo::write_verdicts(out, &verdicts)
    })?;
    if let Some(page) = page {
        let origin = html::Origin::Saved(&saved.source);
        let parts = PageParts { periods: &saved.periods, verdicts: &verdicts, origin };
        write_page(page, &reporting, &saved.result, parts)?;
    }
    Ok(slo::gate(&verdicts, args.outputs.json))
}

/// What the reports of the saved run(s) `run` describes are made from,
/// with the report options of the command line; the objectives must be
/// ones the run can be judged by.
fn configure(run: Description, args: &MergeArgs) -> Result<Reporting, Error> {
    let expectation = slo::Expectation::of(&run);
    slo::check(&args.slo, &expectation).map_err(|why| Error::Usage(format!("--slo: {why}")))?;
    let mut report = args.report.clone();
    report.latency |= report.u_latency;
    Ok(Reporting { run, report, outputs: args.outputs.clone(), slo: args.slo.clone() })
}

/// The `--html` file, opened (its temporary file created) up front.
pub fn open_page(args: &MergeArgs) -> Result<Option<OutputFile>, Error> {
    let Some(path) = &args.outputs.html else { return Ok(None) };
    OutputFile::create(path).map(Some).map_err(|e| write_error(path, e))
}

/// Writes the page of `result` into `file` and puts it in place.
fn write_page(
    mut file: OutputFile,
    reporting: &Reporting,
    result: &RunResult,
    parts: PageParts,
) -> Result<(), Error> {
    let run = &reporting.run;
    let timeline: Vec<PeriodPoint> =
        parts.periods.iter().map(|p| PeriodPoint::of(run, p)).collect();
    let page = html::Page {
        run,
        report: &reporting.report,
        result,
        verdicts: parts.verdicts,
        timeline: &timeline,
        origin: parts.origin,
    };
    let path = file.path().to_path_buf();
    html::write(file.writer(), &page).map_err(|e| write_error(&path, e))?;
    file.commit().map_err(|e| write_error(&path, e))
}

/// Writes the report made by `write` to stdout, or completely to `-o`.
pub fn write_out(
    args: &MergeArgs,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), Error> {
    let mut report = Vec::new();
    write(&mut report).map_err(|e| Error::Internal(format!("cannot format the report: {e}")))?;
    outfile::write_all_or_nothing(args.outputs.output.as_deref(), &report, "report")
}
