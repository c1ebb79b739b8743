//! What a protocol hands back to the connection layer as it reads: the
//! responses it completed (to the recorder, and to the script when it
//! wants them), the stream slots that became free (tickets for the
//! schedule), requests to send again elsewhere, and what to do with the
//! connection.

use std::borrow::Cow;
use std::collections::VecDeque;

use crate::engine::conn::{Exchange, Ticket};
use crate::engine::recorder::Recorder;
use crate::engine::source::Batch;
use crate::http::response::Captured;
use crate::stats::ErrorKind;

/// A complete response the script wants to see.
pub struct CapturedResponse {
    pub status: u16,
    pub captured: Captured,
}

/// A request a server did not process (above the last stream id of its
/// GOAWAY), to go again on another connection: its latency still counts
/// from its intended time.
#[derive(Clone, Debug)]
pub struct Retry {
    pub batch: Batch,
    /// Which request of the batch.
    pub index: usize,
    pub intended: u64,
    pub batch_intended: u64,
}

/// What to do with the connection after a read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// Close it and open a new one at once (the server ended it cleanly).
    Close,
    /// Count this error, close it, and reopen it after the back-off.
    Fail(ErrorKind, Cow<'static, str>),
}

impl Verdict {
    pub fn fail(kind: ErrorKind, cause: impl Into<Cow<'static, str>>) -> Verdict {
        Verdict::Fail(kind, cause.into())
    }
}

/// Where a protocol delivers what it read on connection `conn`.
pub struct Delivery<'a> {
    pub recorder: &'a mut Recorder,
    responses: &'a mut Vec<CapturedResponse>,
    ready: &'a mut Vec<Ticket>,
    retries: &'a mut VecDeque<Retry>,
    conn: usize,
    /// A batch completed: the connection's run of failures is over.
    pub succeeded: bool,
}

impl<'a> Delivery<'a> {
    pub fn new(
        recorder: &'a mut Recorder,
        responses: &'a mut Vec<CapturedResponse>,
        ready: &'a mut Vec<Ticket>,
        retries: &'a mut VecDeque<Retry>,
        conn: usize,
    ) -> Delivery<'a> {
        Delivery { recorder, responses, ready, retries, conn, succeeded: false }
    }

    /// A response of `exchange` arrived at `arrived`; `last_of_batch` when
    /// it is its batch's last.
    #[inline]
    pub fn response(
        &mut self,
        exchange: Exchange,
        arrived: u64,
        status: u16,
        last_of_batch: bool,
        captured: Option<Captured>,
    ) {
        self.recorder.response(exchange, arrived, status, last_of_batch);
        if let Some(captured) = captured {
            self.responses.push(CapturedResponse { status, captured });
        }
    }

    /// The connection can carry a batch from `since` on (its readiness
    /// number `serial`, see [`Ticket`]).
    #[inline]
    pub fn ready(&mut self, serial: u32, since: u64) {
        self.ready.push(Ticket { conn: self.conn, serial, since });
    }

    /// A request was lost on this connection.
    pub fn error(&mut self, kind: ErrorKind, cause: &str) {
        self.recorder.error(kind, cause);
    }

    /// A request to send again on another connection.
    pub fn retry(&mut self, retry: Retry) {
        self.retries.push_back(retry);
    }

    /// A batch completed.
    #[inline]
    pub fn succeeded(&mut self) {
        self.succeeded = true;
    }
}
