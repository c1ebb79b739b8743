//! A thin edge-triggered epoll wrapper with nanosecond timeouts
//! (`epoll_pwait2`), which can spin briefly before it blocks.
//!
//! Why not mio: mio rounds every timeout up to whole milliseconds, and the
//! pacing path needs sub-millisecond wake-ups without an extra timerfd
//! syscall per wait.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::event::Timespec;

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

    use crate::sys::set_minimal_timer_slack;

    #[test]
    fn a_spinning_wait_says_how_long_the_first_event_took() {
        let _timing = crate::timing::lock();
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

    /// A 200 us timeout must not be rounded up to a whole millisecond (as
    /// mio and `epoll_wait` do). One wait can always take longer on a busy
    /// machine (preemption, a late wake-up), but with rounding *every*
    /// wait takes at least 1 ms: so the shortest of many waits shows the
    /// resolution, and only rounding can push it to 1 ms or more.
    #[test]
    fn short_timeout_is_sub_millisecond() {
        let _timing = crate::timing::lock();
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
