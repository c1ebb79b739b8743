//! The server's listening sockets: one per thread on a TCP port, or one
//! Unix socket that every thread waits on (`pace serve --unix-socket`).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::Path;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Connections waiting to be accepted, at most (the kernel may cap it).
const BACKLOG: i32 = 4096;

/// The receive and send buffers asked for a UDP socket.
const UDP_BUFFER: usize = 4 << 20;

/// One listener per thread. Several threads share the port through
/// `SO_REUSEPORT`; a single thread does not set it, so that no other
/// process can ever join its port.
pub(super) fn tcp_listeners(bind: SocketAddr, threads: usize) -> io::Result<Vec<Socket>> {
    let reuse_port = threads > 1;
    let first = listen_tcp(bind, reuse_port)?;
    // With port 0 the kernel picked a port for the first listener; the
    // others must join that one.
    let bound = first.local_addr()?.as_socket().ok_or(io::ErrorKind::InvalidData)?;
    let mut listeners = vec![first];
    for _ in 1..threads {
        listeners.push(listen_tcp(bound, reuse_port)?);
    }
    Ok(listeners)
}

fn listen_tcp(addr: SocketAddr, reuse_port: bool) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Restarting `pace serve` on a fixed port must not wait for TIME_WAIT.
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket)
}

/// One UDP socket per thread for HTTP/3 on `addr`, the TCP listeners'
/// address (its port already chosen). As for TCP, the sockets share the
/// port through `SO_REUSEPORT` only when there are several.
pub(super) fn udp_sockets(addr: SocketAddr, threads: usize) -> io::Result<Vec<UdpSocket>> {
    let bind = || -> io::Result<UdpSocket> {
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        if threads > 1 {
            socket.set_reuse_port(true)?;
        }
        // Room for bursts of a fast client's datagrams (the kernel caps it
        // at net.core.rmem_max / wmem_max; less is not an error).
        let _ = socket.set_recv_buffer_size(UDP_BUFFER);
        let _ = socket.set_send_buffer_size(UDP_BUFFER);
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        Ok(socket.into())
    };
    (0..threads)
        .map(|_| bind())
        .collect::<io::Result<_>>()
        .map_err(|e| io::Error::new(e.kind(), format!("HTTP/3: cannot bind UDP {addr}: {e}")))
}

/// A Unix socket at `path`, shared by the `threads` (each gets its own
/// descriptor of it: Unix sockets have no `SO_REUSEPORT`; every thread
/// that wakes accepts what it can). A socket file left by a server that
/// is gone is replaced; anything else at `path` is an error.
pub(super) fn unix_listeners(path: &Path, threads: usize) -> io::Result<Vec<Socket>> {
    remove_stale_socket(path)?;
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    socket.set_nonblocking(true)?;
    socket.bind(&SockAddr::unix(path)?)?;
    socket.listen(BACKLOG)?;
    let mut listeners = Vec::with_capacity(threads);
    for _ in 1..threads {
        listeners.push(socket.try_clone()?);
    }
    listeners.push(socket);
    Ok(listeners)
}

/// Removes the socket file at `path` if no server listens on it.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    let shown = path.display();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        let why = format!("{shown} exists and is not a socket (pace serve replaces only a socket)");
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, why));
    }
    if UnixStream::connect(path).is_ok() {
        let why = format!("a server already listens on {shown}");
        return Err(io::Error::new(io::ErrorKind::AddrInUse, why));
    }
    std::fs::remove_file(path)
}

/// Removes the server's socket file when it stops, if it is still a
/// socket (best effort: the file may be gone already).
pub(super) fn remove_socket(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_socket()) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    #[test]
    fn a_stale_socket_is_replaced_and_anything_else_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        drop(UnixListener::bind(&path).unwrap());
        let listeners = unix_listeners(&path, 2).unwrap();
        assert_eq!(listeners.len(), 2);
        UnixStream::connect(&path).unwrap();
        let busy = unix_listeners(&path, 1).unwrap_err();
        assert_eq!(busy.to_string(), format!("a server already listens on {}", path.display()));
        drop(listeners);
        remove_socket(&path);
        assert!(!path.exists());
        std::fs::write(&path, "data").unwrap();
        let error = unix_listeners(&path, 1).unwrap_err();
        assert!(error.to_string().contains("exists and is not a socket"), "{error}");
        remove_socket(&path);
        assert_eq!(std::fs::read(&path).unwrap(), b"data");
    }
}
