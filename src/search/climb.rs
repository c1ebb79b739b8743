//! Which rate the next step offers, from the steps so far: rising until a
//! step fails, then halving the gap between the highest rate that held
//! and the lowest that failed until it is within the resolution; or a
//! fixed ladder of rates. A pure function of the steps' verdicts, so the
//! search's course can be tested without a server.

/// How the steps climb.
#[derive(Clone, Debug, PartialEq)]
pub enum Climb {
    /// `pace search`: from `from`, doubling until a step fails (or up to
    /// `to`), then narrowing until the gap is at most `resolution` (a
    /// share of the rate that held).
    Search { from: f64, to: Option<f64>, resolution: f64 },
    /// `--ladder FROM..TO/STEP`: these rates, every one of them, in order
    /// (shards climb together and are judged once merged).
    Ladder(Vec<f64>),
}

/// What a finished step says about its rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// The service held the rate within the objectives, steadily.
    Held,
    /// The service did not hold it.
    Failed,
    /// pace could not offer it from this machine: the search ends.
    NotOffered,
    /// Run again at the same rate with more connections: says nothing
    /// about the service yet.
    Retried,
}

/// The search's bounds so far: the highest rate that held below the
/// lowest that failed, and that lowest failure.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bounds {
    pub held: Option<f64>,
    pub failed: Option<f64>,
}

impl Bounds {
    /// Of `steps`, each (offered rate, verdict).
    pub fn of(steps: &[(f64, Judged)]) -> Bounds {
        let failed = (steps.iter())
            .filter(|(_, judged)| *judged == Judged::Failed)
            .map(|(rate, _)| *rate)
            .min_by(f64::total_cmp);
        let held = (steps.iter())
            .filter(|(rate, judged)| *judged == Judged::Held && failed.is_none_or(|f| *rate < f))
            .map(|(rate, _)| *rate)
            .max_by(f64::total_cmp);
        Bounds { held, failed }
    }
}

/// How much the rate rises from one step to the next until one fails.
const GROWTH: f64 = 2.0;

impl Climb {
    /// The rate of the next step after `steps`; None when the climb is
    /// over.
    pub fn next(&self, steps: &[(f64, Judged)]) -> Option<f64> {
        let last = steps.last();
        if last.is_some_and(|(_, judged)| *judged == Judged::NotOffered) {
            return None;
        }
        if let Some((rate, Judged::Retried)) = last {
            return Some(*rate);
        }
        match self {
            Climb::Ladder(rates) => {
                let done = steps.iter().filter(|(_, judged)| *judged != Judged::Retried).count();
                rates.get(done).copied()
            }
            Climb::Search { from, to, resolution } => {
                if steps.is_empty() {
                    return Some(*from);
                }
                match Bounds::of(steps) {
                    // Even the first step failed.
                    Bounds { held: None, .. } => None,
                    Bounds { held: Some(held), failed: None } => {
                        let next = round_rate(held * GROWTH);
                        match to {
                            Some(to) if held >= *to => None,
                            Some(to) => Some(next.min(*to)),
                            None => Some(next),
                        }
                    }
                    Bounds { held: Some(held), failed: Some(failed) } => {
                        let middle = round_rate((held + failed) / 2.0);
                        let narrow = failed - held <= held * resolution;
                        (!narrow && middle > held && middle < failed).then_some(middle)
                    }
                }
            }
        }
    }
}

/// A rate as steps offer it: a whole number of requests per second from
/// 10/s (so tables and shards' steps read alike), two decimals below.
pub fn round_rate(rate: f64) -> f64 {
    if rate >= 10.0 {
        rate.round()
    } else {
        (rate * 100.0).round() / 100.0
    }
}

/// `--ladder FROM..TO/STEP`: the rates FROM, FROM+STEP, ... up to TO
/// (included), each with an optional SI suffix (`1k..10k/1k`).
pub fn parse_ladder(text: &str) -> Result<Vec<f64>, String> {
    let form = || format!("'{text}' is not FROM..TO/STEP (e.g. 1000..10000/1000)");
    let (range, step) = text.split_once('/').ok_or_else(form)?;
    let (from, to) = range.split_once("..").ok_or_else(form)?;
    let number = |word: &str| {
        let value = crate::units::parse_metric(word.trim()).map_err(|why| format!("{why}"))?;
        if value.is_finite() && value > 0.0 {
            Ok(value)
        } else {
            Err(format!("'{}' is not a rate above 0", word.trim()))
        }
    };
    let (from, to, step) = (number(from)?, number(to)?, number(step)?);
    if to < from {
        return Err(format!("'{text}': TO is below FROM"));
    }
    let count = ((to - from) / step + 1e-9).floor() as u64 + 1;
    if count > MAX_LADDER_STEPS {
        return Err(format!("'{text}' has {count} steps, more than {MAX_LADDER_STEPS}"));
    }
    Ok((0..count).map(|i| round_rate(from + step * i as f64)).collect())
}

/// A ladder longer than this is a typing mistake (a day of 10 s steps).
const MAX_LADDER_STEPS: u64 = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn search() -> Climb {
        Climb::Search { from: 1000.0, to: None, resolution: 0.05 }
    }

    /// The rates a search offers against a service that holds up to
    /// `capacity`.
    fn course(climb: &Climb, capacity: f64) -> Vec<f64> {
        let mut steps = Vec::new();
        while let Some(rate) = climb.next(&steps) {
            let judged = if rate <= capacity { Judged::Held } else { Judged::Failed };
            steps.push((rate, judged));
            assert!(steps.len() < 100, "{steps:?}");
        }
        steps.iter().map(|(rate, _)| *rate).collect()
    }

    #[test]
    fn rises_by_doubling_then_narrows_to_the_resolution() {
        let rates = course(&search(), 23_400.0);
        assert_eq!(&rates[..6], &[1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0]);
        let steps: Vec<(f64, Judged)> = rates
            .iter()
            .map(|&r| (r, if r <= 23_400.0 { Judged::Held } else { Judged::Failed }))
            .collect();
        let Bounds { held: Some(held), failed: Some(failed) } = Bounds::of(&steps) else {
            panic!("{steps:?}")
        };
        assert!(held <= 23_400.0 && failed > 23_400.0);
        assert!(failed - held <= held * 0.05, "{held} {failed}");
        // About four halvings of a doubling gap to reach 5%.
        assert!(rates.len() <= 11, "{rates:?}");
    }

    #[test]
    fn a_first_step_that_fails_ends_the_search() {
        assert_eq!(course(&search(), 500.0), vec![1000.0]);
        assert_eq!(Bounds::of(&[(1000.0, Judged::Failed)]).held, None);
    }

    #[test]
    fn stops_at_to() {
        let climb = Climb::Search { from: 1000.0, to: Some(5000.0), resolution: 0.05 };
        assert_eq!(course(&climb, 1e9), vec![1000.0, 2000.0, 4000.0, 5000.0]);
    }

    #[test]
    fn a_retried_step_runs_again_and_a_generator_limit_ends() {
        let climb = search();
        let steps = [(1000.0, Judged::Held), (2000.0, Judged::Retried)];
        assert_eq!(climb.next(&steps), Some(2000.0));
        let steps = [(1000.0, Judged::Held), (2000.0, Judged::Retried), (2000.0, Judged::Held)];
        assert_eq!(climb.next(&steps), Some(4000.0));
        assert_eq!(climb.next(&[(1000.0, Judged::Held), (2000.0, Judged::NotOffered)]), None);
    }

    #[test]
    fn a_ladder_runs_every_rate_whatever_they_say() {
        let climb = Climb::Ladder(parse_ladder("1k..3k/1k").unwrap());
        assert_eq!(course(&climb, 1500.0), vec![1000.0, 2000.0, 3000.0]);
    }

    #[test]
    fn ladders_are_checked() {
        assert_eq!(parse_ladder("100..400/100").unwrap(), vec![100.0, 200.0, 300.0, 400.0]);
        assert_eq!(parse_ladder("100..450/100").unwrap(), vec![100.0, 200.0, 300.0, 400.0]);
        for bad in ["100..50/10", "100-200/10", "100..200", "0..10/1", "1..1000000/1", "a..b/c"] {
            assert!(parse_ladder(bad).is_err(), "{bad}");
        }
    }
}
