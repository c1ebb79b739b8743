//! An output file (`--hlog`, `-o`) is written completely or not at all,
//! and never becomes a way to damage the system.
//!
//! A regular file (or one that does not exist yet) is written under a
//! temporary name beside it and renamed over it when complete; dropped
//! without [`OutputFile::commit`], the temporary file is removed and the
//! target left as it was, and an immediate exit (a third Ctrl-C) removes it
//! too. A symbolic link is followed to the file it names, so the link stays
//! a link. Devices, FIFOs, sockets and anything under `/dev` or `/proc`
//! (`/dev/stdout`, `/dev/null`) are written in place: renaming over them
//! would replace a device node with a regular file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{io_reason, Error};
use crate::signals::TemporaryFile;

/// Symbolic links followed before giving up (as the kernel's ELOOP).
const MAX_LINKS: usize = 40;

pub struct OutputFile {
    /// The path as given, for messages.
    path: PathBuf,
    writer: BufWriter<File>,
    kind: Kind,
}

enum Kind {
    /// Written in place.
    Direct,
    /// Written to `temp`, renamed over `target` when complete.
    Atomic { temp: PathBuf, target: PathBuf, committed: bool, _removed_on_exit: TemporaryFile },
}

impl OutputFile {
    /// Opens `path` for writing, as the module documentation says.
    pub fn create(path: &Path) -> io::Result<OutputFile> {
        let target = follow_links(path)?;
        let kind_of_target = match fs::metadata(&target) {
            Ok(meta) => Some(meta.file_type()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        if kind_of_target.is_some_and(|kind| kind.is_dir()) {
            return Err(io::Error::other("it is a directory"));
        }
        let regular = kind_of_target.is_none_or(|kind| kind.is_file());
        if !regular || is_special_place(path) || is_special_place(&target) {
            let file = OpenOptions::new().write(true).open(path)?;
            return Ok(OutputFile {
                path: path.to_path_buf(),
                writer: BufWriter::new(file),
                kind: Kind::Direct,
            });
        }
        let mut temp = target.as_os_str().to_owned();
        temp.push(format!(".tmp-{}", std::process::id()));
        let temp = PathBuf::from(temp);
        let file = File::create(&temp)?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            writer: BufWriter::new(file),
            kind: Kind::Atomic {
                _removed_on_exit: TemporaryFile::register(&temp),
                temp,
                target,
                committed: false,
            },
        })
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn writer(&mut self) -> &mut BufWriter<File> {
        &mut self.writer
    }

    /// Everything is written: flushes it and puts the file in place.
    pub fn commit(mut self) -> io::Result<()> {
        self.writer.flush()?;
        if let Kind::Atomic { temp, target, committed, .. } = &mut self.kind {
            self.writer.get_ref().sync_all()?;
            fs::rename(&*temp, &*target)?;
            *committed = true;
        }
        Ok(())
    }
}

/// Writes `bytes` completely to `path` (see [`OutputFile`]), or to
/// stdout without one; `what` names them if stdout cannot take them. A
/// closed pipe is no error: the reader has all it wants.
pub fn write_all_or_nothing(path: Option<&Path>, bytes: &[u8], what: &str) -> Result<(), Error> {
    if let Some(path) = path {
        let failed = |e: io::Error| write_error(path, e);
        let mut file = OutputFile::create(path).map_err(failed)?;
        file.writer().write_all(bytes).map_err(failed)?;
        return file.commit().map_err(failed);
    }
    let mut stdout = io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Error::Setup(format!("cannot write the {what}: {}", io_reason(&e))))
        }
        _ => Ok(()),
    }
}

/// `path` could not be written: a setup error that names it.
pub fn write_error(path: &Path, e: io::Error) -> Error {
    Error::Setup(format!("cannot write {}: {}", path.display(), io_reason(&e)))
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Kind::Atomic { temp, committed: false, .. } = &self.kind {
            // Nothing more to do if it cannot be removed.
            let _ = fs::remove_file(temp);
        }
    }
}

/// `/dev/...` and `/proc/...`: devices and the links to a process's open
/// files (`/dev/stdout` is one), never to be replaced.
fn is_special_place(path: &Path) -> bool {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    absolute.starts_with("/dev") || absolute.starts_with("/proc")
}

/// The file `path` names after following symbolic links, also dangling
/// ones (the file a dangling link names is the one to create).
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{symlink, FileTypeExt};

    use super::*;

    fn write(path: &Path, text: &str) -> io::Result<()> {
        let mut file = OutputFile::create(path)?;
        file.writer().write_all(text.as_bytes())?;
        file.commit()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_regular_file_appears_only_when_complete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "old").unwrap();
        let mut file = OutputFile::create(&path).unwrap();
        file.writer().write_all(b"new").unwrap();
        file.writer().flush().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        file.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(names(dir.path()), vec!["out.json"]);
    }

    #[test]
    fn an_abandoned_file_leaves_the_target_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "old").unwrap();
        drop(OutputFile::create(&path).unwrap());
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(names(dir.path()), vec!["out.json"]);
    }

    #[test]
    fn links_are_followed_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.hlog");
        let link = dir.path().join("link.hlog");
        fs::write(&real, "old").unwrap();
        symlink("real.hlog", &link).unwrap();
        write(&link, "new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        // A dangling link makes the file it names.
        let dangling = dir.path().join("dangling.hlog");
        symlink("made.hlog", &dangling).unwrap();
        write(&dangling, "made").unwrap();
        assert!(fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(dir.path().join("made.hlog")).unwrap(), "made");
    }

    #[test]
    fn devices_are_written_in_place() {
        write(Path::new("/dev/null"), "nothing").unwrap();
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        // /dev/full refuses every write: an error, and the node stays.
        let full = write(Path::new("/dev/full"), "x");
        assert_eq!(full.unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        assert!(fs::metadata("/dev/full").unwrap().file_type().is_char_device());
    }

    #[test]
    fn fifos_are_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
        };
        write(&fifo, "through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let error = OutputFile::create(dir.path()).err().unwrap();
        assert_eq!(error.to_string(), "it is a directory");
    }
}
