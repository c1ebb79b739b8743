//! Every file pace reads has a stated bound (issue 33, item 12): a file
//! larger than its bound is refused with exit code 2, naming the option,
//! the file and the bound, before it is read whole; an endless device
//! (`/dev/zero`) is cut at the bound; a named pipe nobody writes to is
//! refused at once instead of waited for.
//!
//! pace runs here with its address space limited (`RLIMIT_AS`), so that a
//! pace that read a whole file (or `/dev/zero` until memory runs out)
//! fails the test rather than the machine. The bounds are those of
//! README.md's "Files pace reads".

mod common;

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::default_server;

/// More than any bound but the interval log's (1 GiB), less than what a
/// whole 1 GiB file would need.
const ADDRESS_SPACE: u64 = 1 << 30;
/// A refusal is immediate; this is for a loaded machine. A pace that
/// waits for a pipe's writer is killed past it.
const LIMIT: Duration = Duration::from_secs(20);
const GIB: u64 = 1 << 30;

/// How a limited run of pace ended.
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    wall: Duration,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?} after {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code, self.wall, self.stdout, self.stderr
        )
    }
}

/// Runs `pace args` with its address space limited to `ADDRESS_SPACE`,
/// killing it past [`LIMIT`].
fn pace_limited(args: &[&str]) -> Ended {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pace"));
    command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: setrlimit and prctl are async-signal-safe and touch only the
    // child.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: ADDRESS_SPACE, rlim_max: ADDRESS_SPACE };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("start pace");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    });
    let stderr = thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        thread::sleep(Duration::from_millis(5));
    };
    Ended {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        wall: started.elapsed(),
    }
}

/// A file of `size` bytes that takes no room (it reads as zeros), after
/// `start`.
fn sparse(dir: &Path, name: &str, start: &[u8], size: u64) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, start).unwrap();
    File::options().write(true).open(&path).unwrap().set_len(size).unwrap();
    path
}

/// Refused with exit code 2 and exactly this message, at once.
fn assert_refused(run: &Ended, message: &str) {
    assert_eq!(run.code, Some(2), "{run}");
    assert_eq!(run.stderr, format!("pace: {message}\n"), "{run}");
    assert!(run.wall < LIMIT, "{run}");
    assert_eq!(run.stdout, "", "{run}");
}

fn too_large(option: &str, path: &Path, bound: &str) -> String {
    format!(
        "cannot read {option} {}: larger than {bound}, the most pace reads of such a file",
        path.display()
    )
}

#[test]
fn endless_devices_are_cut_at_the_bound() {
    let url = "https://127.0.0.1:1/";
    let zero = Path::new("/dev/zero");
    let run = pace_limited(&["--cacert", "/dev/zero", url]);
    assert_refused(&run, &too_large("--cacert", zero, "4 MiB"));
    let run = pace_limited(&["--cert", "/dev/zero", url]);
    assert_refused(&run, &too_large("--cert", zero, "1 MiB"));
    // The key is read once the certificate is.
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let certified = rcgen::generate_simple_self_signed(vec!["client.test".to_string()]).unwrap();
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    let run = pace_limited(&["--cert", cert.to_str().unwrap(), "--key", "/dev/zero", url]);
    assert_refused(&run, &too_large("--key", zero, "1 MiB"));
    let server = default_server();
    let url = format!("http://{}/", server.addr());
    let run = pace_limited(&["-s", "/dev/zero", &url]);
    assert_refused(&run, &too_large("script", Path::new("/dev/zero"), "16 MiB"));
    let run =
        pace_limited(&["--metrics-push", &url, "--metrics-push-token-file", "/dev/zero", &url]);
    let said = too_large("--metrics-push-token-file", Path::new("/dev/zero"), "64 KiB");
    assert_refused(&run, &said);
}

#[test]
fn large_files_are_refused_from_their_size() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:1/";
    let body = sparse(dir.path(), "body", b"", GIB);
    let run = pace_limited(&["--body-file", body.to_str().unwrap(), url]);
    assert_refused(&run, &too_large("--body-file", &body, "256 MiB"));
    let targets = sparse(dir.path(), "targets", b"GET http://127.0.0.1:1/\n", GIB);
    let run = pace_limited(&["--targets", targets.to_str().unwrap()]);
    assert_refused(&run, &too_large("--targets file", &targets, "256 MiB"));
    let script = sparse(dir.path(), "script.lua", b"-- a script\n", GIB);
    let run = pace_limited(&["-s", script.to_str().unwrap(), url]);
    assert_refused(&run, &too_large("script", &script, "16 MiB"));
    let ca = sparse(dir.path(), "ca.pem", b"-----BEGIN CERTIFICATE-----\n", GIB);
    let run = pace_limited(&["--cacert", ca.to_str().unwrap(), "https://127.0.0.1:1/"]);
    assert_refused(&run, &too_large("--cacert", &ca, "4 MiB"));
}

#[test]
fn a_body_file_named_in_targets_is_bounded_too() {
    let dir = tempfile::tempdir().unwrap();
    let body = sparse(dir.path(), "big.json", b"{", GIB);
    let targets = dir.path().join("targets");
    std::fs::write(&targets, "POST http://127.0.0.1:1/\n@big.json\n").unwrap();
    let run = pace_limited(&["--targets", targets.to_str().unwrap()]);
    assert_eq!(run.code, Some(2), "{run}");
    let said = too_large("body file", &body, "256 MiB");
    assert!(run.stderr.contains(&said), "{said}\n{run}");
}

#[test]
fn an_interval_log_to_merge_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let log = sparse(dir.path(), "big.hlog", b"#[StartTime: 1 (seconds since epoch)]\n", GIB + 1);
    let run = pace_limited(&["merge", log.to_str().unwrap(), log.to_str().unwrap()]);
    let said = format!(
        "cannot read {}: larger than 1 GiB, the most pace reads of such a file",
        log.display()
    );
    assert_refused(&run, &said);
}

/// A named pipe at `dir/name`.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    path
}

#[test]
fn a_named_pipe_nobody_writes_to_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = fifo(dir.path(), "body");
    let run = pace_limited(&["--body-file", pipe.to_str().unwrap(), "http://127.0.0.1:1/"]);
    let said = format!(
        "cannot read --body-file {}: a named pipe that no program writes to",
        pipe.display()
    );
    assert_refused(&run, &said);
}

#[test]
fn a_pipe_with_a_writer_is_read() {
    let server = default_server();
    let url = format!("http://{}/", server.addr());
    let dir = tempfile::tempdir().unwrap();
    let pipe = fifo(dir.path(), "body");
    // The writer holds the pipe open (for reading too, so that opening it
    // does not wait for pace), writes the body, waits for pace to have
    // read it all and closes: pace then reads the end of the body.
    let mut held = File::options().read(true).write(true).open(&pipe).unwrap();
    held.write_all(b"from a pipe").unwrap();
    let writer = thread::spawn(move || {
        let deadline = Instant::now() + LIMIT;
        while unread(&held) > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        unread(&held) == 0
    });
    let body = pipe.to_str().unwrap();
    let run = pace_limited(&["-t1", "-c1", "-n1", "-m", "POST", "--body-file", body, &url]);
    assert!(writer.join().unwrap(), "pace never read the body\n{run}");
    assert_eq!(run.code, Some(0), "{run}");
    assert!(run.stdout.contains("1 requests in"), "{run}");
    assert_eq!(server.stats().requests, 1, "{run}");
}

/// The bytes written to the pipe of `file` that nobody has read yet.
fn unread(file: &File) -> i32 {
    use std::os::fd::AsRawFd;
    let mut unread: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int to the pointer given.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::FIONREAD, &mut unread) };
    assert_eq!(rc, 0, "FIONREAD");
    unread
}
