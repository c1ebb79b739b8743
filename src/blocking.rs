//! Small blocking exchanges outside the engine: the checks made before a
//! run (the probe connections, the CONNECT through a proxy, the h2c
//! preface, the TLS handshake), the remote-write POST after it
//! (`metrics/push.rs`) and the `--metrics` listener's connections.
//!
//! The peer may be hostile or just slow, so each exchange has one
//! [`Deadline`] for the whole of it (connect, write, read), never a timeout
//! per read, which a peer sending a byte now and then restarts forever;
//! and each wait is short, so that a signal ([`Stop`]) is heard within
//! [`HEED_EVERY`] and pace ends promptly. What is read is bounded too
//! ([`read_head`]).
//!
//! A deadline's end shows as an `io::Error` of kind `TimedOut`, a signal as
//! one of kind `Other`; [`ended`] says which. (Not `Interrupted`: std's
//! `read_exact` and `write_all` retry that kind, forever.)

use std::fmt;
use std::io::{self, IoSlice, Read, Write};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use socket2::Socket;

use crate::endpoint::Endpoint;
use crate::http::stream::Stream;
use crate::signals::Stop;

/// The longest single wait: how late a signal may be heard.
pub const HEED_EVERY: Duration = Duration::from_millis(100);

/// When an exchange must be over, and the signal that ends it sooner.
#[derive(Clone, Debug)]
pub struct Deadline {
    at: Instant,
    /// What it was made with, for messages.
    within: Duration,
    stop: Stop,
}

/// Why an exchange ended before it was complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Its deadline passed.
    TimedOut,
    /// A signal arrived (SIGINT, SIGTERM).
    Stopped,
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ended::TimedOut => "timed out",
            Ended::Stopped => "stopped by a signal",
        })
    }
}

impl std::error::Error for Ended {}

impl From<Ended> for io::Error {
    fn from(ended: Ended) -> io::Error {
        let kind = match ended {
            Ended::TimedOut => io::ErrorKind::TimedOut,
            Ended::Stopped => io::ErrorKind::Other,
        };
        io::Error::new(kind, ended)
    }
}

/// Whether `error` is the end of a [`Deadline`] (None: a failure of its
/// own).
pub fn ended(error: &io::Error) -> Option<Ended> {
    error.get_ref().and_then(|inner| inner.downcast_ref::<Ended>()).copied()
}

impl Deadline {
    /// `within` from now, or sooner if `stop` hears a signal.
    pub fn after(within: Duration, stop: &Stop) -> Deadline {
        Deadline { at: Instant::now() + within, within, stop: stop.clone() }
    }

    /// What it was made with (for messages: "within 2s").
    pub fn within(&self) -> Duration {
        self.within
    }

    /// How long the next wait may be: what is left, and at most
    /// [`HEED_EVERY`]; or why there is no more waiting.
    pub fn next_wait(&self) -> io::Result<Duration> {
        if self.stop.heard() {
            return Err(Ended::Stopped.into());
        }
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Ended::TimedOut.into());
        }
        // A socket timeout of zero means none.
        Ok(left.clamp(Duration::from_micros(1), HEED_EVERY))
    }

    /// `stream`, read and written within this deadline.
    pub fn on<'a>(&'a self, stream: &'a Stream) -> Bounded<'a> {
        Bounded { stream, deadline: self, timeout: None }
    }
}

/// A blocking connection to `endpoint`, made within `deadline`.
pub fn connect(endpoint: &Endpoint, deadline: &Deadline) -> io::Result<Stream> {
    let (socket, address) = endpoint.socket()?;
    socket.set_nonblocking(true)?;
    loop {
        match socket.connect(&address) {
            Ok(()) => break,
            // TCP: under way (or interrupted, and still under way).
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINPROGRESS | libc::EINTR)) => {
                wait_connected(&socket, deadline)?;
                break;
            }
            // A Unix socket whose listener's backlog is full: try again.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(deadline.next_wait()?.min(Duration::from_millis(10)));
            }
            Err(e) => return Err(e),
        }
    }
    socket.set_nonblocking(false)?;
    Ok(Stream::from(socket))
}

/// Waits for a TCP connect under way to complete, then gives its error if
/// it failed.
fn wait_connected(socket: &Socket, deadline: &Deadline) -> io::Result<()> {
    loop {
        let wait = Timespec::try_from(deadline.next_wait()?).map_err(io::Error::other)?;
        let mut fds = [PollFd::new(socket, PollFlags::OUT)];
        match poll(&mut fds, Some(&wait)) {
            Ok(0) => continue,
            Ok(_) => break,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(error) = socket.take_error()? {
        return Err(error);
    }
    // A refused connect may show only as "not connected" here.
    socket.peer_addr().map(drop)
}

/// A two-way byte exchange with a server before the run (a bounded
/// socket, or TLS over one).
pub trait Exchange: Read + Write {}

impl<T: Read + Write> Exchange for T {}

/// A stream whose reads and writes wait at most until a deadline, in
/// short waits that heed a signal ([`Deadline::on`]).
pub struct Bounded<'a> {
    stream: &'a Stream,
    deadline: &'a Deadline,
    /// The socket's timeouts as last set (most waits are [`HEED_EVERY`]:
    /// set once, not before every read).
    timeout: Option<Duration>,
}

impl Bounded<'_> {
    /// Gives the socket's calls the next wait as their timeout.
    fn next_wait(&mut self) -> io::Result<()> {
        let wait = self.deadline.next_wait()?;
        if self.timeout != Some(wait) {
            self.stream.set_timeouts(wait)?;
            self.timeout = Some(wait);
        }
        Ok(())
    }
}

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            self.next_wait()?;
            let mut stream = self.stream;
            match stream.read(buf) {
                Err(e) if waited(&e) => continue,
                done => return done,
            }
        }
    }
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            self.next_wait()?;
            let mut stream = self.stream;
            match stream.write(buf) {
                Err(e) if waited(&e) => continue,
                done => return done,
            }
        }
    }

    /// One system call for all of `bufs`, as the stream's own: rustls
    /// writes a handshake flight this way, and a server that refuses its
    /// first record must not close before the rest is written (the
    /// refusal would then be lost to a broken pipe).
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        loop {
            self.next_wait()?;
            let mut stream = self.stream;
            match stream.write_vectored(bufs) {
                Err(e) if waited(&e) => continue,
                done => return done,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A blocking socket's timeout ran out (it shows as "would block"), or a
/// signal interrupted the call: wait again, if the deadline allows.
fn waited(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Why a response head could not be read ([`read_head`]).
#[derive(Debug)]
pub enum HeadError {
    /// The peer closed the connection before the end of the head (what
    /// came of it).
    Closed(Vec<u8>),
    /// No end of the head within the bound.
    TooLong,
    /// The read failed, or its deadline ended it ([`ended`]).
    Io(io::Error),
}

/// An HTTP/1.x head from `reader`: everything up to and including its
/// empty line, and not a byte more (the CONNECT check hands the socket on
/// to the server behind the proxy, which may speak first). At most
/// `max` bytes.
///
/// Read a byte at a time: heads are small, read once per run, and no
/// byte past one is ever taken from the socket.
pub fn read_head(reader: &mut impl Read, max: usize) -> Result<Vec<u8>, HeadError> {
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= max {
            return Err(HeadError::TooLong);
        }
        match reader.read(&mut byte) {
            Ok(0) => return Err(HeadError::Closed(head)),
            Ok(_) => head.push(byte[0]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(HeadError::Io(e)),
        }
    }
    Ok(head)
}

/// The first line of `bytes`, for messages: at most `max` characters,
/// lossy UTF-8.
pub fn first_line(bytes: &[u8], max: usize) -> String {
    let line = bytes.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(&line[..line.len().min(max)]).into_owned()
}

#[cfg(test)]
mod tests {
    use std::net::{SocketAddr, TcpListener};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::thread;

    use super::*;
    use crate::timing::stretched;

    /// A server that accepts one connection and sends `answer` a byte
    /// every `every`, until `done` is set.
    fn trickler(answer: &'static [u8], every: Duration) -> (SocketAddr, Arc<AtomicBool>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            for byte in answer.iter().cycle() {
                if stop.load(Ordering::SeqCst) || socket.write_all(&[*byte]).is_err() {
                    return;
                }
                thread::sleep(every);
            }
        });
        (addr, done)
    }

    #[test]
    fn one_deadline_for_the_whole_head_whatever_the_peer_trickles() {
        let _timing = crate::timing::lock();
        let (addr, done) = trickler(b"HTTP/1.1 200 OK\r\nX: y", Duration::from_millis(20));
        let deadline = Deadline::after(Duration::from_millis(500), &Stop::never());
        let started = Instant::now();
        let socket = connect(&Endpoint::Tcp(addr), &deadline).unwrap();
        let failed = read_head(&mut deadline.on(&socket), 1 << 20);
        done.store(true, Ordering::SeqCst);
        match failed {
            Err(HeadError::Io(e)) => assert_eq!(ended(&e), Some(Ended::TimedOut), "{e}"),
            other => panic!("{other:?}"),
        }
        let took = started.elapsed();
        // The deadline, plus one wait at most, plus a loaded machine.
        let most = stretched(Duration::from_secs(3));
        assert!(took >= Duration::from_millis(500) && took < most, "{took:?}");
    }

    #[test]
    fn a_head_and_not_a_byte_more() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            socket.write_all(b"HTTP/1.1 200 OK\r\n\r\nNEXT").unwrap();
            thread::sleep(Duration::from_secs(1));
        });
        let deadline = Deadline::after(Duration::from_secs(10), &Stop::never());
        let socket = connect(&Endpoint::Tcp(addr), &deadline).unwrap();
        let mut bounded = deadline.on(&socket);
        assert_eq!(read_head(&mut bounded, 100).unwrap(), b"HTTP/1.1 200 OK\r\n\r\n");
        let mut next = [0u8; 4];
        bounded.read_exact(&mut next).unwrap();
        assert_eq!(&next, b"NEXT");
    }

    #[test]
    fn bounded_and_closed_heads() {
        let mut long: &[u8] = b"HTTP/1.1 200 OK\r\nX: yyyyyyyyyy\r\n\r\n";
        assert!(matches!(read_head(&mut long, 20), Err(HeadError::TooLong)));
        let mut cut: &[u8] = b"HTTP/1.1 200 OK\r\n";
        match read_head(&mut cut, 100) {
            Err(HeadError::Closed(got)) => assert_eq!(got, b"HTTP/1.1 200 OK\r\n"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_signal_ends_the_wait_within_a_short_wait() {
        let _timing = crate::timing::lock();
        let (addr, done) = trickler(b"x", Duration::from_millis(50));
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = Stop::counting(count.clone());
        let deadline = Deadline::after(Duration::from_secs(60), &stop);
        let socket = connect(&Endpoint::Tcp(addr), &deadline).unwrap();
        let signal = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            count.fetch_add(1, Ordering::SeqCst);
            Instant::now()
        });
        let failed = read_head(&mut deadline.on(&socket), 1 << 20);
        let ended_at = Instant::now();
        let signalled = signal.join().unwrap();
        done.store(true, Ordering::SeqCst);
        match failed {
            Err(HeadError::Io(e)) => assert_eq!(ended(&e), Some(Ended::Stopped), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(ended_at.duration_since(signalled) < stretched(Duration::from_secs(2)));
    }

    #[test]
    fn connect_failures_are_the_systems() {
        let free = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let deadline = Deadline::after(Duration::from_secs(5), &Stop::never());
        let refused = connect(&Endpoint::Tcp(free), &deadline).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused, "{refused}");
        let late = Deadline::after(Duration::ZERO, &Stop::never());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Loopback connects at once, or the zero deadline ends the wait.
        if let Err(e) = connect(&Endpoint::Tcp(addr), &late) {
            assert_eq!(ended(&e), Some(Ended::TimedOut), "{e}");
        }
    }

    #[test]
    fn first_lines() {
        assert_eq!(first_line(b"SSH-2.0-OpenSSH\r\nmore", 80), "SSH-2.0-OpenSSH");
        assert_eq!(first_line(b"abcdef", 3), "abc");
    }
}
