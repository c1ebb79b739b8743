//! Hostile conditions over HTTP/3 (`--http3`), end to end: the real binary
//! over real UDP on 127.0.0.1, against `pace serve --http3` as a process
//! (stopped, terminated) or a test socket that floods pace with tiny
//! garbage datagrams. Whatever happens, pace ends in bounded time, exits
//! with a documented code, says what happened in words and never panics;
//! the requests it counts as answered are never more than the server read.
//!
//! The cases: a flood of tiny datagrams (instead of a server, and beside
//! a real one), a server that stops acknowledging mid-run (SIGSTOP), the
//! server closing its connections mid-run (SIGTERM: `H3_NO_ERROR`), and
//! streams the server resets (`H3_EXCESSIVE_LOAD`, its answer to a field
//! section over its 64 KiB bound), among streams it answers.

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{load_lock, spawn_pace, stretched, Run, Running};
use hostile::{exited_usage, Measured, ServeProcess};
use serde_json::Value;

/// What a run may take beyond its duration and timeout: the pre-run
/// handshake and the report take milliseconds; the rest is for a loaded
/// 2-core machine (as in tests/hostile.rs).
const MARGIN: Duration = Duration::from_secs(2);
/// Past this pace is killed and the test fails with its output (stretched
/// by `PACE_TEST_SLACK`, as every upper bound here).
const KILL_AFTER: Duration = Duration::from_secs(30);

// ----- a flood of tiny datagrams --------------------------------------------------

/// A UDP socket on 127.0.0.1 that answers every datagram it receives with
/// `flood` tiny garbage datagrams (1 to 20 bytes: zeros, random bytes, and
/// random bytes behind the first bytes of QUIC's long and short headers).
/// With an upstream it is also a relay: each client address gets a socket
/// of its own towards the upstream server, and the server's datagrams go
/// back to the client from this socket, after the garbage. Stopped (and
/// its threads joined) on drop.
struct Flood {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    garbage: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

/// How long the flood's sockets block in a read, so that they see the
/// stop flag.
const POLL: Duration = Duration::from_millis(20);

impl Flood {
    fn start(upstream: Option<SocketAddr>, flood: usize) -> Flood {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        front.set_read_timeout(Some(POLL)).unwrap();
        let addr = front.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let garbage = Arc::new(AtomicU64::new(0));
        let (stop2, garbage2) = (stop.clone(), garbage.clone());
        let thread =
            thread::spawn(move || relay_and_flood(front, upstream, flood, &stop2, &garbage2));
        Flood { addr, stop, garbage, thread: Some(thread) }
    }

    /// The garbage datagrams sent so far.
    fn garbage(&self) -> u64 {
        self.garbage.load(Ordering::Relaxed)
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn relay_and_flood(
    front: UdpSocket,
    upstream: Option<SocketAddr>,
    flood: usize,
    stop: &Arc<AtomicBool>,
    garbage: &AtomicU64,
) {
    let mut towards_server: HashMap<SocketAddr, UdpSocket> = HashMap::new();
    let mut back = Vec::new();
    let mut junk = Junk(0x9e37_79b9_7f4a_7c15);
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        // A timeout (to look at the flag) or an ICMP error: read on.
        let Ok((n, client)) = front.recv_from(&mut buf) else { continue };
        if let Some(server) = upstream {
            let socket = towards_server.entry(client).or_insert_with(|| {
                let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
                socket.connect(server).unwrap();
                socket.set_read_timeout(Some(POLL)).unwrap();
                let (from, to) = (socket.try_clone().unwrap(), front.try_clone().unwrap());
                let stop = stop.clone();
                back.push(thread::spawn(move || relay_back(&from, &to, client, &stop)));
                socket
            });
            let _ = socket.send(&buf[..n]);
        }
        for k in 0..flood {
            let _ = front.send_to(&junk.datagram(k), client);
        }
        garbage.fetch_add(flood as u64, Ordering::Relaxed);
    }
    for thread in back {
        let _ = thread.join();
    }
}

/// The server's datagrams, back to the client they are for.
fn relay_back(from: &UdpSocket, to: &UdpSocket, client: SocketAddr, stop: &AtomicBool) {
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        if let Ok(n) = from.recv(&mut buf) {
            let _ = to.send_to(&buf[..n], client);
        }
    }
}

/// Xorshift garbage.
struct Junk(u64);

impl Junk {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 as u8
    }

    /// The `k`th datagram of a flood: 1 to 20 bytes.
    fn datagram(&mut self, k: usize) -> Vec<u8> {
        let len = 1 + k % 20;
        let mut datagram: Vec<u8> = (0..len).map(|_| self.byte()).collect();
        match k % 4 {
            0 => datagram.fill(0),
            // A long header of QUIC version 1, cut short.
            1 => {
                let head = [0xc3, 0, 0, 0, 1];
                let n = len.min(head.len());
                datagram[..n].copy_from_slice(&head[..n]);
            }
            // A short header (fixed bit set).
            2 => datagram[0] = 0x40 | (datagram[0] & 0x3f),
            _ => {}
        }
        datagram
    }
}

// ----- the server's counters -----------------------------------------------------

/// What `/stats` says.
#[derive(Clone, Copy, Debug)]
struct Stats {
    /// Requests read whole (not `/stats`), over every protocol.
    requests: u64,
    connections: u64,
}

/// A TLS client that trusts the built-in server's certificate (its own
/// trust anchor, valid for 127.0.0.1).
fn tls_client() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut roots = rustls::RootCertStore::empty();
            let der = include_bytes!("../src/serve/cert/localhost.der");
            roots.add(rustls::pki_types::CertificateDer::from(&der[..])).unwrap();
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// The server's `/stats`, asked over HTTPS (TCP, HTTP/1.0).
fn stats(addr: SocketAddr) -> Stats {
    let socket = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .unwrap_or_else(|e| panic!("connect to {addr} for /stats: {e}"));
    socket.set_read_timeout(Some(stretched(Duration::from_secs(5)))).unwrap();
    let name = rustls::pki_types::ServerName::from(addr.ip());
    let session = rustls::ClientConnection::new(tls_client(), name).unwrap();
    let mut stream = rustls::StreamOwned::new(session, socket);
    write!(stream, "GET /stats HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("ask for /stats");
    let mut response = Vec::new();
    match stream.read_to_end(&mut response) {
        Ok(_) => {}
        // A close without TLS's close_notify, after the whole response.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => {}
        Err(e) => panic!("read /stats from {addr}: {e}"),
    }
    let response = String::from_utf8(response).expect("UTF-8 /stats");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_else(|| panic!("{response:?}"));
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{response:?}"));
    let count = |name: &str| v[name].as_u64().unwrap_or_else(|| panic!("no {name}: {response}"));
    Stats { requests: count("requests"), connections: count("connections") }
}

/// Polls the server's counters (a readiness signal, not a sleep) until it
/// has read `n` requests; fails, with pace's output, if pace exits first
/// or 10 s pass.
fn until_server_read(addr: SocketAddr, n: u64, running: &mut Running) -> Stats {
    let deadline = Instant::now() + stretched(Duration::from_secs(10));
    loop {
        let now = stats(addr);
        if now.requests >= n {
            return now;
        }
        assert!(Instant::now() < deadline, "the server read only {now:?} of {n} requests");
        if !running.is_running() {
            panic!("pace ended before the server read {n} requests");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

// ----- running pace, its CPU time -------------------------------------------------

/// Waits for `running` to exit, with its CPU time
/// ([`hostile::measure`]); it must not have panicked.
fn finish(running: Running, limit: Duration) -> Measured {
    let measured = hostile::measure(running, limit);
    assert!(!measured.run.stderr.contains("panicked"), "{}", measured.run);
    measured
}

/// Sends `signal` to the server process.
fn signal(server: &ServeProcess, signal: i32) {
    // SAFETY: kill(2) on our own child, not yet reaped (ServeProcess reaps
    // it on drop), so the pid cannot have been reused.
    let rc = unsafe { libc::kill(server.pid() as i32, signal) };
    assert_eq!(rc, 0, "kill({}, {signal})", server.pid());
}

/// The final JSON object of a `--json` run.
fn json_of(run: &Run) -> Value {
    let last = run.stdout.lines().rev().find(|l| l.starts_with('{'));
    serde_json::from_str(last.unwrap_or_else(|| panic!("no JSON\n{run}"))).unwrap()
}

fn count(v: &Value, path: &[&str], run: &Run) -> u64 {
    let field = path.iter().fold(v, |v, name| &v[name]);
    field.as_u64().unwrap_or_else(|| panic!("no count {path:?}\n{run}"))
}

/// The `kind: cause` counts of the JSON report.
fn causes(v: &Value, run: &Run) -> Vec<(String, u64)> {
    let causes = v["error_causes"].as_object().unwrap_or_else(|| panic!("no causes\n{run}"));
    causes.iter().map(|(cause, n)| (cause.clone(), n.as_u64().unwrap())).collect()
}

/// The sum of the causes whose words contain every one of `words`.
fn caused(causes: &[(String, u64)], words: &[&str]) -> u64 {
    causes.iter().filter(|(cause, _)| words.iter().all(|w| cause.contains(w))).map(|c| c.1).sum()
}

/// A run against a server that does not answer properly sleeps while it
/// waits: about 20 ms of CPU measured for these runs; a loop woken again
/// and again (by garbage, by QUIC's timers, by a dead peer) would burn
/// most of the wall time.
fn assert_no_spin(measured: &Measured, what: &str) {
    let Measured { run, cpu, .. } = measured;
    assert!(*cpu <= run.wall / 4, "{what}: {cpu:?} of CPU in {:?}\n{run}", run.wall);
}

fn url(addr: SocketAddr, path: &str) -> String {
    format!("https://{addr}{path}")
}

// ----- the cases -----------------------------------------------------------------

/// Instead of a server, a socket that answers each of pace's datagrams
/// with 200 tiny garbage ones. The handshake before the run wades through
/// them, ends at its deadline (the timeout, 1 s) and says so: exit code 2
/// (the target cannot be used), no report, and no spinning over garbage.
#[test]
fn a_flood_of_tiny_datagrams_is_no_handshake() {
    let _load = load_lock();
    let flood = Flood::start(None, 200);
    let target = url(flood.addr, "/");
    let running = spawn_pace(&["--http3", "-k", "-t1", "-c2", "-d2s", "-T1s", &target]);
    let measured = finish(running, KILL_AFTER);
    let run = &measured.run;
    eprintln!(
        "flood: exit {:?} after {:?}, {:?} CPU, {} garbage datagrams",
        run.code(),
        run.wall,
        measured.cpu,
        flood.garbage()
    );
    run.assert_code(2);
    // pace's Initial and its retransmissions were each answered with a
    // flood, which pace had to read.
    assert!(flood.garbage() >= 200, "pace sent nothing\n{run}");
    let words = format!("no QUIC handshake with {}: timed out after 1s", flood.addr);
    assert!(run.stderr.contains(&words), "expected {words:?}\n{run}");
    assert!(!run.stdout.contains(" requests in "), "a run after a failed check\n{run}");
    let bound = stretched(Duration::from_secs(1) + MARGIN);
    assert!(run.wall <= bound, "the check's deadline is 1 s; took {:?}\n{run}", run.wall);
    assert_no_spin(&measured, "flood before the run");
}

/// The flood beside a real server: a relay in front of `pace serve
/// --http3` that sends pace 50 tiny garbage datagrams before each of the
/// server's. pace ignores them: no error of any kind, and every request
/// the server read is counted answered.
#[test]
fn a_flood_of_tiny_datagrams_beside_the_server_is_ignored() {
    let _load = load_lock();
    let server = ServeProcess::start(&["--http3"]);
    let flood = Flood::start(Some(server.addr), 50);
    let target = url(flood.addr, "/");
    let args = ["--http3", "-k", "-t1", "-c2", "-d2s", "-R100", "-T2s", "--json", &target];
    let measured = finish(spawn_pace(&args), KILL_AFTER);
    let run = &measured.run;
    let read = stats(server.addr).requests;
    eprintln!(
        "flood beside the server: exit {:?} after {:?}, {:?} CPU, {} garbage datagrams, \
         the server read {read}",
        run.code(),
        run.wall,
        measured.cpu,
        flood.garbage()
    );
    run.assert_ok();
    let v = json_of(run);
    for kind in ["connect", "read", "write", "timeout"] {
        assert_eq!(count(&v, &["errors", kind], run), 0, "{kind} errors from garbage\n{run}");
    }
    let answered = count(&v, &["requests"], run);
    assert!(answered > 0, "{run}");
    assert_eq!(answered, read, "pace counted {answered} answers, the server read {read}\n{run}");
    // Each request (and each acknowledgement) brought a flood.
    assert!(flood.garbage() >= 50 * answered, "{} garbage datagrams\n{run}", flood.garbage());
    let bound = stretched(Duration::from_secs(2 + 2) + MARGIN);
    assert!(run.wall <= bound, "took {:?}\n{run}", run.wall);
}

/// The server stops (SIGSTOP) once pace's answers flow: nothing is
/// acknowledged or answered any more. pace ends at its duration plus the
/// timeout, counts the requests left without an answer as timeouts (in
/// words, in a warning), counts no answer the server never gave, and
/// sleeps while QUIC retransmits into the void.
#[test]
fn a_server_that_stops_acknowledging_leaves_timeouts() {
    let _load = load_lock();
    let server = ServeProcess::start(&["--http3"]);
    let target = url(server.addr, "/");
    let args = ["--http3", "-k", "-t1", "-c2", "-d3s", "-R200", "-T1s", "--json", &target];
    let mut running = spawn_pace(&args);
    let before = until_server_read(server.addr, 50, &mut running);
    signal(&server, libc::SIGSTOP);
    let measured = finish(running, KILL_AFTER);
    signal(&server, libc::SIGCONT);
    // Read after pace is gone (and the server has taken in what waited
    // for it): every answer pace could have had is for one of these.
    let read = stats(server.addr).requests;
    let run = &measured.run;
    let v = json_of(run);
    let causes = causes(&v, run);
    let answered = count(&v, &["requests"], run);
    eprintln!(
        "stopped server: exit {:?} after {:?}, {:?} CPU, {answered} answered; the server read \
         {} before the stop, {read} in all; causes {causes:?}, errors {}",
        run.code(),
        run.wall,
        measured.cpu,
        before.requests,
        v["errors"]
    );
    run.assert_ok();
    let timeouts = count(&v, &["errors", "timeout"], run);
    assert!(answered > 0, "the answers before the stop\n{run}");
    assert!(answered <= read, "{answered} answers counted, the server read {read}\n{run}");
    assert!(timeouts > 0, "no request counted as a timeout\n{run}");
    assert_eq!(caused(&causes, &["timeout: "]), timeouts, "{run}");
    assert!(run.stderr.contains("got no response within"), "no warning in words\n{run}");
    // The plan's 600 requests: answered, timed out or never sent (a
    // stream held by an unanswered request), none lost.
    let errors: u64 = ["read", "write", "timeout", "unsent"]
        .iter()
        .map(|kind| count(&v, &["errors", kind], run))
        .sum();
    assert!(
        (590..=600).contains(&(answered + errors)),
        "{answered} answered and {errors} errors of a plan of 600\n{run}"
    );
    let bound = stretched(Duration::from_secs(3 + 1) + MARGIN);
    assert!(run.wall <= bound, "took {:?}\n{run}", run.wall);
    assert_no_spin(&measured, "stopped server");
}

/// How a terminated server's run went.
struct Terminated {
    measured: Measured,
    v: Value,
    causes: Vec<(String, u64)>,
    answered: u64,
    /// The server's count of requests read, asked for just before the
    /// SIGTERM.
    read: u64,
    /// The port pace sent to.
    port: u16,
}

/// pace runs against `pace serve --http3` (through a relay that only
/// relays, when `relayed`), and the server is terminated mid-run
/// (SIGTERM): it closes its QUIC connections with `H3_NO_ERROR` and exits.
/// Checks what holds either way: pace goes on to the end of its duration
/// and exits 0 with the report; it counts no answer the server did not
/// give, and every request the server had read comes out answered or as
/// an error.
///
/// Every response is held 400 ms (`/delay/400`), so that what pace may
/// count as answered is bounded by construction: the server's count read
/// just before the SIGTERM holds every request answered before its exit,
/// when that exit comes less than 400 ms (less a margin for the server's
/// own bookkeeping) after the count was asked for.
fn terminated_mid_run(relayed: bool) -> Terminated {
    const HELD: Duration = Duration::from_millis(400);
    let server = ServeProcess::start(&["--http3"]);
    let relay = relayed.then(|| Flood::start(Some(server.addr), 0));
    let addr = relay.as_ref().map_or(server.addr, |relay| relay.addr);
    let target = url(addr, &format!("/delay/{}", HELD.as_millis()));
    // 80 requests in flight at 200/s: room for them in 2 x 64 streams.
    let args = [
        "--http3",
        "-k",
        "-t1",
        "-c2",
        "--streams",
        "64",
        "-d3s",
        "-R200",
        "-T1s",
        "--json",
        &target,
    ];
    let mut running = spawn_pace(&args);
    // A second of the plan read: answers flow, 80 are held.
    until_server_read(server.addr, 200, &mut running);
    let asked = Instant::now();
    let read = stats(server.addr).requests;
    signal(&server, libc::SIGTERM);
    let deadline = Instant::now() + stretched(Duration::from_secs(10));
    while exited_usage(server.pid() as i32).is_none() {
        assert!(Instant::now() < deadline, "pace serve did not exit on SIGTERM");
        thread::sleep(Duration::from_millis(1));
    }
    let exit_after = asked.elapsed();
    let measured = finish(running, KILL_AFTER);
    let run = &measured.run;
    let v = json_of(run);
    let causes = causes(&v, run);
    let answered = count(&v, &["requests"], run);
    eprintln!(
        "terminated server{}: exit {:?} after {:?}, {:?} CPU, {answered} answered; the server \
         read {read} and exited {exit_after:?} after; causes {causes:?}, errors {}",
        if relayed { " (relayed)" } else { "" },
        run.code(),
        run.wall,
        measured.cpu,
        v["errors"]
    );
    run.assert_ok();
    assert!(answered > 0, "the answers before the close\n{run}");
    if exit_after < HELD / 2 {
        assert!(
            answered <= read,
            "{answered} answers counted; the server read {read} {exit_after:?} before it exited \
             and held every answer {HELD:?}\n{run}"
        );
    } else {
        eprintln!(
            "\n!!!!!!!!!! the server took {exit_after:?} to exit: too slow a machine to bound \
             the answers by its count; that check did not run !!!!!!!!!!\n"
        );
    }
    // Every request the server had read came out answered or as an error,
    // none silently dropped.
    let errors: u64 = ["connect", "read", "write", "timeout"]
        .iter()
        .map(|kind| count(&v, &["errors", kind], run))
        .sum();
    assert!(
        answered + errors >= read,
        "{answered} answered and {errors} errors; the server had read {read}\n{run}"
    );
    assert!(run.stderr.contains("Warning: the server failed: "), "no warning in words\n{run}");
    let bound = stretched(Duration::from_secs(3 + 1) + MARGIN);
    assert!(run.wall <= bound, "took {:?}\n{run}", run.wall);
    Terminated { measured, v, causes, answered, read, port: addr.port() }
}

/// The words of the server's close.
const CLOSED: &[&str] = &["the server closed the connection: H3_NO_ERROR (the server is stopping)"];

/// Through a relay, which stays when the server is gone (no ICMP port
/// unreachable reaches pace): the requests in flight are cut short by the
/// server's close, in the close's words and code; the connections pace
/// then tries through the relay get no answer.
#[test]
fn a_connection_closed_by_the_server_mid_run_is_said_in_words() {
    let _load = load_lock();
    let t = terminated_mid_run(true);
    let run = &t.measured.run;
    let closed = caused(&t.causes, CLOSED);
    assert!(closed > 0, "no request counted as cut short by the close\n{run}");
    assert_eq!(caused(&t.causes, &["read: "]), closed, "other read errors\n{run}");
    assert_eq!(count(&t.v, &["errors", "read"], run), closed, "{run}");
    for kind in ["write", "timeout"] {
        assert_eq!(count(&t.v, &["errors", kind], run), 0, "{kind}\n{run}");
    }
    // Each request the server had read and pace had no answer to was in
    // flight at the close: cut short by it, in its words.
    assert!(t.answered + closed >= t.read, "{run}");
    assert_no_spin(&t.measured, "relayed server gone");
}

/// Directly: the server's port closes with it, and pace's next datagram
/// brings an ICMP port unreachable, which the kernel reports before the
/// datagrams queued ahead of it (the close among them). pace reads those
/// first: the requests in flight are errors in the words of the close; the
/// connections pace then tries fail their set-up, said to find nothing
/// listening.
#[test]
fn a_server_terminated_mid_run_is_said_in_words() {
    let _load = load_lock();
    let t = terminated_mid_run(false);
    let run = &t.measured.run;
    let port = t.port;
    let nothing = format!("nothing listening on UDP port {port} (ICMP port unreachable)");
    let closed = caused(&t.causes, CLOSED);
    let refused = caused(&t.causes, &[&nothing]);
    // The requests in flight end with the server's close, read before the
    // ICMP error queued behind it; the connections pace opens again after
    // the server went fail their set-up on the closed port.
    for (cause, n) in &t.causes {
        let said_closed = cause.starts_with("read: ") && CLOSED.iter().all(|w| cause.contains(w));
        let said_refused = cause.starts_with("connect: ") && cause.contains(&nothing);
        assert!(said_closed || said_refused, "unexpected cause {cause:?} ({n})\n{run}");
    }
    assert!(closed > 0, "the server's close was not read\n{run}");
    assert!(refused > 0, "nothing said of the port that closed\n{run}");
}

/// Every other request carries a 70 KB header field: the server resets
/// its stream with `H3_EXCESSIVE_LOAD` (its bound on a field section is 64
/// KiB) and answers the others on the same connections. pace counts each
/// reset as an error in words, each answer as an answer, and keeps its
/// connections.
#[test]
fn streams_reset_by_the_server_are_errors_and_the_connection_goes_on() {
    let _load = load_lock();
    let server = ServeProcess::start(&["--http3"]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("every-other-too-large.lua");
    std::fs::write(
        &script,
        r#"local n = 0
local big = string.rep("b", 70000)
request = function()
  n = n + 1
  if n % 2 == 0 then
    return wrk.format(nil, "/", {["x-big"] = big})
  end
  return wrk.format(nil, "/")
end
"#,
    )
    .unwrap();
    let target = url(server.addr, "/");
    let args = [
        "--http3",
        "-k",
        "-t1",
        "-c2",
        "--streams",
        "4",
        "-n",
        "200",
        "-T2s",
        "-s",
        script.to_str().unwrap(),
        "--json",
        &target,
    ];
    let measured = finish(spawn_pace(&args), KILL_AFTER);
    let after = stats(server.addr);
    let run = &measured.run;
    let v = json_of(run);
    let causes = causes(&v, run);
    eprintln!(
        "resets: exit {:?} after {:?}, {:?} CPU; server {after:?}; causes {causes:?}",
        run.code(),
        run.wall,
        measured.cpu,
    );
    run.assert_ok();
    let answered = count(&v, &["requests"], run);
    assert_eq!(answered, 100, "{run}");
    // The reset streams never became requests for the server.
    assert_eq!(after.requests, 100, "{run}");
    assert_eq!(count(&v, &["errors", "read"], run), 100, "{run}");
    let reset = caused(&causes, &["read: ", "the server reset the stream", "H3_EXCESSIVE_LOAD"]);
    assert_eq!(reset, 100, "{causes:?}\n{run}");
    for kind in ["connect", "write", "timeout", "unsent"] {
        assert_eq!(count(&v, &["errors", kind], run), 0, "{kind}\n{run}");
    }
    // The check's handshake, pace's 2 connections and this /stats: the
    // resets cost no connection.
    assert_eq!(after.connections, 1 + 2 + 1, "{run}");
}

/// A server of other QUIC versions answers pace's Initial with Version
/// Negotiation (RFC 9000, section 17.2.1) listing only versions pace does
/// not speak (draft-29, QUIC v2): pace says so before the run, exit 2.
#[test]
fn a_server_of_other_quic_versions_is_said_in_words() {
    let _load = load_lock();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(POLL)).unwrap();
    let addr = socket.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let (stop2, answered2) = (stop.clone(), answered.clone());
    let server = thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        while !stop2.load(Ordering::Relaxed) {
            let Ok((n, client)) = socket.recv_from(&mut buf) else { continue };
            if let Some(answer) = version_negotiation(&buf[..n]) {
                let _ = socket.send_to(&answer, client);
                answered2.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let target = url(addr, "/");
    let measured =
        finish(spawn_pace(&["--http3", "-k", "-t1", "-c1", "-d1s", "-T2s", &target]), KILL_AFTER);
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
    let run = &measured.run;
    run.assert_code(2);
    assert!(answered.load(Ordering::Relaxed) >= 1, "pace sent no Initial\n{run}");
    assert!(
        run.stderr.contains("the server speaks no QUIC version pace does (version negotiation)"),
        "{run}"
    );
    // Said at once, not at the deadline.
    assert!(run.wall < stretched(Duration::from_secs(2)), "{run}");
}

/// The Version Negotiation answer to a long-header packet: its connection
/// ids swapped, and versions other than QUIC v1. None for anything else.
fn version_negotiation(packet: &[u8]) -> Option<Vec<u8>> {
    if packet.first()? & 0x80 == 0 {
        return None;
    }
    let dcid_len = usize::from(*packet.get(5)?);
    let dcid = packet.get(6..6 + dcid_len)?;
    let scid_len = usize::from(*packet.get(6 + dcid_len)?);
    let scid = packet.get(7 + dcid_len..7 + dcid_len + scid_len)?;
    let mut answer = vec![0xc0, 0, 0, 0, 0];
    answer.push(scid.len() as u8);
    answer.extend_from_slice(scid);
    answer.push(dcid.len() as u8);
    answer.extend_from_slice(dcid);
    for version in [0xff00_001d_u32, 0x6b33_43cf] {
        answer.extend_from_slice(&version.to_be_bytes());
    }
    Some(answer)
}
