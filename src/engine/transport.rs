//! The client's side of a new connection: a non-blocking connect. The byte
//! stream over it is [`crate::http::transport::Transport`].

use std::io;
use std::net::{SocketAddr, TcpStream};

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
