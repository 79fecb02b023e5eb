//! The `Unpinned` table: the `Waits` keys with a value not pinned yet ([`index::ANY`]) under
//! which some instance waits, so that an event looks up only the unpinned keys in use.
//!
//! An event of a definition with `n` correlation values looks its instances up under `2^n`
//! waits keys: its own values, and every subset of them replaced by [`index::ANY`]
//! (`broker::router`). Each lookup is a prefix scan of `Waits`, which reads a block from
//! every level of the table's files that overlaps the prefix, whether or not anything is
//! there; and usually nothing is: an instance waits unpinned only until its first event. So
//! a waits key with an unpinned value has a head here while any entry is under it, and an
//! event scans such a key only when its head is there, which the table's bloom filters
//! answer without a read when it is not.
//!
//! A head counts the entries under its key: an entry written where none was adds one, an
//! entry removed that was there takes one away, and the head goes with the last. Whether the
//! entry was there is a read, made only for unpinned keys (a removal of an entry already gone
//! is a message applied late, and counts nothing). Lookups trust the heads only in a
//! partition that keeps them complete (`broker::kept`); one with state from an older version
//! has its heads counted afresh from its entries, once ([`rebuild`]).

use super::compound::HeadOf;
use super::index::{self, Entry};
use crate::store::{Table, Txn, SEP};
use std::collections::BTreeMap;

pub type Result<T> = crate::store::Result<T>;

/// The head of waits key `wk` of `workflow`'s event `event`.
fn head(workflow: &str, event: &str, wk: &str) -> HeadOf {
    HeadOf::new(workflow, event, wk)
}

/// Writes `Waits` entry `e`, and counts it in its key's head when the key has a value not
/// pinned.
pub fn put(tx: &Txn<'_>, e: &Entry) -> Result<()> {
    let w = e.waits();
    if index::has_any(&e.key) && !tx.holds(&w)? {
        let h = head(&e.workflow, &e.event, &e.key);
        let n = tx.read(&h)?.unwrap_or(0);
        tx.write(&h, &(n + 1))?;
    }
    tx.write(&w, &())
}

/// Removes `Waits` entry `e` (unread when its key is pinned: an entry not there leaves a
/// tombstone that changes nothing), and takes it out of its key's head when the key has a
/// value not pinned.
pub fn remove(tx: &Txn<'_>, e: &Entry) -> Result<()> {
    let w = e.waits();
    if index::has_any(&e.key) && tx.holds(&w)? {
        let h = head(&e.workflow, &e.event, &e.key);
        match tx.read(&h)?.unwrap_or(0) {
            0 | 1 => tx.unset(&h),
            n => tx.write(&h, &(n - 1))?,
        }
    }
    tx.unset(&w);
    Ok(())
}

/// Entries read at a time by [`rebuild`].
const PAGE: usize = 4096;

/// The most heads [`rebuild`] writes in one batch (their changelog record stays far below
/// `kafka::log`'s record bound): a partition with more keeps looking every key up.
pub const MAX_HEADS: usize = 100_000;

/// Counts the partition's unpinned `Waits` entries afresh into their heads, replacing any
/// there (in a partition with state from an older version, heads were kept only for entries
/// written since), and returns how many heads there are; `None`, writing nothing, when there
/// would be more than [`MAX_HEADS`]. Reads the whole table, a page at a time: once per
/// partition.
pub fn rebuild(tx: &Txn<'_>) -> Result<Option<usize>> {
    let mut heads: BTreeMap<String, u64> = BTreeMap::new();
    let mut from = String::new();
    loop {
        let page = tx.range::<serde::de::IgnoredAny>(Table::Waits, &from, "\u{10FFFF}", PAGE)?;
        for (k, _) in &page {
            // `workflow SEP event SEP waits key SEP instance`: the head is all but the
            // instance, and the waits key all after the event (its values may hold a SEP)
            if let Some((h, _)) = k.rsplit_once(SEP) {
                let wk = h.splitn(3, SEP).nth(2).unwrap_or_default();
                if index::has_any(wk) {
                    *heads.entry(h.to_string()).or_default() += 1;
                    if heads.len() > MAX_HEADS {
                        return Ok(None);
                    }
                }
            }
        }
        match page.last() {
            Some((k, _)) if page.len() == PAGE => from = format!("{k}\u{0}"),
            _ => break,
        }
    }
    for h in tx.keys(Table::Unpinned, "")? {
        if !heads.contains_key(&h) {
            tx.remove(Table::Unpinned, &h);
        }
    }
    for (h, n) in &heads {
        tx.put(Table::Unpinned, h, n)?;
    }
    Ok(Some(heads.len()))
}

/// Whether instances may wait under waits key `wk` of `workflow`'s event `event`: a pinned
/// key always may; an unpinned one only when it has a head, or when the partition does not
/// keep them complete (`complete`: [`super::kept::Kept::heads`]).
pub fn may_wait(
    tx: &Txn<'_>,
    complete: bool,
    workflow: &str,
    event: &str,
    wk: &str,
) -> Result<bool> {
    if !complete || !index::has_any(wk) {
        return Ok(true);
    }
    tx.holds(&head(workflow, event, wk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Entry as _, Scope, Store};

    fn entry(key: &str, instance: &str) -> Entry {
        Entry {
            workflow: "w".into(),
            event: "e".into(),
            key: key.into(),
            instance: instance.into(),
        }
    }

    /// Puts or removes `e` and its head, as `Batch::index_here` does, a transaction each.
    fn apply(store: &Store, e: &Entry, present: bool) {
        let tx = store.scoped(Scope::Partition(1));
        if present {
            put(&tx, e).unwrap();
        } else {
            remove(&tx, e).unwrap();
        }
        tx.commit().unwrap();
    }

    fn may(store: &Store, complete: bool, wk: &str) -> bool {
        let tx = store.scoped(Scope::Partition(1));
        may_wait(&tx, complete, "w", "e", wk).unwrap()
    }

    #[test]
    fn an_unpinned_key_is_looked_up_while_an_instance_waits_under_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let any = index::ANY;
        assert!(!may(&store, true, any), "nobody waits unpinned yet");
        assert!(may(&store, true, "k1"), "a pinned key is always looked up");
        assert!(
            may(&store, false, any),
            "a partition without complete heads looks every key up"
        );
        let (a, b) = (entry(any, "a"), entry(any, "b"));
        apply(&store, &a, true);
        apply(&store, &b, true);
        apply(&store, &b, true);
        assert!(may(&store, true, any));
        apply(&store, &a, false);
        apply(&store, &a, false);
        assert!(
            may(&store, true, any),
            "b still waits under it (a put twice and removed twice counts once)"
        );
        apply(&store, &b, false);
        assert!(!may(&store, true, any), "the last one took the head");
        // a removal of an entry already gone changes nothing
        apply(&store, &b, false);
        assert!(!may(&store, true, any));
        // entries removed together, in one transaction, take the head with the last
        apply(&store, &a, true);
        apply(&store, &b, true);
        let tx = store.scoped(Scope::Partition(1));
        for e in [&a, &b] {
            remove(&tx, e).unwrap();
        }
        tx.commit().unwrap();
        assert!(!may(&store, true, any));
        // counted afresh (a partition from an older version): a stale head goes, the
        // entries' heads are counted, a pinned entry's key has none
        apply(&store, &a, true);
        let tx = store.scoped(Scope::Partition(1));
        tx.write(&b.waits(), &()).unwrap(); // written without its head
        tx.write(&entry("k9", "d").waits(), &()).unwrap();
        let stale = entry(&format!("k1{}{any}", '\u{1e}'), "x");
        tx.write(&head("w", "e", &stale.key), &7).unwrap();
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(1));
        assert_eq!(rebuild(&tx).unwrap(), Some(1));
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(1));
        let heads: Vec<(String, u64)> = tx.prefix(Table::Unpinned, "").unwrap();
        assert_eq!(heads, vec![(head("w", "e", any).key().into_owned(), 2)]);
        drop(tx);
        apply(&store, &a, false);
        apply(&store, &b, false);
        assert!(!may(&store, true, any), "both counted, both taken away");
        // a value holding a SEP (a guard from the instance's data) keeps its key whole
        let guarded = entry(&format!("{any}\u{1d}=a{SEP}b"), "g");
        let tx = store.scoped(Scope::Partition(1));
        tx.write(&guarded.waits(), &()).unwrap();
        assert_eq!(rebuild(&tx).unwrap(), Some(1));
        tx.commit().unwrap();
        assert!(may(&store, true, &guarded.key));
        apply(&store, &guarded, false);
        assert!(!may(&store, true, &guarded.key));
        // a pinned entry has no head
        apply(&store, &entry("k1", "c"), true);
        let tx = store.scoped(Scope::Partition(1));
        assert!(tx.keys(Table::Unpinned, "").unwrap().is_empty());
    }

    #[test]
    fn a_rebuild_past_the_bound_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        for i in 0..=MAX_HEADS {
            // an expression guard per instance: a head each
            let e = entry(&format!("{}\u{1d}={i}", index::ANY), &format!("i{i}"));
            tx.write(&e.waits(), &()).unwrap();
        }
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(1));
        assert_eq!(rebuild(&tx).unwrap(), None);
        assert!(tx.is_unchanged());
    }
}
