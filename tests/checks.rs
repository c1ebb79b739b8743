//! The checks pace makes before a run, against hostile peers (issue 33,
//! item 9): a proxy that trickles its answer to CONNECT, a TLS server
//! that trickles its handshake, an h2c server that trickles its answer to
//! the preface, a listener whose backlog is full (its connects hang). Each
//! check has one deadline for its whole exchange (`-T`, at most 5 s), so a
//! byte now and then does not stretch it; and a signal during any of them
//! ends pace at once with the signal's exit code (130, 143).
//!
//! The peers answer a byte every so often for ever: a check that honours
//! only a timeout per read never ends on them.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{load_lock, spawn_pace, stretched, Run, Running};

/// What a check may take beyond its deadline on a loaded machine: process
/// start, the probe connection, the message.
const SLACK: Duration = Duration::from_secs(3);
/// How long pace may take to end after a signal during a check: it waits
/// at most 0.1 s at a time (plus a loaded machine).
const AFTER_SIGNAL: Duration = Duration::from_secs(2);
/// Past this, pace is killed and the test fails (a check without its
/// deadline takes hours on these peers).
const LIMIT: Duration = Duration::from_secs(40);

/// A peer on 127.0.0.1 that, on every connection, sends `answer` a byte
/// every `every`, over and over, until the connection is closed; with
/// `request`, only after it read a request head (up to an empty line).
struct Trickler {
    addr: SocketAddr,
    /// Bytes sent, all connections together.
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Trickler {
    fn start(answer: &'static [u8], every: Duration, request: bool) -> Trickler {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (sent, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let (counted, stopped) = (sent.clone(), stop.clone());
        thread::spawn(move || {
            for socket in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(socket) = socket else { continue };
                let (counted, stopped) = (counted.clone(), stopped.clone());
                thread::spawn(move || trickle(socket, answer, every, request, &counted, &stopped));
            }
        });
        Trickler { addr, sent, stop }
    }

    /// Waits until the check's exchange is under way: `bytes` sent (the
    /// probe connection, closed at once, takes one or two).
    fn wait_for(&self, bytes: u64) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.sent.load(Ordering::SeqCst) < bytes {
            assert!(Instant::now() < deadline, "pace never got to the check");
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Trickler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn trickle(
    mut socket: TcpStream,
    answer: &[u8],
    every: Duration,
    request: bool,
    sent: &AtomicU64,
    stop: &AtomicBool,
) {
    if request {
        let mut head = Vec::new();
        let mut byte = [0u8];
        while !head.ends_with(b"\r\n\r\n") {
            match socket.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
    }
    for byte in answer.iter().cycle() {
        if stop.load(Ordering::SeqCst) || socket.write_all(&[*byte]).is_err() {
            return;
        }
        sent.fetch_add(1, Ordering::SeqCst);
        thread::sleep(every);
    }
}

/// A proxy answering CONNECT with a head that never ends.
fn trickling_proxy(every: Duration) -> Trickler {
    Trickler::start(b"HTTP/1.1 200 Connection established\r\nX-Slow: aaaaaaaaaaaa", every, true)
}

/// A TLS server whose first record announces 16 KiB and then comes a byte
/// at a time.
fn trickling_tls(every: Duration) -> Trickler {
    static RECORD: [u8; 5 + 16384] = {
        let mut record = [0u8; 5 + 16384];
        // Handshake, TLS 1.2, 16384 bytes.
        (record[0], record[1], record[2], record[3], record[4]) = (0x16, 3, 3, 0x40, 0);
        record
    };
    Trickler::start(&RECORD, every, false)
}

/// An h2c server answering the preface in HTTP/1.1, a byte at a time.
fn trickling_h2c(every: Duration) -> Trickler {
    Trickler::start(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", every, false)
}

fn proxy_url(proxy: &Trickler) -> String {
    format!("http://{}", proxy.addr)
}

/// A port nothing listens on (the proxy never connects to it).
fn unused_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The run failed its check within the deadline: exit 2, the reason said,
/// no report.
fn assert_refused_within(run: &Run, deadline: Duration, says: &str) {
    run.assert_code(2);
    assert!(run.stderr.contains(says), "expected {says:?}\n{run}");
    assert!(
        run.wall < stretched(deadline + SLACK),
        "took {:?} for a {deadline:?} check\n{run}",
        run.wall
    );
    assert!(!run.stdout.contains("requests in"), "{run}");
}

/// The signal ended pace promptly, with its exit code, before any run.
fn assert_stopped(running: Running, signal: i32, name: &str) {
    running.signal(signal);
    let signalled = Instant::now();
    let run = running.wait(LIMIT);
    let after = signalled.elapsed();
    run.assert_code(128 + signal);
    assert!(after < AFTER_SIGNAL, "{after:?} after {name}\n{run}");
    assert!(run.stderr.contains(&format!("pace: stopped by {name} before the run")), "{run}");
    assert!(!run.stdout.contains("requests in"), "{run}");
    assert!(!run.stderr.contains("panicked"), "{run}");
}

#[test]
fn a_trickling_proxy_gets_the_check_deadline_in_all() {
    let _load = load_lock();
    // One byte every 0.5 s, as in the issue: with a timeout per read the
    // 16 KiB head of the answer would take hours.
    let proxy = trickling_proxy(Duration::from_millis(500));
    let port = unused_port();
    let target = format!("https://127.0.0.1:{port}/");
    let run = spawn_pace(&["-d2s", "-T2s", "--proxy", &proxy_url(&proxy), &target]).wait(LIMIT);
    let says = format!("the proxy did not answer CONNECT to 127.0.0.1:{port} within 2.00s");
    assert_refused_within(&run, Duration::from_secs(2), &says);
}

#[test]
fn a_signal_during_the_connect_check_ends_pace() {
    let _load = load_lock();
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let proxy = trickling_proxy(Duration::from_millis(200));
        let target = format!("https://127.0.0.1:{}/", unused_port());
        let running = spawn_pace(&["-d2s", "-T30s", "--proxy", &proxy_url(&proxy), &target]);
        proxy.wait_for(4);
        assert_stopped(running, signal, name);
    }
}

#[test]
fn a_trickled_tls_handshake_gets_the_check_deadline_in_all() {
    let _load = load_lock();
    let server = trickling_tls(Duration::from_millis(500));
    let target = format!("https://{}/", server.addr);
    let run = spawn_pace(&["-d2s", "-T2s", &target]).wait(LIMIT);
    let says =
        format!("TLS handshake with {} failed: no answer within 2s (timed out)", server.addr);
    assert_refused_within(&run, Duration::from_secs(2), &says);
}

#[test]
fn a_signal_during_the_tls_check_ends_pace() {
    let _load = load_lock();
    let server = trickling_tls(Duration::from_millis(200));
    let target = format!("https://{}/", server.addr);
    let running = spawn_pace(&["-d2s", "-T30s", &target]);
    server.wait_for(4);
    assert_stopped(running, libc::SIGTERM, "SIGTERM");
}

#[test]
fn a_trickled_h2c_answer_gets_the_check_deadline_in_all() {
    let _load = load_lock();
    // 9 bytes at 1 a second: 9 s with a timeout per read.
    let server = trickling_h2c(Duration::from_secs(1));
    let target = format!("http://{}/", server.addr);
    let run = spawn_pace(&["--http2", "-d2s", "-T2s", &target]).wait(LIMIT);
    let says = "no answer to the HTTP/2 connection preface within 2.00s";
    assert_refused_within(&run, Duration::from_secs(2), says);
}

#[test]
fn a_signal_during_the_h2c_check_ends_pace() {
    let _load = load_lock();
    let server = trickling_h2c(Duration::from_millis(500));
    let target = format!("http://{}/", server.addr);
    let running = spawn_pace(&["--http2", "-d2s", "-T30s", &target]);
    server.wait_for(3);
    assert_stopped(running, libc::SIGINT, "SIGINT");
}

/// A listener whose accept queue is full: the kernel drops further SYNs,
/// so a connect to it hangs (pace's probe waits up to 5 s).
fn full_backlog() -> (SocketAddr, Vec<TcpStream>) {
    use socket2::{Domain, Socket, Type};
    let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    listener.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
    listener.listen(0).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    // Leaked: the queue must stay full until the test process ends.
    std::mem::forget(listener);
    let mut queued = Vec::new();
    for _ in 0..8 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(socket) => queued.push(socket),
            Err(_) => return (addr, queued),
        }
    }
    panic!("the backlog of {addr} never filled");
}

#[test]
fn a_signal_during_the_probe_connections_ends_pace() {
    let _load = load_lock();
    let (addr, _queued) = full_backlog();
    let target = format!("http://{addr}/");
    let running = spawn_pace(&["-d2s", "-T30s", &target]);
    // The probe is under way (it waits up to 5 s for an answer to its SYN).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !connecting_to(running.pid(), addr) {
        assert!(Instant::now() < deadline, "pace never tried to connect to {addr}");
        thread::sleep(Duration::from_millis(10));
    }
    assert_stopped(running, libc::SIGINT, "SIGINT");
}

/// A TCP socket of process `pid` is sending SYNs to `addr` (an IPv4
/// loopback address): /proc/net/tcp has it in state 02 (SYN_SENT), with
/// the inode of one of the process's descriptors.
fn connecting_to(pid: i32, addr: SocketAddr) -> bool {
    let sockets: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_str()?;
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let remote = format!("0100007F:{:04X}", addr.port());
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(2) == Some(&remote.as_str())
            && fields.get(3) == Some(&"02")
            && fields.get(9).is_some_and(|inode| sockets.iter().any(|s| s == inode))
    })
}
