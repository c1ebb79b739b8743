//! The options that describe the arrival plan: `-R`, `--stages`,
//! `--arrival`, `--seed`, and how they fit with `-d`.

use std::time::Duration;

use super::options::{bad_value, time};
use crate::config::Mode;
use crate::error::Error;
use crate::plan::{random, Arrival, PlanSpec, Stage};
use crate::units::parse_metric;

/// The plan options as typed.
#[derive(Debug, Default)]
pub(super) struct PlanArgs {
    pub rate: Option<f64>,
    pub stages: Option<Vec<Stage>>,
    pub arrival: Option<Arrival>,
    pub seed: Option<u64>,
}

/// What the plan options mean: the mode and the measured duration (the
/// stages' length when there are stages), given `-d`, whether it was
/// typed, and `--warmup`.
pub(super) fn mode(
    args: &PlanArgs,
    duration: Duration,
    duration_typed: bool,
    warmup: Duration,
) -> Result<(Mode, Duration), Error> {
    let usage = |message: String| Err(Error::Usage(message));
    let rate = args.rate;
    if rate.is_some_and(|rate| rate < 0.0 || (rate == 0.0 && args.stages.is_none())) {
        return usage("-R/--rate must be greater than 0".into());
    }
    let arrival = args.arrival.unwrap_or(Arrival::Constant);
    let Some(stages) = &args.stages else {
        return match rate {
            Some(rate) => {
                Ok((Mode::Paced(PlanSpec { rate, stages: Vec::new(), arrival }), duration))
            }
            None if arrival == Arrival::Poisson => {
                usage("--arrival poisson needs a rate: give -R or --stages".into())
            }
            None => Ok((Mode::ClosedLoop, duration)),
        };
    };
    let length: Duration = stages.iter().map(|stage| stage.duration).sum();
    if duration_typed && duration != length {
        return usage(format!(
            "-d {duration:?} disagrees with --stages, which last {length:?}: give one of them"
        ));
    }
    if rate.unwrap_or(0.0) == 0.0 && stages.iter().all(|stage| stage.rate == 0.0) {
        return usage("--stages: every rate is 0, so the plan would send nothing".into());
    }
    let rate = rate.unwrap_or(0.0);
    if rate == 0.0 && !warmup.is_zero() {
        return usage(warmup_from_nothing(warmup, stages));
    }
    Ok((Mode::Paced(PlanSpec { rate, stages: stages.clone(), arrival }), length))
}

/// Why `--warmup` is refused with stages that start from 0/s: the warm-up
/// holds the rate the stages start from (`-R`) before them, as it holds
/// `-R` before a constant plan, so it would send nothing. Shifting the
/// stages into the warm-up instead would leave it unmeasured a part of the
/// plan that was typed to be measured, and give `-d` two meanings.
fn warmup_from_nothing(warmup: Duration, stages: &[Stage]) -> String {
    let first = stages.first().map_or(0.0, |stage| stage.rate);
    format!(
        "--warmup {warmup:?} would send nothing: the warm-up holds the rate the stages start \
         from, and without -R they start from 0/s. Give -R RATE to warm up at RATE (the first \
         stage then moves from it, e.g. -R {first}), or make the warm-up a first stage of \
         --stages (measured)"
    )
}

/// How long the run lasts once `-n` is known: `-n N` in a plan ends it
/// when request N (counted from 0 after the warm-up) would be due, one
/// interval after the last of the N: the fencepost rule of `-d`, whose
/// window of N/R holds the N requests due at 0, 1/R, ... (N-1)/R. So N
/// requests at R last N/R and their rate is R. At the latest the run ends
/// at the end of `-d` or the stages. In the closed loop `-n` leaves the
/// run open-ended (None) unless `-d` was typed, whichever comes first then.
pub(super) fn bounded(
    mode: &Mode,
    duration: Duration,
    duration_typed: bool,
    requests: Option<u64>,
    warmup: Duration,
    seed: u64,
) -> Option<Duration> {
    let Some(requests) = requests else { return Some(duration) };
    let Mode::Paced(spec) = mode else { return duration_typed.then_some(duration) };
    let plan = spec.plan(warmup, seed);
    let warmup_ns = warmup.as_nanos() as u64;
    // u64::MAX past the end of the plan: -d or the stages end it then.
    let after_last = plan.offset_ns(plan.count_before(warmup_ns) + requests);
    let needed = Duration::from_nanos(after_last.saturating_sub(warmup_ns));
    if duration_typed || !spec.stages.is_empty() {
        Some(duration.min(needed))
    } else {
        Some(needed)
    }
}

/// The run's seed: `--seed`, or a fresh one (printed by the header when
/// something random uses it, so the run can be repeated).
pub(super) fn seed(args: &PlanArgs) -> u64 {
    args.seed.unwrap_or_else(random::fresh_seed)
}

/// `--stages 30s:1000,1m:1000,10s:0`: durations and target rates.
pub(super) fn stages(option: &str, text: &str) -> Result<Vec<Stage>, Error> {
    let mut stages = Vec::new();
    for part in text.split(',').map(str::trim) {
        let bad =
            |why: String| bad_value(option, format!("'{part}': {why} (e.g. 30s:1000,1m:1000)"));
        let (duration, rate) =
            part.split_once(':').ok_or_else(|| bad("expected DURATION:RATE".into()))?;
        let duration = time(option, duration.trim())?;
        if duration.is_zero() {
            return Err(bad("a stage lasts more than 0".into()));
        }
        let rate = parse_metric(rate.trim()).map_err(|e| bad(e.to_string()))?;
        if !rate.is_finite() {
            return Err(bad("the rate is too large".into()));
        }
        stages.push(Stage { duration, rate });
    }
    Ok(stages)
}

/// `--arrival constant|poisson`.
pub(super) fn arrival(option: &str, text: &str) -> Result<Arrival, Error> {
    match text.to_ascii_lowercase().as_str() {
        "constant" | "even" => Ok(Arrival::Constant),
        "poisson" => Ok(Arrival::Poisson),
        _ => Err(bad_value(option, format!("'{text}' is not 'constant' or 'poisson'"))),
    }
}

/// `--seed N`: a whole number.
pub(super) fn seed_value(option: &str, text: &str) -> Result<u64, Error> {
    text.trim().parse().map_err(|_| bad_value(option, format!("'{text}' is not a whole number")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn error(result: Result<(Mode, Duration), Error>) -> String {
        match result {
            Err(Error::Usage(message)) => message,
            _ => panic!("accepted"),
        }
    }

    #[test]
    fn stages_parse_with_units() {
        let stages = stages("--stages", "30s:1k, 1m:1000,500ms:0.5").unwrap();
        assert_eq!(
            stages,
            vec![
                Stage { duration: 30 * SECOND, rate: 1000.0 },
                Stage { duration: 60 * SECOND, rate: 1000.0 },
                Stage { duration: SECOND / 2, rate: 0.5 },
            ]
        );
        for (bad, why) in [
            ("30s", "expected DURATION:RATE"),
            ("0s:10", "a stage lasts more than 0"),
            ("10s:x", "'x' is not a number"),
            ("10s:-5", "is not a number"),
        ] {
            let Err(Error::Usage(message)) = self::stages("--stages", bad) else { panic!("{bad}") };
            assert!(message.contains(why), "{bad}: {message}");
        }
    }

    #[test]
    fn the_plan_options_fit_together() {
        let args = PlanArgs { rate: Some(100.0), ..PlanArgs::default() };
        let (mode, duration) = mode(&args, 10 * SECOND, false, Duration::ZERO).unwrap();
        assert_eq!(mode, Mode::Paced(PlanSpec::constant(100.0)));
        assert_eq!(duration, 10 * SECOND);
        let closed = mode_of(PlanArgs::default());
        assert_eq!(closed, Mode::ClosedLoop);
        // Stages set the duration; -d may agree.
        let staged = PlanArgs {
            stages: Some(vec![Stage { duration: 2 * SECOND, rate: 50.0 }]),
            arrival: Some(Arrival::Poisson),
            ..PlanArgs::default()
        };
        let (mode, duration) = super::mode(&staged, 10 * SECOND, false, Duration::ZERO).unwrap();
        assert_eq!(duration, 2 * SECOND);
        assert!(
            matches!(mode, Mode::Paced(ref spec) if spec.rate == 0.0 && spec.arrival == Arrival::Poisson)
        );
        assert!(super::mode(&staged, 2 * SECOND, true, Duration::ZERO).is_ok());
        let message = error(super::mode(&staged, 3 * SECOND, true, Duration::ZERO));
        assert!(message.contains("disagrees with --stages"), "{message}");
    }

    fn mode_of(args: PlanArgs) -> Mode {
        mode(&args, SECOND, false, Duration::ZERO).unwrap().0
    }

    /// Issue 34, item 1: a warm-up before stages that start from nothing
    /// sent nothing ("Warm-up: 1s before the run: 0 requests").
    #[test]
    fn a_warm_up_before_stages_from_nothing_is_refused_in_words() {
        let ramp = vec![Stage { duration: 2 * SECOND, rate: 100.0 }];
        let from_nothing = PlanArgs { stages: Some(ramp.clone()), ..PlanArgs::default() };
        let message = error(mode(&from_nothing, SECOND, false, SECOND));
        assert!(
            message.starts_with(
                "--warmup 1s would send nothing: the warm-up holds the rate the stages start \
                 from, and without -R they start from 0/s. Give -R RATE"
            ),
            "{message}"
        );
        assert!(message.contains("Give -R RATE to warm up at RATE"), "{message}");
        assert!(message.contains("e.g. -R 100"), "{message}");
        let explicit_zero = PlanArgs { rate: Some(0.0), ..from_nothing };
        assert!(error(mode(&explicit_zero, SECOND, false, SECOND)).contains("send nothing"));
        // From -R, the warm-up holds it: accepted.
        let from_rate = PlanArgs { rate: Some(50.0), stages: Some(ramp), ..PlanArgs::default() };
        assert!(mode(&from_rate, SECOND, false, SECOND).is_ok());
    }

    /// Issue 34, item 3: `-n 1000 -R500` lasted (N-1)/R, 1.998 s, and
    /// reported 500.50 requests/s.
    #[test]
    fn n_requests_at_a_rate_last_n_over_r() {
        let bounded = |spec: PlanSpec, n: u64, warmup: Duration| {
            let mode = Mode::Paced(spec);
            super::bounded(&mode, 10 * SECOND, false, Some(n), warmup, 0).unwrap()
        };
        assert_eq!(bounded(PlanSpec::constant(500.0), 1000, Duration::ZERO), 2 * SECOND);
        assert_eq!(bounded(PlanSpec::constant(500.0), 1000, SECOND), 2 * SECOND);
        assert_eq!(bounded(PlanSpec::constant(3.0), 3, Duration::ZERO), SECOND);
        // The window holds exactly N requests of the plan.
        let spec = PlanSpec { arrival: Arrival::Poisson, ..PlanSpec::constant(700.0) };
        let window = bounded(spec.clone(), 250, Duration::ZERO);
        assert_eq!(spec.plan(Duration::ZERO, 0).count_before(window.as_nanos() as u64), 250);
    }

    #[test]
    fn plans_that_cannot_be_are_refused() {
        let poisson = PlanArgs { arrival: Some(Arrival::Poisson), ..PlanArgs::default() };
        assert!(error(mode(&poisson, SECOND, false, Duration::ZERO)).contains("needs a rate"));
        let zero = PlanArgs { rate: Some(0.0), ..PlanArgs::default() };
        assert!(error(mode(&zero, SECOND, false, Duration::ZERO)).contains("greater than 0"));
        let nothing = PlanArgs {
            stages: Some(vec![Stage { duration: SECOND, rate: 0.0 }]),
            ..PlanArgs::default()
        };
        assert!(error(mode(&nothing, SECOND, false, Duration::ZERO)).contains("send nothing"));
        assert!(matches!(arrival("--arrival", "Poisson"), Ok(Arrival::Poisson)));
        assert!(arrival("--arrival", "burst").is_err());
        assert!(seed_value("--seed", "12x").is_err());
    }
}
