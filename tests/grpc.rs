//! gRPC end to end (`--grpc` with `--proto`, `--protoset` or reflection): unary calls
//! to the built-in server, which answers every gRPC call by echoing its
//! message (or with the status a call asks for in `pace-grpc-status`), and
//! to grpc-go (tests/grpc-go: the interop suite's TestService, counting
//! the calls it answered by status). The calls pace counts by status must
//! be the calls the server answered; a response that is no gRPC call's is
//! counted in words; a bad schema, method or message is a clear error
//! before any load.
//!
//! The grpc-go server comes from `$PACE_GRPC_SERVER` (`.ci/run` builds it
//! with `go build` in tests/grpc-go). Without it those tests say SKIPPED
//! and pass, except in CI.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{default_server, in_ci, load_lock, pace, url, DieWithTest, Run};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(30);

const ECHO: &str = r#"
syntax = "proto3";
package demo;
import "demo/note.proto";
service Echo {
    rpc Say (Note) returns (Note);
    rpc Listen (Note) returns (stream Note);
    rpc Tell (stream Note) returns (Note);
}
"#;

const NOTE: &str = r#"
syntax = "proto3";
package demo;
message Note { string text = 1; int32 times = 2; }
"#;

/// A schema in two files, the message in an imported one (under
/// `imports/`, found with `--import-path`).
fn schema() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("imports/demo")).unwrap();
    std::fs::write(dir.path().join("echo.proto"), ECHO).unwrap();
    std::fs::write(dir.path().join("imports/demo/note.proto"), NOTE).unwrap();
    let proto = dir.path().join("echo.proto").display().to_string();
    let imports = dir.path().join("imports").display().to_string();
    (dir, proto, imports)
}

fn json_of(run: &Run) -> Value {
    let last = run.stdout.lines().rev().find(|l| l.starts_with('{'));
    serde_json::from_str(last.unwrap_or_else(|| panic!("no JSON\n{run}"))).unwrap()
}

#[test]
fn unary_calls_are_counted_by_status_as_the_server_answered_them() {
    let server = default_server();
    let (dir, proto, imports) = schema();
    let target = url(server.addr(), "/");
    let args = ["--grpc", "demo.Echo/Say", "--proto", &proto, "--import-path", &imports];
    let data = ["--data", r#"{"text": "hello", "times": 3}"#];
    let load = ["-t1", "-c2", "--streams", "4", "-n", "400", "-d10s", &target];
    let run = pace(&[&args[..], &data, &load].concat(), LIMIT);
    run.assert_ok();
    assert!(run.stdout.contains("  gRPC unary calls of demo.Echo/Say\n"), "{run}");
    assert!(run.stdout.contains("  gRPC status: OK: 400\n"), "{run}");
    assert!(!run.stdout.contains("Non-2xx"), "{run}");
    assert_eq!(server.stats().requests, 400, "{run}");

    let run = pace(&[&args[..], &["-H", "pace-grpc-status: 14", "--json"], &load].concat(), LIMIT);
    run.assert_ok();
    let report = json_of(&run);
    assert_eq!(report["grpc_method"], "demo.Echo/Say", "{run}");
    assert_eq!(report["grpc_codes"], serde_json::json!({"UNAVAILABLE": 400}), "{run}");
    assert_eq!(report["status_codes"], serde_json::json!({}), "{run}");
    assert_eq!(report["errors"]["http_error"], 400, "{run}");
    assert_eq!(server.stats().requests, 800, "{run}");

    // A saved run reads back with its method and its calls by status.
    let saved = dir.path().join("run.json");
    let saved = saved.to_str().unwrap();
    pace(&[&args[..], &["-H", "pace-grpc-status: 14", "-e", "-o", saved], &load].concat(), LIMIT)
        .assert_ok();
    let again = pace(&["report", saved], LIMIT);
    again.assert_ok();
    assert!(again.stdout.contains("  gRPC unary calls of demo.Echo/Say\n"), "{again}");
    assert!(again.stdout.contains("  gRPC calls not OK: 400\n"), "{again}");
    assert!(again.stdout.contains("  gRPC status: UNAVAILABLE: 400\n"), "{again}");

    // Compared with a run whose calls were all OK: the code's share rose.
    let ok = dir.path().join("ok.json");
    let ok = ok.to_str().unwrap();
    pace(&[&args[..], &["-e", "-o", ok], &load].concat(), LIMIT).assert_ok();
    let compared = pace(&["compare", ok, saved], LIMIT);
    compared.assert_ok();
    let line = compared.stdout.lines().find(|l| l.trim_start().starts_with("gRPC UNAVAILABLE"));
    let line = line.unwrap_or_else(|| panic!("{compared}"));
    assert!(line.contains("0.00%") && line.contains("100.00%"), "{compared}");
    assert!(line.ends_with("more errors"), "{compared}");
    let compared = pace(&["compare", "-e", ok, saved], LIMIT);
    let codes = &json_of(&compared)["grpc_codes"];
    assert_eq!(codes[0]["code"], "UNAVAILABLE", "{compared}");
    assert_eq!(codes[0]["verdict"], "more errors", "{compared}");
}

#[test]
fn a_failed_call_fails_an_error_slo() {
    let server = default_server();
    let (_dir, proto, imports) = schema();
    let target = url(server.addr(), "/");
    let run = pace(
        &[
            "--grpc",
            "demo.Echo.Say",
            "--proto",
            &proto,
            "--import-path",
            &imports,
            "-H",
            "pace-grpc-status: 4",
            "--slo",
            "errors<1%",
            "-t1",
            "-c1",
            "-n",
            "50",
            &target,
        ],
        LIMIT,
    );
    run.assert_code(4);
    assert!(run.stdout.contains("  gRPC calls not OK: 50\n"), "{run}");
    assert!(run.stdout.contains("  gRPC status: DEADLINE_EXCEEDED: 50\n"), "{run}");
}

#[test]
fn a_response_that_is_no_grpc_call_is_counted_in_words() {
    let server = default_server();
    let (_dir, proto, imports) = schema();
    let target = url(server.addr(), "/");
    // Sent as plain text, the call is answered as any HTTP/2 request.
    let run = pace(
        &[
            "--grpc",
            "demo.Echo/Say",
            "--proto",
            &proto,
            "--import-path",
            &imports,
            "-H",
            "content-type: text/plain",
            "-t1",
            "-c1",
            "-n",
            "20",
            "--json",
            &target,
        ],
        LIMIT,
    );
    run.assert_ok();
    let report = json_of(&run);
    let causes = report["error_causes"].as_object().unwrap();
    let cause = "read: not a gRPC response: its content-type is not application/grpc";
    assert_eq!(causes.get(cause), Some(&serde_json::json!(20)), "{run}");
    assert_eq!(report["errors"]["read"], 20, "{run}");
}

#[test]
fn bad_schemas_methods_and_messages_are_refused_before_any_load() {
    let server = default_server();
    let (dir, proto, imports) = schema();
    let target = url(server.addr(), "/");
    let schema = ["--proto", &proto, "--import-path", &imports];
    let refused = |args: &[&str], code: i32, said: &str| {
        let run = pace(&[args, &["-d1s", &target]].concat(), LIMIT);
        run.assert_code(code);
        assert!(run.stderr.contains(said), "{said}\n{run}");
    };
    refused(
        &[&["--grpc", "demo.Echo/Shout"][..], &schema].concat(),
        1,
        "--grpc demo.Echo/Shout: demo.Echo has no method Shout (it has Say, Listen, Tell)",
    );
    refused(
        &[&["--grpc", "demo.Echo/Say", "--data", r#"{"txt": 1}"#][..], &schema].concat(),
        1,
        "--data is not a demo.Note in JSON",
    );
    refused(
        &[&["--grpc", "demo.Echo/Tell", "--data", r#"{"text": "{{.UUID}}"}"#][..], &schema]
            .concat(),
        1,
        "a stream's messages are made once for the run",
    );
    // Without --import-path the import is not found.
    refused(&["--grpc", "demo.Echo/Say", "--proto", &proto], 1, "--proto ");
    let broken = dir.path().join("broken.proto");
    std::fs::write(&broken, "syntax = \"proto3\";\nservice {").unwrap();
    refused(&["--grpc", "demo.Echo/Say", "--proto", broken.to_str().unwrap()], 1, "--proto ");
    refused(&["--grpc", "demo.Echo/Say", "--proto", "/nonexistent/x.proto"], 2, "x.proto");
    refused(
        &["--grpc", "demo.Echo/Say", "--import-path", &imports],
        1,
        "--import-path applies to --proto",
    );
    refused(
        &["--grpc", "demo.Echo/Say", "--proxy", "http://127.0.0.1:9/"],
        1,
        "asks the server's reflection service, which pace does not do through --proxy",
    );
    refused(&["--grpc", "Say", "--proto", &proto], 1, "name a method as package.Service/Method");
    refused(&["--proto", &proto], 1, "--proto needs --grpc");
    refused(
        &[&["--grpc", "demo.Echo/Say", "-m", "GET"][..], &schema].concat(),
        1,
        "-m/--method cannot be used with --grpc",
    );
    assert_eq!(server.stats().requests, 0, "nothing was sent");
    // Without a schema pace asks the server's reflection (v1, then
    // v1alpha); the built-in server has none, and no call is sent.
    refused(
        &["--grpc", "demo.Echo/Say"],
        2,
        "the server has no reflection service: give the schema",
    );
    assert_eq!(server.stats().requests, 2, "the two reflection calls only");
}

/// grpc-go's TestService on a free loopback port. Stopped (SIGTERM) by
/// [`GrpcGo::stop`], which returns the calls it answered by status code.
struct GrpcGo {
    child: Child,
    url: String,
}

impl GrpcGo {
    /// The server binary, or None (said loudly) when it was not built.
    fn binary() -> Option<String> {
        let path = std::env::var("PACE_GRPC_SERVER").ok().filter(|p| Path::new(p).exists());
        if path.is_none() {
            let build = "go build -o grpc-test-server . in tests/grpc-go, and set PACE_GRPC_SERVER";
            if in_ci() {
                panic!("the grpc-go test server was not found: CI must build it ({build})");
            }
            eprintln!("\n!!!!!!!!!! SKIPPED: no grpc-go test server ({build}) !!!!!!!!!!\n");
        }
        path
    }

    fn start() -> Option<GrpcGo> {
        let mut child = Command::new(GrpcGo::binary()?)
            .stdout(Stdio::piped())
            .die_with_test()
            .spawn()
            .expect("start the grpc-go test server");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("{line}"));
        Some(GrpcGo { url: format!("http://{addr}/"), child })
    }

    /// The server, and its schema as a descriptor set in a directory of its
    /// own (for files the test writes too).
    fn with_protoset() -> Option<(GrpcGo, tempfile::TempDir, String)> {
        let server = GrpcGo::start()?;
        let dir = tempfile::tempdir().unwrap();
        let protoset = GrpcGo::protoset(dir.path());
        Some((server, dir, protoset))
    }

    /// Writes the server's schema as a descriptor set into `dir`.
    fn protoset(dir: &Path) -> String {
        let file = dir.join("test.protoset");
        let binary = GrpcGo::binary().expect("checked by start");
        let status = Command::new(binary).arg("-protoset").arg(&file).status().unwrap();
        assert!(status.success());
        file.display().to_string()
    }

    /// Stops the server; the calls it answered, by grpc-go's code names.
    fn stop(mut self) -> Value {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let mut out = String::new();
        self.child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        assert!(self.child.wait().unwrap().success(), "{out}");
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
    }
}

const UNARY: &str = "grpc.testing.TestService/UnaryCall";

#[test]
fn grpc_go_answered_every_call_pace_counted() {
    let _load = load_lock();
    let Some((server, _dir, protoset)) = GrpcGo::with_protoset() else { return };
    let call = ["--grpc", UNARY, "--protoset", &protoset];
    let load = ["-t1", "-c2", "--streams", "10", "-n", "2000", "-d20s", "--json", &server.url];
    let run = pace(&[&call[..], &["--data", r#"{"responseSize": 100}"#], &load].concat(), LIMIT);
    run.assert_ok();
    let report = json_of(&run);
    assert_eq!(report["grpc_codes"], json!({"OK": 2000}), "{run}");

    let failing = r#"{"response_status": {"code": 14, "message": "down for the test"}}"#;
    let run = pace(
        &[&call[..], &["--data", failing, "-L"], &load[..load.len() - 2], &[&server.url]].concat(),
        LIMIT,
    );
    run.assert_ok();
    assert!(run.stdout.contains("  gRPC calls not OK: 2000\n"), "{run}");
    assert!(run.stdout.contains("  gRPC status: UNAVAILABLE: 2000\n"), "{run}");
    assert_eq!(server.stop(), json!({"OK": 2000, "Unavailable": 2000}));
}

#[test]
fn grpc_go_paced_calls_and_an_unimplemented_method() {
    let _load = load_lock();
    let Some((server, _dir, protoset)) = GrpcGo::with_protoset() else { return };
    let run = pace(
        &[
            "--grpc",
            UNARY,
            "--protoset",
            &protoset,
            "-R",
            "500",
            "-d1s",
            "-t1",
            "-c2",
            "--json",
            &server.url,
        ],
        LIMIT,
    );
    run.assert_ok();
    let report = json_of(&run);
    // On a loaded machine a paced run may leave some unsent: every call
    // pace counted is one grpc-go answered.
    let answered = report["requests"].as_u64().unwrap();
    assert!(answered > 0, "{run}");
    assert_eq!(report["grpc_codes"], json!({"OK": answered}), "{run}");
    // The interop server does not implement this one: counted by its code.
    let unimplemented = "grpc.testing.TestService/UnimplementedCall";
    let run = pace(
        &["--grpc", unimplemented, "--protoset", &protoset, "-n", "10", "-t1", "-c1", &server.url],
        LIMIT,
    );
    run.assert_ok();
    assert!(run.stdout.contains("  gRPC status: UNIMPLEMENTED: 10\n"), "{run}");
    assert_eq!(server.stop(), json!({"OK": answered, "Unimplemented": 10}));
}

#[test]
fn a_file_of_messages_is_sent_in_turn() {
    let _load = load_lock();
    let Some((server, dir, protoset)) = GrpcGo::with_protoset() else { return };
    // Nine calls that succeed, one that the server fails: a tenth of the
    // calls, whatever the concurrency, as the messages go in turn.
    let mut messages = "{\"responseSize\": 10}\n".repeat(9);
    messages.push_str("{\"responseStatus\": {\"code\": 14, \"message\": \"down\"}}\n");
    let file = dir.path().join("messages.json");
    std::fs::write(&file, messages).unwrap();
    let data = format!("@{}", file.display());
    let run = pace(
        &[
            "--grpc",
            UNARY,
            "--protoset",
            &protoset,
            "--data",
            &data,
            "-t1",
            "-c2",
            "--streams",
            "10",
            "-n",
            "1000",
            "-d20s",
            "--json",
            &server.url,
        ],
        LIMIT,
    );
    run.assert_ok();
    let report = json_of(&run);
    assert_eq!(report["grpc_codes"], json!({"OK": 900, "UNAVAILABLE": 100}), "{run}");
    assert_eq!(report["errors"]["http_error"], 100, "{run}");
    assert_eq!(server.stop(), json!({"OK": 900, "Unavailable": 100}));
}

#[test]
fn without_a_schema_grpc_go_gives_it_by_reflection() {
    let _load = load_lock();
    let Some(server) = GrpcGo::start() else { return };
    let run = pace(
        &["--grpc", "grpc.testing.TestService.UnaryCall", "--data", r#"{"responseSize": 7}"#]
            .iter()
            .chain(&["-t1", "-c1", "--streams", "5", "-n", "300", "--json", &server.url])
            .copied()
            .collect::<Vec<_>>(),
        LIMIT,
    );
    run.assert_ok();
    assert_eq!(json_of(&run)["grpc_codes"], json!({"OK": 300}), "{run}");
    // A service the server does not have: said before any load.
    let run = pace(&["--grpc", "grpc.testing.Nothing/Call", "-n", "10", &server.url], LIMIT);
    run.assert_code(2);
    assert!(run.stderr.contains("the server has no service grpc.testing.Nothing"), "{run}");
    // grpc-go counts the calls of TestService only (not reflection's).
    assert_eq!(server.stop(), json!({"OK": 300}));
}

#[test]
fn templates_make_each_call_its_own_message_and_gzip_compresses_them() {
    let _load = load_lock();
    let Some((server, _dir, protoset)) = GrpcGo::with_protoset() else { return };
    let call = ["--grpc", UNARY, "--protoset", &protoset];
    let load = ["-t2", "-c4", "--streams", "5", "-n", "600", "-d20s", "--json", &server.url];
    // Every call's number is its own (numbers unique across threads),
    // the fixed message between the templated ones is encoded once.
    let data = r#"{"responseStatus": {"message": "call {{.RequestNumber}} {{.UUID}}"}}
        {"responseSize": 3}"#;
    // Metadata too: a value made per call, and one the same for all.
    let metadata = ["-H", "x-call: {{.RequestNumber}}", "-H", "x-method: {{.MethodName}}"];
    let run = pace(&[&call[..], &["--data", data], &metadata, &load].concat(), LIMIT);
    run.assert_ok();
    assert_eq!(json_of(&run)["grpc_codes"], json!({"OK": 600}), "{run}");
    // In random order, with gzip: the server decompressed every message.
    let data = r#"{"responseStatus": {"message": "{{randomString 16}}"}} {}"#;
    let random = ["--data", data, "--targets-order", "random", "--seed", "7", "--grpc-gzip"];
    let run = pace(&[&call[..], &random, &load].concat(), LIMIT);
    run.assert_ok();
    assert!(run.stderr.contains("pace: --data's messages in random order, seed 7"), "{run}");
    assert_eq!(json_of(&run)["grpc_codes"], json!({"OK": 600}), "{run}");
    let counted = server.stop();
    assert_eq!(counted["OK"], 1200, "{counted}");
    assert_eq!(counted["compressed"], 600, "{counted}");
    assert_eq!(counted["distinct_x_call"], 600, "every call its own number: {counted}");
    assert_eq!(counted["x_method_named"], 600, "{counted}");
    // 300 calls of the first run carry a distinct number each; those of
    // the second run a random text each (of about 300: drawn at random).
    let distinct = counted["distinct_messages"].as_u64().unwrap();
    assert!((300 + 200..=300 + 400).contains(&distinct), "{counted}");
}

/// A script's calls: each message made in request() with wrk.grpc.encode,
/// each reply read in response() with wrk.grpc.decode and its status from
/// the trailers; done() prints what the threads saw.
const SCRIPT: &str = r#"
local made, echoed, failed = 0, 0, 0
function setup(thread) threads = threads or {}; table.insert(threads, thread) end
function request()
  made = made + 1
  return wrk.format(nil, nil, nil, wrk.grpc.encode({text = "call " .. made, times = made}))
end
function response(status, headers, body)
  local reply, err = wrk.grpc.decode(body)
  if headers["grpc-status"] ~= "0" then
    assert(reply == nil and err == nil, "a failed call has no reply")
    failed = failed + 1
  elseif reply.text == "call " .. reply.times then
    echoed = echoed + 1
  end
  wrk.thread:set("seen", echoed .. " " .. failed)
end
function done()
  for _, thread in ipairs(threads) do io.write("seen ", thread:get("seen"), "\n") end
end
"#;

#[test]
fn a_script_makes_and_reads_the_calls_messages() {
    let server = default_server();
    let (dir, proto, imports) = schema();
    let script = dir.path().join("calls.lua");
    std::fs::write(&script, SCRIPT).unwrap();
    let script = script.to_str().unwrap();
    let call = ["--grpc", "demo.Echo/Say", "--proto", &proto, "--import-path", &imports];
    let target = url(server.addr(), "/");
    let load = ["-s", script, "-t1", "-c2", "--streams", "4", "-n", "300", "-d10s", &target];
    let run = pace(&[&call[..], &load].concat(), LIMIT);
    run.assert_ok();
    assert!(run.stdout.contains("  gRPC status: OK: 300\n"), "{run}");
    assert!(run.stdout.contains("seen 300 0\n"), "every reply echoed its call: {run}");
    assert!(!run.stderr.contains("not used"), "{run}");
    // Calls the server fails: a status, no reply message.
    let failing = ["-H", "pace-grpc-status: 5"];
    let run = pace(&[&call[..], &failing, &load].concat(), LIMIT);
    run.assert_ok();
    assert!(run.stdout.contains("  gRPC status: NOT_FOUND: 300\n"), "{run}");
    assert!(run.stdout.contains("seen 0 300\n"), "{run}");
    // A table that is no request message: the script's error, in words.
    let bad = dir.path().join("bad.lua");
    std::fs::write(
        &bad,
        "request = function() return wrk.format(nil, nil, nil, wrk.grpc.encode({nope = 1})) end",
    )
    .unwrap();
    let run =
        pace(&[&call[..], &["-s", bad.to_str().unwrap(), "-n", "10", &target]].concat(), LIMIT);
    run.assert_code(3);
    assert!(run.stderr.contains("wrk.grpc.encode: not a demo.Note"), "{run}");
    // Messages made per call are pace's, not a script's.
    let templated = ["--data", r#"{"text": "{{.UUID}}"}"#, "-s", script, &target];
    let run = pace(&[&call[..], &templated].concat(), LIMIT);
    run.assert_code(1);
    assert!(run.stderr.contains("--data with template actions and -s"), "{run}");
}

#[test]
fn a_server_stream_counts_its_messages_and_times_the_first() {
    let server = default_server();
    let (dir, proto, imports) = schema();
    let call = ["--grpc", "demo.Echo/Listen", "--proto", &proto, "--import-path", &imports];
    let target = url(server.addr(), "/");
    // The built-in server echoes the message as many times as asked.
    let stream = ["-H", "pace-grpc-messages: 7", "--data", r#"{"text": "tick"}"#];
    let [saved, other] = ["stream.json", "other.json"].map(|f| dir.path().join(f));
    let [saved, other] = [saved.to_str().unwrap(), other.to_str().unwrap()];
    for file in [saved, other] {
        let load =
            ["-t1", "-c2", "--streams", "4", "-n", "300", "-d10s", "-e", "-o", file, &target];
        pace(&[&call[..], &stream, &load].concat(), LIMIT).assert_ok();
    }
    let report: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    let streamed = &report["grpc_stream"];
    assert_eq!(streamed["messages"], 2100, "{report}");
    assert_eq!(streamed["messages_per_call_mean"], 7.0, "{report}");
    assert_eq!(streamed["messages_per_call_max"], 7, "{report}");
    assert_eq!(streamed["first_message"]["count"], 300, "{report}");
    // Read back: the text report has the lines; a merge of two adds them.
    let again = pace(&["report", saved], LIMIT);
    again.assert_ok();
    assert!(again.stdout.contains("  gRPC messages received: 2100 (7.00 per call, max 7), "));
    assert!(again.stdout.contains("  gRPC first message: p50 "), "{again}");
    let merged = pace(&["merge", "-e", saved, other], LIMIT);
    merged.assert_ok();
    assert_eq!(json_of(&merged)["grpc_stream"]["messages"], 4200, "{merged}");
    // A unary run has none of it.
    let unary = ["--grpc", "demo.Echo/Say", "--proto", &proto, "--import-path", &imports];
    let run = pace(&[&unary[..], &["-n", "10", "--json", &target]].concat(), LIMIT);
    assert!(json_of(&run).get("grpc_stream").is_none(), "{run}");
}

#[test]
fn grpc_go_streams_are_timed_from_each_calls_intended_time() {
    let _load = load_lock();
    let Some((server, dir, protoset)) = GrpcGo::with_protoset() else { return };
    // Three messages a call: the first after 2 ms, the next 2 ms later,
    // the last at once; a tenth of the calls end UNAVAILABLE after them.
    let ok = r#"{"responseParameters": [{"size": 10, "intervalUs": 2000}, {"size": 10, "intervalUs": 2000}, {"size": 10}]}"#;
    let failing = r#"{"responseParameters": [{"size": 10, "intervalUs": 2000}, {"size": 10, "intervalUs": 2000}, {"size": 10}], "responseStatus": {"code": 14}}"#;
    let mut messages = format!("{ok}\n").repeat(9);
    messages.push_str(failing);
    let file = dir.path().join("streams.json");
    std::fs::write(&file, messages).unwrap();
    let data = format!("@{}", file.display());
    let run = pace(
        &[
            "--grpc",
            "grpc.testing.TestService/StreamingOutputCall",
            "--protoset",
            &protoset,
            "--data",
            &data,
            "-t1",
            "-c2",
            "--streams",
            "5",
            "-n",
            "200",
            "-d30s",
            "--json",
            &server.url,
        ],
        LIMIT,
    );
    run.assert_ok();
    let report = json_of(&run);
    assert_eq!(report["grpc_codes"], json!({"OK": 180, "UNAVAILABLE": 20}), "{run}");
    let streamed = &report["grpc_stream"];
    assert_eq!(streamed["messages"], 600, "{run}");
    assert_eq!(streamed["messages_per_call_max"], 3, "{run}");
    // The server waits 2 ms before the first message and 4 ms before the
    // last: no call can be faster (the histograms keep 3 digits).
    assert!(streamed["first_message"]["min_us"].as_u64().unwrap() >= 1998, "{run}");
    assert!(report["latency"]["corrected"]["min_us"].as_u64().unwrap() >= 3996, "{run}");
    assert_eq!(
        server.stop(),
        json!({"OK": 180, "Unavailable": 20, "messages_sent": 600}),
        "every message the server sent, pace counted"
    );
}

#[test]
fn client_and_bidirectional_streams_send_on_their_plan() {
    let _load = load_lock();
    let Some((server, _dir, protoset)) = GrpcGo::with_protoset() else { return };
    let input = ["--grpc", "grpc.testing.TestService/StreamingInputCall", "--protoset", &protoset];
    let duplex = ["--grpc", "grpc.testing.TestService/FullDuplexCall", "--protoset", &protoset];
    let load = ["-t1", "-c2", "--streams", "5", "-n", "100", "-d30s", "--json", &server.url];
    // Client streaming: five messages a call, 2 ms apart; the reply comes
    // when the stream ends, so no call takes less than 8 ms.
    let stream = ["--grpc-stream-count", "5", "--grpc-stream-interval", "2ms"];
    let data = ["--data", r#"{"payload": {"body": "AAAA"}}"#];
    let args = [&input[..], &stream, &data, &load].concat();
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let report = json_of(&run);
    assert_eq!(report["grpc_kind"], "client_streaming", "{run}");
    assert_eq!(
        (report["grpc_stream_count"].as_u64(), report["grpc_stream_interval_us"].as_u64()),
        (Some(5), Some(2000)),
        "{run}"
    );
    assert_eq!(report["grpc_codes"], json!({"OK": 100}), "{run}");
    assert_eq!(report["grpc_stream"]["messages_sent"], 500, "{run}");
    assert_eq!(report["grpc_stream"]["messages"], 100, "one reply a call: {run}");
    assert!(report["latency"]["corrected"]["min_us"].as_u64().unwrap() >= 7990, "{run}");
    // Bidirectional: four messages a call, 3 ms apart, each answered
    // after 1 ms: every reply's latency from its own message's intended
    // time is at least that millisecond; the call's at least 10 ms.
    let stream = ["--grpc-stream-count", "4", "--grpc-stream-interval", "3ms"];
    let data = ["--data", r#"{"responseParameters": [{"size": 8, "intervalUs": 1000}]}"#];
    let args = [&duplex[..], &stream, &data, &load].concat();
    let text: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
    let run = pace(&text, LIMIT);
    run.assert_ok();
    assert!(run.stdout.contains("  gRPC bidirectional calls (4 messages each, 3.00ms apart) of grpc.testing.TestService/FullDuplexCall\n"), "{run}");
    assert!(run.stdout.contains("  gRPC messages sent: 400, "), "{run}");
    assert!(run.stdout.contains("  gRPC reply latency: p50 "), "{run}");
    let run = pace(&args, LIMIT);
    run.assert_ok();
    let report = json_of(&run);
    assert_eq!(report["grpc_codes"], json!({"OK": 100}), "{run}");
    let streamed = &report["grpc_stream"];
    assert_eq!(
        (streamed["messages_sent"].as_u64(), streamed["messages"].as_u64()),
        (Some(400), Some(400)),
        "{run}"
    );
    assert_eq!(streamed["reply_latency"]["count"], 400, "{run}");
    assert!(streamed["reply_latency"]["min_us"].as_u64().unwrap() >= 998, "{run}");
    assert!(report["latency"]["corrected"]["min_us"].as_u64().unwrap() >= 9990, "{run}");
    assert_eq!(
        server.stop(),
        json!({"OK": 300, "messages_received": 1300, "messages_sent": 800}),
        "every message pace sent, the server received"
    );
    // The options of a stream belong to a method that takes one.
    let run = pace(
        &[
            "--grpc",
            UNARY,
            "--protoset",
            &protoset,
            "--grpc-stream-count",
            "3",
            "-n",
            "1",
            "http://127.0.0.1:1/",
        ],
        LIMIT,
    );
    run.assert_code(1);
    assert!(run.stderr.contains("--grpc-stream-count: --grpc grpc.testing.TestService/UnaryCall takes one request message"), "{run}");
}

#[test]
fn pace_serve_grpc_has_a_service_of_its_own_and_says_its_schema() {
    let server = common::serve(pace::serve::ServeOptions { grpc: true, ..common::serve_options() });
    let target = url(server.addr(), "/");
    // No schema given: the server's reflection gives it.
    let listen = ["--grpc", "pace.Echo/Listen", "--data", r#"{"text": "hi", "times": 4}"#];
    let load = ["-t1", "-c2", "--streams", "4", "-n", "200", "-d10s", "--json", &target];
    let run = pace(&[&listen[..], &load].concat(), LIMIT);
    run.assert_ok();
    let report = json_of(&run);
    assert_eq!(report["grpc_kind"], "server_streaming", "{run}");
    assert_eq!(report["grpc_codes"], json!({"OK": 200}), "{run}");
    assert_eq!(report["grpc_stream"]["messages"], 800, "{run}");
    // A status on request, in the message.
    let failing = ["--grpc", "pace.Echo/Say", "--data", r#"{"status": 14}"#];
    let run = pace(&[&failing[..], &load].concat(), LIMIT);
    run.assert_ok();
    assert_eq!(json_of(&run)["grpc_codes"], json!({"UNAVAILABLE": 200}), "{run}");
    // Chat answers each message as it comes: four messages 100 ms apart,
    // each call's first reply long before its stream ends (300 ms on).
    let chat = ["--grpc", "pace.Echo/Chat", "--data", r#"{"text": "hi"}"#];
    let stream = ["--grpc-stream-count", "4", "--grpc-stream-interval", "100ms"];
    let few = ["-t1", "-c2", "--streams", "2", "-n", "8", "-d10s", "--json", &target];
    let run = pace(&[&chat[..], &stream, &few].concat(), LIMIT);
    run.assert_ok();
    let report = json_of(&run);
    assert_eq!(report["grpc_codes"], json!({"OK": 8}), "{run}");
    assert_eq!(report["grpc_stream"]["messages"], 32, "{run}");
    assert_eq!(report["grpc_stream"]["reply_latency"]["count"], 32, "{run}");
    assert!(report["latency"]["corrected"]["min_us"].as_u64().unwrap() >= 299_000, "{run}");
    let first = report["grpc_stream"]["first_message"]["max_us"].as_u64().unwrap();
    assert!(first < 250_000, "the first reply waited for the stream's end: {run}");
    // A method the service does not have: said before any load.
    let run = pace(&["--grpc", "pace.Echo/Shout", "-n", "1", &target], LIMIT);
    run.assert_code(1);
    assert!(
        run.stderr.contains("pace.Echo has no method Shout (it has Say, Listen, Chat)"),
        "{run}"
    );
}
