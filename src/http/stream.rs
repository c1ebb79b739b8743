//! A connected stream socket of either family pace speaks over: TCP, or a
//! Unix domain socket (`--unix-socket`, `pace serve --unix-socket`). Every
//! operation a connection needs is the same system call for both (send,
//! `recvmsg` through [`crate::sys::recv_stamped`], shutdown, epoll), so one
//! type holds either and nothing per request asks which it is.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use socket2::Socket;

/// A connected (or connecting) stream socket, TCP or Unix.
#[derive(Debug)]
pub struct Stream(Socket);

impl Stream {
    /// Sends what the socket takes of `data`. MSG_NOSIGNAL, as std's
    /// `TcpStream` does: a peer that closed is an error, not a SIGPIPE.
    /// Through rustix, which makes the system call itself: libc's send is
    /// a thread cancellation point, switched off and on around every call.
    #[inline]
    pub fn send(&self, data: &[u8]) -> io::Result<usize> {
        Ok(rustix::net::send(self, data, rustix::net::SendFlags::NOSIGNAL)?)
    }

    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.0.shutdown(how)
    }

    /// The error a non-blocking connect ended with, if any (SO_ERROR).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.0.take_error()
    }

    /// Ok once the socket is connected: a refused non-blocking connect can
    /// show up as "not connected" here rather than in SO_ERROR.
    pub fn check_connected(&self) -> io::Result<()> {
        self.0.peer_addr().map(drop)
    }

    /// What the next read would return, left in the socket (MSG_PEEK): a
    /// proxy's answer to CONNECT is read up to its end and no further.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: recv writes at most buf.len() bytes into buf, which is
        // valid for writes of that length.
        let n = unsafe {
            libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_PEEK)
        };
        match n {
            n if n < 0 => Err(io::Error::last_os_error()),
            n => Ok(n as usize),
        }
    }

    /// Timeouts for the blocking checks before a run.
    pub fn set_timeouts(&self, timeout: Duration) -> io::Result<()> {
        self.0.set_read_timeout(Some(timeout))?;
        self.0.set_write_timeout(Some(timeout))
    }
}

impl From<Socket> for Stream {
    fn from(socket: Socket) -> Stream {
        Stream(socket)
    }
}

impl From<OwnedFd> for Stream {
    fn from(fd: OwnedFd) -> Stream {
        Stream(Socket::from(fd))
    }
}

impl From<TcpStream> for Stream {
    fn from(socket: TcpStream) -> Stream {
        Stream(Socket::from(socket))
    }
}

impl From<UnixStream> for Stream {
    fn from(socket: UnixStream) -> Stream {
        Stream(Socket::from(socket))
    }
}

impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        crate::sys::recv_stamped(*self, buf).map(|(n, _)| n)
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for &Stream {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.send(data)
    }

    /// One system call for all of `bufs` (rustls hands its TLS records
    /// over this way).
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.0.send_vectored_with_flags(bufs, libc::MSG_NOSIGNAL)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for Stream {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.send(data)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        (&*self).write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}
