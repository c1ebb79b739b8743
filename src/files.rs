//! Reading the files the command line names (`--cacert`, `-s`,
//! `--targets`, ...) with a stated bound on what is read: a file is read
//! whole before it is checked, so without a bound `--cacert /dev/zero`
//! reads until memory runs out, and a 1 GB file named by mistake is held
//! in memory before it is refused.
//!
//! [`read_bounded`] reads at most the bound plus one byte (`Read::take`):
//! a regular file larger than the bound is refused from its size, before a
//! byte is read; anything else (a pipe, `/dev/zero`, a character device)
//! is refused as soon as the byte past the bound arrives. Each kind of
//! file has its bound ([`Limit`]), stated in README.md and in the manual
//! (a test compares).
//!
//! A FIFO is opened without waiting for a writer (`O_NONBLOCK`), so a named
//! pipe nothing writes to is refused at once rather than hanging pace. A
//! pipe that has a writer (`--body-file <(make-body)`, a FIFO another
//! program holds open) is read as its writer writes, until it closes, up to
//! the same bound; a writer that neither writes nor closes is waited for,
//! as `cat` would (Ctrl-C ends pace: the files are read before pace
//! handles signals itself).
//!
//! Saved runs (`pace merge`, `report`, `compare`) are read a line at a time
//! with their own bounds (`merge/saved.rs`).

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{io_reason, Error};

/// A kind of file and the most pace reads of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// What the file is, as messages name it (`--cacert`, `script`).
    pub what: &'static str,
    /// The most bytes read; one more and the file is refused.
    pub bytes: u64,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// `--cacert`: a CA bundle (a system's whole bundle is about 200 KiB).
pub const CACERT: Limit = Limit { what: "--cacert", bytes: 4 * MIB };
/// `--cert`: a certificate and its chain (and maybe its key), a few KiB.
pub const CERT: Limit = Limit { what: "--cert", bytes: MIB };
/// `--key`: a private key, a few KiB.
pub const KEY: Limit = Limit { what: "--key", bytes: MIB };
/// `--body-file`: one request body, held in memory for the whole run.
pub const BODY_FILE: Limit = Limit { what: "--body-file", bytes: 256 * MIB };
/// `--targets`: the requests, all parsed and held before the run.
pub const TARGETS: Limit = Limit { what: "--targets file", bytes: 256 * MIB };
/// A body file named by an `@path` line of `--targets` (each one).
pub const TARGETS_BODY: Limit = Limit { what: "body file", bytes: 256 * MIB };
/// `-s`: a Lua script (the same source is loaded in every thread's state).
pub const SCRIPT: Limit = Limit { what: "script", bytes: 16 * MIB };
/// An HdrHistogram interval log given to `pace merge` (as a saved run: a
/// day of `-p 1s` periods is some hundreds of MiB).
pub const HLOG: Limit = Limit { what: "interval log", bytes: GIB };
/// `--metrics-push-token-file`: a bearer token (a JWT is a few KiB).
pub const TOKEN: Limit = Limit { what: "--metrics-push-token-file", bytes: 64 * KIB };

/// Why a file could not be read.
#[derive(Debug)]
pub enum Unreadable {
    /// The system's reason.
    Io(io::Error),
    /// More than the bound (the bound).
    TooLarge(u64),
    /// A named pipe that no program has open for writing.
    NoWriter,
}

impl Unreadable {
    /// The reason, in words.
    pub fn reason(&self) -> String {
        match self {
            Unreadable::Io(e) => io_reason(e),
            Unreadable::TooLarge(bytes) => {
                format!("larger than {}, the most pace reads of such a file", size(*bytes))
            }
            Unreadable::NoWriter => "a named pipe that no program writes to".to_string(),
        }
    }
}

/// The bytes of `path`, at most `limit.bytes` of them; otherwise
/// `Error::Setup` (exit 2) as `cannot read <what> <path>: <reason>`.
pub fn read_bounded(path: &Path, limit: Limit) -> Result<Vec<u8>, Error> {
    read_at_most(path, limit.bytes).map_err(|why| {
        Error::Setup(format!("cannot read {} {}: {}", limit.what, path.display(), why.reason()))
    })
}

/// The bytes of `path` if there are at most `bound` of them.
pub fn read_at_most(path: &Path, bound: u64) -> Result<Vec<u8>, Unreadable> {
    // Opening a FIFO for reading waits for a writer; O_NONBLOCK does not
    // (and changes nothing for other files, which never block on open).
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(Unreadable::Io)?;
    let meta = file.metadata().map_err(Unreadable::Io)?;
    if meta.is_file() && meta.len() > bound {
        return Err(Unreadable::TooLarge(bound));
    }
    let mut bytes = Vec::new();
    if meta.file_type().is_fifo() {
        first_of_pipe(&file, &mut bytes)?;
    }
    set_blocking(&file).map_err(Unreadable::Io)?;
    // The size of a regular file is a good first guess, never more.
    let expected = if meta.is_file() { meta.len() } else { 0 };
    bytes.reserve(expected.min(bound) as usize);
    let left = (bound + 1).saturating_sub(bytes.len() as u64);
    (&file).take(left).read_to_end(&mut bytes).map_err(Unreadable::Io)?;
    if bytes.len() as u64 > bound {
        return Err(Unreadable::TooLarge(bound));
    }
    Ok(bytes)
}

/// At most the first `n` bytes of `path`, without waiting for a pipe's
/// writer (what is not there yet is not read): enough to tell what a file
/// is.
pub fn start_of(path: &Path, n: u64) -> io::Result<Vec<u8>> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let mut start = Vec::new();
    match (&file).take(n).read_to_end(&mut start) {
        Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
        _ => Ok(start),
    }
}

/// The first read of a FIFO, still non-blocking: nothing to read and no
/// writer is a named pipe nothing writes to (a writer that has not
/// written yet is waited for by the blocking reads that follow).
fn first_of_pipe(mut file: &File, bytes: &mut Vec<u8>) -> Result<(), Unreadable> {
    let mut first = [0u8; 4096];
    loop {
        return match file.read(&mut first) {
            Ok(0) => Err(Unreadable::NoWriter),
            Ok(n) => {
                bytes.extend_from_slice(&first[..n]);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(Unreadable::Io(e)),
        };
    }
}

/// Clears the O_NONBLOCK the file was opened with.
fn set_blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a file descriptor `file` owns, with flag values
    // the kernel defines; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A bound in words: `64 KiB`, `4 MiB`, `1 GiB` (bounds are whole numbers
/// of these).
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= GIB && b % GIB == 0 => format!("{} GiB", b / GIB),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_file_within_its_bound_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ok");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_at_most(&path, 10).unwrap(), b"0123456789");
        assert_eq!(read_at_most(&path, 100).unwrap(), b"0123456789");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(read_at_most(&empty, 0).unwrap(), b"");
    }

    #[test]
    fn a_byte_more_is_refused_naming_the_option_the_file_and_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, b"0123456789").unwrap();
        assert!(matches!(read_at_most(&path, 9), Err(Unreadable::TooLarge(9))));
        let limit = Limit { what: "--cacert", bytes: 9 };
        match read_bounded(&path, limit) {
            Err(Error::Setup(message)) => assert_eq!(
                message,
                format!(
                    "cannot read --cacert {}: larger than 9 bytes, the most pace reads of such \
                     a file",
                    path.display()
                )
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_huge_sparse_file_is_refused_from_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        File::create(&path).unwrap().set_len(1 << 40).unwrap();
        let started = Instant::now();
        assert!(matches!(read_at_most(&path, MIB), Err(Unreadable::TooLarge(MIB))));
        assert!(started.elapsed() < crate::timing::stretched(Duration::from_secs(5)));
    }

    #[test]
    fn an_endless_device_is_cut_at_the_bound() {
        let limit = Limit { what: "--cacert", bytes: MIB };
        match read_bounded(Path::new("/dev/zero"), limit) {
            Err(Error::Setup(message)) => assert_eq!(
                message,
                "cannot read --cacert /dev/zero: larger than 1 MiB, the most pace reads of such \
                 a file"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unreadable_files_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        match read_bounded(&missing, SCRIPT) {
            Err(Error::Setup(message)) => assert_eq!(
                message,
                format!("cannot read script {}: No such file or directory", missing.display())
            ),
            other => panic!("{other:?}"),
        }
        let why = read_at_most(dir.path(), 10).unwrap_err().reason();
        assert_eq!(why, "Is a directory");
    }

    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("fifo");
        let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        path
    }

    #[test]
    fn a_named_pipe_without_a_writer_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let started = Instant::now();
        let why = read_at_most(&path, MIB).unwrap_err();
        assert!(matches!(why, Unreadable::NoWriter), "{why:?}");
        assert_eq!(why.reason(), "a named pipe that no program writes to");
        assert!(started.elapsed() < crate::timing::stretched(Duration::from_secs(5)));
    }

    /// Reads the FIFO at `path` with `bound` on a thread while a writer
    /// writes `pieces` to it, a little apart, then closes it.
    fn written_late(path: &Path, bound: u64, pieces: &[&[u8]]) -> Result<Vec<u8>, Unreadable> {
        // Holds the pipe, so that what is written stays in it whenever the
        // reader opens it.
        let _held =
            OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).unwrap();
        let mut writer = OpenOptions::new().write(true).open(path).unwrap();
        let reader = std::thread::spawn({
            let path = path.to_path_buf();
            move || read_at_most(&path, bound)
        });
        for piece in pieces {
            std::thread::sleep(Duration::from_millis(100));
            writer.write_all(piece).unwrap();
        }
        drop(writer);
        reader.join().unwrap()
    }

    #[test]
    fn a_pipe_is_read_as_its_writer_writes_up_to_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        assert_eq!(written_late(&path, 10, &[b"bo", b"dy"]).unwrap(), b"body");
        let cut = written_late(&path, 3, &[b"bo", b"dy"]);
        assert!(matches!(cut, Err(Unreadable::TooLarge(3))), "{cut:?}");
    }

    #[test]
    fn sizes_in_words() {
        assert_eq!(size(64 * KIB), "64 KiB");
        assert_eq!(size(4 * MIB), "4 MiB");
        assert_eq!(size(GIB), "1 GiB");
        assert_eq!(size(1000), "1000 bytes");
    }

    /// README.md's table of bounds and the manual's FILES section say
    /// each bound as it is.
    #[test]
    fn the_bounds_are_documented_as_they_are() {
        let readme = include_str!("../README.md");
        let manual = include_str!("../docs/pace.1").replace("\\-", "-");
        for (limit, row, term) in [
            (CACERT, "| `--cacert FILE` |", "--cacert"),
            (CERT, "| `--cert FILE` |", "--cert, --key"),
            (KEY, "| `--key FILE` |", "--cert, --key"),
            (BODY_FILE, "| `--body-file FILE` |", "--body-file"),
            (TARGETS, "| `--targets FILE` |", "--targets"),
            (TARGETS_BODY, "| each `@file` body named in `--targets` |", "--targets"),
            (SCRIPT, "| `-s FILE` (what the script loads", "-s"),
            (TOKEN, "| `--metrics-push-token-file FILE` |", "--metrics-push-token-file"),
            (HLOG, "| an interval log given to `pace merge` |", "pace merge"),
        ] {
            let bound = size(limit.bytes);
            let documented = readme
                .lines()
                .any(|line| line.starts_with(row) && line.ends_with(&format!("| {bound} |")));
            assert!(documented, "README.md: no row {row}... | {bound} |");
            let item = format!("\\fB{term}\\fR\n");
            let said = manual.split_once(&item).and_then(|(_, after)| after.lines().next());
            assert!(
                said.is_some_and(|line| line.contains(&bound)),
                "the manual's FILES section: {term} does not say {bound}: {said:?}"
            );
        }
    }
}
