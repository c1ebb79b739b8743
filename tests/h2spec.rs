//! h2spec, the HTTP/2 conformance suite, against `pace serve`: over h2c
//! and over TLS (h2 by ALPN, the embedded certificate). The cases that fail
//! are exactly those docs/architecture.md lists (section "What h2spec
//! finds"), with why: nghttp2's own choices, and h2c sharing its port with
//! HTTP/1.1. The test reads that table, so the documentation and the
//! server cannot drift apart.
//!
//! h2spec comes from `$PACE_H2SPEC` (`.ci/run` builds it from the Go module
//! proxy), else `~/go/bin/h2spec` (`go install
//! github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible`). Without it
//! the tests say SKIPPED and pass, except in CI.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{in_ci, load_lock, serve, serve_options, DieWithTest};
use pace::serve::ServeOptions;

const H2SPEC_VARIABLE: &str = "PACE_H2SPEC";

/// h2spec's wait for an expected frame (`-o`, seconds). The cases pace
/// fails by ignoring a frame wait it out; a passing case is answered in
/// milliseconds, and this leaves a loaded machine ample time.
const CASE_TIMEOUT_S: &str = "3";

/// The whole suite: 145 cases in about 20 s, a handful of them waiting
/// out the case timeout.
const SUITE_LIMIT: Duration = Duration::from_secs(240);

/// The cases of h2spec 2.2.1 (generic, http2 and hpack; none of the
/// strict ones).
const CASES: usize = 145;

/// Where the documented failures are.
const DOCUMENT: &str = "docs/architecture.md";
const SECTION: &str = "### What h2spec finds";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Over {
    H2c,
    H2,
}

impl Over {
    /// As the documentation's table names it.
    fn name(self) -> &'static str {
        match self {
            Over::H2c => "h2c",
            Over::H2 => "h2",
        }
    }
}

#[test]
fn h2spec_over_h2c_fails_only_the_documented_cases() {
    check(Over::H2c);
}

#[test]
fn h2spec_over_tls_fails_only_the_documented_cases() {
    check(Over::H2);
}

/// Runs h2spec against a fresh server and compares what failed with what
/// is documented: every case documented to fail always must fail, a case
/// documented to fail by timing may, and nothing else may.
fn check(over: Over) {
    let Some(h2spec) = h2spec() else { return };
    let documented = documented_failures(over);
    let _load = load_lock();
    let server = serve(ServeOptions { tls: over == Over::H2, ..serve_options() });
    let cases = run_h2spec(&h2spec, server.addr().port(), over);
    drop(server);
    assert_eq!(cases.len(), CASES, "h2spec ran {} cases, not {CASES}", cases.len());
    let failed: BTreeMap<&str, &str> = cases
        .iter()
        .filter_map(|(id, error)| error.as_deref().map(|error| (id.as_str(), error)))
        .collect();
    let unexpected: Vec<String> = failed
        .iter()
        .filter(|(id, _)| !documented.contains_key(**id))
        .map(|(id, error)| format!("{id}: {error}"))
        .collect();
    let passing: Vec<&str> = documented
        .iter()
        .filter(|(id, always)| **always && !failed.contains_key(id.as_str()))
        .map(|(id, _)| id.as_str())
        .collect();
    let timing: Vec<&&str> =
        failed.keys().filter(|id| documented.get(**id) == Some(&false)).collect();
    eprintln!("h2spec over {}: {} failed, of them by timing {timing:?}", over.name(), failed.len());
    assert!(
        unexpected.is_empty(),
        "over {}, failures that {DOCUMENT} does not list:\n{}",
        over.name(),
        unexpected.join("\n")
    );
    assert!(
        passing.is_empty(),
        "over {}, cases {DOCUMENT} says always fail now pass (update it): {passing:?}",
        over.name()
    );
}

/// The h2spec binary, or None (after saying so loudly) outside CI.
fn h2spec() -> Option<PathBuf> {
    let configured = std::env::var_os(H2SPEC_VARIABLE).filter(|p| !p.is_empty()).map(PathBuf::from);
    let installed = std::env::var_os("HOME").map(|home| Path::new(&home).join("go/bin/h2spec"));
    if let Some(path) = configured.or(installed).filter(|path| path.is_file()) {
        return Some(path);
    }
    let install = "go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible, \
                   or set PACE_H2SPEC to its path";
    if in_ci() {
        panic!("h2spec not found: CI must build it ({install})");
    }
    eprintln!("\n!!!!!!!!!! SKIPPED: h2spec is not installed ({install}); the HTTP/2 conformance test did not run !!!!!!!!!!\n");
    None
}

/// The documented failures over `over`: case id, and whether it always
/// fails (else it fails by timing). Read from the table of [`SECTION`]:
/// `| case | over | fails | why |`, the case in backquotes, `over` the
/// transports it fails over (`h2c, h2`), `fails` either `always` or
/// `by timing`.
fn documented_failures(over: Over) -> BTreeMap<String, bool> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DOCUMENT);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{DOCUMENT}: {e}"));
    let section =
        text.split_once(SECTION).unwrap_or_else(|| panic!("{DOCUMENT}: no {SECTION:?}")).1;
    let section = section.split("\n#").next().unwrap_or_default();
    let mut documented = BTreeMap::new();
    for row in section.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (id, transports, fails) = match cells[..] {
            [_, id, transports, fails, ..] => (id.trim_matches('`'), transports, fails),
            _ => panic!("{DOCUMENT}: a row of the h2spec table: {row:?}"),
        };
        let always = match fails {
            "always" => true,
            "by timing" => false,
            other => panic!("{DOCUMENT}: {id} fails {other:?}: 'always' or 'by timing'?"),
        };
        if transports.split(',').map(str::trim).any(|t| t == over.name()) {
            documented.insert(id.to_string(), always);
        }
    }
    assert!(!documented.is_empty(), "{DOCUMENT}: no h2spec failures listed for {}", over.name());
    documented
}

/// Runs h2spec against `port` of 127.0.0.1; every case as
/// `package/number` (h2spec's numbering: `http2/5.1/8`), with its error if
/// it failed.
fn run_h2spec(h2spec: &Path, port: u16, over: Over) -> Vec<(String, Option<String>)> {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("h2spec.xml");
    let mut command = Command::new(h2spec);
    command.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-o", CASE_TIMEOUT_S]);
    command.arg("-j").arg(&junit);
    if over == Over::H2 {
        // TLS, the built-in certificate not verified.
        command.args(["-t", "-k"]);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .die_with_test()
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", h2spec.display()));
    let started = Instant::now();
    // h2spec exits 1 when a case fails: the report says which.
    while child.try_wait().expect("wait for h2spec").is_none() {
        if started.elapsed() > SUITE_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("h2spec took more than {SUITE_LIMIT:?}; killed it");
        }
        thread::sleep(Duration::from_millis(50));
    }
    let report = std::fs::read(&junit).unwrap_or_else(|e| panic!("h2spec's report: {e}"));
    junit_cases(&String::from_utf8_lossy(&report))
}

/// The test cases of a JUnit report as h2spec writes it: one
/// `<testcase package=... classname=...>` each, in h2spec's order, empty
/// when it passed, holding an `<error>` (or `<failure>`) when it failed.
fn junit_cases(report: &str) -> Vec<(String, Option<String>)> {
    let mut numbers: BTreeMap<String, usize> = BTreeMap::new();
    let mut cases = Vec::new();
    for case in report.split("<testcase ").skip(1) {
        let (attributes, content) = case.split_once('>').expect("a testcase tag");
        let package = attribute(attributes, "package");
        let number = numbers.entry(package.clone()).or_default();
        *number += 1;
        let content = content.trim_start();
        let failed = content.starts_with("<error") || content.starts_with("<failure");
        let error = failed.then(|| {
            let text = content.split_once('>').map_or("", |(_, rest)| rest);
            let text = text.split("</").next().unwrap_or_default();
            format!("{} -- expected/got: {}", attribute(attributes, "classname"), text.trim())
        });
        cases.push((format!("{package}/{number}"), error));
    }
    cases
}

/// The value of `name="..."` among an XML tag's attributes.
fn attribute(attributes: &str, name: &str) -> String {
    let start = format!("{name}=\"");
    let value = attributes.split_once(&start).map_or("", |(_, rest)| rest);
    value.split('"').next().unwrap_or_default().to_string()
}

#[test]
fn junit_reports_read_as_numbered_cases() {
    let report = r#"<testsuites>
  <testsuite name="5.1. Stream States" package="http2/5.1" id="5.1" tests="2">
    <testcase package="http2/5.1" classname="idle: Sends a DATA frame" time="0.0002"></testcase>
    <testcase package="http2/5.1" classname="closed: Sends a DATA frame" time="2.0011">
      <error>GOAWAY Frame (Error Code: STREAM_CLOSED)
Timeout</error>
    </testcase>
  </testsuite>
  <testsuite name="5.1.1. Stream Identifiers" package="http2/5.1.1" id="5.1.1" tests="1">
    <testcase package="http2/5.1.1" classname="Sends even-numbered stream identifier" time="0.0001"></testcase>
  </testsuite>
</testsuites>"#;
    let cases = junit_cases(report);
    let ids: Vec<&str> = cases.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["http2/5.1/1", "http2/5.1/2", "http2/5.1.1/1"]);
    let failed: BTreeSet<&str> =
        cases.iter().filter(|(_, error)| error.is_some()).map(|(id, _)| id.as_str()).collect();
    assert_eq!(failed, BTreeSet::from(["http2/5.1/2"]));
    let error = cases[1].1.as_deref().unwrap();
    assert!(error.starts_with("closed: Sends a DATA frame -- expected/got: GOAWAY"), "{error}");
}
