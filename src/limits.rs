//! What the machine allows a run, checked before it starts: enough open
//! files for every connection (the soft limit is raised to the hard one
//! first), and a word when the thread count is far beyond the cores.

use std::thread;

use crate::config::BenchConfig;
use crate::error::{io_reason, Error};
use crate::sys;

/// Descriptors a run needs besides its connections: stdio, the resolver's
/// test connections, the TLS check, output files, Lua's files, and one
/// epoll instance per thread (added separately).
const SPARE_FILES: u64 = 32;

/// Threads per core beyond which a run only adds switching and memory.
const THREADS_PER_CORE: usize = 4;

/// Raises the open-file limit and refuses a run that cannot open its
/// connections (instead of thousands of "Too many open files" errors);
/// warns on stderr about threads far beyond the cores.
pub fn check(cfg: &BenchConfig) -> Result<(), Error> {
    let needed = cfg.connections as u64 + cfg.threads as u64 + SPARE_FILES;
    let allowed = sys::raise_open_file_limit()
        .map_err(|e| Error::Setup(format!("cannot read the open-file limit: {}", io_reason(&e))))?;
    if needed > allowed {
        return Err(Error::Setup(format!(
            "-c {} needs about {needed} open files, but this process may open at most {allowed}: \
             raise the limit (ulimit -n {needed}; beyond the hard limit as root or in \
             /etc/security/limits.conf) or use fewer connections",
            cfg.connections
        )));
    }
    if let Ok(cores) = thread::available_parallelism() {
        let cores = cores.get();
        if cfg.threads > THREADS_PER_CORE * cores {
            eprintln!(
                "pace: warning: {} threads on {cores} CPU cores: each thread drives many \
                 connections, so threads beyond the cores add switching and memory, not load \
                 (-t {cores} uses every core)",
                cfg.threads
            );
        }
    }
    Ok(())
}
