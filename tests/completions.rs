//! `pace completions` and `pace man` with the real shells and man: the
//! scripts load, and complete what `-h` lists; the page renders without a
//! warning; `docs/pace.1` is what `pace man` prints (the drift check).
//! bash is required; zsh, fish, man-db and groff-base are installed by CI
//! (skipped locally when missing).

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{installed, pace};

const LIMIT: Duration = Duration::from_secs(30);

fn generated(args: &[&str]) -> String {
    let run = pace(args, LIMIT);
    run.assert_ok();
    assert_eq!(run.stderr, "", "{run}");
    run.stdout
}

/// Runs `program args` in `dir` with `stdin` on its input.
fn run_in(dir: &Path, program: &str, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("PATH", path_with_pace())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("{program}: {err}"));
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// PATH with the directory of the pace under test first.
fn path_with_pace() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_pace")).parent().unwrap().to_str().unwrap().to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ----- bash ----------------------------------------------------------------------

/// What `_pace` offers for the command line `words`, the cursor in the
/// last one, as bash would call it (`=` is a word of its own, as bash
/// splits `--arrival=p` with the default COMP_WORDBREAKS).
fn bash_completes(dir: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
    let script = format!(
        "source <(pace completions bash) || exit 9
COMP_WORDS=({})
COMP_CWORD={}
COMP_LINE=\"${{COMP_WORDS[*]}}\"
COMP_POINT=${{#COMP_LINE}}
_pace
printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        quoted.join(" "),
        words.len() - 1
    );
    let out = run_in(dir, "bash", &["--norc", "--noprofile", "-s"], &script);
    assert!(out.status.success(), "{words:?}: {}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "{words:?}");
    let mut offered: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    offered.retain(|word| !word.is_empty());
    offered.sort();
    offered
}

#[test]
fn bash_loads_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        "bash",
        &["--norc", "--noprofile", "-c", "source <(pace completions bash) && complete -p pace"],
        "",
    );
    assert_eq!(text(&out.stderr), "");
    assert_eq!(text(&out.stdout), "complete -F _pace pace\n");
}

#[test]
fn bash_completes_options_values_commands_and_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.lua"), "").unwrap();
    std::fs::write(dir.path().join("run.json"), "").unwrap();
    let path = dir.path();
    let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    assert_eq!(bash_completes(path, &["pace", "--dur"]), words(&["--duration"]));
    assert_eq!(
        bash_completes(path, &["pace", "-t2", "--thr"]),
        words(&["--thread-timeseries", "--threads"])
    );
    assert_eq!(bash_completes(path, &["pace", "--arrival", ""]), words(&["constant", "poisson"]));
    assert_eq!(bash_completes(path, &["pace", "--arrival", "=", "p"]), words(&["poisson"]));
    assert_eq!(bash_completes(path, &["pace", "--targets-order", "r"]), words(&["random"]));
    assert_eq!(bash_completes(path, &["pace", "-s", "scr"]), words(&["script.lua"]));
    assert_eq!(bash_completes(path, &["pace", "--html", ""]), words(&["run.json", "script.lua"]));
    // A value to type: nothing offered.
    assert_eq!(bash_completes(path, &["pace", "-c", ""]), words(&[]));
    // -V is there, and the version's other names.
    assert_eq!(bash_completes(path, &["pace", "-V"]), words(&["-V"]));
    // The first word: the commands.
    let commands = bash_completes(path, &["pace", ""]);
    for command in ["serve", "demo", "merge", "report", "completions", "man", "help"] {
        assert!(commands.contains(&command.to_string()), "{commands:?}");
    }
    // Each command its own options and operands.
    assert_eq!(
        bash_completes(path, &["pace", "serve", "--st"]),
        words(&["--stall-at", "--stall-for"])
    );
    assert_eq!(bash_completes(path, &["pace", "serve", "--dur"]), words(&[]));
    assert_eq!(bash_completes(path, &["pace", "merge", "-L", "r"]), words(&["run.json"]));
    assert_eq!(bash_completes(path, &["pace", "report", "--h"]), words(&["--help", "--html"]));
    assert_eq!(bash_completes(path, &["pace", "completions", ""]), words(&["bash", "fish", "zsh"]));
    assert_eq!(bash_completes(path, &["pace", "help", "re"]), words(&["report"]));
    assert_eq!(
        bash_completes(path, &["pace", "demo", "--"]),
        words(&["--help", "--http2", "--http3"])
    );
}

#[test]
fn shellcheck_finds_nothing_in_the_bash_script() {
    if !installed("/usr/bin/shellcheck", "shellcheck", "completion script lint") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = generated(&["completions", "bash"]);
    let out = run_in(dir.path(), "shellcheck", &["--shell=bash", "-"], &script);
    assert!(out.status.success(), "{}", text(&out.stdout));
}

// ----- zsh and fish --------------------------------------------------------------

#[test]
fn zsh_loads_the_script() {
    if !installed("/usr/bin/zsh", "zsh", "zsh completion") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = "autoload -Uz compinit && compinit -u -d \"$PWD/zcompdump\" || exit 9
source <(pace completions zsh) || exit 8
print -r -- $_comps[pace]
whence -w _pace_bench _pace_serve _pace_completions";
    let out = run_in(dir.path(), "zsh", &["-f", "-s"], script);
    assert_eq!(text(&out.stderr), "");
    assert_eq!(
        text(&out.stdout),
        "_pace\n_pace_bench: function\n_pace_serve: function\n_pace_completions: function\n"
    );
}

/// zsh completes in its line editor only: an interactive zsh in a
/// pseudo-terminal (zpty) is sent `pace --arr<TAB>`, and lists the one
/// option with its description; then `pace serve --stall-<TAB>` lists the
/// two options of serve that start so. Every specification of the
/// command is read on the way (a bad one would print an `_arguments`
/// error instead).
#[test]
fn zsh_completes_in_its_line_editor() {
    if !installed("/usr/bin/zsh", "zsh", "zsh completion") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let driver = r#"
zmodload zsh/zpty || exit 9
zpty shell 'zsh -f -i'
zpty -w shell 'autoload -Uz compinit; compinit -u -d "$PWD/zcompdump"; source <(pace completions zsh)'
seen=""
# Reads what the terminal shows until it has $1, for at most 20 s.
expect() {
  local chunk
  integer deadline=$(( SECONDS + 20 ))
  while (( SECONDS < deadline )); do
    if zpty -rt shell chunk; then seen+=$chunk; else sleep 0.05; fi
    [[ $seen == *$1* ]] && return 0
  done
  print -r -- "no '$1' in: $seen"
  exit 1
}
zpty -w -n shell $'pace --arr\t'
expect '--arrival  -- constant (even, default) or poisson'
zpty -w -n shell $'\C-u'
zpty -w -n shell $'pace serve --stall-\t'
expect '--stall-for  -- ...for this long (both or neither)'
expect '--stall-at   -- Stop answering this long after start...'
[[ $seen == *_arguments* || $seen == *"not found"* ]] && { print -r -- "$seen"; exit 2 }
zpty -d shell
print ok
"#;
    let out = run_in(dir.path(), "zsh", &["-f", "-s"], driver);
    assert_eq!(text(&out.stdout).lines().last(), Some("ok"), "{}", text(&out.stdout));
}

#[test]
fn fish_completes() {
    if !installed("/usr/bin/fish", "fish", "fish completion") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = "pace completions fish | source; or exit 9
complete -C 'pace --dur'
echo ==
complete -C 'pace --arrival '
echo ==
complete -C 'pace serve --stall-f'
echo ==
complete -C 'pace completions '";
    let out = run_in(dir.path(), "fish", &["--no-config", "-c", script], "");
    assert_eq!(text(&out.stderr), "");
    let expected = "--duration\tDuration of test (default 10s)
==
constant\tconstant (even, default) or poisson
poisson\tconstant (even, default) or poisson
==
--stall-for\t...for this long (both or neither)
==
bash
fish
zsh
";
    assert_eq!(text(&out.stdout), expected);
}

// ----- the man page --------------------------------------------------------------

const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/pace.1");

/// The checked-in page is the binary's: a change to an option table that
/// is not copied to docs/pace.1 fails here.
#[test]
fn docs_page_is_what_pace_man_prints() {
    let page = generated(&["man"]);
    let checked_in = std::fs::read_to_string(PAGE).unwrap();
    assert!(
        page == checked_in,
        "docs/pace.1 is not what `pace man` prints: run\n  \
         cargo run --release -- man > docs/pace.1"
    );
}

#[test]
fn man_renders_the_page_without_warnings() {
    if !installed("/usr/bin/man", "man-db", "man page")
        || !installed("/usr/bin/groff", "groff-base", "man page")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("man")
        .args(["--warnings", "-l", PAGE])
        .current_dir(dir.path())
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        // man-db's seccomp sandbox cannot start in some containers.
        .env("MAN_DISABLE_SECCOMP", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "", "man --warnings");
    let shown = text(&out.stdout);
    for words in ["--connections N", "pace serve <options>", "EXIT STATUS", "-v, -V, --version"] {
        assert!(shown.contains(words), "{words} not in:\n{shown}");
    }
    // groff's own check, every warning on.
    let out = run_in(dir.path(), "groff", &["-ww", "-man", "-z", PAGE], "");
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "", "groff -ww");
}
