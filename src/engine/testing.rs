//! For the engine's unit tests: a recorder that measures from time 0 and
//! what a protocol delivers to, as the connection layer holds them.

use std::collections::VecDeque;

use super::protocol::{CapturedResponse, Delivery, Protocol, Retry, Ticket, Verdict};
use super::recorder::Recorder;
use crate::stats::Stats;

/// What a protocol has delivered, and the recorder it recorded into.
pub struct Delivered<W> {
    pub recorder: Recorder,
    pub responses: Vec<CapturedResponse>,
    pub tickets: Vec<Ticket>,
    pub retries: VecDeque<Retry<W>>,
}

impl<W> Delivered<W> {
    /// A recorder of a closed-loop run measured from time 0, with nothing
    /// delivered yet.
    pub fn new() -> Delivered<W> {
        let recorder = Recorder::measuring_from_zero();
        Delivered { recorder, responses: Vec::new(), tickets: Vec::new(), retries: VecDeque::new() }
    }

    /// Runs `operation` on `protocol` (connection 0) with a delivery into
    /// this.
    pub fn on<P: Protocol<Wire = W>>(
        &mut self,
        protocol: &mut P,
        operation: impl FnOnce(&mut P, &mut Delivery<W>) -> Verdict,
    ) -> Verdict {
        let mut out = Delivery::new(
            &mut self.recorder,
            &mut self.responses,
            &mut self.tickets,
            &mut self.retries,
            0,
        );
        operation(protocol, &mut out)
    }

    /// What the recorder measured.
    pub fn stats(&self) -> &Stats {
        self.recorder.stats()
    }
}
