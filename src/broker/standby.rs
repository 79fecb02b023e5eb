//! The store side of standby replicas (docs/scale.md "Standby replicas";
//! `cluster::standby` says which partitions, `kafka::standby` tails their changelogs): a
//! partition's copy is written with its checkpoint in one store write, exactly as a restore
//! writes it, so a take-over continues from wherever the copy had got to. A partition the core
//! owns or is taking over is closed to standby writes from the moment [`Standby::take`]
//! returns, so the core's take-over never races a standby write.

use super::core::{checkpoint_key, node_write};
use crate::cluster::changelog::Checkpoint;
use crate::cluster::partition::PartitionId;
use crate::store::{Store, StoreError, Table, Write};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct Standby {
    /// Partitions the core owns or is taking over.
    taken: Mutex<BTreeSet<PartitionId>>,
    /// Per partition stood by for: the changelog offset its copy has reached.
    positions: Mutex<BTreeMap<PartitionId, i64>>,
}

impl Standby {
    /// The core is taking `p` over: no standby write reaches it after this returns.
    pub fn take(&self, p: PartitionId) {
        if let Ok(mut t) = self.taken.lock() {
            t.insert(p);
        }
        self.forget(p);
    }

    /// The core let `p` go: a standby may copy it again.
    pub fn give_back(&self, p: PartitionId) {
        if let Ok(mut t) = self.taken.lock() {
            t.remove(&p);
        }
    }

    /// The partitions the core owns or is taking over.
    pub fn taken(&self) -> BTreeSet<PartitionId> {
        self.taken.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Where this store's copy of `p` stands.
    pub fn checkpoint(store: &Store, p: PartitionId) -> Result<Checkpoint, StoreError> {
        Ok(store
            .write()?
            .get(Table::Meta, &checkpoint_key(p))?
            .unwrap_or_default())
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
        if taken.contains(&p) {
            return Ok(false);
        }
        writes.push(node_write(&checkpoint_key(p), cp));
        store.apply(&writes, false)?;
        if let Ok(mut pos) = self.positions.lock() {
            pos.insert(p, cp.next);
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
