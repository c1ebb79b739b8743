//! The zsh script: `_pace` completes the command word, then hands the
//! rest to the command's `_arguments` specification (one per option name,
//! with its description, placeholder and what its value completes as).
//! It loads from `$fpath` (the `#compdef` line) or when sourced.

use std::fmt::Write;

use super::{choices, command_words, description, CommandDoc, Described, Kind};

pub(super) fn script() -> String {
    let mut text = String::from(
        "#compdef pace
# zsh completion for pace, made by `pace completions zsh` from the option
# tables pace -h is made from. Install it as _pace in a directory of
# $fpath, or load it with: source <(pace completions zsh)

_pace() {
  if (( CURRENT == 2 )) && [[ $PREFIX != -* ]]; then
    local -a commands
    commands=(
",
    );
    let subcommands = super::commands::subcommands();
    for command in &subcommands {
        let summary = command.summary.join(" ");
        let _ = writeln!(text, "      {}", quote(&format!("{}:{summary}", command.name)));
    }
    let _ = write!(
        text,
        "    )
    _describe -t commands 'pace command' commands
    return
  fi
  case $words[2] in
    ({})
      local command=$words[2]
      shift words
      (( CURRENT-- ))
      _pace_$command
      ;;
    (*)
      _pace_bench
      ;;
  esac
}}
",
        command_words().join("|")
    );
    for command in super::commands::all() {
        text += &function(&command);
    }
    text += r#"
if [[ $funcstack[1] == _pace ]]; then
  _pace "$@"
else
  compdef _pace pace
fi
"#;
    text
}

/// `_pace_serve() { _arguments ... }`.
fn function(command: &CommandDoc) -> String {
    let name = if command.name.is_empty() { "bench" } else { command.name };
    let mut specs: Vec<String> = command.options.iter().flat_map(option_specs).collect();
    match command.operands {
        Some(kind @ (Kind::Choice(_) | Kind::Command)) => {
            specs.push(format!("1:{}:{}", message(kind), action(kind)))
        }
        Some(kind) => specs.push(format!("*:{}:{}", message(kind), action(kind))),
        None => {}
    }
    let specs: Vec<String> = specs.iter().map(|spec| format!(" \\\n    {}", quote(spec))).collect();
    format!("\n_pace_{name}() {{\n  _arguments -s -S{}\n}}\n", specs.concat())
}

/// One specification per name of the option: `*-c+[...]:N: ` and
/// `*--connections=[...]:N: ` (`*`: it may be repeated, the last wins).
fn option_specs(option: &Described) -> Vec<String> {
    let help = format!("[{}]", escape_brackets(&description(option)));
    let argument = |optional: bool| match option.value {
        Some(value) => {
            let colons = if optional { "::" } else { ":" };
            let placeholder = value.placeholder.replace(':', "\\:");
            format!("{colons}{placeholder}:{}", action(value.kind))
        }
        None => String::new(),
    };
    let mut specs: Vec<String> = option
        .shorts()
        .map(|short| {
            let attached = if option.value.is_some() { "+" } else { "" };
            format!("*-{short}{attached}{help}{}", argument(false))
        })
        .collect();
    let long = match option.value {
        Some(value) if value.optional => format!("*--{}=-{help}{}", option.long, argument(true)),
        Some(_) => format!("*--{}={help}{}", option.long, argument(false)),
        None => format!("*--{}{help}", option.long),
    };
    specs.push(long);
    specs
}

/// What a value of `kind` completes as: `_files`, `(a b)`, or nothing
/// (a space: the placeholder is shown instead).
fn action(kind: Kind) -> String {
    match (kind, choices(kind)) {
        (Kind::File, _) => "_files".to_string(),
        (_, Some(words)) => format!("({})", words.join(" ")),
        (_, None) => " ".to_string(),
    }
}

fn message(kind: Kind) -> &'static str {
    match kind {
        Kind::Text => "argument",
        Kind::File => "file",
        Kind::Choice(_) => "word",
        Kind::Command => "command",
    }
}

fn escape_brackets(text: &str) -> String {
    text.replace('\\', "\\\\").replace('[', "\\[").replace(']', "\\]")
}

/// `text` in single quotes for zsh.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
