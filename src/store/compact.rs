//! Tombstone compaction. A deleted key leaves a tombstone in fjall's files, and fjall drops a
//! tombstone only when it merges it into the tree's last level. A table of a few hundred MB
//! never gets there on its own (its levels fill at 256 MiB, 2.5 GiB, 25 GiB, ...), so under
//! steady churn (retention, dedupe expiry, the outbox, timers) every deleted key stays on disk,
//! and its share of the files' bloom filters and indexes stays in memory, for good: disk and
//! memory grow with everything ever deleted, not with what is kept.
//!
//! So a table whose files' entries are at least a quarter tombstones (and at least
//! `store.merge_tombstones`, [`MIN_TOMBSTONES`] by default) is merged whole into its last level ([`Store::compact_tombstones`], run
//! by the broker every [`EVERY`]), which drops them with the values they shadow. A merge
//! rewrites at most four entries per delete since the last one: the work is in proportion to
//! the deletes, and what stays on disk to what is kept.
//!
//! The merge keeps only each key's newest version. fjall's own merge keeps the older versions
//! an open snapshot might read, and at the last level it drops a tombstone even when it keeps
//! a value under it, which brings the deleted value back (lsm-tree 2.10). So a merge runs only
//! while no snapshot is open, and no snapshot ([`Store::read`], [`Store::export`]) is opened
//! while it runs ([`Readers`]); reads outside snapshots see the newest version, which the
//! merge keeps.

use super::{Result, Store, Table};
use fjall::{AbstractTree, AnyTree};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// Fewer tombstones than this in a table are left alone by default (a merge has a fixed
/// cost; `store.merge_tombstones`).
pub const MIN_TOMBSTONES: u64 = 100_000;

/// How often the broker looks.
pub const EVERY: Duration = Duration::from_secs(10);

/// The size of the files a merge writes (fjall's default for leveled tables).
const TARGET_SIZE: u64 = 64 << 20;

/// The store's open snapshots, and the gate a merge closes so that none opens while it runs.
#[derive(Debug, Default)]
pub struct Readers {
    gate: RwLock<()>,
    open: AtomicUsize,
}

/// One open snapshot; counted until dropped.
#[derive(Debug)]
pub struct Reading(Arc<Readers>);

impl Readers {
    /// A snapshot opens (waits while a merge runs).
    pub fn enter(self: &Arc<Self>) -> Reading {
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        self.open.fetch_add(1, Ordering::SeqCst);
        Reading(self.clone())
    }

    /// A snapshot opens unless a merge runs now.
    pub fn try_enter(self: &Arc<Self>) -> Option<Reading> {
        let _gate = self.gate.try_read().ok()?;
        self.open.fetch_add(1, Ordering::SeqCst);
        Some(Reading(self.clone()))
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tombstones and entries (tombstones included) in a table's files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Garbage {
    pub tombstones: u64,
    pub items: u64,
}

impl Garbage {
    /// Whether a merge of the table pays for itself now.
    pub fn worth_merging(self, min: u64) -> bool {
        self.tombstones >= min && self.tombstones * 4 >= self.items
    }
}

impl Store {
    /// The tombstones and entries in `table`'s files (not its memtables).
    pub fn garbage(&self, table: Table) -> Garbage {
        let AnyTree::Standard(tree) = &self.part(table).tree else {
            return Garbage::default();
        };
        let levels = tree.levels.read().expect("fjall's level lock");
        levels.iter().fold(Garbage::default(), |g, s| Garbage {
            tombstones: g.tombstones + s.metadata.tombstone_count,
            items: g.items + s.metadata.item_count,
        })
    }

    /// Merges every table whose files hold at least `min` tombstones, a quarter of their
    /// entries or more, into its last level, which drops the tombstones (and the values they
    /// shadow). Does nothing while a snapshot is open. Blocks while it merges; fjall's own
    /// compactions and the opening of snapshots wait meanwhile, writes and other reads do
    /// not. Returns the tables merged.
    pub fn compact_tombstones(&self, min: u64) -> Result<Vec<Table>> {
        let due: Vec<Table> = Table::ALL
            .into_iter()
            .filter(|&t| self.garbage(t).worth_merging(min))
            .collect();
        if due.is_empty() {
            return Ok(due);
        }
        let Ok(_gate) = self.readers.gate.try_write() else {
            return Ok(vec![]);
        };
        if self.readers.open.load(Ordering::SeqCst) != 0 {
            return Ok(vec![]);
        }
        for &t in &due {
            // every version under a key's newest may go: no snapshot can read one
            self.part(t).tree.major_compact(TARGET_SIZE, u64::MAX)?;
        }
        Ok(due)
    }
}

/// Runs [`Store::compact_tombstones`] with `min` every [`EVERY`] on a thread of its own
/// (`store-compact`) until the store is dropped; `min` 0: never.
pub fn spawn(store: &Arc<Store>, min: u64) -> std::io::Result<()> {
    if min == 0 {
        return Ok(());
    }
    let store: Weak<Store> = Arc::downgrade(store);
    std::thread::Builder::new()
        .name("store-compact".into())
        .spawn(move || loop {
            // a period, not a wait for a condition: the tombstones are counted when it ends
            std::thread::sleep(EVERY);
            let Some(store) = store.upgrade() else {
                return;
            };
            let started = std::time::Instant::now();
            match store.compact_tombstones(min) {
                Ok(merged) if !merged.is_empty() => tracing::debug!(
                    tables = ?merged.iter().map(|t| t.name()).collect::<Vec<_>>(),
                    took_ms = started.elapsed().as_millis() as u64,
                    "merged tables to drop the tombstones of deleted keys"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "could not merge a table to drop its tombstones; trying again later"),
            }
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_of_mostly_deleted_keys_is_merged_and_its_tombstones_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.write().unwrap();
        for i in 0..1_000u64 {
            tx.put(Table::Finished, &crate::store::num(i), &()).unwrap();
            tx.put(Table::Seen, &crate::store::num(i), &i).unwrap();
        }
        tx.commit().unwrap();
        let flush = |t: Table| store.part(t).rotate_memtable_and_wait().unwrap();
        flush(Table::Finished);
        flush(Table::Seen);
        let tx = store.write().unwrap();
        for i in 0..900u64 {
            tx.remove(Table::Finished, &crate::store::num(i));
        }
        for i in 0..100u64 {
            tx.remove(Table::Seen, &crate::store::num(i));
        }
        tx.commit().unwrap();
        flush(Table::Finished);
        flush(Table::Seen);
        let finished = store.garbage(Table::Finished);
        assert_eq!(finished.tombstones, 900, "{finished:?}");
        assert_eq!(finished.items, 1_900);
        assert!(finished.worth_merging(500));
        assert!(!finished.worth_merging(1_000), "below the minimum");
        let seen = store.garbage(Table::Seen);
        assert!(
            !seen.worth_merging(50),
            "{seen:?}: fewer tombstones than live entries"
        );

        assert_eq!(
            store.compact_tombstones(500).unwrap(),
            vec![Table::Finished]
        );
        assert_eq!(
            store.garbage(Table::Finished),
            Garbage {
                tombstones: 0,
                items: 100
            },
            "the tombstones and the values under them are gone"
        );
        assert_eq!(store.garbage(Table::Seen), seen, "left alone");
        let tx = store.read().unwrap();
        let left: Vec<(String, ())> = tx.prefix(Table::Finished, "").unwrap();
        assert_eq!(left.len(), 100);
        assert_eq!(left[0].0, crate::store::num(900));
    }

    #[test]
    fn no_merge_while_a_snapshot_is_open_and_the_snapshot_reads_what_it_saw() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.write().unwrap();
        for i in 0..100u64 {
            tx.put(Table::Outbox, &crate::store::num(i), &i).unwrap();
        }
        tx.commit().unwrap();
        store
            .part(Table::Outbox)
            .rotate_memtable_and_wait()
            .unwrap();
        let snap = store.read().unwrap();
        let tx = store.write().unwrap();
        for i in 0..100u64 {
            tx.remove(Table::Outbox, &crate::store::num(i));
        }
        tx.commit().unwrap();
        store
            .part(Table::Outbox)
            .rotate_memtable_and_wait()
            .unwrap();
        assert!(store.garbage(Table::Outbox).worth_merging(10));

        assert!(store.compact_tombstones(10).unwrap().is_empty());
        let seen: Vec<(String, u64)> = snap.prefix(Table::Outbox, "").unwrap();
        assert_eq!(
            seen.len(),
            100,
            "the snapshot still reads the deleted entries"
        );
        drop(snap);

        assert_eq!(store.compact_tombstones(10).unwrap(), vec![Table::Outbox]);
        assert_eq!(store.garbage(Table::Outbox), Garbage::default());
        let now: Vec<(String, u64)> = store.read().unwrap().prefix(Table::Outbox, "").unwrap();
        assert!(now.is_empty());
    }
}
