//! A restarted broker resumes at once (docs/scale.md "Restart"): the state partitions its
//! node claimed last, and that nobody wrote to since, are taken over before the consumer group
//! gives it anything. They stay provisional until the group's first assignment, which decides:
//! a resumed partition it assigns is kept as it is (no second restore), one it does not is
//! released. The node's identity and the input topic partitions the group last gave it are
//! kept in the store's node scope.

use super::checkpoints::{CheckpointOf, InputsOf, NodeOf};
use super::core::Core;
use super::error::CoreError;
use super::processor::PartInput;
use crate::cluster::changelog::{Checkpoint, Entry};
use crate::cluster::node::{Inputs, NodeId};
use crate::cluster::partition::PartitionId;
use crate::store::Entry as _;
use crate::store::{Store, StoreError};
use std::collections::BTreeMap;

/// This data directory's node id, made and kept on first use.
pub fn node_id(store: &Store) -> Result<NodeId, StoreError> {
    let tx = store.write()?;
    if let Some(id) = tx.read(&NodeOf)? {
        return Ok(id);
    }
    drop(tx);
    let id = NodeId::fresh();
    store.apply(&[NodeOf.node_write(&id)], true)?;
    Ok(id)
}

/// The input topic partitions the group gave this node last (empty: none known).
pub fn remembered_inputs(store: &Store) -> Result<Inputs, StoreError> {
    Ok(store.write()?.read(&InputsOf)?.unwrap_or_default())
}

impl Core {
    /// Keeps the input topic partitions the group gave this broker.
    pub(super) fn remember_inputs(&self, inputs: &Inputs) -> Result<(), CoreError> {
        self.store.apply(&[InputsOf.node_write(inputs)], false)?;
        Ok(())
    }

    /// Takes over, provisionally, the partitions this node held last: each one whose
    /// changelog holds nothing after this broker's store but its own batches (nobody took
    /// it over since), checked just before its own fence. Nothing once the group has
    /// assigned this broker anything (the group decides from then on). Returns what it
    /// resumed.
    pub(super) fn resume(
        &mut self,
        ps: Vec<PartitionId>,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) -> Result<Vec<PartitionId>, CoreError> {
        let mut resumed = Vec::new();
        if self.group_assigned {
            tracing::info!("not resuming: the group has assigned this broker its partitions");
            return Ok(resumed);
        }
        for p in ps {
            if self.owned.contains(&p) {
                continue;
            }
            match self.unchanged_since_held(p) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(partition = %p, error = %e,
                        "could not check a state partition to resume; waiting for the group");
                    continue;
                }
            }
            self.take_over_as(p, inputs, true)?;
            self.resumed.insert(p);
            resumed.push(p);
            tracing::info!(partition = %p, "state partition resumed before the group assigned it");
        }
        Ok(resumed)
    }

    /// Whether `p`'s changelog holds nothing after this broker's store but its own last
    /// batches (appended, not yet stored when it stopped: the take-over restores them).
    fn unchanged_since_held(&mut self, p: PartitionId) -> Result<bool, CoreError> {
        let Some(log) = self.log.as_mut() else {
            return Ok(false);
        };
        let cp: Checkpoint = self
            .store
            .write()?
            .read(&CheckpointOf(p))?
            .unwrap_or_default();
        let end = log.end(p)?;
        let own = cp.next > 0
            && end >= cp.next
            && (end == cp.next
                || log.read(p, cp.next, end - 1)?.iter().all(
                    |(_, e)| matches!(e, Entry::Batch { fence, .. } if Some(*fence) == cp.fence),
                ));
        if !own {
            tracing::info!(partition = %p, store = cp.next, changelog_end = end,
                "not resuming a state partition written to since this broker held it; \
                 waiting for the group");
        }
        Ok(own)
    }

    /// The group has given this broker `all` now: resumed partitions outside it are
    /// released; the ones in it are kept as they are, unless another broker appended to them
    /// meanwhile (then they are let go, and taken over again as assigned). An empty
    /// assignment settles nothing (a cooperative group can give a rejoining member nothing
    /// until its old membership expires).
    pub(super) fn settle_resumed(
        &mut self,
        all: Vec<PartitionId>,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) {
        if all.is_empty() {
            return;
        }
        self.group_assigned = true;
        for p in std::mem::take(&mut self.resumed) {
            if !all.contains(&p) {
                tracing::info!(partition = %p, "a resumed state partition went to another broker");
                self.release(p, inputs);
            } else if self.owned.contains(&p) {
                if let Err(e) = self.confirm(p, inputs) {
                    tracing::warn!(partition = %p, error = %e,
                        "could not confirm a resumed partition; taking it over again");
                    self.release(p, inputs);
                }
            }
        }
    }

    /// A resumed partition the group assigned here: an ordinary fence replaces the
    /// provisional one (so no former owner takes it back from this broker), or, when another
    /// broker appended meanwhile, it is let go (and taken over again as assigned).
    fn confirm(
        &mut self,
        p: PartitionId,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) -> Result<(), CoreError> {
        if !self.still_ours(p) {
            self.release(p, inputs);
            return Ok(());
        }
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        let prev = self.tail.get(&p).copied().unwrap_or(-1);
        let owner = log.owner();
        let fence = log.append(&[(
            p,
            Entry::Fence {
                owner,
                provisional: false,
            },
        )])?[0]
            .1;
        if fence != prev + 1 {
            // someone appended between the check and the fence: start over from the log
            self.release(p, inputs);
            return Ok(());
        }
        self.fences.insert(p, fence);
        self.tail.insert(p, fence);
        let cp = Checkpoint {
            next: fence + 1,
            fence: Some(fence),
        };
        // outbox entries held in memory were put under the provisional fence: a checkpoint
        // under the new one cannot point back at them, so they go to the store with it
        let mut writes = self.young.take(p);
        writes.push(CheckpointOf(p).node_write(&cp));
        self.store.apply(&writes, false)?;
        self.shared.held_outbox([(p, 0)]);
        self.publish_owned();
        Ok(())
    }

    /// Whether nobody appended to owned partition `p` since this broker's last record.
    fn still_ours(&mut self, p: PartitionId) -> bool {
        let (Some(log), Some(tail)) = (self.log.as_mut(), self.tail.get(&p).copied()) else {
            return false;
        };
        match log.end(p) {
            Ok(end) => end == tail + 1,
            Err(e) => {
                tracing::warn!(partition = %p, error = %e,
                    "could not check a resumed partition; taking it over again");
                false
            }
        }
    }
}
