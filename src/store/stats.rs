//! What the store holds on disk and in memory, per table, for `/metrics` (docs/store.md
//! "Memory"): fjall's segments (files), their bytes, the bloom filters it keeps in memory for
//! them, the write buffer over every table, the bytes each table was written, the point
//! lookups that reached it and its memtable flushes since the store opened.

use super::{Store, Table};
use fjall::AbstractTree;
use std::sync::atomic::{AtomicU64, Ordering};

/// A count per table since the store opened: the bytes of keys and values committed
/// (deletes count their key), as [`Store::apply`] (and [`Store::clear`]) hand them to the
/// store; or the point lookups that reached it (`Txn`).
#[derive(Debug, Default)]
pub(super) struct PerTable([AtomicU64; Table::ALL.len()]);

impl PerTable {
    pub(super) fn add(&self, table: Table, n: usize) {
        self.0[table as usize].fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Adds one batch's bytes, indexed by table.
    pub(super) fn add_all(&self, bytes: &[usize; Table::ALL.len()]) {
        for (n, b) in self.0.iter().zip(bytes) {
            if *b > 0 {
                n.fetch_add(*b as u64, Ordering::Relaxed);
            }
        }
    }

    fn get(&self, table: Table) -> u64 {
        self.0[table as usize].load(Ordering::Relaxed)
    }
}

/// One table's share of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableStats {
    pub table: Table,
    /// Segments (sorted files) on disk.
    pub segments: usize,
    /// Bytes of those segments on disk.
    pub disk_bytes: u64,
    /// Bytes of the segments' bloom filters, held in memory while the segments live.
    pub filter_bytes: usize,
    /// Tombstones (deletes, of keys there or not) still in the segments (`compact`).
    pub tombstones: u64,
    /// Bytes of keys and values committed to it since the store opened (a delete counts its
    /// key); what its flushes and merges then write again is not counted.
    pub written: u64,
    /// Memtable flushes since the store opened: each wrote a file to the table's first level,
    /// and every few of them bring a merge (docs/store.md "Memory").
    pub flushes: u64,
    /// Point lookups of a key that reached the table since the store opened: neither the
    /// transaction asking, nor the rounds in flight, nor the values kept in memory
    /// (`resident`) held the key, so fjall looked in its memtables and files. Scans are not
    /// counted.
    pub lookups: u64,
}

/// The whole store's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreStats {
    pub tables: Vec<TableStats>,
    /// Writes in memtables not flushed yet, over every table (bounded by
    /// `store.write_buffer_mib`).
    pub write_buffer_bytes: u64,
    /// Journal files on disk (writes not flushed to segments yet are in them).
    pub journals: usize,
}

impl StoreStats {
    /// Table `t`'s figures.
    pub fn table(&self, t: Table) -> &TableStats {
        (self.tables.iter().find(|s| s.table == t)).expect("stats list every table")
    }
}

impl Store {
    /// The store's figures now; each table's are read from its segment list (no I/O).
    pub fn stats(&self) -> StoreStats {
        StoreStats {
            tables: Table::ALL
                .iter()
                .map(|&table| {
                    let part = self.part(table);
                    TableStats {
                        table,
                        segments: part.segment_count(),
                        disk_bytes: part.disk_space(),
                        filter_bytes: part.tree.bloom_filter_size(),
                        tombstones: self.garbage(table).tombstones,
                        written: self.written.get(table),
                        flushes: part.flushes_completed() as u64,
                        lookups: self.lookups.get(table),
                    }
                })
                .collect(),
            write_buffer_bytes: self.ks.write_buffer_size(),
            journals: self.ks.journal_count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_keys_are_in_the_write_buffer_then_in_a_segment_with_its_filter() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.write().unwrap();
        for i in 0..1_000 {
            tx.put(Table::Seen, &format!("s{i:05}"), &i).unwrap();
        }
        tx.commit().unwrap();
        let before = store.stats();
        assert!(before.write_buffer_bytes > 0, "{before:?}");
        let seen = |s: &StoreStats| *s.table(Table::Seen);
        assert_eq!(seen(&before).segments, 0);

        store.part(Table::Seen).rotate_memtable_and_wait().unwrap();
        let after = store.stats();
        let t = seen(&after);
        assert_eq!(t.segments, 1, "{after:?}");
        assert_eq!((seen(&before).flushes, t.flushes), (0, 1));
        let all: u64 = after.tables.iter().map(|t| t.flushes).sum();
        assert_eq!(all, 1, "only `seen` was flushed: {after:?}");
        assert!(t.disk_bytes > 0 && t.filter_bytes > 0, "{t:?}");
        assert_eq!(after.tables.len(), Table::ALL.len());
    }

    #[test]
    fn committed_bytes_are_counted_per_table() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let written = |t: Table| store.stats().table(t).written;
        let tx = store.write().unwrap();
        tx.put(Table::Seen, "abc", &12345).unwrap();
        tx.put(Table::Meta, "n", &1).unwrap();
        assert_eq!(written(Table::Seen), 0, "nothing counts before the commit");
        tx.commit().unwrap();
        // key, then the value: the codec's mark and MessagePack's uint 16 (3 bytes), fixint
        assert_eq!(written(Table::Seen), 3 + 4);
        assert_eq!(written(Table::Meta), 1 + 2);
        let tx = store.write().unwrap();
        tx.delete(Table::Seen, "abc").unwrap();
        tx.commit().unwrap();
        assert_eq!(written(Table::Seen), 3 + 4 + 3, "a delete counts its key");
        assert_eq!(written(Table::Instances), 0);
    }

    #[test]
    fn lookups_that_reach_the_store_are_counted_per_table() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let lookups = |t: Table| store.stats().table(t).lookups;
        let tx = store.scoped(crate::store::Scope::Partition(1));
        tx.put(Table::Seen, "a", &1).unwrap();
        assert_eq!(tx.get::<i32>(Table::Seen, "a").unwrap(), Some(1));
        assert_eq!(
            lookups(Table::Seen),
            0,
            "the transaction's own write answers"
        );
        tx.commit().unwrap();
        let tx = store.scoped(crate::store::Scope::Partition(1));
        assert_eq!(tx.get::<i32>(Table::Seen, "a").unwrap(), Some(1));
        assert!(tx.contains(Table::Seen, "a").unwrap());
        assert!(!tx.delete(Table::Seen, "b").unwrap());
        assert_eq!(
            lookups(Table::Seen),
            3,
            "a get, a contains and a delete's look"
        );
        tx.remove(Table::Seen, "a");
        assert_eq!(lookups(Table::Seen), 3, "a removal does not look");
        let snap = store.read().unwrap();
        assert_eq!(snap.get::<i32>(Table::Instances, "x").unwrap(), None);
        assert_eq!(lookups(Table::Instances), 1, "a snapshot's get counts too");
        assert_eq!(lookups(Table::Meta), 0);
    }

    #[test]
    fn a_key_a_transaction_looked_up_is_not_looked_up_again_by_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let lookups = |t: Table| store.stats().table(t).lookups;
        let tx = store.scoped(crate::store::Scope::Partition(1));
        assert_eq!(tx.get::<i32>(Table::Active, "a").unwrap(), None);
        assert!(!tx.contains(Table::Active, "a").unwrap());
        assert_eq!(tx.get::<i32>(Table::Active, "a").unwrap(), None);
        assert_eq!(lookups(Table::Active), 1, "the first read asks the store");
        // written and removed again: the transaction's own writes answer, then the absence
        tx.put(Table::Active, "a", &7).unwrap();
        assert_eq!(tx.get::<i32>(Table::Active, "a").unwrap(), Some(7));
        tx.remove(Table::Active, "a");
        assert_eq!(tx.get::<i32>(Table::Active, "a").unwrap(), None);
        assert!(!tx.contains(Table::Active, "a").unwrap());
        assert_eq!(lookups(Table::Active), 1);
        assert!(!tx.contains(Table::Active, "b").unwrap());
        assert_eq!(lookups(Table::Active), 2, "another key asks");
        tx.commit().unwrap();
        // a new transaction asks again
        let tx = store.scoped(crate::store::Scope::Partition(1));
        assert_eq!(tx.get::<i32>(Table::Active, "a").unwrap(), None);
        assert_eq!(lookups(Table::Active), 3);
        drop(tx);
        // a key there: a second look at it answers from the first, the transaction's own
        // removal first
        let tx = store.scoped(crate::store::Scope::Partition(1));
        tx.put(Table::Versions, "v", &1).unwrap();
        tx.commit().unwrap();
        let before = lookups(Table::Versions);
        let tx = store.scoped(crate::store::Scope::Partition(1));
        assert!(tx.contains(Table::Versions, "v").unwrap());
        assert!(tx.contains(Table::Versions, "v").unwrap());
        assert_eq!(lookups(Table::Versions), before + 1);
        tx.remove(Table::Versions, "v");
        assert!(!tx.contains(Table::Versions, "v").unwrap());
        assert_eq!(lookups(Table::Versions), before + 1);
        drop(tx);
        // a node-wide transaction asks every time: other writers change its keys
        let node = store.write().unwrap();
        assert_eq!(node.get::<i32>(Table::Active, "n").unwrap(), None);
        assert_eq!(node.get::<i32>(Table::Active, "n").unwrap(), None);
        node.put(Table::Active, "m", &1).unwrap();
        node.commit().unwrap();
        let node = store.write().unwrap();
        assert!(node.contains(Table::Active, "m").unwrap());
        assert!(node.contains(Table::Active, "m").unwrap());
        assert_eq!(lookups(Table::Active), 7);
    }

    #[test]
    fn tables_only_scanned_keep_no_filters() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.write().unwrap();
        for i in 0..1_000 {
            tx.put(Table::Outbox, &crate::store::num(i), &i).unwrap();
            tx.put(Table::Instances, &format!("i{i}"), &i).unwrap();
        }
        tx.commit().unwrap();
        store
            .part(Table::Outbox)
            .rotate_memtable_and_wait()
            .unwrap();
        store
            .part(Table::Instances)
            .rotate_memtable_and_wait()
            .unwrap();
        let stats = store.stats();
        let of = |t: Table| *stats.table(t);
        assert!(Table::Outbox.scanned() && !Table::Instances.scanned());
        assert_eq!(
            (of(Table::Outbox).segments, of(Table::Outbox).filter_bytes),
            (1, 0)
        );
        assert_eq!(of(Table::Instances).segments, 1);
        assert!(of(Table::Instances).filter_bytes > 0, "{stats:?}");
    }
}
