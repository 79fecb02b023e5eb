//! The typed entries of an instance's history (`broker::history`): entry `seq` of an
//! instance (`instance SEP seq(20)`), and payload `n` of an entry kept beside it
//! (`instance SEP seq(20) SEP n(20)`). Both sort by instance, then number, so one prefix scan
//! reads an instance's history or an entry's payloads in order. The keys are those stores
//! have always held (`store::key`, `store::num`).

use super::records::HistoryEntry;
use crate::store::{numbered, owned_key_entry, prefix_of, SEP};
use serde_json::Value;

/// Entry `seq` of an instance's history. Read as a [`HistoryEntry`]; written encoded
/// ([`crate::store::Txn::write_encoded`]) from the borrowed `HistoryEntryOf` a batch holds, or
/// from a copy with its large payloads set apart, both of which encode as one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryAt {
    key: String,
}

impl HistoryAt {
    pub fn new(instance: &str, seq: u64) -> Self {
        HistoryAt {
            key: numbered(HistoryAt::of(instance), seq),
        }
    }

    /// The prefix of every entry of `instance`'s history (and of its payloads' keys).
    pub fn of(instance: &str) -> String {
        prefix_of(instance)
    }

    /// The number of the entry whose key (as a scan under [`HistoryAt::of`] gives it back) is
    /// `key`.
    pub fn seq_in(key: &str) -> Option<u64> {
        key.rsplit_once(SEP).and_then(|(_, seq)| seq.parse().ok())
    }

    /// The prefix of this entry's payloads.
    pub fn payloads(&self) -> String {
        prefix_of(&self.key)
    }

    /// Payload `n` of this entry.
    pub fn payload(&self, n: usize) -> PayloadOf {
        PayloadOf {
            key: numbered(self.payloads(), n as u64),
        }
    }
}

owned_key_entry!(HistoryAt, History, HistoryEntry);

/// A payload of a history entry kept beside it: the JSON value whose place the entry holds a
/// summary in. Written as JSON text, which the store's readers decode as they do its own
/// encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadOf {
    key: String,
}

owned_key_entry!(PayloadOf, Payloads, Value);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{key, num, Entry, Table};

    #[test]
    fn entries_and_payloads_are_keyed_as_stores_hold_them() {
        let h = HistoryAt::new("p1-i", 7);
        assert_eq!(h.key(), key(&["p1-i", &num(7)]));
        assert_eq!(<HistoryAt as Entry>::TABLE, Table::History);
        assert!(h.key().starts_with(&HistoryAt::of("p1-i")));
        assert!(!HistoryAt::new("p1-i2", 7)
            .key()
            .starts_with(&HistoryAt::of("p1-i")));
        assert_eq!(HistoryAt::seq_in(&h.key()), Some(7));
        let p = h.payload(2);
        assert_eq!(p.key(), key(&["p1-i", &num(7), &num(2)]));
        assert!(p.key().starts_with(&h.payloads()));
        assert!(!HistoryAt::new("p1-i", 70)
            .payload(0)
            .key()
            .starts_with(&h.payloads()));
        assert_eq!(<PayloadOf as Entry>::TABLE, Table::Payloads);
        // numbers sort as numbers under an instance
        assert!(HistoryAt::new("i", 9).key() < HistoryAt::new("i", 10).key());
    }
}
