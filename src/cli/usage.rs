//! The `--help` texts, laid out like wrk's usage (reference section 1.7: an
//! option column, `<N>`/`<T>` placeholders, the two lines on units) but
//! listing pace's options, its subcommands and its exit codes.

use crate::serve::ServeOptions;

/// `pace -h`.
pub(super) fn main() -> String {
    "\
Usage: pace <options> <url> [script args...]
       pace serve <options>
       pace demo
       pace merge <options> <file>...
       pace report <options> <file>
  Options:
    -c, --connections     <N>  Connections to keep open (default 10)
    -d, --duration        <T>  Duration of test (default 10s)
    -t, --threads         <N>  Number of threads to use (default 2)

    -s, --script          <S>  Load Lua script file
    -H, --header          <H>  Add header to request (\"Name: value\")
    -L, --latency              Print latency statistics
    -U, --u_latency            Print uncorrected latency statistics
    -B, --batch_latency        Measure latency of whole
                               batches of pipelined ops
                               (as opposed to each op)
    -T, --timeout         <T>  Socket/request timeout (default 2s)
    -R, --rate            <N>  Work rate (throughput)
                               in requests/sec (total);
                               without it, as fast as possible (wrk)
        --arrival         <A>  constant (even, default) or poisson
        --stages    <D:R,...>  Ramp/step the rate: each stage moves
                               it to R over D (e.g. 30s:1k,1m:1k)
        --warmup          <T>  Send the first T but do not count it
        --seed            <N>  Repeat a random plan
        --shard         <I/N>  Send instance I's part (from 0) of a
                               plan N instances send together
        --start-at        <T>  Start the plan at this wall-clock time
                               (RFC 3339, or Unix seconds)
    -D, --digits          <N>  Latency precision digits [1..5] (default 3)
        --http2                Speak HTTP/2 (h2 by ALPN for https://,
                               h2c by prior knowledge for http://)
        --streams         <N>  HTTP/2 requests in flight per connection
                               (default 1; the server may allow fewer)
        --unix-socket     <P>  Connect to the Unix socket P; the URL
                               still gives Host and path (e.g. P =
                               /run/app.sock, URL http://app/)
        --connect-to      <R>  HOST:PORT:ADDR:PORT: for HOST:PORT connect
                               to ADDR:PORT, keeping Host and TLS name
                               (curl's; e.g. example.com:443:127.0.0.1:8443;
                               empty fields: any, or the same; repeatable)
    -4, --ipv4                 Connect over IPv4 only (e.g. -4 localhost)
    -6, --ipv6                 Connect over IPv6 only (e.g. -6 localhost)
    -k, --insecure             Do not verify TLS certificates
        --cacert          <F>  Trust the CAs in F (PEM) instead of
                               the system's (or SSL_CERT_FILE's)
        --cert            <F>  Client certificate (PEM) for mutual TLS
        --key             <F>  Its private key (PEM: PKCS #8, RSA or
                               EC; default: the one in --cert's file)
        --tls-server-name <N>  Name to send (SNI) and verify instead
                               of the URL host
        --proxy           <U>  Go through an HTTP proxy, e.g.
                               http://user:pass@proxy:3128 (CONNECT
                               for https://), or env (http_proxy,
                               https_proxy, no_proxy as curl reads them)
    -v, --version              Print version details
    -h, --help                 Print this help

  Requests (without -s; a script makes its own):
    -m, --method          <M>  Request method (default GET)
        --body            <S>  Request body (Content-Length is set)
        --body-file       <F>  Request body read from file F
        --targets         <F>  Requests from file F, in turn (vegeta's
                               http format); then the URL may be left out
        --targets-order   <O>  sequential (default) or random (--seed
                               repeats the order)
    -n, --requests        <N>  Stop after N requests (with a rate: a plan
                               of N requests; -d still bounds the run)

  Reports:
    -p, --report_interval <T>  Also report each period of T alone (0 = off)
    -e, --json                 Print JSON on stdout instead of text
        --json_encoding        Same as --json (yicwang/wrk2's name)
        --percentiles     <L>  Latency percentiles to print
                               (e.g. 50,90,99,99.9; implies -L)
        --hlog            <F>  Write an HdrHistogram interval log to F
        --html            <F>  Write a self-contained HTML report with
                               charts to F
    -o, --output          <F>  Write the reports to F instead of stdout
                               (complete, or not at all)
        --timeseries[=T]       Print requests per period of T
                               (default 250ms)
        --thread-timeseries    Print requests per period and thread
        --histogram            Print requests per 1us of latency
        --no-progress          No live progress on stderr (shown only
                               when stderr is a terminal)
        --metrics         <A>  Serve live figures for Prometheus at
                               http://A/metrics (e.g. 127.0.0.1:9464;
                               :9464 for every interface; port 0: any)
        --metrics-linger  <T>  Keep serving them T after the report,
                               for a last scrape (default 0)
        --metrics-push    <U>  Send the final figures to U by
                               Prometheus remote write (http://...,
                               e.g. http://prom:9090/api/v1/write)
        --slo             <L>  Objectives to judge the run by, e.g.
                               'p99<10ms,errors<0.1%,rate>99%'
                               (exit status 4 if one fails)

  Numeric arguments may include a SI unit (1k, 1M, 1G)
  Time arguments may include a time unit (2s, 2m, 2h)
  Fractions and sub-second times work too (-R 0.5, -d 500ms)

  Commands:
    serve                      Run the built-in target server (pace serve -h)
    demo                       Benchmark the built-in server with a stall:
                               corrected vs uncorrected latency, no setup
    merge                      Report saved runs (-e, --hlog) as one, e.g.
                               the shards of a plan (pace merge -h)
    report                     Report a run saved with -e again, as text
                               or HTML (pace report -h)

  Exit status:
    0                          The run completed
    1                          Bad command line
    2                          Target unusable (resolve, connect, TLS)
                               or a file cannot be read, written or
                               merged
    3                          The Lua script failed
    4                          An --slo objective failed (the report
                               is printed; 2, 3, 130, 143 take precedence)
    130, 143                   Interrupted by SIGINT, SIGTERM
                               (the report so far is printed)
"
    .to_string()
}

/// `pace serve -h`. Defaults are printed from the values the parser uses.
pub(super) fn serve() -> String {
    let defaults = ServeOptions::default();
    let (port, ip) = (defaults.bind.port(), defaults.bind.ip());
    let (threads, body_size) = (defaults.threads, defaults.body_size);
    format!(
        "\
Usage: pace serve <options>
  Options:
    -p, --port        <N>  Port to listen on (default {port}, 0 = any free port)
        --bind        <A>  Address to listen on (default {ip};
                           e.g. ::1, 0.0.0.0)
    -t, --threads     <N>  Number of threads to use (default {threads})
        --body-size   <N>  Response body size in bytes (default {body_size})
        --latency     <T>  Delay before each response (default none)
        --stall-at    <T>  Stop answering this long after start...
        --stall-for   <T>  ...for this long (both or neither)
        --tls              Serve HTTPS with a self-signed certificate
                           (benchmark it with pace -k)
        --unix-socket <P>  Listen on the Unix socket P instead of TCP
                           (e.g. --unix-socket /tmp/pace.sock; benchmark
                           it with pace --unix-socket /tmp/pace.sock URL)
    -h, --help             Print this help

  Numeric arguments may include a SI unit (1k, 1M, 1G)
  Time arguments may include a time unit (500ms, 2s, 2m, 2h)
",
    )
}

/// `pace merge -h`.
pub(super) fn merge() -> String {
    "\
Usage: pace merge <options> <file>...
  Reports several saved runs as one: the shards of one plan (--shard)
  sent from several machines, or unrelated runs. Each file is what
  pace -e wrote (JSON, or JSON Lines with -p), or an --hlog log.
  Latency histograms are added count by count (exact), counts and bytes
  summed, rates taken over the union of the runs' time windows.
  Options:
    -L, --latency              Print latency statistics
    -U, --u_latency            Also print the uncorrected latency
        --percentiles     <P>  Percentiles to print (e.g. 50,99,99.9;
                               implies -L)
    -e, --json                 Print JSON instead of text
        --slo             <S>  Judge the merged result (exit 4 on failure)
    -o, --output          <F>  Write the report to F instead of stdout
        --html            <F>  Also write an HTML report with charts to F
                               (results of -e only)
    -h, --help                 Print this help
"
    .to_string()
}

/// `pace report -h`.
pub(super) fn report() -> String {
    "\
Usage: pace report <options> <file>
  Reports a run saved with pace -e (JSON, or JSON Lines with -p) again:
  the text report on stdout and, with --html, the HTML report. The
  figures are computed from the saved histograms, so any percentile can
  be asked for afterwards. Charts over time need the periods of -p.
  Options:
    -L, --latency              Print latency statistics
    -U, --u_latency            Also print the uncorrected latency
        --percentiles     <P>  Percentiles to print (e.g. 50,99,99.9;
                               implies -L)
        --slo             <S>  Judge the run (exit 4 on failure)
        --html            <F>  Write the HTML report with charts to F
    -h, --help                 Print this help
"
    .to_string()
}

/// `pace demo -h`.
pub(super) fn demo() -> String {
    "\
Usage: pace demo [--http2]
  Starts the built-in server on a free loopback port with an injected
  stall, benchmarks it at a fixed rate for a few seconds and prints the
  corrected and uncorrected latency side by side: what coordinated
  omission hides. Needs no network access and no other setup.
  Options:
        --http2            Over HTTP/2 (h2c) instead of HTTP/1.1
    -h, --help             Print this help
"
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::super::{bench, serve as serve_cli};
    use super::*;

    /// Every option of the table is documented, and nothing else is.
    fn documents_exactly<F>(text: &str, specs: &[super::super::options::Spec<F>]) {
        for spec in specs {
            let documented = |after: &str| text.contains(&format!("--{}{after}", spec.long));
            // `--timeseries[=T]`: an optional value.
            assert!(documented(" ") || documented("[="), "--{} missing", spec.long);
            if let Some(short) = spec.short {
                assert!(text.contains(&format!("-{short}, --{} ", spec.long)), "-{short}");
            }
        }
        let documented = text.lines().filter(|line| line.trim_start().starts_with('-')).count();
        assert_eq!(documented, specs.len());
    }

    #[test]
    fn usage_lists_every_option() {
        documents_exactly(&main(), bench::SPECS);
        documents_exactly(&serve(), serve_cli::SERVE_SPECS);
    }

    #[test]
    fn usage_fits_in_80_columns() {
        for text in [main(), serve(), demo()] {
            for line in text.lines() {
                assert!(line.chars().count() <= 80, "{line}");
                assert_eq!(line.trim_end(), line, "trailing space: {line:?}");
            }
        }
    }
}
