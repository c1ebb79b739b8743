//! The check before an HTTP/3 run: one whole QUIC handshake with the
//! server, blocking, within a deadline, so that what would fail every
//! connection (nothing listening on the UDP port, a certificate pace does
//! not trust, a server without h3) is said once, in words, before the run.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

use super::connection::{Connection, Event};
use crate::blocking::{ended, Deadline};
use crate::error::io_reason;

/// Completes a handshake with `server` as `server_name` over `config`;
/// Err: why not, in words.
pub fn handshake(
    config: quinn_proto::ClientConfig,
    server: SocketAddr,
    server_name: &str,
    deadline: &Deadline,
) -> Result<(), String> {
    let failed = |e: io::Error| format!("UDP socket to {server}: {}", io_reason(&e));
    let local: SocketAddr = match server {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => ([0u16; 8], 0).into(),
    };
    let socket = UdpSocket::bind(local).map_err(failed)?;
    socket.connect(server).map_err(failed)?;
    let mut connection = Connection::connect(config, server, server_name, false, Instant::now())?;
    let mut datagram = Vec::new();
    let mut buf = vec![0; 64 * 1024];
    loop {
        while connection.transmit(Instant::now(), &mut datagram).is_some() {
            socket.send(&datagram).map_err(|e| in_words(&e, server))?;
        }
        while let Some(event) = connection.poll() {
            match event {
                Event::Connected => {
                    // Said goodbye to, so the server does not keep it.
                    connection.close(Instant::now());
                    while connection.transmit(Instant::now(), &mut datagram).is_some() {
                        let _ = socket.send(&datagram);
                    }
                    return Ok(());
                }
                Event::Closed { reason } if reason.contains("invalid peer certificate") => {
                    return Err(format!(
                        "{reason}: pace does not trust the server's certificate (give --cacert \
                         with the CA that signed it, or -k to accept any)"
                    ))
                }
                Event::Closed { reason } => return Err(reason),
                _ => {}
            }
        }
        let mut wait = deadline.next_wait().map_err(|e| match ended(&e) {
            Some(end) => {
                format!("no QUIC handshake with {server}: {end} after {:?}", deadline.within())
            }
            None => io_reason(&e),
        })?;
        if let Some(at) = connection.timeout() {
            wait = wait.min(at.saturating_duration_since(Instant::now()));
        }
        socket
            .set_read_timeout(Some(wait.max(std::time::Duration::from_micros(1))))
            .map_err(failed)?;
        match socket.recv(&mut buf) {
            Ok(n) => connection.receive(Instant::now(), &buf[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if connection.timeout().is_some_and(|at| at <= Instant::now()) {
                    connection.on_timeout(Instant::now());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(in_words(&e, server)),
        }
    }
}

/// A socket error: an ICMP port unreachable means nothing listens there.
fn in_words(e: &io::Error, server: SocketAddr) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => format!(
            "nothing listening on UDP port {} of {} (ICMP port unreachable)",
            server.port(),
            server.ip()
        ),
        _ => io_reason(e),
    }
}
