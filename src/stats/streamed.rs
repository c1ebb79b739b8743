//! What the calls of a streaming gRPC method sent and received: each
//! call's time to its first reply message (from its intended time, as its
//! latency to the end is), how many messages each call got, how many came
//! and went in all, and for a bidirectional method each reply's latency
//! from the intended time of the message it answers. The end of each call
//! is the run's latency itself.

use hdrhistogram::Histogram;

use super::latency_histogram;

#[derive(Clone, Debug, PartialEq)]
pub struct Streamed {
    /// From each measured call's intended time to its first reply
    /// message's arrival, us.
    pub first_message: Histogram<u64>,
    /// The reply messages of each completed call.
    pub messages_per_call: Histogram<u64>,
    /// Reply messages received by measured calls that ended (completed,
    /// failed or reset).
    pub messages: u64,
    /// Messages the measured calls sent in their streams (client-streaming
    /// and bidirectional methods).
    pub sent: u64,
    /// Of a bidirectional method: from the intended time of each message a
    /// call sent to the arrival of its reply (the reply of the same rank),
    /// us.
    pub reply_latency: Histogram<u64>,
}

impl Streamed {
    pub fn new(digits: u8) -> Streamed {
        Streamed {
            first_message: latency_histogram(digits),
            messages_per_call: latency_histogram(digits),
            messages: 0,
            sent: 0,
            reply_latency: latency_histogram(digits),
        }
    }

    /// Nothing was streamed (the run's calls are not server streaming).
    pub fn is_empty(&self) -> bool {
        self.messages == 0 && self.sent == 0 && self.messages_per_call.is_empty()
    }

    pub fn merge(&mut self, other: &Streamed) {
        // The histograms resize to take any value, so adding cannot fail.
        self.first_message.add(&other.first_message).expect("auto-resizing histogram");
        self.messages_per_call.add(&other.messages_per_call).expect("auto-resizing histogram");
        self.messages += other.messages;
        self.sent += other.sent;
        self.reply_latency.add(&other.reply_latency).expect("auto-resizing histogram");
    }

    pub fn clear(&mut self) {
        self.first_message.reset();
        self.messages_per_call.reset();
        self.messages = 0;
        self.sent = 0;
        self.reply_latency.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_add_up_and_a_period_starts_empty() {
        let mut a = Streamed::new(3);
        assert!(a.is_empty());
        a.first_message.record(150).unwrap();
        a.messages_per_call.record(0).unwrap();
        assert!(!a.is_empty(), "a call that got no message is streamed");
        let mut b = Streamed::new(3);
        b.first_message.record(90).unwrap();
        b.messages_per_call.record(10).unwrap();
        b.messages = 12;
        b.sent = 3;
        b.reply_latency.record(40).unwrap();
        a.merge(&b);
        assert_eq!((a.messages, a.messages_per_call.len(), a.first_message.min()), (12, 2, 90));
        assert_eq!((a.sent, a.reply_latency.len()), (3, 1));
        a.clear();
        assert!(a.is_empty() && a.first_message.is_empty() && a.reply_latency.is_empty());
    }
}
