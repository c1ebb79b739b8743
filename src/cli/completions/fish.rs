//! The fish script: one `complete` line per option of each command, under
//! a condition on the command (`__pace_command`: the first word, if it
//! names one, else `bench`), and the command words themselves.

use std::fmt::Write;

use super::{choices, command_words, description, CommandDoc, Described, Kind};

pub(super) fn script() -> String {
    let mut text = format!(
        "# fish completion for pace, made by `pace completions fish` from the option
# tables pace -h is made from. Install it as
# ~/.config/fish/completions/pace.fish, or load it with:
#   pace completions fish | source

function __pace_command
    set -l words (commandline -opc)
    if set -q words[2]; and contains -- $words[2] {}
        echo $words[2]
    else
        echo bench
    end
end

# Nothing completes as a file unless said below.
complete -c pace -f
",
        command_words().join(" ")
    );
    let first_word = "'test (count (commandline -opc)) -eq 1'";
    for command in super::commands::subcommands() {
        let summary = quote(&command.summary.join(" "));
        let _ = writeln!(text, "complete -c pace -n {first_word} -a {} -d {summary}", command.name);
    }
    for command in super::commands::all() {
        text += &lines(&command);
    }
    text
}

/// The `complete` lines of one command's options and operands.
fn lines(command: &CommandDoc) -> String {
    let name = if command.name.is_empty() { "bench" } else { command.name };
    let condition = quote(&format!("test (__pace_command) = {name}"));
    let mut text = format!("\n# pace {name}\n");
    for option in &command.options {
        let _ = writeln!(text, "complete -c pace -n {condition}{}", option_arguments(option));
    }
    match command.operands.map(|kind| (kind, choices(kind))) {
        Some((Kind::File, _)) => {
            let _ = writeln!(text, "complete -c pace -n {condition} -F");
        }
        Some((_, Some(words))) => {
            let _ =
                writeln!(text, "complete -c pace -n {condition} -a {}", quote(&words.join(" ")));
        }
        Some((_, None)) | None => {}
    }
    text
}

/// ` -s c -l connections -x -d '...'`.
fn option_arguments(option: &Described) -> String {
    let mut text = String::new();
    for short in option.shorts() {
        let _ = write!(text, " -s {short}");
    }
    let _ = write!(text, " -l {}", option.long);
    // An optional value is attached only: fish completes the name alone.
    match option
        .value
        .filter(|value| !value.optional)
        .map(|value| (value.kind, choices(value.kind)))
    {
        Some((Kind::File, _)) => text += " -r -F",
        Some((_, Some(words))) => {
            let _ = write!(text, " -x -a {}", quote(&words.join(" ")));
        }
        Some((_, None)) => text += " -x",
        None => {}
    }
    let _ = write!(text, " -d {}", quote(&description(option)));
    text
}

/// `text` in single quotes for fish.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', r"\\").replace('\'', r"\'"))
}
