//! The live progress, end to end: the real binary on a pseudo-terminal
//! (made by Python's `pty` module) against the built-in server. The
//! progress shows there and is erased before the report; it never shows
//! when stderr is piped, with `--no-progress`, or in `-e`'s stdout.
//!
//! What a terminal would display is rebuilt from the bytes pace wrote
//! ([`screen`]), so "the report is intact" means what a person sees.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{default_server, load_lock, pace, url};

/// Runs argv[3:] with stdin, stdout and stderr on a new pseudo-terminal
/// and copies everything written to it to our stdout. argv[1]: a file for
/// the child's stdout instead ("-": the terminal). argv[2]: "interrupt"
/// sends SIGINT once the progress has been drawn. Exits with the child's
/// status.
const ON_A_PTY: &str = r#"
import os, pty, signal, sys
stdout_file, when = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    if stdout_file != "-":
        os.dup2(os.open(stdout_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.execv(sys.argv[3], sys.argv[3:])
out = bytearray()
interrupted = False
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out += data
    if when == "interrupt" and not interrupted and b"requests" in out:
        os.kill(pid, signal.SIGINT)
        interrupted = True
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// What a run on a terminal left behind.
struct OnTerminal {
    /// Everything written to the terminal, escape sequences included.
    bytes: String,
    code: Option<i32>,
}

/// Runs pace with `args` on a pseudo-terminal; with `stdout_file`, its
/// stdout goes there instead; with `interrupt`, Ctrl-C once the progress
/// shows.
fn on_terminal(args: &[&str], stdout_file: Option<&str>, interrupt: bool) -> OnTerminal {
    let output = Command::new("python3")
        .args(["-c", ON_A_PTY, stdout_file.unwrap_or("-")])
        .arg(if interrupt { "interrupt" } else { "run" })
        .arg(env!("CARGO_BIN_EXE_pace"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run python3 (the tests need it for a pseudo-terminal)");
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
    OnTerminal {
        bytes: String::from_utf8_lossy(&output.stdout).into_owned(),
        code: output.status.code(),
    }
}

/// The lines a terminal displays after receiving `bytes`: text, `\r`,
/// `\n`, and the sequences the progress uses (cursor up, erase to the end
/// of the screen). Any other escape sequence fails the test.
fn screen(bytes: &str) -> Vec<String> {
    let mut lines: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = bytes.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                col = 0;
                if row == lines.len() {
                    lines.push(Vec::new());
                }
            }
            '\x1b' => {
                assert_eq!(chars.next(), Some('['), "unexpected escape in {bytes:?}");
                let mut number = String::new();
                while let Some(d) = chars.next_if(char::is_ascii_digit) {
                    number.push(d);
                }
                match chars.next() {
                    Some('A') => row = row.saturating_sub(number.parse().unwrap_or(1)),
                    Some('J') => {
                        lines.truncate(row + 1);
                        lines[row].truncate(col);
                    }
                    other => panic!("unexpected escape sequence ending {other:?} in {bytes:?}"),
                }
            }
            c => {
                let line = &mut lines[row];
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.resize(col, ' ');
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    lines.into_iter().map(|line| line.into_iter().collect()).collect()
}

/// A line of the progress: its bar, or its second line.
fn is_progress(line: &str) -> bool {
    line.starts_with("[=")
        || line.starts_with("[>")
        || line.starts_with("latency p50")
        || line.starts_with("STALLED")
}

#[test]
fn the_progress_shows_on_a_terminal_and_leaves_the_report_intact() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = on_terminal(&["-t1", "-c2", "-d1s", "-R200", &target], None, false);
    assert_eq!(run.code, Some(0), "{}", run.bytes);
    // Drawn, and redrawn: 200 ms periods in a 1 s run.
    assert!(run.bytes.contains(" / 1.0s  "), "{}", run.bytes);
    assert!(run.bytes.contains("/s of 200/s"), "{}", run.bytes);
    assert!(run.bytes.matches("latency p50 ").count() >= 3, "{}", run.bytes);
    assert!(run.bytes.contains("\x1b[1A\r\x1b[J"), "{:?}", run.bytes);
    let screen = screen(&run.bytes);
    assert!(!screen.iter().any(|line| is_progress(line)), "{screen:#?}");
    // Exactly the report of a run without progress: header, then the
    // Thread Stats table right after it.
    assert_eq!(screen[0], format!("Running 1s test @ {target}"));
    assert_eq!(screen[1], "  1 threads and 2 connections");
    assert_eq!(screen[2], "  Thread Stats   Avg      Stdev     Max   +/- Stdev");
    assert!(screen.iter().any(|line| line.starts_with("Requests/sec: ")), "{screen:#?}");
    assert!(screen.iter().any(|line| line.starts_with("Schedule lag: ")), "{screen:#?}");
}

/// Before the measured part there are no periods to show: the warm-up
/// says how much of it is left, then the progress takes over, and both
/// are gone before the report.
#[test]
fn the_warm_up_shows_before_the_progress() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let args = ["-t1", "-c2", "-d1s", "--warmup", "1s", "-R200", &target];
    let run = on_terminal(&args, None, false);
    assert_eq!(run.code, Some(0), "{}", run.bytes);
    let warming = run.bytes.find("warming up: ").unwrap_or_else(|| panic!("{}", run.bytes));
    assert!(run.bytes.contains(" of 1.0s left (not counted)"), "{}", run.bytes);
    let progress = run.bytes.find("latency p50 ").unwrap_or_else(|| panic!("{}", run.bytes));
    assert!(warming < progress, "{}", run.bytes);
    let screen = screen(&run.bytes);
    assert!(!screen.iter().any(|line| line.contains("warming up")), "{screen:#?}");
    assert!(!screen.iter().any(|line| is_progress(line)), "{screen:#?}");
    assert_eq!(screen[1], "  1 threads and 2 connections", "{screen:#?}");
}

#[test]
fn period_reports_on_the_terminal_are_not_mixed_with_the_progress() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = on_terminal(&["-t1", "-c2", "-d2s", "-p", "500ms", &target], None, false);
    assert_eq!(run.code, Some(0), "{}", run.bytes);
    assert!(run.bytes.contains("latency p50 "), "{}", run.bytes);
    let screen = screen(&run.bytes);
    assert!(!screen.iter().any(|line| is_progress(line)), "{screen:#?}");
    let ends = screen.iter().filter(|line| *line == "=== REPORT END ===").count();
    assert!(ends >= 4, "{screen:#?}");
    // Every report starts where the previous one ended (a period's with
    // its window).
    for (i, line) in screen.iter().enumerate().skip(2) {
        if line.starts_with("  Thread Stats") {
            let window = screen[i - 1].starts_with("[") && screen[i - 1].ends_with("s]");
            let before = &screen[i - 1 - usize::from(window)];
            assert!(
                before == "=== REPORT END ===" || before.ends_with(" connections"),
                "{i}: {before:?}\n{screen:#?}"
            );
        }
    }
}

/// While the server answers nothing, the latency so far (of what was
/// answered) does not show the stall: the progress says how long nothing
/// was answered and how long the oldest request has waited.
#[test]
fn a_stall_shows_as_it_happens() {
    let _load = load_lock();
    let stall =
        pace::serve::Stall { at: Duration::from_millis(300), length: Duration::from_secs(2) };
    let server =
        common::serve(pace::serve::ServeOptions { stall: Some(stall), ..common::serve_options() });
    let target = url(server.addr(), "/");
    let run = on_terminal(&["-t1", "-c50", "-d3s", "-R100", &target], None, false);
    assert_eq!(run.code, Some(0), "{}", run.bytes);
    assert!(run.bytes.contains("STALLED: nothing answered for "), "{}", run.bytes);
    assert!(run.bytes.contains(", oldest waiting "), "{}", run.bytes);
    // Before and after the stall, the usual line.
    assert!(run.bytes.contains("latency p50 "), "{}", run.bytes);
    let screen = screen(&run.bytes);
    assert!(!screen.iter().any(|line| is_progress(line)), "{screen:#?}");
}

#[test]
fn ctrl_c_erases_the_progress_and_prints_the_report() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = on_terminal(&["-t1", "-c2", "-d20s", "-R100", &target], None, true);
    assert_eq!(run.code, Some(130), "{}", run.bytes);
    let screen = screen(&run.bytes);
    assert!(!screen.iter().any(|line| is_progress(line)), "{screen:#?}");
    assert!(screen[2].starts_with("  Thread Stats"), "{screen:#?}");
    assert!(screen.iter().any(|line| line.starts_with("Requests/sec: ")), "{screen:#?}");
    assert!(screen.iter().any(|line| line.starts_with("pace: run stopped early by SIGINT")));
}

#[test]
fn no_progress_turns_it_off_on_a_terminal() {
    let _load = load_lock();
    let server = default_server();
    let run = on_terminal(
        &["-t1", "-c2", "-d1s", "--no-progress", &url(server.addr(), "/")],
        None,
        false,
    );
    assert_eq!(run.code, Some(0), "{}", run.bytes);
    assert!(!run.bytes.contains('\x1b'), "{:?}", run.bytes);
    assert!(!run.bytes.contains("latency p50"), "{}", run.bytes);
}

#[test]
fn never_when_stderr_is_piped() {
    let _load = load_lock();
    let server = default_server();
    let run =
        pace(&["-t1", "-c2", "-d1s", "-R100", &url(server.addr(), "/")], Duration::from_secs(20));
    run.assert_ok();
    for text in [&run.stdout, &run.stderr] {
        assert!(!text.contains('\x1b') && !text.contains("latency p50"), "{run}");
    }
}

#[test]
fn json_on_stdout_stays_json_while_the_terminal_shows_the_progress() {
    let _load = load_lock();
    let server = default_server();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stdout.json");
    let stdout = json.to_str().unwrap();
    let target = url(server.addr(), "/");
    let run =
        on_terminal(&["-t1", "-c2", "-d1s", "-e", "-p", "500ms", &target], Some(stdout), false);
    assert_eq!(run.code, Some(0), "{}", run.bytes);
    assert!(run.bytes.contains("latency p50 "), "{}", run.bytes);
    // The terminal (stderr) is left clean.
    assert!(screen(&run.bytes).iter().all(|line| line.is_empty()), "{:?}", run.bytes);
    let written = std::fs::read_to_string(&json).unwrap();
    let kinds: Vec<String> = written
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["report"].to_string())
        .collect();
    assert!(kinds.len() >= 3 && kinds.last().unwrap() == "\"final\"", "{written}");
}
