//! The command line: which command to run, with which options.
//!
//! `pace serve ...`, `pace demo`, `pace merge ...`, `pace report ...`,
//! `pace completions SHELL`, `pace man` and `pace help [COMMAND]` are
//! subcommands, recognised by the first word only ([`commands`] describes
//! them all); anything else is a wrk/wrk2 command line ([`bench`]).
//! Parsing never prints: it returns a [`Command`] (help and version texts,
//! completion scripts and the man page included) or an [`Error::Usage`]
//! with a one-line message, and `main` does the printing.

mod bench;
mod commands;
mod compare;
mod completions;
mod manpage;
mod merge;
mod options;
mod plan;
mod search;
mod serve;
mod shard;
mod suggest;
mod usage;

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::Error;
use crate::output::OutputOptions;
use crate::protocol::Protocol;
use crate::run::Bench;
use crate::serve::ServeOptions;
use options::{HelpOnly, Item, Options, HELP_ONLY};

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// Benchmark a URL (resolving it is not the parser's job).
    Bench {
        /// Boxed: it is many times larger than the other variants.
        bench: Box<Bench>,
        /// `-v` came with a URL: print [`version_line`] first, then run
        /// (wrk prints the version and goes on).
        print_version: bool,
    },
    /// `pace serve`: run the built-in target server.
    Serve(ServeOptions),
    /// `pace demo`, over HTTP/2 with `--http2`, HTTP/3 with `--http3`.
    Demo { protocol: Protocol },
    /// `pace merge`: report saved runs as one.
    Merge(crate::merge::MergeArgs),
    /// `pace report`: report one saved run again.
    Report(crate::merge::MergeArgs),
    /// `pace compare`: two saved runs side by side.
    Compare(crate::compare::CompareArgs),
    /// `pace search`: the highest rate within the objectives. Boxed as
    /// the benchmark is.
    Search(Box<crate::search::SearchArgs>),
    /// `-h`/`--help`/`pace help`: print this help to stdout, exit 0.
    Help(Help),
    /// `-v` without a URL: print this line to stdout, exit 0.
    Version(String),
    /// `pace completions SHELL`, `pace man`: print this script or page to
    /// stdout, exit 0.
    Generated(String),
}

/// Which help text was asked for. The parsers name it and [`Help::text`]
/// writes it, so that the texts, made from every parser's option table,
/// sit above the parsers rather than each parser calling up into them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Help {
    /// `pace -h`: the benchmark's options and the commands.
    Main,
    /// `pace NAME -h`, `pace help NAME`.
    Of(&'static str),
}

impl Help {
    pub fn text(self) -> String {
        match self {
            Help::Main => usage::main(),
            Help::Of(name) => usage::of(name),
        }
    }
}

/// Reads a command line; `args` excludes the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, Error> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let Some(first) = args.first().and_then(|word| word.to_str()) else {
        return bench::parse(args);
    };
    let subcommand: fn(Vec<OsString>) -> Result<Command, Error> = match first {
        "serve" => serve::parse_serve,
        "demo" => serve::parse_demo,
        "merge" => merge::parse_merge,
        "report" => merge::parse_report,
        "compare" => compare::parse_compare,
        "search" => search::parse,
        "completions" => completions::parse,
        "man" => manpage::parse,
        "help" => help,
        _ => return bench::parse(args),
    };
    args.remove(0);
    subcommand(args)
}

/// Two output options naming one file would write it twice, each copy
/// replacing the other: refused. Paths are compared as absolute paths
/// (`run.html` and `./run.html` are one file).
fn distinct_files(outputs: &OutputOptions) -> Result<(), Error> {
    let named = [("-o", &outputs.output), ("--hlog", &outputs.hlog), ("--html", &outputs.html)];
    let named: Vec<(&str, PathBuf)> = named
        .iter()
        .filter_map(|(option, path)| {
            let path = path.as_deref()?;
            Some((*option, std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())))
        })
        .collect();
    for (i, (first, path)) in named.iter().enumerate() {
        if let Some((second, _)) = named[i + 1..].iter().find(|(_, other)| other == path) {
            return Err(Error::Usage(format!(
                "{first} and {second} name the same file ({})",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The line `-v` prints, in wrk's form `wrk 4.2.0 [epoll] ...`.
pub fn version_line() -> String {
    format!("pace {} [epoll] wrk/wrk2-compatible HTTP benchmarking", env!("CARGO_PKG_VERSION"))
}

/// `pace help [COMMAND]`.
fn help(args: Vec<OsString>) -> Result<Command, Error> {
    let mut options = Options::new(args, HELP_ONLY);
    let mut topic = None;
    while let Some(item) = options.next()? {
        match item {
            Item::Option(found) => match found.flag {
                HelpOnly::Help => return Ok(Command::Help(Help::Of("help"))),
            },
            Item::Word(word) if topic.is_none() => topic = Some(word),
            Item::Word(word) => return Err(options::unexpected_word("help", word)),
        }
    }
    let Some(topic) = topic.map(|topic| topic.to_string_lossy().into_owned()) else {
        return Ok(Command::Help(Help::Main));
    };
    match commands::find(&topic) {
        Some(command) => Ok(Command::Help(Help::Of(command.name))),
        None => Err(Error::Usage(format!(
            "unknown command '{topic}' (commands: {})",
            commands::names()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &[&str]) -> Result<Command, Error> {
        parse(line.iter().map(OsString::from))
    }

    fn help_text(line: &[&str]) -> String {
        match run(line) {
            Ok(Command::Help(help)) => help.text(),
            _ => panic!("{line:?}: no help"),
        }
    }

    #[test]
    fn subcommands_by_first_word_only() {
        assert!(matches!(run(&["serve"]), Ok(Command::Serve(_))));
        assert!(matches!(run(&["demo"]), Ok(Command::Demo { protocol: Protocol::Http1 })));
        assert!(matches!(
            run(&["demo", "--http2"]),
            Ok(Command::Demo { protocol: Protocol::Http2 })
        ));
        assert!(matches!(
            run(&["demo", "--http3"]),
            Ok(Command::Demo { protocol: Protocol::Http3 })
        ));
        assert!(run(&["demo", "--http2", "--http3"]).is_err());
        // Elsewhere the words are URLs (and not valid ones).
        assert!(
            matches!(run(&["-t1", "serve"]), Err(Error::Usage(m)) if m.contains("invalid URL"))
        );
    }

    #[test]
    fn two_outputs_cannot_share_a_file() {
        for line in [
            &["--html", "r.html", "-o", "./r.html", "http://h/"][..],
            &["--hlog", "x", "--html", "x", "http://h/"],
            &["merge", "-o", "m", "--html", "m", "a.json"],
        ] {
            let Err(Error::Usage(message)) = run(line) else { panic!("{line:?} accepted") };
            assert!(message.contains("name the same file"), "{message}");
        }
        assert!(run(&["--html", "r.html", "-o", "r.json", "http://h/"]).is_ok());
    }

    #[test]
    fn help_topics() {
        assert_eq!(help_text(&["help"]), help_text(&["--help"]));
        assert_eq!(help_text(&["help", "serve"]), help_text(&["serve", "-h"]));
        assert_eq!(help_text(&["help", "demo"]), help_text(&["demo", "--help"]));
        assert_eq!(help_text(&["help", "merge"]), help_text(&["merge", "-h"]));
        assert_eq!(help_text(&["help", "report"]), help_text(&["report", "-h"]));
        assert_eq!(help_text(&["help", "compare"]), help_text(&["compare", "-h"]));
        assert!(help_text(&["-h"]).starts_with("Usage: pace <options> <url>"));
        assert!(help_text(&["help", "-h"]).starts_with("Usage: pace help [command]"));
        assert_eq!(help_text(&["help", "completions"]), help_text(&["completions", "-h"]));
        assert!(matches!(
            run(&["help", "bogus"]),
            Err(Error::Usage(m))
                if m == "unknown command 'bogus' (commands: serve, demo, search, merge, \
                         report, compare, completions, man, help)"
        ));
    }
}
