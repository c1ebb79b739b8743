//! One step of a search: a complete paced run at one rate (its warm-up,
//! then its measured part in periods), and the verdict on it.
//!
//! A step counts against the service only if pace kept its schedule
//! (DESIGN.md, "Capacity is searched honestly"). The verdict, in order:
//!
//! 1. Every request failed (the service went away, or refuses all):
//!    it failed, whatever the objectives say.
//! 2. pace fell behind its schedule with a connection free (the
//!    diagnostic `generator_cpu`): the step was not offered, and the
//!    search ends there; more machines can offer more.
//! 3. The connections were too few for the rate (`too_few_connections`):
//!    the search runs the step again with twice as many, while that
//!    raises the throughput the server gives (up to a cap); once more
//!    connections bring nothing, the server is what holds the rate back
//!    and the step fails.
//! 4. An objective of `--slo` failed, or the step was not stationary
//!    (latency or requests in flight kept growing through its periods,
//!    [`crate::stats::stationarity`]): it failed.
//! 5. Otherwise it held.

use std::time::Duration;

use crate::config::{BenchConfig, Mode};
use crate::description::Description;
use crate::engine::{Before, Engine, Finished, Observer, Recording};
use crate::error::Error;
use crate::progress::{self, Progress};
use crate::report::diagnose::{self, Code};
use crate::requests;
use crate::run::{self, Reached};
use crate::script::Script;
use crate::signals::Signals;
use crate::slo::{self, Objective, Verdict};
use crate::stats::stationarity::{self, Stationarity};
use crate::stats::{Interval, RunResult, Stats};
use crate::units::{format_time_us, per_second};

use super::climb::Judged;

/// A step's measured part is judged over this many periods.
pub const PERIODS: u32 = 10;
/// More connections "raise the throughput" when it grows by this share.
const MORE_THROUGHPUT: f64 = 1.05;
/// The connections were enough for a server that kept up when its
/// latency at the last rate that held, at this rate, keeps at most this
/// share of them busy.
const ENOUGH_SLOTS: f64 = 0.5;

/// One finished step.
pub struct Step {
    /// From 1, in the order run.
    pub number: usize,
    /// The rate offered (of all shards).
    pub rate: f64,
    pub run: Description,
    pub result: RunResult,
    /// The measured part's periods, in order.
    pub periods: Vec<Interval>,
    pub verdicts: Vec<Verdict>,
    pub stationarity: Stationarity,
    pub judged: Judged,
    /// Why it did not hold (empty when it did).
    pub why: String,
    /// The diagnostics that decided it, by code (`too_few_connections`).
    pub codes: Vec<Code>,
}

impl Step {
    /// Responses per second over the measured part.
    pub fn achieved(&self) -> f64 {
        per_second(self.result.total.requests, self.result.runtime.as_secs_f64())
    }

    pub fn connections(&self) -> usize {
        self.run.connections
    }

    /// What the answer line says of a step that failed: the objectives it
    /// missed with their figures (`p99 31.02ms`), or why else.
    pub fn failure(&self) -> String {
        let missed: Vec<String> = (self.verdicts.iter())
            .filter(|verdict| !verdict.ok)
            .map(|verdict| match verdict.value {
                Some(value) => format!(
                    "{} {}",
                    verdict.objective.metric.name(),
                    slo::format_value(value, verdict.objective.unit)
                ),
                None => format!("{}: nothing measured", verdict.objective.metric.name()),
            })
            .collect();
        if missed.is_empty() {
            self.why.clone()
        } else {
            missed.join(", ")
        }
    }
}

/// The configuration of the step at `rate` with `connections`: `base`
/// (the search's options) paced at that rate, with its arrivals.
pub fn config_of(base: &BenchConfig, rate: f64, connections: usize) -> BenchConfig {
    let mut cfg = base.clone();
    let arrival = match &base.mode {
        Mode::Paced(spec) => spec.arrival,
        Mode::ClosedLoop => crate::plan::Arrival::Constant,
    };
    cfg.mode = Mode::Paced(crate::plan::PlanSpec { rate, stages: Vec::new(), arrival });
    cfg.connections = connections;
    cfg
}

/// Runs the step `cfg` describes (to the origins `reached` found), its
/// measured part in [`PERIODS`] periods, and judges it by `objectives`
/// (the growth of connections is the caller's: [`more_connections`]).
pub fn run(
    cfg: &BenchConfig,
    number: usize,
    reached: &Reached,
    objectives: &[Objective],
    signals: &Signals,
    show_progress: bool,
) -> Result<Step, Error> {
    crate::limits::check(cfg)?;
    let run = Description::of(cfg);
    let period = cfg.duration.map(|d| d / PERIODS).filter(|p| *p >= Duration::from_millis(10));
    let recording = Recording { period, series: None };
    let progress = Progress::start(&run, show_progress);
    let mut watcher = StepWatcher { periods: Vec::new(), progress };
    let result = measure(cfg, reached, recording, signals, &mut watcher)?;
    drop(watcher.progress.take());
    Ok(Step::judged(number, run, result, watcher.periods, objectives))
}

impl Step {
    /// The step numbered `number` that measured `result` in `periods`
    /// (its run described by `run`), judged by `objectives`: a step just
    /// run, or the same step of several shards' ladders merged.
    pub fn judged(
        number: usize,
        run: Description,
        result: RunResult,
        periods: Vec<Interval>,
        objectives: &[Objective],
    ) -> Step {
        let stationarity =
            stationarity::judge(&periods.iter().map(|p| &p.stats).collect::<Vec<_>>());
        let verdicts = slo::verdicts(objectives, &run, &result);
        let rate = run.plan().map_or(0.0, |plan| plan.rate);
        let mut step = Step {
            number,
            rate,
            run,
            result,
            periods,
            verdicts,
            stationarity,
            judged: Judged::Held,
            why: String::new(),
            codes: Vec::new(),
        };
        judge(&mut step);
        step
    }
}

/// Sets the step's verdict from its figures (see the module's comment;
/// the growth of connections is the caller's, [`more_connections`]).
fn judge(step: &mut Step) {
    let diagnostics = diagnose::diagnose(&step.run, &step.result);
    let has = |code: Code| diagnostics.iter().any(|d| d.code == code);
    if has(Code::AllFailed) {
        step.codes.push(Code::AllFailed);
        step.judged = Judged::Failed;
        let causes = &step.result.total.error_causes;
        step.why = match causes.iter().max_by_key(|(_, count)| **count) {
            Some((cause, _)) => format!("every request failed ({cause})"),
            None => "every request failed".to_string(),
        };
        return;
    }
    if has(Code::GeneratorCpu) {
        step.codes.push(Code::GeneratorCpu);
        step.judged = Judged::NotOffered;
        let lag = crate::stats::spectrum::value_at_percentile(&step.result.total.lag, 99.0);
        step.why = format!(
            "pace fell behind its schedule with connections free (schedule lag p99 {}): \
             this machine could not offer the rate",
            format_time_us(lag as f64)
        );
        return;
    }
    if has(Code::TooFewConnections) {
        step.codes.push(Code::TooFewConnections);
    }
    let missed = step.verdicts.iter().any(|verdict| !verdict.ok);
    if missed || !step.stationarity.holds() || has(Code::TooFewConnections) {
        step.judged = Judged::Failed;
        step.why = if missed {
            format!("SLO: {}", step.failure())
        } else if !step.stationarity.holds() {
            step.stationarity.why()
        } else {
            format!("{} connections were too few for the rate", step.connections())
        };
    }
}

/// Whether a step that failed with too few connections should run again
/// with more, and with how many (None: it stays failed). Only when there
/// is room under `max_connections` and the connections, not the server,
/// were short:
///
/// - `held`, the highest step that held below this one: when its rate and
///   the server's own latency then (uncorrected, mean) needed well under
///   the connections this step had, scaled to this step's rate (Little's
///   law), the connections were enough for a server that kept up; they
///   filled because its latency grew, which more of them cannot cure;
/// - `before`, this rate's attempt with fewer connections: more of them
///   must have raised the throughput the server gave.
pub fn more_connections(
    step: &Step,
    held: Option<&Step>,
    before: Option<&Step>,
    max_connections: usize,
) -> Option<usize> {
    if !step.codes.contains(&Code::TooFewConnections) || step.connections() >= max_connections {
        return None;
    }
    let slots = (step.connections() * step.run.streams.max(1)) as f64;
    let needed = held.map(|held| {
        let latency_s = held.result.total.uncorrected.mean() / 1e6;
        step.rate * latency_s
    });
    if needed.is_some_and(|needed| needed < slots * ENOUGH_SLOTS) {
        return None;
    }
    if before.is_some_and(|before| step.achieved() < before.achieved() * MORE_THROUGHPUT) {
        return None;
    }
    Some((step.connections() * 2).min(max_connections))
}

/// The step's run itself: the workload (the script's, loaded for this
/// step, or the command line's), the engine, the measurement.
fn measure(
    cfg: &BenchConfig,
    reached: &Reached,
    recording: Recording,
    signals: &Signals,
    watcher: &mut StepWatcher,
) -> Result<RunResult, Error> {
    let places = reached.places.clone();
    let stop = signals.stop();
    match &cfg.script {
        Some(path) => {
            let mut script = Script::load(path, cfg)?;
            let workload = run::scripted_workload(cfg, &reached.endpoints, &mut script)?;
            let engine = Engine::prepare(cfg, places, &stop)?;
            finished(engine.run(workload, recording, signals, watcher)?, signals)
        }
        None => {
            let workload = requests::workload(cfg, &reached.endpoints[0]);
            let engine = Engine::prepare(cfg, places, &stop)?;
            finished(engine.run(workload, recording, signals, watcher)?, signals)
        }
    }
}

/// The result of a finished step, or why it cannot be judged.
fn finished<S>(finished: Finished<S>, signals: &Signals) -> Result<RunResult, Error> {
    if let Some(error) = finished.script_error {
        return Err(Error::Script(format!("the script failed, the search was stopped: {error}")));
    }
    if !finished.overran.is_empty() && signals.received().is_none() {
        return Err(Error::Script("a thread did not finish when the step was over".into()));
    }
    let mut result = finished.result;
    result.interrupted = signals.received();
    Ok(result)
}

/// What a step keeps while it runs: its periods, for the stationarity,
/// and the live progress.
struct StepWatcher {
    periods: Vec<Interval>,
    progress: Option<Progress>,
}

impl Observer for StepWatcher {
    fn interval(&mut self, interval: &Interval) {
        self.periods.push(interval.clone());
    }

    fn progress_every(&self) -> Option<Duration> {
        self.progress.is_some().then_some(progress::EVERY)
    }

    fn progress(&mut self, latest: &Interval, total: &Stats) {
        if let Some(progress) = &mut self.progress {
            progress.show(latest, total);
        }
    }

    fn before_measuring(&mut self, now: Before) {
        if let Some(progress) = &mut self.progress {
            progress.before(now);
        }
    }

    fn stopping(&mut self, _timeout: Duration) {
        if let Some(progress) = &mut self.progress {
            progress.clear();
        }
    }
}
