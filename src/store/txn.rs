//! A write transaction ([`Txn`]): its writes kept in memory over the rounds in flight
//! ([`super::Pending`]) and the store, read through in key order, until a commit applies
//! them at once.

use super::{
    decode, encode, num, prefix_end, Pending, Result, Store, StoreError, Table, Write, SEP,
};
use foldhash::HashMap;
use serde::{de::DeserializeOwned, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Bound;

/// One transaction: writes are kept in memory until [`Txn::commit`] applies them atomically.
/// Dropping it without committing discards it.
pub struct Txn<'s> {
    store: &'s Store,
    /// Writes between the store and this transaction (see [`Store::scoped_over`]).
    base: Option<&'s Pending>,
    prefix: String,
    overlay: RefCell<Overlay>,
    /// `Meta` entries read from below the overlay (counters, read by most inputs), in a
    /// partition's scope: kept, as nothing but this transaction writes that scope's keys while
    /// it lives (one writer per partition). A node-wide transaction keeps none: other
    /// partitions' writers change keys in its scope.
    meta_read: RefCell<HashMap<String, Option<Vec<u8>>>>,
    /// What this transaction found below itself (the rounds in flight and the store) by
    /// full key: `false`, in neither; `true`, in the store (from [`Txn::contains`]). Kept in a
    /// partition's scope only (what is below cannot change while it lives, as for
    /// `meta_read`). A later read or look answers from here, below the transaction's own
    /// writes, without asking the store again (an instance's `active` entry, looked up by
    /// the event that starts it and by the index change that writes it; the version row
    /// each start looks at); and a key found in neither, put and then removed, leaves no
    /// tombstone, as there is nothing below for one to hide (an instance that starts and
    /// ends in one batch removes its `active` entry so).
    below: RefCell<HashMap<Table, HashMap<String, bool>>>,
    /// Bytes written so far (keys and values, overwrites counted again): a bound for batches.
    written: std::cell::Cell<usize>,
}

/// A transaction's writes by table and full key (`None`: deleted).
type Overlay = BTreeMap<Table, BTreeMap<String, Option<Vec<u8>>>>;

/// The bounds of a range of full keys `[lo, hi)` (an unbounded `hi`: to the table's end), as
/// borrowed keys.
fn str_bounds<'k>(lo: &'k str, hi: &'k Bound<String>) -> (Bound<&'k str>, Bound<&'k str>) {
    let hi = match hi {
        Bound::Excluded(h) => Bound::Excluded(h.as_str()),
        Bound::Included(h) => Bound::Included(h.as_str()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (Bound::Included(lo), hi)
}

/// The entries of a sorted upper layer (`None`: deleted there) over a sorted lower stream,
/// in key order: an upper entry hides the lower one with its key.
struct Layered<'a, U, L>
where
    U: Iterator<Item = (&'a str, Option<&'a [u8]>)>,
    L: Iterator<Item = Result<(String, Vec<u8>)>>,
{
    upper: std::iter::Peekable<U>,
    lower: std::iter::Peekable<L>,
}

impl<'a, U, L> Layered<'a, U, L>
where
    U: Iterator<Item = (&'a str, Option<&'a [u8]>)>,
    L: Iterator<Item = Result<(String, Vec<u8>)>>,
{
    fn new(upper: U, lower: L) -> Self {
        Layered {
            upper: upper.peekable(),
            lower: lower.peekable(),
        }
    }
}

impl<'a, U, L> Iterator for Layered<'a, U, L>
where
    U: Iterator<Item = (&'a str, Option<&'a [u8]>)>,
    L: Iterator<Item = Result<(String, Vec<u8>)>>,
{
    type Item = Result<(String, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            // (the upper entry comes first, it hides the lower one)
            let (take_upper, hides) = match (self.upper.peek(), self.lower.peek()) {
                (None, None) => return None,
                (_, Some(Err(_))) => return self.lower.next(),
                (Some(_), None) => (true, false),
                (None, Some(_)) => (false, false),
                (Some((u, _)), Some(Ok((l, _)))) => (*u <= l.as_str(), *u == l.as_str()),
            };
            if !take_upper {
                return self.lower.next();
            }
            if hides {
                self.lower.next();
            }
            let (k, v) = self.upper.next()?;
            if let Some(v) = v {
                return Some(Ok((k.to_string(), v.to_vec())));
            }
        }
    }
}

impl<'s> Txn<'s> {
    /// A transaction over the keys under `prefix` (a scope's), reading through `base`.
    pub(super) fn new(store: &'s Store, base: Option<&'s Pending>, prefix: String) -> Txn<'s> {
        Txn {
            store,
            base,
            prefix,
            overlay: RefCell::new(BTreeMap::new()),
            meta_read: RefCell::default(),
            below: RefCell::default(),
            written: std::cell::Cell::new(0),
        }
    }

    fn full(&self, key: &str) -> String {
        let mut full = String::with_capacity(self.prefix.len() + key.len());
        full.push_str(&self.prefix);
        full.push_str(key);
        full
    }

    /// Committed entries of `table` with full keys in `[lo, hi)`, under the pending writes
    /// and this transaction's writes, in key order, at most `limit`; keys without the scope
    /// prefix.
    fn merged(
        &self,
        table: Table,
        lo: String,
        hi: Bound<String>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        let overlay = self.overlay.borrow();
        let mine = overlay
            .get(&table)
            .map(|t| t.range::<str, _>(str_bounds(&lo, &hi)))
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_deref()));
        let base = self.base.into_iter().flat_map(|b| b.range(table, &lo, &hi));
        let range = (
            Bound::Included(lo.clone().into_bytes()),
            hi.clone().map(String::into_bytes),
        );
        let committed = self.store.part(table).range(range).map(|kv| {
            kv.map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v.to_vec()))
                .map_err(StoreError::from)
        });
        let strip = self.prefix.len();
        Layered::new(mine, Layered::new(base, committed))
            .take(limit)
            .map(|kv| kv.map(|(k, v)| (k[strip..].to_string(), v)))
            .collect()
    }

    fn decoded<T: DeserializeOwned>(
        table: Table,
        raw: Vec<(String, Vec<u8>)>,
    ) -> Result<Vec<(String, T)>> {
        raw.into_iter()
            .map(|(k, v)| decode(table, &k, &v).map(|v| (k, v)))
            .collect()
    }

    pub fn get<T: DeserializeOwned>(&self, table: Table, key: &str) -> Result<Option<T>> {
        self.get_raw(table, key, |b| decode(table, key, b))?
            .transpose()
    }

    /// The stored bytes of `key` (this transaction's, then the rounds in flight, then the
    /// store), handed to `f` without a copy and without decoding them.
    pub fn get_raw<R>(
        &self,
        table: Table,
        key: &str,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let full = self.full(key);
        if let Some(v) = self.overlay.borrow().get(&table).and_then(|t| t.get(&full)) {
            return Ok(v.as_deref().map(f));
        }
        if self.found_below(table, &full) == Some(false) {
            return Ok(None);
        }
        if table == Table::Meta && !self.prefix.is_empty() {
            if let Some(v) = self.meta_read.borrow().get(&full) {
                return Ok(v.as_deref().map(f));
            }
            let v = self.read_below(table, &full)?;
            let r = v.as_deref().map(f);
            self.meta_read.borrow_mut().insert(full, v);
            return Ok(r);
        }
        if let Some(v) = self.base.and_then(|b| b.get(table, &full)) {
            return Ok(v.map(f));
        }
        if let Some(v) = self.resident(table, &full) {
            return Ok(Some(f(&v)));
        }
        let v = self.store.lookup(table).get(full.as_bytes())?;
        if v.is_none() {
            self.saw(table, full, false);
        }
        Ok(v.map(|b| f(&b)))
    }

    /// The value the store keeps in memory for `full` (`store::resident`): below the overlay
    /// and the rounds in flight, the store's own value.
    fn resident(&self, table: Table, full: &str) -> Option<bytes::Bytes> {
        if table.is_resident() {
            self.store.resident.get(full)
        } else {
            None
        }
    }

    /// Asks the store to keep `key`'s value in memory once this transaction's write of it is
    /// stored (a record read again soon); a hint, which a transaction that is not stored
    /// leaves without effect.
    pub fn keep_resident(&self, table: Table, key: &str) {
        // (kept by their full key alone: only a resident table's keys may be marked)
        if table.is_resident() && self.store.resident.is_enabled() {
            self.store.resident.mark(&self.full(key));
        }
    }

    /// Asks the store to stop keeping `key`'s value in memory (it will not be read soon).
    pub fn forget_resident(&self, table: Table, key: &str) {
        if table.is_resident() && self.store.resident.is_enabled() {
            self.store.resident.forget(&self.full(key));
        }
    }

    /// Remembers whether `full` is in the store below the overlay (`there`), in a
    /// partition's scope ([`Txn::below`]).
    fn saw(&self, table: Table, full: String, there: bool) {
        if !self.prefix.is_empty() {
            let mut below = self.below.borrow_mut();
            below.entry(table).or_default().insert(full, there);
        }
    }

    /// What an earlier read or look found of `full` below the overlay ([`Txn::saw`]).
    fn found_below(&self, table: Table, full: &str) -> Option<bool> {
        (self.below.borrow().get(&table)).and_then(|keys| keys.get(full).copied())
    }

    /// Forgets this transaction's write of `full`: when the key was seen absent below, by
    /// dropping the write (nothing below to hide), else by writing a tombstone.
    fn unwrite(&self, table: Table, full: String) {
        let absent = self.found_below(table, &full) == Some(false);
        let mut overlay = self.overlay.borrow_mut();
        let t = overlay.entry(table).or_default();
        if absent {
            t.remove(&full);
        } else {
            t.insert(full, None);
        }
    }

    /// The bytes of a full key below the overlay: the rounds in flight, then the store.
    fn read_below(&self, table: Table, full: &str) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.base.and_then(|b| b.get(table, full)) {
            return Ok(v.map(<[u8]>::to_vec));
        }
        Ok(self
            .store
            .lookup(table)
            .get(full.as_bytes())?
            .map(|b| b.to_vec()))
    }

    /// Encodes `value` as [`Txn::put`] stores it.
    pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
        encode(value)
    }

    /// Decodes what [`Txn::put`] stored under `key` of `table`.
    pub fn decode<T: DeserializeOwned>(table: Table, key: &str, bytes: &[u8]) -> Result<T> {
        decode(table, key, bytes)
    }

    pub fn put<T: Serialize>(&self, table: Table, key: &str, value: &T) -> Result<()> {
        self.put_encoded(table, key, encode(value))
    }

    /// Stores `bytes`, which must be one value as the store's readers decode it (what
    /// [`Txn::encode`] made, or JSON text), without serializing it again.
    pub fn put_encoded(&self, table: Table, key: &str, bytes: Vec<u8>) -> Result<()> {
        debug_assert!(super::codec::decode::<serde::de::IgnoredAny>(&bytes).is_ok());
        self.put_bytes(table, key, bytes)
    }

    /// Stores `bytes` as they are: a value not in the store's encoding, which its table's
    /// readers decode themselves (the outbox's Kafka records, `broker::produced`).
    pub fn put_bytes(&self, table: Table, key: &str, bytes: Vec<u8>) -> Result<()> {
        self.written
            .set(self.written.get() + key.len() + bytes.len());
        let full = self.full(key);
        self.store.due.wrote(table, &self.prefix, &full);
        self.overlay
            .borrow_mut()
            .entry(table)
            .or_default()
            .insert(full, Some(bytes));
        Ok(())
    }

    /// About how many bytes this transaction wrote (its changelog record's size).
    pub fn written(&self) -> usize {
        self.written.get()
    }

    /// Removes `key` without looking whether it is there (no read: for a key the caller
    /// knows of, such as an index entry derived from the record it keeps; removing a key
    /// that is not there writes a tombstone that changes nothing).
    pub fn remove(&self, table: Table, key: &str) {
        self.unwrite(table, self.full(key));
    }

    /// Whether `key` is there. The store still looks the value up; the caller spares decoding it.
    pub fn contains(&self, table: Table, key: &str) -> Result<bool> {
        self.has(table, &self.full(key))
    }

    fn has(&self, table: Table, full: &str) -> Result<bool> {
        let mine =
            (self.overlay.borrow().get(&table)).and_then(|t| t.get(full).map(Option::is_some));
        Ok(match mine {
            Some(there) => there,
            None => match self.base.and_then(|b| b.get(table, full)) {
                Some(v) => v.is_some(),
                None if self.resident(table, full).is_some() => true,
                None => match self.found_below(table, full) {
                    Some(there) => there,
                    None => {
                        let there = self.store.lookup(table).contains_key(full.as_bytes())?;
                        self.saw(table, full.to_string(), there);
                        there
                    }
                },
            },
        })
    }

    /// Removes `key`; true if it was there.
    pub fn delete(&self, table: Table, key: &str) -> Result<bool> {
        let full = self.full(key);
        let existed = self.has(table, &full)?;
        if existed {
            self.unwrite(table, full);
        }
        Ok(existed)
    }

    /// Entries whose key starts with `prefix`, in key order.
    pub fn prefix<T: DeserializeOwned>(
        &self,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, T)>> {
        let lo = self.full(prefix);
        let hi = prefix_end(&lo);
        Self::decoded(table, self.merged(table, lo, hi, usize::MAX)?)
    }

    /// Entries whose key starts with `prefix`, in key order, as stored (not decoded).
    pub fn prefix_raw(&self, table: Table, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let lo = self.full(prefix);
        let hi = prefix_end(&lo);
        self.merged(table, lo, hi, usize::MAX)
    }

    /// The keys that start with `prefix`, in order (values are not decoded).
    pub fn keys(&self, table: Table, prefix: &str) -> Result<Vec<String>> {
        let lo = self.full(prefix);
        let hi = prefix_end(&lo);
        let raw = self.merged(table, lo, hi, usize::MAX)?;
        Ok(raw.into_iter().map(|(k, _)| k).collect())
    }

    /// Entries with keys in `[from, to)`, in key order, at most `limit`.
    pub fn range<T: DeserializeOwned>(
        &self,
        table: Table,
        from: &str,
        to: &str,
        limit: usize,
    ) -> Result<Vec<(String, T)>> {
        let raw = self.merged(
            table,
            self.full(from),
            Bound::Excluded(self.full(to)),
            limit,
        )?;
        Self::decoded(table, raw)
    }

    /// Removes and returns (oldest first, at most `limit`) the entries of a time-keyed table
    /// (see [`at`]) due at or before `until`, as (the key's rest, value).
    pub fn take_due<T: DeserializeOwned>(
        &self,
        table: Table,
        until: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<Vec<(String, T)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let end = self.full(&num(until.timestamp_millis().max(0) as u64 + 1));
        // from where the entries left start (see `due`): not through the tombstones of
        // every entry taken before
        let lo = self.store.due.start(table, &self.prefix);
        if lo >= end {
            return Ok(Vec::new()); // everything up to `until` was taken (the clock went back)
        }
        let raw = self.merged(table, lo, Bound::Excluded(end.clone()), limit)?;
        let cleared = match raw.last() {
            Some((k, _)) if raw.len() >= limit => self.full(k),
            _ => end,
        };
        let due = Self::decoded::<T>(table, raw)?;
        let mut out = Vec::with_capacity(due.len());
        for (k, v) in due {
            // just read, so there: removed unread (these tables keep no bloom filters)
            self.remove(table, &k);
            let rest = k.split_once(SEP).map(|(_, r)| r).unwrap_or_default();
            out.push((rest.to_string(), v));
        }
        self.store.due.cleared(table, &self.prefix, cleared);
        Ok(out)
    }

    /// The first entry of a table (within the scope), by key.
    pub fn first<T: DeserializeOwned>(&self, table: Table) -> Result<Option<(String, T)>> {
        let lo = self.store.due.start(table, &self.prefix);
        let hi = prefix_end(&self.prefix);
        let raw = self.merged(table, lo, hi, 1)?;
        Ok(Self::decoded(table, raw)?.into_iter().next())
    }

    /// The first key of `table` in this transaction's scope, its value not decoded (a table
    /// whose values are not all in the store's encoding, such as the outbox, can be asked too).
    pub fn first_key(&self, table: Table) -> Result<Option<String>> {
        let lo = self.store.due.start(table, &self.prefix);
        let hi = prefix_end(&self.prefix);
        Ok(self
            .merged(table, lo, hi, 1)?
            .into_iter()
            .next()
            .map(|(k, _)| k))
    }

    /// What this transaction changed, in key order, keeping it (tests; the broker ends its
    /// transactions with [`Txn::into_writes`]).
    #[cfg(test)]
    pub fn writes(&self) -> Vec<Write> {
        let overlay = self.overlay.borrow();
        let all = overlay
            .iter()
            .flat_map(|(table, t)| t.iter().map(move |kv| (*table, kv)));
        all.map(|(table, (key, value))| Write {
            table,
            key: key.clone(),
            value: value.clone().map(bytes::Bytes::from),
        })
        .collect()
    }

    /// What this transaction changed, in key order, ending it (nothing copied).
    pub fn into_writes(self) -> Vec<Write> {
        let all = self.overlay.into_inner().into_iter();
        all.flat_map(|(table, t)| {
            t.into_iter().map(move |(key, value)| Write {
                table,
                key,
                value: value.map(bytes::Bytes::from),
            })
        })
        .collect()
    }

    pub fn is_unchanged(&self) -> bool {
        // (a key put and then removed unseen below leaves its table's map empty)
        self.overlay.borrow().values().all(BTreeMap::is_empty)
    }

    /// Commits and fsyncs: when this returns, the batch survives a crash.
    pub fn commit(self) -> Result<()> {
        self.commit_with(true)
    }

    /// Commits without waiting for the disk: for changes that may be lost in a crash without
    /// harm (they are redone), such as forgetting acknowledged outbox entries. The next
    /// fsynced commit makes them durable too.
    pub fn commit_lazy(self) -> Result<()> {
        self.commit_with(false)
    }

    fn commit_with(self, sync: bool) -> Result<()> {
        if self.is_unchanged() {
            return Ok(());
        }
        let store = self.store;
        store.apply(&self.into_writes(), sync)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::*;

    /// A counter in `Meta` under a test's own name.
    struct M(&'static str);
    impl Entry for M {
        const TABLE: Table = Table::Meta;
        type Value = i64;
        fn key(&self) -> std::borrow::Cow<'_, str> {
            self.0.into()
        }
    }

    #[test]
    fn a_transaction_reads_through_pending_writes_and_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        for k in ["a", "b", "c", "d"] {
            tx.put(Table::Meta, k, &format!("stored {k}")).unwrap();
        }
        tx.commit().unwrap();
        // a round in flight: b rewritten, c deleted, e added
        let round = store.scoped(Scope::Partition(1));
        round.put(Table::Meta, "b", &"pending b").unwrap();
        round.delete(Table::Meta, "c").unwrap();
        round.put(Table::Meta, "e", &"pending e").unwrap();
        let mut pending = Pending::default();
        pending.add(7, std::sync::Arc::new(round.writes()));
        drop(round);
        let next = store.scoped_over(Scope::Partition(1), &pending);
        next.put(Table::Meta, "d", &"mine d").unwrap();
        next.delete(Table::Meta, "e").unwrap();
        let all: Vec<(String, String)> = next.prefix(Table::Meta, "").unwrap();
        let want = [("a", "stored a"), ("b", "pending b"), ("d", "mine d")];
        assert_eq!(
            all,
            want.map(|(k, v)| (k.to_string(), v.to_string())).to_vec()
        );
        assert_eq!(next.get::<String>(Table::Meta, "c").unwrap(), None);
        assert!(!next.delete(Table::Meta, "c").unwrap(), "deleted in flight");
        assert_eq!(
            next.first::<String>(Table::Meta).unwrap().map(|(k, _)| k),
            Some("a".to_string())
        );
        // only its own writes are its batch
        assert_eq!(next.writes().len(), 2);
        // nothing of the pending round is in the store
        let plain = store.scoped(Scope::Partition(1));
        assert_eq!(
            plain.get::<String>(Table::Meta, "b").unwrap().as_deref(),
            Some("stored b")
        );
    }

    #[test]
    fn meta_reads_kept_by_a_transaction_give_way_to_its_writes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        tx.put(Table::Meta, "n", &5).unwrap();
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(1));
        assert_eq!(tx.get::<i64>(Table::Meta, "n").unwrap(), Some(5));
        assert_eq!(tx.get::<i64>(Table::Meta, "absent").unwrap(), None);
        // read twice (the second from what the transaction kept), then written over
        assert_eq!(tx.add(&M("n"), 2).unwrap(), 7);
        assert_eq!(tx.add(&M("n"), 2).unwrap(), 9);
        assert_eq!(tx.add(&M("absent"), 1).unwrap(), 1);
        tx.delete(Table::Meta, "n").unwrap();
        assert_eq!(tx.get::<i64>(Table::Meta, "n").unwrap(), None);
        drop(tx);
        // a transaction after a commit by another reads what that one wrote
        let other = store.scoped(Scope::Partition(1));
        other.put(Table::Meta, "n", &1).unwrap();
        other.commit().unwrap();
        let tx = store.scoped(Scope::Partition(1));
        assert_eq!(tx.get::<i64>(Table::Meta, "n").unwrap(), Some(1));
        drop(tx);
        // a node-wide transaction keeps nothing: a partition's writer may change its keys
        let node = store.write().unwrap();
        let full = format!("p0001{SEP}n");
        assert_eq!(node.get::<i64>(Table::Meta, &full).unwrap(), Some(1));
        let part = store.scoped(Scope::Partition(1));
        part.put(Table::Meta, "n", &2).unwrap();
        part.commit().unwrap();
        assert_eq!(node.get::<i64>(Table::Meta, &full).unwrap(), Some(2));
    }

    #[test]
    fn a_transaction_whose_writes_cancel_out_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        assert!(tx.is_unchanged());
        assert_eq!(tx.get::<String>(Table::Active, "a").unwrap(), None);
        tx.put(Table::Active, "a", &"i1").unwrap();
        assert!(!tx.is_unchanged());
        tx.remove(Table::Active, "a");
        assert!(tx.is_unchanged(), "nothing to write: no commit, no sync");
        tx.remove(Table::Active, "unread");
        assert!(!tx.is_unchanged(), "a tombstone for a key not looked up");
    }

    #[test]
    fn a_key_seen_absent_then_put_and_removed_leaves_no_tombstone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        tx.put(Table::Active, "below", &"old").unwrap();
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(1));
        // seen absent (a read, then a look), put, removed: nothing to write
        assert_eq!(tx.get::<String>(Table::Active, "a").unwrap(), None);
        tx.put(Table::Active, "a", &"i1").unwrap();
        tx.remove(Table::Active, "a");
        assert!(!tx.contains(Table::Waits, "w").unwrap());
        tx.put(Table::Waits, "w", &()).unwrap();
        assert!(tx.delete(Table::Waits, "w").unwrap());
        assert!(!tx.contains(Table::Waits, "w").unwrap());
        // put and removed without a read first: a tombstone, as the key may be below
        tx.put(Table::Active, "unread", &"i2").unwrap();
        tx.remove(Table::Active, "unread");
        // there below: a tombstone
        assert!(tx.get::<String>(Table::Active, "below").unwrap().is_some());
        tx.remove(Table::Active, "below");
        let keys = |tx: &Txn<'_>| -> Vec<(String, bool)> {
            tx.writes()
                .into_iter()
                .map(|w| (w.key, w.value.is_some()))
                .collect()
        };
        let p = |k: &str| format!("p0001{SEP}{k}");
        assert_eq!(keys(&tx), vec![(p("below"), false), (p("unread"), false)]);
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(1));
        for k in ["a", "unread", "below"] {
            assert_eq!(tx.get::<String>(Table::Active, k).unwrap(), None, "{k}");
        }
        drop(tx);
        // a node-wide transaction keeps every tombstone: other writers change its keys
        let node = store.write().unwrap();
        assert_eq!(node.get::<String>(Table::Active, "n").unwrap(), None);
        node.put(Table::Active, "n", &"x").unwrap();
        node.remove(Table::Active, "n");
        assert_eq!(keys(&node), vec![("n".to_string(), false)]);
    }

    #[test]
    fn commits_are_durable_and_aborts_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        {
            let store = Store::open(&path).unwrap();
            let tx = store.write().unwrap();
            tx.put(Table::Instances, "a", &1).unwrap();
            tx.put(Table::Instances, "a/b", &2).unwrap();
            tx.put(Table::Instances, "b", &3).unwrap();
            tx.commit().unwrap();
            let tx = store.write().unwrap();
            tx.put(Table::Instances, "c", &4).unwrap();
            drop(tx); // not committed
        }
        let store = Store::open(&path).unwrap();
        let tx = store.write().unwrap();
        assert_eq!(tx.get::<i32>(Table::Instances, "c").unwrap(), None);
        let a: Vec<(String, i32)> = tx.prefix(Table::Instances, "a").unwrap();
        assert_eq!(a, vec![("a".into(), 1), ("a/b".into(), 2)]);
        assert_eq!(tx.add(&M("n"), 2).unwrap(), 2);
        assert_eq!(tx.add(&M("n"), -1).unwrap(), 1);
    }

    /// Decoding is the inverse of encoding for every float, not only for floats that were
    /// parsed (`broker::hot` hands out records kept since their encoding on that ground).

    #[test]
    fn a_blind_removal_hides_the_key_and_is_committed_like_a_delete() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.write().unwrap();
        tx.put(Table::Waits, "w1", &()).unwrap();
        tx.put(Table::Waits, "w2", &()).unwrap();
        tx.commit().unwrap();
        let tx = store.write().unwrap();
        tx.remove(Table::Waits, "w1");
        tx.remove(Table::Waits, "never-there");
        assert_eq!(tx.get::<()>(Table::Waits, "w1").unwrap(), None);
        assert!(
            !tx.delete(Table::Waits, "w1").unwrap(),
            "removed in this transaction"
        );
        let tombstones: Vec<String> = tx
            .writes()
            .into_iter()
            .filter(|w| w.value.is_none())
            .map(|w| w.key)
            .collect();
        assert_eq!(
            tombstones.len(),
            2,
            "both removals are written: {tombstones:?}"
        );
        tx.commit().unwrap();
        let tx = store.write().unwrap();
        let left: Vec<(String, ())> = tx.prefix(Table::Waits, "w").unwrap();
        assert_eq!(left, vec![("w2".into(), ())]);
    }

    #[test]
    fn a_transaction_reads_its_own_writes_merged_with_committed_data() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.write().unwrap();
        for (k, v) in [("a1", 1), ("a2", 2), ("a3", 3), ("b1", 4)] {
            tx.put(Table::Timers, k, &v).unwrap();
        }
        tx.commit().unwrap();
        let tx = store.write().unwrap();
        assert!(tx.delete(Table::Timers, "a2").unwrap());
        assert!(!tx.delete(Table::Timers, "a9").unwrap());
        tx.put(Table::Timers, "a0", &0).unwrap();
        tx.put(Table::Timers, "a3", &33).unwrap();
        let a: Vec<(String, i32)> = tx.prefix(Table::Timers, "a").unwrap();
        assert_eq!(
            a,
            vec![("a0".into(), 0), ("a1".into(), 1), ("a3".into(), 33)]
        );
        let r: Vec<(String, i32)> = tx.range(Table::Timers, "a1", "b", 5).unwrap();
        assert_eq!(r, vec![("a1".into(), 1), ("a3".into(), 33)]);
        let r: Vec<(String, i32)> = tx.range(Table::Timers, "", "z", 2).unwrap();
        assert_eq!(r, vec![("a0".into(), 0), ("a1".into(), 1)]);
        assert_eq!(
            tx.first::<i32>(Table::Timers).unwrap(),
            Some(("a0".into(), 0))
        );
        assert_eq!(tx.get::<i32>(Table::Timers, "a2").unwrap(), None);
        let w = tx.writes();
        assert_eq!(w.len(), 3);
        assert_eq!((w[0].key.as_str(), w[0].value.is_some()), ("a0", true));
        assert_eq!((w[1].key.as_str(), w[1].value.is_none()), ("a2", true));
        // nothing is visible to others before commit
        assert_eq!(
            store
                .read()
                .unwrap()
                .get::<i32>(Table::Timers, "a0")
                .unwrap(),
            None
        );
        tx.commit().unwrap();
        let snap = store.read().unwrap();
        assert_eq!(snap.get::<i32>(Table::Timers, "a0").unwrap(), Some(0));
        assert_eq!(snap.get::<i32>(Table::Timers, "a2").unwrap(), None);
    }

    #[test]
    fn partition_scopes_see_only_their_keys_and_their_writes_restore_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("a")).unwrap();
        let p1 = store.scoped(Scope::Partition(1));
        p1.put(Table::Instances, "x", &1).unwrap();
        p1.put(Table::Timers, "0001", &1).unwrap();
        let writes = p1.writes();
        p1.commit().unwrap();
        let p2 = store.scoped(Scope::Partition(2));
        p2.put(Table::Instances, "x", &2).unwrap();
        p2.commit().unwrap();
        let p1 = store.scoped(Scope::Partition(1));
        assert_eq!(p1.get::<i32>(Table::Instances, "x").unwrap(), Some(1));
        assert_eq!(
            p1.prefix::<i32>(Table::Instances, "").unwrap(),
            vec![("x".into(), 1)]
        );
        assert_eq!(
            store
                .scoped(Scope::Partition(2))
                .first::<i32>(Table::Timers)
                .unwrap(),
            None
        );
        assert_eq!(writes[0].key, format!("p0001{SEP}x"));
        // another broker's store takes the same writes and sees the same partition state
        let other = Store::open(&dir.path().join("b")).unwrap();
        other.apply(&writes, false).unwrap();
        let o1 = other.scoped(Scope::Partition(1));
        assert_eq!(o1.get::<i32>(Table::Instances, "x").unwrap(), Some(1));
        assert_eq!(
            o1.first::<i32>(Table::Timers).unwrap(),
            Some(("0001".into(), 1))
        );
    }

    #[test]
    fn due_entries_are_taken_from_where_the_last_take_stopped_and_none_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let t = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap();
        let tx = store.scoped(Scope::Partition(3));
        for ms in [10, 20, 30, 40] {
            tx.put(Table::Timers, &at(t(ms), "x"), &ms).unwrap();
        }
        tx.commit().unwrap();
        let taken = |tx: &Txn<'_>, until: i64, limit: usize| -> Vec<i64> {
            let due: Vec<(String, i64)> = tx.take_due(Table::Timers, t(until), limit).unwrap();
            due.into_iter().map(|(_, v)| v).collect()
        };
        let tx = store.scoped(Scope::Partition(3));
        assert_eq!(taken(&tx, 100, 2), [10, 20]);
        assert_eq!(taken(&tx, 100, 0), Vec::<i64>::new());
        tx.commit().unwrap();
        // the scan starts after what was taken
        assert!(store.due.start(Table::Timers, "p0003/") > scope_prefix(Scope::Partition(3)));
        let tx = store.scoped(Scope::Partition(3));
        assert_eq!(taken(&tx, 35, 10), [30]);
        // an earlier `until` than a take before finds nothing (a clock that went back)
        assert_eq!(taken(&tx, 15, 10), Vec::<i64>::new());
        // an entry due before where the last take stopped is still found
        tx.put(Table::Timers, &at(t(5), "late"), &5).unwrap();
        assert_eq!(
            tx.first::<i64>(Table::Timers).unwrap().map(|(_, v)| v),
            Some(5)
        );
        assert_eq!(taken(&tx, 100, 10), [5, 40]);
        drop(tx);
        // a take that was never stored (a void batch): forgotten with the partition
        store.forget_due(Scope::Partition(3));
        let tx = store.scoped(Scope::Partition(3));
        assert_eq!(taken(&tx, 100, 10), [30, 40]);
    }

    #[test]
    fn a_resident_value_is_read_without_a_lookup_and_is_always_the_stored_one() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory {
            resident: 1 << 20,
            ..Memory::default()
        };
        let store = Store::open_with(dir.path(), memory).unwrap();
        let p = Scope::Partition(1);
        let lookups = || store.stats().table(Table::Instances).lookups;
        let tx = store.scoped(p);
        tx.put(Table::Instances, "i", &1).unwrap();
        tx.keep_resident(Table::Instances, "i");
        tx.put(Table::Instances, "j", &1).unwrap();
        tx.commit().unwrap();
        let read = |key: &str| store.scoped(p).get::<i32>(Table::Instances, key).unwrap();
        let before = lookups();
        assert_eq!(read("i"), Some(1));
        assert_eq!(lookups(), before, "kept: no lookup");
        assert_eq!(read("j"), Some(1));
        assert_eq!(lookups(), before + 1, "not kept: looked up");
        assert!(store.scoped(p).contains(Table::Instances, "i").unwrap());
        assert_eq!(lookups(), before + 1);
        assert_eq!(store.resident().entries, 1);

        // a write not marked again (a restore, another transaction) is taken in
        let tx = store.scoped(p);
        tx.put(Table::Instances, "i", &2).unwrap();
        tx.commit().unwrap();
        assert_eq!(read("i"), Some(2));
        // a round in flight is read before it; one never stored leaves it as it was
        let round = store.scoped(p);
        round.put(Table::Instances, "i", &3).unwrap();
        round.keep_resident(Table::Instances, "i");
        let mut pending = Pending::default();
        pending.add(1, std::sync::Arc::new(round.writes()));
        drop(round);
        let over = store.scoped_over(p, &pending);
        assert_eq!(over.get::<i32>(Table::Instances, "i").unwrap(), Some(3));
        assert_eq!(read("i"), Some(2));
        let before = lookups();
        // removed: gone from memory too, and the next read asks the store
        let tx = store.scoped(p);
        tx.remove(Table::Instances, "i");
        tx.commit().unwrap();
        assert_eq!(read("i"), None);
        assert_eq!(lookups(), before + 1);
        assert_eq!(store.resident().entries, 0);

        // a scope given up or cleared keeps nothing in memory
        for forget in [true, false] {
            let tx = store.scoped(p);
            tx.put(Table::Instances, "k", &4).unwrap();
            tx.keep_resident(Table::Instances, "k");
            tx.commit().unwrap();
            assert_eq!(store.resident().entries, 1);
            if forget {
                store.forget_resident(p);
            } else {
                store.clear(p).unwrap();
            }
            assert_eq!(store.resident().entries, 0);
        }
        assert_eq!(read("k"), None, "cleared");
    }

    #[test]
    fn nothing_is_resident_without_a_budget() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory {
            resident: 0,
            ..Memory::default()
        };
        let store = Store::open_with(dir.path(), memory).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        tx.put(Table::Instances, "i", &1).unwrap();
        tx.keep_resident(Table::Instances, "i");
        tx.commit().unwrap();
        assert_eq!(store.resident().entries, 0);
        let tx = store.scoped(Scope::Partition(1));
        assert_eq!(tx.get::<i32>(Table::Instances, "i").unwrap(), Some(1));
        assert_eq!(store.stats().table(Table::Instances).lookups, 1);
    }
}
