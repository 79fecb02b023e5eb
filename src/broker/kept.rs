//! What a partition's state keeps complete, found out once per batch: the `Superseded` marks
//! (`broker::active`) and the heads of `Waits` keys with a value not pinned
//! (`broker::unpinned`). A batch relies on either only where the partition says it is
//! complete; elsewhere it does the work each replaces (a read before a removal, a scan of
//! every unpinned key).
//!
//! The marks are complete only for a partition whose every write was made by a broker that
//! keeps them. A broker cannot tell that from the entries: an older version replaced entries
//! without marks, and the replaced instance may still be running (on this partition or
//! another) when every entry is gone. So only a partition that holds nothing at all when a
//! batch starts is marked complete (in its `Meta`, restored and replicated with it), by that
//! batch: one ever written keeps the positions of what it applied in `Offsets` (and, when it
//! ran instances, their counters in `Meta`) for good, so holding nothing means never written.
//! A partition with state from an older version keeps reading before it removes.
//!
//! The heads depend on nothing outside the partition: one with state from an older version
//! has them counted afresh from its `Waits` entries by its first batch ([`Kept::head_up`]).

use crate::store::{Entry, Table, Txn};
use std::borrow::Cow;

pub type Result<T> = crate::store::Result<T>;

/// A partition's `Meta` flag about what it keeps complete (present: `true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// Its `Superseded` marks are complete (changelog format 3, store layout 2).
    Marked,
    /// Its `Unpinned` heads are complete (changelog format 4, store layout 3).
    Headed,
    /// Its heads were too many to count in a batch ([`Kept::head_up`]): it looks every
    /// unpinned waits key up, for good.
    Headless,
}

impl Entry for Flag {
    const TABLE: Table = Table::Meta;
    type Value = bool;

    /// The names stores have always used.
    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(match self {
            Flag::Marked => "active.marked",
            Flag::Headed => "waits.headed",
            Flag::Headless => "waits.headless",
        })
    }
}

/// What the partition keeps complete, found out once per batch by [`Kept::at_start`]; the
/// default (nothing) does the work each would save.
#[derive(Debug, Default)]
pub struct Kept {
    /// `Superseded` marks.
    pub marks: bool,
    /// `Unpinned` heads.
    pub heads: bool,
    /// The partition held nothing when the batch started: [`Kept::seal`] writes both keys if
    /// the batch writes anything.
    fresh: bool,
}

impl Kept {
    /// At the start of a batch, before it writes anything: what the partition keeps complete,
    /// which is everything when it holds no key in any table (never written).
    pub fn at_start(tx: &Txn<'_>) -> Result<Kept> {
        let marks = tx.holds(&Flag::Marked)?;
        let heads = tx.holds(&Flag::Headed)?;
        if marks || heads {
            // either key is a write: the partition is not fresh
            return Ok(Kept {
                marks,
                heads,
                fresh: false,
            });
        }
        // the tables whose keys are never deleted first: a partition ever written has
        // positions in `Offsets` (a table drained from its head would walk its tombstones)
        let kept = [Table::Offsets, Table::Meta, Table::Versions];
        let rest = Table::ALL.into_iter().filter(|t| !kept.contains(t));
        for t in kept.into_iter().chain(rest) {
            if tx.first_key(t)?.is_some() {
                return Ok(Kept::default());
            }
        }
        Ok(Kept {
            marks: true,
            heads: true,
            fresh: true,
        })
    }

    /// Right after [`Kept::at_start`]: a partition that does not keep its heads complete (it
    /// holds state from an older version) has them counted afresh from its entries
    /// ([`super::unpinned::rebuild`]) and is marked as keeping them, once, by this batch.
    /// One with more heads than a batch should write is marked [`Flag::Headless`] instead and keeps
    /// looking every unpinned key up.
    pub fn head_up(&mut self, tx: &Txn<'_>) -> Result<()> {
        if self.heads || tx.holds(&Flag::Headless)? {
            return Ok(());
        }
        match super::unpinned::rebuild(tx)? {
            Some(n) => {
                tx.write(&Flag::Headed, &true)?;
                self.heads = true;
                tracing::info!(
                    heads = n,
                    "unpinned waits keys of a partition from an older version counted into heads"
                );
            }
            None => {
                tx.write(&Flag::Headless, &true)?;
                tracing::warn!(
                    max = super::unpinned::MAX_HEADS,
                    "a partition from an older version has more unpinned waits keys than a \
                     batch counts into heads: it keeps looking each one up"
                );
            }
        }
        Ok(())
    }

    /// At the end of a batch: records that a partition first written by it keeps everything
    /// complete (a batch that writes nothing writes nothing here either).
    pub fn seal(&self, tx: &Txn<'_>) -> Result<()> {
        if self.fresh && !tx.is_unchanged() {
            tx.write(&Flag::Marked, &true)?;
            tx.write(&Flag::Headed, &true)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Scope, Store};

    fn kept(store: &Store, p: u16) -> (bool, bool) {
        let tx = store.scoped(Scope::Partition(p));
        (
            tx.holds(&Flag::Marked).unwrap(),
            tx.holds(&Flag::Headed).unwrap(),
        )
    }

    #[test]
    fn flags_are_the_names_existing_stores_hold() {
        assert_eq!(Flag::Marked.key(), "active.marked");
        assert_eq!(Flag::Headed.key(), "waits.headed");
        assert_eq!(Flag::Headless.key(), "waits.headless");
    }

    #[test]
    fn only_a_partition_first_written_by_the_batch_is_complete() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // a batch that writes nothing writes no key
        let tx = store.scoped(Scope::Partition(2));
        let k = Kept::at_start(&tx).unwrap();
        assert!(k.marks && k.heads);
        k.seal(&tx).unwrap();
        assert!(
            tx.is_unchanged(),
            "a batch that writes nothing writes no key"
        );
        drop(tx);
        // the first that writes does
        let tx = store.scoped(Scope::Partition(2));
        let k = Kept::at_start(&tx).unwrap();
        tx.put(Table::Offsets, "p0001", &(1, 1)).unwrap();
        k.seal(&tx).unwrap();
        tx.commit().unwrap();
        assert_eq!(kept(&store, 2), (true, true));
        // a partition written before (as an older broker left it) is not
        let tx = store.scoped(Scope::Partition(3));
        tx.put(Table::Offsets, "p0002", &(3, 7)).unwrap();
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(3));
        let k = Kept::at_start(&tx).unwrap();
        assert!(!k.marks && !k.heads);
        tx.put(Table::Offsets, "p0002", &(3, 8)).unwrap();
        k.seal(&tx).unwrap();
        tx.commit().unwrap();
        assert_eq!(kept(&store, 3), (false, false));
        // one with marks but no heads (written by a broker of changelog format 3) keeps its
        // marks, and its first batch counts its heads
        let tx = store.scoped(Scope::Partition(4));
        tx.write(&Flag::Marked, &true).unwrap();
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(4));
        let mut k = Kept::at_start(&tx).unwrap();
        assert!(k.marks && !k.heads);
        k.head_up(&tx).unwrap();
        assert!(k.heads);
        k.seal(&tx).unwrap();
        tx.commit().unwrap();
        assert_eq!(kept(&store, 4), (true, true));
        // and so does one from before the marks, which keeps reading before it removes
        let tx = store.scoped(Scope::Partition(3));
        let mut k = Kept::at_start(&tx).unwrap();
        assert!(!k.marks && !k.heads);
        k.head_up(&tx).unwrap();
        tx.commit().unwrap();
        let tx = store.scoped(Scope::Partition(3));
        let k = Kept::at_start(&tx).unwrap();
        assert!(!k.marks && k.heads, "counted once: {k:?}");
        drop(tx);
        assert_eq!(kept(&store, 3), (false, true));
    }
}
