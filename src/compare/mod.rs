//! `pace compare BASE NEW`: two saved runs (`-e`/`-o` results, or merged
//! ones) side by side — the rate, the errors, and the latency at each
//! percentile — with the difference and a plain verdict per line: faster,
//! slower, or within noise ([`statistics`] decides noise from the
//! histograms; [`verdicts`] applies it), or too few samples for a
//! percentile a run has too few samples beyond. `--max-regression` turns it into
//! a CI gate ([`gate`], exit code 4 as `--slo`). The comparison is written
//! as text ([`text`]), JSON with `-e` ([`json`]), and with `--html` as a
//! page with both percentile spectra and both timelines ([`html`]). Runs
//! made differently are compared anyway, with a warning that says what
//! differs ([`settings`]).

mod gate;
mod html;
mod json;
mod settings;
mod statistics;
mod text;
mod verdicts;

use std::path::PathBuf;

pub use gate::{parse as parse_limits, Limit};
pub use statistics::Noise;

use crate::error::{Error, SLO_FAILED};
use crate::merge::saved::{self, SavedRun};
use crate::outfile::{self, write_error, OutputFile};

/// What `pace compare` was asked.
#[derive(Debug, Default)]
pub struct CompareArgs {
    pub base: PathBuf,
    pub new: PathBuf,
    /// `-e`: the comparison as JSON.
    pub json: bool,
    /// `-o`: written there instead of stdout.
    pub output: Option<PathBuf>,
    /// `--html`.
    pub html: Option<PathBuf>,
    /// `--percentiles` (None: wrk2's that both runs have enough samples
    /// for).
    pub percentiles: Option<Vec<f64>>,
    /// `--max-regression`.
    pub limits: Vec<Limit>,
    /// `--noise`.
    pub noise: Noise,
    /// `--step N`: of searches' files (`pace search -e`), their step N.
    pub step: Option<usize>,
}

/// The two runs and what is to be said about comparing them.
pub struct Runs<'a> {
    pub base: &'a SavedRun,
    pub new: &'a SavedRun,
    /// What makes them not comparable, what their reports cannot make
    /// exact, and what their reports warn of.
    pub warnings: Vec<String>,
}

/// Runs `pace compare`; returns the exit code.
pub fn run(args: &CompareArgs) -> Result<i32, Error> {
    let base = saved::read(&args.base, args.step).map_err(Error::Setup)?;
    let new = saved::read(&args.new, args.step).map_err(Error::Setup)?;
    let paced = base.description.plan().is_some() && new.description.plan().is_some();
    gate::check(&args.limits, paced)
        .map_err(|why| Error::Usage(format!("--max-regression: {why}")))?;
    let mut warnings = Vec::new();
    let differ = settings::differences(&base.description, &new.description);
    if !differ.is_empty() {
        warnings.push(format!(
            "the runs are not comparable, they differ in: {}; compared anyway",
            differ.join(", ")
        ));
    }
    warnings.extend(base.caveats.iter().chain(&new.caveats).cloned());
    for run in [&base, &new] {
        warnings.extend(diagnostics(run));
    }
    let runs = Runs { base: &base, new: &new, warnings };
    let comparison = verdicts::compare(&base, &new, args.percentiles.as_deref(), args.noise);
    let judged = gate::judge(&args.limits, &base.result, &new.result);
    // A page that cannot be written stops the comparison before any output.
    let page = match &args.html {
        Some(path) => Some(OutputFile::create(path).map_err(|e| write_error(path, e))?),
        None => None,
    };
    // The text on stdout says them; elsewhere they would go unseen.
    if args.json || args.output.is_some() {
        for warning in &runs.warnings {
            eprintln!("pace compare: warning: {warning}");
        }
    }
    let mut report = Vec::new();
    let written = if args.json {
        json::write(&mut report, &runs, &comparison, &judged)
    } else {
        text::write(&mut report, &runs, &comparison, &judged)
    };
    written.map_err(|e| Error::Internal(format!("cannot format the comparison: {e}")))?;
    outfile::write_all_or_nothing(args.output.as_deref(), &report, "comparison")?;
    if let Some(mut file) = page {
        let path = file.path().to_path_buf();
        html::write(file.writer(), &runs, &comparison, &judged)
            .map_err(|e| write_error(&path, e))?;
        file.commit().map_err(|e| write_error(&path, e))?;
    }
    match gate::failures(&judged) {
        None => Ok(0),
        Some(line) => {
            if args.json {
                eprintln!("pace: {line}");
            }
            Ok(SLO_FAILED)
        }
    }
}

/// What the report of `run` warns of (a generator short of CPU, a server
/// that fell behind its plan...), which explains a difference better than
/// the server does.
fn diagnostics(run: &SavedRun) -> Vec<String> {
    crate::report::diagnose::diagnose(&run.description, &run.result)
        .into_iter()
        .map(|d| format!("{}: {} [{}]", run.source, d.message, d.code.name()))
        .collect()
}
