//! What an engine thread sends: the same bytes every time, or what the
//! thread's Lua state says (`request()`, `response()`, `delay()`,
//! `thread:stop()`, `thread.addr`). The worker asks the source and never
//! looks at which one it is.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::http::response::Captured;
use crate::script::{Interrupter, ScriptError, ThreadScript};

pub enum RequestSource {
    /// The same request batch every time (no script).
    Fixed { request: Arc<[u8]>, addr: SocketAddr },
    /// A Lua state per thread.
    Script(Box<ThreadScript>),
}

impl RequestSource {
    /// The bytes of the next request batch.
    #[inline]
    pub fn next_request(&mut self) -> Result<Arc<[u8]>, ScriptError> {
        match self {
            RequestSource::Fixed { request, .. } => Ok(request.clone()),
            RequestSource::Script(script) => script.request(),
        }
    }

    /// Responses must be captured (headers and body) for the script.
    pub fn wants_responses(&self) -> bool {
        matches!(self, RequestSource::Script(script) if script.has_response())
    }

    /// A complete response, for the script's `response()`.
    pub fn on_response(&mut self, status: u16, captured: &Captured) -> Result<(), ScriptError> {
        match self {
            RequestSource::Fixed { .. } => Ok(()),
            RequestSource::Script(script) => {
                script.response(status, &captured.headers, &captured.body)
            }
        }
    }

    /// How long a connection waits before its next request (the script's
    /// `delay()`; zero without one).
    #[inline]
    pub fn delay(&mut self) -> Result<Duration, ScriptError> {
        match self {
            RequestSource::Fixed { .. } => Ok(Duration::ZERO),
            RequestSource::Script(script) => script.delay(),
        }
    }

    /// The script called `thread:stop()`: this thread sends no more.
    pub fn stopped(&self) -> bool {
        matches!(self, RequestSource::Script(script) if script.stop_requested())
    }

    /// Where the next connection goes (`thread.addr` may change it).
    pub fn addr(&self) -> SocketAddr {
        match self {
            RequestSource::Fixed { addr, .. } => *addr,
            RequestSource::Script(script) => script.addr(),
        }
    }

    /// Stops a Lua call that does not return, from another thread.
    pub fn interrupter(&self) -> Option<Interrupter> {
        match self {
            RequestSource::Fixed { .. } => None,
            RequestSource::Script(script) => Some(script.interrupter()),
        }
    }

    /// The thread's Lua state, handed back for `done()`.
    pub fn into_script(self) -> Option<ThreadScript> {
        match self {
            RequestSource::Fixed { .. } => None,
            RequestSource::Script(script) => Some(*script),
        }
    }
}
