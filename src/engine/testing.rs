//! For the engine's unit tests: a recorder that measures from time 0 and
//! what a protocol delivers to, as the connection layer holds them.

use std::collections::VecDeque;
use std::sync::mpsc;

use super::protocol::{CapturedResponse, Delivery, Protocol, Retry, Ticket, Verdict};
use super::recorder::{PeriodChannel, Recorder, RecorderSetup};
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
        let (to_collector, _) = mpsc::channel();
        let (_, recycled) = mpsc::channel();
        let mut recorder = Recorder::new(RecorderSetup {
            thread: 0,
            digits: 3,
            paced: false,
            batch_latency: false,
            period_ns: None,
            early_every_ns: None,
            periods: PeriodChannel { to_collector, recycled },
            series_ns: None,
            warmup_ns: 0,
            stage_starts_ns: Vec::new(),
            target_labels: Vec::new(),
        });
        recorder.start(0);
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
