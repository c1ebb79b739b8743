//! gRPC calls made as they are sent: `--data` or `-H` with per-call
//! template actions. Each thread takes the messages in turn (from
//! its own first) or at random, as it would take fixed ones, and numbers
//! its calls so that numbers are unique across the run's threads and
//! shards: the thread numbered t of T sends calls t + 1, T + t + 1,
//! 2T + t + 1, ...

use std::sync::Arc;
use std::time::SystemTime;

use crate::grpc::call::Message;
use crate::grpc::template::{CallData, Template};
use crate::plan::random::Draws;
use crate::request::Request;
use crate::workload::{Batch, MakeRequests, Order};

/// The metadata made per call: by name, its template.
pub type MadeMetadata = Arc<[(String, Template)]>;

/// One thread's calls.
pub struct MadeCalls {
    /// What every call sends but its message.
    call: Request,
    messages: Arc<[Message]>,
    metadata: MadeMetadata,
    order: Order,
    /// The next message in turn.
    next: usize,
    /// The thread's number in the run, and how many threads the run has.
    thread: u64,
    threads: u64,
    /// Calls made so far.
    made: u64,
    /// The templates' random numbers.
    draws: Draws,
    /// The rendering's buffer, kept between calls.
    text: String,
}

impl MadeCalls {
    /// The calls of thread `thread` of `threads` (across shards): `call`
    /// with each of `messages` (at least one) in `order`, from the
    /// thread's own first, and `metadata` made per call; `draws` for the
    /// templates' random actions.
    pub fn new(
        call: Request,
        (messages, metadata): (Arc<[Message]>, MadeMetadata),
        order: Order,
        (thread, threads): (usize, usize),
        draws: Draws,
    ) -> MadeCalls {
        let next = thread % messages.len();
        let (thread, threads) = (thread as u64, threads as u64);
        let text = String::new();
        MadeCalls { call, messages, metadata, order, next, thread, threads, made: 0, draws, text }
    }

    fn next_message(&mut self) -> usize {
        let count = self.messages.len();
        match &mut self.order {
            Order::Sequential => {
                let index = self.next;
                self.next = (index + 1) % count;
                index
            }
            // `uniform` is below 1; `min` guards the rounding.
            Order::Random(draws) => ((draws.uniform() * count as f64) as usize).min(count - 1),
        }
    }
}

impl MakeRequests for MadeCalls {
    fn next(&mut self, connection: usize) -> Result<Batch, String> {
        let index = self.next_message();
        let number = self.made * self.threads + self.thread + 1;
        self.made += 1;
        let mut call = CallData {
            number,
            thread: self.thread,
            connection: connection as u64,
            now: SystemTime::now(),
            draws: &mut self.draws,
        };
        let body: Arc<[u8]> = match &self.messages[index] {
            Message::Framed(framed) => framed.clone(),
            Message::Template(template) => template.make(&mut call, &mut self.text)?.into(),
        };
        let mut request = self.call.clone();
        for (field, template) in self.metadata.iter() {
            template.render(&mut call, &mut self.text);
            let named = request.fields.iter_mut().filter(|(name, _)| name == field);
            for (_, value) in named {
                value.clear();
                value.extend_from_slice(self.text.as_bytes());
            }
        }
        request.body = Some(body);
        Ok(Batch::new([request]))
    }
}
