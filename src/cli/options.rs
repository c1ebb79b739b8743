//! The option grammar shared by every pace command: GNU `getopt_long` as wrk
//! uses it, on top of lexopt.
//!
//! lexopt already gives the getopt mechanics (options anywhere, clusters
//! `-Lt2`, attached values `-t2`, `--threads=2`, `--` ends options); this
//! module adds what getopt has and lexopt leaves to the caller: a table of
//! known options per command, long options abbreviated to any unambiguous
//! prefix (`--conn`, `--lat`; a prefix of several names of one option, such
//! as `--js` for `--json` and `--json_encoding`, is not ambiguous either),
//! and one-line error messages.
//!
//! One rule goes beyond getopt: a command that reproduces other programs'
//! command lines (the benchmark: wrk, wrk2 and their forks) keeps every
//! abbreviation those programs accepted, with its meaning there, even
//! where pace's own options share the prefix ([`Program`]): wrk read
//! `--s` as `--script` and `--ti` as `--timeout`, and so does pace, though
//! `--slo` and `--timeseries` start the same way. Only prefixes that were
//! ambiguous in all of them, or that are new, are ambiguous in pace.

use std::ffi::OsString;
use std::time::Duration;

use super::suggest;
use crate::error::Error;
use crate::units::parse_time;

/// Longest accepted `-d` or `--timeout`: far beyond any real run, and it
/// keeps `Instant + duration` from overflowing anywhere downstream.
const MAX_TIME: Duration = Duration::from_secs(365 * 24 * 3600);

/// One option a command accepts, and all that is said about it: the parser,
/// `-h`, the man page (`pace man`) and the shell completions (`pace
/// completions`) read this one entry, so they cannot disagree. `F` is the
/// command's own enum of options, so the parsing loop can `match`
/// exhaustively instead of on strings. Built with [`Spec::new`] and the
/// methods after it, in a `const` table.
#[derive(Clone, Copy)]
pub(super) struct Spec<F> {
    pub short: Option<char>,
    /// More short names, documented after the description (`-V`).
    pub aliases: &'static [char],
    pub long: &'static str,
    pub flag: F,
    pub value: Option<Value>,
    /// The description, one help line each (they fit in 80 columns).
    pub help: &'static [&'static str],
    /// This option starts a group in `-h`: a blank line, then this
    /// heading (none if empty). The man page makes it a subsection.
    pub group: Option<&'static str>,
}

/// The value an option takes.
#[derive(Clone, Copy)]
pub(super) struct Value {
    /// Shown as `<N>` (`[=T]` when optional).
    pub placeholder: &'static str,
    /// Only attached (`--timeseries=500ms`): getopt's `optional_argument`.
    pub optional: bool,
    pub kind: Kind,
}

/// What a value (or an operand) is, for the shell completions.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Kind {
    /// Anything typed: nothing to complete.
    Text,
    /// A path: completed as files.
    File,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// The name of one of pace's commands (`pace help serve`).
    Command,
}

/// A table entry without its parser's flag: what help texts, the man page
/// and completions read, whichever command it belongs to.
pub(super) type Described = Spec<()>;

impl<F: Copy> Spec<F> {
    /// An option without a value, documented by nothing yet.
    pub const fn new(short: Option<char>, long: &'static str, flag: F) -> Self {
        Spec { short, aliases: &[], long, flag, value: None, help: &[], group: None }
    }

    /// It takes a value, shown as `<placeholder>`, that is anything typed.
    pub const fn takes(self, placeholder: &'static str) -> Self {
        self.value(placeholder, false, Kind::Text)
    }

    /// It takes the path of a file.
    pub const fn takes_file(self, placeholder: &'static str) -> Self {
        self.value(placeholder, false, Kind::File)
    }

    /// It takes one of `words`.
    pub const fn takes_one_of(
        self,
        placeholder: &'static str,
        words: &'static [&'static str],
    ) -> Self {
        self.value(placeholder, false, Kind::Choice(words))
    }

    /// It may take a value, attached only (`--timeseries[=T]`).
    pub const fn may_take(self, placeholder: &'static str) -> Self {
        self.value(placeholder, true, Kind::Text)
    }

    const fn value(mut self, placeholder: &'static str, optional: bool, kind: Kind) -> Self {
        self.value = Some(Value { placeholder, optional, kind });
        self
    }

    pub const fn help(mut self, lines: &'static [&'static str]) -> Self {
        self.help = lines;
        self
    }

    pub const fn aliases(mut self, shorts: &'static [char]) -> Self {
        self.aliases = shorts;
        self
    }

    /// See [`Spec::group`].
    pub const fn starts_group(mut self, heading: &'static str) -> Self {
        self.group = Some(heading);
        self
    }

    pub fn described(&self) -> Described {
        let Spec { short, aliases, long, flag: _, value, help, group } = *self;
        Spec { short, aliases, long, flag: (), value, help, group }
    }

    /// Every short name, the first one first.
    pub fn shorts(&self) -> impl Iterator<Item = char> + '_ {
        self.short.into_iter().chain(self.aliases.iter().copied())
    }
}

/// The long options of a program whose command line a pace command
/// reproduces, by their names in pace's table (they are the same names).
/// getopt_long gave any prefix that named one of *its* options that
/// option; pace's longer table must not take such a prefix away.
pub(super) type Program = &'static [&'static str];

/// What a typed long option name (`--thr`) names in a table.
pub(super) enum Resolution<'a, F> {
    /// An option's whole name, or a prefix of the names of one option.
    Unique(&'a Spec<F>),
    /// A prefix of several options of pace that one of the programs it
    /// reproduces took for this one.
    Inherited(&'a Spec<F>),
    /// A prefix of several options, in table order.
    Ambiguous(Vec<&'a Spec<F>>),
    Unknown,
}

/// An option found on the command line, with the name to use in messages:
/// `-c` when typed short, `--connections` when typed long (even if the user
/// typed an abbreviation such as `--conn`).
pub(super) struct Found<F> {
    pub flag: F,
    pub name: String,
}

/// What the command line holds next.
pub(super) enum Item<F> {
    Option(Found<F>),
    /// A word that is not an option (URL, script argument...).
    Word(OsString),
}

/// A command line being read against one command's option table.
pub(super) struct Options<F: 'static> {
    parser: lexopt::Parser,
    specs: &'static [Spec<F>],
    /// The programs whose abbreviations this command keeps.
    programs: &'static [Program],
}

impl<F: Copy + PartialEq> Options<F> {
    /// `args` excludes the program name (and the subcommand word, if any).
    pub fn new(args: impl IntoIterator<Item = OsString>, specs: &'static [Spec<F>]) -> Self {
        Options { parser: lexopt::Parser::from_args(args), specs, programs: &[] }
    }

    /// Keeps the abbreviations `programs` accepted (see [`Program`]).
    pub fn reproducing(mut self, programs: &'static [Program]) -> Self {
        self.programs = programs;
        self
    }

    /// The next option or word, `None` at the end of the command line.
    pub fn next(&mut self) -> Result<Option<Item<F>>, Error> {
        let arg = match self.parser.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => return Ok(None),
            Err(err) => return Err(lexopt_error(err)),
        };
        let found = match arg {
            lexopt::Arg::Short(c) => find_short(self.specs, c)?,
            lexopt::Arg::Long(typed) => find_long(self.specs, self.programs, typed)?,
            lexopt::Arg::Value(word) => return Ok(Some(Item::Word(word))),
        };
        Ok(Some(Item::Option(found)))
    }

    /// The value of the option just returned by [`Options::next`]: attached
    /// (`-t2`, `--threads=2`) or the next word, even one starting with `-`
    /// (as getopt does: `-c -t` gives `-c` the value `-t`).
    pub fn value(&mut self, option: &str) -> Result<OsString, Error> {
        self.parser.value().map_err(|err| match err {
            lexopt::Error::MissingValue { .. } => {
                Error::Usage(format!("option '{option}' needs a value"))
            }
            other => lexopt_error(other),
        })
    }

    /// The value of an option whose value is optional (getopt's
    /// `optional_argument`): only an attached one (`--timeseries=500ms`);
    /// a separate next word is not the option's.
    pub fn optional_text(&mut self, option: &str) -> Result<Option<String>, Error> {
        self.parser.optional_value().map(|value| text_value(option, value)).transpose()
    }

    /// Like [`Options::value`], for values that must be text.
    pub fn text(&mut self, option: &str) -> Result<String, Error> {
        let value = self.value(option)?;
        text_value(option, value)
    }
}

fn text_value(option: &str, value: OsString) -> Result<String, Error> {
    value.into_string().map_err(|raw| {
        Error::Usage(format!(
            "value of option '{option}' is not valid UTF-8: '{}'",
            raw.to_string_lossy()
        ))
    })
}

/// A positional word as text; URLs and script arguments must be UTF-8.
pub(super) fn word_text(word: OsString) -> Result<String, Error> {
    word.into_string().map_err(|raw| {
        Error::Usage(format!("argument is not valid UTF-8: '{}'", raw.to_string_lossy()))
    })
}

/// A duration (`-d 30s`, `--timeout 1.5s`, `-d 500ms`), at most [`MAX_TIME`].
pub(super) fn time(option: &str, text: &str) -> Result<Duration, Error> {
    let duration = parse_time(text).map_err(|err| bad_value(option, err))?;
    if duration > MAX_TIME {
        return Err(bad_value(option, format!("'{text}' is longer than 365 days")));
    }
    Ok(duration)
}

/// The message for a value that does not parse, naming the option.
pub(super) fn bad_value(option: &str, why: impl std::fmt::Display) -> Error {
    Error::Usage(format!("invalid value for '{option}': {why}"))
}

fn find_short<F: Copy + PartialEq>(specs: &[Spec<F>], typed: char) -> Result<Found<F>, Error> {
    specs
        .iter()
        .find(|spec| spec.shorts().any(|short| short == typed))
        .map(|spec| Found { flag: spec.flag, name: format!("-{typed}") })
        .ok_or_else(|| unknown_option(&format!("-{typed}")))
}

/// The option `typed` (without its `--`) names, or the error that says
/// why none.
fn find_long<F: Copy + PartialEq>(
    specs: &[Spec<F>],
    programs: &[Program],
    typed: &str,
) -> Result<Found<F>, Error> {
    // `--=x` reaches here with an empty name, which every option starts with.
    if typed.is_empty() {
        return Err(unknown_option("--"));
    }
    match resolve_long(specs, programs, typed) {
        Resolution::Unique(spec) | Resolution::Inherited(spec) => {
            Ok(Found { flag: spec.flag, name: format!("--{}", spec.long) })
        }
        Resolution::Ambiguous(candidates) => {
            let names: Vec<String> =
                candidates.iter().map(|spec| format!("'--{}'", spec.long)).collect();
            Err(Error::Usage(format!(
                "option '--{typed}' is ambiguous; possibilities: {}",
                names.join(" ")
            )))
        }
        Resolution::Unknown => {
            let names = specs.iter().map(|spec| spec.long);
            let hint = match suggest::nearest(typed, names) {
                Some(long) => format!(" (did you mean --{long}?)"),
                None => String::new(),
            };
            Err(Error::Usage(format!("unknown option '--{typed}'{hint}")))
        }
    }
}

/// getopt_long's rule: an exact name wins, otherwise the typed text must be
/// the prefix of the names of exactly one option; failing that, the option
/// one of `programs` would have taken it for (see [`Program`]).
pub(super) fn resolve_long<'a, F: Copy + PartialEq>(
    specs: &'a [Spec<F>],
    programs: &[Program],
    typed: &str,
) -> Resolution<'a, F> {
    if let Some(exact) = specs.iter().find(|spec| spec.long == typed) {
        return Resolution::Unique(exact);
    }
    let candidates: Vec<&Spec<F>> =
        specs.iter().filter(|spec| spec.long.starts_with(typed)).collect();
    match candidates.as_slice() {
        [] => Resolution::Unknown,
        [first, rest @ ..] if rest.iter().all(|spec| spec.flag == first.flag) => {
            Resolution::Unique(first)
        }
        _ => match inherited(programs, typed)
            .and_then(|long| specs.iter().find(|spec| spec.long == long))
        {
            Some(spec) => Resolution::Inherited(spec),
            None => Resolution::Ambiguous(candidates),
        },
    }
}

/// The long option that the first of `programs` with exactly one option
/// starting with `typed` took it for.
fn inherited(programs: &[Program], typed: &str) -> Option<&'static str> {
    programs.iter().find_map(|longs| {
        let mut named = longs.iter().filter(|long| long.starts_with(typed));
        match (named.next(), named.next()) {
            (Some(long), None) => Some(*long),
            _ => None,
        }
    })
}

fn unknown_option(shown: &str) -> Error {
    Error::Usage(format!("unknown option '{shown}'"))
}

/// lexopt's own errors in pace's words. `UnexpectedValue` (`--latency=1`,
/// `-L=1`) is the only one `next` returns; any other keeps lexopt's wording.
fn lexopt_error(err: lexopt::Error) -> Error {
    match err {
        lexopt::Error::UnexpectedValue { option, value } => Error::Usage(format!(
            "option '{option}' does not take a value (got '{}')",
            value.to_string_lossy()
        )),
        other => Error::Usage(other.to_string()),
    }
}

/// The one option of the commands that take no other (`pace man`,
/// `pace completions`, `pace help`).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum HelpOnly {
    Help,
}

pub(super) const HELP_ONLY: &[Spec<HelpOnly>] =
    &[Spec::new(Some('h'), "help", HelpOnly::Help).help(&["Print this help"])];

/// A word where a command takes none (`pace serve http://x/`).
pub(super) fn unexpected_word(command: &str, word: OsString) -> Error {
    Error::Usage(format!(
        "unexpected argument '{}' (try 'pace {command} --help')",
        word.to_string_lossy()
    ))
}
