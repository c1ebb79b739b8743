//! `pace merge [options] FILE...`: the command line of a merge, and of
//! `pace report [options] FILE`, which takes the report options of a
//! merge (no `-e`, no `-o`: it prints the text report) for one saved run.

use std::ffi::OsString;
use std::path::PathBuf;

use super::bench::{objectives, percentiles};
use super::options::{Item, Options, Spec};
use super::{Command, Help};
use crate::error::Error;
use crate::merge::MergeArgs;

#[derive(Clone, Copy, PartialEq)]
pub(super) enum MergeFlag {
    Json,
    Latency,
    ULatency,
    Percentiles,
    Slo,
    Output,
    Html,
    Step,
    Help,
}

pub(super) const MERGE_SPECS: &[Spec<MergeFlag>] = &[
    LATENCY,
    U_LATENCY,
    PERCENTILES,
    Spec::new(Some('e'), "json", MergeFlag::Json).help(&["Print JSON instead of text"]),
    Spec::new(None, "slo", MergeFlag::Slo)
        .takes("S")
        .help(&["Judge the merged result (exit 4 on failure)"]),
    Spec::new(Some('o'), "output", MergeFlag::Output)
        .takes_file("F")
        .help(&["Write the report to F instead of stdout"]),
    Spec::new(None, "html", MergeFlag::Html)
        .takes_file("F")
        .help(&["Also write an HTML report with charts to F", "(results of -e only)"]),
    Spec::new(None, "step", MergeFlag::Step).takes("N").help(&[
        "Of searches' files (pace search -e), merge",
        "their step N (without it, ladders merge",
        "step by step)",
    ]),
    HELP,
];

pub(super) const REPORT_SPECS: &[Spec<MergeFlag>] = &[
    LATENCY,
    U_LATENCY,
    PERCENTILES,
    Spec::new(None, "slo", MergeFlag::Slo).takes("S").help(&["Judge the run (exit 4 on failure)"]),
    Spec::new(None, "html", MergeFlag::Html)
        .takes_file("F")
        .help(&["Write the HTML report with charts to F"]),
    Spec::new(None, "step", MergeFlag::Step)
        .takes("N")
        .help(&["Of a search's file (pace search -e), its", "step N"]),
    HELP,
];

// The options `pace merge` and `pace report` share, said alike.
const LATENCY: Spec<MergeFlag> =
    Spec::new(Some('L'), "latency", MergeFlag::Latency).help(&["Print latency statistics"]);
const U_LATENCY: Spec<MergeFlag> = Spec::new(Some('U'), "u_latency", MergeFlag::ULatency)
    .help(&["Also print the uncorrected latency"]);
const PERCENTILES: Spec<MergeFlag> = Spec::new(None, "percentiles", MergeFlag::Percentiles)
    .takes("P")
    .help(&["Percentiles to print (e.g. 50,99,99.9;", "implies -L)"]);
const HELP: Spec<MergeFlag> =
    Spec::new(Some('h'), "help", MergeFlag::Help).help(&["Print this help"]);

/// Parses the words after `pace merge`.
pub(super) fn parse_merge(args: Vec<OsString>) -> Result<Command, Error> {
    let Some(merge) = parse_args(args, MERGE_SPECS)? else {
        return Ok(Command::Help(Help::Of("merge")));
    };
    if merge.files.is_empty() {
        return Err(Error::Usage(
            "pace merge needs the files to merge (results of pace -e, or --hlog logs)".into(),
        ));
    }
    Ok(Command::Merge(merge))
}

/// Parses the words after `pace report`.
pub(super) fn parse_report(args: Vec<OsString>) -> Result<Command, Error> {
    let Some(report) = parse_args(args, REPORT_SPECS)? else {
        return Ok(Command::Help(Help::Of("report")));
    };
    if report.files.len() != 1 {
        return Err(Error::Usage(
            "pace report needs one file: a run saved with pace -e (pace merge adds several)".into(),
        ));
    }
    Ok(Command::Report(report))
}

/// The options and files of `specs`; None when help was asked for.
fn parse_args(
    args: Vec<OsString>,
    specs: &'static [Spec<MergeFlag>],
) -> Result<Option<MergeArgs>, Error> {
    let mut options = Options::new(args, specs);
    let mut merge = MergeArgs::default();
    while let Some(item) = options.next()? {
        let found = match item {
            Item::Word(word) => {
                merge.files.push(PathBuf::from(word));
                continue;
            }
            Item::Option(found) => found,
        };
        let name = found.name.as_str();
        match found.flag {
            MergeFlag::Json => merge.outputs.json = true,
            MergeFlag::Latency => merge.report.latency = true,
            MergeFlag::ULatency => merge.report.u_latency = true,
            MergeFlag::Percentiles => {
                merge.report.percentiles = Some(percentiles(name, &options.text(name)?)?)
            }
            MergeFlag::Slo => merge.slo.extend(objectives(name, &options.text(name)?)?),
            MergeFlag::Output => merge.outputs.output = Some(PathBuf::from(options.value(name)?)),
            MergeFlag::Html => merge.outputs.html = Some(PathBuf::from(options.value(name)?)),
            MergeFlag::Step => merge.step = Some(step(name, &options.text(name)?)?),
            MergeFlag::Help => return Ok(None),
        }
    }
    // As in a run: asking for percentiles is asking to see them (-L).
    merge.report.latency |= merge.report.percentiles.is_some();
    super::distinct_files(&merge.outputs)?;
    Ok(Some(merge))
}

/// `--step N`: a step of a search, from 1.
pub(super) fn step(option: &str, text: &str) -> Result<usize, Error> {
    match crate::units::parse_count(text) {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(super::options::bad_value(
            option,
            format!("'{text}' is not a step number (1, 2, ...)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<MergeArgs, Error> {
        match parse_merge(words.iter().map(OsString::from).collect())? {
            Command::Merge(args) => Ok(args),
            _ => panic!("not a merge"),
        }
    }

    #[test]
    fn files_and_options() {
        let args = parse(&[
            "-e", "a.json", "-U", "b.json", "--slo", "p99<10ms", "-o", "m.json", "--html", "m.html",
        ])
        .unwrap();
        assert_eq!(args.outputs.html, Some(PathBuf::from("m.html")));
        assert_eq!(args.files, [PathBuf::from("a.json"), PathBuf::from("b.json")]);
        assert!(args.outputs.json && args.report.u_latency && !args.report.latency);
        assert_eq!(args.slo.len(), 1);
        assert_eq!(args.outputs.output, Some(PathBuf::from("m.json")));
        let args = parse(&["--percentiles", "99,50", "x"]).unwrap();
        assert_eq!(args.report.percentiles, Some(vec![50.0, 99.0]));
        assert!(args.report.latency, "--percentiles are printed without -L");
    }

    #[test]
    fn report_takes_one_file_and_the_report_options() {
        let report = |words: &[&str]| parse_report(words.iter().map(OsString::from).collect());
        let Ok(Command::Report(args)) = report(&["-U", "run.json", "--html", "r.html"]) else {
            panic!("not a report")
        };
        assert_eq!(args.files, [PathBuf::from("run.json")]);
        assert_eq!(args.outputs.html, Some(PathBuf::from("r.html")));
        assert!(args.report.u_latency);
        for (words, says) in [
            (&["a.json", "b.json"][..], "needs one file"),
            (&[][..], "needs one file"),
            (&["-e", "a.json"][..], "-e"),
            (&["-o", "x", "a.json"][..], "-o"),
        ] {
            let Err(Error::Usage(message)) = report(words) else { panic!("{words:?}") };
            assert!(message.contains(says), "{words:?}: {message}");
        }
        assert!(matches!(
            report(&["--help"]).unwrap(),
            Command::Help(help) if help.text().starts_with("Usage: pace report")
        ));
    }

    #[test]
    fn mistakes_are_usage_errors() {
        for (words, says) in [
            (&["-e"][..], "needs the files"),
            (&["--slo", "p99<1x", "a"][..], "'1x' is not a time"),
            (&["-x", "a"][..], "-x"),
            (&["--percentiles", "101", "a"][..], "not a percentile"),
        ] {
            let Err(Error::Usage(message)) = parse(words) else { panic!("{words:?}") };
            assert!(message.contains(says), "{words:?}: {message}");
        }
        assert!(matches!(
            parse_merge(vec![OsString::from("-h")]).unwrap(),
            Command::Help(help) if help.text().starts_with("Usage: pace merge")
        ));
    }
}
