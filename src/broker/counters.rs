//! The counters each state partition keeps in the `Meta` table: sequence numbers it hands out
//! and the sizes behind the store-kept gauges (`broker::gauges`). Each is a [`Counter`], so a
//! counter's key is spelled in one place and a misspelled name cannot start a new one.

use crate::engine::Status;
use crate::store::{key, Entry, Table, Txn};
use std::borrow::Cow;

/// A counter of one state partition (its key in `Meta`, under the partition's scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// Instances in a status (the `flowbroker_instances` gauge).
    Status(Status),
    /// The last outbox sequence number handed out (never reused: it orders the outbox).
    OutboxSeq,
    /// The last buffer sequence number handed out (orders the events buffered for an
    /// instance and those held for a key).
    BufferSeq,
    /// Events buffered for an instance or held for a key (`flowbroker_buffered_events`).
    Buffered,
    /// Event ids kept for duplicate detection (`flowbroker_dedupe_entries`).
    Seen,
}

impl Entry for Counter {
    const TABLE: Table = Table::Meta;
    type Value = i64;

    /// Its key in `Meta` (the names stores have always used).
    fn key(&self) -> Cow<'_, str> {
        match self {
            Counter::Status(s) => Cow::Owned(key(&["status", s.as_str()])),
            Counter::OutboxSeq => Cow::Borrowed("outbox.seq"),
            Counter::BufferSeq => Cow::Borrowed("buffer.seq"),
            Counter::Buffered => Cow::Borrowed("buffer.count"),
            Counter::Seen => Cow::Borrowed("dedupe_entries"),
        }
    }
}

impl Counter {
    /// The counter's value in `tx` (0 when it was never counted).
    pub fn value(self, tx: &Txn<'_>) -> crate::store::Result<i64> {
        Ok(tx.read(&self)?.unwrap_or(0))
    }

    /// Adds `by` to the counter in `tx`; returns the new value.
    pub fn bump(self, tx: &Txn<'_>, by: i64) -> crate::store::Result<i64> {
        tx.add(&self, by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_names_existing_stores_hold() {
        // a data directory written before the counters were typed keeps counting
        assert_eq!(Counter::OutboxSeq.key(), "outbox.seq");
        assert_eq!(Counter::BufferSeq.key(), "buffer.seq");
        assert_eq!(Counter::Buffered.key(), "buffer.count");
        assert_eq!(Counter::Seen.key(), "dedupe_entries");
        assert_eq!(
            Counter::Status(Status::Running).key(),
            format!("status{}{}", crate::store::SEP, Status::Running.as_str())
        );
        let all: std::collections::BTreeSet<_> = Status::ALL
            .into_iter()
            .map(Counter::Status)
            .chain([
                Counter::OutboxSeq,
                Counter::BufferSeq,
                Counter::Buffered,
                Counter::Seen,
            ])
            .map(|c| c.key().into_owned())
            .collect();
        assert_eq!(
            all.len(),
            Status::ALL.len() + 4,
            "no two counters share a key"
        );
    }
}
