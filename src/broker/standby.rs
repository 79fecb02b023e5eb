//! The store side of standby replicas (docs/scale.md "Standby replicas";
//! `cluster::standby` says which partitions, `kafka::standby` tails their changelogs): a
//! partition's copy is written with its checkpoint in one store write, exactly as a restore
//! writes it, so a take-over continues from wherever the copy had got to. A partition the core
//! owns or is taking over is closed to standby writes from the moment [`Standby::take`]
//! returns, so the core's take-over never races a standby write. Where the changelog was
//! trimmed past a copy, the copy is replaced by the partition's latest snapshot first
//! ([`Standby::reset`], [`Standby::load`]), as a take-over would.

use super::checkpoints::CheckpointOf;
use crate::cluster::changelog::Checkpoint;
use crate::cluster::partition::PartitionId;
use crate::store::Entry as _;
use crate::store::{Store, StoreError, Write};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// A snapshot load into a copy, from [`Standby::reset`] on.
#[derive(Debug)]
pub struct Lease {
    partition: PartitionId,
    takes: u64,
}

#[derive(Debug, Default)]
struct Taken {
    now: BTreeSet<PartitionId>,
    /// Per partition: how many times the core took it (a snapshot load spans many writes; a
    /// take-over and a give-back between two of them must end it).
    times: BTreeMap<PartitionId, u64>,
}

impl Taken {
    fn times(&self, p: PartitionId) -> u64 {
        self.times.get(&p).copied().unwrap_or(0)
    }
}

#[derive(Debug, Default)]
pub struct Standby {
    /// Partitions the core owns or is taking over, and how often each was taken.
    taken: Mutex<Taken>,
    /// Per partition stood by for: the changelog offset its copy has reached.
    positions: Mutex<BTreeMap<PartitionId, i64>>,
}

impl Standby {
    /// The core is taking `p` over: no standby write reaches it after this returns.
    pub fn take(&self, p: PartitionId) {
        if let Ok(mut t) = self.taken.lock() {
            t.now.insert(p);
            *t.times.entry(p).or_default() += 1;
        }
        self.forget(p);
    }

    /// The core let `p` go: a standby may copy it again.
    pub fn give_back(&self, p: PartitionId) {
        if let Ok(mut t) = self.taken.lock() {
            t.now.remove(&p);
        }
    }

    /// The partitions the core owns or is taking over.
    pub fn taken(&self) -> BTreeSet<PartitionId> {
        self.taken.lock().map(|t| t.now.clone()).unwrap_or_default()
    }

    /// Where this store's copy of `p` stands.
    pub fn checkpoint(store: &Store, p: PartitionId) -> Result<Checkpoint, StoreError> {
        Ok(store.write()?.read(&CheckpointOf(p))?.unwrap_or_default())
    }

    /// Writes `writes` to the copy of `p` with its checkpoint `cp`, unless the core has taken
    /// `p`; whether it did.
    pub fn apply(
        &self,
        store: &Store,
        p: PartitionId,
        mut writes: Vec<Write>,
        cp: &Checkpoint,
    ) -> Result<bool, StoreError> {
        let Ok(taken) = self.taken.lock() else {
            return Ok(false);
        };
        if taken.now.contains(&p) {
            return Ok(false);
        }
        writes.push(CheckpointOf(p).node_write(cp));
        store.apply(&writes, false)?;
        if let Ok(mut pos) = self.positions.lock() {
            pos.insert(p, cp.next);
        }
        drop(taken);
        Ok(true)
    }

    /// Empties the copy of `p` before a snapshot is loaded into it, its checkpoint first (so
    /// a crash midway, or a take-over between the snapshot's chunks, finds nothing applied
    /// and loads a snapshot itself). `None` when the core has taken `p`; otherwise the lease
    /// the load's writes go under ([`Standby::load`]). The clearing holds the lock the core's
    /// [`Standby::take`] waits on: for a copy a trim overtook, that is the time of deleting
    /// its keys, which a take-over loading the snapshot would spend too.
    pub fn reset(&self, store: &Store, p: PartitionId) -> Result<Option<Lease>, StoreError> {
        let Ok(taken) = self.taken.lock() else {
            return Ok(None);
        };
        if taken.now.contains(&p) {
            return Ok(None);
        }
        store.apply(&[CheckpointOf(p).node_write(&Checkpoint::default())], true)?;
        store.clear(crate::store::Scope::Partition(p.0))?;
        let lease = Lease {
            partition: p,
            takes: taken.times(p),
        };
        drop(taken);
        Ok(Some(lease))
    }

    /// Writes part of a snapshot to the copy emptied by [`Standby::reset`] (and with `done`,
    /// the checkpoint the copy then stands on), unless the core has taken the partition since
    /// the reset, even if it gave it back; whether it did.
    pub fn load(
        &self,
        store: &Store,
        lease: &Lease,
        writes: &[Write],
        done: Option<&Checkpoint>,
    ) -> Result<bool, StoreError> {
        let p = lease.partition;
        let Ok(taken) = self.taken.lock() else {
            return Ok(false);
        };
        if taken.now.contains(&p) || taken.times(p) != lease.takes {
            return Ok(false);
        }
        match done {
            None => store.apply(writes, false)?,
            Some(cp) => {
                let mut all = writes.to_vec();
                all.push(CheckpointOf(p).node_write(cp));
                store.apply(&all, false)?;
                if let Ok(mut pos) = self.positions.lock() {
                    pos.insert(p, cp.next);
                }
            }
        }
        drop(taken);
        Ok(true)
    }

    /// Records where the copy of `p` starts (nothing written yet).
    pub fn started(&self, p: PartitionId, next: i64) {
        if let Ok(mut pos) = self.positions.lock() {
            pos.insert(p, next);
        }
    }

    /// `p` is no longer stood by for.
    pub fn forget(&self, p: PartitionId) {
        if let Ok(mut pos) = self.positions.lock() {
            pos.remove(&p);
        }
    }

    /// The partitions stood by for and the changelog offset each copy has reached.
    pub fn positions(&self) -> BTreeMap<PartitionId, i64> {
        self.positions.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Scope, Table};

    /// A write of the copy of `p`: one instance key in its scope.
    fn instance(store: &Store, p: PartitionId, key: &str) -> Vec<Write> {
        let tx = store.scoped(Scope::Partition(p.0));
        tx.put(Table::Instances, key, &key.to_string()).unwrap();
        tx.writes()
    }

    fn count(store: &Store, p: PartitionId) -> u64 {
        store
            .read()
            .unwrap()
            .len_in(Scope::Partition(p.0), Table::Instances)
            .unwrap()
    }

    #[test]
    fn a_snapshot_replaces_the_copy_and_a_take_over_midway_finds_nothing_applied() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (s, p) = (Standby::default(), PartitionId(3));
        // a copy that stood at offset 10 with one instance
        let cp = Checkpoint {
            next: 10,
            fence: Some(1),
        };
        assert!(s.apply(&store, p, instance(&store, p, "old"), &cp).unwrap());
        assert_eq!(Standby::checkpoint(&store, p).unwrap().next, 10);

        // the changelog was trimmed past it: the copy is emptied, then the snapshot loaded
        let lease = s.reset(&store, p).unwrap().expect("not taken");
        assert_eq!(count(&store, p), 0, "the old copy is gone");
        assert_eq!(
            Standby::checkpoint(&store, p).unwrap(),
            Checkpoint::default()
        );
        let a = instance(&store, p, "a");
        assert!(s.load(&store, &lease, &a, None).unwrap());
        // the core takes the partition over between two chunks
        s.take(p);
        let b = instance(&store, p, "b");
        assert!(!s.load(&store, &lease, &b, None).unwrap());
        let at = Checkpoint {
            next: 40,
            fence: Some(2),
        };
        assert!(!s.load(&store, &lease, &[], Some(&at)).unwrap());
        // the take-over finds nothing applied (so it loads the snapshot itself)
        assert_eq!(
            Standby::checkpoint(&store, p).unwrap(),
            Checkpoint::default()
        );
        assert_eq!(
            count(&store, p),
            1,
            "only the chunk written before the take-over"
        );
        assert!(
            s.reset(&store, p).unwrap().is_none(),
            "nor is it emptied again"
        );
        // given back: the load that began before the take-over stays ended
        s.give_back(p);
        assert!(!s.load(&store, &lease, &b, Some(&at)).unwrap());
        assert_eq!(
            Standby::checkpoint(&store, p).unwrap(),
            Checkpoint::default()
        );

        // a new load: the copy stands on the snapshot once it is in
        let lease = s.reset(&store, p).unwrap().expect("given back");
        assert!(s.load(&store, &lease, &a, None).unwrap());
        assert!(s.load(&store, &lease, &b, Some(&at)).unwrap());
        assert_eq!(Standby::checkpoint(&store, p).unwrap(), at);
        assert_eq!(s.positions().get(&p), Some(&40));
        assert_eq!(count(&store, p), 2);
    }
}
