//! Property tests: the fuzz targets' checks on generated inputs, with a
//! fixed seed and a bounded number of cases (well under a second per
//! property in a release build), plus the inputs the fuzzers found
//! (`fuzz/regressions/<target>/`).

use std::time::Instant;

use super::frames::Op;
use super::http::{arbitrary_request, chunk};
use super::input::Input;
use super::*;
use crate::http::request::count_requests;
use crate::http::response::ParseError;

/// A small deterministic generator (xorshift64).
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    fn bytes(&mut self, length: usize) -> Vec<u8> {
        (0..length).map(|_| self.next() as u8).collect()
    }

    /// Fewer than `max` random bytes.
    fn some_bytes(&mut self, max: usize) -> Vec<u8> {
        let length = self.below(max);
        self.bytes(length)
    }

    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}

/// Runs `check` on `cases` inputs made by `generate`, and says how long it
/// took (`cargo test --release -- --nocapture` shows it).
fn property(name: &str, cases: usize, seed: u64, mut case: impl FnMut(&mut Random)) {
    let started = Instant::now();
    let mut random = Random(seed);
    for _ in 0..cases {
        case(&mut random);
    }
    println!("{name}: {cases} cases in {:.0?}", started.elapsed());
}

/// The input of [`response_stream`]: HEAD flags, cut points, stream.
fn response_input(heads: &[bool], cuts: &[u16], stream: &[u8]) -> Vec<u8> {
    let mask = heads.iter().take(8).enumerate().fold(0u8, |m, (i, &h)| m | (u8::from(h) << i));
    let mut input = vec![mask, cuts.len() as u8];
    input.extend(cuts.iter().flat_map(|cut| cut.to_le_bytes()));
    input.extend_from_slice(stream);
    input
}

/// One expected response: status, keep-alive, body.
type Expected = (u16, bool, Vec<u8>);

/// A valid stream of responses covering every framing (Content-Length,
/// chunked with extensions and trailers, HEAD, 204/304, interim 1xx,
/// HTTP/1.0, stray empty lines, a body until EOF last), with the HEAD flag
/// of each response and what must come out.
fn valid_responses(random: &mut Random) -> (Vec<u8>, Vec<bool>, Vec<Expected>) {
    let (mut stream, mut heads, mut expected) = (Vec::new(), Vec::new(), Vec::new());
    let count = 1 + random.below(6);
    for index in 0..count {
        if random.chance(4) {
            stream.extend_from_slice(random.pick(&[&b"\r\n"[..], b"\n", b"\r\n\r\n"]));
        }
        if random.chance(4) {
            stream.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            stream.extend_from_slice(b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
        }
        let head = index < 8 && random.chance(5);
        let status = *random.pick(&[&200u16, &201, &204, &304, &404, &500]);
        let minor = if random.chance(5) { 0 } else { 1 };
        let mut header = format!("HTTP/1.{minor} {status} Whatever\r\nServer: x\r\n");
        let (mut keep_alive, mut close) = (minor == 1, false);
        if minor == 0 && random.chance(2) {
            header.push_str("Connection: keep-alive\r\n");
            keep_alive = true;
        }
        if random.chance(6) {
            header.push_str("Connection: close\r\n");
            (keep_alive, close) = (false, true);
        }
        let _ = close;
        let data = random.some_bytes(100);
        let no_body = head || status == 204 || status == 304;
        let last = index == count - 1;
        let until_eof = last && !no_body && random.chance(4);
        let (framing, wire_body) = if until_eof {
            keep_alive = false;
            (String::new(), data.clone())
        } else if random.chance(2) {
            let random_bytes = random.bytes(256);
            let chunked = chunk(&mut Input::new(&random_bytes), &data);
            ("Transfer-Encoding: chunked\r\n".to_string(), chunked)
        } else {
            (format!("Content-Length: {}\r\n", data.len()), data.clone())
        };
        header.push_str(&framing);
        header.push_str("\r\n");
        stream.extend_from_slice(header.as_bytes());
        if !no_body {
            stream.extend_from_slice(&wire_body);
        }
        heads.push(head);
        expected.push((status, keep_alive, if no_body { Vec::new() } else { data }));
        if until_eof {
            break;
        }
    }
    (stream, heads, expected)
}

fn summary(outcome: Result<Vec<crate::http::response::Response>, ParseError>) -> Vec<Expected> {
    outcome
        .expect("a valid stream")
        .into_iter()
        .map(|r| (r.status, r.keep_alive, r.captured.map(|c| c.body).unwrap_or_default()))
        .collect()
}

#[test]
fn every_cut_of_valid_response_streams_gives_the_same_responses() {
    property("response cuts", 100, 0x5eed_0001, |random| {
        let (stream, heads, expected) = valid_responses(random);
        assert_eq!(summary(run_responses(true, &heads, &[&stream])), expected);
        for at in 0..=stream.len() {
            let pieces = [&stream[..at], &stream[at..]];
            assert_eq!(summary(run_responses(true, &heads, &pieces)), expected, "cut at {at}");
        }
        for _ in 0..20 {
            let cuts: Vec<u16> = (0..8).map(|_| random.next() as u16).collect();
            response_stream(&response_input(&heads, &cuts, &stream));
        }
    });
}

#[test]
fn byte_flips_in_valid_response_streams_never_panic_or_stall() {
    property("response byte flips", 30, 0x5eed_0002, |random| {
        let (stream, heads, _) = valid_responses(random);
        for at in 0..stream.len() {
            for byte in
                [stream[at] ^ 0x01, stream[at] ^ 0x20, stream[at] ^ 0x80, b'\r', b'\n', b'0']
            {
                let mut flipped = stream.clone();
                flipped[at] = byte;
                // `run_responses` asserts progress; any result is fine.
                let capture = random.chance(2);
                let _ = run_responses(capture, &heads, &[&flipped]);
                let cut = random.below(flipped.len() + 1);
                let _ = run_responses(capture, &heads, &[&flipped[..cut], &flipped[cut..]]);
            }
        }
    });
}

#[test]
fn random_bytes_through_the_response_checks() {
    property("response random bytes", 3000, 0x5eed_0003, |random| {
        let (stream, heads, _) = valid_responses(random);
        let mut bytes = response_input(&heads, &[random.next() as u16], &stream);
        // A few random bytes anywhere, or random bytes only.
        if random.chance(4) {
            bytes = random.some_bytes(300);
        } else {
            for _ in 0..random.below(4) {
                let at = random.below(bytes.len());
                bytes[at] = random.next() as u8;
            }
        }
        response_stream(&bytes);
        chunked_body(&bytes[bytes.len().min(2)..]);
    });
}

/// A response whose head announces `framing`, then `body`: what the
/// parser makes of it, and what it has left after EOF.
fn frame(framing: &str, body: &[u8]) -> Result<Vec<crate::http::response::Response>, ParseError> {
    let stream = [format!("HTTP/1.1 200 OK\r\n{framing}\r\n").as_bytes(), body].concat();
    run_responses(false, &[], &[&stream])
}

#[test]
fn chunk_sizes_at_the_integer_limits() {
    let chunked = "Transfer-Encoding: chunked\r\n";
    // 0: the last chunk.
    assert_eq!(frame(chunked, b"0\r\n\r\n").unwrap().len(), 1);
    assert_eq!(frame(chunked, b"0000000000000000000000\r\n\r\n").unwrap().len(), 1);
    // Leading zeros do not count towards the limit.
    assert_eq!(frame(chunked, b"000000000000000000001\r\nx\r\n0\r\n\r\n").unwrap().len(), 1);
    // 2^63 and u64::MAX - 1 are sizes that wait for their data.
    for size in ["8000000000000000", "fffffffffffffffe", "FFFFFFFFFFFFFFFE"] {
        let body = format!("{size}\r\n{}", "x".repeat(1000));
        assert_eq!(frame(chunked, body.as_bytes()), Err(ParseError::Truncated), "{size}");
    }
    // u64::MAX, u64::MAX + 1 and any 17 significant hex digits are not.
    for size in ["ffffffffffffffff", "10000000000000000", "12345678901234567", "fffffffffffffffff"]
    {
        let body = format!("{size}\r\nx\r\n0\r\n\r\n");
        assert_eq!(frame(chunked, body.as_bytes()), Err(ParseError::BadChunkSize), "{size}");
        let request = format!("POST / HTTP/1.1\r\n{chunked}\r\n{body}");
        let error = count_requests(request.as_bytes()).unwrap_err();
        assert_eq!(error.cause, "invalid character in chunk size header", "{size}");
    }
}

#[test]
fn content_lengths_at_the_integer_limits() {
    assert_eq!(frame("Content-Length: 0\r\n", b"").unwrap().len(), 1);
    let zeros = format!("Content-Length: {}5\r\n", "0".repeat(30));
    assert_eq!(frame(&zeros, b"hello").unwrap().len(), 1);
    for length in ["9223372036854775808", "18446744073709551615"] {
        let header = format!("Content-Length: {length}\r\n");
        assert_eq!(frame(&header, &[b'x'; 1000]), Err(ParseError::Truncated), "{length}");
        let request = format!("POST / HTTP/1.1\r\n{header}\r\nabc");
        assert_eq!(count_requests(request.as_bytes()).unwrap_err().cause, "incomplete request");
    }
    for length in ["18446744073709551616", "99999999999999999999999", "-1", "+1", "0x10", "1 2"] {
        let header = format!("Content-Length: {length}\r\n");
        assert_eq!(frame(&header, b""), Err(ParseError::BadContentLength), "{length}");
        let request = format!("POST / HTTP/1.1\r\n{header}\r\n");
        let error = count_requests(request.as_bytes()).unwrap_err();
        assert_eq!(error.cause, "invalid character in content-length header", "{length}");
    }
}

/// A buffer of valid requests from `random`, with empty lines before and
/// between them: the buffer, the HEAD flags, and for each request the
/// offset where it ends and where the next one starts.
fn valid_batch(random: &mut Random) -> (Vec<u8>, Vec<bool>, Vec<(usize, usize)>) {
    let (mut buffer, mut heads, mut bounds) = (Vec::new(), Vec::new(), Vec::new());
    let empty_lines = |random: &mut Random, buffer: &mut Vec<u8>| {
        for _ in 0..random.below(3) {
            buffer.extend_from_slice(random.pick(&[&b"\r\n"[..], b"\n"]));
        }
    };
    empty_lines(random, &mut buffer);
    for _ in 0..1 + random.below(8) {
        let bytes = random.bytes(600);
        let (request, head) = arbitrary_request(&mut Input::new(&bytes), true);
        buffer.extend_from_slice(&request);
        let end = buffer.len();
        empty_lines(random, &mut buffer);
        heads.push(head);
        bounds.push((end, buffer.len()));
    }
    (buffer, heads, bounds)
}

#[test]
fn request_batches_count_their_requests_and_truncations_are_incomplete() {
    property("request batches", 150, 0x5eed_0004, |random| {
        let (buffer, heads, bounds) = valid_batch(random);
        assert_eq!(count_requests(&buffer).map(|b| b.is_head).as_ref(), Ok(&heads));
        // The server takes the same requests (body size 0, 1..64 bytes per read).
        let step = random.below(64) as u16;
        let server = [&[0, 0][..], &step.to_le_bytes(), &buffer].concat();
        assert_eq!(serve_requests(&server), heads);
        for cut in 0..buffer.len() {
            let complete = bounds.iter().position(|&(end, next)| (end..=next).contains(&cut));
            let counted = count_requests(&buffer[..cut]);
            match complete {
                Some(index) => {
                    assert_eq!(counted.map(|b| b.is_head).as_ref(), Ok(&heads[..=index].to_vec()))
                }
                None => assert_eq!(counted.unwrap_err().cause, "incomplete request", "cut {cut}"),
            }
        }
        request_batch(&buffer);
    });
}

#[test]
fn built_requests_count_as_one() {
    property("built requests", 3000, 0x5eed_0005, |random| {
        let mut bytes = random.some_bytes(800);
        built_request(&bytes);
        bytes.insert(0, 1);
        built_request(&bytes);
        request_batch(&bytes);
    });
}

#[test]
fn server_request_parsing_on_random_and_corrupted_input() {
    property("server requests", 1500, 0x5eed_0006, |random| {
        let (mut buffer, _, _) = valid_batch(random);
        for _ in 0..random.below(3) {
            let at = random.below(buffer.len());
            buffer[at] = random.next() as u8;
        }
        let header = [random.next() as u8, 0, random.next() as u8, 0];
        let input = [&header[..], &buffer].concat();
        serve_requests(&input);
        serve_requests(&random.some_bytes(200));
    });
}

#[test]
fn server_connections_on_random_and_corrupted_input() {
    let endpoints: [&[u8]; 12] = [
        b"/",
        b"/chunked?n=2",
        b"/close",
        b"/eof",
        b"/continue",
        b"/delay/5",
        b"/hang",
        b"/echo",
        b"/auth",
        b"/resource",
        b"/bytes/70000",
        b"/status/204",
    ];
    property("server connections", 500, 0x5eed_0007, |random| {
        let mut stream = Vec::new();
        for _ in 0..1 + random.below(4) {
            let endpoint = endpoints[random.below(endpoints.len())];
            let method: &[u8] = if random.chance(5) { b"HEAD" } else { b"POST" };
            stream.extend_from_slice(&[method, b" ", endpoint, b" HTTP/1.1\r\n"].concat());
            if random.chance(3) {
                stream.extend_from_slice(b"Expect: 100-continue\r\n");
            }
            stream.extend_from_slice(b"Content-Length: 3\r\n\r\nabc");
        }
        if random.chance(2) {
            let at = random.below(stream.len());
            stream[at] = random.next() as u8;
        }
        let cuts: Vec<u16> = (0..random.below(4)).map(|_| random.next() as u16).collect();
        let mut input = vec![random.below(4) as u8, 0, cuts.len() as u8];
        input.extend(cuts.iter().flat_map(|cut| cut.to_le_bytes()));
        input.extend_from_slice(&stream);
        serve_connection(&input);
    });
}

#[test]
fn urls_never_panic_and_rebuild_to_the_same_target() {
    let schemes = ["http", "https", "HTTP", "Https", "ws", "wss", "https+x", "ftp", "", "1http"];
    let hosts = [
        "localhost",
        "127.0.0.1",
        "[::1]",
        "[fe80::1]",
        "[::ffff:1.2.3.4]",
        "a:b",
        ":",
        "",
        "[zz]",
        "[::1",
        "h\u{e9}",
        "a b",
        "x.example",
        "[::1]x",
        "@",
    ];
    let ports = ["", ":", ":80", ":0", ":65535", ":65536", ":08080", ":x", "::1"];
    let paths = ["", "/", "/a/b", "?q=1", "#f", "/p?q#f", "/\u{1f600}", "//x", "/a@b:c"];
    property("urls", 20_000, 0x5eed_0008, |random| {
        let userinfo = if random.chance(5) { "user:pass@" } else { "" };
        let url = format!(
            "{}://{userinfo}{}{}{}",
            random.pick(&schemes),
            random.pick(&hosts),
            random.pick(&ports),
            random.pick(&paths)
        );
        super::url(url.as_bytes());
        let mut bytes = url.into_bytes();
        let at = random.below(bytes.len());
        bytes[at] = random.next() as u8;
        super::url(&bytes);
    });
}

#[test]
fn unit_parsers_never_panic_and_formatting_reads_back() {
    let pieces = ["0", "1", "12", ".", "5", "999", " ", "k", "K", "m", "M", "g", "t", "p", "s"];
    let more = ["ms", "us", "\u{b5}s", "h", "d", "x", "-", "e3", "99999999999999999999"];
    property("units", 20_000, 0x5eed_0009, |random| {
        let value = match random.below(4) {
            0 => f64::from_bits(random.next()),
            1 => random.below(1_000_000) as f64 / 100.0,
            2 => 10f64.powi(random.below(40) as i32 - 4) * (random.below(1000) as f64 / 7.0),
            _ => *random.pick(&[&0.0, &-0.0, &f64::NAN, &f64::INFINITY, &-1.0, &849.999, &1e15]),
        };
        let text: String = (0..random.below(5))
            .map(|_| if random.chance(3) { random.pick(&more) } else { random.pick(&pieces) })
            .collect();
        let mut input = value.to_bits().to_le_bytes().to_vec();
        input.extend([random.next() as u8, 0, random.next() as u8, 0]);
        input.extend_from_slice(text.as_bytes());
        super::units(&input);
    });
}

#[test]
fn command_lines_give_commands_or_usage_errors() {
    let text = "-c -t -d -R -H -L -U -B -T -D -k -p -e -s -v -h --connections --conn --thread \
        --threads=2 --timeseries --timeseries=1s --thread-timeseries --hlog --percentiles --lat \
        -- - serve demo help --port --bind --stall-at --stall-for --tls --body-size 1 0 2k 1.5 \
        10s -1 18446744073709551616 1e3 X:y http://127.0.0.1:8080/ 50,99,nan --arrival poisson \
        --stages 30s:1k,1m:1k 0s:0 --warmup --seed --shard 1/3 3/2 --start-at \
        2024-01-01T00:00:00Z --slo p99<10ms,errors<0.1%,rate>99% p100<1s";
    let mut words: Vec<&[u8]> = text.split_whitespace().map(str::as_bytes).collect();
    words.push(b"\xff\xfe");
    property("command lines", 20_000, 0x5eed_000a, |random| {
        let mut line = Vec::new();
        for index in 0..random.below(8) {
            if index > 0 {
                line.push(0);
            }
            line.extend_from_slice(words[random.below(words.len())]);
        }
        super::command_line(&line);
    });
}

/// A program for [`lua_transfer`] (see the ops there) with small
/// arguments: nesting around the depth limit, a few doublings, no large
/// strings (the unit tests of `script::value` cover the limits).
fn lua_program(random: &mut Random) -> Vec<u8> {
    let mut program = Vec::new();
    let pick = |random: &mut Random| (random.next() as u16).to_le_bytes();
    for _ in 0..random.below(60) {
        let op = random.below(12) as u8;
        program.push(op);
        match op {
            1 | 3 => program.push(random.next() as u8),
            2 => {
                let special = [0.0, -0.0, 1.5, 1e300, f64::NAN, f64::INFINITY, -7.0, 2f64.powi(53)];
                let number = if random.chance(2) {
                    special[random.below(special.len())]
                } else {
                    f64::from_bits(random.next())
                };
                program.extend(number.to_bits().to_le_bytes());
            }
            4 => {
                let bytes = random.some_bytes(64);
                program.extend((bytes.len() as u16).to_le_bytes());
                program.extend(bytes);
            }
            // No large strings.
            5 => *program.last_mut().unwrap() = 6,
            7 => (0..3).for_each(|_| program.extend(pick(random))),
            10 => {
                program.extend(pick(random));
                program.extend((random.below(120) as u16).to_le_bytes());
            }
            11 => {
                program.extend(pick(random));
                program.push(random.below(10) as u8);
            }
            _ => {}
        }
    }
    program
}

#[test]
fn lua_values_copy_between_states() {
    property("lua values", 1000, 0x5eed_000b, |random| lua_transfer(&lua_program(random)));
}

/// A byte below `bound`.
fn choice(random: &mut Random, bound: usize) -> u8 {
    random.below(bound) as u8
}

/// Cut points for [`Op::Read`]: none, or a few anywhere.
fn some_cuts(random: &mut Random) -> Vec<u16> {
    (0..random.below(4)).map(|_| random.next() as u16).collect()
}

/// A message on the `stream`-th latest stream: header blocks that start
/// with one of the first `starts` choices (a `:status`, or a request's
/// pseudo-headers), mostly valid fields, DATA within a frame's limit, the
/// stream ended by the last frame or by trailers, and now and then an
/// interim response (`:status` 100) first.
fn http2_message(random: &mut Random, stream: u8, starts: usize, ops: &mut Vec<Op>) {
    // Mostly fields that do not break the message (x-a, x-b).
    let field = |random: &mut Random| match random.chance(8) {
        true => random.next() as u8,
        false => 4 + choice(random, 2),
    };
    let fields = |random: &mut Random| (0..random.below(3)).map(|_| field(random)).collect();
    if starts == 5 && random.chance(8) {
        ops.push(Op::Headers { stream, flags: 0, first: 8, fields: vec![] });
    }
    let first = choice(random, starts);
    // 204 and 304 have no body.
    let frames = if starts == 5 && (first == 1 || first == 2) { 0 } else { random.below(4) };
    let end = u8::from(frames == 0);
    ops.push(Op::Headers { stream, flags: end, first, fields: fields(random) });
    for k in 1..=frames {
        if k == frames && random.chance(4) {
            // Trailers end it.
            ops.push(Op::Headers { stream, flags: 1, first: 7, fields: vec![4] });
            break;
        }
        let flags = match random.chance(4) {
            true => PADDED_CHOICE | (random.next() as u8 & 0xf0),
            false => 0,
        } | u8::from(k == frames);
        ops.push(Op::Data { stream, flags, length: choice(random, 6) });
    }
}

/// Bit 3 of a [`Op::Data`] flags choice: padded.
const PADDED_CHOICE: u8 = 0x8;

/// An op at random, of any kind, with any choices.
fn any_op(random: &mut Random) -> Op {
    let mut bytes = vec![random.below(15) as u8];
    bytes.extend(random.bytes(40));
    Op::read(&mut Input::new(&bytes))
}

/// A program of [`Op`]s for the HTTP/2 targets: mostly what a peer says
/// (SETTINGS, messages on the latest streams, resets, GOAWAY, PING,
/// WINDOW_UPDATE), reads of it cut at random points, and requests,
/// timeouts, failures and closes in between; now and then an op at
/// random. `starts`: how many choices of a header block's start are
/// valid (they come first in the table).
fn http2_ops(random: &mut Random, starts: usize) -> Vec<Op> {
    let mut ops = Vec::new();
    if random.chance(2) {
        ops.push(Op::Settings { flags: 0, entries: vec![[2, random.below(7) as u8]] });
    }
    ops.push(Op::Read { cuts: some_cuts(random) });
    ops.push(Op::Submit { count: choice(random, 4), choice: random.next() as u8 });
    for _ in 0..random.below(30) {
        // The latest streams mostly.
        let stream = if random.chance(8) { random.next() as u8 } else { choice(random, 4) };
        match random.below(20) {
            0..=6 => http2_message(random, stream, starts, &mut ops),
            7..=9 => ops.push(Op::Read { cuts: some_cuts(random) }),
            10..=11 => {
                ops.push(Op::Submit { count: choice(random, 4), choice: random.next() as u8 })
            }
            12 => ops.push(Op::RstStream { stream, code: random.next() as u8 }),
            13 => ops.push(Op::GoAway { last: choice(random, 4), code: choice(random, 2) }),
            14 => ops.push(match random.chance(2) {
                true => Op::Ping { flags: random.next() as u8 },
                false => Op::WindowUpdate { stream, increment: choice(random, 6) },
            }),
            15 => {
                let entries =
                    (0..random.below(3)).map(|_| [random.next() as u8, random.next() as u8]);
                ops.push(Op::Settings { flags: 0, entries: entries.collect() });
            }
            16 => ops.push(Op::Expire { timeout: random.next() as u8 }),
            17 => {
                ops.push(if random.chance(2) { Op::Fail } else { Op::PeerClose });
                // The next connection: its SETTINGS, requests on it.
                ops.push(Op::Read { cuts: some_cuts(random) });
                ops.push(Op::Submit { count: choice(random, 4), choice: random.next() as u8 });
            }
            _ => ops.push(any_op(random)),
        }
    }
    ops
}

/// The bytes of `ops` after a header, with a few bytes changed now and then.
fn program(random: &mut Random, header: &[u8], ops: &[Op]) -> Vec<u8> {
    let mut bytes = header.to_vec();
    ops.iter().for_each(|op| op.write(&mut bytes));
    if random.chance(4) {
        for _ in 0..1 + random.below(3) {
            let at = random.below(bytes.len());
            bytes[at] = random.next() as u8;
        }
    }
    bytes
}

#[test]
fn http2_ops_read_back_as_written() {
    property("http2 ops", 2000, 0x5eed_000c, |random| {
        let bytes = random.some_bytes(200);
        let mut input = Input::new(&bytes);
        let mut ops = Vec::new();
        while !input.is_empty() {
            ops.push(Op::read(&mut input));
        }
        let mut written = Vec::new();
        ops.iter().for_each(|op| op.write(&mut written));
        let mut again = Input::new(&written);
        for op in &ops {
            assert_eq!(&Op::read(&mut again), op);
        }
        assert!(again.is_empty());
    });
}

#[test]
fn http1_client_on_generated_servers() {
    property("http1 responses", 3000, 0x5eed_000e, |random| {
        let mut program = vec![random.next() as u8];
        for _ in 0..random.below(40) {
            let op = random.below(8) as u8;
            program.push(op);
            match op {
                // A valid response more often than bytes at random.
                1 => program.push(random.next() as u8),
                2 => {
                    let bytes = random.some_bytes(40);
                    program.push(bytes.len() as u8);
                    program.extend_from_slice(&bytes);
                }
                3 => {
                    let cuts = random.below(4);
                    program.push(cuts as u8);
                    for _ in 0..cuts {
                        program.extend_from_slice(&(random.below(300) as u16).to_le_bytes());
                    }
                }
                _ => program.push(random.next() as u8),
            }
        }
        http1_responses(&program);
    });
}

#[test]
fn http2_client_on_generated_servers() {
    property("http2 responses", 3000, 0x5eed_000d, |random| {
        let ops = http2_ops(random, 5);
        // The server starts each connection with SETTINGS but once in 8.
        let greeting = if random.chance(8) { 0x8 } else { 0 };
        let header = [random.next() as u8 & !0x8 | greeting, random.next() as u8];
        http2_responses(&program(random, &header, &ops));
    });
}

/// The stream choice that opens the next stream (see `Streams::id`).
const NEXT_STREAM: u8 = 0xe0;

/// A program of [`Op`]s for [`serve_http2`], as the client: requests for
/// the endpoints (the first 13 choices of `REQUESTS`, the rest malformed)
/// on new streams, with bodies in DATA, and resets, window updates,
/// settings, pings, time passing, reads of it all cut at random points;
/// now and then an op at random.
fn http2_request_ops(random: &mut Random) -> Vec<Op> {
    let mut ops = Vec::new();
    for _ in 0..random.below(30) {
        let stream = if random.chance(8) { random.next() as u8 } else { choice(random, 3) };
        match random.below(16) {
            0..=5 => {
                let first = if random.chance(8) { random.next() as u8 } else { choice(random, 13) };
                let body = random.below(3);
                let fields = (0..random.below(2)).map(|_| 4 + choice(random, 2)).collect();
                let flags = u8::from(body == 0);
                ops.push(Op::Headers { stream: NEXT_STREAM, flags, first, fields });
                for k in 1..=body {
                    let flags = u8::from(k == body);
                    ops.push(Op::Data { stream: 0, flags, length: choice(random, 5) });
                }
            }
            6..=8 => ops.push(Op::Read { cuts: some_cuts(random) }),
            9 => ops.push(Op::RstStream { stream, code: random.next() as u8 }),
            10 => ops.push(Op::WindowUpdate { stream, increment: choice(random, 6) }),
            11 => {
                let entries =
                    (0..random.below(3)).map(|_| [random.next() as u8, random.next() as u8]);
                ops.push(Op::Settings { flags: 0, entries: entries.collect() });
            }
            12 => ops.push(match random.chance(2) {
                true => Op::Ping { flags: 0 },
                false => Op::GoAway { last: random.next() as u8, code: choice(random, 2) },
            }),
            13 => ops.push(Op::Submit { count: 0, choice: 0 }),
            14 => ops.push(Op::Expire { timeout: 0 }),
            _ => ops.push(match random.below(20) {
                0 => Op::Fail,
                1 => Op::PeerClose,
                _ => any_op(random),
            }),
        }
    }
    ops.push(Op::Read { cuts: some_cuts(random) });
    ops
}

#[test]
fn http2_server_on_generated_clients() {
    property("http2 server", 1500, 0x5eed_000e, |random| {
        let ops = http2_request_ops(random);
        // The client starts with the preface but once in 8.
        let preface = u8::from(random.chance(8));
        let header = [random.below(4) as u8, 0, preface];
        serve_http2(&program(random, &header, &ops));
    });
}

/// Replays every file in `fuzz/regressions/<target>/` (inputs that made a
/// target fail once) and `fuzz/seeds/<target>/` through the target.
#[test]
fn fuzz_regressions_and_seeds_pass() {
    type Check = fn(&[u8]);
    let targets: [(&str, Check); 14] = [
        ("response", response_stream),
        ("http1_response", http1_responses),
        ("http2_response", http2_responses),
        ("http3_frames", http3_frames),
        ("chunked", chunked_body),
        ("request_batch", request_batch),
        ("build_request", built_request),
        ("serve_request", |data| drop(serve_requests(data))),
        ("serve_conn", serve_connection),
        ("serve_http2", serve_http2),
        ("url", url),
        ("units", units),
        ("cli", command_line),
        ("lua_transfer", lua_transfer),
    ];
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut replayed = 0;
    for (target, check) in targets {
        let regressions = std::fs::read_dir(fuzz.join("regressions").join(target));
        let seeds = std::fs::read_dir(fuzz.join("seeds").join(target));
        for entry in regressions.into_iter().chain(seeds).flatten() {
            replayed += 1;
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{} fails again", path.display());
        }
    }
    assert!(replayed > 0, "no inputs in {}", fuzz.display());
}

#[test]
fn http3_frames_on_generated_streams() {
    use crate::http3::{frame, varint};
    property("http3 frames", 20000, 0x5eed_0030, |random| {
        let mut stream = Vec::new();
        for _ in 0..random.below(8) {
            // Frames of the known types (and an unknown one), with payloads
            // that are field sections, settings, ids or bytes at random;
            // now and then bytes at random between them.
            let kind = [frame::DATA, frame::HEADERS, frame::SETTINGS, frame::GOAWAY, 0x21, 0x2]
                [random.below(6)];
            let payload = match kind {
                frame::HEADERS if !random.chance(4) => {
                    let mut block = Vec::new();
                    let names: [&[u8]; 4] = [b":status", b"content-type", b"x-pace", b""];
                    let fields: Vec<(&[u8], Vec<u8>)> = (0..random.below(5))
                        .map(|_| match names[random.below(4)] {
                            b":status" if random.chance(2) => (&b":status"[..], b"200".to_vec()),
                            name => (name, random.some_bytes(140)),
                        })
                        .collect();
                    crate::http3::qpack::encode(
                        fields.iter().map(|(n, v)| (*n, &v[..])),
                        &mut block,
                    );
                    block
                }
                frame::GOAWAY if !random.chance(4) => {
                    let mut id = Vec::new();
                    varint::encode(random.next() >> 2, &mut id);
                    id
                }
                _ => random.some_bytes(300),
            };
            frame::frame(kind, &payload, &mut stream);
            if random.chance(10) {
                stream.extend(random.some_bytes(8));
            }
        }
        let mut data = vec![random.next() as u8, random.below(9) as u8];
        for _ in 0..data[1] {
            data.extend_from_slice(&(random.next() as u16).to_le_bytes());
        }
        data.extend_from_slice(&stream);
        http3_frames(&data);
    });
}
