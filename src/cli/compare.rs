//! `pace compare [options] BASE NEW`: the command line of a comparison of
//! two saved runs, and its help.

use std::ffi::OsString;
use std::path::PathBuf;

use super::bench::percentiles;
use super::options::{Item, Options, Spec};
use super::{Command, Help};
use crate::compare::{parse_limits, CompareArgs, Noise};
use crate::error::Error;
use crate::output::OutputOptions;
use crate::units::parse_time;

#[derive(Clone, Copy, PartialEq)]
pub(super) enum CompareFlag {
    Json,
    Output,
    Html,
    Percentiles,
    MaxRegression,
    Noise,
    Step,
    Help,
}

pub(super) const COMPARE_SPECS: &[Spec<CompareFlag>] = &[
    Spec::new(Some('e'), "json", CompareFlag::Json).help(&["Print the comparison as JSON"]),
    Spec::new(Some('o'), "output", CompareFlag::Output)
        .takes_file("F")
        .help(&["Write it to F instead of stdout"]),
    Spec::new(None, "html", CompareFlag::Html).takes_file("F").help(&[
        "Also write an HTML page with both runs'",
        "percentile spectra and timelines to F",
    ]),
    Spec::new(None, "percentiles", CompareFlag::Percentiles)
        .takes("P")
        .help(&["Percentiles to compare (e.g. 50,99,99.9)"]),
    Spec::new(None, "max-regression", CompareFlag::MaxRegression).takes("L").help(&[
        "Fail (exit 4) when NEW is worse than BASE",
        "by more than L (e.g. 'p99:+10%,p50:+1ms,",
        "rate:-2%,errors:+0.1%')",
    ]),
    Spec::new(None, "noise", CompareFlag::Noise)
        .takes("N")
        .help(&["Smallest difference called faster or", "slower (default 5%,100us)"]),
    Spec::new(None, "step", CompareFlag::Step)
        .takes("N")
        .help(&["Of searches' files (pace search -e), compare", "their step N"]),
    Spec::new(Some('h'), "help", CompareFlag::Help).help(&["Print this help"]),
];

/// Parses the words after `pace compare`.
pub(super) fn parse_compare(args: Vec<OsString>) -> Result<Command, Error> {
    let mut options = Options::new(args, COMPARE_SPECS);
    let mut compare = CompareArgs::default();
    let mut files = Vec::new();
    while let Some(item) = options.next()? {
        let found = match item {
            Item::Word(word) => {
                files.push(PathBuf::from(word));
                continue;
            }
            Item::Option(found) => found,
        };
        let name = found.name.as_str();
        match found.flag {
            CompareFlag::Json => compare.json = true,
            CompareFlag::Output => compare.output = Some(PathBuf::from(options.value(name)?)),
            CompareFlag::Html => compare.html = Some(PathBuf::from(options.value(name)?)),
            CompareFlag::Percentiles => {
                compare.percentiles = Some(percentiles(name, &options.text(name)?)?)
            }
            CompareFlag::MaxRegression => compare
                .limits
                .extend(parse_limits(&options.text(name)?).map_err(|why| invalid(name, why))?),
            CompareFlag::Noise => {
                compare.noise = noise(&options.text(name)?).map_err(|why| invalid(name, why))?
            }
            CompareFlag::Step => {
                compare.step = Some(super::merge::step(name, &options.text(name)?)?)
            }
            CompareFlag::Help => return Ok(Command::Help(Help::Of("compare"))),
        }
    }
    let [base, new] = <[PathBuf; 2]>::try_from(files).map_err(|files| {
        Error::Usage(format!(
            "pace compare needs two files, BASE and NEW (runs saved with pace -e); got {}",
            files.len()
        ))
    })?;
    (compare.base, compare.new) = (base, new);
    let outputs = OutputOptions {
        output: compare.output.clone(),
        html: compare.html.clone(),
        ..OutputOptions::default()
    };
    super::distinct_files(&outputs)?;
    Ok(Command::Compare(compare))
}

fn invalid(option: &str, why: String) -> Error {
    Error::Usage(format!("invalid value for '{option}': {why}"))
}

/// `--noise 5%,100us`: a share of the base value and/or a latency; what
/// is not given keeps its default.
fn noise(text: &str) -> Result<Noise, String> {
    let mut noise = Noise::default();
    for item in text.split(',').map(str::trim) {
        let bad = || format!("'{item}' is a percentage or a time (e.g. 5%,100us)");
        if let Some(number) = item.strip_suffix('%') {
            noise.percent = number
                .trim()
                .parse()
                .ok()
                .filter(|p: &f64| p.is_finite() && *p >= 0.0)
                .ok_or_else(bad)?;
        } else if item.ends_with(|c: char| c.is_ascii_alphabetic()) {
            noise.latency_us = parse_time(item).map_err(|_| bad())?.as_nanos() as f64 / 1000.0;
        } else {
            return Err(bad());
        }
    }
    Ok(noise)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<CompareArgs, Error> {
        match parse_compare(words.iter().map(OsString::from).collect())? {
            Command::Compare(args) => Ok(args),
            _ => panic!("not a comparison"),
        }
    }

    fn error(words: &[&str]) -> String {
        match parse(words) {
            Err(Error::Usage(message)) => message,
            other => panic!("{words:?}: {other:?}"),
        }
    }

    #[test]
    fn files_and_options() {
        let args = parse(&[
            "a.json",
            "-e",
            "--max-regression",
            "p99:+10%,rate:-2%",
            "--max-r=errors:+0.1%",
            "b.json",
            "--html",
            "c.html",
            "--percentiles",
            "99,50",
            "--noise",
            "2%,50us",
            "-o",
            "c.json",
        ])
        .unwrap();
        assert_eq!((args.base, args.new), (PathBuf::from("a.json"), PathBuf::from("b.json")));
        assert!(args.json);
        assert_eq!(args.limits.len(), 3);
        assert_eq!(args.html, Some(PathBuf::from("c.html")));
        assert_eq!(args.output, Some(PathBuf::from("c.json")));
        assert_eq!(args.percentiles, Some(vec![50.0, 99.0]));
        assert_eq!(args.noise, Noise { percent: 2.0, latency_us: 50.0 });
        let defaults = parse(&["a", "b"]).unwrap();
        assert_eq!(defaults.noise, Noise::default());
        assert_eq!(parse(&["--noise", "1ms", "a", "b"]).unwrap().noise.latency_us, 1000.0);
    }

    #[test]
    fn mistakes_are_usage_errors() {
        assert_eq!(
            error(&["a.json"]),
            "pace compare needs two files, BASE and NEW (runs saved with pace -e); got 1"
        );
        assert!(error(&["a", "b", "c"]).ends_with("got 3"));
        assert_eq!(
            error(&["--max-regression", "p99:-1%", "a", "b"]),
            "invalid value for '--max-regression': 'p99:-1%': p99 gets worse as it rises: its \
             limit is how much it may rise, e.g. p99:+1%"
        );
        assert_eq!(
            error(&["--noise", "5", "a", "b"]),
            "invalid value for '--noise': '5' is a percentage or a time (e.g. 5%,100us)"
        );
        assert!(error(&["--noise", "-1%", "a", "b"]).contains("'-1%' is a percentage"));
        assert!(error(&["-o", "x", "--html", "./x", "a", "b"]).contains("name the same file"));
        assert!(error(&["-x", "a", "b"]).contains("-x"));
        assert!(matches!(
            parse_compare(vec![OsString::from("-h")]).unwrap(),
            Command::Help(help) if help.text().starts_with("Usage: pace compare")
        ));
    }
}
