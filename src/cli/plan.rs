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
/// stages' length when there are stages), given `-d` and whether it was
/// typed.
pub(super) fn mode(
    args: &PlanArgs,
    duration: Duration,
    duration_typed: bool,
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
    Ok((Mode::Paced(PlanSpec { rate, stages: stages.clone(), arrival }), length))
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
        let (mode, duration) = mode(&args, 10 * SECOND, false).unwrap();
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
        let (mode, duration) = super::mode(&staged, 10 * SECOND, false).unwrap();
        assert_eq!(duration, 2 * SECOND);
        assert!(
            matches!(mode, Mode::Paced(ref spec) if spec.rate == 0.0 && spec.arrival == Arrival::Poisson)
        );
        assert!(super::mode(&staged, 2 * SECOND, true).is_ok());
        let message = error(super::mode(&staged, 3 * SECOND, true));
        assert!(message.contains("disagrees with --stages"), "{message}");
    }

    fn mode_of(args: PlanArgs) -> Mode {
        mode(&args, SECOND, false).unwrap().0
    }

    #[test]
    fn plans_that_cannot_be_are_refused() {
        let poisson = PlanArgs { arrival: Some(Arrival::Poisson), ..PlanArgs::default() };
        assert!(error(mode(&poisson, SECOND, false)).contains("needs a rate"));
        let zero = PlanArgs { rate: Some(0.0), ..PlanArgs::default() };
        assert!(error(mode(&zero, SECOND, false)).contains("greater than 0"));
        let nothing = PlanArgs {
            stages: Some(vec![Stage { duration: SECOND, rate: 0.0 }]),
            ..PlanArgs::default()
        };
        assert!(error(mode(&nothing, SECOND, false)).contains("send nothing"));
        assert!(matches!(arrival("--arrival", "Poisson"), Ok(Arrival::Poisson)));
        assert!(arrival("--arrival", "burst").is_err());
        assert!(seed_value("--seed", "12x").is_err());
    }
}
