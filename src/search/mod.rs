//! `pace search`: the highest rate a service holds within its objectives
//! (`--slo`), found by steps of paced load, each a complete run with its
//! warm-up ([`step`]), the rates chosen by [`climb`]; or a fixed ladder of
//! rates (`--ladder`), which shards with a common `--start-at` climb
//! together, to be merged step by step.
//!
//! The steps run one after the other in this process, to the origins
//! resolved once before the first; each opens its own connections (and
//! its own Lua states), so no step inherits another's queue. The report
//! is a table of the steps, a row as each ends, and the answer in one
//! line ([`answer`]); with `-e`, JSON Lines: each step a complete report
//! (`"report": "step"`, which `pace report`, `compare` and `merge` read
//! with `--step N`), then the search's own line; with `--html`, a page
//! with the latency against the throughput.

mod answer;
pub mod climb;
mod html;
mod json;
pub mod merged;
pub mod step;
mod text;

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, SystemTime};

use crate::config::Mode;
use crate::error::Error;
use crate::outfile::{write_error, OutputFile};
use crate::plan::Arrival;
use crate::provenance::masked_url;
use crate::run::{self, Bench};
use crate::signals::Signals;
use crate::slo::Objective;
use answer::{Answer, Stopped};
use climb::{Bounds, Climb, Judged};
use step::Step;

/// What `pace search` was asked.
#[derive(Debug)]
pub struct SearchArgs {
    /// Every step's options: the command line's run, paced (the rate is
    /// each step's), `-d` each step's measured part, `--warmup` its
    /// warm-up; `-e`, `-o`, `--html`, `--slo` as for the search.
    pub bench: Bench,
    pub climb: Climb,
    /// `--min-rate`: a capacity below it fails the search (exit 4).
    pub min_rate: Option<f64>,
    /// `--max-connections`: how far the connections may grow.
    pub max_connections: usize,
}

/// What a search's reports say of it besides its steps: from its command
/// line, or from the ladders `pace merge` merged.
pub struct Setup {
    /// The URL, its credentials masked.
    pub url: String,
    pub objectives: Vec<Objective>,
    pub climb: Climb,
    pub min_rate: Option<f64>,
    pub max_connections: usize,
    /// Each step's measured part and warm-up.
    pub step: Duration,
    pub warmup: Duration,
    pub threads: usize,
    /// The connections of the first step.
    pub connections: usize,
    pub poisson: bool,
}

impl Setup {
    pub fn of(args: &SearchArgs) -> Setup {
        let cfg = &args.bench.config;
        Setup {
            url: masked_url(&cfg.target.url),
            objectives: args.bench.slo.clone(),
            climb: args.climb.clone(),
            min_rate: args.min_rate,
            max_connections: args.max_connections,
            step: cfg.duration.unwrap_or_default(),
            warmup: cfg.warmup,
            threads: cfg.threads,
            connections: cfg.connections,
            poisson: matches!(&cfg.mode, Mode::Paced(spec) if spec.arrival == Arrival::Poisson),
        }
    }
}

/// Between two steps of a ladder with `--start-at`, besides the warm-up
/// and the measured part: time for the last responses (up to
/// `--timeout`) and the next step's connections.
const LADDER_GAP: Duration = Duration::from_secs(2);

impl SearchArgs {
    /// When step `index` (from 0) of a ladder starts, with `--start-at`:
    /// the steps of every shard start together.
    fn start_of(&self, index: usize) -> Option<SystemTime> {
        let cfg = &self.bench.config;
        let each = cfg.warmup + cfg.duration.unwrap_or_default() + cfg.timeout + LADDER_GAP;
        cfg.start_at.map(|start| start + each * index as u32)
    }
}

/// Runs the search; returns the exit code.
pub fn run(args: &SearchArgs) -> Result<i32, Error> {
    let cfg = &args.bench.config;
    // Files that cannot be written stop pace before it connects.
    let mut file = match &args.bench.outputs.output {
        Some(path) => Some(OutputFile::create(path).map_err(|e| write_error(path, e))?),
        None => None,
    };
    let mut page = match &args.bench.outputs.html {
        Some(path) => Some(OutputFile::create(path).map_err(|e| write_error(path, e))?),
        None => None,
    };
    let signals = Signals::install()?;
    let stop = signals.stop();
    let reached = match run::reach(cfg, &stop) {
        Ok(reached) => reached,
        Err(error) => return stopped(&signals).unwrap_or(Err(error)),
    };
    let base = reached.reflected.as_ref().unwrap_or(cfg);
    let json = args.bench.outputs.json;
    let mut out: Box<dyn Write> = match &mut file {
        Some(file) => Box::new(file.writer()),
        None => Box::new(io::stdout()),
    };
    let written = |result: io::Result<()>| result.map_err(|e| report_error(&args.bench, e));
    let setup = Setup::of(args);
    if !json {
        written(text::write_header(&mut out, &setup))?;
    }
    let mut steps: Vec<Step> = Vec::new();
    let mut course: Vec<(f64, Judged)> = Vec::new();
    let mut connections = base.connections;
    // A step that could not be run ends the search; what was measured
    // before it is still reported, and written.
    let mut failure = None;
    while let Some(rate) = args.climb.next(&course) {
        let mut step_cfg = step::config_of(base, rate, connections);
        step_cfg.start_at = args.start_of(steps.len());
        say_step(args, steps.len() + 1, rate, connections, Bounds::of(&course));
        let run = step::run(
            &step_cfg,
            steps.len() + 1,
            &reached,
            &args.bench.slo,
            &signals,
            args.bench.progress,
        );
        let mut step = match run {
            Ok(step) => step,
            Err(error) => {
                failure = Some(error);
                break;
            }
        };
        // The attempt at this rate just before, with fewer connections.
        let before =
            steps.last().filter(|last| last.rate == rate && last.judged == Judged::Retried);
        let interrupted = step.result.interrupted.is_some();
        if !interrupted && matches!(args.climb, Climb::Search { .. }) {
            let held = (steps.iter())
                .filter(|s| s.judged == Judged::Held && s.rate < rate)
                .max_by(|a, b| a.rate.total_cmp(&b.rate));
            if let Some(more) = step::more_connections(&step, held, before, args.max_connections) {
                step.judged = Judged::Retried;
                step.why = format!(
                    "{} connections were too few for the rate: again with {more}",
                    step.connections()
                );
                connections = more;
            }
        }
        written(match json {
            true => json::write_step(&mut out, &step, &args.bench.report),
            false => text::write_step(&mut out, &step),
        })?;
        course.push((rate, step.judged));
        steps.push(step);
        if interrupted {
            break;
        }
    }
    let stopped = match (&failure, signals.received()) {
        (Some(error), _) => Some(Stopped::Failed(error.to_string())),
        (None, Some(signal)) => Some(Stopped::Signal(signal)),
        (None, None) => None,
    };
    let answer = Answer::of(&setup, &steps, stopped.as_ref());
    written(if json {
        json::write_search(&mut out, &setup, &steps, &answer)
    } else {
        text::write_answer(&mut out, &answer)
    })?;
    written(out.flush())?;
    drop(out);
    if let Some(file) = file {
        let path = file.path().to_path_buf();
        file.commit().map_err(|e| write_error(&path, e))?;
    }
    if let Some(mut page) = page.take() {
        let path = page.path().to_path_buf();
        html::write(page.writer(), &setup, &steps, &answer).map_err(|e| write_error(&path, e))?;
        page.commit().map_err(|e| write_error(&path, e))?;
    }
    if let Some(error) = failure {
        return Err(error);
    }
    if json && answer.code != 0 {
        eprintln!("pace search: {}", answer.line);
    }
    Ok(answer.code)
}

/// Says on stderr which step starts, and the search's bounds, when the
/// live progress is on.
fn say_step(args: &SearchArgs, number: usize, rate: f64, connections: usize, bounds: Bounds) {
    if !args.bench.progress || !io::stderr().is_terminal() {
        return;
    }
    let bound = |rate: Option<f64>| {
        rate.map_or("-".to_string(), |r| format!("{}/s", crate::units::format_rate(r)))
    };
    eprintln!(
        "pace search: step {number}: {}/s on {connections} connections (held {}, failed {})",
        crate::units::format_rate(rate),
        bound(bounds.held),
        bound(bounds.failed)
    );
}

/// When a signal arrived before the first step: says so, and gives its
/// exit code.
fn stopped(signals: &Signals) -> Option<Result<i32, Error>> {
    let signal = signals.received()?;
    eprintln!("pace: stopped by {} before the search", signal.name());
    Some(Ok(signal.exit_code()))
}

fn report_error(bench: &Bench, e: io::Error) -> Error {
    match &bench.outputs.output {
        Some(path) => write_error(path, e),
        None => Error::Setup(format!("cannot write the report: {}", crate::error::io_reason(&e))),
    }
}
