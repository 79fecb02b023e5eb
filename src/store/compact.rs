//! Tombstone compaction. A deleted key leaves a tombstone in fjall's files, and fjall drops a
//! tombstone only when it merges it into the tree's last level. A table of a few hundred MB
//! never gets there on its own (its levels fill at 256 MiB, 2.5 GiB, 25 GiB, ...; lsm-tree
//! issue #125), so under steady churn (retention, dedupe expiry, the outbox, timers) every
//! deleted key stays on disk, and its share of the files' bloom filters and indexes stays in
//! memory, for good: disk and memory grow with everything ever deleted, not with what is kept.
//!
//! So a table whose files' entries are at least a quarter tombstones (and at least
//! `store.merge_tombstones`, [`MIN_TOMBSTONES`] by default) is merged whole into its last
//! level ([`Store::compact_tombstones`], looked at every [`EVERY`]), which drops them with the
//! values they shadow. A merge rewrites at most four entries per delete since the last one:
//! the work is in proportion to the deletes, and what stays on disk to what is kept.
//!
//! The merge keeps only each key's newest version. fjall's own merge keeps the older versions
//! an open snapshot might read, and at the last level it drops a tombstone even when it keeps
//! a value under it, which brings the deleted value back (lsm-tree 2.10; a test below shows
//! it). So a table is merged only while no snapshot is open, and no snapshot opens while it is
//! (`readers`); reads outside snapshots see the newest version, which the merge keeps.
//!
//! fjall deletes a journal once every table written in it has files newer than it. A merge
//! that drops a table's newest entries (tombstones) would leave its files older than journals
//! it wrote to, and a table not written again would keep every later journal on disk until
//! fjall stops writes (512 MiB of journals). So after a merge the table gets a tombstone of a
//! key that never holds a value ([`MARKER`]) and its memtable's flush is queued at once: its
//! files are newest again.

use super::{Result, Store, Table};
use fjall::{AbstractTree, AnyTree};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Fewer tombstones than this in a table are left alone by default (a merge has a fixed
/// cost; `store.merge_tombstones`).
pub const MIN_TOMBSTONES: u64 = 100_000;

/// How often the broker looks.
pub const EVERY: Duration = Duration::from_secs(10);

/// How long a merge waits for the open snapshots to close before it tries again next time.
const PATIENCE: Duration = Duration::from_secs(5);

/// The size of the files a merge writes (fjall's default for leveled tables).
const TARGET_SIZE: u64 = 64 << 20;

/// A key no table ever gives a value (the broker's keys are ASCII, and it sorts after them):
/// its tombstone makes a merged table's files newest again, and reads never return a
/// tombstone.
const MARKER: &str = "\u{10ffff}merged";

/// One table merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merged {
    pub table: Table,
    /// Tombstones in its files before and after.
    pub before: u64,
    pub after: u64,
    pub took: Duration,
}

/// Tombstones and entries (tombstones included) in a table's files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Garbage {
    pub tombstones: u64,
    pub items: u64,
}

impl Garbage {
    /// Whether a merge of the table pays for itself now. One tombstone may be the last
    /// merge's [`MARKER`] and does not count, so a table is never merged for it alone.
    pub fn worth_merging(self, min: u64) -> bool {
        let t = self.tombstones.saturating_sub(1);
        t >= min.max(1) && t * 4 >= self.items
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
    /// shadow). Each table waits up to [`PATIENCE`] for the open snapshots to close, and is
    /// left for next time when they do not. While a table is merged, snapshots wait or are
    /// skipped ([`Store::read`], [`Store::export`]) and so do fjall's own compactions of that
    /// table (writes would stall only if its first level filled meanwhile: fjall's limit is
    /// 20 files); reads outside snapshots do not wait. Logs and returns the tables merged.
    pub fn compact_tombstones(&self, min: u64) -> Result<Vec<Merged>> {
        let mut merged = vec![];
        for t in Table::ALL {
            let before = self.garbage(t);
            if !before.worth_merging(min) {
                continue;
            }
            let Some(_only) = self.readers.exclusive(PATIENCE) else {
                continue;
            };
            let started = Instant::now();
            let part = self.part(t);
            // every version under a key's newest may go: no snapshot can read one
            part.tree.major_compact(TARGET_SIZE, u64::MAX)?;
            part.remove(MARKER)?;
            part.rotate_memtable()?;
            let after = self.garbage(t).tombstones;
            // (lsm-tree declines a merge while one of its own holds a file, and logs a failed
            // one without an error: only a drop counts)
            if after < before.tombstones {
                let m = Merged {
                    table: t,
                    before: before.tombstones,
                    after,
                    took: started.elapsed(),
                };
                tracing::info!(
                    table = t.name(),
                    tombstones = m.before,
                    left = m.after,
                    took_ms = m.took.as_millis() as u64,
                    "merged a table to drop the tombstones of deleted keys"
                );
                merged.push(m);
            }
        }
        Ok(merged)
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
            let turn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store.compact_tombstones(min)
            }));
            match turn {
                Ok(Ok(_)) => {} // each merge is logged as it ends
                Ok(Err(e)) => tracing::warn!(error = %e,
                    "could not merge a table to drop its tombstones; trying again later"),
                Err(_) => tracing::error!(
                    "merging a table to drop its tombstones panicked; trying again later"
                ),
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
            "{seen:?}: under a quarter tombstones"
        );

        let newest = |t: Table| store.part(t).tree.get_highest_persisted_seqno();
        let before = newest(Table::Finished);
        let merged = store.compact_tombstones(500).unwrap();
        assert_eq!(
            merged.iter().map(|m| m.table).collect::<Vec<_>>(),
            vec![Table::Finished]
        );
        assert_eq!(merged[0].before, 900);
        assert!(merged[0].after <= 1, "{merged:?}");
        // the tombstones and the values under them are gone; the marker's tombstone is flushed
        settles(
            &store,
            Table::Finished,
            Garbage {
                tombstones: 1,
                items: 101,
            },
        );
        assert!(
            store.compact_tombstones(1).unwrap().is_empty(),
            "the marker alone never makes a table due"
        );
        assert!(
            newest(Table::Finished) > before,
            "the table's files are newer than its last delete again (fjall can drop journals)"
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

        let merged = store.compact_tombstones(10).unwrap();
        assert_eq!(
            merged.iter().map(|m| m.table).collect::<Vec<_>>(),
            vec![Table::Outbox]
        );
        settles(
            &store,
            Table::Outbox,
            Garbage {
                tombstones: 1,
                items: 1,
            },
        );
        let now: Vec<(String, u64)> = store.read().unwrap().prefix(Table::Outbox, "").unwrap();
        assert!(now.is_empty(), "the marker is never read");
    }

    /// Why our merge keeps only the newest version: fjall's own (with no snapshot ever
    /// closed, it may collect no version) drops the tombstones at the last level and keeps
    /// the values under them. If this fails, fjall changed, and `compact` can be revisited.
    #[test]
    fn fjalls_own_merge_brings_deleted_values_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let part = store.part(Table::Seen);
        for i in 0..10u64 {
            part.insert(crate::store::num(i), b"1").unwrap();
        }
        part.rotate_memtable_and_wait().unwrap();
        for i in 0..10u64 {
            part.remove(crate::store::num(i)).unwrap();
        }
        part.rotate_memtable_and_wait().unwrap();
        assert_eq!(part.len().unwrap(), 0);
        part.major_compact().unwrap();
        assert_eq!(store.garbage(Table::Seen).tombstones, 0);
        assert_eq!(part.len().unwrap(), 10, "the deleted values are back");
    }

    /// Waits (10 s at most) until `table`'s files hold `want`: flushes run on fjall's thread.
    fn settles(store: &Store, table: Table, want: Garbage) {
        let until = Instant::now() + Duration::from_secs(10);
        while store.garbage(table) != want {
            assert!(
                Instant::now() < until,
                "{table:?}: {:?}, want {want:?}",
                store.garbage(table)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
