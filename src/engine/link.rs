//! What a protocol runs over: the link of a connection, from the socket's
//! connect to the point where the protocol can start (a proxy's CONNECT
//! tunnel and the TLS handshake included), then reads stamped with their
//! arrival and writes.
//!
//! [`StreamLink`] is the byte stream of HTTP/1.1 and HTTP/2: TCP or a
//! Unix socket, plain or TLS ([`Transport`]), possibly through a proxy's
//! tunnel. A protocol over datagrams that owns its TLS (QUIC) has a link
//! whose set-up is the socket's alone and whose reads and writes are one
//! datagram each ([`super::datagram::DatagramLink`]); the connection layer
//! drives either through [`Link`].

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use super::origin::Origin;
use crate::endpoint::Endpoint;
use crate::error::io_reason;
use crate::http::stream::Stream;
use crate::http::transport::Transport;
use crate::proxy::tunnel::Handshake;
use crate::sys;
use crate::tls::describe_handshake_error;

/// A connection's link.
pub trait Link: Sized + Send + 'static {
    /// Starts connecting to `endpoint` for `origin`; the set-up goes on
    /// with [`Link::advance`].
    fn connect(endpoint: &Endpoint, origin: &Origin) -> Result<Self, Refused>;

    /// Goes on with the set-up as far as the socket allows, after it
    /// reported an event (`writable` or not): Ok(true) once the protocol
    /// can start, Err with the cause when the set-up failed.
    fn advance(&mut self, origin: &Origin, writable: bool) -> Result<bool, String>;

    /// Why a set-up that took too long failed, in the words of where it
    /// was (the TCP connect, the proxy's tunnel).
    fn timed_out(&self, origin: &Origin) -> String;

    /// The socket, for the poller.
    fn fd(&self) -> BorrowedFd<'_>;

    /// How long the set-up's phases took, once it is done.
    fn set_up_times(&self) -> SetUpTimes;

    /// Over TLS, with the protocol it chose by ALPN.
    fn tls(&self) -> bool;
    fn alpn(&self) -> Option<Vec<u8>>;

    /// Reads into `buf`: how much, and the kernel's arrival stamp of the
    /// data (wall-clock ns) when the socket has one. Ok((0, _)): the peer
    /// closed the link.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)>;

    /// A read shorter than the buffer means nothing more is waiting (the
    /// read that would only return `WouldBlock` can be skipped).
    fn short_read_drains(&self) -> bool;

    /// Writes what the link takes of `data`.
    fn write(&mut self, data: &[u8]) -> io::Result<usize>;

    /// Pushes out what the link holds back; Ok(true) when nothing is left.
    fn flush(&mut self) -> io::Result<bool>;
}

/// How long a link's set-up took, ns, phase by phase (a phase it did not
/// go through is None).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetUpTimes {
    /// From the connect to the socket's connection.
    pub connect: Option<u64>,
    /// The TLS handshake (after a proxy's tunnel, when there is one).
    pub tls_handshake: Option<u64>,
}

/// Why a connect could not even start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No room now (a Unix socket's full backlog): try again shortly, as
    /// TCP retries a SYN the backlog dropped, without an error.
    Busy,
    /// The connect failed, in words.
    Failed(String),
}

/// A byte stream: TCP or Unix, plain or TLS, possibly tunnelled.
pub struct StreamLink {
    transport: Transport,
    stage: Stage,
    /// When the connect started, the socket connected, and the TLS
    /// handshake started and ended (ns).
    connect_started: u64,
    connected: u64,
    handshake_started: u64,
    open: u64,
}

/// Where a stream link's set-up is.
enum Stage {
    /// TCP connect started; waiting for the socket to become writable.
    Connecting,
    /// TCP is up to a proxy; opening the CONNECT tunnel through it.
    Tunneling(Box<Handshake>),
    /// TLS handshake in progress (a plain link passes through at once).
    Handshaking,
    /// Set up.
    Open,
}

impl Link for StreamLink {
    fn connect(endpoint: &Endpoint, origin: &Origin) -> Result<StreamLink, Refused> {
        let connect_started = sys::now_ns();
        let stream = match start_connect(endpoint) {
            Ok(stream) => stream,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    && matches!(endpoint, Endpoint::Unix(_)) =>
            {
                return Err(Refused::Busy)
            }
            Err(e) => return Err(Refused::Failed(endpoint.connect_failure(&e))),
        };
        let transport = match &origin.tls {
            None => Transport::plain(stream),
            Some(tls) => match tls.session() {
                Ok(session) => Transport::tls(stream, session),
                Err(e) => return Err(Refused::Failed(format!("TLS: {e}"))),
            },
        };
        Ok(StreamLink {
            transport,
            stage: Stage::Connecting,
            connect_started,
            connected: 0,
            handshake_started: 0,
            open: 0,
        })
    }

    fn advance(&mut self, origin: &Origin, writable: bool) -> Result<bool, String> {
        loop {
            match &mut self.stage {
                Stage::Connecting if !writable => return Ok(false),
                Stage::Connecting => {
                    let socket = self.transport.socket();
                    match socket.take_error() {
                        Ok(None) => {}
                        Ok(Some(e)) | Err(e) => return Err(io_reason(&e)),
                    }
                    // A refused connect can also show up as "not connected".
                    socket.check_connected().map_err(|e| io_reason(&e))?;
                    self.connected = sys::now_ns();
                    self.handshake_started = self.connected;
                    self.stage = match origin.tunnel {
                        Some(_) => Stage::Tunneling(Box::default()),
                        None => Stage::Handshaking,
                    };
                }
                Stage::Tunneling(handshake) => {
                    let Some(tunnel) = origin.tunnel.as_deref() else {
                        return Err("no tunnel to open".into());
                    };
                    if !handshake.advance(self.transport.socket(), tunnel)? {
                        return Ok(false);
                    }
                    self.handshake_started = sys::now_ns();
                    self.stage = Stage::Handshaking;
                }
                Stage::Handshaking => match self.transport.handshake() {
                    Ok(true) => {
                        self.open = sys::now_ns();
                        self.stage = Stage::Open;
                    }
                    Ok(false) => return Ok(false),
                    Err(e) => {
                        return Err(format!(
                            "TLS handshake: {}",
                            describe_handshake_error(&e, None)
                        ))
                    }
                },
                Stage::Open => return Ok(true),
            }
        }
    }

    fn timed_out(&self, origin: &Origin) -> String {
        match (&self.stage, &origin.tunnel) {
            (Stage::Tunneling(_), Some(tunnel)) => tunnel.timed_out(),
            _ => "connect timed out".to_string(),
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.transport.socket().as_fd()
    }

    fn set_up_times(&self) -> SetUpTimes {
        if !matches!(self.stage, Stage::Open) {
            return SetUpTimes::default();
        }
        SetUpTimes {
            connect: Some(self.connected.saturating_sub(self.connect_started)),
            tls_handshake: self.tls().then(|| self.open.saturating_sub(self.handshake_started)),
        }
    }

    fn tls(&self) -> bool {
        matches!(self.transport, Transport::Tls(..))
    }

    fn alpn(&self) -> Option<Vec<u8>> {
        self.transport.alpn_protocol()
    }

    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        self.transport.read(buf)
    }

    #[inline]
    fn short_read_drains(&self) -> bool {
        self.transport.short_read_drains()
    }

    #[inline]
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.transport.write(data)
    }

    #[inline]
    fn flush(&mut self) -> io::Result<bool> {
        self.transport.flush()
    }
}

/// Starts a non-blocking connect (TCP with TCP_NODELAY); completion is
/// signalled by the socket becoming writable. A Unix socket connects at
/// once, or fails at once: `WouldBlock` when the server's backlog is full.
fn start_connect(endpoint: &Endpoint) -> io::Result<Stream> {
    let (socket, address) = endpoint.socket()?;
    socket.set_nonblocking(true)?;
    // Best effort: without stamps, completion times fall back to the clock
    // at read time. Unix stream sockets take the option but never stamp.
    if let Endpoint::Tcp(_) = endpoint {
        let _ = sys::enable_receive_timestamps(&socket);
    }
    match socket.connect(&address) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(socket.into())
}
