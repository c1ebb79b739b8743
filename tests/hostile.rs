//! Hostile servers (issue #7): pace against a scripted server that resets,
//! sends garbage, floods, trickles or never answers, each in the closed
//! loop and paced. Whatever the server does, the run ends within its
//! duration plus the timeout, pace exits 0 with the report, counts the
//! right error kind and cause (and responses where the server is merely
//! unusual), keeps its memory bounded, does not spin while it waits and
//! never panics.
//!
//! Every test prints one table row per run on stderr (`--nocapture` shows
//! them): mode, loop, responses, what pace counted, exit code, wall time,
//! CPU time, peak RSS.
//!
//! And hostile clients (issue 33): `pace serve`, as a process, against
//! clients that send a body that never ends, grant a huge window and never
//! read, leave a stream hanging and go, or trickle a request head. The
//! server's resident memory stays bounded and it closes what can no longer
//! complete, so that its memory and descriptors come back.

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use std::fmt;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::{load_lock, spawn_pace, Run};
use hostile::{
    closed_by_server_within, h2, measure, HostileServer, Measured, Mode, ServeProcess, HUGE_BODY,
    TRICKLED, TRICKLE_EVERY,
};

/// `-d`: short, but long enough for the back-off and several reconnects.
const DURATION: Duration = Duration::from_secs(1);
/// What a run may take beyond its duration and its timeout. The model: the
/// connect phase (our server accepts at once; pace gives it at most 2 s,
/// but a refused or hung connect is not what these servers do), then the
/// duration, then the collection of responses in flight for up to the
/// timeout, then the report. Process start, the connect phase and the
/// report take milliseconds; the rest of the margin is for a loaded
/// 2-core machine.
const MARGIN: Duration = Duration::from_secs(2);
/// pace's peak resident memory. pace allocates its histograms once per
/// run, reads through one 64 KiB buffer per thread, streams bodies in O(1)
/// memory and gives up on a header block past 64 KiB (so at most 64 KiB
/// gathered per connection); code, stacks and histograms come on top
/// (about 4 MiB in all for these runs, measured). 32 MiB leaves room for
/// the allocator's habits and for growth of the engine, and fails long
/// before a buffered 200 MB body fits.
const RSS_LIMIT_KIB: u64 = 32 * 1024;

/// Closed loop or paced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loop {
    Closed,
    Paced,
}

impl fmt::Display for Loop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Loop::Closed => "closed",
            Loop::Paced => "paced -R50",
        })
    }
}

/// The responses a mode lets pace count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Responses {
    /// None: the server never sends a complete valid response.
    None,
    /// Some, among the errors (a valid response comes before the trouble).
    Some,
    /// One for every response the server completed (within one per
    /// connection, for the last one's race with the counting).
    EveryAnswer,
}

/// One mode of the server and what pace must make of it.
struct Case {
    mode: Mode,
    /// `-T`.
    timeout: Duration,
    /// The causes pace may count, as the report prints them
    /// (`kind: cause`); empty: no socket error at all.
    causes: &'static [&'static str],
    responses: Responses,
}

/// Runs pace with `args`, killing it (and failing) past `limit`, with its
/// peak RSS and CPU time.
fn run_measured(args: &[&str], limit: Duration) -> Measured {
    measure(spawn_pace(args), limit)
}

/// `500ms`: a duration as pace's `-d` and `-T` take it.
fn arg(duration: Duration) -> String {
    format!("{}ms", duration.as_millis())
}

/// The requests of the plan that were never sent get a line of their own
/// under the causes; it is not a cause.
const UNSENT_LINE: &str = "unsent: ";

/// The `kind: cause` lines of the report with their counts (not the line
/// of the unsent requests).
fn causes(run: &Run) -> Vec<(String, u64)> {
    run.report()
        .error_causes()
        .iter()
        .filter(|line| !line.starts_with(UNSENT_LINE))
        .map(|line| {
            let (cause, n) =
                line.rsplit_once(": ").unwrap_or_else(|| panic!("bad cause line {line:?}\n{run}"));
            let n = n.parse().unwrap_or_else(|_| panic!("bad count in {line:?}\n{run}"));
            (cause.to_string(), n)
        })
        .collect()
}

/// Runs `case` closed loop and paced against a fresh server each, checks
/// every promise of the suite, prints a table row per run, and returns the
/// runs and their servers for checks of the mode's own.
fn check(case: &Case) -> Vec<(Loop, Measured, HostileServer)> {
    let _load = load_lock();
    let mut runs = Vec::new();
    for how in [Loop::Closed, Loop::Paced] {
        let server = HostileServer::start(case.mode);
        let url = server.url();
        let (duration, timeout) = (arg(DURATION), arg(case.timeout));
        let mut args = vec!["-t1", "-c2", "-d", &duration, "-T", &timeout];
        if how == Loop::Paced {
            args.extend(["-R", "50"]);
        }
        args.push(&url);
        let bound = DURATION + case.timeout + MARGIN;
        let measured = run_measured(&args, bound + Duration::from_secs(20));
        report_row(case, how, &measured);
        check_run(case, how, &measured, &server, bound);
        runs.push((how, measured, server));
    }
    runs
}

fn report_row(case: &Case, how: Loop, measured: &Measured) {
    let run = &measured.run;
    let report = run.report();
    let mut counted: Vec<String> =
        causes(run).iter().map(|(cause, n)| format!("{cause}: {n}")).collect();
    let unsent = report.socket_errors().map_or(0, |errors| errors.unsent);
    if unsent > 0 {
        counted.push(format!("(unsent: {unsent})"));
    }
    let responses = report.text.contains(" requests in ").then(|| report.requests());
    eprintln!(
        "| {:?} | {how} | {} | {} | {:?} | {:.2} s | {:.2} s | {:.1} MiB |",
        case.mode,
        responses.map_or("?".to_string(), |n| n.to_string()),
        if counted.is_empty() { "no errors".to_string() } else { counted.join("; ") },
        run.code(),
        run.wall.as_secs_f64(),
        measured.cpu.as_secs_f64(),
        measured.peak_rss_kib as f64 / 1024.0,
    );
}

fn check_run(case: &Case, how: Loop, measured: &Measured, server: &HostileServer, bound: Duration) {
    let Measured { run, peak_rss_kib, cpu } = measured;
    let what = format!("{:?}, {how}", case.mode);
    // A completed run: exit 0, the report, no panic, no internal error.
    run.assert_ok();
    assert!(run.wall <= bound, "{what}: took {:?}, more than {bound:?}\n{run}", run.wall);
    assert!(
        *peak_rss_kib <= RSS_LIMIT_KIB,
        "{what}: peak RSS {peak_rss_kib} KiB, over {RSS_LIMIT_KIB} KiB\n{run}"
    );
    if case.responses == Responses::None {
        // Nothing but failures and waits: pace backs off and sleeps, it
        // does not spin (about 10 ms of CPU measured; a loop woken again
        // and again by a dead socket would burn the whole wall time).
        assert!(
            *cpu <= run.wall / 4,
            "{what}: {cpu:?} of CPU in {:?} against a server that never answers properly\n{run}",
            run.wall
        );
    }

    let report = run.report();
    let errors = report.errors();
    let counted = causes(run);
    // Requests of the plan left unsent (connections failing or busy) are
    // counted on their own; the closed loop has no plan to fall behind.
    if how == Loop::Closed {
        assert_eq!(errors.unsent, 0, "{what}: unsent requests in the closed loop\n{run}");
    }
    let total = errors.connect + errors.read + errors.write + errors.timeout;
    if case.causes.is_empty() {
        assert_eq!(total, 0, "{what}: socket errors\n{run}");
        assert!(counted.is_empty(), "{what}: error causes\n{run}");
    } else {
        assert!(total > 0, "{what}: no socket error counted\n{run}");
        for (cause, _) in &counted {
            assert!(
                case.causes.contains(&cause.as_str()),
                "{what}: unexpected cause {cause:?}, expected only {:?}\n{run}",
                case.causes
            );
        }
        // The breakdown adds up to the counts of its kinds.
        for (kind, n) in [
            ("connect", errors.connect),
            ("read", errors.read),
            ("write", errors.write),
            ("timeout", errors.timeout),
        ] {
            let sum: u64 = counted
                .iter()
                .filter(|(cause, _)| cause.starts_with(&format!("{kind}: ")))
                .map(|(_, n)| n)
                .sum();
            assert_eq!(sum, n, "{what}: {kind} causes do not add up\n{run}");
        }
    }

    let responses = report.requests();
    match case.responses {
        Responses::None => assert_eq!(responses, 0, "{what}: responses counted\n{run}"),
        Responses::Some => assert!(responses > 0, "{what}: no response counted\n{run}"),
        Responses::EveryAnswer => {
            let answered = server.answered();
            assert!(responses > 0, "{what}: no response counted\n{run}");
            assert!(
                responses.abs_diff(answered) <= 2,
                "{what}: pace counted {responses} responses, the server completed {answered}\n{run}"
            );
            assert_eq!(report.non_2xx_3xx(), None, "{what}\n{run}");
        }
    }
}

const FAST: Duration = Duration::from_millis(500);
const RESET: &[&str] = &["read: Connection reset by peer"];

#[test]
fn reset_before_the_response() {
    check(&Case {
        mode: Mode::ResetBeforeResponse,
        timeout: FAST,
        causes: RESET,
        responses: Responses::None,
    });
}

#[test]
fn reset_within_the_response() {
    let runs = check(&Case {
        mode: Mode::ResetWithinResponse,
        timeout: FAST,
        causes: RESET,
        responses: Responses::None,
    });
    for (how, measured, _) in runs {
        // The part before the reset was read (the kernel hands out what
        // arrived before the RST, then the error).
        assert!(measured.run.report().bytes_read() > 0.0, "{how}\n{}", measured.run);
    }
}

#[test]
fn reset_after_the_response() {
    // The response counts. The reset hits the next request's write, or its
    // read when the write came first.
    let runs = check(&Case {
        mode: Mode::ResetAfterResponse,
        timeout: FAST,
        causes: &[
            "read: Connection reset by peer",
            "write: Connection reset by peer",
            "write: Broken pipe",
        ],
        responses: Responses::Some,
    });
    for (how, measured, server) in runs {
        let responses = measured.run.report().requests();
        assert!(responses <= server.answered(), "{how}\n{}", measured.run);
    }
}

#[test]
fn garbage_status_line() {
    check(&Case {
        mode: Mode::GarbageStatusLine,
        timeout: FAST,
        causes: &["read: malformed status line"],
        responses: Responses::None,
    });
}

#[test]
fn binary_junk() {
    check(&Case {
        mode: Mode::BinaryJunk,
        timeout: FAST,
        causes: &["read: malformed status line"],
        responses: Responses::None,
    });
}

#[test]
fn one_mib_header_block() {
    check(&Case {
        mode: Mode::HugeHeaderBlock,
        timeout: FAST,
        causes: &["read: header block larger than 64 KiB"],
        responses: Responses::None,
    });
}

#[test]
fn header_without_colon() {
    check(&Case {
        mode: Mode::HeaderWithoutColon,
        timeout: FAST,
        causes: &["read: malformed header"],
        responses: Responses::None,
    });
}

#[test]
fn invalid_chunk_size() {
    check(&Case {
        mode: Mode::InvalidChunkSize,
        timeout: FAST,
        causes: &["read: bad chunk size"],
        responses: Responses::None,
    });
}

#[test]
fn overflowing_chunk_size() {
    check(&Case {
        mode: Mode::OverflowingChunkSize,
        timeout: FAST,
        causes: &["read: bad chunk size"],
        responses: Responses::None,
    });
}

#[test]
fn short_body_then_close() {
    check(&Case {
        mode: Mode::ShortBodyThenClose,
        timeout: FAST,
        causes: &["read: connection closed before the response was complete"],
        responses: Responses::None,
    });
}

/// The trickled response takes this long to arrive.
fn trickle_time() -> Duration {
    TRICKLE_EVERY * TRICKLED.len() as u32
}

#[test]
fn trickle_within_the_timeout() {
    // 1 byte per 100 ms, 19 bytes: complete after 1.8 s, well within 4 s.
    // Each connection carries one request, whose response completes after
    // the 1 s run, while pace collects the responses in flight.
    let timeout = Duration::from_secs(4);
    assert!(trickle_time() + Duration::from_secs(1) < timeout);
    for (how, measured, _) in check(&Case {
        mode: Mode::Trickle,
        timeout,
        causes: &[],
        responses: Responses::EveryAnswer,
    }) {
        assert_eq!(
            measured.run.report().requests(),
            2,
            "{how}: one per connection\n{}",
            measured.run
        );
    }
}

#[test]
fn trickle_past_the_timeout() {
    // Bytes keep coming, but the response is not complete within the
    // timeout: it is a timeout all the same (the timeout runs from the
    // send, not from the last byte).
    assert!(trickle_time() > FAST * 2);
    check(&Case {
        mode: Mode::Trickle,
        timeout: FAST,
        causes: &[
            "timeout: no response within the timeout",
            "timeout: no response before the end of the run",
        ],
        responses: Responses::None,
    });
}

#[test]
fn never_answering() {
    check(&Case {
        mode: Mode::NeverAnswer,
        timeout: FAST,
        causes: &[
            "timeout: no response within the timeout",
            "timeout: no response before the end of the run",
        ],
        responses: Responses::None,
    });
}

#[test]
fn interim_responses_before_the_final_one() {
    check(&Case {
        mode: Mode::InterimBeforeFinal,
        timeout: FAST,
        causes: &[],
        responses: Responses::EveryAnswer,
    });
}

#[test]
fn close_delimited_bodies() {
    check(&Case {
        mode: Mode::CloseDelimited,
        timeout: FAST,
        causes: &[],
        responses: Responses::EveryAnswer,
    });
}

#[test]
fn unsolicited_bytes_after_a_response() {
    check(&Case {
        mode: Mode::UnsolicitedBytes,
        timeout: FAST,
        causes: &["read: data received with no request outstanding"],
        responses: Responses::Some,
    });
}

#[test]
fn body_of_200_mb() {
    // A generous timeout: a 200 MB response may take over a second on a
    // loaded machine, and it is not a timeout that this case is about.
    let runs = check(&Case {
        mode: Mode::HugeBody,
        timeout: Duration::from_secs(5),
        causes: &[],
        responses: Responses::EveryAnswer,
    });
    for (how, measured, server) in runs {
        let run = &measured.run;
        let report = run.report();
        let bodies = report.requests() as f64 * HUGE_BODY as f64;
        // The report rounds to 3 significant digits: 1%.
        assert!(report.bytes_read() >= 0.99 * bodies, "{how}\n{run}");
        assert!(server.bytes_written() as f64 >= bodies, "{how}\n{run}");
    }
}

// ----- hostile clients of `pace serve` (issue 33) -------------------------------------

/// The server's resident memory under a hostile client. It starts at about
/// 5 MiB and keeps per connection its buffers and at most 1 MiB of an
/// `/echo` body; what the clients below offer (hundreds of MiB) would take
/// it far past this if it were kept.
const SERVE_RSS_LIMIT_KIB: u64 = 64 * 1024;

/// What the body that never ends offers before the test looks at the
/// answer: half of the 1 GiB flow-control windows the server grants, so
/// that no WINDOW_UPDATE needs reading.
const ENDLESS_BODY: usize = 512 << 20;

/// How long a client that never reads leaves the server to render what
/// the windows allow (982 MB in 2 s were seen before the output was
/// bounded).
const NEVER_READING: Duration = Duration::from_secs(3);

/// The longest a test waits for the server to close something.
const CLOSE_LIMIT: Duration = Duration::from_secs(15);

/// A POST to `/echo` over h2c whose DATA goes on and on: the server keeps
/// what `/echo` uses (1 MiB, as over HTTP/1.1), counts the rest, and
/// answers 413 when the body ends.
#[test]
fn an_h2c_request_body_that_never_ends_is_not_kept() {
    let _load = load_lock();
    let server = ServeProcess::start(&[]);
    let mut client = server.connect();
    client.set_read_timeout(Some(CLOSE_LIMIT)).unwrap();
    // A server that stopped reading fails the test rather than hang it.
    client.set_write_timeout(Some(CLOSE_LIMIT)).unwrap();
    h2::handshake(&mut client, &[]).unwrap();
    client.write_all(&h2::headers(1, &h2::request("POST", "/echo"), false)).unwrap();
    let chunk = h2::frame(h2::DATA, 0, 1, &[b'x'; h2::MAX_FRAME]);
    let mut peak_kib = server.rss_kib();
    for sent in (0..ENDLESS_BODY).step_by(h2::MAX_FRAME) {
        client.write_all(&chunk).expect("the server takes the body");
        if sent % (16 << 20) == 0 {
            peak_kib = peak_kib.max(server.rss_kib());
        }
    }
    peak_kib = peak_kib.max(server.rss_kib());
    eprintln!("| h2c body of {} MiB | peak RSS {} KiB |", ENDLESS_BODY >> 20, peak_kib);
    assert!(
        peak_kib < SERVE_RSS_LIMIT_KIB,
        "{peak_kib} KiB resident after a {} MiB body",
        ENDLESS_BODY >> 20
    );
    // The body ends at last: the answer says it was too large.
    client.write_all(&h2::frame(h2::DATA, h2::END_STREAM, 1, &[])).unwrap();
    let answer = h2::read_body(&mut client, 1).expect("an answer to the body");
    assert_eq!(String::from_utf8_lossy(&answer), "body too large for /echo\n");
}

/// A client that grants the largest windows, asks for 1 GB and never
/// reads: the server pulls frames while its output is small, and goes on
/// when the client reads.
#[test]
fn a_large_h2_response_to_a_client_that_never_reads_is_not_rendered_at_once() {
    let _load = load_lock();
    let server = ServeProcess::start(&[]);
    let mut client = server.connect();
    client.set_read_timeout(Some(CLOSE_LIMIT)).unwrap();
    h2::handshake(&mut client, &[(h2::SETTINGS_INITIAL_WINDOW_SIZE, h2::MAX_WINDOW)]).unwrap();
    let mut ask = h2::window_update(0, h2::MAX_WINDOW - h2::DEFAULT_WINDOW);
    ask.extend(h2::headers(1, &h2::request("GET", "/bytes/1000000000"), true));
    client.write_all(&ask).unwrap();
    let mut peak_kib = 0;
    let watched = Instant::now();
    while watched.elapsed() < NEVER_READING {
        peak_kib = peak_kib.max(server.rss_kib());
        thread::sleep(Duration::from_millis(50));
    }
    eprintln!("| h2c 1 GB response, never read for {NEVER_READING:?} | peak RSS {peak_kib} KiB |");
    assert!(peak_kib < SERVE_RSS_LIMIT_KIB, "{peak_kib} KiB resident, the client reading nothing");
    // The client reads: the body goes on from where the socket stopped it.
    let wanted = 100 << 20;
    let mut received = 0;
    while received < wanted {
        let frame = h2::read_frame(&mut client).expect("the response goes on");
        if frame.kind == h2::DATA && frame.stream == 1 {
            received += frame.payload.len();
        }
    }
}

/// An HPACK bomb: one header block of 9 frames (147 kB) naming a 4 kB
/// entry of the decoder's table again and again, 600 MB of fields once
/// decoded (578 MB resident were seen). The server keeps 64 KiB of a
/// header list, as HTTP/1.1 keeps of a head, and resets the stream past it.
#[test]
fn an_h2c_header_block_that_decodes_to_600_mb_is_not_kept() {
    let _load = load_lock();
    let server = ServeProcess::start(&[]);
    let mut client = server.connect();
    client.set_read_timeout(Some(CLOSE_LIMIT)).unwrap();
    h2::handshake(&mut client, &[]).unwrap();
    let mut block = h2::header_block(&h2::request("GET", "/"));
    block.extend(h2::indexed_literal("x-big", &"v".repeat(4000)));
    block.resize(h2::MAX_FRAME, h2::NEWEST_ENTRY);
    let mut bomb = h2::frame(h2::HEADERS, h2::END_STREAM, 1, &block);
    for k in 1..=h2::MAX_CONTINUATIONS {
        let flags = if k == h2::MAX_CONTINUATIONS { h2::END_HEADERS } else { 0 };
        bomb.extend(h2::frame(h2::CONTINUATION, flags, 1, &[h2::NEWEST_ENTRY; h2::MAX_FRAME]));
    }
    client.write_all(&bomb).unwrap();
    // The stream ends one way or the other: reset, or answered.
    let ended = loop {
        let frame = h2::read_frame(&mut client).expect("the stream ends");
        let end_stream = frame.flags & h2::END_STREAM != 0 && frame.kind != h2::SETTINGS;
        if frame.stream == 1 && (frame.kind == h2::RST_STREAM || end_stream) {
            break frame;
        }
    };
    let peak_kib = server.peak_rss_kib();
    eprintln!("| h2c HPACK bomb of {} kB | peak RSS {peak_kib} KiB |", bomb.len() / 1000);
    assert!(peak_kib < SERVE_RSS_LIMIT_KIB, "{peak_kib} KiB resident at the peak");
    assert_eq!(ended.kind, h2::RST_STREAM, "{ended:?}");
}

/// HTTP/1.1 pipelining: `/echo` requests with bodies of 1000 KiB (an echo
/// of the request under the 1 MiB bound) one after the other, none of the
/// answers read. The server stops reading once 4 MiB of echoes wait to be
/// sent (it went on to 4096 answers: 4 GiB).
#[test]
fn pipelined_echoes_never_read_are_not_all_kept() {
    const ECHOES: usize = 300;
    let _load = load_lock();
    let server = ServeProcess::start(&[]);
    let mut client = server.connect();
    // A write that waits this long finds the server no longer reading.
    client.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let body = vec![b'e'; 1000 << 10];
    let head =
        format!("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n", body.len());
    let mut offered = 0;
    while offered < ECHOES {
        let sent = client.write_all(head.as_bytes()).and_then(|()| client.write_all(&body));
        if sent.is_err() {
            break;
        }
        offered += 1;
    }
    let peak_kib = server.peak_rss_kib();
    eprintln!("| HTTP/1.1 {offered} pipelined echoes, never read | peak RSS {peak_kib} KiB |");
    assert!(peak_kib < SERVE_RSS_LIMIT_KIB, "{peak_kib} KiB resident at the peak");
    assert!(offered < ECHOES, "the server read {offered} echoes it could not send");
}

/// The client asks for `/hang` on h2c and closes its side: the server
/// drops the answer that will never come and closes (it stayed in
/// CLOSE-WAIT, holding a descriptor, for ever).
#[test]
fn an_h2c_client_gone_with_a_hanging_stream_is_closed() {
    let _load = load_lock();
    let server = ServeProcess::start(&[]);
    let idle_fds = server.open_fds();
    for round in 0..20 {
        let mut client = server.connect();
        client.set_read_timeout(Some(CLOSE_LIMIT)).unwrap();
        h2::handshake(&mut client, &[]).unwrap();
        client.write_all(&h2::headers(1, &h2::request("GET", "/hang"), true)).unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        assert!(
            closed_by_server_within(&mut client, CLOSE_LIMIT),
            "round {round}: the connection is still open {CLOSE_LIMIT:?} after the client's FIN"
        );
    }
    let open = server.wait_for_fds_at_most(idle_fds, CLOSE_LIMIT);
    assert!(open <= idle_fds, "{open} descriptors open, {idle_fds} before the clients");
}

/// Slow-loris: many connections each sending a byte of a header now and
/// then, never the end of the head. With `--head-timeout 1s` each is
/// answered 408 and closed, and the server's descriptors come back.
#[test]
fn request_heads_that_never_end_time_out() {
    const CLIENTS: usize = 500;
    let _load = load_lock();
    let server = ServeProcess::start(&["--head-timeout", "1s"]);
    let idle_fds = server.open_fds();
    let mut clients: Vec<Trickling> = (0..CLIENTS)
        .map(|_| {
            let mut stream = server.connect();
            stream.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").unwrap();
            stream.set_nonblocking(true).unwrap();
            Trickling { stream, answer: Vec::new(), closed: false }
        })
        .collect();
    let started = Instant::now();
    while clients.iter().any(|c| !c.closed) && started.elapsed() < CLOSE_LIMIT {
        for client in clients.iter_mut().filter(|c| !c.closed) {
            client.trickle();
        }
        thread::sleep(Duration::from_millis(200));
    }
    let open = server.wait_for_fds_at_most(idle_fds, CLOSE_LIMIT);
    let still_open = clients.iter().filter(|c| !c.closed).count();
    assert_eq!(still_open, 0, "{still_open} slow heads still open after {CLOSE_LIMIT:?}");
    assert!(open <= idle_fds, "{open} descriptors open, {idle_fds} before the clients");
    for client in &clients {
        let answer = String::from_utf8_lossy(&client.answer);
        assert!(answer.starts_with("HTTP/1.1 408 "), "{answer:?}");
    }
}

/// A client trickling a request head, a byte of a header value at a time
/// (within the size a head may have for hours).
struct Trickling {
    stream: TcpStream,
    answer: Vec<u8>,
    closed: bool,
}

impl Trickling {
    /// Reads what the server said; once it has said anything, sends no
    /// more (a write after the server's close would draw a reset).
    fn trickle(&mut self) {
        let mut buf = [0u8; 1024];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.closed = true;
                    return;
                }
                Ok(n) => self.answer.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.closed = true;
                    return;
                }
            }
        }
        if self.answer.is_empty() {
            let _ = self.stream.write_all(b"s");
        }
    }
}

/// HTTP/2 connections that stop inside the preface, or after it but
/// before their SETTINGS, are closed after `--head-timeout` too.
#[test]
fn an_h2c_preface_without_its_settings_times_out() {
    let _load = load_lock();
    let server = ServeProcess::start(&["--head-timeout", "1s"]);
    let idle_fds = server.open_fds();
    for start in [&h2::PREFACE[..10], h2::PREFACE] {
        let mut client = server.connect();
        client.write_all(start).unwrap();
        assert!(
            closed_by_server_within(&mut client, CLOSE_LIMIT),
            "{:?} and nothing more: still open after {CLOSE_LIMIT:?}",
            String::from_utf8_lossy(start)
        );
    }
    let open = server.wait_for_fds_at_most(idle_fds, CLOSE_LIMIT);
    assert!(open <= idle_fds, "{open} descriptors open, {idle_fds} before the clients");
}

/// A TLS handshake that never finishes is an unfinished head too.
#[test]
fn a_tls_handshake_that_never_finishes_times_out() {
    let _load = load_lock();
    let server = ServeProcess::start(&["--tls", "--head-timeout", "1s"]);
    let mut client = server.connect();
    // The first bytes of a ClientHello record, and nothing more.
    client.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).unwrap();
    assert!(closed_by_server_within(&mut client, CLOSE_LIMIT), "still open after {CLOSE_LIMIT:?}");
}

/// A connection idle between requests (or before its first: a benchmark
/// connects before its start time) is not a slow head: it stays open past
/// the timeout and is answered when it asks.
#[test]
fn an_idle_connection_outlives_the_head_timeout() {
    let _load = load_lock();
    let server = ServeProcess::start(&["--head-timeout", "200ms"]);
    let mut client = server.connect();
    client.set_read_timeout(Some(CLOSE_LIMIT)).unwrap();
    // Idle for a few timeouts: this wait is what is tested.
    thread::sleep(Duration::from_secs(1));
    client.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut answer = [0u8; 17];
    client.read_exact(&mut answer).expect("an answer after being idle");
    assert_eq!(&answer, b"HTTP/1.1 200 OK\r\n");
}
