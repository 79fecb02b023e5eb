//! Values of a table kept in memory exactly as the store holds them ("resident"), so that
//! reading one does not go to fjall's memtables and files. Meant for the records of instances
//! that wait: with a million of them, reading the one an event continues is a block read from
//! disk, every entry of the block decoded, where the block cache holds a few per cent of them
//! (docs/store.md "Memory").
//!
//! Which keys are kept is the writer's choice: a transaction marks a key it writes
//! ([`Resident::mark`]), and the value is taken in when that write is stored
//! ([`Resident::stored`], from `Store::apply`). Only stored values are ever held, and every
//! write that reaches the store passes through `Store::apply` or `Store::clear`, which update
//! or drop the keys held here; a transaction reads its own writes and the rounds in flight
//! before it reads here. So a value held is the store's value, never a stale one. That rests,
//! as the pending writes do, on nothing reading a partition's keys while one of its rounds is
//! being stored: landing and the partition processors take turns on the core thread
//! (`broker::round`), and a partition's writes come from its one owner. A mark for a write
//! that is never stored (a void round) holds nothing. Forgetting a key
//! ([`Resident::forget`]) is always safe: the next read goes to the store.
//!
//! Bounded: at most the budget in bytes (keys, values and a fixed overhead per entry; the
//! broker's RSS measured about a tenth above what is counted); the first marked leaves first,
//! and an entry (key, value and overhead) over an eighth of its shard's share is not kept. A
//! budget of 0 keeps nothing.

use crate::fifo::Fifo;
use bytes::Bytes;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

/// Locks over disjoint sets of keys: processors of several partitions read at once.
const SHARDS: usize = 16;

/// What an entry costs besides its key and value: the map's slot, its place in the order,
/// the shared key's and the value's headers.
pub const OVERHEAD: usize = 96;

/// The values kept, by full key (scope prefix and key).
#[derive(Debug)]
pub struct Resident {
    shards: Box<[Mutex<Shard>]>,
    /// Whole budget in bytes (each shard has an equal share).
    budget: usize,
    /// Picks a key's shard (seeded per process, so that no choice of ids crowds one shard).
    hasher: foldhash::fast::RandomState,
}

#[derive(Debug, Default)]
struct Shard {
    /// Marked keys, first marked first: `None` until a write of the key is stored.
    entries: Fifo<Arc<str>, Option<Bytes>>,
    bytes: usize,
    budget: usize,
    /// Keys with a value.
    held: usize,
}

/// What the values kept cost now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Keys with a value in memory.
    pub entries: u64,
    /// Bytes counted against the budget (marked keys without a value yet included).
    pub bytes: u64,
}

fn cost(key: &str, value: Option<&Bytes>) -> usize {
    OVERHEAD + key.len() + value.map_or(0, Bytes::len)
}

impl Resident {
    /// Keeps at most `budget` bytes (0: nothing).
    pub fn new(budget: usize) -> Resident {
        let share = budget / SHARDS;
        Resident {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        budget: share,
                        ..Shard::default()
                    })
                })
                .collect(),
            budget,
            hasher: Default::default(),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.budget > 0
    }

    fn shard(&self, key: &str) -> MutexGuard<'_, Shard> {
        let h = self.hasher.hash_one(key) as usize;
        // a panic while holding a shard leaves only bookkeeping behind, never a wrong value
        self.shards[h % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `key`'s value once a write of it is stored. A key held already keeps its value
    /// until then.
    pub fn mark(&self, key: &str) {
        if !self.is_enabled() {
            return;
        }
        let mut s = self.shard(key);
        if s.entries.contains_key(key) {
            return;
        }
        s.entries.put(Arc::from(key), None);
        s.bytes += cost(key, None);
        s.trim();
    }

    /// Stops keeping `key`.
    pub fn forget(&self, key: &str) {
        if !self.is_enabled() {
            return;
        }
        self.shard(key).remove(key);
    }

    /// The value held for `key`, if any (shared, not copied).
    pub fn get(&self, key: &str) -> Option<Bytes> {
        if !self.is_enabled() {
            return None;
        }
        self.shard(key).entries.get(key)?.clone()
    }

    /// `key` was stored with `value` (`None`: removed): a key kept takes the new value in (a
    /// copy of exactly its bytes, not the buffer it may be a slice of), or is dropped, as it
    /// is when the entry is over an eighth of the shard's share (it would push out the rest).
    pub fn stored(&self, key: &str, value: Option<&[u8]>) {
        if !self.is_enabled() {
            return;
        }
        let mut s = self.shard(key);
        let largest = s.budget / 8;
        let v = match value {
            Some(v) if OVERHEAD + key.len() + v.len() <= largest => v,
            _ => {
                s.remove(key);
                return;
            }
        };
        let Some(slot) = s.entries.get_mut(key) else {
            return;
        };
        let was = slot.replace(Bytes::copy_from_slice(v));
        let now = cost(key, slot.as_ref());
        s.bytes = s.bytes - cost(key, was.as_ref()) + now;
        s.held += usize::from(was.is_none());
        s.trim();
    }

    /// Drops every key starting with `prefix` (a scope's whole state replaced or given up).
    pub fn forget_prefix(&self, prefix: &str) {
        if !self.is_enabled() {
            return;
        }
        for shard in self.shards.iter() {
            let mut s = shard.lock().unwrap_or_else(|e| e.into_inner());
            for (k, v) in s.entries.remove_where(|k| k.starts_with(prefix)) {
                s.forgot(&k, v);
            }
        }
    }

    /// What is held now.
    pub fn held(&self) -> Held {
        let mut h = Held::default();
        for shard in self.shards.iter() {
            let s = shard.lock().unwrap_or_else(|e| e.into_inner());
            h.entries += s.held as u64;
            h.bytes += s.bytes as u64;
        }
        h
    }
}

impl Shard {
    fn remove(&mut self, key: &str) {
        if let Some(v) = self.entries.remove(key) {
            self.forgot(key, v);
        }
    }

    /// Takes what `key`, just removed with `value`, cost off the counts.
    fn forgot(&mut self, key: &str, value: Option<Bytes>) {
        self.bytes -= cost(key, value.as_ref());
        self.held -= usize::from(value.is_some());
    }

    /// Drops the first marked keys until the shard is within its budget.
    fn trim(&mut self) {
        while self.bytes > self.budget {
            let Some((k, v)) = self.entries.pop_oldest() else {
                break;
            };
            self.forgot(&k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_key_holds_what_is_stored_and_nothing_before() {
        let r = Resident::new(1 << 20);
        r.stored("a", Some(b"unmarked"));
        assert_eq!(r.get("a"), None, "only marked keys are kept");
        r.mark("a");
        assert_eq!(
            r.get("a"),
            None,
            "a mark holds no value until a write is stored"
        );
        r.stored("a", Some(b"v1"));
        assert_eq!(r.get("a").as_deref(), Some(&b"v1"[..]));
        r.mark("a");
        assert_eq!(
            r.get("a").as_deref(),
            Some(&b"v1"[..]),
            "marked again: kept"
        );
        r.stored("a", Some(b"v2"));
        assert_eq!(r.get("a").as_deref(), Some(&b"v2"[..]));
        r.stored("a", None);
        assert_eq!(r.get("a"), None, "removed from the store: dropped");
        r.stored("a", Some(b"v3"));
        assert_eq!(r.get("a"), None, "and not kept again without a mark");
        assert_eq!(r.held(), Held::default());
    }

    #[test]
    fn forgetting_drops_a_key_and_a_prefix_drops_its_keys() {
        let r = Resident::new(1 << 20);
        for k in ["p1/a", "p1/b", "p2/a"] {
            r.mark(k);
            r.stored(k, Some(k.as_bytes()));
        }
        r.forget("p1/a");
        assert_eq!(r.get("p1/a"), None);
        r.forget_prefix("p1/");
        assert_eq!(r.get("p1/b"), None);
        assert_eq!(r.get("p2/a").as_deref(), Some(&b"p2/a"[..]));
        assert_eq!(r.held().entries, 1);
        assert_eq!(
            r.held().bytes,
            cost("p2/a", Some(&Bytes::from_static(b"p2/a"))) as u64
        );
    }

    #[test]
    fn the_budget_bounds_it_and_the_first_marked_leave_first() {
        let value = [7u8; 400];
        let each = cost("k0000", Some(&Bytes::copy_from_slice(&value)));
        // room for about ten entries per shard
        let r = Resident::new(SHARDS * each * 10);
        for i in 0..10_000 {
            let k = format!("k{i:04}");
            r.mark(&k);
            r.stored(&k, Some(&value));
        }
        let held = r.held();
        assert!(held.bytes <= (SHARDS * each * 10) as u64, "{held:?}");
        assert!(held.entries >= (SHARDS * 5) as u64, "{held:?}");
        assert!(r.get("k9999").is_some(), "the last marked stays");
        assert!(r.get("k0000").is_none(), "the first marked left");
    }

    #[test]
    fn marks_forgotten_over_and_over_do_not_grow_the_order() {
        let r = Resident::new(1 << 20);
        for i in 0..100_000 {
            let k = format!("k{}", i % 7);
            r.mark(&k);
            r.forget(&k);
        }
        let most = (r.shards.iter())
            .map(|s| s.lock().unwrap().entries.places())
            .max();
        assert!(most.unwrap() <= crate::fifo::SLACK + 1, "{most:?}");
    }

    #[test]
    fn a_value_too_large_for_its_share_is_not_kept_and_leaves_the_rest() {
        let r = Resident::new(SHARDS * 8 * 1024);
        for i in 0..20 {
            let k = format!("k{i}");
            r.mark(&k);
            r.stored(&k, Some(b"small"));
        }
        assert_eq!(r.held().entries, 20);
        r.mark("k0");
        r.stored("k0", Some(&[0u8; 2048]));
        assert_eq!(r.get("k0"), None, "over an eighth of the share: dropped");
        assert_eq!(r.held().entries, 19, "the others stay");
        assert!(r.get("k1").is_some());
    }

    #[test]
    fn nothing_is_kept_without_a_budget() {
        let r = Resident::new(0);
        r.mark("a");
        r.stored("a", Some(b"v"));
        assert_eq!(r.get("a"), None);
    }
}
