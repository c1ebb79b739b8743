//! Where all engine threads wait until every one of them has opened its
//! connections; the last one to arrive fixes the common start time (or a
//! start set beforehand, `--start-at`, when that is later).

use std::sync::{Condvar, Mutex};

use crate::sys;

pub struct StartLine {
    threads: usize,
    /// The earliest start (monotonic ns).
    not_before: Option<u64>,
    state: Mutex<StartState>,
    changed: Condvar,
}

#[derive(Default)]
struct StartState {
    arrived: usize,
    start_ns: Option<u64>,
    aborted: bool,
}

impl StartLine {
    pub fn new(threads: usize, not_before: Option<u64>) -> StartLine {
        StartLine { threads, not_before, state: Mutex::default(), changed: Condvar::new() }
    }

    /// Blocks until all threads arrived and returns the start time (ns),
    /// which may lie ahead, or None if the run was called off before it
    /// started.
    pub fn wait(&self) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.arrived += 1;
        if state.arrived == self.threads {
            state.start_ns = Some(sys::now_ns().max(self.not_before.unwrap_or(0)));
            self.changed.notify_all();
        }
        while state.start_ns.is_none() && !state.aborted {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.start_ns.filter(|_| !state.aborted)
    }

    /// The start time, once the run has started.
    pub fn started(&self) -> Option<u64> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.start_ns.filter(|_| !state.aborted)
    }

    /// Releases the threads already waiting without starting the run.
    pub fn abort(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).aborted = true;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;

    use super::*;

    #[test]
    fn all_threads_get_the_same_start() {
        let line = Arc::new(StartLine::new(3, None));
        let starts: Vec<_> = (0..3)
            .map(|_| {
                let line = line.clone();
                thread::spawn(move || line.wait())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert!(starts[0].is_some());
        assert!(starts.iter().all(|s| *s == starts[0]));
    }

    #[test]
    fn an_aborted_start_releases_the_waiting_threads() {
        let line = Arc::new(StartLine::new(2, None));
        let waiting = {
            let line = line.clone();
            thread::spawn(move || line.wait())
        };
        line.abort();
        assert_eq!(waiting.join().unwrap(), None);
    }
}
