//! The `Active` table: one active instance per workflow, event and correlation key, written
//! and removed without reading the entry back.
//!
//! An instance that ends removes its entry only if the entry still names it: another
//! instance may have taken the key since (a later put overwrites). Reading the entry to find
//! out costs a block read from disk once the table outgrows the cache, on every instance
//! that ends. So a put that overwrites another instance's entry marks that instance as
//! superseded on the key (`Superseded`), and a removal looks for its own mark instead: there,
//! it takes the mark away and leaves the entry; not there, the entry is its own and goes
//! unread. A mark is usually absent, which the table's bloom filters answer without a read.
//!
//! The marks are complete only for a partition whose `Active` entries were all put by a
//! broker that writes them: the partition's `Meta` records that ([`MARKED`]), written when
//! its `Active` entries are first touched while there are none. A partition with entries
//! from before (a store or changelog an older version wrote) keeps reading the entry before
//! removing it, as before.

use crate::store::{key, Table, Txn};

pub type Result<T> = crate::store::Result<T>;

/// The partition's `Meta` key saying that its `Superseded` marks are complete.
pub const MARKED: &str = "active.marked";

/// Whether the partition's marks are complete, found out once per batch.
#[derive(Debug, Default)]
pub struct Marks(Option<bool>);

impl Marks {
    /// Whether every overwritten entry of the partition is marked. The first call of a batch
    /// reads [`MARKED`]; when it is not there and the partition has no `Active` entry, this
    /// batch writes it, before its first put.
    fn complete(&mut self, tx: &Txn<'_>) -> Result<bool> {
        if let Some(known) = self.0 {
            return Ok(known);
        }
        let complete = if tx.contains(Table::Meta, MARKED)? {
            true
        } else if tx.first::<String>(Table::Active)?.is_none() {
            tx.put(Table::Meta, MARKED, &true)?;
            true
        } else {
            false
        };
        self.0 = Some(complete);
        Ok(complete)
    }
}

/// The `Superseded` key of `instance`'s entry under `Active` key `k`.
fn mark(k: &str, instance: &str) -> String {
    key(&[k, instance])
}

/// Makes `instance` the active instance of `Active` key `k`, marking the instance it
/// replaces, if any.
pub fn put(tx: &Txn<'_>, marks: &mut Marks, k: &str, instance: &str) -> Result<()> {
    marks.complete(tx)?;
    if let Some(before) = tx.get::<String>(Table::Active, k)? {
        if before != instance {
            tx.put(Table::Superseded, &mark(k, &before), &())?;
        }
    }
    tx.put(Table::Active, k, &instance)
}

/// Removes `instance`'s entry under `Active` key `k`: the entry when it still names
/// `instance`, else the mark its replacement left.
pub fn remove(tx: &Txn<'_>, marks: &mut Marks, k: &str, instance: &str) -> Result<()> {
    let m = mark(k, instance);
    if tx.contains(Table::Superseded, &m)? {
        tx.remove(Table::Superseded, &m);
    } else if marks.complete(tx)?
        || tx.get::<String>(Table::Active, k)?.as_deref() == Some(instance)
    {
        tx.remove(Table::Active, k);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Scope, Store};

    fn active(store: &Store, k: &str) -> Option<String> {
        store
            .scoped(Scope::Partition(1))
            .get(Table::Active, k)
            .unwrap()
    }

    fn marks_left(store: &Store) -> usize {
        let tx = store.scoped(Scope::Partition(1));
        tx.keys(Table::Superseded, "").unwrap().len()
    }

    /// Applies `ops` (instance, put or remove) on key "k", one transaction each.
    fn run(store: &Store, ops: &[(&str, bool)]) {
        for (inst, present) in ops {
            let tx = store.scoped(Scope::Partition(1));
            let mut marks = Marks::default();
            if *present {
                put(&tx, &mut marks, "k", inst).unwrap();
            } else {
                remove(&tx, &mut marks, "k", inst).unwrap();
            }
            tx.commit().unwrap();
        }
    }

    #[test]
    fn an_instance_that_ends_removes_only_its_own_entry() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // y takes the key while x has it; x ends: y stays active, and its end removes it
        run(&store, &[("x", true), ("y", true), ("x", false)]);
        assert_eq!(active(&store, "k").as_deref(), Some("y"));
        assert_eq!(marks_left(&store), 0, "x's mark went with its removal");
        run(&store, &[("y", false)]);
        assert_eq!(active(&store, "k"), None);
        // the replacement ends first: the key is free, and the older one's end changes nothing
        run(&store, &[("x", true), ("y", true), ("y", false)]);
        assert_eq!(active(&store, "k"), None);
        assert_eq!(marks_left(&store), 1);
        run(&store, &[("z", true), ("x", false)]);
        assert_eq!(active(&store, "k").as_deref(), Some("z"));
        assert_eq!(marks_left(&store), 0);
        // a put of the instance that has the key marks nothing
        run(&store, &[("z", true)]);
        assert_eq!(marks_left(&store), 0);
        let tx = store.scoped(Scope::Partition(1));
        assert!(tx.contains(Table::Meta, MARKED).unwrap());
    }

    #[test]
    fn a_partition_with_entries_from_before_the_marks_reads_before_removing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // written as an older broker did: y replaced x, no mark, no MARKED
        let tx = store.scoped(Scope::Partition(1));
        tx.put(Table::Active, "k", &"y").unwrap();
        tx.commit().unwrap();
        run(&store, &[("x", false)]);
        assert_eq!(
            active(&store, "k").as_deref(),
            Some("y"),
            "x's end read the entry"
        );
        let tx = store.scoped(Scope::Partition(1));
        assert!(!tx.contains(Table::Meta, MARKED).unwrap());
        drop(tx);
        run(&store, &[("y", false)]);
        assert_eq!(active(&store, "k"), None);
        // once the partition has no entry, the marks are complete from then on
        run(&store, &[("u", true)]);
        let tx = store.scoped(Scope::Partition(1));
        assert!(tx.contains(Table::Meta, MARKED).unwrap());
        // another partition has its own
        let other = store.scoped(Scope::Partition(2));
        assert!(!other.contains(Table::Meta, MARKED).unwrap());
    }
}
