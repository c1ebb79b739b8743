//! What the calls of a server-streaming gRPC method received: each call's
//! time to its first reply message (from its intended time, as its
//! latency to the end is), how many messages each call got, and how many
//! came in all. The end of each call is the run's latency itself.

use hdrhistogram::Histogram;

use super::latency_histogram;

#[derive(Clone, Debug, PartialEq)]
pub struct Streamed {
    /// From each measured call's intended time to its first reply
    /// message's arrival, us.
    pub first_message: Histogram<u64>,
    /// The reply messages of each completed call.
    pub messages_per_call: Histogram<u64>,
    /// Reply messages received by measured calls, completed or not.
    pub messages: u64,
}

impl Streamed {
    pub fn new(digits: u8) -> Streamed {
        Streamed {
            first_message: latency_histogram(digits),
            messages_per_call: latency_histogram(digits),
            messages: 0,
        }
    }

    /// Nothing was streamed (the run's calls are not server streaming).
    pub fn is_empty(&self) -> bool {
        self.messages == 0 && self.messages_per_call.is_empty()
    }

    pub fn merge(&mut self, other: &Streamed) {
        // The histograms resize to take any value, so adding cannot fail.
        self.first_message.add(&other.first_message).expect("auto-resizing histogram");
        self.messages_per_call.add(&other.messages_per_call).expect("auto-resizing histogram");
        self.messages += other.messages;
    }

    pub fn clear(&mut self) {
        self.first_message.reset();
        self.messages_per_call.reset();
        self.messages = 0;
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
        a.merge(&b);
        assert_eq!((a.messages, a.messages_per_call.len(), a.first_message.min()), (12, 2, 90));
        a.clear();
        assert!(a.is_empty() && a.first_message.is_empty());
    }
}
