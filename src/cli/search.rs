//! `pace search <options> <url>`: the benchmark's options (each step is a
//! benchmark run, read by the benchmark's own parser, [`bench::take`]),
//! less those the search decides itself, and the search's own.

use std::ffi::OsString;
use std::sync::OnceLock;
use std::time::Duration;

use super::bench::{self, BenchArgs, Flag, SPECS};
use super::options::{bad_value, word_text, Item, Options, Spec};
use super::{Command, Help};
use crate::error::Error;
use crate::search::climb::{parse_ladder, Climb};
use crate::search::SearchArgs;
use crate::units::{parse_count, parse_metric};

#[derive(Clone, Copy, PartialEq)]
pub(super) enum SearchFlag {
    From,
    To,
    Resolution,
    Ladder,
    MinRate,
    MaxConnections,
    Help,
    Bench(Flag),
}

/// The search's own options, in the order of its `-h`.
const OWN: &[Spec<SearchFlag>] = &[
    Spec::new(None, "from", SearchFlag::From)
        .takes("R")
        .help(&["The first step's rate, requests/s (default 100)"])
        .starts_group("Search options"),
    Spec::new(None, "to", SearchFlag::To)
        .takes("R")
        .help(&["The highest rate to try (default: no limit)"]),
    Spec::new(None, "resolution", SearchFlag::Resolution).takes("P").help(&[
        "Narrow until the rate that held and the one",
        "that failed are within P% (default 5%)",
    ]),
    Spec::new(None, "ladder", SearchFlag::Ladder).takes("L").help(&[
        "Fixed steps FROM..TO/STEP instead of a search",
        "(e.g. 1k..10k/1k); shards with --start-at climb",
        "together, pace merge merges them step by step",
    ]),
    Spec::new(None, "min-rate", SearchFlag::MinRate)
        .takes("R")
        .help(&["Exit 4 when the rate found is below R"]),
    Spec::new(None, "max-connections", SearchFlag::MaxConnections)
        .takes("N")
        .help(&["Grow the connections up to N when they are", "too few for a rate (default 1000)"]),
];

const HELP: Spec<SearchFlag> =
    Spec::new(Some('h'), "help", SearchFlag::Help).help(&["Print this help"]);

/// The benchmark's options the search sets itself, or that say nothing
/// of a search: refused in words.
fn refused(flag: Flag) -> Option<&'static str> {
    Some(match flag {
        Flag::Rate | Flag::Stages => "the search sets each step's rate (--from, --to, --ladder)",
        Flag::Requests => "each step lasts -d",
        Flag::ReportInterval | Flag::Hlog | Flag::Timeseries | Flag::ThreadTimeseries => {
            "the search reports its steps (-e has each step's histograms)"
        }
        Flag::Histogram | Flag::Latency | Flag::ULatency | Flag::Percentiles => {
            "the steps' table has p50, p90, p99 and p99.9 (pace report --step N has the rest)"
        }
        Flag::Metrics | Flag::MetricsLinger | Flag::MetricsPush | Flag::MetricsPushTokenFile => {
            "--metrics is for one run"
        }
        Flag::Strict => "each step is judged on its schedule and its stationarity already",
        Flag::Version | Flag::Help => "",
        _ => return None,
    })
}

/// The whole table: the search's options, then the benchmark's (those
/// refused included, so that they are refused in words) under a heading
/// of their own, then help.
pub(super) fn specs() -> &'static [Spec<SearchFlag>] {
    static TABLE: OnceLock<Vec<Spec<SearchFlag>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let bench =
            SPECS.iter().filter(|spec| spec.flag != Flag::Help).enumerate().map(|(i, spec)| {
                let Spec { short, aliases, long, flag, value, help, group } = *spec;
                let group = if i == 0 { Some("Each step's run (as pace's)") } else { group };
                Spec { short, aliases, long, flag: SearchFlag::Bench(flag), value, help, group }
            });
        OWN.iter().copied().chain(bench).chain([HELP]).collect()
    })
}

/// The options `pace search -h` lists: the refused ones left out.
pub(super) fn described() -> Vec<super::options::Described> {
    let shown = |spec: &&Spec<SearchFlag>| match spec.flag {
        SearchFlag::Bench(flag) => refused(flag).is_none(),
        _ => true,
    };
    specs().iter().filter(shown).map(Spec::described).collect()
}

/// Parses the words after `pace search`.
pub(super) fn parse(args: Vec<OsString>) -> Result<Command, Error> {
    let mut options = Options::new(args, specs());
    let mut typed = BenchArgs::default();
    let (mut from, mut to, mut resolution, mut ladder) = (None, None, None, None);
    let (mut min_rate, mut max_connections, mut warmup_typed) = (None, None, false);
    while let Some(item) = options.next()? {
        let found = match item {
            Item::Word(word) => {
                typed.words.push(word_text(word)?);
                continue;
            }
            Item::Option(found) => found,
        };
        let name = found.name.as_str();
        match found.flag {
            SearchFlag::From => from = Some(rate(name, &options.text(name)?)?),
            SearchFlag::To => to = Some(rate(name, &options.text(name)?)?),
            SearchFlag::Resolution => resolution = Some(share(name, &options.text(name)?)?),
            SearchFlag::Ladder => {
                ladder =
                    Some(parse_ladder(&options.text(name)?).map_err(|why| bad_value(name, why))?)
            }
            SearchFlag::MinRate => min_rate = Some(rate(name, &options.text(name)?)?),
            SearchFlag::MaxConnections => {
                let n = parse_count(&options.text(name)?).map_err(|why| bad_value(name, why))?;
                max_connections = Some(n);
            }
            SearchFlag::Help => return Ok(Command::Help(Help::Of("search"))),
            SearchFlag::Bench(flag) => {
                if let Some(why) = refused(flag) {
                    return Err(Error::Usage(format!(
                        "{name} is not an option of pace search: {why}"
                    )));
                }
                warmup_typed |= flag == Flag::Warmup;
                bench::take(&mut typed, flag, name, &mut options)?;
            }
        }
    }
    let climb = match ladder {
        Some(rates) => {
            if from.is_some() || to.is_some() || resolution.is_some() {
                return Err(Error::Usage(
                    "--ladder runs fixed steps: --from, --to and --resolution are a search's"
                        .into(),
                ));
            }
            Climb::Ladder(rates)
        }
        None => {
            if typed.slo.is_empty() {
                return Err(Error::Usage(
                    "pace search needs --slo: the objectives a rate must meet \
                     (e.g. --slo 'p99<10ms,errors<0.1%'; or --ladder for fixed steps)"
                        .into(),
                ));
            }
            if typed.shard.count > 1 || typed.start_at.is_some() {
                return Err(Error::Usage(
                    "--shard and --start-at need --ladder: a search's next rate depends on \
                     the whole service's answer, which no one shard sees"
                        .into(),
                ));
            }
            let from = from.unwrap_or(DEFAULT_FROM);
            if to.is_some_and(|to| to < from) {
                return Err(Error::Usage("--to is below --from".into()));
            }
            Climb::Search { from, to, resolution: resolution.unwrap_or(DEFAULT_RESOLUTION) }
        }
    };
    if !warmup_typed {
        typed.warmup = DEFAULT_WARMUP;
    }
    // Checked as the run of the first step.
    typed.plan.rate = Some(match &climb {
        Climb::Search { from, .. } => *from,
        Climb::Ladder(rates) => rates[0],
    });
    let bench = bench::validate(typed)?;
    let max_connections =
        max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS.max(bench.config.connections));
    if max_connections < bench.config.connections {
        return Err(Error::Usage(format!(
            "--max-connections {max_connections} is below -c {}",
            bench.config.connections
        )));
    }
    Ok(Command::Search(Box::new(SearchArgs { bench, climb, min_rate, max_connections })))
}

/// The first step's rate without `--from`.
const DEFAULT_FROM: f64 = 100.0;
/// Without `--resolution`: 5%.
const DEFAULT_RESOLUTION: f64 = 0.05;
/// Each step's warm-up without `--warmup`: connections opened, caches and
/// the server's pools filled before anything counts.
const DEFAULT_WARMUP: Duration = Duration::from_secs(2);
/// Without `--max-connections`.
const DEFAULT_MAX_CONNECTIONS: usize = 1000;

/// A rate above 0, SI suffixes allowed (`20k`).
fn rate(option: &str, text: &str) -> Result<f64, Error> {
    let value = parse_metric(text).map_err(|why| bad_value(option, why))?;
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(bad_value(option, format!("'{text}' is not a rate above 0")))
    }
}

/// `5%` (or `5`): a share above 0 and below 100%.
fn share(option: &str, text: &str) -> Result<f64, Error> {
    let number = text.strip_suffix('%').unwrap_or(text).trim();
    match number.parse::<f64>() {
        Ok(percent) if percent > 0.0 && percent < 100.0 => Ok(percent / 100.0),
        _ => Err(bad_value(option, format!("'{text}' is not a share from 0% to 100% (e.g. 5%)"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_words(words: &[&str]) -> Result<SearchArgs, Error> {
        match parse(words.iter().map(OsString::from).collect())? {
            Command::Search(args) => Ok(*args),
            _ => panic!("not a search"),
        }
    }

    fn refused_with(words: &[&str], expected: &str) {
        match parse_words(words) {
            Err(Error::Usage(message)) => assert!(message.contains(expected), "{message}"),
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("{words:?} accepted"),
        }
    }

    #[test]
    fn a_search_with_its_defaults() {
        let args = parse_words(&["--slo", "p99<10ms", "-c", "20", "http://127.0.0.1:1/"]).unwrap();
        assert_eq!(args.climb, Climb::Search { from: 100.0, to: None, resolution: 0.05 });
        assert_eq!(args.bench.config.warmup, DEFAULT_WARMUP);
        assert_eq!(args.bench.config.connections, 20);
        assert_eq!(args.max_connections, 1000);
        let args = parse_words(&[
            "--slo",
            "errors<1%",
            "--from",
            "1k",
            "--to",
            "8k",
            "--resolution",
            "2%",
            "--warmup",
            "0",
            "-d",
            "3s",
            "--min-rate",
            "500",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        assert_eq!(args.climb, Climb::Search { from: 1000.0, to: Some(8000.0), resolution: 0.02 });
        assert_eq!(args.bench.config.warmup, Duration::ZERO);
        assert_eq!(args.min_rate, Some(500.0));
    }

    #[test]
    fn a_ladder_needs_no_slo_and_may_be_sharded() {
        let args = parse_words(&[
            "--ladder",
            "100..300/100",
            "--shard",
            "1/3",
            "--start-at",
            "4000000000",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        assert_eq!(args.climb, Climb::Ladder(vec![100.0, 200.0, 300.0]));
    }

    #[test]
    fn what_the_search_decides_is_refused_in_words() {
        refused_with(&["http://127.0.0.1:1/"], "needs --slo");
        refused_with(&["--slo", "p99<1ms", "-R", "10", "http://h/"], "sets each step's rate");
        refused_with(&["--slo", "p99<1ms", "-p", "1s", "http://h/"], "reports its steps");
        refused_with(&["--slo", "p99<1ms", "--shard", "1/2", "http://h/"], "need --ladder");
        refused_with(&["--ladder", "1..2/1", "--from", "1", "http://h/"], "fixed steps");
        refused_with(&["--slo", "p99<1ms", "--from", "0", "http://h/"], "above 0");
        refused_with(&["--slo", "p99<1ms", "--resolution", "200%", "http://h/"], "share");
        refused_with(&["--slo", "p99<1ms", "--from", "10", "--to", "5", "http://h/"], "below");
        refused_with(
            &["--slo", "p99<1ms", "-c", "50", "--max-connections", "10", "http://h/"],
            "below -c",
        );
    }

    #[test]
    fn help() {
        assert!(matches!(parse(vec!["-h".into()]), Ok(Command::Help(Help::Of("search")))));
        let names: Vec<&str> = described().iter().map(|spec| spec.long).collect();
        assert!(names.contains(&"ladder") && names.contains(&"connections"));
        assert!(!names.contains(&"rate") && !names.contains(&"report_interval"));
    }
}
