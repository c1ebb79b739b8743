//! Where a connection goes: a TCP address, or the path of a Unix domain
//! socket (`--unix-socket`). The URL still gives the `Host`, the path and
//! the TLS server name; the endpoint only says which socket carries them.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::error::io_reason;
use crate::http::stream::Stream;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(Arc<Path>),
}

impl fmt::Display for Endpoint {
    /// `127.0.0.1:8080`, `[::1]:80`, `unix:/run/app.sock` (curl's and
    /// nginx's way of writing a socket path).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(addr) => write!(f, "{addr}"),
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

impl Endpoint {
    /// A new socket of the endpoint's family, and the address to connect
    /// it to. TCP gets TCP_NODELAY (requests are complete when written;
    /// Nagle would only delay them); a Unix socket has no such option.
    pub fn socket(&self) -> io::Result<(Socket, SockAddr)> {
        match self {
            Endpoint::Tcp(addr) => {
                let socket =
                    Socket::new(Domain::for_address(*addr), Type::STREAM, Some(Protocol::TCP))?;
                socket.set_tcp_nodelay(true)?;
                Ok((socket, SockAddr::from(*addr)))
            }
            Endpoint::Unix(path) => {
                Ok((Socket::new(Domain::UNIX, Type::STREAM, None)?, SockAddr::unix(path)?))
            }
        }
    }

    /// A blocking connection (the script's `wrk.connect`; the checks
    /// before a run use [`crate::blocking::connect`]).
    pub fn connect(&self, timeout: Duration) -> io::Result<Stream> {
        let (socket, address) = self.socket()?;
        socket.connect_timeout(&address, timeout)?;
        Ok(Stream::from(socket))
    }

    /// Why a connect failed, in words. For a Unix socket the path is
    /// looked at, since the kernel says "connection refused" both when
    /// nothing listens on a socket and when the path is not a socket.
    pub fn connect_failure(&self, error: &io::Error) -> String {
        match self {
            Endpoint::Tcp(_) => io_reason(error),
            Endpoint::Unix(path) => unix_connect_failure(path, error),
        }
    }
}

/// The longest path a Unix socket address holds (`sun_path`, less its
/// terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

fn unix_connect_failure(path: &Path, error: &io::Error) -> String {
    let shown = path.display();
    let length = path.as_os_str().len();
    if length > MAX_SOCKET_PATH {
        return format!(
            "the path is too long for a Unix socket ({length} bytes, at most {MAX_SOCKET_PATH}): \
             {shown}"
        );
    }
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return format!("no such socket: {shown}"),
        Ok(meta) if !meta.file_type().is_socket() => {
            let what = if meta.is_dir() { "a directory" } else { "a file" };
            return format!("not a socket: {shown} is {what}");
        }
        _ => {}
    }
    match error.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => format!("permission denied: {shown}"),
        Some(libc::ECONNREFUSED) => format!("nothing listens on {shown} (connection refused)"),
        Some(libc::ENOTDIR) => format!("no such socket: {shown} (a parent is not a directory)"),
        _ => format!("{shown}: {}", io_reason(error)),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    fn unix(path: &Path) -> Endpoint {
        Endpoint::Unix(Arc::from(path))
    }

    fn failure(endpoint: &Endpoint) -> String {
        let error = endpoint.connect(Duration::from_secs(1)).unwrap_err();
        endpoint.connect_failure(&error)
    }

    #[test]
    fn shows_as_curl_writes_it() {
        assert_eq!(Endpoint::Tcp("127.0.0.1:8080".parse().unwrap()).to_string(), "127.0.0.1:8080");
        assert_eq!(Endpoint::Tcp("[::1]:80".parse().unwrap()).to_string(), "[::1]:80");
        assert_eq!(unix(Path::new("/run/app.sock")).to_string(), "unix:/run/app.sock");
    }

    #[test]
    fn connects_to_a_unix_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let _listener = UnixListener::bind(&path).unwrap();
        unix(&path).connect(Duration::from_secs(1)).unwrap();
    }

    #[test]
    fn unix_socket_failures_in_words() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert_eq!(failure(&unix(&missing)), format!("no such socket: {}", missing.display()));
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert_eq!(failure(&unix(&file)), format!("not a socket: {} is a file", file.display()));
        assert_eq!(
            failure(&unix(dir.path())),
            format!("not a socket: {} is a directory", dir.path().display())
        );
        let long = dir.path().join("a".repeat(MAX_SOCKET_PATH));
        let said = failure(&unix(&long));
        assert!(said.starts_with("the path is too long for a Unix socket ("), "{said}");
        // A socket file left behind by a server that is gone.
        let stale = dir.path().join("stale");
        drop(UnixListener::bind(&stale).unwrap());
        assert_eq!(
            failure(&unix(&stale)),
            format!("nothing listens on {} (connection refused)", stale.display())
        );
    }

    #[test]
    fn a_socket_without_write_permission_is_refused_in_words() {
        // Root connects whatever the permissions: the kernel's answer to
        // anyone else is given directly.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let _listener = UnixListener::bind(&path).unwrap();
        let denied = io::Error::from_raw_os_error(libc::EACCES);
        let said = unix(&path).connect_failure(&denied);
        assert_eq!(said, format!("permission denied: {}", path.display()));
    }
}
