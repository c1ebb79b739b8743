//! From the target's host and port to the addresses the benchmark connects
//! to, checked before the run starts.
//!
//! Like wrk's `wrk.resolve` (`src/wrk.lua`), every resolved address gets one
//! test connection and only those that accept it are kept: `localhost` that
//! resolves to `::1` and `127.0.0.1` still works against a server listening
//! on IPv4 only, and "nothing listens" is one clear error before the run
//! instead of a report full of connect errors.

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::error::{io_reason, Error};
use crate::target::Target;

/// The addresses of `target` that accept a TCP connection within
/// `connect_timeout`, in resolver order. A zero timeout is taken as 1 ms.
///
/// Errors (`Error::Setup`): `unable to resolve <host>:<port>: <reason>`, or
/// `unable to connect to <host>:<port>: <reason>` with the reason of the
/// last address tried.
pub fn resolve_target(
    target: &Target,
    connect_timeout: Duration,
) -> Result<Vec<SocketAddr>, Error> {
    let shown = host_port(target);
    let candidates = lookup(&target.host, target.port)
        .map_err(|err| Error::Setup(format!("unable to resolve {shown}: {}", io_reason(&err))))?;
    let timeout = connect_timeout.max(Duration::from_millis(1));
    let mut last_failure = None;
    let mut reachable = Vec::new();
    for addr in candidates {
        // The probe connection is closed at once, as in wrk.
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(_probe) => reachable.push(addr),
            Err(err) => last_failure = Some(err),
        }
    }
    match last_failure {
        Some(err) if reachable.is_empty() => {
            Err(Error::Setup(format!("unable to connect to {shown}: {}", io_reason(&err))))
        }
        _ => Ok(reachable),
    }
}

/// All addresses of `host` (a name or an IP literal, IPv6 without
/// brackets), without duplicates, never empty.
fn lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let mut addrs: Vec<SocketAddr> = Vec::new();
    for addr in (host, port).to_socket_addrs()? {
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no addresses found"));
    }
    Ok(addrs)
}

/// `host:port` as the user would write it, IPv6 in brackets.
fn host_port(target: &Target) -> String {
    if target.host.contains(':') {
        format!("[{}]:{}", target.host, target.port)
    } else {
        format!("{}:{}", target.host, target.port)
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(2);

    fn target(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    fn setup_error(result: Result<Vec<SocketAddr>, Error>) -> String {
        match result {
            Err(Error::Setup(message)) => message,
            Err(other) => panic!("not a setup error: {other}"),
            Ok(addrs) => panic!("resolved to {addrs:?}"),
        }
    }

    /// A port on which nothing listens (it was free a moment ago).
    fn closed_port() -> u16 {
        TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    #[test]
    fn keeps_the_addresses_that_accept() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let addrs = resolve_target(&target(&format!("http://{addr}/")), TIMEOUT).unwrap();
        assert_eq!(addrs, [addr]);
    }

    #[test]
    fn ipv6_literals() {
        // Skip quietly where the machine has no IPv6 loopback.
        let Ok(listener) = TcpListener::bind("[::1]:0") else { return };
        let addr = listener.local_addr().unwrap();
        let url = format!("http://[::1]:{}/", addr.port());
        assert_eq!(resolve_target(&target(&url), TIMEOUT).unwrap(), [addr]);
    }

    #[test]
    fn localhost_falls_back_to_the_family_that_listens() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://localhost:{port}/");
        let addrs = resolve_target(&target(&url), TIMEOUT).unwrap();
        assert!(addrs.iter().all(|a| a.is_ipv4()), "{addrs:?}");
    }

    #[test]
    fn nothing_listening() {
        let port = closed_port();
        let message =
            setup_error(resolve_target(&target(&format!("http://127.0.0.1:{port}/")), TIMEOUT));
        assert_eq!(message, format!("unable to connect to 127.0.0.1:{port}: Connection refused"));
    }

    #[test]
    fn unresolvable_host() {
        // RFC 6761: .invalid names never resolve.
        let message = setup_error(resolve_target(&target("http://nonexistent.invalid/"), TIMEOUT));
        assert!(message.starts_with("unable to resolve nonexistent.invalid:80: "), "{message}");
        assert!(!message.contains("os error"), "{message}");
    }

    #[test]
    fn shows_ipv6_hosts_in_brackets() {
        assert_eq!(host_port(&target("http://[::1]:81/")), "[::1]:81");
        assert_eq!(host_port(&target("https://example.com/")), "example.com:443");
    }
}
