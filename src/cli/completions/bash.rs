//! The bash script: one function, `_pace`, that finds the command (the
//! first word, if it names one), then completes the value of the option
//! before the cursor, an option, or an operand. It needs only bash (not
//! the bash-completion package).

use std::fmt::Write;

use super::{choices, command_words, names, CommandDoc, Kind};

pub(super) fn script() -> String {
    let mut branches = String::new();
    for command in super::commands::all() {
        branches += &branch(&command);
    }
    let words = command_words().join(" ");
    let selectors = command_words().join(" | ");
    format!(
        r#"# bash completion for pace, made by `pace completions bash` from the option
# tables pace -h is made from. Load it with
#   source <(pace completions bash)
# or install it as ~/.local/share/bash-completion/completions/pace.

_pace() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev="" pre=""
    if ((COMP_CWORD > 0)); then
        prev=${{COMP_WORDS[COMP_CWORD - 1]}}
    fi
    # --option=value: bash splits it at '=' (COMP_WORDBREAKS), or not.
    if [[ $cur == = ]]; then
        cur=""
    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
        prev=${{COMP_WORDS[COMP_CWORD - 2]}}
    elif [[ $cur == --*=* ]]; then
        prev=${{cur%%=*}}
        pre=${{cur%%=*}}=
        cur=${{cur#*=}}
    fi
    local command="" options="" operands="" operand_files=""
    if ((COMP_CWORD > 1)); then
        case ${{COMP_WORDS[1]}} in
        {selectors}) command=${{COMP_WORDS[1]}} ;;
        esac
    fi
    case $command in
{branches}    esac
    if [[ $cur == -* ]]; then
        _pace_words "$options"
    elif [[ -z $command ]] && ((COMP_CWORD == 1)); then
        _pace_words "{words}"
    elif [[ -n $operand_files ]]; then
        _pace_files
    elif [[ -n $operands ]]; then
        _pace_words "$operands"
    fi
}}

# Uses the caller's cur and pre (bash's dynamic scope).
_pace_words() {{
    mapfile -t COMPREPLY < <(compgen -P "$pre" -W "$1" -- "$cur")
}}

_pace_files() {{
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -P "$pre" -f -- "$cur")
}}

complete -F _pace pace
"#
    )
}

/// `serve)`: completes the value of the option before the cursor, then
/// sets the options and operands of the command.
fn branch(command: &CommandDoc) -> String {
    let pattern = if command.name.is_empty() { "\"\"" } else { command.name };
    // The options whose values complete as files, as words, or not at all.
    let mut values = String::new();
    let mut files = Vec::new();
    let mut text_values = Vec::new();
    for option in &command.options {
        let Some(value) = option.value.filter(|value| !value.optional) else { continue };
        let names = names(option).join(" | ");
        match (value.kind, choices(value.kind)) {
            (Kind::File, _) => files.push(names),
            (_, Some(words)) => {
                let words = words.join(" ");
                let _ = writeln!(values, "        {names}) _pace_words \"{words}\"; return ;;");
            }
            (_, None) => text_values.push(names),
        }
    }
    if !files.is_empty() {
        let _ = writeln!(values, "        {}) _pace_files; return ;;", files.join(" | "));
    }
    if !text_values.is_empty() {
        let _ = writeln!(values, "        {}) return ;;", text_values.join(" | "));
    }
    let mut text = format!("    {pattern})\n");
    if !values.is_empty() {
        text += &format!("        case $prev in\n{values}        esac\n");
    }
    let options: Vec<String> = command.options.iter().flat_map(names).collect();
    let _ = writeln!(text, "        options=\"{}\"", options.join(" "));
    match command.operands.map(|kind| (kind, choices(kind))) {
        Some((Kind::File, _)) => text += "        operand_files=yes\n",
        Some((_, Some(words))) => {
            let _ = writeln!(text, "        operands=\"{}\"", words.join(" "));
        }
        Some((_, None)) | None => {}
    }
    text + "        ;;\n"
}
