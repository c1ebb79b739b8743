//! `pace merge FILE...`: the results of several runs (`-e`, `--hlog`),
//! typically the shards of one plan sent from several machines, reported
//! as one run, exactly: see [`combine`].
//!
//! The merged run is reported by the same code as a live one (text with
//! `-L`/`-U`, JSON with `-e`, `--slo` verdicts and exit code 4), followed
//! by a line per input. Everything is written at the end, to stdout or
//! completely to `-o FILE`.

mod combine;
mod hlog;
mod runs;
pub mod saved;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::config::{Mode, OutputOptions};
use crate::error::Error;
use crate::outfile::OutputFile;
use crate::report::{json, text};
use crate::slo::{self, Objective};

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
    let mut cfg = combine::config(&merged.settings).map_err(Error::Setup)?;
    cfg.latency = args.latency || args.u_latency;
    cfg.u_latency = args.u_latency;
    cfg.outputs = OutputOptions { output: None, ..args.outputs.clone() };
    cfg.slo = args.slo.clone();
    let expectation = slo::Expectation::of(&cfg);
    slo::check(&cfg.slo, &expectation).map_err(|why| Error::Usage(format!("--slo: {why}")))?;
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
    Ok(slo::gate(&cfg, &merged.result))
}

/// Writes the report made by `write` to stdout, or completely to `-o`.
fn write_out(
    args: &MergeArgs,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), Error> {
    let mut report = Vec::new();
    write(&mut report).map_err(|e| Error::Internal(format!("cannot format the report: {e}")))?;
    match &args.outputs.output {
        Some(path) => write_file(path, &report),
        None => {
            let mut stdout = io::stdout().lock();
            match stdout.write_all(&report).and_then(|()| stdout.flush()) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                    Err(Error::Setup(format!("cannot write the report: {e}")))
                }
                _ => Ok(()),
            }
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let failed = |e: io::Error| Error::Setup(format!("cannot write {}: {e}", path.display()));
    let mut file = OutputFile::create(path).map_err(failed)?;
    file.writer().write_all(bytes).map_err(failed)?;
    file.commit().map_err(failed)
}
