//! The search's answer in one line, and its exit code: the highest rate
//! that held below the lowest that failed ("holds 23,400 requests/s
//! within p99<10ms, errors<0.1% (24,600/s: p99 31.02ms)"), or why there
//! is none, or why it is only a lower bound.

use super::climb::{Bounds, Climb, Judged};
use super::step::Step;
use super::Setup;
use crate::error::SLO_FAILED;
use crate::signals::Interruption;
use crate::units::{format_rate, per_second};

/// What ended the climb.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// A step failed above one that held: the service's capacity.
    Service,
    /// Even the first step failed.
    FirstStep,
    /// pace could not offer a step's rate from this machine.
    Generator,
    /// Every step held up to the highest rate asked for (`--to`, or the
    /// ladder's top).
    Ceiling,
    /// A signal stopped the search, or a step could not be run (its
    /// script failed).
    Interrupted,
    /// Nothing was judged (a ladder without `--slo` still has steps).
    None,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::Service => "service",
            Limit::FirstStep => "first_step",
            Limit::Generator => "generator",
            Limit::Ceiling => "ceiling",
            Limit::Interrupted => "interrupted",
            Limit::None => "none",
        }
    }
}

/// What stopped the search before its climb was over.
pub enum Stopped {
    Signal(Interruption),
    /// A step could not be run, in words (its error).
    Failed(String),
}

/// The answer.
pub struct Answer {
    pub line: String,
    /// The highest rate that held below any that failed.
    pub capacity: Option<f64>,
    /// The lowest rate that failed.
    pub failed_at: Option<f64>,
    pub limit: Limit,
    /// 0 when a rate was found; 4 when even the first step failed or the
    /// rate is below `--min-rate`; a signal's exit code (a step that
    /// could not be run: its error's, given by `search::run`).
    pub code: i32,
}

impl Answer {
    pub fn of(args: &Setup, steps: &[Step], stopped: Option<&Stopped>) -> Answer {
        let course: Vec<(f64, Judged)> = steps.iter().map(|s| (s.rate, s.judged)).collect();
        let Bounds { held, failed } = Bounds::of(&course);
        let within = objectives(args);
        let first_failed = failed
            .and_then(|rate| steps.iter().find(|s| s.rate == rate && s.judged == Judged::Failed));
        let not_offered = steps.iter().find(|s| s.judged == Judged::NotOffered);
        let limit = match (stopped, not_offered, held, failed) {
            (Some(_), ..) => Limit::Interrupted,
            (None, Some(_), ..) => Limit::Generator,
            (None, None, None, Some(_)) => Limit::FirstStep,
            (None, None, Some(_), Some(_)) => Limit::Service,
            (None, None, Some(_), None) => Limit::Ceiling,
            (None, None, None, None) => Limit::None,
        };
        let rate = |rate: f64| format!("{} requests/s", format_rate(rate));
        let held_line = |at_least: &str| {
            held.map(|held| format!("holds {at_least}{} within {within}", rate(held)))
        };
        let line = match limit {
            Limit::Service => {
                let step = first_failed.expect("a failed rate has its step");
                format!(
                    "{} ({}/s: {})",
                    held_line("").unwrap_or_default(),
                    format_rate(step.rate),
                    step.failure()
                )
            }
            Limit::FirstStep => {
                let step = first_failed.expect("a failed rate has its step");
                let hint = match &args.climb {
                    Climb::Search { .. } => "; a lower --from may",
                    Climb::Ladder(_) => "",
                };
                format!(
                    "does not hold {} within {within} ({}/s: {}){hint}",
                    rate(step.rate),
                    format_rate(step.rate),
                    step.failure()
                )
            }
            Limit::Generator => {
                let step = not_offered.expect("matched");
                let sent =
                    per_second(step.result.total.lag.len(), step.result.runtime.as_secs_f64());
                let lower = held_line("at least ").map(|l| format!("{l}; ")).unwrap_or_default();
                format!(
                    "{lower}this machine cannot offer more than {} (at {}/s {}): \
                     shards on more machines can (--shard, docs/scale-out.md)",
                    rate(sent),
                    format_rate(step.rate),
                    "pace fell behind its schedule with connections free"
                )
            }
            Limit::Ceiling => {
                let top = match &args.climb {
                    Climb::Search { .. } => "the highest rate asked for, --to",
                    Climb::Ladder(_) => "the ladder's top",
                };
                format!("{} ({top})", held_line("at least ").unwrap_or_default())
            }
            Limit::Interrupted => {
                let why = match stopped.expect("matched") {
                    Stopped::Signal(signal) => {
                        format!("the search was stopped by {}", signal.name())
                    }
                    Stopped::Failed(why) => format!("the search stopped: {why}"),
                };
                match held_line("at least ") {
                    Some(line) => format!("{line} ({why})"),
                    None => format!("no rate found: {why}"),
                }
            }
            Limit::None => "no step was judged".to_string(),
        };
        let below_min = match (held, args.min_rate) {
            (Some(held), Some(min)) if held < min => true,
            (None, Some(_)) => matches!(limit, Limit::Service | Limit::Ceiling),
            _ => false,
        };
        let line = match args.min_rate.filter(|_| below_min) {
            Some(min) => format!("{line}; below --min-rate {}/s", format_rate(min)),
            None => line,
        };
        let code = match (stopped, limit) {
            (Some(Stopped::Signal(signal)), _) => signal.exit_code(),
            // The step's error gives the exit code (see search::run).
            (Some(Stopped::Failed(_)), _) => 0,
            (None, Limit::FirstStep) => SLO_FAILED,
            _ if below_min => SLO_FAILED,
            _ => 0,
        };
        Answer { line, capacity: held, failed_at: failed, limit, code }
    }
}

/// `p99<10ms, errors<0.1%`, or what holding means without `--slo`.
pub fn objectives(args: &Setup) -> String {
    if args.objectives.is_empty() {
        return "a steady state".to_string();
    }
    args.objectives.iter().map(|o| o.text()).collect::<Vec<_>>().join(", ")
}
