//! The Lua API against real Lua states, in wrk's call order, without an
//! engine: what `init`, `request`, `response`, `delay`, `setup` and `done`
//! see and return.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use tempfile::NamedTempFile;

use super::*;
use crate::config::BenchConfig;
use crate::http::request::count_requests;
use crate::stats::{latency_histogram, Stats};
use crate::target::Target;

const URL: &str = "http://127.0.0.1:8080/index.html?q=1";

fn config() -> BenchConfig {
    BenchConfig {
        connections: 2,
        duration: Some(Duration::from_secs(1)),
        script_args: vec!["first".into(), "second".into()],
        ..BenchConfig::new(Target::parse(URL).unwrap())
    }
}

fn addr() -> Endpoint {
    tcp("127.0.0.1:8080")
}

fn tcp(addr: &str) -> Endpoint {
    Endpoint::Tcp(addr.parse().unwrap())
}

/// The script in a temporary file (kept alive by the returned handle).
fn script_file(source: &str) -> NamedTempFile {
    let mut file = tempfile::Builder::new().suffix(".lua").tempfile().unwrap();
    file.write_all(source.as_bytes()).unwrap();
    file
}

fn load_with(source: &str, cfg: &BenchConfig) -> (Script, NamedTempFile) {
    let file = script_file(source);
    let script = Script::load(file.path(), cfg).unwrap_or_else(|err| panic!("{err}"));
    (script, file)
}

fn load(source: &str) -> (Script, NamedTempFile) {
    load_with(source, &config())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A global of the main state, as a string.
fn main_global(script: &Script, name: &str) -> String {
    let value: Value = script.main.globals().get(name).unwrap();
    script.main.coerce_string(value).unwrap().map(|s| s.to_string_lossy()).unwrap_or_default()
}

#[test]
fn wrk_table_describes_the_url_and_headers() {
    let mut cfg = config();
    cfg.headers = vec![("X-Api-Key".into(), "k".into())];
    let (script, _file) = load_with(
        r#"
        local w = require "wrk"
        seen = table.concat({ tostring(w == wrk), wrk.scheme, wrk.host, wrk.port, wrk.path,
                              wrk.method, tostring(wrk.body), wrk.headers["X-Api-Key"] }, " ")
        "#,
        &cfg,
    );
    assert_eq!(main_global(&script, "seen"), "true http 127.0.0.1 8080 /index.html?q=1 GET nil k");
    let mut cfg = config();
    cfg.target = Target::parse("https://example.com").unwrap();
    let (script, _file) = load_with("port = tostring(wrk.port)", &cfg);
    assert_eq!(main_global(&script, "port"), "nil");
}

#[test]
fn every_standard_library_is_open() {
    let (script, _file) = load(
        r#"
        local ffi = require "ffi"
        ffi.cdef "int getpid(void);"
        libs = table.concat({ type(io.open), type(os.time), type(bit.band), type(jit.version),
                              type(debug.traceback), type(ffi.C.getpid), type(string.rep),
                              type(math.random), type(table.concat) }, ",")
        "#,
    );
    let expected = "function,function,function,string,function,cdata,function,function,function";
    assert_eq!(main_global(&script, "libs"), expected);
}

#[test]
fn time_us_is_the_wall_clock() {
    let (script, _file) = load("now = wrk.time_us()");
    let now: f64 = script.main.globals().get("now").unwrap();
    let expected = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    assert!((expected.as_micros() as f64 - now).abs() < 10_000_000.0);
}

#[test]
fn static_request_is_built_once_and_shared() {
    let mut cfg = config();
    cfg.headers = vec![("Accept".into(), "*/*".into())];
    let (mut script, _file) = load_with("", &cfg);
    let mut thread = script.thread(addr()).unwrap();
    assert!(!thread.has_response() && !thread.has_delay());
    let first = thread.request().unwrap().unwrap();
    assert_eq!(
        text(&first),
        "GET /index.html?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n"
    );
    assert!(Arc::ptr_eq(&first, &thread.request().unwrap().unwrap()));
}

/// Calls into the thread state's Lua (counted by a debug hook that the
/// script sets) while [`ThreadScript::request`] is called 1000 times.
fn lua_calls_for_1000_requests(source: &str) -> (f64, Arc<[u8]>) {
    let counted =
        format!("calls = 0\ndebug.sethook(function() calls = calls + 1 end, 'c')\n{source}");
    let (mut script, _file) = load(&counted);
    let mut thread = script.thread(addr()).unwrap();
    let before: f64 = thread.lua.globals().get("calls").unwrap();
    let first = thread.request().unwrap().unwrap();
    for _ in 1..1000 {
        let next = thread.request().unwrap().unwrap();
        assert_eq!(next, first);
    }
    let after: f64 = thread.lua.globals().get("calls").unwrap();
    (after - before, first)
}

/// The mechanism behind "a static script costs nothing per request": the
/// request frozen by `wrk.init` is handed out as the same shared bytes
/// with no call into Lua; a script with `request()` is one call each.
#[test]
fn static_requests_call_no_lua() {
    let post = "wrk.method = 'POST'\nwrk.body = 'foo=bar'\n";
    let (calls, request) = lua_calls_for_1000_requests(post);
    assert_eq!(calls, 0.0);
    assert!(text(&request).starts_with("POST /index.html?q=1 HTTP/1.1\r\n"));
    let dynamic = format!("{post}local r\nfunction request() r = r or wrk.format() return r end\n");
    let (calls, _) = lua_calls_for_1000_requests(&dynamic);
    assert!(calls >= 1000.0, "{calls} calls for 1000 dynamic requests: the hook counts nothing");
}

#[test]
fn top_level_method_body_and_headers_make_the_static_request() {
    let (mut script, _file) = load(
        r#"
        wrk.method = "POST"
        wrk.body   = "foo=bar&baz=quux"
        wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
        "#,
    );
    let mut thread = script.thread(addr()).unwrap();
    assert!(Arc::ptr_eq(&thread.request().unwrap().unwrap(), &thread.request().unwrap().unwrap()));
    assert_eq!(
        text(&thread.request().unwrap().unwrap()),
        "POST /index.html?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 16\r\n\r\nfoo=bar&baz=quux"
    );
}

#[test]
fn a_host_header_from_the_command_line_is_kept() {
    let mut cfg = config();
    cfg.headers = vec![("host".into(), "virtual.example".into())];
    let (mut script, _file) = load_with("", &cfg);
    let mut thread = script.thread(addr()).unwrap();
    assert_eq!(
        text(&thread.request().unwrap().unwrap()),
        "GET /index.html?q=1 HTTP/1.1\r\nhost: virtual.example\r\n\r\n"
    );
}

#[test]
fn init_gets_the_url_and_the_extra_words() {
    let (mut script, _file) = load(
        r#"
        function init(args)
            wrk.path = "/" .. table.concat({ #args, args[0], args[1], args[2] }, "|")
        end
        "#,
    );
    let mut thread = script.thread(addr()).unwrap();
    let request = text(&thread.request().unwrap().unwrap());
    assert!(request.starts_with(&format!("GET /2|{URL}|first|second HTTP/1.1\r\n")), "{request}");
}

#[test]
fn old_api_init_calling_wrk_init_neither_recurses_nor_builds_twice() {
    let (mut script, _file) = load(
        r#"
        local format = wrk.format
        formats, inits = 0, 0
        wrk.format = function(...)
            formats = formats + 1
            return format(...)
        end
        init = function(args)
            inits = inits + 1
            wrk.init(args)
            wrk.path = "/after"
        end
        "#,
    );
    let mut thread = script.thread(addr()).unwrap();
    let counts: String = thread.lua.load("return formats .. ',' .. inits").eval().unwrap();
    assert_eq!(counts, "1,1");
    assert!(text(&thread.request().unwrap().unwrap()).starts_with("GET /after HTTP/1.1\r\n"));
}

#[test]
fn dynamic_requests_call_request_each_time() {
    let (mut script, _file) = load(
        r#"
        counter = 0
        request = function()
            path = "/" .. counter
            wrk.headers["X-Counter"] = counter
            counter = counter + 1
            return wrk.format(nil, path)
        end
        "#,
    );
    let mut thread = script.thread(addr()).unwrap();
    for i in 0..3 {
        assert_eq!(
            text(&thread.request().unwrap().unwrap()),
            format!("GET /{i} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Counter: {i}\r\n\r\n")
        );
    }
}

#[test]
fn pipelined_requests_count_three() {
    let (mut script, _file) = load(
        r#"
        init = function(args)
            local r = {}
            r[1] = wrk.format(nil, "/?foo")
            r[2] = wrk.format(nil, "/?bar")
            r[3] = wrk.format(nil, "/?baz")
            req = table.concat(r)
        end
        request = function()
            return req
        end
        "#,
    );
    let mut thread = script.thread(addr()).unwrap();
    assert_eq!(count_requests(&thread.request().unwrap().unwrap()).unwrap().is_head.len(), 3);
}

#[test]
fn response_sees_status_headers_and_body() {
    let (mut script, _file) = load(
        r#"
        token = nil
        path  = "/auth"
        request = function()
            return wrk.format("GET", path)
        end
        response = function(status, headers, body)
            if not token and status == 200 then
                token = headers["X-Token"]
                path  = "/resource"
                wrk.headers["X-Token"] = token
                seen = body
            end
        end
        "#,
    );
    let mut thread = script.thread(addr()).unwrap();
    assert!(thread.has_response());
    assert!(text(&thread.request().unwrap().unwrap()).starts_with("GET /auth HTTP/1.1\r\n"));
    let headers = vec![
        ("Content-Length".to_string(), "5".to_string()),
        ("X-Token".to_string(), "t0k".to_string()),
    ];
    thread.response(200, &headers, b"auth\n").unwrap();
    assert_eq!(
        text(&thread.request().unwrap().unwrap()),
        "GET /resource HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Token: t0k\r\n\r\n"
    );
    let seen: String = thread.lua.globals().get("seen").unwrap();
    assert_eq!(seen, "auth\n");
}

/// Issue 34, item 4: over HTTP/2 `ETag` arrives as `Etag`, and
/// `headers["ETag"]` was nil.
#[test]
fn response_headers_are_found_in_any_case_and_listed_as_received() {
    let (mut script, _file) = load(
        r#"
        response = function(status, headers, body)
            found = table.concat({ tostring(headers["ETag"]), tostring(headers["etag"]),
                                   tostring(headers["WWW-AUTHENTICATE"]), tostring(headers["Dnt"]),
                                   tostring(headers["X-Missing"]), tostring(headers[1]) }, " ")
            local names = {}
            for name in pairs(headers) do names[#names + 1] = name end
            table.sort(names)
            listed = table.concat(names, " ")
        end
        "#,
    );
    let mut thread = script.thread(addr()).unwrap();
    let headers: Vec<(String, String)> =
        [("Etag", "\"v1\""), ("Www-Authenticate", "Basic"), ("DNT", "1")]
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
    thread.response(200, &headers, b"").unwrap();
    let found: String = thread.lua.globals().get("found").unwrap();
    assert_eq!(found, "\"v1\" \"v1\" Basic 1 nil nil");
    let listed: String = thread.lua.globals().get("listed").unwrap();
    assert_eq!(listed, "DNT Etag Www-Authenticate");
}

#[test]
fn delay_is_in_milliseconds() {
    let (mut script, _file) =
        load("n = 0 function delay() n = n + 1 return n == 1 and 25 or 2.5 end");
    let mut thread = script.thread(addr()).unwrap();
    assert!(thread.has_delay());
    assert_eq!(thread.delay().unwrap(), Duration::from_millis(25));
    assert_eq!(thread.delay().unwrap(), Duration::from_micros(2500));
    let (mut script, _file) = load("function delay() return nil end");
    assert_eq!(script.thread(addr()).unwrap().delay().unwrap(), Duration::ZERO);
}

#[test]
fn stop_after_some_responses() {
    let (mut script, _file) = load(
        r#"
        local responses = 0
        function response()
            responses = responses + 1
            if responses == 2 then wrk.thread:stop() end
        end
        "#,
    );
    let mut thread = script.thread(addr()).unwrap();
    thread.response(200, &[], b"").unwrap();
    assert!(!thread.stop_requested());
    thread.response(200, &[], b"").unwrap();
    assert!(thread.stop_requested());
}

#[test]
fn setup_runs_in_the_main_state_before_init() {
    let (mut script, _file) = load(
        r#"
        local counter = 1
        threads = {}
        function setup(thread)
            thread:set("id", counter)
            thread:set("conf", { paths = { "/a", "/b" }, weight = 2 })
            table.insert(threads, thread)
            counter = counter + 1
        end
        function init(args)
            wrk.path = conf.paths[id] .. "?w=" .. conf.weight
            requests = 0
        end
        function request()
            requests = requests + 1
            return wrk.format()
        end
        function done(summary, latency, requests)
            local parts = {}
            for i, thread in ipairs(threads) do
                parts[i] = thread:get("id") .. ":" .. thread:get("requests")
            end
            report = table.concat(parts, " ")
        end
        "#,
    );
    let mut first = script.thread(addr()).unwrap();
    let mut second = script.thread(addr()).unwrap();
    assert!(text(&first.request().unwrap().unwrap()).starts_with("GET /a?w=2 HTTP/1.1\r\n"));
    assert!(text(&second.request().unwrap().unwrap()).starts_with("GET /b?w=2 HTTP/1.1\r\n"));
    second.request().unwrap().unwrap();
    script.done(&run_result(), vec![first, second]).unwrap();
    assert_eq!(main_global(&script, "report"), "1:1 2:2");
}

#[test]
fn setup_chooses_the_address() {
    let (mut script, _file) = load(
        r#"
        function setup(thread)
            local addrs = wrk.lookup("::1", "9090")
            if wrk.connect(addrs[1]) then error("nothing should listen on ::1 port 9090") end
            thread.addr = addrs[1]
        end
        function init()
            where = tostring(wrk.thread.addr)
        end
        "#,
    );
    let thread = script.thread(addr()).unwrap();
    assert_eq!(thread.endpoint(), tcp("[::1]:9090"));
    let seen: String = thread.lua.globals().get("where").unwrap();
    assert_eq!(seen, "::1:9090");
}

#[test]
fn the_thread_keeps_the_default_address_and_addrs_lists_the_checked_ones() {
    let (mut script, _file) =
        load("top = tostring(wrk.addrs) function setup(thread) first = tostring(wrk.addrs[1]) end");
    assert_eq!(main_global(&script, "top"), "nil");
    script.set_addrs(&[addr()]).unwrap();
    let thread = script.thread(tcp("127.0.0.2:1")).unwrap();
    assert_eq!(thread.endpoint(), tcp("127.0.0.2:1"));
    assert_eq!(main_global(&script, "first"), "127.0.0.1:8080");
}

/// With `--unix-socket`, `wrk.addrs` holds the socket; a script may still
/// send a thread to a TCP address.
#[test]
fn a_unix_socket_is_an_addr_like_the_others() {
    let (mut script, _file) = load(
        r#"
        function setup(thread)
            first = tostring(wrk.addrs[1])
            reachable = tostring(wrk.connect(wrk.addrs[1]))
            thread.addr = wrk.lookup("127.0.0.1", "9")[1]
        end
        "#,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let socket = Endpoint::Unix(path.clone().into());
    script.set_addrs(std::slice::from_ref(&socket)).unwrap();
    let thread = script.thread(socket).unwrap();
    assert_eq!(main_global(&script, "first"), format!("unix:{}", path.display()));
    assert_eq!(main_global(&script, "reachable"), "true");
    assert_eq!(thread.endpoint(), tcp("127.0.0.1:9"));
}

#[test]
fn a_bad_thread_field_is_a_script_error() {
    let (mut script, _file) = load("function setup(thread)\n  thread.addr = 'localhost'\nend");
    let Err(Error::Script(message)) = script.thread(addr()) else {
        panic!("expected a script error")
    };
    assert!(message.contains(":2: cannot set 'string' on thread"), "{message}");
}

/// A thread state of a script for `http://example.com:8080/`, where Lua
/// `code` is evaluated to a string.
fn eval_in_thread(script_source: &str, code: &str) -> String {
    let mut cfg = config();
    cfg.target = Target::parse("http://example.com:8080/").unwrap();
    let (mut script, _file) = load_with(script_source, &cfg);
    let thread = script.thread(addr()).unwrap();
    let value: mlua::LuaString =
        thread.lua.load(code).set_name("@code.lua").eval().unwrap_or_else(|e| panic!("{e}"));
    value.to_string_lossy()
}

#[test]
fn format_falls_back_to_the_wrk_fields() {
    assert_eq!(
        eval_in_thread("", "return wrk.format()"),
        "GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"
    );
    assert_eq!(
        eval_in_thread("wrk.method = 'HEAD'", "return wrk.format(nil, '/x?y=1')"),
        "HEAD /x?y=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"
    );
}

#[test]
fn format_sets_and_removes_content_length_in_the_table() {
    let code = r#"
        local out = { wrk.format("POST", "/p", nil, "abc"), tostring(wrk.headers["Content-Length"]),
                      wrk.format(), tostring(wrk.headers["Content-Length"]),
                      wrk.format("POST", nil, nil, "") }
        return table.concat(out, "|")
    "#;
    assert_eq!(
        eval_in_thread("", code),
        "POST /p HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 3\r\n\r\nabc|3|\
         GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n|nil|\
         POST / HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 0\r\n\r\n"
    );
}

#[test]
fn format_copies_host_into_own_headers_and_keeps_a_stable_order() {
    let code = r#"
        h = { ["X-B"] = "2", ["X-A"] = 1, Accept = "*/*" }
        return wrk.format("GET", "/", h) .. "|" .. h.Host
    "#;
    assert_eq!(
        eval_in_thread("", code),
        "GET / HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nX-A: 1\r\nX-B: 2\r\n\r\n|example.com:8080"
    );
    // A host in any letter case is the host, and it is not replaced.
    assert_eq!(
        eval_in_thread("", "return wrk.format(nil, nil, { host = 'other' })"),
        "GET / HTTP/1.1\r\nhost: other\r\n\r\n"
    );
}

#[test]
fn format_content_length_always_describes_the_body() {
    assert_eq!(
        eval_in_thread("", "return wrk.format('PUT', '/', { ['content-length'] = 99 }, 'xy')"),
        "PUT / HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 2\r\n\r\nxy"
    );
    assert_eq!(
        eval_in_thread(
            "",
            "return wrk.format('PUT', '/', { ['Transfer-Encoding'] = 'chunked' }, '0\\r\\n\\r\\n')"
        ),
        "PUT / HTTP/1.1\r\nHost: example.com:8080\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    );
}

#[test]
fn format_arguments_of_the_wrong_type_are_errors_at_the_callers_line() {
    let (mut script, _file) = load("");
    let thread = script.thread(addr()).unwrap();
    for (code, expected) in [
        ("\nwrk.format({})", "code.lua:2: bad argument #1 to 'format' (string expected, got table)"),
        ("wrk.format(nil, nil, 5)", "code.lua:1: bad argument #3 to 'format' (table expected, got number)"),
        ("wrk.format(nil, nil, { X = {} })", "code.lua:1: bad argument #3 to 'format' (strings or numbers in headers expected, got table)"),
    ] {
        let err = thread.lua.load(code).set_name("@code.lua").exec().unwrap_err();
        let message = describe(&err);
        assert!(message.starts_with(expected), "{message}");
    }
}

fn run_result() -> RunResult {
    let mut total = Stats::new(3);
    total.requests = 4;
    total.bytes = 400;
    total.errors.status = 1;
    total.corrected = latency_histogram(3);
    for v in [100, 200, 300, 400] {
        total.corrected.record(v).unwrap();
    }
    total.rate_samples = vec![100.0, 300.0];
    RunResult::measured(total, Duration::from_secs(2))
}

#[test]
fn done_gets_summary_latency_and_requests() {
    let (mut script, _file) = load(
        r#"
        function done(summary, latency, requests)
            local out = {}
            for _, p in pairs({ 50, 90, 99, 99.999 }) do
                out[#out + 1] = string.format("%g,%d", p, latency:percentile(p))
            end
            out[#out + 1] = table.concat({ summary.duration, summary.requests, summary.bytes,
                                           summary.errors.status, summary.errors.connect }, ",")
            out[#out + 1] = table.concat({ latency.min, latency.max, latency.mean, #latency, latency[2] }, ",")
            out[#out + 1] = table.concat({ requests.min, requests.max, requests.mean, #requests }, ",")
            csv = table.concat(out, "\n")
        end
        "#,
    );
    script.done(&run_result(), vec![]).unwrap();
    assert_eq!(
        main_global(&script, "csv"),
        "50,200\n90,400\n99,400\n99.999,400\n2000000,4,400,1,0\n100,400,250,4,200\n100,300,200,2"
    );
}

#[test]
fn done_is_optional() {
    let (mut script, _file) = load("");
    script.done(&run_result(), vec![]).unwrap();
}

#[test]
fn syntax_errors_stop_the_load_with_file_and_line() {
    let file = script_file("wrk.method = 'POST'\nif then\n");
    let Err(Error::Script(message)) = Script::load(file.path(), &config()) else {
        panic!("expected an error")
    };
    let expected = format!("{}:2: unexpected symbol near 'then'", file.path().display());
    assert_eq!(message, expected);
}

#[test]
fn runtime_errors_while_loading_have_file_line_and_traceback() {
    let file = script_file("local function f()\n  error('boom')\nend\nf()\n");
    let Err(Error::Script(message)) = Script::load(file.path(), &config()) else {
        panic!("expected an error")
    };
    let path = file.path().display();
    assert!(message.starts_with(&format!("{path}:2: boom\nstack traceback:")), "{message}");
    assert!(message.contains(&format!("{path}:4: in main chunk")), "{message}");
}

#[test]
fn an_unreadable_script_is_a_setup_error() {
    let Err(Error::Setup(message)) = Script::load(Path::new("/nonexistent/x.lua"), &config())
    else {
        panic!("expected an error")
    };
    assert!(message.starts_with("cannot read script /nonexistent/x.lua: "), "{message}");
}

#[test]
fn runtime_errors_in_request_have_file_line_and_traceback() {
    let (mut script, file) = load("n = 0\nfunction request()\n  n = n + 1\n  if n > 1 then return nil .. 'x' end\n  return wrk.format()\nend\n");
    let mut thread = script.thread(addr()).unwrap();
    thread.request().unwrap().unwrap();
    let message = thread.request().unwrap_err().to_string();
    let path = file.path().display();
    assert!(
        message.starts_with(&format!("{path}:4: attempt to concatenate a nil value")),
        "{message}"
    );
    assert!(
        message.contains("stack traceback:") && message.contains("in function 'request'"),
        "{message}"
    );
}

#[test]
fn request_must_return_a_string_or_nil() {
    let (mut script, file) = load("function request() return 42 end");
    let mut thread = script.thread(addr()).unwrap();
    let message = thread.request().unwrap_err().to_string();
    assert_eq!(
        message,
        format!(
            "{}: request() returned number instead of the request string",
            file.path().display()
        )
    );
    // nil is no request this time (wrk's connection then sends nothing).
    let (mut script, _file) = load("function request() end");
    let mut thread = script.thread(addr()).unwrap();
    assert_eq!(thread.request().unwrap(), None);
}

#[test]
fn errors_in_init_and_setup_are_script_errors() {
    let (mut script, _file) = load("function init() error('no init') end");
    let Err(Error::Script(message)) = script.thread(addr()) else { panic!("expected an error") };
    assert!(message.contains(":1: no init"), "{message}");
    let (mut script, _file) = load("function setup(t) t:set('f', print) end");
    let Err(Error::Script(message)) = script.thread(addr()) else { panic!("expected an error") };
    assert!(message.contains(":1: cannot transfer 'function' to thread"), "{message}");
}

#[test]
fn thread_scripts_can_move_to_another_thread_and_back() {
    let (mut script, _file) =
        load("function request() count = (count or 0) + 1 return wrk.format() end");
    let thread = script.thread(addr()).unwrap();
    let thread = std::thread::spawn(move || {
        let mut thread = thread;
        thread.request().unwrap().unwrap();
        thread
    })
    .join()
    .unwrap();
    let count: f64 = thread.lua.globals().get("count").unwrap();
    assert_eq!(count, 1.0);
}

/// Calls per second of a dynamic `request()` returning
/// `wrk.format(nil, "/path")` with three headers, through
/// [`ThreadScript::request`]: the best of 9 rounds (the machine is shared).
/// `cargo test --release --lib script::tests::request_call_rate -- --ignored --nocapture`
#[test]
#[ignore]
fn request_call_rate() {
    let mut cfg = config();
    cfg.headers = vec![("Accept".into(), "*/*".into()), ("User-Agent".into(), "pace".into())];
    let (mut script, _file) =
        load_with("function request() return wrk.format(nil, '/path') end", &cfg);
    let mut thread = script.thread(addr()).unwrap();
    let calls = 200_000;
    let mut best = Duration::MAX;
    for _ in 0..9 {
        let start = std::time::Instant::now();
        for _ in 0..calls {
            std::hint::black_box(thread.request().unwrap().unwrap());
        }
        best = best.min(start.elapsed());
    }
    println!(
        "dynamic request(): {:.0} calls/s, {:.0} ns/call",
        calls as f64 / best.as_secs_f64(),
        best.as_nanos() as f64 / calls as f64
    );
}

/// The scripts of `tests/scripts` (used by the end-to-end tests) go
/// through every call without a Lua error, in wrk's order.
#[test]
fn example_scripts_run_through_every_call() {
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut cfg = config();
    cfg.target =
        Target::parse(&format!("http://127.0.0.1:{}/echo", server.local_addr().unwrap().port()))
            .unwrap();
    let addr = Endpoint::Tcp(server.local_addr().unwrap());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    // wrk's example scripts (the end-to-end tests run the others, which
    // need arguments or fail on purpose).
    let names = [
        "addr.lua",
        "auth.lua",
        "counter.lua",
        "delay.lua",
        "old_api_pipeline.lua",
        "pipeline.lua",
        "post.lua",
        "report.lua",
        "setup.lua",
        "static_calls.lua",
        "stop.lua",
    ];
    for name in names {
        let path = dir.join(name);
        let run = || -> Result<(), Error> {
            let mut script = Script::load(&path, &cfg)?;
            let mut threads = Vec::new();
            for _ in 0..2 {
                let mut thread = script.thread(addr.clone())?;
                let request = thread.request()?.expect("a request");
                count_requests(&request).map_err(|err| Error::Script(err.to_string()))?;
                thread.delay()?;
                thread.response(200, &[("X-Token".into(), "tok123".into())], b"ok\n")?;
                threads.push(thread);
            }
            script.done(&run_result(), threads)
        };
        if let Err(err) = run() {
            panic!("{name}: {err}");
        }
    }
    let Err(Error::Script(message)) = Script::load(&dir.join("syntax_error.lua"), &cfg) else {
        panic!("syntax_error.lua loaded")
    };
    assert!(message.ends_with("syntax_error.lua:4: unexpected symbol near 'then'"), "{message}");
}
