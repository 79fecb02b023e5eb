//! A map whose entries leave in the order they were put: the bookkeeping shared by the caches
//! that keep the latest records written, [`crate::store::resident`] (stored bytes, behind
//! locks) and [`crate::broker::hot`] (decoded records, one per partition). What bounds them
//! (entries, bytes, what an entry weighs) stays with each: this only says which entry is the
//! oldest.
//!
//! Each entry carries the number of the put that placed it, and the order holds
//! `(number, key)`. A key removed or put again leaves a stale place behind, skipped when it
//! comes up; once stale places outnumber the live ones by more than [`SLACK`], the order is
//! rebuilt without them. Putting, reading, removing a key and taking the oldest are O(1),
//! amortized; [`Fifo::remove_where`] walks every key.

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::hash::Hash;

/// How many more stale places than live entries the order keeps before it is rebuilt.
pub const SLACK: usize = 64;

/// Entries by key, oldest put first out.
#[derive(Debug)]
pub struct Fifo<K, V> {
    map: foldhash::HashMap<K, Put<V>>,
    order: VecDeque<(u64, K)>,
    puts: u64,
}

#[derive(Debug)]
struct Put<V> {
    number: u64,
    value: V,
}

impl<K, V> Default for Fifo<K, V> {
    fn default() -> Self {
        Fifo {
            map: Default::default(),
            order: VecDeque::new(),
            puts: 0,
        }
    }
}

impl<K: Hash + Eq + Clone, V> Fifo<K, V> {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Places in the order, stale ones included (bounded: see the module docs).
    pub fn places(&self) -> usize {
        self.order.len()
    }

    /// Puts `value` under `key` as the newest entry, returning what the key held before.
    pub fn put(&mut self, key: K, value: V) -> Option<V> {
        self.puts += 1;
        let number = self.puts;
        self.order.push_back((number, key.clone()));
        let before = self.map.insert(key, Put { number, value });
        self.tidy();
        before.map(|p| p.value)
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.get(key).map(|p| &p.value)
    }

    /// The value of `key`, to change in place: the entry keeps its place in the order.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.get_mut(key).map(|p| &mut p.value)
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.contains_key(key)
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let p = self.map.remove(key)?;
        self.tidy();
        Some(p.value)
    }

    /// Removes and returns the oldest entry.
    pub fn pop_oldest(&mut self) -> Option<(K, V)> {
        while let Some((number, key)) = self.order.pop_front() {
            if self.map.get(&key).is_some_and(|p| p.number == number) {
                let p = self.map.remove(&key)?;
                self.tidy();
                return Some((key, p.value));
            }
        }
        None
    }

    /// Removes every entry whose key `drop` picks, returning them.
    pub fn remove_where(&mut self, mut drop: impl FnMut(&K) -> bool) -> Vec<(K, V)> {
        let keys: Vec<K> = self.map.keys().filter(|k| drop(k)).cloned().collect();
        let gone = keys
            .into_iter()
            .filter_map(|k| {
                let p = self.map.remove(&k)?;
                Some((k, p.value))
            })
            .collect();
        self.tidy();
        gone
    }

    /// Rebuilds the order without its stale places once they pile up.
    fn tidy(&mut self) {
        if self.order.len() <= 2 * self.map.len() + SLACK {
            return;
        }
        let map = &self.map;
        self.order
            .retain(|(number, k)| map.get(k).is_some_and(|p| p.number == *number));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_put_leaves_first_and_a_put_again_moves_to_the_back() {
        let mut f: Fifo<String, u32> = Fifo::default();
        for (i, k) in ["a", "b", "c"].into_iter().enumerate() {
            assert_eq!(f.put(k.to_string(), i as u32), None);
        }
        assert_eq!(f.put("a".to_string(), 9), Some(0), "what it held before");
        *f.get_mut("b").unwrap() = 7; // changed in place: keeps its place
        assert_eq!(f.pop_oldest(), Some(("b".to_string(), 7)));
        assert_eq!(f.pop_oldest(), Some(("c".to_string(), 2)));
        assert_eq!(f.pop_oldest(), Some(("a".to_string(), 9)));
        assert_eq!(f.pop_oldest(), None);
        assert!(f.is_empty());
    }

    #[test]
    fn removed_keys_are_skipped_and_their_places_do_not_pile_up() {
        let mut f: Fifo<String, usize> = Fifo::default();
        f.put("keep".to_string(), 0);
        for i in 0..100_000 {
            let k = format!("k{}", i % 7);
            f.put(k.clone(), i);
            assert_eq!(f.remove(k.as_str()), Some(i));
        }
        assert!(f.places() <= 2 * f.len() + SLACK + 1, "{}", f.places());
        assert_eq!(f.pop_oldest(), Some(("keep".to_string(), 0)));
        assert_eq!(f.pop_oldest(), None);
    }

    #[test]
    fn taking_the_oldest_keeps_the_places_bounded() {
        let mut f: Fifo<u32, u32> = Fifo::default();
        for i in 0..1_000 {
            f.put(i, i);
        }
        // stale places pile up behind the live entries, up to the bound
        for i in 1_000..100_000 {
            f.put(i, i);
            f.remove(&i);
        }
        for i in 0..1_000 {
            assert_eq!(f.pop_oldest(), Some((i, i)));
        }
        assert!(f.places() <= SLACK + 1, "{}", f.places());
    }

    #[test]
    fn remove_where_drops_the_keys_picked() {
        let mut f: Fifo<String, u8> = Fifo::default();
        for k in ["p1/a", "p1/b", "p2/a"] {
            f.put(k.to_string(), 1);
        }
        let mut gone = f.remove_where(|k| k.starts_with("p1/"));
        gone.sort();
        assert_eq!(gone, [("p1/a".to_string(), 1), ("p1/b".to_string(), 1)]);
        assert!(f.contains_key("p2/a"));
        assert_eq!(f.len(), 1);
        assert_eq!(f.pop_oldest().map(|(k, _)| k), Some("p2/a".to_string()));
    }
}
