//! What the threads of a run send: the contract between what makes the
//! requests and the engine that sends them. Below both: the requests of
//! the command line and of a targets file (`crate::requests`) and the Lua
//! scripts (`crate::script`) are made into a [`Workload`] here, and the
//! engine takes any workload without knowing which made it.
//!
//! The requests are protocol-neutral ([`Request`]); the engine's protocol
//! encodes them, once per batch.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::endpoint::Endpoint;
use crate::plan::random::Draws;
use crate::request::Request;

/// One write's worth of requests: one, or several for pipelining (the
/// write waits for that many responses), to one origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub requests: Arc<[Request]>,
    /// Which target of a targets file the batch is (for the per-target
    /// breakdown; 0 otherwise).
    pub target: u32,
    /// Which origin it goes to (`crate::config::origins::Origins`; 0 but
    /// with a targets file naming several).
    pub origin: u32,
}

impl Batch {
    /// A batch of `requests` (at least one).
    pub fn new(requests: impl Into<Arc<[Request]>>) -> Batch {
        Batch { requests: requests.into(), target: 0, origin: 0 }
    }

    /// The batch as target `target` of a targets file, to origin `origin`.
    pub fn routed(mut self, target: usize, origin: usize) -> Batch {
        (self.target, self.origin) = (target as u32, origin as u32);
        self
    }
}

/// The order in which a thread sends a list of batches.
#[derive(Clone, Copy, Debug)]
pub enum Order {
    /// In turn, from the thread's first.
    Sequential,
    /// Each drawn at random (uniformly, with replacement) from this
    /// stream of random numbers.
    Random(Draws),
}

/// What one engine thread sends.
pub enum Requests<S> {
    /// Requests made before the run (the command line, a targets file):
    /// the same `batches` for every thread (in the file's order, each
    /// knowing its origin), sent from the thread's `first` in turn, or
    /// drawn at random. The first origin's connections go to `endpoint`.
    Fixed { batches: Arc<[Batch]>, origins: usize, first: usize, order: Order, endpoint: Endpoint },
    /// A script that makes each request, as HTTP/1.1 text whose requests
    /// are HEAD or not as `heads` says (every batch has the depth and HEAD
    /// flags of the script's first, as in wrk).
    Scripted { script: S, heads: Arc<[bool]> },
    /// Requests made one at a time during the run, each new (gRPC calls
    /// whose message a template makes), all to `endpoint`.
    Made { maker: Box<dyn MakeRequests>, endpoint: Endpoint },
}

/// Makes each request of a thread as it is sent, without a script.
pub trait MakeRequests: Send + 'static {
    /// The next batch (one request), for the connection numbered
    /// `connection` in its thread. Err: it could not be made, in words
    /// (the run stops).
    fn next(&mut self, connection: usize) -> Result<Batch, String>;
}

/// What the threads of a run send: one [`Requests`] each.
pub struct Workload<S> {
    pub threads: Vec<Requests<S>>,
}

/// A script that makes one engine thread's requests (wrk's Lua API:
/// `request()`, `response()`, `delay()`, `thread:stop()`, `thread.addr`).
pub trait Scripted: Send + 'static {
    /// Stops a call of the script that does not return, from another
    /// thread.
    type Interrupter: Interrupt;

    /// The next request batch, as HTTP/1.1 text; None when the script
    /// gave none.
    fn request(&mut self) -> Result<Option<Arc<[u8]>>, ScriptError>;

    /// The script wants each complete response ([`Scripted::response`]).
    fn wants_responses(&self) -> bool;

    /// A complete response: its status, header fields and body.
    fn response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), ScriptError>;

    /// How long a connection waits before its next request.
    fn delay(&mut self) -> Result<Duration, ScriptError>;

    /// The script asked this thread to send nothing more.
    fn stop_requested(&self) -> bool;

    /// Where the thread's next connection goes.
    fn endpoint(&self) -> Endpoint;

    fn interrupter(&self) -> Self::Interrupter;
}

/// Stops a script's call that does not return, from another thread.
pub trait Interrupt: Send + 'static {
    /// Makes the running call fail.
    fn interrupt(&self);
    /// Takes back an interruption that found no call running.
    fn withdraw(&self);
    /// The script function running now, by name (`response()`), if one is.
    fn running(&self) -> Option<&'static str>;
}

/// A script call failed, in words (file, line, what went wrong). The run
/// stops; the report of what was measured is still printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError(pub String);

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

/// The script of a workload that has none: there is no value of it.
pub enum NoScript {}

impl Scripted for NoScript {
    type Interrupter = NoScript;

    fn request(&mut self) -> Result<Option<Arc<[u8]>>, ScriptError> {
        match *self {}
    }

    fn wants_responses(&self) -> bool {
        match *self {}
    }

    fn response(&mut self, _: u16, _: &[(String, String)], _: &[u8]) -> Result<(), ScriptError> {
        match *self {}
    }

    fn delay(&mut self) -> Result<Duration, ScriptError> {
        match *self {}
    }

    fn stop_requested(&self) -> bool {
        match *self {}
    }

    fn endpoint(&self) -> Endpoint {
        match *self {}
    }

    fn interrupter(&self) -> NoScript {
        match *self {}
    }
}

impl Interrupt for NoScript {
    fn interrupt(&self) {
        match *self {}
    }

    fn withdraw(&self) {
        match *self {}
    }

    fn running(&self) -> Option<&'static str> {
        match *self {}
    }
}
