//! Young outbox entries (docs/broker.md "Young outbox entries"). With a changelog, the store
//! is a cache of it: once a round lands, the outbox entries it put are in the changelog, and
//! Kafka acknowledges most of them within a round trip, after which a later round deletes
//! them. Written to the store, each was a put and then a tombstone, about half of the bytes
//! the store took per instance. So a landed entry waits here instead, and goes to the store
//! only if it is still here [`SETTLE_AFTER`] later (at a landing of its partition), or when
//! its partition holds more than [`MAX_HELD`]; one deleted while here is dropped, put and
//! delete alike, without a write.
//!
//! What makes that safe is the partition's checkpoint: while an entry is held, the checkpoint
//! stays at the changelog record that put it ([`Young::first`]), so a restart, a take-over or
//! a standby copy reads the changelog from there and finds the entry again (writing what the
//! store already holds changes nothing: a record's writes are whole values, replayed in
//! order). Every entry held for a partition was appended under its current fence: a partition
//! let go drops its entries (the next owner restores them), and a fence that replaces a
//! provisional one moves them to the store first ([`Young::take`]).

use crate::cluster::partition::PartitionId;
use crate::store::{Table, Write};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use foldhash::HashMap;
use std::collections::{BTreeMap, VecDeque};

/// An entry older than this goes to the store at its partition's next landing.
pub(super) const SETTLE_AFTER: chrono::Duration = chrono::Duration::seconds(2);

/// A partition holding more entries than this moves its oldest to the store.
pub(super) const MAX_HELD: usize = 8192;

/// One entry held: the changelog record that put it, when that landed, and its value.
struct Held {
    offset: i64,
    since: DateTime<Utc>,
    value: Bytes,
}

/// One partition's held entries.
#[derive(Default)]
struct Part {
    /// By full store key (hashed, with foldhash: outbox keys share long prefixes, which a
    /// sorted map compares again at every level, and SipHash cost more than the rest).
    entries: HashMap<String, Held>,
    /// The keys in the order their records landed, oldest first (records land in order, so
    /// the first is also the longest held, and the checkpoint's). An entry removed or put
    /// again leaves its old place here behind, skipped when it comes first ([`Part::trim`]);
    /// after every change the first place is a held entry's.
    order: VecDeque<(i64, String)>,
}

impl Part {
    fn insert(&mut self, key: String, held: Held) {
        self.order.push_back((held.offset, key.clone()));
        self.entries.insert(key, held);
    }

    fn remove(&mut self, key: &str) -> Option<Held> {
        self.entries.remove(key)
    }

    /// Whether `order`'s place (`offset`, `key`) is still that entry's.
    fn holds(entries: &HashMap<String, Held>, offset: i64, key: &str) -> bool {
        entries.get(key).is_some_and(|h| h.offset == offset)
    }

    /// Drops the places left behind at the front of `order` (and everywhere, once they
    /// outnumber the entries, so it stays proportional to what is held).
    fn trim(&mut self) {
        while let Some((offset, key)) = self.order.front() {
            if Self::holds(&self.entries, *offset, key) {
                break;
            }
            self.order.pop_front();
        }
        if self.order.len() > 2 * self.entries.len() + 64 {
            let entries = &self.entries;
            self.order
                .retain(|(offset, key)| Self::holds(entries, *offset, key));
        }
    }

    /// The oldest entry, taken out, if it landed at least [`SETTLE_AFTER`] before `now` (or
    /// whatever its age, `any`).
    fn pop_oldest(&mut self, now: DateTime<Utc>, any: bool) -> Option<(String, Held)> {
        self.trim();
        let (_, key) = self.order.front()?;
        let held = self.entries.get(key)?;
        if !any && now - held.since < SETTLE_AFTER {
            return None;
        }
        let (_, key) = self.order.pop_front()?;
        let held = self.entries.remove(&key)?;
        Some((key, held))
    }
}

/// The outbox entries held in memory, per owned partition.
#[derive(Default)]
pub(super) struct Young {
    parts: BTreeMap<PartitionId, Part>,
}

impl Young {
    /// Lands `writes`, partition `p`'s batch at changelog `offset`, at `now`: its outbox puts
    /// are held, its outbox deletes of held entries dropped with them, and held entries that
    /// are old enough (or too many) join the store's writes. Everything the store gets is
    /// pushed to `out`.
    pub fn land(
        &mut self,
        p: PartitionId,
        offset: i64,
        writes: impl IntoIterator<Item = Write>,
        now: DateTime<Utc>,
        out: &mut Vec<Write>,
    ) {
        let part = self.parts.entry(p).or_default();
        let mut put = Vec::new();
        for w in writes {
            if w.table != Table::Outbox {
                out.push(w);
                continue;
            }
            match w.value {
                Some(value) => put.push((w.key, value)),
                None => {
                    // a tombstone only for an entry the store has
                    if part.remove(&w.key).is_none() {
                        out.push(w);
                    }
                }
            }
        }
        while let Some((key, held)) = part.pop_oldest(now, false) {
            out.push(Self::settled(key, held));
        }
        for (key, value) in put {
            let since = now;
            part.insert(
                key,
                Held {
                    offset,
                    since,
                    value,
                },
            );
        }
        while part.entries.len() > MAX_HELD {
            let Some((key, held)) = part.pop_oldest(now, true) else {
                break;
            };
            out.push(Self::settled(key, held));
        }
        part.trim();
        if part.entries.is_empty() {
            self.parts.remove(&p);
        }
    }

    /// Held entry `key` as a write for the store.
    fn settled(key: String, held: Held) -> Write {
        Write {
            table: Table::Outbox,
            key,
            value: Some(held.value),
        }
    }

    /// The changelog record of `p`'s oldest held entry: its checkpoint must not pass it.
    pub fn first(&self, p: PartitionId) -> Option<i64> {
        self.parts.get(&p)?.order.front().map(|(o, _)| *o)
    }

    /// Every entry held for `p`, as writes for the store (its fence is about to change).
    pub fn take(&mut self, p: PartitionId) -> Vec<Write> {
        let Some(part) = self.parts.remove(&p) else {
            return Vec::new();
        };
        part.entries
            .into_iter()
            .map(|(key, held)| Self::settled(key, held))
            .collect()
    }

    /// `p` was let go: its entries are dropped (whoever restores it finds them again).
    pub fn release(&mut self, p: PartitionId) {
        self.parts.remove(&p);
    }

    /// How many entries `p` holds.
    pub fn len(&self, p: PartitionId) -> usize {
        self.parts.get(&p).map_or(0, |part| part.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: PartitionId = PartitionId(3);

    fn put(table: Table, key: &str) -> Write {
        Write {
            table,
            key: key.into(),
            value: Some(Bytes::from(key.to_string())),
        }
    }

    fn del(key: &str) -> Write {
        Write {
            table: Table::Outbox,
            key: key.into(),
            value: None,
        }
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
    }

    fn keys(out: &[Write]) -> Vec<(&str, bool)> {
        out.iter()
            .map(|w| (w.key.as_str(), w.value.is_some()))
            .collect()
    }

    #[test]
    fn an_entry_deleted_while_held_is_never_written() {
        let mut y = Young::default();
        let mut out = Vec::new();
        y.land(
            P,
            10,
            [put(Table::Instances, "i"), put(Table::Outbox, "o1")],
            at(0),
            &mut out,
        );
        assert_eq!(keys(&out), [("i", true)], "only the instance is stored");
        assert_eq!((y.first(P), y.len(P)), (Some(10), 1));
        out.clear();
        y.land(P, 11, [del("o1"), del("gone")], at(1), &mut out);
        // a tombstone for an entry held never reaches the store; one for an entry the store
        // may have (an older broker's, or one settled) does
        assert_eq!(keys(&out), [("gone", false)]);
        assert_eq!((y.first(P), y.len(P)), (None, 0));
    }

    #[test]
    fn the_checkpoint_stays_at_the_oldest_entry_held_until_it_is_stored() {
        let mut y = Young::default();
        let mut out = Vec::new();
        y.land(P, 10, [put(Table::Outbox, "a")], at(0), &mut out);
        y.land(P, 11, [put(Table::Outbox, "b")], at(1), &mut out);
        assert!(out.is_empty());
        assert_eq!(y.first(P), Some(10));
        // two seconds after it landed, `a` goes to the store with the next landing
        y.land(P, 12, [], at(2), &mut out);
        assert_eq!(keys(&out), [("a", true)]);
        assert_eq!(y.first(P), Some(11));
        out.clear();
        let left = y.take(P);
        assert_eq!(keys(&left), [("b", true)]);
        assert_eq!(y.first(P), None);
    }

    #[test]
    fn an_entry_put_again_or_deleted_leaves_the_checkpoint_at_the_oldest_still_held() {
        let mut y = Young::default();
        let mut out = Vec::new();
        y.land(P, 10, [put(Table::Outbox, "a")], at(0), &mut out);
        y.land(P, 11, [put(Table::Outbox, "b")], at(0), &mut out);
        // `a` put again by a later record: the checkpoint may pass its first record
        y.land(P, 12, [put(Table::Outbox, "a")], at(0), &mut out);
        assert_eq!((y.first(P), y.len(P)), (Some(11), 2));
        y.land(P, 13, [del("b")], at(1), &mut out);
        assert_eq!((y.first(P), y.len(P)), (Some(12), 1));
        assert!(out.is_empty(), "nothing stored: {:?}", keys(&out));
        // and `a` settles once, from its latest record
        y.land(P, 14, [], at(2), &mut out);
        assert_eq!(keys(&out), [("a", true)]);
        assert_eq!((y.first(P), y.len(P)), (None, 0));
    }

    #[test]
    fn places_left_behind_do_not_pile_up_behind_an_old_entry() {
        let mut y = Young::default();
        let mut out = Vec::new();
        y.land(P, 1, [put(Table::Outbox, "old")], at(0), &mut out);
        for i in 0..10_000 {
            let key = format!("k{i}");
            y.land(P, 2 * i + 2, [put(Table::Outbox, &key)], at(0), &mut out);
            y.land(P, 2 * i + 3, [del(&key)], at(0), &mut out);
        }
        assert!(out.is_empty());
        assert_eq!((y.first(P), y.len(P)), (Some(1), 1));
        let part = &y.parts[&P];
        assert!(
            part.order.len() <= 2 + 64,
            "{} places kept",
            part.order.len()
        );
    }

    #[test]
    fn a_partition_holds_a_bounded_number() {
        let mut y = Young::default();
        let mut out = Vec::new();
        let many: Vec<Write> = (0..MAX_HELD + 2)
            .map(|i| put(Table::Outbox, &format!("{i:08}")))
            .collect();
        y.land(P, 5, [put(Table::Outbox, "first")], at(0), &mut out);
        y.land(P, 6, many, at(0), &mut out);
        assert_eq!(y.len(P), MAX_HELD);
        // the oldest record's entry went first, then the newer record's
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].key, "first");
        assert_eq!(y.first(P), Some(6));
        y.release(P);
        assert_eq!((y.first(P), y.len(P)), (None, 0));
    }
}
