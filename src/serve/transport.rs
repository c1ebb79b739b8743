//! The byte stream under a connection: a plain socket or a TLS session.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

use super::tls::TlsStream;

pub(super) enum Transport {
    Plain(TcpStream),
    // Boxed: a rustls session is large and most servers are plain.
    Tls(Box<TlsStream>),
}

impl Transport {
    pub fn socket(&self) -> &TcpStream {
        match self {
            Transport::Plain(socket) => socket,
            Transport::Tls(tls) => tls.socket(),
        }
    }

    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(socket) => socket.read(buf),
            Transport::Tls(tls) => tls.read(buf),
        }
    }

    /// Whether a read shorter than asked means the socket has no more
    /// data. True for TCP; not for TLS, whose plaintext reads say nothing
    /// about the socket.
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Transport::Plain(_))
    }

    /// Like a socket write (std sends with MSG_NOSIGNAL: a closed peer is
    /// an error, not a SIGPIPE).
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(socket) => socket.write(buf),
            Transport::Tls(tls) => tls.write(buf),
        }
    }

    /// Pushes out whatever the transport itself still holds (TLS records).
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(_) => Ok(()),
            Transport::Tls(tls) => tls.flush(),
        }
    }

    pub fn has_pending(&self) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls(tls) => tls.has_pending(),
        }
    }

    /// Ends our direction of the stream; the peer sees the end of data.
    pub fn close_write(&mut self) {
        match self {
            Transport::Plain(socket) => {
                let _ = socket.shutdown(Shutdown::Write);
            }
            Transport::Tls(tls) => tls.close_write(),
        }
    }
}
