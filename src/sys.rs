//! The only place that talks to the kernel directly: a thin edge-triggered
//! epoll wrapper with nanosecond timeouts (`epoll_pwait2`), the monotonic
//! clock, and per-thread timer slack.
//!
//! Why not mio: mio rounds every timeout up to whole milliseconds, and the
//! pacing path needs sub-millisecond wake-ups without an extra timerfd
//! syscall per wait.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::event::epoll;
use rustix::event::Timespec;

/// Nanoseconds on the monotonic clock. Every timestamp in pace (intended,
/// sent, completed) uses this clock. Its zero lies an hour before the
/// first call (or at boot, if that is later), so that a plan start set in
/// the recent past (`--start-at`) is still a time on it.
///
/// Read a few times per request, so read plainly: the vDSO's clock and
/// integer nanoseconds, without `Instant`'s checked arithmetic.
#[inline]
pub fn now_ns() -> u64 {
    static BASE: OnceLock<u64> = OnceLock::new();
    let now = clock_ns(rustix::time::ClockId::Monotonic);
    let base = *BASE.get_or_init(|| now.saturating_sub(3_600_000_000_000));
    now.saturating_sub(base)
}

/// `clock`'s time in nanoseconds.
fn clock_ns(clock: rustix::time::ClockId) -> u64 {
    let t = rustix::time::clock_gettime(clock);
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
}

/// The wall-clock time of `ns` on [`now_ns`]'s clock.
pub fn wall_clock_of(ns: u64) -> SystemTime {
    let (now, wall) = (now_ns(), SystemTime::now());
    if ns <= now {
        wall.checked_sub(Duration::from_nanos(now - ns)).unwrap_or(UNIX_EPOCH)
    } else {
        wall + Duration::from_nanos(ns - now)
    }
}

/// CPU time the calling thread has used, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(rustix::time::ClockId::ThreadCPUTime)
}

/// How long the calling thread has been ready to run but waiting for a
/// CPU, in nanoseconds (the run-queue delay of `/proc/thread-self/schedstat`;
/// None where the kernel does not keep it). A VM host's steal time is not
/// in it.
pub fn thread_cpu_wait_ns() -> Option<u64> {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

/// Lets the kernel fire this thread's timers as close to their deadline as
/// it can (the default slack is 50 us, which would show up in every paced
/// send).
pub fn set_minimal_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects
    // the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

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

/// Converts wall-clock stamps (ns since the epoch, as the kernel's receive
/// timestamps are) to this process's monotonic [`now_ns`] scale.
///
/// The offset between the two clocks is measured with care (the read of
/// the wall clock bracketed by two monotonic reads, best of a few tries,
/// so that a preemption between the reads cannot skew it) and kept until
/// [`WallClock::calibrate`] is called again; it only drifts by NTP's slew.
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    /// Wall-clock ns minus monotonic ns.
    offset: i128,
}

impl WallClock {
    pub fn calibrate() -> WallClock {
        let mut best = (u64::MAX, 0i128);
        for _ in 0..5 {
            let before = now_ns();
            let wall = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i128);
            let after = now_ns();
            let spread = after - before;
            if spread < best.0 {
                let middle = (before + spread / 2) as i128;
                best = (spread, wall - middle);
            }
        }
        WallClock { offset: best.1 }
    }

    /// A wall-clock stamp on the monotonic scale, never later than the
    /// present (a calibration error or a step of the wall clock could say
    /// otherwise). `passed` is a time known to be past: the clock (`now`)
    /// is read only for a stamp later than that, which is rare when
    /// `passed` is when the thread learned that data had arrived.
    pub fn to_now_ns(self, wall_ns: u64, passed: u64, now: impl FnOnce() -> u64) -> u64 {
        let mono = (wall_ns as i128 - self.offset).clamp(0, u64::MAX as i128) as u64;
        if mono <= passed {
            mono
        } else {
            mono.min(now())
        }
    }
}

/// Raises this process's soft limit on open files to its hard limit (as
/// Go's runtime does): the soft limit is often 1024 while the hard one
/// allows far more. Returns the limit now in force.
pub fn raise_open_file_limit() -> io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        // An unlimited hard limit is not a valid soft one for open files:
        // the kernel caps descriptors at fs.nr_open.
        let ceiling = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|text| text.trim().parse::<libc::rlim_t>().ok())
            .unwrap_or(1 << 20);
        let raised = libc::rlimit { rlim_cur: limit.rlim_max.min(ceiling), ..limit };
        // SAFETY: setrlimit reads one rlimit struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Ok(limit.rlim_cur)
}

/// Pushes out what Lua (C's stdio) has buffered for stdout, so it comes
/// before what pace prints next, as in wrk where both share one buffer.
pub fn flush_c_stdout() {
    // SAFETY: fflush(NULL) flushes all C output streams; no arguments to
    // get wrong.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
}

/// Which readiness a registration asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    Read,
    ReadWrite,
}

/// One readiness event: the token given at registration and what happened.
#[derive(Clone, Copy, Debug)]
pub struct Ready {
    pub token: u64,
    pub readable: bool,
    pub writable: bool,
    /// Error or hang-up reported by the kernel; reading will tell which.
    pub closed: bool,
}

/// Edge-triggered epoll. A socket is registered once for everything it
/// will ever need; events only fire on changes, so the event loop must read
/// until a short read and write until a short write.
pub struct Poller {
    epoll: OwnedFd,
    events: Vec<epoll::Event>,
}

// SAFETY: the event buffer holds plain data; pace only ever registers u64
// tokens, never pointers, so moving a Poller to another thread moves no
// thread-bound pointer (rustix's EventData is a union that *could* hold one,
// which is why it is not Send by itself).
unsafe impl Send for Poller {}

/// What [`Poller::poll_spinning`] found.
#[derive(Clone, Copy, Debug, Default)]
pub struct Waited {
    /// How many events arrived (read them with [`Poller::ready`]).
    pub events: usize,
    /// How long after the wait began the first one came, when the caller
    /// asked and it had to wait (a blocked wait's includes the wake-up).
    pub first_after: Option<Duration>,
    /// How long it spun before an event came or it blocked: time on the
    /// CPU that was waiting, not work.
    pub spun: Duration,
}

impl Poller {
    pub fn new(capacity: usize) -> io::Result<Poller> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        let empty =
            epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) };
        Ok(Poller { epoll, events: vec![empty; capacity.clamp(16, 1024)] })
    }

    fn flags(interest: Interest) -> epoll::EventFlags {
        let base = epoll::EventFlags::IN | epoll::EventFlags::RDHUP | epoll::EventFlags::ET;
        match interest {
            Interest::Read => base,
            Interest::ReadWrite => base | epoll::EventFlags::OUT,
        }
    }

    pub fn add(&self, fd: impl AsFd, token: u64, interest: Interest) -> io::Result<()> {
        epoll::add(&self.epoll, fd, epoll::EventData::new_u64(token), Self::flags(interest))?;
        Ok(())
    }

    pub fn delete(&self, fd: impl AsFd) {
        // A closed descriptor is removed by the kernel anyway; nothing to do
        // if this fails.
        let _ = epoll::delete(&self.epoll, fd);
    }

    /// Waits for events, at most `timeout` (None = forever), and returns
    /// how many arrived; read them with [`Poller::ready`]. An interrupted
    /// wait returns 0.
    pub fn poll(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        let spec = timeout
            .map(|t| Timespec { tv_sec: t.as_secs() as i64, tv_nsec: t.subsec_nanos() as _ });
        match epoll::wait(&self.epoll, &mut self.events[..], spec.as_ref()) {
            Ok(n) => Ok(n),
            Err(rustix::io::Errno::INTR) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits for events as [`Poller::poll`] does. With `spin` (a thread
    /// that learns how soon its events come), it first spins, polling
    /// without blocking, for up to that long before it blocks for the rest
    /// of `timeout` (a blocked thread's wake-up takes tens of microseconds
    /// on a VM, longer than many responses take), and says how long the
    /// first event took to come.
    pub fn poll_spinning(
        &mut self,
        timeout: Duration,
        spin: Option<Duration>,
    ) -> io::Result<Waited> {
        let Some(spin) = spin.filter(|_| !timeout.is_zero()) else {
            let events = self.poll(Some(timeout))?;
            return Ok(Waited { events, first_after: None, spun: Duration::ZERO });
        };
        let started = Instant::now();
        if !spin.is_zero() {
            let ready = self.poll(Some(Duration::ZERO))?;
            if ready > 0 {
                // Ready at once: no wait to report.
                return Ok(Waited { events: ready, first_after: None, spun: Duration::ZERO });
            }
            while started.elapsed() < spin.min(timeout) {
                // Anything else runnable on this CPU (another pace thread,
                // a server on the same machine) goes first: the spin is
                // only worth it on a CPU that would otherwise idle.
                std::thread::yield_now();
                let events = self.poll(Some(Duration::ZERO))?;
                if events > 0 {
                    let spun = started.elapsed();
                    return Ok(Waited { events, first_after: Some(spun), spun });
                }
            }
        }
        let spun = started.elapsed();
        let events = self.poll(Some(timeout.saturating_sub(spun)))?;
        Ok(Waited { events, first_after: (events > 0).then(|| started.elapsed()), spun })
    }

    /// The `k`-th event of the last [`Poller::poll`].
    pub fn ready(&self, k: usize) -> Ready {
        let event = self.events[k];
        let flags = event.flags;
        Ready {
            token: event.data.u64(),
            readable: flags.intersects(epoll::EventFlags::IN | epoll::EventFlags::PRI),
            writable: flags.contains(epoll::EventFlags::OUT),
            closed: flags.intersects(
                epoll::EventFlags::ERR | epoll::EventFlags::HUP | epoll::EventFlags::RDHUP,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_counts_work_not_sleep() {
        let before = thread_cpu_ns();
        std::thread::sleep(Duration::from_millis(20));
        let slept = thread_cpu_ns() - before;
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        let spun = thread_cpu_ns() - before - slept;
        assert!(slept < 10_000_000, "{slept} ns of CPU for a 20 ms sleep");
        assert!(spun > 1_000_000, "{spun} ns of CPU for a 20 ms spin");
    }

    #[test]
    fn cpu_wait_counts_time_runnable_without_the_cpu() {
        if thread_cpu_wait_ns().is_none() {
            return; // a kernel without schedstats: nothing to read
        }
        // Two threads spin 40 ms on one CPU: each waits while the other
        // runs.
        // SAFETY: sched_getcpu takes no arguments.
        let cpu = unsafe { libc::sched_getcpu() } as usize;
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let spinners: Vec<_> = (0..2)
            .map(|_| {
                let start = start.clone();
                std::thread::spawn(move || {
                    // SAFETY: a zeroed cpu_set_t is an empty set; the call
                    // reads `set` and pins only the calling thread.
                    let pinned = unsafe {
                        let mut set: libc::cpu_set_t = std::mem::zeroed();
                        libc::CPU_SET(cpu, &mut set);
                        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0
                    };
                    start.wait();
                    let before = thread_cpu_wait_ns().unwrap();
                    let started = Instant::now();
                    while started.elapsed() < Duration::from_millis(40) {
                        std::hint::spin_loop();
                    }
                    pinned.then(|| thread_cpu_wait_ns().unwrap() - before)
                })
            })
            .collect();
        let waits: Option<Vec<u64>> =
            spinners.into_iter().map(|spinner| spinner.join().unwrap()).collect();
        // Where threads may not be pinned, they need not share a CPU.
        let Some(waits) = waits else { return };
        let waited: u64 = waits.iter().sum();
        assert!(waited > 10_000_000, "{waited} ns waiting for a shared CPU");
    }

    #[test]
    fn clock_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }

    #[test]
    fn receive_timestamps_come_with_the_data() {
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

    #[test]
    fn a_spinning_wait_says_how_long_the_first_event_took() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let mut p = Poller::new(8).unwrap();
        p.add(&server, 7, Interest::Read).unwrap();
        // Nothing comes: the spin and then the block end at the timeout.
        let timeout = Duration::from_millis(100);
        let started = Instant::now();
        let quiet = p.poll_spinning(timeout, Some(Duration::from_millis(1))).unwrap();
        assert_eq!((quiet.events, quiet.first_after), (0, None));
        assert!(started.elapsed() >= timeout);
        // It spun its 1 ms (more if it was preempted), not the blocked rest.
        let spun = quiet.spun;
        assert!(spun >= Duration::from_millis(1) && spun < timeout / 2, "spun {spun:?}");
        // Data written meanwhile ends the wait, spun or blocked, with its
        // event and how long it took to come.
        for spin in [Duration::from_secs(10), Duration::ZERO] {
            let waited = std::thread::scope(|scope| {
                scope.spawn(|| (&client).write_all(b"x").unwrap());
                p.poll_spinning(Duration::from_secs(10), Some(spin)).unwrap()
            });
            assert_eq!(waited.events, 1);
            assert!(p.ready(0).readable && p.ready(0).token == 7);
            assert!(waited.first_after.is_some_and(|d| d < Duration::from_secs(10)));
            // A spin that found the event spun as long as it took to come.
            assert!(waited.spun <= waited.first_after.unwrap());
            std::io::Read::read(&mut &server, &mut [0u8; 8]).unwrap();
        }
        // Ready at once, or a caller that does not learn: nothing to report.
        for spin in [Some(Duration::from_secs(10)), None] {
            client.write_all(b"y").unwrap();
            let ready = p.poll_spinning(Duration::from_secs(10), spin).unwrap();
            assert_eq!((ready.events, ready.first_after, ready.spun), (1, None, Duration::ZERO));
            std::io::Read::read(&mut &server, &mut [0u8; 8]).unwrap();
        }
    }

    #[test]
    fn a_stamp_is_converted_without_a_clock_read_unless_it_is_later_than_known() {
        let clock = WallClock { offset: 1_000 };
        let unread = || panic!("the clock was read for a stamp known to be past");
        assert_eq!(clock.to_now_ns(5_000, 4_000, unread), 4_000);
        assert_eq!(clock.to_now_ns(500, 4_000, unread), 0);
        // Later than what is known to be past: never later than the present.
        assert_eq!(clock.to_now_ns(9_000, 4_000, || 6_000), 6_000);
        assert_eq!(clock.to_now_ns(9_000, 4_000, || 9_000), 8_000);
    }

    /// A 200 us timeout must not be rounded up to a whole millisecond (as
    /// mio and `epoll_wait` do). One wait can always take longer on a busy
    /// machine (preemption, a late wake-up), but with rounding *every*
    /// wait takes at least 1 ms: so the shortest of many waits shows the
    /// resolution, and only rounding can push it to 1 ms or more.
    #[test]
    fn short_timeout_is_sub_millisecond() {
        set_minimal_timer_slack();
        let mut p = Poller::new(8).unwrap();
        let timeout = Duration::from_micros(200);
        let mut shortest = Duration::MAX;
        let mut waits = Vec::new();
        for _ in 0..200 {
            let start = Instant::now();
            let n = p.poll(Some(timeout)).unwrap();
            let waited = start.elapsed();
            assert_eq!(n, 0);
            shortest = shortest.min(waited);
            waits.push(waited);
            // 20 waits well under a millisecond are proof enough.
            if waits.iter().filter(|w| **w < Duration::from_micros(900)).count() >= 20 {
                break;
            }
        }
        assert!(
            shortest < Duration::from_micros(900),
            "the shortest of {} waits of {timeout:?} took {shortest:?}: rounded to milliseconds?",
            waits.len()
        );
    }
}
