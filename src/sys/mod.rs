//! The only place that talks to the kernel directly: the clocks
//! ([`clock`]), the epoll wrapper ([`poller`]), receive timestamps
//! ([`socket`]), and the process's limits and C stdio.

mod clock;
mod poller;
mod socket;

use std::io;

pub use clock::{
    now_ns, set_minimal_timer_slack, thread_cpu_ns, thread_cpu_wait_ns, wall_clock_of, WallClock,
};
pub use poller::{Interest, Poller, Waited};
pub use socket::{enable_receive_timestamps, recv_stamped};

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
