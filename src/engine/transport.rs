//! A connection's byte stream: plain TCP or TLS over TCP, both non-blocking.
//! The event loop only sees `read`, `write`, `flush` and `handshake`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};

use rustls::ClientConnection;
use socket2::{Domain, Protocol, Socket, Type};

use crate::sys;

/// Starts a non-blocking connect with TCP_NODELAY; completion is signalled
/// by the socket becoming writable.
pub fn start_connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    socket.set_tcp_nodelay(true)?;
    // Best effort: without stamps, completion times fall back to the clock
    // at read time.
    let _ = sys::enable_receive_timestamps(&socket);
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(socket.into())
}

/// The socket under TLS, keeping the arrival stamp of the last read.
struct StampedSocket<'a> {
    socket: &'a TcpStream,
    stamp: Option<u64>,
}

impl Read for StampedSocket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, stamp) = sys::recv_stamped(self.socket, buf)?;
        self.stamp = stamp.or(self.stamp);
        Ok(n)
    }
}

pub enum Transport {
    Plain(TcpStream),
    Tls(TcpStream, Box<ClientConnection>),
}

impl Transport {
    pub fn socket(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) | Transport::Tls(s, _) => s,
        }
    }

    /// With plain TCP a read shorter than the buffer means the socket is
    /// drained, so the read that would return EAGAIN can be skipped (the
    /// next data raises a new edge). TLS may hold decrypted data back, so it
    /// reads until EAGAIN.
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Transport::Plain(_))
    }

    /// Drives the TLS handshake as far as the socket allows. Ok(true) when
    /// the connection is ready for requests (always, for plain TCP).
    pub fn handshake(&mut self) -> io::Result<bool> {
        let Transport::Tls(sock, tls) = self else { return Ok(true) };
        while tls.is_handshaking() {
            if tls.wants_write() {
                match tls.write_tls(sock) {
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) => return Err(e),
                }
            }
            match tls.read_tls(sock) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "closed during TLS handshake",
                    ))
                }
                Ok(_) => {
                    tls.process_new_packets().map_err(io::Error::other)?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        // Flush the last handshake flight (e.g. Finished) if it is pending.
        self.flush()
    }

    /// Reads response bytes. Ok(0) = the peer closed the connection. With
    /// the count comes the kernel's arrival stamp of the last packet read
    /// (wall-clock ns), when the socket has receive timestamps on.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        match self {
            Transport::Plain(sock) => sys::recv_stamped(sock, buf),
            Transport::Tls(sock, tls) => {
                let mut stamped = StampedSocket { socket: sock, stamp: None };
                loop {
                    match tls.reader().read(buf) {
                        Ok(n) => return Ok((n, stamped.stamp)),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                    if tls.read_tls(&mut stamped)? == 0 {
                        return Ok((0, stamped.stamp));
                    }
                    tls.process_new_packets().map_err(io::Error::other)?;
                }
            }
        }
    }

    /// Writes request bytes; returns how many were accepted. TLS accepts
    /// everything into its buffer and then needs [`Transport::flush`].
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(sock) => sock.write(data),
            Transport::Tls(_, tls) => {
                tls.writer().write_all(data)?;
                Ok(data.len())
            }
        }
    }

    /// Pushes buffered TLS records to the socket. Ok(true) when nothing is
    /// left to send.
    pub fn flush(&mut self) -> io::Result<bool> {
        let Transport::Tls(sock, tls) = self else { return Ok(true) };
        while tls.wants_write() {
            match tls.write_tls(sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}
