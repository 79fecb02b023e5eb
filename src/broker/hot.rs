//! Decoded instance records kept between batches, so an instance that gets its next input
//! soon (a function's answer, the next event) is not decoded again from the bytes just
//! written.
//!
//! An entry is the record and the bytes it was stored as. It is handed out only when the store
//! still holds exactly those bytes, so whatever else wrote the key since (a take-over, a
//! restore, retention, another path of the batch) makes it a miss, never a stale read; nothing
//! has to invalidate it. Taking an entry removes it: the caller applies the record and puts
//! the next one back with its new bytes.
//!
//! That a hit gives what decoding would give rests on decoding being the inverse of encoding
//! for every record, floats included (MessagePack keeps a float's 64 bits; a JSON record an
//! older layout wrote is parsed with serde_json's `float_roundtrip`, without which a float
//! computed by the engine could read back one bit off).
//!
//! A durable execution stores its operations' timestamps in milliseconds (the AWS wire
//! form), so its engine stamps in milliseconds too (`time::whole_millis`): with the clock's
//! nanoseconds, the record written and the record read back would differ. Other records keep
//! times as RFC 3339 with nanoseconds. Debug builds decode every record kept and compare, so a
//! record that does not round-trip fails the tests.
//!
//! Bounded: at most [`Hot::capacity`] entries and [`BYTES`] of encoded records, the oldest put
//! first out; a record larger than [`LARGEST`], or than an eighth of its partition's share
//! of [`BYTES`], is not kept (it would push out the rest). Each owned state partition has
//! its own (its processor may run on another thread), with an equal share of those bounds
//! ([`Hot::share`]).

use crate::fifo::Fifo;
use std::sync::Arc;

/// How many decoded instances a broker keeps at most (over the partitions it owns; see
/// [`Hot::share`]).
pub const CAPACITY: usize = 4096;

/// The encoded size of the records kept, at most (decoded, a record takes a few times its
/// encoded size).
pub const BYTES: usize = 16 << 20;

/// The encoded size of the largest record kept.
pub const LARGEST: usize = 64 << 10;

/// Decoded records by instance id, each with the bytes it was stored as.
#[derive(Debug)]
pub struct Hot<T> {
    /// By id, the oldest put first out.
    entries: Fifo<Arc<str>, Entry<T>>,
    capacity: usize,
    /// Encoded bytes of the entries kept, and at most.
    bytes: usize,
    max_bytes: usize,
    hits: u64,
    misses: u64,
}

#[derive(Debug)]
struct Entry<T> {
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
        Hot::bounded(capacity, BYTES)
    }

    /// Bounds this partition's cache to its share of [`CAPACITY`] and [`BYTES`] when the
    /// broker owns `owned` partitions, dropping the oldest entries over it. A partition's
    /// share is set before each of its batches, so after a take-over the caches of the others
    /// keep their larger share until their next batch (the periodic sweep's, at the latest).
    pub fn share(&mut self, owned: usize) {
        let n = owned.max(1);
        self.capacity = (CAPACITY / n).max(1);
        self.max_bytes = BYTES / n;
        self.trim();
    }

    fn bounded(capacity: usize, max_bytes: usize) -> Hot<T> {
        Hot {
            entries: Fifo::default(),
            capacity,
            bytes: 0,
            max_bytes,
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
    /// for it now. A miss leaves nothing behind for `id`.
    pub fn take(&mut self, id: &str, stored: &[u8]) -> Option<T> {
        match self.remove(id) {
            Some(e) if e.bytes == stored => {
                self.hits += 1;
                Some(e.record)
            }
            _ => {
                self.misses += 1;
                None
            }
        }
    }

    /// Keeps `record`, just stored as `bytes`, in place of whatever was kept for `id`.
    pub fn offer(&mut self, id: &str, bytes: Vec<u8>, record: T) {
        self.remove(id);
        if self.capacity == 0 || bytes.len() > LARGEST.min(self.max_bytes / 8) {
            return;
        }
        self.bytes += bytes.len();
        self.entries.put(Arc::from(id), Entry { bytes, record });
        self.trim();
    }

    /// Drops the oldest entries until the bounds hold.
    fn trim(&mut self) {
        while self.entries.len() > self.capacity || self.bytes > self.max_bytes {
            let Some((_, e)) = self.entries.pop_oldest() else {
                break;
            };
            self.bytes -= e.bytes.len();
        }
    }

    /// Forgets `id` (the store holds nothing for it).
    pub fn forget(&mut self, id: &str) {
        self.remove(id);
    }

    fn remove(&mut self, id: &str) -> Option<Entry<T>> {
        let e = self.entries.remove(id)?;
        self.bytes -= e.bytes.len();
        Some(e)
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
        assert_eq!(hot.take("a", b"v2"), None, "the store changed: a miss");
        assert_eq!(hot.take("a", b"v1"), None, "a miss leaves nothing behind");
        hot.offer("a", b"v1".to_vec(), 1);
        hot.forget("a"); // the store holds nothing
        assert_eq!(hot.take("a", b"v1"), None, "forgotten: a miss");
        hot.offer("a", b"v1".to_vec(), 1);
        assert_eq!(hot.take("a", b"v1"), Some(1));
        assert_eq!(hot.take("a", b"v1"), None, "taking removes it");
        assert_eq!(hot.counts(), (1, 4));
    }

    #[test]
    fn an_offer_replaces_what_was_kept_and_large_records_are_not_kept() {
        let mut hot = Hot::new(8);
        hot.offer("a", b"v1".to_vec(), 1);
        hot.offer("a", b"v2".to_vec(), 2);
        assert_eq!(hot.len(), 1);
        assert_eq!(hot.bytes, 2);
        assert_eq!(hot.take("a", b"v2"), Some(2));
        assert_eq!(hot.bytes, 0);
        let large = vec![b' '; LARGEST + 1];
        hot.offer("big", large.clone(), 3);
        assert!(hot.is_empty(), "a record over LARGEST is not kept");
        assert_eq!(hot.take("big", &large), None);
    }

    #[test]
    fn a_record_over_an_eighth_of_a_small_share_is_not_kept() {
        let mut hot = Hot::default();
        hot.share(1024); // 16 KiB each, below LARGEST
        let small = vec![b' '; 100];
        hot.offer("small", small.clone(), 1);
        let large = vec![b' '; BYTES / 1024 / 8 + 1];
        hot.offer("large", large.clone(), 2);
        assert_eq!(hot.take("large", &large), None);
        assert_eq!(hot.take("small", &small), Some(1), "and the rest stays");
    }

    #[test]
    fn the_encoded_size_kept_is_bounded() {
        let mut hot = Hot::new(CAPACITY);
        let record = vec![b' '; LARGEST];
        for n in 0..(BYTES / LARGEST + 10) {
            hot.offer(&n.to_string(), record.clone(), n);
            assert!(hot.bytes <= BYTES, "{} bytes kept", hot.bytes);
        }
        assert_eq!(hot.len(), BYTES / LARGEST);
        assert_eq!(hot.take("0", &record), None, "the oldest went first");
    }

    #[test]
    fn a_partitions_share_is_its_part_of_the_bounds() {
        let mut hot = Hot::default();
        hot.share(4);
        assert_eq!(hot.capacity(), CAPACITY / 4);
        let record = vec![b' '; LARGEST];
        for n in 0..(BYTES / LARGEST) {
            hot.offer(&n.to_string(), record.clone(), n);
        }
        assert_eq!(hot.len(), BYTES / 4 / LARGEST, "a quarter of the bytes");
        hot.share(8); // more partitions taken over: the share shrinks at once
        let kept = BYTES / 8 / LARGEST;
        assert_eq!(hot.len(), kept, "an eighth of the bytes");
        let first = BYTES / LARGEST - kept; // the oldest of those kept under the larger share
        assert_eq!(
            hot.take(&(first - 1).to_string(), &record),
            None,
            "the oldest went"
        );
        assert_eq!(hot.take(&first.to_string(), &record), Some(first));
        hot.share(0);
        assert_eq!(hot.capacity(), CAPACITY, "none owned: one whole cache");
    }

    #[test]
    fn the_oldest_put_goes_first_and_the_size_stays_bounded() {
        let mut hot = Hot::new(3);
        for (i, id) in ["a", "b", "c", "d"].into_iter().enumerate() {
            hot.offer(id, vec![i as u8], i);
        }
        assert_eq!(hot.len(), 3);
        assert_eq!(hot.take("a", &[0]), None, "the oldest went");
        assert_eq!(hot.take("d", &[3]), Some(3));
        // the same ids put again and again leave the order bounded too
        for n in 0..1000u32 {
            let bytes = |n: u32| n.to_le_bytes().to_vec();
            hot.take("b", &bytes(n.wrapping_sub(1)));
            hot.offer("b", bytes(n), 0);
        }
        let places = hot.entries.places();
        assert!(places <= 2 * 3 + crate::fifo::SLACK + 1, "{places}");
        assert!(hot.len() <= 3);
        assert_eq!(hot.take("b", &999u32.to_le_bytes()), Some(0));
        let mut none: Hot<u8> = Hot::new(0);
        none.offer("a", vec![1], 1);
        assert!(none.is_empty(), "capacity 0 keeps nothing");
    }
}
