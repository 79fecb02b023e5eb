//! What this process has handed to the producer and the invoker and not heard back about.
//! Taking a partition over re-sends its outbox and re-invokes its calls (the last owner may
//! have crashed before they left); a partition this broker gives up and gets back (an eager
//! rebalance revokes every partition and hands most of them straight back) still has its
//! records and calls in flight here, and sending them again would deliver and invoke them
//! twice. So take-over skips whatever is in these sets. After a crash they are empty: each
//! entry is sent once, each call invoked once.

use super::records::Call;
use super::OutboxKey;
use foldhash::HashSet;

/// A function call attempt: its idempotency key (instance, state visit, action) and attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallId {
    pub key: String,
    pub attempt: u32,
}

impl CallId {
    pub fn of(c: &Call) -> CallId {
        CallId {
            key: c.key.clone(),
            attempt: c.attempt,
        }
    }
}

#[derive(Debug, Default)]
pub struct InFlight {
    sent: HashSet<OutboxKey>,
    calls: HashSet<CallId>,
}

impl InFlight {
    /// Records handed to the producer; false for one already in flight.
    pub fn send(&mut self, k: &OutboxKey) -> bool {
        self.sent.insert(*k)
    }

    /// The producer is done with it (acknowledged, dead-lettered or dropped); false when it
    /// was not in flight (heard of already).
    pub fn acked(&mut self, k: &OutboxKey) -> bool {
        self.sent.remove(k)
    }

    /// A call handed to the invoker; false for one already running.
    pub fn call(&mut self, c: &Call) -> bool {
        self.calls.insert(CallId::of(c))
    }

    /// Its result came back.
    pub fn called(&mut self, c: &Call) {
        self.calls.remove(&CallId::of(c));
    }

    pub fn sending(&self, k: &OutboxKey) -> bool {
        self.sent.contains(k)
    }

    pub fn calling(&self, c: &Call) -> bool {
        self.calls.contains(&CallId::of(c))
    }

    /// Records and calls in flight.
    pub fn len(&self) -> (usize, usize) {
        (self.sent.len(), self.calls.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::partition::PartitionId;

    #[test]
    fn an_entry_is_in_flight_until_it_is_heard_of() {
        let mut f = InFlight::default();
        let k = OutboxKey {
            partition: PartitionId(3),
            seq: 7,
        };
        assert!(f.send(&k));
        assert!(!f.send(&k), "sent twice");
        assert!(f.sending(&k));
        assert!(f.acked(&k));
        assert!(!f.sending(&k));
        assert!(!f.acked(&k), "heard of twice");
        let c = Call {
            instance: "p1-x".into(),
            workflow: "w".into(),
            key: "p1-x/0/0".into(),
            function: "f".into(),
            url: "http://x".into(),
            parameters: serde_json::json!({}),
            attempt: 1,
            timeout_secs: None,
            stale_on_takeover: false,
            traceparent: None,
            tracestate: None,
            parent_span: None,
        };
        assert!(f.call(&c));
        assert!(f.calling(&c));
        let retry = Call {
            attempt: 2,
            ..c.clone()
        };
        assert!(!f.calling(&retry), "another attempt is another call");
        f.called(&c);
        assert_eq!(f.len(), (0, 0));
    }
}
