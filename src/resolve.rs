//! From the target's host and port to the endpoints the benchmark connects
//! to, checked before the run starts.
//!
//! Like wrk's `wrk.resolve` (`src/wrk.lua`), every resolved address gets one
//! test connection and only those that accept it are kept: `localhost` that
//! resolves to `::1` and `127.0.0.1` reaches a server listening on either
//! family, and "nothing listens" is one clear error before the run instead
//! of a report full of connect errors. What [`Reach`] asks for comes first:
//! `--unix-socket` replaces the lookup with one test connection to the
//! socket, `--connect-to` looks up another name, `-4`/`-6` keep one family.
//!
//! A signal (heard by the [`Stop`] given) ends the lookup and the probes
//! within [`crate::blocking::HEED_EVERY`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::blocking::{self, Deadline, Ended, HEED_EVERY};
use crate::endpoint::Endpoint;
use crate::error::{io_reason, Error};
use crate::reach::{connect_address, host_port, Reach};
use crate::signals::Stop;
use crate::target::Target;

/// The endpoints of `target` that accept a connection within
/// `connect_timeout`, in resolver order. A zero timeout is taken as 1 ms.
///
/// Errors (`Error::Setup`): `unable to resolve <host>:<port>: <reason>`,
/// `unable to connect to <host>:<port>: <reason>` with the reason of the
/// last address tried, `<host> has no IPv6 address (-6)`, or
/// `--unix-socket: <reason>` (`no such socket: <path>`, ...); after a
/// signal, `... stopped by a signal`.
pub fn resolve_target(
    target: &Target,
    reach: &Reach,
    probe: Probe,
    connect_timeout: Duration,
    stop: &Stop,
) -> Result<Vec<Endpoint>, Error> {
    let timeout = connect_timeout.max(Duration::from_millis(1));
    if let Some(path) = &reach.unix_socket {
        let socket = Endpoint::Unix(path.clone());
        // The probe connection is closed at once, as in wrk.
        return match blocking::connect(&socket, &Deadline::after(timeout, stop)) {
            Ok(_probe) => Ok(vec![socket]),
            Err(err) => {
                Err(Error::Setup(format!("--unix-socket: {}", socket.connect_failure(&err))))
            }
        };
    }
    resolve_origin(&target.host, target.port, reach, probe, timeout, stop)
}

/// How an address is found reachable before the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// It accepts a TCP connection (closed at once, as in wrk).
    Tcp,
    /// Over UDP (QUIC) no server answers a probe, but a host with nothing
    /// on the port answers with an ICMP port unreachable: the first
    /// address that does not is taken (`localhost` is `::1` first, and a
    /// server may listen on 127.0.0.1 only), and the protocol's own
    /// handshake before the run checks it.
    Udp,
}

/// How long an empty datagram may take to bring back an ICMP port
/// unreachable: on loopback and a local network, far less.
const UDP_REFUSAL_WAIT: Duration = Duration::from_millis(20);

/// The first of `candidates` (not empty) whose port does not refuse an
/// empty datagram (an ICMP port unreachable, which the kernel reports on
/// a connected socket), or the first when all do: the check before the run
/// then says so in words. One candidate is taken as it is. A QUIC server
/// drops an empty datagram.
fn first_not_refused(candidates: &[SocketAddr]) -> SocketAddr {
    let refused = |addr: &SocketAddr| {
        let local: SocketAddr = match addr {
            SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
            SocketAddr::V6(_) => ([0u16; 8], 0).into(),
        };
        let Ok(socket) = std::net::UdpSocket::bind(local) else { return false };
        let sent = socket.connect(addr).and_then(|()| socket.send(&[]));
        let _ = socket.set_read_timeout(Some(UDP_REFUSAL_WAIT));
        let answer = sent.and_then(|_| socket.recv(&mut [0u8; 1]));
        matches!(answer, Err(e) if e.kind() == io::ErrorKind::ConnectionRefused)
    };
    match candidates {
        [only] => *only,
        _ => *candidates.iter().find(|addr| !refused(addr)).unwrap_or(&candidates[0]),
    }
}

/// The addresses that accept a TCP connection for an origin (`host`
/// without brackets), after `--connect-to` and `-4`/`-6` (over UDP, the
/// first of them).
pub fn resolve_origin(
    host: &str,
    port: u16,
    reach: &Reach,
    probe: Probe,
    timeout: Duration,
    stop: &Stop,
) -> Result<Vec<Endpoint>, Error> {
    let (host, port) = connect_address(host, port, &reach.connect_to);
    let shown = host_port(host, port);
    let mut candidates = addresses(host, port, stop)
        .map_err(|err| Error::Setup(format!("unable to resolve {shown}: {}", io_reason(&err))))?;
    if let Some(family) = reach.family {
        candidates.retain(|addr| family.holds(addr.ip()));
        if candidates.is_empty() {
            let option = family.option();
            return Err(Error::Setup(format!("{host} has no {family} address ({option})")));
        }
    }
    if probe == Probe::Udp {
        return Ok(vec![Endpoint::Tcp(first_not_refused(&candidates))]);
    }
    let mut last_failure = None;
    let mut reachable = Vec::new();
    for addr in candidates {
        // The probe connection is closed at once, as in wrk.
        match blocking::connect(&Endpoint::Tcp(addr), &Deadline::after(timeout, stop)) {
            Ok(_probe) => reachable.push(Endpoint::Tcp(addr)),
            Err(err) if blocking::ended(&err) == Some(Ended::Stopped) => {
                return Err(Error::Setup(format!("unable to connect to {shown}: {err}")))
            }
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

/// The addresses of `host` ([`lookup`]), given up when `stop` hears a
/// signal: the resolver may take seconds (a name server that does not
/// answer), and cannot be interrupted, so it runs on a thread of its own,
/// left to finish alone.
pub fn addresses(host: &str, port: u16, stop: &Stop) -> io::Result<Vec<SocketAddr>> {
    let (result, answer) = mpsc::channel();
    let name = host.to_string();
    let spawned = thread::Builder::new()
        .name("pace-resolve".into())
        .spawn(move || drop(result.send(lookup(&name, port))));
    if spawned.is_err() {
        return lookup(host, port);
    }
    loop {
        match answer.recv_timeout(HEED_EVERY) {
            Ok(addrs) => return addrs,
            Err(mpsc::RecvTimeoutError::Timeout) if stop.heard() => {
                return Err(Ended::Stopped.into())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("the resolver's thread ended without an answer"))
            }
        }
    }
}

/// All addresses of `host` (a name or an IP literal, IPv6 without
/// brackets), without duplicates, never empty. `localhost` (and any name
/// under it) also has both loopback addresses after what the resolver
/// says, as in curl and browsers (RFC 6761 6.3): many `/etc/hosts` give it
/// only `127.0.0.1`, yet servers listen on `::1` alone.
fn lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let loopback = is_localhost(host);
    let mut addrs: Vec<SocketAddr> = Vec::new();
    let resolved = match (host, port).to_socket_addrs() {
        Ok(resolved) => resolved.collect(),
        Err(_) if loopback => Vec::new(),
        Err(err) => return Err(err),
    };
    let loopbacks = [IpAddr::from(Ipv6Addr::LOCALHOST), IpAddr::from(Ipv4Addr::LOCALHOST)];
    let extra = loopbacks.into_iter().filter(|_| loopback).map(|ip| SocketAddr::new(ip, port));
    for addr in resolved.into_iter().chain(extra) {
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no addresses found"));
    }
    Ok(addrs)
}

/// `localhost`, `LOCALHOST.`, `app.localhost`: the names RFC 6761 keeps
/// for the loopback interface.
fn is_localhost(host: &str) -> bool {
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    /// Over UDP the first address whose port does not refuse is taken: a
    /// server on 127.0.0.1 only refuses nothing there, and 127.0.0.2 (the
    /// same loopback, nothing bound) answers with an ICMP port unreachable.
    #[test]
    fn over_udp_an_address_whose_port_refuses_is_passed_over() {
        let server = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let elsewhere = SocketAddr::from(([127, 0, 0, 2], port));
        let there = SocketAddr::from(([127, 0, 0, 1], port));
        assert_eq!(first_not_refused(&[elsewhere, there]), there);
        // All refuse: the first, for the check to say so.
        drop(server);
        assert_eq!(first_not_refused(&[elsewhere, there]), elsewhere);
        assert_eq!(first_not_refused(&[there]), there);
    }
    use crate::reach::{ConnectTo, Family};

    const TIMEOUT: Duration = Duration::from_secs(2);

    fn target(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    fn resolve(url: &str) -> Result<Vec<Endpoint>, Error> {
        resolve_target(&target(url), &Reach::default(), Probe::Tcp, TIMEOUT, &Stop::never())
    }

    fn setup_error(result: Result<Vec<Endpoint>, Error>) -> String {
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
        assert_eq!(resolve(&format!("http://{addr}/")).unwrap(), [Endpoint::Tcp(addr)]);
    }

    #[test]
    fn ipv6_literals() {
        // Skip quietly where the machine has no IPv6 loopback.
        let Ok(listener) = TcpListener::bind("[::1]:0") else { return };
        let addr = listener.local_addr().unwrap();
        let url = format!("http://[::1]:{}/", addr.port());
        assert_eq!(resolve(&url).unwrap(), [Endpoint::Tcp(addr)]);
    }

    #[test]
    fn localhost_falls_back_to_the_family_that_listens() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://localhost:{port}/");
        let addrs = resolve(&url).unwrap();
        assert!(addrs.iter().all(|a| matches!(a, Endpoint::Tcp(a) if a.is_ipv4())), "{addrs:?}");
    }

    #[test]
    fn nothing_listening() {
        let port = closed_port();
        let message = setup_error(resolve(&format!("http://127.0.0.1:{port}/")));
        assert_eq!(message, format!("unable to connect to 127.0.0.1:{port}: Connection refused"));
    }

    #[test]
    fn unresolvable_host() {
        // RFC 6761: .invalid names never resolve.
        let message = setup_error(resolve("http://nonexistent.invalid/"));
        assert!(message.starts_with("unable to resolve nonexistent.invalid:80: "), "{message}");
        assert!(!message.contains("os error"), "{message}");
    }

    #[test]
    fn shows_ipv6_hosts_in_brackets() {
        let message = setup_error(resolve_target(
            &target("http://[::1]:81/"),
            &Reach { family: Some(Family::V4), ..Reach::default() },
            Probe::Tcp,
            TIMEOUT,
            &Stop::never(),
        ));
        assert_eq!(message, "::1 has no IPv4 address (-4)");
        assert_eq!(host_port("::1", 81), "[::1]:81");
        assert_eq!(host_port("example.com", 443), "example.com:443");
    }

    #[test]
    fn localhost_names() {
        for name in ["localhost", "LocalHost.", "app.localhost"] {
            assert!(is_localhost(name), "{name}");
        }
        for name in ["localhost.example", "notlocalhost", "127.0.0.1"] {
            assert!(!is_localhost(name), "{name}");
        }
        let addrs = lookup("app.localhost", 80).unwrap();
        assert!(addrs.contains(&"[::1]:80".parse().unwrap()), "{addrs:?}");
        assert!(addrs.contains(&"127.0.0.1:80".parse().unwrap()), "{addrs:?}");
    }

    #[test]
    fn localhost_reaches_a_server_on_ipv6_only() {
        // Skip quietly where the machine has no IPv6 loopback (the
        // end-to-end test says so loudly).
        let Ok(listener) = TcpListener::bind("[::1]:0") else { return };
        let addr = listener.local_addr().unwrap();
        let addrs = resolve(&format!("http://localhost:{}/", addr.port())).unwrap();
        assert_eq!(addrs, [Endpoint::Tcp(addr)]);
    }

    #[test]
    fn one_family_only() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let url = target(&format!("http://127.0.0.1:{}/", addr.port()));
        let v4 = Reach { family: Some(Family::V4), ..Reach::default() };
        assert_eq!(
            resolve_target(&url, &v4, Probe::Tcp, TIMEOUT, &Stop::never()).unwrap(),
            [Endpoint::Tcp(addr)]
        );
        let v6 = Reach { family: Some(Family::V6), ..Reach::default() };
        let message = setup_error(resolve_target(&url, &v6, Probe::Tcp, TIMEOUT, &Stop::never()));
        assert_eq!(message, "127.0.0.1 has no IPv6 address (-6)");
    }

    #[test]
    fn connect_to_resolves_the_other_address() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let rule = ConnectTo::parse(&format!("pace.invalid:80:127.0.0.1:{}", addr.port())).unwrap();
        let reach = Reach { connect_to: vec![rule], ..Reach::default() };
        let addrs = resolve_target(
            &target("http://pace.invalid/"),
            &reach,
            Probe::Tcp,
            TIMEOUT,
            &Stop::never(),
        )
        .unwrap();
        assert_eq!(addrs, [Endpoint::Tcp(addr)]);
    }

    #[test]
    fn a_unix_socket_is_checked_not_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let reach = Reach { unix_socket: Some(path.as_path().into()), ..Reach::default() };
        // The URL's host is never looked up.
        let url = target("http://nonexistent.invalid/");
        let message =
            setup_error(resolve_target(&url, &reach, Probe::Tcp, TIMEOUT, &Stop::never()));
        assert_eq!(message, format!("--unix-socket: no such socket: {}", path.display()));
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let endpoints = resolve_target(&url, &reach, Probe::Tcp, TIMEOUT, &Stop::never()).unwrap();
        assert_eq!(endpoints, [Endpoint::Unix(path.as_path().into())]);
    }
}
