//! Socket options the engine needs that std does not offer: the kernel's
//! receive timestamps, and reads that return them.

use std::io;
use std::os::fd::AsRawFd;

/// Asks the kernel to stamp every packet received on `socket` with its
/// arrival time (`SO_TIMESTAMPNS`), so a response's completion time does
/// not depend on when the thread got around to reading it.
pub fn enable_receive_timestamps(socket: &impl AsRawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a plain integer option on a socket descriptor we own.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads from a socket like `read`, and returns with the byte count the
/// kernel's arrival stamp of the last packet read (wall-clock ns), if
/// receive timestamps are on ([`enable_receive_timestamps`]).
pub fn recv_stamped(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one timestamp control message, aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; the pointers set below stay
    // alive for the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // The system call itself, not libc's recvmsg: that one is a thread
    // cancellation point, and switching cancellation off and on around
    // every read cost about 30 ns, with as much again around every send.
    // SAFETY: msg points to valid buffers of the declared sizes.
    let n = unsafe { libc::syscall(libc::SYS_recvmsg, socket.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled,
    // within msg_controllen; the timestamp is read unaligned.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    use crate::sys::{now_ns, WallClock};

    #[test]
    fn receive_timestamps_come_with_the_data() {
        let _timing = crate::timing::lock();
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        enable_receive_timestamps(&server).unwrap();
        // The kernel turns stamping on for the first socket that asks
        // through deferred work (a workqueue, slow on a loaded machine):
        // until then packets arrive unstamped (pace falls back to the
        // clock for those). Wait until a packet comes stamped.
        let mut buf = [0u8; 16];
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            client.write_all(b"?").unwrap();
            let (n, stamp) = recv_stamped(&server, &mut buf).unwrap();
            assert_eq!(&buf[..n], b"?");
            if stamp.is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "no receive timestamps after 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        let before = now_ns();
        client.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let (n, stamp) = recv_stamped(&server, &mut buf).unwrap();
        let read_at = now_ns();
        assert_eq!(&buf[..n], b"hello");
        let arrived =
            WallClock::calibrate().to_now_ns(stamp.expect("a timestamp"), read_at, now_ns);
        // Stamped on arrival (on loopback, during the sender's write), not
        // when read at least 20 ms later; 1 ms allows for the conversion
        // between the clocks, 10 ms for a late softirq.
        assert!(arrived + 1_000_000 >= before, "stamped {arrived}, written from {before}");
        assert!(arrived + 10_000_000 <= read_at, "stamped {arrived}, read at {read_at}");
    }
}
