//! The link of a protocol over datagrams that owns its TLS (QUIC, for
//! HTTP/3): a UDP socket connected to the server, so that the kernel
//! delivers only the server's datagrams to it and reports an ICMP port
//! unreachable as an error of the socket. Its set-up is the socket's
//! alone (QUIC's handshake is the protocol's); each read is one datagram,
//! stamped with the kernel's arrival time, and each write one datagram.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::link::{Link, Refused, SetUpTimes};
use super::origin::Origin;
use crate::endpoint::Endpoint;
use crate::error::io_reason;
use crate::sys;

pub struct DatagramLink {
    socket: Socket,
    port: u16,
    /// An ICMP port unreachable was reported, and is said once the
    /// datagrams that arrived before it are read.
    refused: bool,
}

impl DatagramLink {
    /// What the socket's error means here: a refused "connection" is the
    /// ICMP port unreachable the kernel turned into ECONNREFUSED.
    fn error(&self, e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::ConnectionRefused {
            return io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("nothing listening on UDP port {} (ICMP port unreachable)", self.port),
            );
        }
        e
    }
}

impl Link for DatagramLink {
    fn connect(endpoint: &Endpoint, _origin: &Origin) -> Result<DatagramLink, Refused> {
        let Endpoint::Tcp(addr) = endpoint else {
            return Err(Refused::Failed(format!(
                "{endpoint}: QUIC runs over UDP, not a Unix socket"
            )));
        };
        let failed =
            |e: io::Error| Refused::Failed(format!("UDP socket to {addr}: {}", io_reason(&e)));
        let socket = Socket::new(Domain::for_address(*addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(failed)?;
        socket.set_nonblocking(true).map_err(failed)?;
        // Best effort, as over TCP: without stamps, arrival falls back to
        // the clock at read time.
        let _ = sys::enable_receive_timestamps(&socket);
        socket.connect(&SockAddr::from(*addr)).map_err(failed)?;
        Ok(DatagramLink { socket, port: addr.port(), refused: false })
    }

    fn advance(&mut self, _origin: &Origin, _writable: bool) -> Result<bool, String> {
        Ok(true)
    }

    fn timed_out(&self, _origin: &Origin) -> String {
        "no answer from the server".to_string()
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }

    fn set_up_times(&self) -> SetUpTimes {
        SetUpTimes::default()
    }

    fn tls(&self) -> bool {
        false
    }

    fn alpn(&self) -> Option<Vec<u8>> {
        None
    }

    /// One datagram. An empty one is skipped: a read of 0 bytes means a
    /// closed link to the connection layer, and UDP has no close. The
    /// kernel reports an ICMP port unreachable before the datagrams still
    /// queued (a server's CONNECTION_CLOSE, sent just before it went): it
    /// is said only once they are read, so that the server's own words
    /// come first.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        loop {
            match sys::recv_stamped(&self.socket, buf) {
                Ok((0, _)) => continue,
                Ok(read) => return Ok(read),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => self.refused = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.refused => {
                    self.refused = false;
                    return Err(self.error(io::ErrorKind::ConnectionRefused.into()));
                }
                Err(e) => return Err(self.error(e)),
            }
        }
    }

    /// A datagram shorter than the buffer says nothing of the next one.
    fn short_read_drains(&self) -> bool {
        false
    }

    /// All of `data` as one datagram, or nothing (`WouldBlock` when the
    /// socket's send buffer is full).
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.socket.send(data).map_err(|e| self.error(e))
    }

    fn flush(&mut self) -> io::Result<bool> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use std::net::{SocketAddr, UdpSocket};
    use std::time::{Duration, Instant};

    use super::*;

    /// The origin is QUIC's business, not the link's: any will do.
    fn origin() -> Origin {
        Origin {
            target: crate::target::Target::parse("https://localhost/").unwrap(),
            endpoint: Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], 443))),
            tls: None,
            tunnel: None,
            allowed_streams: None,
        }
    }

    fn link_to(addr: SocketAddr) -> DatagramLink {
        let mut link = DatagramLink::connect(&Endpoint::Tcp(addr), &origin()).ok().unwrap();
        assert_eq!(link.advance(&origin(), false), Ok(true), "set up at once");
        link
    }

    /// Reads one datagram, waiting for it (a few ms on loopback).
    fn read(link: &mut DatagramLink, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match link.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "no datagram");
                    std::thread::sleep(Duration::from_millis(1));
                }
                other => return other,
            }
        }
    }

    #[test]
    fn datagrams_go_both_ways_one_a_read_and_empty_ones_are_skipped() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut link = link_to(server.local_addr().unwrap());
        assert!(!link.tls() && link.alpn().is_none());
        assert_eq!(link.write(b"hello").unwrap(), 5);
        let mut buf = [0u8; 64];
        let (n, client) = server.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        server.send_to(b"", client).unwrap();
        server.send_to(b"one", client).unwrap();
        server.send_to(b"two", client).unwrap();
        let (n, _) = read(&mut link, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"one", "the empty datagram skipped, one datagram a read");
        let (n, _) = read(&mut link, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"two");
        assert_eq!(link.read(&mut buf).unwrap_err().kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn each_datagram_carries_its_arrival_stamp() {
        let _timing = crate::timing::lock();
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut link = link_to(server.local_addr().unwrap());
        link.write(b"?").unwrap();
        let mut buf = [0u8; 64];
        let (_, client) = server.recv_from(&mut buf).unwrap();
        // The kernel turns stamping on through deferred work (see
        // sys::socket's test): wait until a datagram comes stamped.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            server.send_to(b"?", client).unwrap();
            if read(&mut link, &mut buf).unwrap().1.is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "no receive timestamps after 10 s");
        }
        // Stamped on arrival, not when read 20 ms later: the stamp is no
        // earlier than the send (1 ms for the clocks' conversion) and 10 ms
        // or more before the read. On a loaded machine the kernel's softirq
        // that stamps loopback datagrams can itself run late: one try in
        // five is enough, a stamp taken at the read would fail them all.
        let wall = sys::WallClock::calibrate();
        let mut tries = Vec::new();
        for _ in 0..5 {
            let before = sys::now_ns();
            server.send_to(b"late", client).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            let (n, stamp) = link.read(&mut buf).unwrap();
            let read_at = sys::now_ns();
            assert_eq!(&buf[..n], b"late");
            let arrived = wall.to_now_ns(stamp.expect("a stamp"), read_at, sys::now_ns);
            assert!(arrived + 1_000_000 >= before, "stamped {arrived}, sent from {before}");
            if arrived + 10_000_000 <= read_at {
                return;
            }
            tries.push(read_at - arrived);
        }
        panic!("stamped only this long before the read (ns): {tries:?}");
    }

    #[test]
    fn nothing_listening_is_said_not_waited_for() {
        // A port that was just free: the kernel answers with ICMP port
        // unreachable, which the connected socket reports.
        let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut link = link_to(SocketAddr::from(([127, 0, 0, 1], port)));
        link.write(b"anyone?").unwrap();
        let mut buf = [0u8; 64];
        let e = read(&mut link, &mut buf).unwrap_err();
        assert_eq!(
            io_reason(&e),
            format!("nothing listening on UDP port {port} (ICMP port unreachable)")
        );
    }

    #[test]
    fn a_unix_socket_cannot_carry_quic() {
        let endpoint = Endpoint::Unix(std::path::Path::new("/run/app.sock").into());
        let Err(Refused::Failed(why)) = DatagramLink::connect(&endpoint, &origin()) else {
            panic!("a Unix socket was taken")
        };
        assert_eq!(why, "unix:/run/app.sock: QUIC runs over UDP, not a Unix socket");
    }
}
