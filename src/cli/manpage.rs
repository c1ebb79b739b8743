//! `pace man`: the manual page, in roff (man macros), made from the
//! commands' option tables and texts as `-h` is ([`super::commands`]),
//! and the reference sections and examples of [`sections`]: the whole
//! manual, for a pace installed without its README. `docs/pace.1` is a
//! copy of its output, checked by a test.

mod sections;

use std::ffi::OsString;

use super::commands::{self, CommandDoc};
use super::options::{unexpected_word, Described, HelpOnly, Item, Options, HELP_ONLY};
use super::{Command, Help};
use crate::error::Error;
use sections::{Part, Section, EXAMPLES, EXIT_STATUS, SECTIONS};

/// What the page says before the options, after the package's description.
const DESCRIPTION: &[&str] = &[
    "pace speaks the command line of wrk and wrk2, and it measures latency \
     honestly: in rate mode (-R) every request has an intended send time taken \
     from a plan, and its latency counts from that moment, so a server stall \
     can never hide behind a load generator that waits for it (coordinated \
     omission). Sends are paced to well under a millisecond, and pace reports \
     how late its own sends were (the schedule lag).",
    "Long options may be abbreviated to any unambiguous prefix, and to any \
     prefix wrk, wrk2 and their forks accepted; options may follow the URL; \
     -- passes the words after it to the Lua script.",
];

/// Parses the words after `pace man`.
pub(super) fn parse(args: Vec<OsString>) -> Result<Command, Error> {
    let mut options = Options::new(args, HELP_ONLY);
    if let Some(item) = options.next()? {
        return match item {
            Item::Option(found) => match found.flag {
                HelpOnly::Help => Ok(Command::Help(Help::Of("man"))),
            },
            Item::Word(word) => Err(unexpected_word("man", word)),
        };
    }
    Ok(Command::Generated(page()))
}

/// The whole page.
pub(super) fn page() -> String {
    let bench = commands::benchmark();
    let subcommands = commands::subcommands();
    let mut page = format!(
        ".\\\" The manual page of pace, made by `pace man` from the option tables\n\
         .\\\" pace -h is made from. Edit those, not this.\n\
         .TH PACE 1 \"\" \"pace {}\" \"User Commands\"\n\
         .nh\n.ad l\n\
         .SH NAME\npace \\- {}\n.SH SYNOPSIS\n.nf\n",
        env!("CARGO_PKG_VERSION"),
        text(env!("CARGO_PKG_DESCRIPTION"))
    );
    for command in std::iter::once(&bench).chain(&subcommands) {
        let line = format!("\\fB{}\\fR {}", text(&name_words(command)), text(command.usage));
        page += &format!("{}\n", line.trim_end());
    }
    page += ".fi\n.SH DESCRIPTION\n";
    page +=
        &DESCRIPTION.iter().map(|paragraph| text(paragraph)).collect::<Vec<_>>().join("\n.PP\n");
    page += "\n.SH OPTIONS\n";
    page += &options(&bench);
    page += &notes(&bench);
    page += ".SH COMMANDS\n";
    for command in &subcommands {
        let heading = format!("{} {}", text(&name_words(command)), text(command.usage));
        page += &format!(".SS \"{}\"\n", heading.trim_end());
        page += &about(command);
        page += &options(command);
        page += &notes(command);
    }
    for section in SECTIONS {
        page += &reference(section);
    }
    page += ".SH \"EXIT STATUS\"\n";
    for (status, meaning) in EXIT_STATUS {
        page += &format!(".TP\n.B {status}\n{}\n", text(meaning));
    }
    page += ".SH EXAMPLES\n";
    for (what, lines) in EXAMPLES {
        page += &format!(".PP\n{}\n{}", text(what), command_lines(lines));
    }
    page += ".SH \"SEE ALSO\"\n";
    page += &text(
        "wrk (https://github.com/wg/wrk), wrk2 (https://github.com/giltene/wrk2). \
         The JSON of -e is described in docs/json.md of pace's sources.",
    );
    page + "\n"
}

/// A reference section: its paragraphs, terms and command lines.
fn reference(section: &Section) -> String {
    let mut roff = format!(".SH \"{}\"\n", section.title);
    for part in section.parts {
        roff += &match part {
            Part::Text(paragraph) => format!(".PP\n{}\n", text(paragraph)),
            Part::Item(term, meaning) => {
                format!(".TP\n\\fB{}\\fR\n{}\n", text(term), text(meaning))
            }
            Part::Lines(lines) => format!(".PP\n{}", command_lines(lines)),
        };
    }
    roff
}

/// Lines shown as typed, indented.
fn command_lines(lines: &[&str]) -> String {
    let lines: Vec<String> = lines.iter().map(|line| text(line)).collect();
    format!(".RS\n.nf\n{}\n.fi\n.RE\n", lines.join("\n"))
}

/// `pace serve`.
fn name_words(command: &CommandDoc) -> String {
    if command.name.is_empty() {
        "pace".to_string()
    } else {
        format!("pace {}", command.name)
    }
}

/// A command's paragraph; its indented lines are examples, kept as lines.
fn about(command: &CommandDoc) -> String {
    let lines = if command.about.is_empty() { command.summary } else { command.about };
    let mut roff = String::from(".PP\n");
    let mut paragraph: Vec<&str> = Vec::new();
    let mut example = false;
    for line in lines {
        let indented = line.starts_with("  ");
        if indented != example && !paragraph.is_empty() {
            roff += &block(&paragraph, example);
            paragraph.clear();
        }
        example = indented;
        paragraph.push(line.trim());
    }
    roff + &block(&paragraph, example)
}

fn block(lines: &[&str], example: bool) -> String {
    if example {
        command_lines(lines)
    } else {
        format!("{}\n", text(&lines.join(" ")))
    }
}

/// A `.TP` per option, a subsection per group with a heading.
fn options(command: &CommandDoc) -> String {
    let mut roff = String::new();
    for option in &command.options {
        if let Some(heading) = option.group.filter(|heading| !heading.is_empty()) {
            roff += &format!(".SS \"{}\"\n", text(heading.trim_end_matches(':')));
        }
        roff += &format!(".TP\n{}\n{}\n", option_names(option), text(&option.help.join(" ")));
    }
    roff
}

/// `\fB\-c\fR, \fB\-\-connections\fR \fIN\fR`.
fn option_names(option: &Described) -> String {
    let shorts = option.shorts().map(|short| format!("-{short}"));
    let names: Vec<String> = shorts
        .chain([format!("--{}", option.long)])
        .map(|name| format!("\\fB{}\\fR", text(&name)))
        .collect();
    let value = match option.value {
        Some(value) if value.optional => format!("[=\\fI{}\\fR]", text(value.placeholder)),
        Some(value) => format!(" \\fI{}\\fR", text(value.placeholder)),
        None => String::new(),
    };
    format!("{}{value}", names.join(", "))
}

fn notes(command: &CommandDoc) -> String {
    if command.notes.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = command.notes.iter().map(|line| text(line)).collect();
    format!(".PP\n{}\n", lines.join("\n.br\n"))
}

/// `plain` as roff text: backslashes escaped, the dashes of options
/// (`-c`, `--unix-socket`, `-`) as `\-` so they print and copy as
/// hyphen-minus, and a line that would start with a control character
/// made text.
fn text(plain: &str) -> String {
    let mut roff = String::new();
    // Inside a word that starts with a dash (`--unix-socket`).
    let mut option = false;
    let mut previous = ' ';
    for c in plain.chars() {
        if c.is_whitespace() {
            option = false;
        } else if c == '-' && " ([\"'/|=,".contains(previous) {
            option = true;
        }
        match c {
            '\\' => roff += "\\e",
            '-' if option => roff += "\\-",
            _ => roff.push(c),
        }
        previous = c;
    }
    if roff.starts_with(['.', '\'']) {
        roff.insert_str(0, "\\&");
    }
    roff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_text() {
        assert_eq!(
            text("-c, --unix-socket (e.g. -4 x)"),
            "\\-c, \\-\\-unix\\-socket (e.g. \\-4 x)"
        );
        assert_eq!(text("self-contained, sub-second"), "self-contained, sub-second");
        assert_eq!(text("'p99<10ms' a\\b"), "\\&'p99<10ms' a\\eb");
        assert_eq!(text("man -l -"), "man \\-l \\-");
    }

    /// What an installed pace has no README for is in the manual, and no
    /// help text sends the reader to the README.
    #[test]
    fn the_manual_is_self_sufficient() {
        let page = page();
        for heading in [
            ".SH \"LUA SCRIPTS\"",
            ".SH \"TARGETS FILE\"",
            ".SH \"SLO OBJECTIVES\"",
            ".SH \"REGRESSION LIMITS\"",
            ".SH \"WARNINGS\"",
            ".SH \"VALIDITY\"",
            ".SH \"EXIT STATUS\"",
            ".SH EXAMPLES",
        ] {
            assert!(page.contains(&format!("{heading}\n")), "no {heading}");
        }
        use crate::report::diagnose::Code;
        let codes = [
            Code::ServerFailed,
            Code::ServerStalled,
            Code::TooFewConnections,
            Code::GeneratorCpu,
            Code::Unsent,
        ];
        use crate::report::validity::CauseCode;
        let causes = [
            CauseCode::ScheduleNotKept,
            CauseCode::SlotsHeldIdle,
            CauseCode::ArrivalsOffPlan,
            CauseCode::NotStationary,
            CauseCode::WarmupTooShort,
        ];
        let names = codes.iter().map(|c| c.name()).chain(causes.iter().map(|c| c.name()));
        for name in names {
            let item = format!(".TP\n\\fB{}\\fR\n", text(name));
            assert!(page.contains(&item), "no {item}");
        }
        assert!(!page.contains("README"));
        for command in commands::all() {
            assert!(
                !super::super::usage::command(&command).contains("README"),
                "pace {} -h",
                command.name
            );
        }
    }

    #[test]
    fn every_option_of_every_command_is_on_the_page() {
        let page = page();
        for command in commands::all() {
            for option in &command.options {
                assert!(page.contains(&format!("\\fB{}\\fR", text(&format!("--{}", option.long)))));
            }
        }
        assert!(page.contains("\\fB\\-v\\fR, \\fB\\-V\\fR, \\fB\\-\\-version\\fR"));
    }
}
