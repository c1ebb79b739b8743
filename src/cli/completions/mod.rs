//! `pace completions bash|zsh|fish`: a completion script made from the
//! commands' option tables ([`super::commands`]), so it completes exactly
//! the options `-h` lists: long and short names, each command's own after
//! its word, values that are files as files and values that are one of a
//! few words (`--arrival constant|poisson`) as those words.

mod bash;
mod fish;
mod zsh;

use std::ffi::OsString;

use super::commands::{self, CommandDoc};
use super::options::{unexpected_word, Described, HelpOnly, Item, Kind, Options, HELP_ONLY};
use super::{Command, Help};
use crate::error::Error;

/// Parses the words after `pace completions`.
pub(super) fn parse(args: Vec<OsString>) -> Result<Command, Error> {
    let mut options = Options::new(args, HELP_ONLY);
    let mut shell = None;
    while let Some(item) = options.next()? {
        match item {
            Item::Option(found) => match found.flag {
                HelpOnly::Help => return Ok(Command::Help(Help::Of("completions"))),
            },
            Item::Word(word) if shell.is_none() => shell = Some(word),
            Item::Word(word) => return Err(unexpected_word("completions", word)),
        }
    }
    let Some(shell) = shell else {
        return Err(Error::Usage("pace completions needs a shell: bash, zsh or fish".into()));
    };
    let script = match shell.to_str() {
        Some("bash") => bash::script(),
        Some("zsh") => zsh::script(),
        Some("fish") => fish::script(),
        _ => {
            return Err(Error::Usage(format!(
                "unknown shell '{}' (shells: bash, zsh, fish)",
                shell.to_string_lossy()
            )))
        }
    };
    Ok(Command::Generated(script))
}

/// The words that select a command.
fn command_words() -> Vec<&'static str> {
    commands::subcommands().iter().map(|command| command.name).collect()
}

/// An option's description on one line (its other short names are
/// completed, not said).
fn description(option: &Described) -> String {
    option.help.join(" ")
}

/// The words a value or operand of `kind` may be, if they are a list.
fn choices(kind: Kind) -> Option<Vec<&'static str>> {
    match kind {
        Kind::Choice(words) => Some(words.to_vec()),
        Kind::Command => Some(command_words()),
        Kind::Text | Kind::File => None,
    }
}

/// Every name of an option: `-v`, `-V`, `--version`.
fn names(option: &Described) -> Vec<String> {
    let shorts = option.shorts().map(|short| format!("-{short}"));
    shorts.chain([format!("--{}", option.long)]).collect()
}

#[cfg(test)]
mod tests {
    use super::super::parse as parse_line;
    use super::*;

    fn run(line: &[&str]) -> Result<Command, Error> {
        parse_line(line.iter().map(OsString::from))
    }

    #[test]
    fn one_script_per_shell() {
        for shell in commands::SHELLS {
            let Ok(Command::Generated(script)) = run(&["completions", shell]) else {
                panic!("{shell}")
            };
            // Every option of every command is in each script.
            for command in commands::all() {
                for option in &command.options {
                    assert!(script.contains(option.long), "{shell}: --{}", option.long);
                }
            }
        }
    }

    #[test]
    fn mistakes() {
        let message = |line: &[&str]| match run(line) {
            Err(Error::Usage(message)) => message,
            _ => panic!("{line:?} accepted"),
        };
        assert_eq!(message(&["completions"]), "pace completions needs a shell: bash, zsh or fish");
        assert_eq!(
            message(&["completions", "tcsh"]),
            "unknown shell 'tcsh' (shells: bash, zsh, fish)"
        );
        assert_eq!(
            message(&["completions", "bash", "zsh"]),
            "unexpected argument 'zsh' (try 'pace completions --help')"
        );
        assert!(matches!(run(&["completions", "-h"]), Ok(Command::Help(_))));
    }
}
