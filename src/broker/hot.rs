//! Decoded instance records kept between batches, so an instance that gets its next input
//! soon (a function's answer, the next event) is not decoded again from the bytes just
//! written.
//!
//! An entry is the record and the bytes it was stored as. It is handed out only when the store
//! still holds exactly those bytes, so whatever else wrote the key since (a take-over, a
//! restore, retention, another path of the batch) makes it a miss, never a stale read; nothing
//! has to invalidate it. Taking an entry removes it: the caller applies the record and puts
//! the next one back with its new bytes. At most [`Hot::capacity`] entries are kept, the
//! oldest put first out.

use std::collections::{HashMap, VecDeque};

/// How many decoded instances a broker keeps by default (a few MB for typical instances).
pub const CAPACITY: usize = 4096;

/// Decoded records by instance id, each with the bytes it was stored as.
#[derive(Debug)]
pub struct Hot<T> {
    entries: HashMap<String, Entry<T>>,
    /// Ids in the order they were put, with the put's number (an id put again leaves a stale
    /// place behind, skipped when it comes up).
    order: VecDeque<(u64, String)>,
    puts: u64,
    capacity: usize,
    hits: u64,
    misses: u64,
}

#[derive(Debug)]
struct Entry<T> {
    put: u64,
    bytes: Vec<u8>,
    record: T,
}

impl<T> Default for Hot<T> {
    fn default() -> Self {
        Hot::new(CAPACITY)
    }
}

impl<T> Hot<T> {
    /// Keeps at most `capacity` records (0: none).
    pub fn new(capacity: usize) -> Hot<T> {
        Hot {
            entries: HashMap::new(),
            order: VecDeque::new(),
            puts: 0,
            capacity,
            hits: 0,
            misses: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Takes the record of `id` if it was put with exactly `stored`, the bytes the store holds
    /// for it now (`None`: the store holds nothing). A miss leaves nothing behind for `id`.
    pub fn take(&mut self, id: &str, stored: Option<&[u8]>) -> Option<T> {
        let entry = self.entries.remove(id);
        match (entry, stored) {
            (Some(e), Some(stored)) if e.bytes == stored => {
                self.hits += 1;
                Some(e.record)
            }
            _ => {
                self.misses += 1;
                None
            }
        }
    }

    /// Keeps `record`, stored as `bytes`, unless an entry for `id` was put since it was taken
    /// (by an input applied to the same instance in between: that one is newer).
    pub fn offer(&mut self, id: &str, bytes: Vec<u8>, record: T) {
        if self.capacity == 0 || self.entries.contains_key(id) {
            return;
        }
        self.puts += 1;
        let put = self.puts;
        self.entries
            .insert(id.to_string(), Entry { put, bytes, record });
        self.order.push_back((put, id.to_string()));
        while self.entries.len() > self.capacity || self.order.len() > 2 * self.capacity {
            let Some((put, id)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&id).is_some_and(|e| e.put == put) {
                self.entries.remove(&id);
            }
        }
    }

    /// Forgets `id` (its record is being changed some other way).
    pub fn forget(&mut self, id: &str) {
        self.entries.remove(id);
    }

    /// Takes that found a record, and takes that did not, since the last call.
    pub fn counts(&mut self) -> (u64, u64) {
        (
            std::mem::take(&mut self.hits),
            std::mem::take(&mut self.misses),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_handed_out_only_for_the_bytes_it_was_stored_as() {
        let mut hot = Hot::new(8);
        hot.offer("a", b"v1".to_vec(), 1);
        assert_eq!(
            hot.take("a", Some(b"v2")),
            None,
            "the store changed: a miss"
        );
        assert_eq!(
            hot.take("a", Some(b"v1")),
            None,
            "a miss leaves nothing behind"
        );
        hot.offer("a", b"v1".to_vec(), 1);
        assert_eq!(hot.take("a", None), None, "the store holds nothing: a miss");
        hot.offer("a", b"v1".to_vec(), 1);
        assert_eq!(hot.take("a", Some(b"v1")), Some(1));
        assert_eq!(hot.take("a", Some(b"v1")), None, "taking removes it");
        assert_eq!(hot.counts(), (1, 4));
    }

    #[test]
    fn a_newer_entry_is_not_replaced_by_an_older_offer() {
        let mut hot = Hot::new(8);
        // an input applied in between took nothing and put its newer record
        hot.offer("a", b"v2".to_vec(), 2);
        hot.offer("a", b"v1".to_vec(), 1);
        assert_eq!(hot.take("a", Some(b"v2")), Some(2));
    }

    #[test]
    fn the_oldest_put_goes_first_and_the_size_stays_bounded() {
        let mut hot = Hot::new(3);
        for (i, id) in ["a", "b", "c", "d"].into_iter().enumerate() {
            hot.offer(id, vec![i as u8], i);
        }
        assert_eq!(hot.len(), 3);
        assert_eq!(hot.take("a", Some(&[0])), None, "the oldest went");
        assert_eq!(hot.take("d", Some(&[3])), Some(3));
        // the same ids put again and again leave the order bounded too
        for n in 0..100u8 {
            hot.take("b", Some(&[n.wrapping_sub(1)]));
            hot.offer("b", vec![n], 0);
        }
        assert!(hot.order.len() <= 6, "{}", hot.order.len());
        assert!(hot.len() <= 3);
        assert_eq!(hot.take("b", Some(&[99])), Some(0));
        let mut none: Hot<u8> = Hot::new(0);
        none.offer("a", vec![1], 1);
        assert!(none.is_empty(), "capacity 0 keeps nothing");
    }
}
