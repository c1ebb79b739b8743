//! The option table of `pace <options> <url>`: every option with its
//! names, its value and its help (`pace -h`, the man page and the
//! completions are made from it), and the long options of wrk and its
//! forks whose abbreviations pace keeps.

use super::super::options::{Program, Spec};

#[derive(Clone, Copy, PartialEq)]
pub(in crate::cli) enum Flag {
    Connections,
    Duration,
    Threads,
    Script,
    Header,
    Method,
    Body,
    BodyFile,
    Targets,
    TargetsOrder,
    Requests,
    Latency,
    ULatency,
    BatchLatency,
    Timeout,
    Rate,
    Digits,
    Insecure,
    ReportInterval,
    Json,
    Hlog,
    Html,
    Output,
    Timeseries,
    ThreadTimeseries,
    Histogram,
    Percentiles,
    NoProgress,
    Metrics,
    MetricsLinger,
    MetricsPush,
    MetricsPushTokenFile,
    Arrival,
    Stages,
    Warmup,
    Seed,
    Shard,
    StartAt,
    Slo,
    Strict,
    Http2,
    Http3,
    Streams,
    Grpc,
    Proto,
    ImportPath,
    Protoset,
    Data,
    GrpcGzip,
    StreamCallCount,
    StreamInterval,
    Proxy,
    CaCert,
    Cert,
    Key,
    TlsServerName,
    UnixSocket,
    ConnectTo,
    Ipv4,
    Ipv6,
    Version,
    Help,
}

/// wrk2's options (`t:c:d:s:H:T:R:LUBv`), yicwang's `-D -p -e`, wrx's long
/// options, and pace's own (the requests' `-m`, `-n` and long options).
/// `--u_latency`, `--batch_latency`, `--report_interval`, `--json_encoding`
/// keep their authors' underscores. In the order of `pace -h`, which is
/// made from this table (as are the man page and the completions).
pub(in crate::cli) const SPECS: &[Spec<Flag>] = &[
    Spec::new(Some('c'), "connections", Flag::Connections)
        .takes("N")
        .help(&["Connections to keep open (default 10)"]),
    Spec::new(Some('d'), "duration", Flag::Duration)
        .takes("T")
        .help(&["Duration of test (default 10s)"]),
    Spec::new(Some('t'), "threads", Flag::Threads)
        .takes("N")
        .help(&["Number of threads to use (default 2)"]),
    Spec::new(Some('s'), "script", Flag::Script)
        .takes_file("S")
        .help(&["Load Lua script file"])
        .starts_group(""),
    Spec::new(Some('H'), "header", Flag::Header)
        .takes("H")
        .help(&["Add header to request (\"Name: value\")"]),
    Spec::new(Some('L'), "latency", Flag::Latency).help(&["Print latency statistics"]),
    Spec::new(Some('U'), "u_latency", Flag::ULatency)
        .help(&["Print uncorrected latency statistics"]),
    Spec::new(Some('B'), "batch_latency", Flag::BatchLatency).help(&[
        "Measure latency of whole",
        "batches of pipelined ops",
        "(as opposed to each op)",
    ]),
    Spec::new(Some('T'), "timeout", Flag::Timeout)
        .takes("T")
        .help(&["Socket/request timeout (default 2s)"]),
    Spec::new(Some('R'), "rate", Flag::Rate).takes("N").help(&[
        "Work rate (throughput)",
        "in requests/sec (total);",
        "without it, as fast as possible (wrk)",
    ]),
    Spec::new(None, "arrival", Flag::Arrival)
        .takes_one_of("A", &["constant", "poisson"])
        .help(&["constant (even, default) or poisson"]),
    Spec::new(None, "stages", Flag::Stages)
        .takes("D:R,...")
        .help(&["Ramp/step the rate: each stage moves", "it to R over D (e.g. 30s:1k,1m:1k)"]),
    Spec::new(None, "warmup", Flag::Warmup)
        .takes("T")
        .help(&["Send the first T but do not count it"]),
    Spec::new(None, "seed", Flag::Seed).takes("N").help(&["Repeat a random plan"]),
    Spec::new(None, "shard", Flag::Shard)
        .takes("I/N")
        .help(&["Send instance I's part (from 0) of a", "plan N instances send together"]),
    Spec::new(None, "start-at", Flag::StartAt)
        .takes("T")
        .help(&["Start the plan at this wall-clock time", "(RFC 3339, or Unix seconds)"]),
    Spec::new(Some('D'), "digits", Flag::Digits)
        .takes_one_of("N", &["1", "2", "3", "4", "5"])
        .help(&["Latency precision digits [1..5] (default 3)"]),
    Spec::new(None, "http2", Flag::Http2)
        .help(&["Speak HTTP/2 (h2 by ALPN for https://,", "h2c by prior knowledge for http://)"]),
    Spec::new(None, "http3", Flag::Http3)
        .help(&["Speak HTTP/3 (h3 over QUIC, UDP; https://", "only)"]),
    Spec::new(None, "streams", Flag::Streams).takes("N").help(&[
        "HTTP/2 or HTTP/3 requests in flight per",
        "connection",
        "(default 1; the server may allow fewer)",
    ]),
    Spec::new(None, "grpc", Flag::Grpc).takes("M").help(&[
        "Call the gRPC method M (package.Service/",
        "Method) over HTTP/2, unary or streaming;",
        "its schema from --proto, --protoset, or",
        "the server's reflection",
    ]),
    Spec::new(None, "proto", Flag::Proto)
        .takes_file("F")
        .help(&["The .proto file of --grpc (repeatable);", "compiled in process"]),
    Spec::new(None, "import-path", Flag::ImportPath)
        .takes_file("D")
        .help(&["Where --proto's imports are (repeatable)"]),
    Spec::new(None, "protoset", Flag::Protoset)
        .takes_file("F")
        .help(&["--grpc's schema as a compiled", "descriptor set (protoc -o)"]),
    Spec::new(None, "data", Flag::Data).takes("J").help(&[
        "--grpc's request message in JSON, or",
        "@FILE (several: sent in turn; default {});",
        "{{.RequestNumber}}, {{newUUID}}, ...: made",
        "per call (ghz's templates)",
    ]),
    Spec::new(None, "grpc-gzip", Flag::GrpcGzip).help(&["Compress --grpc's messages with gzip"]),
    Spec::new(None, "grpc-stream-count", Flag::StreamCallCount).takes("N").help(&[
        "A client-streaming or bidirectional call",
        "sends N messages (--data's in turn;",
        "default: each of them once)",
    ]),
    Spec::new(None, "grpc-stream-interval", Flag::StreamInterval)
        .takes("D")
        .help(&["... the i-th D x i after the call's", "intended time (default 0: at once)"]),
    Spec::new(None, "unix-socket", Flag::UnixSocket).takes_file("P").help(&[
        "Connect to the Unix socket P; the URL",
        "still gives Host and path (e.g. P =",
        "/run/app.sock, URL http://app/)",
    ]),
    Spec::new(None, "connect-to", Flag::ConnectTo).takes("R").help(&[
        "HOST:PORT:ADDR:PORT: for HOST:PORT connect",
        "to ADDR:PORT, keeping Host and TLS name",
        "(curl's; e.g. example.com:443:127.0.0.1:8443;",
        "empty fields: any, or the same; repeatable)",
    ]),
    Spec::new(Some('4'), "ipv4", Flag::Ipv4).help(&["Connect over IPv4 only (e.g. -4 localhost)"]),
    Spec::new(Some('6'), "ipv6", Flag::Ipv6).help(&["Connect over IPv6 only (e.g. -6 localhost)"]),
    Spec::new(Some('k'), "insecure", Flag::Insecure).help(&["Do not verify TLS certificates"]),
    Spec::new(None, "cacert", Flag::CaCert)
        .takes_file("F")
        .help(&["Trust the CAs in F (PEM) instead of", "the system's (or SSL_CERT_FILE's)"]),
    Spec::new(None, "cert", Flag::Cert)
        .takes_file("F")
        .help(&["Client certificate (PEM) for mutual TLS"]),
    Spec::new(None, "key", Flag::Key)
        .takes_file("F")
        .help(&["Its private key (PEM: PKCS #8, RSA or", "EC; default: the one in --cert's file)"]),
    Spec::new(None, "tls-server-name", Flag::TlsServerName)
        .takes("N")
        .help(&["Name to send (SNI) and verify instead", "of the URL host"]),
    Spec::new(None, "proxy", Flag::Proxy).takes("U").help(&[
        "Go through an HTTP proxy, e.g.",
        "http://user:pass@proxy:3128 (CONNECT",
        "for https://), or env (http_proxy,",
        "https_proxy, no_proxy as curl reads them)",
    ]),
    Spec::new(Some('v'), "version", Flag::Version).aliases(&['V']).help(&["Print version details"]),
    Spec::new(Some('h'), "help", Flag::Help).help(&["Print this help"]),
    Spec::new(Some('m'), "method", Flag::Method)
        .takes("M")
        .help(&["Request method (default GET)"])
        .starts_group("Requests (without -s; a script makes its own):"),
    Spec::new(None, "body", Flag::Body).takes("S").help(&["Request body (Content-Length is set)"]),
    Spec::new(None, "body-file", Flag::BodyFile)
        .takes_file("F")
        .help(&["Request body read from file F"]),
    Spec::new(None, "targets", Flag::Targets).takes_file("F").help(&[
        "Requests from file F, in turn (vegeta's",
        "http format); then the URL may be left out",
    ]),
    Spec::new(None, "targets-order", Flag::TargetsOrder)
        .takes_one_of("O", &["sequential", "random"])
        .help(&[
            "The order of --targets (or of --data's",
            "messages): sequential (default) or",
            "random (--seed repeats the order)",
        ]),
    Spec::new(Some('n'), "requests", Flag::Requests).takes("N").help(&[
        "Stop after N requests (with a rate: a plan",
        "of N requests; -d still bounds the run)",
    ]),
    Spec::new(Some('p'), "report_interval", Flag::ReportInterval)
        .takes("T")
        .help(&["Also report each period of T alone (0 = off)"])
        .starts_group("Reports:"),
    Spec::new(Some('e'), "json", Flag::Json).help(&["Print JSON on stdout instead of text"]),
    Spec::new(None, "json_encoding", Flag::Json).help(&["Same as --json (yicwang/wrk2's name)"]),
    Spec::new(None, "percentiles", Flag::Percentiles)
        .takes("L")
        .help(&["Latency percentiles to print", "(e.g. 50,90,99,99.9; implies -L)"]),
    Spec::new(None, "hlog", Flag::Hlog)
        .takes_file("F")
        .help(&["Write an HdrHistogram interval log to F"]),
    Spec::new(None, "html", Flag::Html)
        .takes_file("F")
        .help(&["Write a self-contained HTML report with", "charts to F"]),
    Spec::new(Some('o'), "output", Flag::Output)
        .takes_file("F")
        .help(&["Write the reports to F instead of stdout", "(complete, or not at all)"]),
    Spec::new(None, "timeseries", Flag::Timeseries)
        .may_take("T")
        .help(&["Print requests per period of T", "(default 250ms)"]),
    Spec::new(None, "thread-timeseries", Flag::ThreadTimeseries)
        .help(&["Print requests per period and thread"]),
    Spec::new(None, "histogram", Flag::Histogram).help(&["Print requests per 1us of latency"]),
    Spec::new(None, "no-progress", Flag::NoProgress)
        .help(&["No live progress on stderr (shown only", "when stderr is a terminal)"]),
    Spec::new(None, "metrics", Flag::Metrics).takes("A").help(&[
        "Serve live figures for Prometheus at",
        "http://A/metrics (e.g. 127.0.0.1:9464;",
        ":9464 for every interface; port 0: any)",
    ]),
    Spec::new(None, "metrics-linger", Flag::MetricsLinger)
        .takes("T")
        .help(&["Keep serving them T after the report,", "for a last scrape (default 0)"]),
    Spec::new(None, "metrics-push", Flag::MetricsPush).takes("U").help(&[
        "Send the final figures to U by",
        "Prometheus remote write (http:// or",
        "https://, e.g. http://prom:9090/api/v1/write)",
    ]),
    Spec::new(None, "metrics-push-token-file", Flag::MetricsPushTokenFile)
        .takes_file("F")
        .help(&["Send the token in file F to U as", "Authorization: Bearer"]),
    Spec::new(None, "slo", Flag::Slo).takes("L").help(&[
        "Objectives to judge the run by, e.g.",
        "'p99<10ms,errors<0.1%,rate>99%'",
        "(exit status 4 if one fails)",
    ]),
    Spec::new(None, "strict", Flag::Strict)
        .help(&["Exit status 5 if the run cannot be", "trusted (the report's Validity: line)"]),
];

/// The long options of wrk 4.2, giltene/wrk2, yicwang/wrk2 and wrx
/// (`struct option longopts[]` in each `src/wrk.c`; reference section
/// 1.2), whose abbreviations pace keeps. Where one of them read a prefix
/// as one option, none reads it as another (a test checks it).
pub(super) const WRK_FAMILY: &[Program] = &[
    // wrk 4.2
    &[
        "connections",
        "duration",
        "threads",
        "script",
        "header",
        "latency",
        "timeout",
        "help",
        "version",
    ],
    // giltene/wrk2
    &[
        "connections",
        "duration",
        "threads",
        "script",
        "header",
        "latency",
        "u_latency",
        "batch_latency",
        "timeout",
        "help",
        "version",
        "rate",
    ],
    // yicwang/wrk2
    &[
        "connections",
        "duration",
        "threads",
        "script",
        "header",
        "latency",
        "u_latency",
        "batch_latency",
        "timeout",
        "help",
        "version",
        "rate",
        "report_interval",
        "digits",
        "json_encoding",
    ],
    // wrx
    &[
        "connections",
        "duration",
        "threads",
        "script",
        "header",
        "latency",
        "timeout",
        "help",
        "version",
        "histogram",
        "timeseries",
        "thread-timeseries",
    ],
];
