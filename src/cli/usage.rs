//! The `--help` texts, laid out like wrk's usage (reference section 1.7: an
//! option column, `<N>`/`<T>` placeholders, the two lines on units) but
//! listing pace's options, its commands and its exit codes. The option
//! lines are made from the commands' option tables ([`super::commands`]).

use super::commands::{self, CommandDoc};
use super::options::Described;

/// What each exit status means, in short, for `pace -h` (the man page
/// says it in full).
const EXIT_STATUS: &[(&str, &[&str])] = &[
    ("0", &["The run completed"]),
    ("1", &["Bad command line"]),
    (
        "2",
        &[
            "Target unusable (resolve, connect, TLS)",
            "or a file cannot be read, written or",
            "merged",
        ],
    ),
    ("3", &["The Lua script failed"]),
    (
        "4",
        &[
            "An --slo objective failed, or pace compare's",
            "--max-regression (the report is printed;",
            "2, 3, 130, 143 take precedence)",
        ],
    ),
    (
        "5",
        &[
            "--strict: the run cannot be trusted (the",
            "report's Validity: line says why; 4, 2, 3,",
            "130, 143 take precedence)",
        ],
    ),
    ("130, 143", &["Interrupted by SIGINT, SIGTERM", "(the report so far is printed)"]),
];

/// `pace -h`.
pub(super) fn main() -> String {
    let bench = commands::benchmark();
    let subcommands = commands::subcommands();
    let mut text = format!("Usage: {}\n", bench.synopsis());
    for command in &subcommands {
        text += &format!("       {}\n", command.synopsis());
    }
    text += &options(&bench);
    text += &notes(&bench);
    text += "\n  Commands:\n";
    for command in &subcommands {
        text += &item(command.name, command.summary, bench.column);
    }
    text += "\n  Exit status:\n";
    for (status, lines) in EXIT_STATUS {
        text += &item(status, lines, bench.column);
    }
    text
}

/// `pace COMMAND -h`.
pub(super) fn command(command: &CommandDoc) -> String {
    let mut text = format!("Usage: {}\n", command.synopsis());
    for line in command.about {
        text += &format!("  {line}\n");
    }
    text + &options(command) + &notes(command)
}

/// `  Options:` and a line or more per option, in groups.
fn options(command: &CommandDoc) -> String {
    let mut text = String::from("  Options:\n");
    for option in &command.options {
        match option.group {
            Some("") => text.push('\n'),
            Some(heading) => text += &format!("\n  {heading}\n"),
            None => {}
        }
        text += &item(&option_column(option, command.column), &help_lines(option), command.column);
    }
    text
}

/// `-c, --connections     <N>`: the short name (or room for one), the long
/// name and the placeholder, right-aligned to end before `column`.
fn option_column(option: &Described, column: usize) -> String {
    let short = match option.short {
        Some(short) => format!("-{short}, "),
        None => "    ".to_string(),
    };
    let names = format!("{short}--{}", option.long);
    match option.value {
        Some(value) if value.optional => format!("{names}[={}]", value.placeholder),
        Some(value) => {
            let placeholder = format!("<{}>", value.placeholder);
            // The item's four-space indent is not in `names`.
            let width = column.saturating_sub(4 + names.len()).max(placeholder.len() + 1);
            format!("{names}{placeholder:>width$}")
        }
        None => names,
    }
}

/// The description, with the further short names said last.
fn help_lines(option: &Described) -> Vec<String> {
    let mut lines: Vec<String> = option.help.iter().map(|line| line.to_string()).collect();
    if !option.aliases.is_empty() {
        let aliases: Vec<String> = option.aliases.iter().map(|alias| format!("-{alias}")).collect();
        let also = format!("(also {})", aliases.join(", "));
        match lines.last_mut() {
            Some(last) => *last = format!("{last} {also}"),
            None => lines.push(also),
        }
    }
    lines
}

/// `label` indented, then `lines`, the first after it, all from `column` + 2
/// (a label too long for the column has a line of its own).
fn item(label: &str, lines: &[impl AsRef<str>], column: usize) -> String {
    let width = column + 2 - 4;
    let mut text = String::new();
    let label = match label.len() + 2 > width {
        true => {
            text += &format!("    {label}\n");
            ""
        }
        false => label,
    };
    for (i, line) in lines.iter().enumerate() {
        let label = if i == 0 { label } else { "" };
        text += &format!("    {label:<width$}{}\n", line.as_ref());
    }
    text
}

fn notes(command: &CommandDoc) -> String {
    if command.notes.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = command.notes.iter().map(|line| format!("  {line}\n")).collect();
    format!("\n{}", lines.concat())
}

/// `pace NAME -h`, for a command of [`commands::subcommands`].
pub(super) fn of(name: &str) -> String {
    match commands::find(name) {
        Some(found) => command(&found),
        None => unreachable!("pace {name} is not in commands::subcommands"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::options::Kind;
    use super::*;

    fn every_text() -> Vec<String> {
        let subcommands = commands::subcommands();
        std::iter::once(main()).chain(subcommands.iter().map(command)).collect()
    }

    /// Every option of a command's table is on a line of its own in its
    /// help, the names in the column and the description after them (or,
    /// for names too long for the column, on the next line).
    #[test]
    fn usage_lists_every_option() {
        for (command, text) in commands::all().iter().zip(every_text()) {
            let lines: Vec<&str> = text.lines().collect();
            for option in &command.options {
                let start = option_column(option, command.column);
                let at = lines.iter().position(|line| {
                    line.starts_with(&format!("    {start} ")) || *line == format!("    {start}")
                });
                let at =
                    at.unwrap_or_else(|| panic!("{}: --{} missing", command.name, option.long));
                let alone = lines[at] == format!("    {start}");
                let line = if alone { lines[at + 1] } else { lines[at] };
                assert_eq!(&line[command.column + 2..], help_lines(option)[0]);
                assert_eq!(line.as_bytes()[command.column + 1], b' ', "{line}");
                assert_eq!(line.as_bytes()[command.column], b' ', "{line}");
                assert!(!option.help.is_empty(), "--{} has no help", option.long);
            }
        }
    }

    #[test]
    fn usage_fits_in_80_columns() {
        for text in every_text() {
            for line in text.lines() {
                assert!(line.chars().count() <= 80, "{line}");
                assert_eq!(line.trim_end(), line, "trailing space: {line:?}");
            }
        }
    }

    /// wrk's lines keep their shape: `-c, --connections <N>` in a column,
    /// the placeholder right-aligned against the descriptions.
    #[test]
    fn wrk_layout() {
        let text = main();
        for line in [
            "Usage: pace <options> <url> [script args...]",
            "    -c, --connections     <N>  Connections to keep open (default 10)",
            "    -B, --batch_latency        Measure latency of whole",
            "                               batches of pipelined ops",
            "        --tls-server-name <N>  Name to send (SNI) and verify instead",
            "        --timeseries[=T]       Print requests per period of T",
            "    -v, --version              Print version details (also -V)",
            "  Requests (without -s; a script makes its own):",
            "    130, 143                   Interrupted by SIGINT, SIGTERM",
        ] {
            assert!(text.lines().any(|shown| shown == line), "{line}");
        }
        let serve = of("serve");
        assert!(serve.contains("\n    -p, --port         <N>  Port to listen on (default 8080, "));
    }

    /// The defaults `pace serve -h` states are the server's.
    #[test]
    fn serve_defaults_are_the_servers() {
        let defaults = crate::serve::ServeOptions::default();
        let text = of("serve");
        for said in [
            format!("(default {}, 0 = any free port)", defaults.bind.port()),
            format!("(default {};", defaults.bind.ip()),
            format!("Number of threads to use (default {})", defaults.threads),
            format!("size in bytes (default {})", defaults.body_size),
        ] {
            assert!(text.contains(&said), "{said}");
        }
    }

    #[test]
    fn every_command_has_help_and_a_help_option() {
        for command in commands::subcommands() {
            assert!(!command.summary.is_empty(), "{}", command.name);
            let has_help = command.options.iter().any(|option| option.long == "help");
            assert!(has_help, "{}", command.name);
        }
        // Operands that name commands name these.
        assert!(commands::subcommands().iter().any(|c| c.operands == Some(Kind::Command)));
    }
}
