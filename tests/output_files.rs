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

#[test]
fn the_report_goes_to_the_output_file_instead_of_stdout() {
    let _load = load_lock();
    let server = default_server();
    let target = url(server.addr(), "/");
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("run.txt");
    let run = pace(&["-t1", "-c1", "-d300ms", "-o", text.to_str().unwrap(), &target], LIMIT);
    run.assert_ok();
    assert_eq!(run.stdout, "", "{run}");
    let written = fs::read_to_string(&text).unwrap();
    assert!(written.starts_with("Running 300ms test @ "), "{written}");
    assert!(written.contains(" requests in "), "{written}");
    // JSON Lines with -p: every period, then the whole run.
    let json = dir.path().join("run.json");
    let args = ["-t1", "-c1", "-d1s", "-R50", "-p", "500ms", "-e", "--output"];
    let run = pace(&[&args[..], &[json.to_str().unwrap(), &target]].concat(), LIMIT);
    run.assert_ok();
    assert_eq!(run.stdout, "", "{run}");
    let reports: Vec<serde_json::Value> = fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let kinds: Vec<&str> = reports.iter().map(|r| r["report"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["period", "period", "final"]);
    // Only the file: no temporary one left beside it.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn an_output_file_that_cannot_be_made_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/run.json");
    let run = pace(&["-d10s", "-o", missing.to_str().unwrap(), "http://127.0.0.1:1/"], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains("cannot write") && run.stderr.contains("run.json"), "{run}");
    assert_eq!(run.stdout, "", "{run}");
}
