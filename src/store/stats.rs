//! What the store holds on disk and in memory, per table, for `/metrics` (docs/store.md
//! "Memory"): fjall's segments (files), their bytes, the bloom filters it keeps in memory for
//! them, and the write buffer over every table.

use super::{Store, Table};
use fjall::AbstractTree;

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
        let seen = |s: &StoreStats| *s.tables.iter().find(|t| t.table == Table::Seen).unwrap();
        assert_eq!(seen(&before).segments, 0);

        store.part(Table::Seen).rotate_memtable_and_wait().unwrap();
        let after = store.stats();
        let t = seen(&after);
        assert_eq!(t.segments, 1, "{after:?}");
        assert!(t.disk_bytes > 0 && t.filter_bytes > 0, "{t:?}");
        assert_eq!(after.tables.len(), Table::ALL.len());
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
        let of = |t: Table| *stats.tables.iter().find(|s| s.table == t).unwrap();
        assert!(Table::Outbox.scanned() && !Table::Instances.scanned());
        assert_eq!(
            (of(Table::Outbox).segments, of(Table::Outbox).filter_bytes),
            (1, 0)
        );
        assert_eq!(of(Table::Instances).segments, 1);
        assert!(of(Table::Instances).filter_bytes > 0, "{stats:?}");
    }
}
