//! The client's side of a new connection: a non-blocking connect to an
//! [`Endpoint`]. The byte stream over it is
//! [`crate::http::transport::Transport`].

use std::io;

use crate::endpoint::Endpoint;
use crate::http::stream::Stream;
use crate::sys;

/// Starts a non-blocking connect (TCP with TCP_NODELAY); completion is
/// signalled by the socket becoming writable. A Unix socket connects at
/// once, or fails at once: `WouldBlock` when the server's backlog is full.
pub fn start_connect(endpoint: &Endpoint) -> io::Result<Stream> {
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
