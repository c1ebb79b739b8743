//! A test server that notes when each request arrives: for checking on
//! the server's side what plan pace sends (evenly, randomly, in stages).
//! One thread per connection; every request gets an empty 200. The time of
//! arrival is the kernel's receive stamp of the packet (SO_TIMESTAMPNS),
//! so the server's own scheduling on a busy machine does not blur it.
//!
//! Each test binary that includes this uses only part of it.
#![allow(dead_code)]

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

pub struct ArrivalServer {
    addr: SocketAddr,
    /// Wall-clock nanoseconds, and who sent the request.
    arrivals: Arc<Mutex<Vec<(u64, IpAddr)>>>,
    stop: Arc<AtomicBool>,
}

impl ArrivalServer {
    pub fn start() -> ArrivalServer {
        ArrivalServer::on(TcpListener::bind("127.0.0.1:0").expect("bind"))
    }

    /// Serves on `listener` (bound wherever the caller chose).
    pub fn on(listener: TcpListener) -> ArrivalServer {
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (noted, stopping) = (arrivals.clone(), stop.clone());
        thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, peer)) => {
                        let (noted, stopping) = (noted.clone(), stopping.clone());
                        thread::spawn(move || serve(stream, peer.ip(), &noted, &stopping));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        ArrivalServer { addr, arrivals, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// When each request arrived, in order, in seconds from the first.
    pub fn arrivals(&self) -> Vec<f64> {
        self.arrivals_from().into_iter().map(|(t, _)| t).collect()
    }

    /// When the first request arrived, by the wall clock (ns since the
    /// Unix epoch).
    pub fn first_arrival_unix_ns(&self) -> Option<u64> {
        self.arrivals.lock().unwrap().iter().map(|&(t, _)| t).min()
    }

    /// [`ArrivalServer::arrivals`] with the address each came from.
    pub fn arrivals_from(&self) -> Vec<(f64, IpAddr)> {
        let mut arrivals = self.arrivals.lock().unwrap().clone();
        arrivals.sort_unstable();
        let Some(&(first, _)) = arrivals.first() else { return Vec::new() };
        arrivals.iter().map(|&(t, peer)| ((t - first) as f64 / 1e9, peer)).collect()
    }
}

impl Drop for ArrivalServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads requests (heads without bodies) and answers each as it arrives.
fn serve(
    mut stream: TcpStream,
    peer: IpAddr,
    noted: &Mutex<Vec<(u64, IpAddr)>>,
    stopping: &AtomicBool,
) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let on: libc::c_int = 1;
    // SAFETY: a plain integer option on a socket we own.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    let mut pending = Vec::new();
    let mut buf = [0u8; 4096];
    while !stopping.load(Ordering::Relaxed) {
        let (n, stamp) = match receive(&stream, &mut buf) {
            Ok((0, _)) => return,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return,
        };
        let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        let now = stamp.unwrap_or_else(|| wall.map_or(0, |d| d.as_nanos() as u64));
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            noted.lock().unwrap().push((now, peer));
            if stream.write_all(RESPONSE).is_err() {
                return;
            }
        }
    }
}

/// `read`, with the kernel's receive stamp of the data (wall-clock ns).
fn receive(stream: &TcpStream, buf: &mut [u8]) -> std::io::Result<(usize, Option<u64>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; the pointers set below live
    // through the call, and the control messages are walked within bounds.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        let n = libc::recvmsg(stream.as_raw_fd(), &mut msg, 0);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut stamp = None;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        Ok((n as usize, stamp))
    }
}
