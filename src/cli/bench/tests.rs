use std::path::Path;

use super::super::options::{resolve_long, Resolution};
use super::super::parse as parse_command;
use super::*;
use crate::config::{BenchConfig, Mode};
use crate::metrics::MetricsOptions;
use crate::plan::PlanSpec;
use crate::run::Bench;
use crate::target::Scheme;

fn args(line: &[&str]) -> Vec<OsString> {
    line.iter().map(OsString::from).collect()
}

/// The benchmark a command line yields; fails the test otherwise.
fn bench(line: &[&str]) -> Bench {
    match parse_command(args(line)) {
        Ok(Command::Bench { bench, .. }) => *bench,
        Ok(_) => panic!("{line:?}: not a benchmark"),
        Err(err) => panic!("{line:?}: {err}"),
    }
}

/// The run's configuration a command line yields.
fn config(line: &[&str]) -> BenchConfig {
    bench(line).config
}

/// The message of the usage error a command line yields.
fn error(line: &[&str]) -> String {
    match parse_command(args(line)) {
        Err(Error::Usage(message)) => message,
        Err(other) => panic!("{line:?}: not a usage error: {other}"),
        Ok(_) => panic!("{line:?}: accepted"),
    }
}

/// The message of the setup error (exit 2) a command line yields.
fn setup_error(line: &[&str]) -> String {
    match parse_command(args(line)) {
        Err(Error::Setup(message)) => message,
        Err(other) => panic!("{line:?}: not a setup error: {other}"),
        Ok(_) => panic!("{line:?}: accepted"),
    }
}

const URL: &str = "http://127.0.0.1:8080/";

/// Every way getopt_long accepts a value, for one option, abbreviated
/// to its shortest unambiguous prefix.
fn value_forms(short: &str, long: &str, value: &str) -> Vec<Vec<String>> {
    let mut forms = vec![
        vec![format!("{short}{value}"), URL.into()],
        vec![short.into(), value.into(), URL.into()],
        vec![format!("{long}={value}"), URL.into()],
        vec![long.into(), value.into(), URL.into()],
        vec![URL.into(), short.into(), value.into()],
    ];
    if let Some(abbreviated) = shortest_prefix(long) {
        forms.push(vec![abbreviated, value.into(), URL.into()]);
    }
    forms
}

/// The shortest prefix of `--long` that names only that option, if a
/// prefix shorter than the name does.
fn shortest_prefix(long: &str) -> Option<String> {
    let name = long.trim_start_matches('-');
    let flag = SPECS.iter().find(|spec| spec.long == name)?.flag;
    (1..name.len()).map(|n| &name[..n]).find_map(|prefix| {
        let unique =
            SPECS.iter().filter(|spec| spec.long.starts_with(prefix)).all(|spec| spec.flag == flag);
        unique.then(|| format!("--{prefix}"))
    })
}

fn each_form(short: &str, long: &str, value: &str, check: impl Fn(&Bench)) {
    for line in value_forms(short, long, value) {
        let line: Vec<&str> = line.iter().map(String::as_str).collect();
        check(&bench(&line));
    }
}

#[test]
fn defaults_are_wrks() {
    let cfg = bench(&[URL]);
    assert_eq!(cfg.config.connections, 10);
    assert_eq!(cfg.config.threads, 2);
    assert_eq!(cfg.config.duration, Some(Duration::from_secs(10)));
    assert_eq!(cfg.config.timeout, Duration::from_secs(2));
    assert_eq!(cfg.config.mode, Mode::ClosedLoop);
    assert_eq!(cfg.config.digits, 3);
    assert!(!cfg.report.latency && !cfg.report.u_latency);
    assert!(!cfg.config.batch_latency && !cfg.config.tls.insecure);
    let run = &cfg.config;
    assert!(run.headers.is_empty() && run.script.is_none() && run.script_args.is_empty());
    // The progress is on, for when stderr is a terminal.
    assert_eq!(cfg.outputs, OutputOptions::default());
    assert!(cfg.progress);
    assert_eq!(cfg.config.target.port, 8080);
}

#[test]
fn connections() {
    each_form("-c", "--connections", "20", |cfg| assert_eq!(cfg.config.connections, 20));
    assert_eq!(config(&["-c1k", URL]).connections, 1000);
    assert_eq!(config(&["-c", "1.5K", URL]).connections, 1500);
    assert_eq!(config(&["-c5", "-c20", URL]).connections, 20);
}

#[test]
fn threads() {
    each_form("-t", "--threads", "4", |cfg| assert_eq!(cfg.config.threads, 4));
    assert_eq!(config(&["-t2", "-t5", URL]).threads, 5);
    // As in wrk (wrx's --thread-timeseries made them ambiguous there).
    for prefix in ["--th", "--thr", "--thread"] {
        assert_eq!(config(&[prefix, "3", URL]).threads, 3, "{prefix}");
    }
    assert!(bench(&["--thread-", URL]).report.thread_timeseries);
}

#[test]
fn duration() {
    each_form("-d", "--duration", "30s", |cfg| {
        assert_eq!(cfg.config.duration, Some(Duration::from_secs(30)))
    });
    assert_eq!(config(&["-d", "5", URL]).duration, Some(Duration::from_secs(5)));
    assert_eq!(config(&["-d", "2m", URL]).duration, Some(Duration::from_secs(120)));
    assert_eq!(config(&["-d", "1h", URL]).duration, Some(Duration::from_secs(3600)));
    assert_eq!(config(&["-d", "500ms", URL]).duration, Some(Duration::from_millis(500)));
    assert_eq!(config(&["--dur=1.5s", URL]).duration, Some(Duration::from_millis(1500)));
    assert_eq!(config(&["-d1s", "-d2s", URL]).duration, Some(Duration::from_secs(2)));
    // wrk's --d, though --digits starts the same way.
    assert_eq!(config(&["--d=3s", URL]).duration, Some(Duration::from_secs(3)));
    assert_eq!(config(&["--di", "2", URL]).digits, 2);
}

#[test]
fn timeout() {
    each_form("-T", "--timeout", "5s", |cfg| {
        assert_eq!(cfg.config.timeout, Duration::from_secs(5))
    });
    assert_eq!(config(&["--timeout", "1.5s", URL]).timeout, Duration::from_millis(1500));
    assert_eq!(config(&["-T", "250ms", URL]).timeout, Duration::from_millis(250));
    // As in wrk (wrx's --timeseries made them ambiguous there).
    for prefix in ["--ti", "--tim", "--time"] {
        assert_eq!(config(&[prefix, "3s", URL]).timeout, Duration::from_secs(3), "{prefix}");
    }
    assert_eq!(bench(&["--times=1s", URL]).report.timeseries, Some(Duration::from_secs(1)));
}

#[test]
fn rate() {
    each_form("-R", "--rate", "2k", |cfg| {
        assert_eq!(cfg.config.mode, Mode::Paced(PlanSpec::constant(2000.0)))
    });
    assert_eq!(config(&["-R", "0.5", URL]).mode, Mode::Paced(PlanSpec::constant(0.5)));
    assert_eq!(config(&["-R1M", URL]).mode, Mode::Paced(PlanSpec::constant(1e6)));
    assert_eq!(config(&["-R1", "-R10", URL]).mode, Mode::Paced(PlanSpec::constant(10.0)));
}

#[test]
fn digits() {
    each_form("-D", "--digits", "2", |cfg| assert_eq!(cfg.config.digits, 2));
    assert_eq!(config(&["-D1", URL]).digits, 1);
    assert_eq!(config(&["-D5", URL]).digits, 5);
}

#[test]
fn report_interval() {
    each_form("-p", "--report_interval", "2s", |bench| {
        assert_eq!(bench.outputs.report_interval, Some(Duration::from_secs(2)))
    });
    assert_eq!(
        bench(&["-p", "500ms", URL]).outputs.report_interval,
        Some(Duration::from_millis(500))
    );
    // yicwang: 0 = disabled.
    assert_eq!(bench(&["-p5", "-p0", URL]).outputs.report_interval, None);
    assert_eq!(error(&["-p", "5ms", URL]), "invalid value for '-p': '5ms' is shorter than 10ms");
    assert!(error(&["-p", "x", URL]).contains("'-p'"));
}

#[test]
fn json() {
    for flag in ["-e", "--json", "--json_encoding", "--js", "--json_"] {
        assert!(bench(&[flag, URL]).outputs.json, "{flag}");
    }
    assert!(bench(&["-Le", URL]).outputs.json);
}

#[test]
fn hlog() {
    for line in [
        &["--hlog", "run.hlog", URL][..],
        &["--hlog=run.hlog", URL],
        &["--hl", "run.hlog", URL],
        &[URL, "--hlog", "run.hlog"],
    ] {
        assert_eq!(bench(line).outputs.hlog.as_deref(), Some("run.hlog".as_ref()), "{line:?}");
    }
}

#[test]
fn html() {
    for line in [&["--html", "r.html", URL][..], &["--htm=r.html", URL], &[URL, "--html", "r.html"]]
    {
        assert_eq!(bench(line).outputs.html.as_deref(), Some("r.html".as_ref()), "{line:?}");
    }
    assert!(error(&["--html"]).contains("--html"), "{}", error(&["--html"]));
}

#[test]
fn wrx_options() {
    let cfg = bench(&["--timeseries", "--thread-timeseries", "--histogram", URL]);
    assert_eq!(cfg.report.timeseries, Some(Duration::from_millis(250)));
    assert!(cfg.report.thread_timeseries && cfg.report.histogram);
    let cfg = bench(&["--timeseries=1s", URL]);
    assert_eq!(cfg.report.timeseries, Some(Duration::from_secs(1)));
    assert_eq!(bench(&["--times=100ms", URL]).report.timeseries, Some(Duration::from_millis(100)));
    // As getopt's optional arguments: only an attached value is taken.
    let cfg = bench(&["--timeseries", URL, "500ms"]);
    assert_eq!(cfg.report.timeseries, Some(Duration::from_millis(250)));
    assert_eq!(cfg.config.script_args, ["500ms"]);
    // A slot written apart is refused with the spelling that works.
    for args in [&["--timeseries", "500ms", URL][..], &["--times", "2s", URL, "-t1"]] {
        let message = error(args);
        assert!(message.contains("write --timeseries="), "{message}");
    }
    // Only the word right after it: here 500ms is the (bad) URL.
    assert!(error(&["--timeseries", "-t1", "500ms"]).contains("invalid URL"));
    assert!(bench(&[URL]).progress);
    assert!(!bench(&["--no-progress", URL]).progress);
    assert!(!bench(&["--no", URL]).progress);
    assert!(error(&["--timeseries=1ms", URL]).contains("shorter than 10ms"));
    assert!(bench(&["--thread-", URL]).report.thread_timeseries);
    assert!(bench(&["--hi", URL]).report.histogram);
    assert_eq!(
        error(&["--h", URL]),
        "option '--h' is ambiguous; possibilities: '--header' '--http2' '--http3' '--help' '--hlog' \
         '--html' '--histogram'"
    );
    assert_eq!(
        error(&["--histogram=yes", URL]),
        "option '--histogram' does not take a value (got 'yes')"
    );
}

#[test]
fn percentiles() {
    let cfg = bench(&["--percentiles", "99.9, 50,90,99,50", URL]);
    assert_eq!(cfg.report.percentiles, Some(vec![50.0, 90.0, 99.0, 99.9]));
    // They are printed without -L.
    assert!(cfg.report.latency && !cfg.report.u_latency);
    assert_eq!(bench(&["--perc=0,100", URL]).report.percentiles, Some(vec![0.0, 100.0]));
    assert_eq!(
        error(&["--percentiles", "50,101", URL]),
        "invalid value for '--percentiles': '101' is not a percentile from 0 to 100 (e.g. 50,99,99.9)"
    );
    for bad in ["", "50,", "p99", "nan", "-1", "inf"] {
        assert!(error(&["--percentiles", bad, URL]).contains("is not a percentile"), "{bad}");
    }
}

#[test]
fn metrics() {
    let addr = |host: &str, port| ListenAddr { host: host.into(), port };
    let listen =
        |addr, linger| MetricsOptions { listen: Some(addr), linger, push: None, push_token: None };
    assert_eq!(bench(&[URL]).metrics, None);
    for line in [
        &["--metrics", "127.0.0.1:9464", URL][..],
        &["--metrics=127.0.0.1:9464", URL],
        &[URL, "--metrics", "127.0.0.1:9464"],
    ] {
        let expected = listen(addr("127.0.0.1", 9464), Duration::ZERO);
        assert_eq!(bench(line).metrics, Some(expected), "{line:?}");
    }
    let cfg = bench(&["--metrics", ":0", "--metrics-linger", "2s", URL]);
    assert_eq!(cfg.metrics, Some(listen(addr("", 0), Duration::from_secs(2))));
    let v6 = bench(&["--metrics", "[::1]:9464", "--metrics-l=500ms", URL]).metrics;
    assert_eq!(v6, Some(listen(addr("::1", 9464), Duration::from_millis(500))));
    assert_eq!(
        error(&["--metrics", "9464", URL]),
        "invalid value for '--metrics': '9464' is not HOST:PORT (e.g. 127.0.0.1:9464, \
         :9464 for every interface, [::1]:9464)"
    );
    let bad_port = error(&["--metrics", "h:99999", URL]);
    assert!(bad_port.ends_with("'99999' is not a port (0 to 65535)"), "{bad_port}");
    assert_eq!(error(&["--metrics-linger", "1s", URL]), "--metrics-linger needs --metrics");
    let bad_linger = error(&["--metrics", ":1", "--metrics-linger", "x", URL]);
    assert!(bad_linger.contains("'--metrics-linger'"), "{bad_linger}");
    // --metrics is a prefix of the others: typed whole, it is itself.
    let prefix = error(&["--metr", ":1", URL]);
    assert!(prefix.starts_with("option '--metr' is ambiguous"), "{prefix}");

    // Remote write alone, or with the listener.
    let write = "http://user:pw@127.0.0.1:9090/api/v1/write";
    let push = bench(&["--metrics-push", write, URL]).metrics.unwrap();
    assert_eq!((push.listen, push.linger), (None, Duration::ZERO));
    let target = push.push.unwrap();
    assert_eq!(
        (target.host.as_str(), target.port, target.path.as_str()),
        ("127.0.0.1", 9090, "/api/v1/write")
    );
    assert!(target.basic_authorization().is_some());
    let both = bench(&["--metrics", ":1", "--metrics-push", write, URL]).metrics.unwrap();
    assert!(both.listen.is_some() && both.push.is_some());
    let tls = bench(&["--metrics-push", "https://prom/api/v1/write", URL]).metrics.unwrap();
    assert_eq!(tls.push.unwrap().scheme, Scheme::Https);
    assert!(error(&["--metrics-push", "prom:9090", URL]).contains("invalid URL"));

    // A bearer token, from a file, for the push alone.
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "abc.def\n").unwrap();
    let token = token.to_str().unwrap();
    let plain = "https://prom/api/v1/write";
    let with_token =
        bench(&["--metrics-push", plain, "--metrics-push-token-file", token, URL]).metrics;
    assert!(with_token.unwrap().push_token.is_some());
    assert_eq!(
        error(&["--metrics-push-token-file", token, URL]),
        "--metrics-push-token-file needs --metrics-push"
    );
    assert_eq!(
        error(&["--metrics-push", write, "--metrics-push-token-file", token, URL]),
        "--metrics-push-token-file and user:password@ in the --metrics-push URL cannot be \
         used together"
    );
}

#[test]
fn slo() {
    let texts = |bench: Bench| -> Vec<String> {
        bench.slo.iter().map(crate::slo::Objective::text).collect()
    };
    let cfg = bench(&["--slo", "p99<10ms, errors<0.1%", URL]);
    assert_eq!(texts(cfg), ["p99<10ms", "errors<0.1%"]);
    // Repeated, the lists add up; abbreviated to --sl.
    let cfg = bench(&["-R10", "--slo=p99<10ms", URL, "--sl", "rate>99%,lag.p99<1ms"]);
    assert_eq!(texts(cfg), ["p99<10ms", "rate>99%", "lag.p99<1ms"]);
    assert!(bench(&[URL]).slo.is_empty());
    assert_eq!(
        error(&["--slo", "p99<1x", URL]),
        "invalid value for '--slo': 'p99<1x': '1x' is not a time (examples: 10ms, 500us, 1.5s)"
    );
    assert_eq!(
        error(&["--slo", "rate>99%", URL]),
        "invalid value for '--slo': 'rate>99%': a share of the target rate needs a plan \
         (-R or --stages); without one, give requests/s (e.g. rate>1000)"
    );
    assert!(error(&["--slo", "lag.max<1ms", URL]).contains("only with a plan"));
    assert_eq!(texts(bench(&["--slo", "rate>100", URL])), ["rate>100"]);
    assert_eq!(error(&[URL, "--slo"]), "option '--slo' needs a value");
    // wrk's --s is --script still.
    assert_eq!(config(&["--s", "x.lua", URL]).script.as_deref(), Some("x.lua".as_ref()));
    assert_eq!(config(&["--sc", "x.lua", URL]).script.as_deref(), Some("x.lua".as_ref()));
}

#[test]
fn strict() {
    assert!(!bench(&[URL]).strict);
    assert!(bench(&["--strict", URL]).strict);
    // Abbreviated as far as it is alone, after the URL as any option.
    assert!(bench(&[URL, "--stri"]).strict);
    assert_eq!(
        error(&["--strict=yes", URL]),
        "option '--strict' does not take a value (got 'yes')"
    );
}

#[test]
fn script() {
    each_form("-s", "--script", "a.lua", |cfg| {
        assert_eq!(cfg.config.script.as_deref(), Some("a.lua".as_ref()))
    });
}

#[test]
fn flags() {
    let cfg = bench(&["-L", "-B", "-k", URL]);
    assert!(
        cfg.report.latency
            && cfg.config.batch_latency
            && cfg.config.tls.insecure
            && !cfg.report.u_latency
    );
    let cfg = bench(&["--latency", "--batch_latency", "--insecure", URL]);
    assert!(cfg.report.latency && cfg.config.batch_latency && cfg.config.tls.insecure);
    let cfg = bench(&["--lat", "--batch", "--ins", URL]);
    assert!(cfg.report.latency && cfg.config.batch_latency && cfg.config.tls.insecure);
    assert!(config(&[URL, "-k"]).tls.insecure);
}

#[test]
fn u_latency_implies_latency() {
    for flag in ["-U", "--u_latency", "--u"] {
        let cfg = bench(&[flag, URL]);
        assert!(cfg.report.u_latency && cfg.report.latency, "{flag}");
    }
}

#[test]
fn clusters() {
    let cfg = bench(&["-Lt2", URL]);
    assert!(cfg.report.latency);
    assert_eq!(cfg.config.threads, 2);
    let cfg = bench(&["-LUkc100", "-t4", URL]);
    assert!(cfg.report.latency && cfg.report.u_latency && cfg.config.tls.insecure);
    assert_eq!((cfg.config.connections, cfg.config.threads), (100, 4));
}

#[test]
fn url_credentials_are_basic_authorization_unless_a_header_says_otherwise() {
    let cfg = config(&["http://user:pw@127.0.0.1:8080/"]);
    assert_eq!(cfg.headers, vec![("Authorization".into(), "Basic dXNlcjpwdw==".into())]);
    let cfg = config(&["-H", "authorization: Bearer t", "http://user:pw@127.0.0.1:8080/"]);
    assert_eq!(cfg.headers, vec![("authorization".into(), "Bearer t".into())]);
}

#[test]
fn headers_keep_their_order() {
    let cfg = config(&[
        "-H",
        "Accept: text/plain",
        URL,
        "--header=X-Token:abc",
        "-HHost:   example.com:8080",
        "-H",
        "X-Empty:",
    ]);
    let expected = [
        ("Accept", "text/plain"),
        ("X-Token", "abc"),
        ("Host", "example.com:8080"),
        ("X-Empty", ""),
    ];
    let got: Vec<(&str, &str)> =
        cfg.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(got, expected);
}

#[test]
fn bad_headers() {
    assert!(error(&["-H", "NoColon", URL]).contains("expected 'Name: value'"));
    assert!(error(&["-H", ": value", URL]).contains("empty name"));
    assert!(error(&["-H", "Bad Name: x", URL]).contains("may not contain spaces"));
    assert!(error(&["-H", "X: a\r\nY: b", URL]).contains("line breaks"));
    assert_eq!(error(&["-H", "oops", URL]), "invalid header 'oops': expected 'Name: value'");
}

#[test]
fn options_after_the_url_and_script_args() {
    let cfg = config(&[URL, "-t4", "a", "-c", "8", "b"]);
    assert_eq!((cfg.threads, cfg.connections), (4, 8));
    assert_eq!(cfg.script_args, ["a", "b"]);
    assert_eq!(cfg.target.url, URL);
}

#[test]
fn double_dash_ends_options() {
    let cfg = config(&[URL, "-t4", "a", "--", "-z", "--threads=9", "b"]);
    assert_eq!(cfg.threads, 4);
    assert_eq!(cfg.script_args, ["a", "-z", "--threads=9", "b"]);
    // The first word after `--` is the URL when none came before.
    let cfg = config(&["-t1", "--", URL, "-c5"]);
    assert_eq!(cfg.target.url, URL);
    assert_eq!(cfg.script_args, ["-c5"]);
    assert_eq!(cfg.connections, 10);
}

#[test]
fn url_like_extra_words_are_script_args() {
    let cfg = config(&[URL, "http://other/", "localhost:1/"]);
    assert_eq!(cfg.script_args, ["http://other/", "localhost:1/"]);
}

#[test]
fn ambiguous_long_options() {
    assert_eq!(
        error(&["--t", "2", URL]),
        "option '--t' is ambiguous; possibilities: '--threads' '--timeout' \
         '--tls-server-name' '--targets' '--targets-order' '--timeseries' \
         '--thread-timeseries'"
    );
    assert!(error(&["--he", URL]).contains("'--header' '--help'"));
    assert_eq!(
        error(&["--st", "1s:10", URL]),
        "option '--st' is ambiguous; possibilities: '--stages' '--start-at' '--streams' \
         '--strict'"
    );
    assert_eq!(
        error(&["--str", URL]),
        "option '--str' is ambiguous; possibilities: '--streams' '--strict'"
    );
}

#[test]
fn unknown_options() {
    assert_eq!(error(&["--foo", URL]), "unknown option '--foo'");
    assert_eq!(error(&["-x", URL]), "unknown option '-x'");
    assert_eq!(error(&["-Lx", URL]), "unknown option '-x'");
    assert_eq!(error(&["--=2", URL]), "unknown option '--'");
    // Close to an option: said, after the same start.
    assert_eq!(
        error(&["--threadsx=2", URL]),
        "unknown option '--threadsx' (did you mean --threads?)"
    );
    assert_eq!(
        error(&["--duraton", "1s", URL]),
        "unknown option '--duraton' (did you mean --duration?)"
    );
    assert_eq!(
        error(&["--report-interval", "1s", URL]),
        "unknown option '--report-interval' (did you mean --report_interval?)"
    );
    assert_eq!(error(&["--xyzzy", URL]), "unknown option '--xyzzy'");
}

#[test]
fn missing_values() {
    assert_eq!(error(&[URL, "-c"]), "option '-c' needs a value");
    assert_eq!(error(&[URL, "--conn"]), "option '--connections' needs a value");
    assert_eq!(error(&[URL, "-H"]), "option '-H' needs a value");
}

#[test]
fn flags_take_no_value() {
    assert_eq!(
        error(&["--latency=yes", URL]),
        "option '--latency' does not take a value (got 'yes')"
    );
}

#[test]
fn bad_numbers_name_the_option_and_units() {
    assert_eq!(
        error(&["-c", "abc", URL]),
        "invalid value for '-c': 'abc' is not a number (examples: 10, 1.5k, 2M)"
    );
    assert_eq!(
        error(&["--duration", "5x", URL]),
        "invalid value for '--duration': '5x' is not a duration \
         (examples: 30s, 500ms, 1.5m, 2h)"
    );
    assert!(error(&["-t", "1.5", URL]).contains("'-t': '1.5' is not a whole number"));
    assert!(error(&["-c", "-1", URL]).contains("'-c'"));
    assert!(error(&["-R", "fast", URL]).contains("'-R'"));
    assert!(error(&["-T", "2parsecs", URL]).contains("'-T'"));
    assert!(error(&["-D", "x", URL]).contains("'-D'"));
    assert!(error(&["-d", "1000000000h", URL]).contains("longer than 365 days"));
}

#[test]
fn range_checks() {
    assert_eq!(error(&["-t", "0", URL]), "-t/--threads must be at least 1");
    assert_eq!(error(&["-c", "0", "-t1", URL]), "-c/--connections must be at least 1");
    assert_eq!(
        error(&["-c", "2", "-t", "4", URL]),
        "number of connections (2) must be >= threads (4)"
    );
    assert_eq!(error(&["-d", "0", URL]), "-d/--duration must be greater than 0");
    assert_eq!(error(&["-d", "0ms", URL]), "-d/--duration must be greater than 0");
    assert_eq!(error(&["-T", "0", URL]), "-T/--timeout must be greater than 0");
    assert_eq!(error(&["-R", "0", URL]), "-R/--rate must be greater than 0");
    assert_eq!(error(&["-R", "0.0", URL]), "-R/--rate must be greater than 0");
    let huge = format!("1{}", "0".repeat(400));
    assert!(error(&["-R", &huge, URL]).ends_with("is too large"));
    assert_eq!(error(&["-D", "9", URL]), "-D/--digits must be between 1 and 5 (got 9)");
    assert_eq!(error(&["-D", "0", URL]), "-D/--digits must be between 1 and 5 (got 0)");
    // Last one wins, and only the final values are checked.
    assert_eq!(config(&["-t0", "-t1", URL]).threads, 1);
}

#[test]
fn urls() {
    assert_eq!(error(&[]), "missing URL (try 'pace --help')");
    assert_eq!(error(&["-t2", "-c4"]), "missing URL (try 'pace --help')");
    assert!(error(&["localhost:8080/"]).starts_with("invalid URL: localhost:8080/"));
    assert!(error(&["http://"]).starts_with("invalid URL: http://"));
    let cfg = config(&["http://[::1]:9000/x"]);
    assert_eq!((cfg.target.host.as_str(), cfg.target.port), ("::1", 9000));
}

#[test]
fn non_utf8_arguments_are_errors_not_panics() {
    use std::os::unix::ffi::OsStringExt;
    let bad = OsString::from_vec(vec![b'h', 0xff]);
    for line in [
        vec![bad.clone()],
        vec![URL.into(), bad.clone()],
        vec!["-c".into(), bad.clone(), URL.into()],
        vec![OsString::from_vec(vec![b'-', 0xff]), URL.into()],
        vec![OsString::from_vec(vec![b'-', b'-', 0xff]), URL.into()],
    ] {
        assert!(matches!(parse_command(line), Err(Error::Usage(_))));
    }
    // A script path needs no UTF-8.
    let cfg = match parse_command(vec!["-s".into(), bad.clone(), URL.into()]) {
        Ok(Command::Bench { bench, .. }) => bench.config,
        _ => panic!("script path rejected"),
    };
    assert_eq!(cfg.script, Some(PathBuf::from(bad)));
}

#[test]
fn version() {
    let version = version_line();
    assert!(version.starts_with(&format!("pace {} [epoll]", env!("CARGO_PKG_VERSION"))));
    for line in [&["-v"][..], &["--version"], &["--vers"], &["-v", "-t", "0"]] {
        assert!(matches!(parse_command(args(line)), Ok(Command::Version(ref v)) if *v == version));
    }
    match parse_command(args(&["-v", URL])) {
        Ok(Command::Bench { print_version: true, .. }) => {}
        _ => panic!("-v with a URL must run"),
    }
    match parse_command(args(&[URL])) {
        Ok(Command::Bench { print_version: false, .. }) => {}
        _ => panic!("no -v, no version line"),
    }
}

#[test]
fn help_wins() {
    for line in [&["-h"][..], &["--help"], &["--hel"], &[URL, "-h"], &["-t0", "-h"]] {
        assert!(matches!(parse_command(args(line)), Ok(Command::Help(_))), "{line:?}");
    }
}

#[test]
fn method() {
    each_form("-m", "--method", "POST", |cfg| assert_eq!(cfg.config.method, "POST"));
    assert_eq!(config(&[URL]).method, "GET");
    assert_eq!(config(&["--meth", "HEAD", URL]).method, "HEAD");
    // --metrics starts the same way.
    assert!(error(&["--m", "HEAD", URL]).starts_with("option '--m' is ambiguous"));
    // Sent as typed: methods are case-sensitive.
    assert_eq!(config(&["-m", "purge", URL]).method, "purge");
    assert_eq!(config(&["-mPUT", "-mDELETE", URL]).method, "DELETE");
    assert_eq!(
        error(&["-m", "GE T", URL]),
        "invalid value for '-m': 'GE T' is not an HTTP method (e.g. GET, POST, HEAD)"
    );
    assert!(error(&["--method=", URL]).starts_with("invalid value for '--method': ''"));
    assert_eq!(error(&[URL, "-m"]), "option '-m' needs a value");
}

#[test]
fn body() {
    assert_eq!(config(&[URL]).body, None);
    let cfg = config(&["--body", "a=b&c", URL]);
    assert_eq!(cfg.body.as_deref(), Some(&b"a=b&c"[..]));
    assert_eq!(config(&["--body=", URL]).body.as_deref(), Some(&b""[..]));
    assert_eq!(config(&[URL, "--body", "-x"]).body.as_deref(), Some(&b"-x"[..]));
    // The method stays as -m says (GET), as in wrk, oha and hey.
    assert_eq!(config(&["--body", "x", URL]).method, "GET");
    // Bodies need not be UTF-8.
    use std::os::unix::ffi::OsStringExt;
    let line = vec!["--body".into(), OsString::from_vec(vec![0xff, 0]), URL.into()];
    match parse_command(line) {
        Ok(Command::Bench { bench, .. }) => {
            assert_eq!(bench.config.body.as_deref(), Some(&[0xff, 0][..]))
        }
        _ => panic!("binary body rejected"),
    }
}

#[test]
fn body_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.json");
    std::fs::write(&file, b"{\"a\":1}\n").unwrap();
    let file = file.to_str().unwrap();
    for line in [
        &["--body-file", file, URL][..],
        &[&format!("--body-file={file}"), URL],
        &["--body-", file, URL],
    ] {
        assert_eq!(config(line).body.as_deref(), Some(&b"{\"a\":1}\n"[..]), "{line:?}");
    }
    let missing = dir.path().join("nope.json");
    assert_eq!(
        setup_error(&["--body-file", missing.to_str().unwrap(), URL]),
        format!("cannot read --body-file {}: No such file or directory", missing.display())
    );
    assert_eq!(
        error(&["--body", "x", "--body-file", file, URL]),
        "--body and --body-file cannot be used together"
    );
    assert_eq!(
        error(&["--bo", "x", URL]),
        "option '--bo' is ambiguous; possibilities: '--body' '--body-file'"
    );
    // wrk2's --b is --batch_latency still.
    assert!(config(&["--b", URL]).batch_latency);
}

#[test]
fn requests() {
    each_form("-n", "--requests", "100", |cfg| assert_eq!(cfg.config.requests, Some(100)));
    assert_eq!(config(&[URL]).requests, None);
    assert_eq!(config(&["-n1k", URL]).requests, Some(1000));
    assert_eq!(config(&["-n", "5", "-n", "7", URL]).requests, Some(7));
    assert_eq!(error(&["-n", "0", URL]), "-n/--requests must be at least 1");
    assert_eq!(
        error(&["-n", "many", URL]),
        "invalid value for '-n': 'many' is not a number (examples: 10, 1.5k, 2M)"
    );
    assert!(error(&["--requests", "1.5", URL]).contains("'--requests': '1.5' is not a whole"));
    assert!(error(&["-n", "-1", URL]).contains("'-n'"));
    assert_eq!(error(&[URL, "-n"]), "option '-n' needs a value");
    // Abbreviated: yicwang's --re stays --report_interval, wrk2's --r --rate.
    assert_eq!(config(&["--req", "3", URL]).requests, Some(3));
    for prefix in ["--re", "--rep"] {
        let cfg = bench(&[prefix, "1s", URL]);
        assert_eq!(cfg.outputs.report_interval, Some(Duration::from_secs(1)), "{prefix}");
    }
    for prefix in ["--r", "--ra"] {
        assert_eq!(config(&[prefix, "5", URL]).mode, Mode::Paced(PlanSpec::constant(5.0)));
    }
}

#[test]
fn n_requests_bound_the_run() {
    let secs = |s| Some(Duration::from_secs(s));
    // The closed loop: open-ended, unless -d was typed.
    assert_eq!(config(&["-n", "100", URL]).duration, None);
    assert_eq!(config(&["-n", "100", "-d", "5s", URL]).duration, secs(5));
    // A plan of N requests at R lasts N/R, one interval past the last
    // (at 500/s, the 200th is due at 398 ms and the window ends at
    // 400 ms, as -d 400ms would)...
    let n_over_r = Some(Duration::from_millis(400));
    assert_eq!(config(&["-R", "500", "-n", "200", URL]).duration, n_over_r);
    // ...counted after the warm-up...
    let warm = config(&["-R", "500", "-n", "200", "--warmup", "1s", URL]);
    assert_eq!(warm.duration, n_over_r);
    // ...and at the latest at the end of -d or of the stages.
    assert_eq!(config(&["-R", "500", "-n", "1M", "-d", "5s", URL]).duration, secs(5));
    assert_eq!(config(&["--stages", "2s:100", "-n", "1M", URL]).duration, secs(2));
    assert_eq!(config(&["-R", "1", "-n", "100", URL]).duration, Some(Duration::from_secs(100)));
}

/// A targets file in a temporary directory.
fn targets_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("targets.txt");
    std::fs::write(&path, text).unwrap();
    (dir, path.to_str().unwrap().to_string())
}

const TARGETS: &str = "GET http://127.0.0.1:8080/a\n\nPOST http://127.0.0.1:8080/b\nX: 1\n";

#[test]
fn targets_give_the_url_when_the_command_line_has_none() {
    let (_dir, file) = targets_file(TARGETS);
    let cfg = config(&["--targets", &file, "-t1"]);
    assert_eq!(cfg.target.url, "http://127.0.0.1:8080/a");
    assert!(cfg.script_args.is_empty());
    let targets = cfg.targets.unwrap();
    let lines: Vec<(usize, &str)> =
        targets.list.iter().map(|t| (t.line, t.method.as_str())).collect();
    assert_eq!(lines, [(1, "GET"), (3, "POST")]);
    assert_eq!(cfg.targets_order, TargetsOrder::Sequential);
    // A URL on the command line is still the run's, and wrk's rules
    // for the words after it hold.
    let cfg = config(&[&format!("--targets={file}"), "http://127.0.0.1:8080/x", "arg"]);
    assert_eq!(cfg.target.url, "http://127.0.0.1:8080/x");
    assert_eq!(cfg.script_args, ["arg"]);
    // -v with targets and no URL runs.
    match parse_command(args(&["-v", "--targets", &file])) {
        Ok(Command::Bench { print_version: true, .. }) => {}
        _ => panic!("-v --targets must run"),
    }
}

#[test]
fn targets_options() {
    let (_dir, file) = targets_file(TARGETS);
    for order in ["--targets-order=random", "--targets-o=random", "--targets-order"] {
        let mut line = vec!["--targets", &file, order, URL];
        if order == "--targets-order" {
            line.insert(3, "random");
        }
        assert_eq!(config(&line).targets_order, TargetsOrder::Random, "{line:?}");
    }
    let cfg = config(&["--targets", &file, "--targets-order", "sequential", URL]);
    assert_eq!(cfg.targets_order, TargetsOrder::Sequential);
    assert_eq!(
        error(&["--targets", &file, "--targets-order", "shuffled", URL]),
        "invalid value for '--targets-order': 'shuffled' is not 'sequential' or 'random'"
    );
    assert_eq!(
        error(&["--targets-order", "random", URL]),
        "--targets-order needs --targets (or --grpc's --data)"
    );
    assert_eq!(
        error(&["--targets", &file, "-m", "PUT"]),
        "-m/--method cannot be used with --targets: each target names its method"
    );
    let cfg = config(&["--targets", &file, "--body", "default"]);
    assert_eq!(cfg.body.as_deref(), Some(&b"default"[..]));
    assert_eq!(
        error(&["--ta", &file, URL]),
        "option '--ta' is ambiguous; possibilities: '--targets' '--targets-order'"
    );
}

#[test]
fn tls_options() {
    const HTTPS: &str = "https://127.0.0.1:8443/";
    let cfg = config(&["--tls-server-name", "pace.test", HTTPS]);
    assert_eq!(cfg.tls.server_name, Some(ServerName::try_from("pace.test").unwrap()));
    assert!(cfg.tls.cacert.is_none() && cfg.tls.client_certificate.is_none());
    assert_eq!(
        error(&["--tls-server-name", "a b", HTTPS]),
        "invalid value for '--tls-server-name': 'a b' is not a DNS name or an IP address"
    );
    // Refused, not ignored, where no TLS is spoken; -k is wrk's.
    assert_eq!(
        error(&["--tls-server-name", "pace.test", URL]),
        "--tls-server-name applies to https:// only, and the run's URL is http://"
    );
    assert_eq!(
        error(&[URL, "--cacert", "ca.pem"]),
        "--cacert applies to https:// only, and the run's URL is http://"
    );
    assert!(config(&["-k", URL]).tls.insecure);
    assert_eq!(error(&["--key", "key.pem", HTTPS]), "--key needs --cert (the client certificate)");
    // The files are read before anything starts.
    let missing = setup_error(&["--cacert", "/nonexistent/ca.pem", HTTPS]);
    assert_eq!(missing, "cannot read --cacert /nonexistent/ca.pem: No such file or directory");
    let missing = setup_error(&["--cert", "/nonexistent/c.pem", "--key", "k.pem", HTTPS]);
    assert_eq!(missing, "cannot read --cert /nonexistent/c.pem: No such file or directory");
}

#[test]
fn targets_errors_are_usage_errors_but_an_unreadable_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.txt");
    assert_eq!(
        setup_error(&["--targets", missing.to_str().unwrap()]),
        format!("cannot read --targets file {}: No such file or directory", missing.display())
    );
    let (_dir, file) = targets_file("GET http://127.0.0.1:8080/\nnot a header\n");
    assert_eq!(
        error(&["--targets", &file]),
        format!("{file}:2: invalid header 'not a header': expected 'Name: value'")
    );
    // Several origins: each thread needs a connection to each.
    let (_dir, file) = targets_file("GET http://127.0.0.1:8080/a\nGET http://localhost:8080/b\n");
    assert_eq!(
        error(&["--targets", &file, "-t2", "-c3"]),
        "the targets name 2 origins (scheme, host and port) and every thread needs a \
         connection to each: with -t 2, -c must be at least 4"
    );
    let cfg = config(&["--targets", &file, "-t2", "-c4"]);
    assert_eq!(cfg.target.url, "http://127.0.0.1:8080/a");
    // Still: no URL and no targets.
    assert_eq!(error(&["-m", "POST"]), "missing URL (try 'pace --help')");
}

#[test]
fn a_first_targets_credentials_stay_its_own() {
    let (_dir, file) =
        targets_file("GET http://u:p@127.0.0.1:8080/a\nGET http://127.0.0.1:8080/b\n");
    assert!(config(&["--targets", &file]).headers.is_empty());
    let cfg = config(&["--targets", &file, "http://v:w@127.0.0.1:8080/"]);
    assert_eq!(cfg.headers, vec![("Authorization".into(), "Basic djp3".into())]);
}

/// Every prefix of every long option of the table and of the programs
/// it reproduces, in alphabetical order, each once.
fn every_prefix() -> Vec<String> {
    let family = WRK_FAMILY.iter().flat_map(|program| program.iter().copied());
    let names = SPECS.iter().map(|spec| spec.long).chain(family);
    let prefixes: std::collections::BTreeSet<String> =
        names.flat_map(|name| (1..=name.len()).map(move |n| name[..n].to_string())).collect();
    prefixes.into_iter().collect()
}

/// What getopt_long in a program with these long options reads
/// `typed` as: an exact name, or the one name it is a prefix of.
fn read_by(program: &[&'static str], typed: &str) -> Option<&'static str> {
    if let Some(exact) = program.iter().find(|long| **long == typed) {
        return Some(exact);
    }
    let named: Vec<&&str> = program.iter().filter(|long| long.starts_with(typed)).collect();
    (named.len() == 1).then(|| *named[0])
}

#[test]
fn every_abbreviation_of_the_wrk_family_keeps_its_meaning() {
    let flag_of = |long: &str| SPECS.iter().find(|spec| spec.long == long).map(|s| s.flag);
    for program in WRK_FAMILY {
        for long in *program {
            assert!(flag_of(long).is_some(), "--{long} is not pace's");
        }
    }
    for typed in every_prefix() {
        let meant: Vec<&str> =
            WRK_FAMILY.iter().filter_map(|program| read_by(program, &typed)).collect();
        // The programs never disagree, so pace can keep what each read.
        assert!(meant.windows(2).all(|pair| pair[0] == pair[1]), "--{typed}: {meant:?}");
        let Some(meant) = meant.first() else { continue };
        let found = match resolve_long(SPECS, WRK_FAMILY, &typed) {
            Resolution::Unique(spec) | Resolution::Inherited(spec) => spec.flag,
            _ => panic!("--{typed} is not --{meant}"),
        };
        assert!(found == flag_of(meant).unwrap(), "--{typed} is not --{meant}");
    }
}

/// Markdown table rows: the prefixes typed (grouped when they resolve
/// alike), then what they resolve to.
fn table(rows: Vec<(String, Vec<String>)>, head: &str) -> String {
    let mut grouped: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (typed, names) in rows {
        match grouped.iter_mut().find(|(_, same)| *same == names) {
            Some((prefixes, _)) => prefixes.push(typed),
            None => grouped.push((vec![typed], names)),
        }
    }
    let code =
        |words: &[String]| words.iter().map(|w| format!("`--{w}`")).collect::<Vec<_>>().join(", ");
    let mut text = format!("| typed | {head} |\n|---|---|\n");
    for (prefixes, names) in grouped {
        text.push_str(&format!("| {} | {} |\n", code(&prefixes), code(&names)));
    }
    text
}

#[test]
fn where_the_connections_go() {
    assert_eq!(config(&[URL]).reach, Reach::default());
    let reach = config(&["--unix-socket", "/run/a.sock", URL]).reach;
    assert_eq!(reach.unix_socket.as_deref(), Some(Path::new("/run/a.sock")));
    let reach = config(&["--connect-to", "a:1:b:2", "--connect-to=::c:", "-6", URL]).reach;
    assert_eq!(reach.connect_to.len(), 2);
    assert_eq!(reach.family, Some(Family::V6));
    assert_eq!(config(&["-6", "-4", URL]).reach.family, Some(Family::V4));
    assert_eq!(config(&["--ipv6", URL]).reach.family, Some(Family::V6));
    let bad = error(&["--connect-to", "a:1:b", URL]);
    assert!(bad.starts_with("invalid value for '--connect-to': 'a:1:b' is not HOST:PORT:ADDR:PORT"));
    for line in [
        &["--unix-socket", "/s", "-4", URL][..],
        &["--unix-socket", "/s", "--connect-to", "::b:", URL],
    ] {
        assert!(error(line).starts_with("--unix-socket cannot be used with --connect-to or -4/-6"));
    }
    assert_eq!(error(&["--unix-socket", "", URL]), "--unix-socket needs the path of a socket");
    for line in [
        &["--proxy", "http://p:3128", "--unix-socket", "/s", URL][..],
        &["--proxy", "env", "--connect-to", "::b:", URL],
    ] {
        assert!(error(line).starts_with("--proxy cannot be used with --unix-socket or"));
    }
    let proxied = config(&["--proxy", "http://p:3128", "-4", URL]);
    assert_eq!(proxied.reach.family, Some(Family::V4));
}

/// README's two lists of abbreviations, from the parser: those read as
/// the wrk family read them though pace's options share them, and
/// those that are ambiguous.
fn readme_tables() -> (String, String) {
    let (mut inherited, mut ambiguous) = (Vec::new(), Vec::new());
    for typed in every_prefix() {
        match resolve_long(SPECS, WRK_FAMILY, &typed) {
            Resolution::Inherited(spec) => inherited.push((typed, vec![spec.long.to_string()])),
            Resolution::Ambiguous(specs) => {
                let names = specs.iter().map(|spec| spec.long.to_string()).collect();
                ambiguous.push((typed, names))
            }
            Resolution::Unique(_) | Resolution::Unknown => {}
        }
    }
    (table(inherited, "is, as in wrk and its forks"), table(ambiguous, "could be"))
}

#[test]
fn readme_lists_the_abbreviations_the_parser_reads() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let (inherited, ambiguous) = readme_tables();
    for table in [inherited, ambiguous] {
        assert!(readme.contains(&table), "README.md must list, as the parser reads them:\n{table}");
    }
}
