//! The manual's sections after the commands: what README.md says that the
//! option tables do not (the Lua API, the targets format, the grammars of
//! `--slo` and `--max-regression`, the warnings, the exit codes) and the
//! examples, so that `pace man` is the whole manual of an installed pace.
//! The examples are run by `tests/examples.rs`.

/// A section of the manual: its title and its parts, in order.
pub(super) struct Section {
    pub title: &'static str,
    pub parts: &'static [Part],
}

/// A part of a section.
pub(super) enum Part {
    /// A paragraph.
    Text(&'static str),
    /// A term (set in bold) and what it means.
    Item(&'static str, &'static str),
    /// Command lines, as typed.
    Lines(&'static [&'static str]),
}

use Part::{Item, Lines, Text};

pub(super) const SECTIONS: &[Section] = &[
    Section { title: "LUA SCRIPTS", parts: LUA },
    Section { title: "TARGETS FILE", parts: TARGETS },
    Section { title: "SLO OBJECTIVES", parts: SLO },
    Section { title: "REGRESSION LIMITS", parts: REGRESSION },
    Section { title: "WARNINGS", parts: WARNINGS },
    Section { title: "VALIDITY", parts: VALIDITY },
    Section { title: "FILES", parts: FILES },
];

const LUA: &[Part] = &[
    Text(
        "-s FILE runs wrk and wrk2 scripts unchanged, on LuaJIT with every standard library \
         (ffi included): one Lua state per thread, and one more for setup and done. Words \
         after the URL (or after --) reach init(args); args[0] is the URL.",
    ),
    Item("setup(thread)", "Once per thread, before the run, in the main state; thread.addr may be set, thread:set(name, value) passes values (tables too) to the thread's state."),
    Item("init(args)", "In each thread's state, before its first request."),
    Item("request()", "Returns the next request as HTTP/1.1 text (wrk.format builds it); several requests in one string are pipelined; nil skips this send. A script that only sets wrk.method, wrk.body or wrk.headers builds its request once."),
    Item("response(status, headers, body)", "After each response (only when defined: reading bodies costs). headers finds a name in any case (headers[\"ETag\"] finds etag); pairs(headers) lists the names as received."),
    Item("delay()", "Milliseconds to wait before the next request (closed loop only: with -R the plan decides)."),
    Item("done(summary, latency, requests)", "Once, after the report, in the main state: summary has duration, requests, bytes and errors (connect, read, write, status, timeout); latency and requests are stats objects with min, max, mean, stdev, percentile(p), [i] or (i) (the i-th value and its count) and # (the count)."),
    Item("wrk", "wrk.scheme, wrk.host, wrk.port, wrk.method, wrk.path, wrk.headers, wrk.body; wrk.format(method, path, headers, body); wrk.lookup(host, service) and wrk.connect(addr); wrk.time_us() (wrk2)."),
    Item("thread", "thread.addr, thread:get(name), thread:set(name, value), thread:stop() (ends the thread's sends; the rates are then over the time until then)."),
    Text(
        "A script error is reported with file:line and a traceback, and ends pace with exit \
         status 3. What scripts print comes before the report, what done() prints after it.",
    ),
];

const TARGETS: &[Part] = &[
    Text(
        "--targets FILE reads requests in vegeta's http format: a METHOD URL line (the \
         method in capitals), its headers one a line, and an optional @file line whose bytes \
         are the body (relative to the targets file's directory). A blank line or the next \
         METHOD URL line starts the next target; # starts a comment. -H headers go with \
         every target (a target's own header of the same name replaces them), --body and \
         --body-file are the body of the targets without one. Targets may name several \
         origins (scheme, host and port): every thread keeps connections to each.",
    ),
    Lines(&[
        "# targets.txt",
        "GET http://127.0.0.1:8080/items?page=1",
        "Authorization: Bearer abc",
        "",
        "POST http://127.0.0.1:8080/items",
        "Content-Type: application/json",
        "@bodies/item.json",
        "HEAD http://127.0.0.1:8080/health",
    ]),
    Text(
        "They are sent in turn (--targets-order sequential), or drawn at random from the \
         run's seed (--targets-order random). A line that cannot be used is an error naming \
         the file and the line (exit status 1).",
    ),
];

/// The bounds of `crate::files` (a test there compares).
const FILES: &[Part] = &[
    Text(
        "Every file pace reads is read whole before it is checked, so each kind has a bound: \
         a larger file is refused (exit status 2), naming the option, the file and the bound, \
         and no more than the bound is read.",
    ),
    Item("--cacert", "4 MiB."),
    Item("--cert, --key", "1 MiB each."),
    Item("--body-file", "256 MiB."),
    Item("--targets", "256 MiB, and 256 MiB for each body file it names."),
    Item("-s", "16 MiB (what the script loads itself is Lua's)."),
    Item("--metrics-push-token-file", "64 KiB."),
    Item(
        "pace merge",
        "1 GiB an interval log; 1 GiB a saved run (64 MiB a line), as for pace report and compare.",
    ),
    Text(
        "A named pipe is read as its writer writes, up to the same bound; one that no program \
         has open for writing is refused at once, and a writer that neither writes nor closes \
         is waited for (Ctrl-C ends pace).",
    ),
];

const SLO: &[Part] = &[
    Text(
        "--slo judges the finished run: a verdict after the report, \"slo\" in the JSON, exit \
         status 4 when an objective fails. An objective is metric op threshold, op one of \
         <, <=, >, >= (quote the list: the shell reads < and >), objectives separated by \
         commas; --slo may be repeated. Counts and rates take SI units; metric names are \
         case-insensitive. A figure the run does not have fails its objective.",
    ),
    Item("pN, mean, stdev, max", "The corrected latency (from each request's intended send time), N from 0 to 100 (p99, p99.9): a time with its unit (10ms, 500us; a bare number is refused)."),
    Item("u.pN, u.mean, u.stdev, u.max", "The uncorrected latency (from the actual send): a time."),
    Item("lag.pN, lag.mean, lag.stdev, lag.max", "The schedule lag (actual minus intended send time), with a plan (-R or --stages): a time."),
    Item("errors", "Failed requests (connect, read, write, timeout, status above 399, unsent): a share of the requests issued (0.1%) or a count (10)."),
    Item("requests", "Completed responses: a count (10k)."),
    Item("rate", "The achieved rate: requests per second (1.5k), or a share of the plan's rate (99%)."),
    Lines(&["pace -t2 -c50 -d30s -R2000 --slo 'p99<10ms,errors<0.1%,rate>99%' http://app:8080/"]),
];

const REGRESSION: &[Part] = &[
    Text(
        "pace compare BASE NEW calls each line faster, slower or within noise: a difference \
         is more than noise when it is outside its 99% interval (a bootstrap over the \
         histograms, and over whole -p periods when both runs have 5 or more; the normal \
         interval for the rate, Agresti-Caffo for the error share) and at least --noise \
         (default 5%,100us: 5% of BASE and, for latency, 100 us and two histogram buckets).",
    ),
    Text(
        "A latency percentile that either run has fewer than 10 samples beyond (above it; \
         below it under p50) is too few samples, whatever the difference: chance could make \
         it. Without --percentiles, compare lists the ones of wrk2's list that both runs \
         have enough samples for (p50 at least) and names the others.",
    ),
    Text(
        "--max-regression fails (exit status 4) when NEW is worse than BASE by more than a \
         limit, noise or not: a limit judges the measured change. A limit is metric:amount \
         with --slo's metric names, separated by commas (the option may be repeated); the \
         amount is a share of BASE's figure or a figure of the metric's unit, its sign the \
         direction that is worse (or none). A percentile with too few samples is judged all \
         the same, and its line says too few samples.",
    ),
    Item("p99:+10%, u.p50:+1ms, mean:+500us, lag.p99:+1ms", "The latency rose by more than 10% of BASE's, or than the time."),
    Item("rate:-2%, rate:-100", "The rate fell by more than 2%, or than 100 requests/s."),
    Item("requests:-5%, requests:-1k", "Completed responses fell by more than that."),
    Item("errors:+0.1%, errors:+10", "The share of failed requests rose by more than 0.1 percentage points, or their count by more than 10."),
];

const WARNINGS: &[Part] = &[
    Text(
        "After a paced run the report names what kept it from its plan, a Warning: line per \
         cause ending in its code (also in the JSON's warnings, and on stderr with -e). A run \
         that kept its plan prints none. Any run, closed loop included, gets the last three \
         when its requests failed in a way the figures do not explain.",
    ),
    Item("server_failed", "Connect, read or write errors are at least 1% of the requests and connection attempts: look at the server."),
    Item("server_stalled", "Timeouts are at least 1% of them, or sends waited for connections while, on average, there were enough: the server's slow spells held them all."),
    Item("too_few_connections", "Sends waited for a free connection and rate times mean latency keeps more than 90% of -c busy: use the -c the message suggests."),
    Item("generator_cpu", "Sends were late while a connection was free, and pace's part of the lateness moved the corrected p99 by 5 ms and a quarter of it or more (the message says by how much): pace itself was busy, starved of CPU, or not given it (steal time); the message says which. Add threads, make the script cheaper, or use a quieter machine."),
    Item("unsent", "Requests of the plan fell due and were never sent: they are errors, in no latency percentile; the other warnings say why."),
    Item("all_failed", "No request got a 2xx or 3xx response. pace still exits 0, as wrk does: --slo 'errors<1%' makes such a run exit 4."),
    Item("client_certificate_refused", "Over https with --cert, most responses were 400: the server refused the certificate in HTTP (nginx: \"The SSL certificate error\"). Check that it trusts the issuer and that the certificate is valid now."),
    Item("proxy_closed_connections", "Read errors 'connection closed before the response' through a proxy in absolute form: the proxy closed connections it kept alive (tinyproxy does). They are the proxy's errors, not the server's."),
    Item("generator_held_slots", "A closed loop kept at most 75% of its slots (connections, times streams over HTTP/2) busy on average over half a second or more while its busiest thread worked 90% of the time or more: the slots waited for pace, not for the server, so the figures measure pace. Add threads (-t), make the script cheaper, or ask for fewer slots."),
];

const VALIDITY: &[Part] = &[
    Text(
        "A run that cannot be taken at its word gets a Validity: not trusted: line after the \
         warnings, naming each cause with its code (also in the JSON's validity, and a note \
         in the HTML page); --strict makes it exit 5. The checks use the periods every run \
         keeps (about twenty, saved in the JSON's course), so pace report and pace merge \
         judge saved runs the same way.",
    ),
    Item("schedule_not_kept", "A paced run's warnings say pace fell behind its plan or never sent some of it (generator_cpu, too_few_connections, unsent)."),
    Item("slots_held_idle", "A closed loop's slots waited for pace (generator_held_slots)."),
    Item("arrivals_off_plan", "--arrival poisson: the sends of all threads per 10 ms slot varied at least 3 times as much as Poisson arrivals do over a window of about a second, significantly (chi-square index of dispersion, z of 3.72 or more): sends held up, then sent together. A constant rate: the schedule lag p99 above 10 ms and one gap of the plan."),
    Item("not_stationary", "Latency (each period's median) or requests in flight kept growing through the run: a Mann-Kendall trend, the last third of the periods at least twice the first and 1 ms (or 4 requests) above it."),
    Item("warmup_too_short", "The start of the run (its first period, or the first few up to 20 responses) answered at least twice as slowly as the rest and 1 ms slower at the median: give --warmup."),
];

/// What each exit status means, in full.
pub(super) const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "The run completed and the report was printed."),
    ("1", "Wrong command line: an unknown option, a bad number or URL, -c below -t, --start-at in the past, a bad line in the --targets file, a --cacert, --cert or --key file without a certificate or key, or a key that is not the certificate's: what was typed must change."),
    ("2", "The command line is right but the machine fails it: the target cannot be used (it does not resolve, nothing listens, TLS set-up), or a file cannot be read or written; pace merge: the inputs cannot be added."),
    ("3", "The Lua script failed, or a script call did not return when the run was over (the report of what was measured is still printed)."),
    ("4", "An --slo objective failed, or pace compare's --max-regression limit was crossed (the report was printed, the files written); 2, 3, 130 and 143 take precedence."),
    ("5", "With --strict, the run cannot be trusted: the report's Validity: line says why (see VALIDITY). Every other code takes precedence: 4 (a failed objective says more), 2, 3, 130 and 143."),
    ("130, 143", "Stopped by SIGINT (Ctrl-C) or SIGTERM; the report of what was measured was printed."),
    ("101", "A bug in pace (one line on stderr; please report it)."),
];

/// Examples: what each does, and its command lines.
pub(super) const EXAMPLES: &[(&str, &[&str])] = &[
    ("wrk: a closed loop, as fast as the connections go.", &["pace -t2 -c100 -d30s http://127.0.0.1:8080/"]),
    ("wrk2: 2000 requests/s, the corrected and the uncorrected latency.", &["pace -t2 -c100 -d30s -R2000 -U http://127.0.0.1:8080/"]),
    ("A POST without Lua.", &["pace -m POST --body '{\"a\":1}' -H 'Content-Type: application/json' http://127.0.0.1:8080/api"]),
    ("Random arrivals, and a ramp up, a plateau and a ramp down.", &["pace -R2000 --arrival poisson -d30s http://127.0.0.1:8080/", "pace --stages 30s:1000,2m:1000,30s:0 http://127.0.0.1:8080/"]),
    ("Save a run with its periods, report it again later with an HTML page.", &["pace -R2000 -d30s -e -p 1s -o run.json http://127.0.0.1:8080/", "pace report run.json -U --html run.html"]),
    ("A gate in CI: exit status 4 when an objective fails.", &["pace -t2 -c50 -d30s -R2000 --slo 'p99<10ms,errors<0.1%' http://127.0.0.1:8080/"]),
    (
        "Two runs saved and compared: exit status 4 when NEW is worse by more than a limit.",
        &[
            "pace -R1000 -d10s -p 1s -e -o base.json http://127.0.0.1:8080/",
            "pace -R1000 -d10s -p 1s -e -o new.json http://127.0.0.1:8081/",
            "pace compare --max-regression 'p99:+10%,rate:-2%' base.json new.json",
        ],
    ),
    ("Where a connection per request spends its time: connect, TLS handshake, first byte (the Phases block of -L).", &["pace -L -H 'Connection: close' -c10 -d10s https://127.0.0.1:8443/"]),
    ("HTTP/2 with 10 streams per connection (h2c for http://).", &["pace --http2 --streams 10 -c10 -R5000 http://127.0.0.1:8080/"]),
    ("The built-in server, and a demonstration of coordinated omission.", &["pace serve --port 8080 --latency 1ms", "pace demo"]),
];
