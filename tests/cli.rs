//! The command line end to end: the real `pace` binary, its exit codes, and
//! what it prints for each mistake. Nothing here needs more network than the
//! loopback interface.

use std::net::TcpListener;
use std::process::{Command, Output, Stdio};

/// Runs `pace` with `args`. RUST_BACKTRACE is forced on so that a panic
/// anywhere would show up as a backtrace in stderr and fail the checks.
fn pace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pace"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run pace")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts `pace args` fails with `code`, printing nothing on stdout and
/// exactly one line on stderr, `pace: ...` containing `mentions`.
fn assert_fails(args: &[&str], code: i32, mentions: &str) {
    let out = pace(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: stderr {stderr:?}");
    assert_eq!(text(&out.stdout), "", "{args:?}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
    assert!(stderr.starts_with("pace: ") && stderr.ends_with('\n'), "{args:?}: {stderr:?}");
    assert!(stderr.contains(mentions), "{args:?}: {stderr:?} lacks {mentions:?}");
}

/// A loopback URL on which nothing listens: any mistaken run fails fast.
fn closed_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}/")
}

#[test]
fn unknown_option() {
    assert_fails(&["--foo", &closed_url()], 1, "unknown option '--foo'");
    assert_fails(&["-x", &closed_url()], 1, "unknown option '-x'");
}

/// A near miss names the option meant, after the usual start.
#[test]
fn unknown_option_suggests_the_nearest() {
    let url = closed_url();
    let out = pace(&["--duraton", "1s", &url]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "pace: unknown option '--duraton' (did you mean --duration?)\n");
    assert_fails(&["serve", "--prot", "0"], 1, "unknown option '--prot' (did you mean --port?)");
    assert_fails(&["merge", "--jsno", "a.json"], 1, "(did you mean --json?)");
    let far = pace(&["--foo", &url]);
    assert!(!text(&far.stderr).contains("did you mean"), "{}", text(&far.stderr));
}

#[test]
fn ambiguous_option() {
    assert_fails(&["--t", "2", &closed_url()], 1, "'--threads' '--timeout'");
    assert_fails(&["--st", "1s:9", &closed_url()], 1, "possibilities: '--stages' '--start-at'");
    // wrk's abbreviations keep their meaning though pace's options share
    // them: --s is --script (not --slo, --seed, --shard, ...).
    assert_fails(&["--s", "/nonexistent.lua", &closed_url()], 2, "cannot read script");
}

#[test]
fn missing_value() {
    assert_fails(&[&closed_url(), "-c"], 1, "option '-c' needs a value");
}

#[test]
fn bad_numbers() {
    assert_fails(&["-c", "abc", &closed_url()], 1, "'-c': 'abc' is not a number");
    assert_fails(&["-d", "5x", &closed_url()], 1, "'-d': '5x' is not a duration");
    assert_fails(&["--timeout=soon", &closed_url()], 1, "'--timeout'");
}

#[test]
fn bad_urls() {
    assert_fails(&["localhost:8080/"], 1, "invalid URL: localhost:8080/");
    assert_fails(&["http://"], 1, "invalid URL: http://");
}

#[test]
fn a_timeseries_slot_written_apart_says_how_to_write_it() {
    let url = closed_url();
    assert_fails(&["--timeseries", "500ms", &url], 1, "write --timeseries=500ms");
}

/// One rule for the files a command line names: one that cannot be read
/// is a setup error (exit 2: the command line is right, the machine
/// fails it), said before anything runs, whichever option names it.
#[test]
fn a_file_that_cannot_be_read_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    let url = closed_url();
    assert_fails(&["-s", missing, &url], 2, &format!("cannot read script {missing}: "));
    assert_fails(&["--body-file", missing, &url], 2, &format!("cannot read --body-file {missing}"));
    assert_fails(&["--targets", missing], 2, &format!("cannot read --targets file {missing}"));
}

/// A `--start-at` that has passed is refused in plain words before
/// anything is printed (the header included), though a server listens.
#[test]
fn a_start_in_the_past_is_refused_before_the_header() {
    let listening = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listening.local_addr().unwrap());
    let args = ["--start-at", "1970-01-01T00:00:05Z", "-d1s", &url];
    assert_fails(&args, 1, "pace: --start-at 1970-01-01T00:00:05Z is in the past (");
    let said = text(&pace(&args).stderr);
    assert!(said.contains(" years ago): give a time ahead"), "{said}");
    assert!(said.contains("--start-at $(( $(date +%s) + 30 ))"), "{said}");
}

#[test]
fn missing_url() {
    assert_fails(&[], 1, "missing URL (try 'pace --help')");
    assert_fails(&["-t2", "-c", "4"], 1, "missing URL");
}

#[test]
fn range_checks() {
    let url = closed_url();
    assert_fails(
        &["-c", "1", "-t", "4", &url],
        1,
        "number of connections (1) must be >= threads (4)",
    );
    assert_fails(&["-t", "0", &url], 1, "-t/--threads must be at least 1");
    assert_fails(&["-R", "0", &url], 1, "-R/--rate must be greater than 0");
    assert_fails(&["-D", "9", &url], 1, "-D/--digits must be between 1 and 5");
    assert_fails(&["-d", "0s", &url], 1, "-d/--duration must be greater than 0");
    assert_fails(&["-T", "0", &url], 1, "-T/--timeout must be greater than 0");
}

#[test]
fn bad_headers() {
    assert_fails(&["-H", "NoColon", &closed_url()], 1, "invalid header 'NoColon'");
}

#[test]
fn unresolvable_host() {
    // RFC 6761: names under .invalid never resolve, so no DNS server is needed.
    assert_fails(&["http://nonexistent.invalid/"], 2, "unable to resolve nonexistent.invalid:80");
}

#[test]
fn nothing_listening() {
    let url = closed_url();
    assert_fails(&["-d", "1s", &url], 2, "unable to connect to 127.0.0.1:");
}

#[test]
fn help() {
    for args in [&["-h"][..], &["--help"], &["help"], &["-t2", "--help"]] {
        let out = pace(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let stdout = text(&out.stdout);
        assert!(stdout.starts_with("Usage: pace <options> <url>"), "{stdout}");
        assert!(stdout.contains("--connections") && stdout.contains("Exit status"));
        assert_eq!(text(&out.stderr), "");
    }
    let out = pace(&["serve", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("Usage: pace serve"));
}

#[test]
fn version() {
    for flag in ["-v", "-V", "--version", "--vers"] {
        let out = pace(&[flag]);
        assert_eq!(out.status.code(), Some(0));
        let expected = format!("pace {} [epoll]", env!("CARGO_PKG_VERSION"));
        assert!(text(&out.stdout).starts_with(&expected), "{}", text(&out.stdout));
        assert_eq!(text(&out.stdout).lines().count(), 1);
        assert_eq!(text(&out.stderr), "");
    }
}

/// `-v` (or `-V`) with a URL prints the version and goes on, as wrk does.
#[test]
fn version_then_run() {
    for flag in ["-v", "-V"] {
        let out = pace(&[flag, &closed_url()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stdout).starts_with("pace "));
        assert!(text(&out.stderr).contains("unable to connect"));
    }
}

/// The commands that print a generated text, and their mistakes.
#[test]
fn completions_and_man() {
    for args in [&["completions", "bash"][..], &["completions", "zsh"], &["completions", "fish"]] {
        let out = pace(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(text(&out.stdout).contains("connections"), "{args:?}");
        assert_eq!(text(&out.stderr), "");
    }
    let out = pace(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains(".TH PACE 1"));
    for (args, usage) in [
        (&["completions", "-h"][..], "Usage: pace completions bash|zsh|fish"),
        (&["help", "man"], "Usage: pace man"),
        (&["man", "--help"], "Usage: pace man"),
    ] {
        let out = pace(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(text(&out.stdout).starts_with(usage), "{args:?}");
    }
    assert_fails(&["completions"], 1, "pace completions needs a shell: bash, zsh or fish");
    assert_fails(&["completions", "csh"], 1, "unknown shell 'csh' (shells: bash, zsh, fish)");
    assert_fails(&["man", "extra"], 1, "unexpected argument 'extra'");
}

/// `pace -h | head -0`: a reader that went away is no error.
#[test]
fn closed_stdout() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_pace"))
        .arg("-h")
        .env("RUST_BACKTRACE", "1")
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn subcommand_errors() {
    assert_fails(&["serve", "--stall-at", "1s"], 1, "--stall-at needs --stall-for");
    assert_fails(&["serve", "--port", "http"], 1, "'--port': 'http' is not a port number");
    assert_fails(&["demo", "extra"], 1, "unexpected argument 'extra'");
    assert_fails(&["help", "bogus"], 1, "unknown command 'bogus'");
}

/// Every file, socket and stream error is said in the C library's words,
/// without Rust's `(os error N)`: files that are directories for each
/// option that reads one, a full stdout, an address not on this machine.
#[test]
fn system_errors_are_said_without_os_error_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_str().unwrap();
    let url = closed_url();
    let https = url.replace("http://", "https://");
    let cases: [&[&str]; 11] = [
        &["-s", dir, &url],
        &["--body-file", dir, &url],
        &["--targets", dir],
        &["--cacert", dir, &https],
        &["--cert", dir, &https],
        &["-o", dir, &url],
        &["merge", dir],
        &["merge", &format!("{dir}/missing.hlog")],
        &["report", dir],
        &["compare", dir, dir],
        &["serve", "--bind", "192.0.2.1", "--port", "0"],
    ];
    for args in cases {
        let out = pace(args);
        let stderr = text(&out.stderr);
        assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}: {stderr:?}");
        assert!(stderr.starts_with("pace: "), "{args:?}: {stderr:?}");
        assert!(!stderr.contains("os error"), "{args:?}: {stderr:?}");
    }
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pace")).arg("-h").stdout(full).output().unwrap();
    assert_eq!(
        text(&out.stderr),
        "pace: cannot write to stdout: No space left on device\n",
        "{:?}",
        out.status
    );
}
