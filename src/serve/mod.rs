//! `pace serve`: the built-in target server, used by `pace serve`, by
//! `pace demo` (in-process), by the end-to-end tests and as a benchmark
//! target. HTTP/1.1 (optionally over TLS) with keep-alive, pipelining and a
//! controllable response time: a fixed added latency and a stall window
//! during which the server answers nothing, like `^Z` on the server in
//! wrk2's README.
//!
//! # Endpoints
//!
//! The query string is ignored except where noted. Every response carries
//! `Content-Length` unless stated otherwise; HEAD gets the same headers and
//! no body.
//!
//! | path | response |
//! |---|---|
//! | anything else | 200, `Content-Type: text/plain`, the default body: `body_size` bytes of `Hello, World!\n` repeated (13 bytes: `Hello, World!`) |
//! | `/status/<code>` | that status (200..=599) with the default body; 204 and 304 have no body and no `Content-Length` |
//! | `/bytes/<n>` | a body of `n` bytes: the 64-byte line `a..zA..Z0..9+\n` repeated, streamed from a static buffer (any size) |
//! | `/chunked[?n=<count>]` | `Transfer-Encoding: chunked`, `count` chunks (default 3, at most 10000) of that 64-byte line, then the trailer `X-Trailer: end` |
//! | `/close` | the default response with `Connection: close`, then the server closes |
//! | `/eof` | the default body with neither `Content-Length` nor chunking: the body ends when the server closes |
//! | `/continue` | `HTTP/1.1 100 Continue`, then the default response |
//! | `/delay/<ms>` | the default response, `ms` milliseconds later than usual (at most one day) |
//! | `/hang` | never answered; the connection stays open until the client closes it (responses to later pipelined requests wait behind it) |
//! | `/echo` | 200, the request as understood: `METHOD TARGET\n`, one `Name: value\n` per header as received, `\n`, then the body (de-chunked, at most 1 MiB, else 413 and close) |
//! | `/auth`, `/authenticate` | 200 `auth\n` with the header `X-Token: tok123` |
//! | `/resource` | 200 `ok\n` if the request has `X-Token: tok123`, else 401 |
//! | `/stats` | 200 JSON `{"connections":N,"requests":N,"max_requests_per_read":N}`; `/stats` requests are not counted |
//!
//! These mirror the nginx benchmark configuration (`/authenticate`,
//! `/resource`) and cover wrk's example scripts: `auth.lua` logs in and
//! reuses the token, `post.lua` and `pipeline.lua` get 200s on any path.
//! A bad argument (`/status/abc`, `/bytes/-1`) gets 400 and the connection
//! stays open. A malformed request gets 400 and the connection is closed;
//! so does a request that sends both `Content-Length` and
//! `Transfer-Encoding`, or a `Transfer-Encoding` other than plain `chunked`.
//! Requests are framed by the code that frames responses in the client
//! ([`crate::http::framing`], [`crate::http::chunked`]), so both ends agree:
//! `Content-Length: 42, 42` is 42, chunk-size lines end with CRLF, trailers
//! are header fields. `Expect: 100-continue` on a request with a body is
//! answered with `100 Continue`. HTTP/1.0 requests close unless they ask
//! for keep-alive.
//!
//! # Timing
//!
//! Every response has a due time: when its request was read, plus
//! `latency`, plus the `/delay` argument. A due time inside the stall
//! window moves to the end of the window, so nothing is written during the
//! stall while requests keep being read and queued. Responses leave each
//! connection in request order; one that is not due yet waits in its
//! connection's queue and the thread sleeps until the earliest due time
//! with the poller's nanosecond timeout.
//!
//! # HTTP/3
//!
//! With `--http3` (which implies `--tls`) each thread has an HTTP/3
//! thread beside it, with a UDP socket on the TCP port's number (several
//! share it through `SO_REUSEPORT`, as the listeners do) and a QUIC server
//! without I/O ([`crate::http3::server`]) in its own epoll loop, whose
//! timeout is the earlier of QUIC's next timer and the next response due.
//! The endpoints and the timing above are the same, and its connections
//! and requests count in the same counters; see [`http3`] for what differs
//! and what a client can make it hold.
//!
//! # Threads
//!
//! Each thread runs its own edge-triggered epoll loop over its own
//! listener. With several threads the listeners share the port through
//! `SO_REUSEPORT`: the kernel spreads new connections over them by a hash
//! of the address pair, with no shared accept queue and no thundering herd
//! (one listener in every epoll with `EPOLLEXCLUSIVE` would do the same
//! with a lock on the accept queue). On a Unix socket (`--unix-socket`),
//! which has no `SO_REUSEPORT`, every thread waits on the one listener
//! ([`listen`]). One thread never touches another thread's connections; the only shared state is read-only configuration
//! and one cache line of counters per thread.

mod conn;
mod endpoint;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzzing;
pub mod grpc;
mod http2;
mod http3;
mod listen;
mod request;
mod response;
mod tls;
mod worker;

#[cfg(test)]
mod http3_tests;
#[cfg(test)]
mod tests;

use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rustix::event::{eventfd, EventfdFlags};

use crate::endpoint::Endpoint;
use crate::sys::now_ns;

/// What `pace serve` serves and how slowly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// Where to listen (port 0: any free port, see [`ServerHandle::addr`]).
    pub bind: SocketAddr,
    /// `--unix-socket`: listen on this Unix socket instead of `bind`.
    pub unix_socket: Option<PathBuf>,
    /// Event-loop threads, each with its own listener on the same port.
    pub threads: usize,
    /// Size of the default response body.
    pub body_size: usize,
    /// Added to the response time of every request.
    pub latency: Duration,
    /// A window during which no response is written.
    pub stall: Option<Stall>,
    /// `--capacity N`: at most N requests a second are served, one after
    /// the other in the order read (over all threads and connections),
    /// each taking 1/N s: a service with one worker, whose latency climbs
    /// past a knee when the rate offered nears N and grows without bound
    /// above it (what `pace search` finds).
    pub capacity: Option<u64>,
    /// Serve HTTPS with a fixed self-signed certificate, valid for
    /// `localhost`, `127.0.0.1` and `::1` (its key is public: local use only).
    pub tls: bool,
    /// How long a request head may take once it has begun (and a TLS
    /// handshake once the connection is accepted, and HTTP/2's preface
    /// and SETTINGS): past it, the connection is answered 408 and closed
    /// (or just closed, where no HTTP/1.1 request can be answered). None:
    /// no limit. A connection idle between requests is not timed.
    pub head_timeout: Option<Duration>,
    /// `--grpc`: gRPC calls go to the built-in service ([`grpc`]), with
    /// reflection; without it every method echoes.
    pub grpc: bool,
    /// `--http3`: also serve HTTP/3 (QUIC) on the UDP port of the same
    /// number as the TCP one, with the TLS certificate (implies `tls`).
    pub http3: bool,
}

/// Freeze all responses during `[at, at + length)` after the server started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    pub at: Duration,
    pub length: Duration,
}

/// The size of `Hello, World!`, the classic benchmark body.
const DEFAULT_BODY_SIZE: usize = 13;

/// What the default body repeats.
const DEFAULT_BODY_TEXT: &[u8] = b"Hello, World!\n";

/// The default `--head-timeout`: far more than any client takes to send a
/// head (or a person typing one), and a bound on what a slow-loris holds.
pub const DEFAULT_HEAD_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            unix_socket: None,
            threads: 1,
            body_size: DEFAULT_BODY_SIZE,
            latency: Duration::ZERO,
            stall: None,
            capacity: None,
            tls: false,
            head_timeout: Some(DEFAULT_HEAD_TIMEOUT),
            grpc: false,
            http3: false,
        }
    }
}

/// Counters over all server threads since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections accepted.
    pub connections: u64,
    /// Complete requests read (`/stats` requests excluded).
    pub requests: u64,
    /// The most complete requests parsed from a single read: 3 after three
    /// pipelined requests arrived together.
    pub max_requests_per_read: u64,
}

/// A running server. Stopping it (or dropping the handle) stops and joins
/// every thread and closes every connection.
pub struct ServerHandle {
    listening: Endpoint,
    shared: Arc<Shared>,
    /// Registered in every thread's poller: one write wakes them all.
    waker: OwnedFd,
    threads: Vec<JoinHandle<()>>,
    certificate_der: Option<&'static [u8]>,
}

impl ServerHandle {
    /// The address the server listens on, with the real port. Only for a
    /// server started on TCP: one on a Unix socket has none (whoever
    /// started it knows; see [`ServerHandle::endpoint`]).
    pub fn addr(&self) -> SocketAddr {
        match &self.listening {
            Endpoint::Tcp(addr) => *addr,
            Endpoint::Unix(path) => panic!("the server listens on unix:{}", path.display()),
        }
    }

    /// Where the server listens: its TCP address or its Unix socket.
    pub fn endpoint(&self) -> &Endpoint {
        &self.listening
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> ServerStats {
        self.shared.stats()
    }

    /// The self-signed certificate (DER) when serving TLS, for clients that
    /// want to verify the server instead of accepting anything.
    pub fn certificate_der(&self) -> Option<&[u8]> {
        self.certificate_der
    }

    /// Stops all threads, waits for them and closes every connection.
    pub fn stop(self) {
        // The work is in Drop, so that a handle dropped on an early return
        // (or a failing test) stops its threads too.
        drop(self);
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        let _ = rustix::io::write(&self.waker, &1u64.to_ne_bytes());
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        if let Endpoint::Unix(path) = &self.listening {
            listen::remove_socket(path);
        }
    }
}

/// Binds, spawns the server threads and returns at once.
pub fn start(opts: ServeOptions) -> io::Result<ServerHandle> {
    if opts.threads == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "serve: threads must be >= 1"));
    }
    if opts.http3 && opts.unix_socket.is_some() {
        let why = "serve: HTTP/3 runs over UDP, not over a Unix socket";
        return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    }
    let identity = if opts.tls || opts.http3 { Some(tls::local_identity()?) } else { None };
    let (listeners, listening) = match &opts.unix_socket {
        Some(path) => {
            (listen::unix_listeners(path, opts.threads)?, Endpoint::Unix(Path::new(path).into()))
        }
        None => {
            let listeners = listen::tcp_listeners(opts.bind, opts.threads)?;
            let addr = listeners[0].local_addr()?.as_socket().ok_or(io::ErrorKind::InvalidData)?;
            (listeners, Endpoint::Tcp(addr))
        }
    };
    let udp = match (&listening, opts.http3) {
        (Endpoint::Tcp(addr), true) => listen::udp_sockets(*addr, opts.threads)?,
        _ => Vec::new(),
    };
    let tcp = matches!(listening, Endpoint::Tcp(_));
    let grpc = opts.grpc.then(grpc::Service::new).transpose().map_err(io::Error::other)?;
    let tls = identity.as_ref().map(|i| i.config.clone());
    let shared = Arc::new(Shared::new(&opts, tls, grpc));
    let waker = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
    let mut handle = ServerHandle {
        listening,
        shared: shared.clone(),
        waker,
        threads: Vec::with_capacity(opts.threads),
        certificate_der: identity.map(|i| i.certificate_der),
    };
    for (index, listener) in listeners.into_iter().enumerate() {
        let worker = worker::Worker::new(index, listener, tcp, &handle.waker, shared.clone())?;
        // On error the handle is dropped, which stops the threads already
        // started.
        let thread = thread::Builder::new()
            .name(format!("pace-serve-{index}"))
            .spawn(move || worker.run_reporting_errors())?;
        handle.threads.push(thread);
    }
    for (index, socket) in udp.into_iter().enumerate() {
        // After the TCP threads' counters.
        let counters = opts.threads + index;
        let worker = http3::Http3Worker::new(counters, socket, &handle.waker, shared.clone())?;
        let thread = thread::Builder::new()
            .name(format!("pace-serve-h3-{index}"))
            .spawn(move || worker.run_reporting_errors())?;
        handle.threads.push(thread);
    }
    Ok(handle)
}

/// `pace serve`: starts the server, prints where it listens to stderr and
/// serves until SIGINT or SIGTERM. A second signal during the shutdown
/// exits at once.
pub fn run(opts: ServeOptions) -> io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let interrupted = Arc::new(AtomicBool::new(false));
    let mut registrations = Vec::new();
    for signal in [SIGINT, SIGTERM] {
        // Order matters: the exit action is armed by the flag the second
        // action sets, so it only fires on the second signal.
        registrations.push(signal_hook::flag::register_conditional_shutdown(
            signal,
            1,
            interrupted.clone(),
        )?);
        registrations.push(signal_hook::flag::register(signal, interrupted.clone())?);
    }
    let summary = describe(&opts);
    let scheme = if opts.tls || opts.http3 { "https" } else { "http" };
    let http3 = opts.http3;
    let server = start(opts)?;
    match server.endpoint() {
        Endpoint::Tcp(addr) if http3 => eprintln!(
            "pace serve: listening on {scheme}://{addr}/ ({summary}), HTTP/3 on UDP {}",
            addr.port()
        ),
        Endpoint::Tcp(addr) => eprintln!("pace serve: listening on {scheme}://{addr}/ ({summary})"),
        unix => eprintln!("pace serve: listening on {unix}, {scheme} ({summary})"),
    }
    while !interrupted.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(50));
    }
    server.stop();
    for id in registrations {
        signal_hook::low_level::unregister(id);
    }
    Ok(())
}

/// The options in a few words, for the start-up line.
fn describe(opts: &ServeOptions) -> String {
    let threads = match opts.threads {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    };
    let latency = match opts.latency {
        Duration::ZERO => "no added latency".to_string(),
        latency => format!("latency {latency:?}"),
    };
    let stall = match opts.stall {
        None => "no stall".to_string(),
        Some(Stall { at, length }) => format!("stall for {length:?} at {at:?}"),
    };
    let head_timeout = match opts.head_timeout {
        None => "no head timeout".to_string(),
        Some(timeout) => format!("head timeout {timeout:?}"),
    };
    let grpc = match opts.grpc {
        true => ", gRPC service pace.Echo with reflection",
        false => "",
    };
    let capacity = match opts.capacity {
        Some(capacity) => format!(", capacity {capacity} requests/s"),
        None => String::new(),
    };
    format!(
        "{threads}, {}-byte body, {latency}, {stall}, {head_timeout}{capacity}{grpc}",
        opts.body_size
    )
}

/// What all server threads share: read-only settings and the counters.
struct Shared {
    latency_ns: u64,
    /// `--capacity`: each request's service time, ns (None: no limit)...
    service_ns: Option<u64>,
    /// ...and when the one worker is free next, in [`now_ns`] time.
    worker_free_ns: AtomicU64,
    /// The stall window in [`now_ns`] time: `[start, end)`.
    stall_ns: Option<(u64, u64)>,
    default_body: Box<[u8]>,
    head_timeout_ns: Option<u64>,
    tls: Option<Arc<rustls::ServerConfig>>,
    /// `--grpc`: the built-in service.
    grpc: Option<grpc::Service>,
    /// One slot per thread, written only by that thread.
    counters: Box<[ThreadCounters]>,
    stopping: AtomicBool,
}

impl Shared {
    fn new(
        opts: &ServeOptions,
        tls: Option<Arc<rustls::ServerConfig>>,
        grpc: Option<grpc::Service>,
    ) -> Shared {
        let started = now_ns();
        let stall_ns = opts.stall.map(|Stall { at, length }| {
            let start = started.saturating_add(duration_ns(at));
            (start, start.saturating_add(duration_ns(length)))
        });
        Shared {
            latency_ns: duration_ns(opts.latency),
            service_ns: opts.capacity.map(|capacity| 1_000_000_000 / capacity.max(1)),
            worker_free_ns: AtomicU64::new(0),
            stall_ns,
            default_body: DEFAULT_BODY_TEXT.iter().copied().cycle().take(opts.body_size).collect(),
            head_timeout_ns: opts.head_timeout.map(duration_ns),
            tls,
            grpc,
            // HTTP/3's threads have their own.
            counters: (0..opts.threads * (1 + usize::from(opts.http3)))
                .map(|_| ThreadCounters::default())
                .collect(),
            stopping: AtomicBool::new(false),
        }
    }

    /// When a response to a request read at `now` may be written: once
    /// served (see [`ServeOptions::capacity`]), after the added latency and
    /// `extra_ns`, and never during the stall.
    fn due_time(&self, now: u64, extra_ns: u64) -> u64 {
        let served = self.served_at(now);
        self.release_time(served.saturating_add(self.latency_ns).saturating_add(extra_ns))
    }

    /// When the one worker of `--capacity` is done with a request read at
    /// `now` (queued behind those read before it); `now` without.
    fn served_at(&self, now: u64) -> u64 {
        let Some(service) = self.service_ns else { return now };
        let mut free = self.worker_free_ns.load(Ordering::Relaxed);
        loop {
            let done = free.max(now).saturating_add(service);
            match self.worker_free_ns.compare_exchange_weak(
                free,
                done,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return done,
                Err(current) => free = current,
            }
        }
    }

    /// When a request head begun at `now` must be complete (None: never).
    fn head_deadline(&self, now: u64) -> Option<u64> {
        self.head_timeout_ns.map(|timeout| now.saturating_add(timeout))
    }

    /// `at`, or the end of the stall if `at` falls inside it.
    fn release_time(&self, at: u64) -> u64 {
        match self.stall_ns {
            Some((start, end)) if (start..end).contains(&at) => end,
            _ => at,
        }
    }

    fn stats(&self) -> ServerStats {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        self.counters.iter().fold(ServerStats::default(), |total, c| ServerStats {
            connections: total.connections + load(&c.connections),
            requests: total.requests + load(&c.requests),
            max_requests_per_read: total.max_requests_per_read.max(load(&c.max_requests_per_read)),
        })
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One thread's counters, alone on their cache line so that counting never
/// bounces a line between cores.
#[derive(Default)]
#[repr(align(128))]
struct ThreadCounters {
    connections: AtomicU64,
    requests: AtomicU64,
    max_requests_per_read: AtomicU64,
}

impl ThreadCounters {
    fn connection_accepted(&self) {
        add(&self.connections, 1);
    }

    /// Records the complete requests parsed from one read.
    fn requests_read(&self, count: u64) {
        if count == 0 {
            return;
        }
        add(&self.requests, count);
        if count > self.max_requests_per_read.load(Ordering::Relaxed) {
            self.max_requests_per_read.store(count, Ordering::Relaxed);
        }
    }
}

/// Only the owning thread writes its counters, so a plain load and store is
/// exact and cheaper than a locked read-modify-write.
fn add(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}
