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
//! The marks are complete only for a partition whose every `Active` write was made by a
//! broker that writes them (`broker::kept`); a partition with state from an older version (a
//! data directory of layout 1, a changelog of format 2, a snapshot of format 1) keeps reading
//! each entry before removing it.
//!
//! A removal relies on each index change being applied once (`broker::apply` deduplicates
//! messages by their source position): a second removal of an instance whose mark is gone
//! would take its replacement's entry.

use super::compound::ActiveOf;
use crate::store::Txn;

pub type Result<T> = crate::store::Result<T>;

/// Makes `instance` the active instance of `k`, marking the instance it replaces, if any.
pub fn put(tx: &Txn<'_>, k: &ActiveOf, instance: &str) -> Result<()> {
    if let Some(before) = tx.read(k)? {
        if before != instance {
            tx.write(&k.superseded(&before), &())?;
        }
    }
    tx.write(k, &instance.to_string())
}

/// Removes `instance`'s entry under `k`: the entry when it still names `instance`, else the
/// mark its replacement left. `complete`: the partition's marks are
/// ([`super::kept::Kept::marks`]); if not, the entry is read first.
pub fn remove(tx: &Txn<'_>, complete: bool, k: &ActiveOf, instance: &str) -> Result<()> {
    let m = k.superseded(instance);
    if tx.holds(&m)? {
        tx.unset(&m);
    } else if complete || tx.read(k)?.as_deref() == Some(instance) {
        tx.unset(k);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::kept::{Flag, Kept};
    use crate::store::{Scope, Store, Table};

    fn key() -> ActiveOf {
        ActiveOf::new("w", "e", "k")
    }

    fn active(store: &Store) -> Option<String> {
        store.scoped(Scope::Partition(1)).read(&key()).unwrap()
    }

    fn marks_left(store: &Store) -> usize {
        let tx = store.scoped(Scope::Partition(1));
        tx.keys(Table::Superseded, "").unwrap().len()
    }

    fn marked(store: &Store, p: u16) -> bool {
        let tx = store.scoped(Scope::Partition(p));
        tx.holds(&Flag::Marked).unwrap()
    }

    /// Applies `ops` (instance, put or remove) on one key of partition 1, a batch each, as
    /// the processor does (`Kept::at_start` first).
    fn run(store: &Store, ops: &[(&str, bool)]) {
        for (inst, present) in ops {
            let tx = store.scoped(Scope::Partition(1));
            let kept = Kept::at_start(&tx).unwrap();
            if *present {
                put(&tx, &key(), inst).unwrap();
            } else {
                remove(&tx, kept.marks, &key(), inst).unwrap();
            }
            kept.seal(&tx).unwrap();
            tx.commit().unwrap();
        }
    }

    #[test]
    fn an_instance_that_ends_removes_only_its_own_entry() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // y takes the key while x has it; x ends: y stays active, and its end removes it
        run(&store, &[("x", true)]);
        assert!(
            marked(&store, 1),
            "a partition never written is marked complete"
        );
        run(&store, &[("y", true), ("x", false)]);
        assert_eq!(active(&store).as_deref(), Some("y"));
        assert_eq!(marks_left(&store), 0, "x's mark went with its removal");
        run(&store, &[("y", false)]);
        assert_eq!(active(&store), None);
        // the replacement ends first: the key is free, and the older one's end changes nothing
        run(&store, &[("x", true), ("y", true), ("y", false)]);
        assert_eq!(active(&store), None);
        assert_eq!(marks_left(&store), 1);
        run(&store, &[("z", true), ("x", false)]);
        assert_eq!(active(&store).as_deref(), Some("z"));
        assert_eq!(marks_left(&store), 0);
        // a put of the instance that has the key marks nothing
        run(&store, &[("z", true)]);
        assert_eq!(marks_left(&store), 0);
    }

    #[test]
    fn a_partition_written_before_the_marks_reads_before_removing_for_good() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // as an older broker left it: y replaced x without a mark, x still runs (on another
        // partition: the messages that put x and y left their positions)
        let tx = store.scoped(Scope::Partition(1));
        tx.write(&key(), &"y".to_string()).unwrap();
        tx.put(Table::Offsets, "p0002", &(3, 7)).unwrap();
        tx.commit().unwrap();
        // y ends, leaving no entry; u takes the key; then x ends
        run(&store, &[("y", false), ("u", true), ("x", false)]);
        assert_eq!(
            active(&store).as_deref(),
            Some("u"),
            "x's end read the entry, and left u's"
        );
        assert!(
            !marked(&store, 1),
            "an emptied partition is not marked complete"
        );
    }
}
