//! Output files are never a way to damage the system: devices are written
//! in place (never replaced by a regular file), links are followed, and a
//! file that cannot be written is an error with exit code 2.

mod common;

use std::fs;
use std::os::unix::fs::{symlink, FileTypeExt};
use std::time::Duration;

use common::{default_server, load_lock, pace, url};

const LIMIT: Duration = Duration::from_secs(15);

#[test]
fn devices_stay_devices() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let run = pace(&["-t1", "-c1", "-d300ms", "--hlog", "/dev/null", &target], LIMIT);
    run.assert_ok();
    let run = pace(&["-t1", "-c1", "-d300ms", "--hlog", "/dev/full", &target], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains("cannot write /dev/full"), "{run}");
    // The report was printed all the same.
    assert!(run.stdout.contains(" requests in "), "{run}");
    for device in ["/dev/null", "/dev/full"] {
        assert!(fs::metadata(device).unwrap().file_type().is_char_device(), "{device}");
    }
}

#[test]
fn a_link_is_written_through() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.hlog");
    let link = dir.path().join("link.hlog");
    symlink(&real, &link).unwrap();
    let run = pace(&["-t1", "-c1", "-d300ms", "--hlog", link.to_str().unwrap(), &target], LIMIT);
    run.assert_ok();
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "{run}");
    let log = fs::read_to_string(&real).unwrap();
    assert!(log.contains("#[Histogram log format version 1.3]"), "{log}");
}
