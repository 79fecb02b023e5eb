//! What the HTTP side reads without asking the core: the deployed workflows, the state
//! partitions this broker owns (with the changelog offset of its fence on each), and the
//! cluster's directory of owners.

use super::registry::Deployed;
use crate::cluster::directory::Directory;
use crate::cluster::partition::PartitionId;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use tokio::sync::Notify;

#[derive(Default)]
pub struct Shared {
    /// `GET /v1/workflows`.
    pub workflows: RwLock<Value>,
    /// The current version of each deployed workflow, by id (`GET /v1/workflows/{id}`, graphs).
    pub definitions: RwLock<BTreeMap<String, Arc<Deployed>>>,
    /// The state partitions this broker owns, each with the offset of its fence
    /// (`GET /health`, claims in the owners topic).
    pub owned: RwLock<BTreeMap<PartitionId, i64>>,
    /// Signalled when `owned` changes (the claim publisher waits on it).
    pub owned_changed: Notify,
    /// Who owns every partition, as the owners topic says (the API forwards to them), and
    /// each partition's latest snapshot.
    pub directory: RwLock<Directory>,
    /// Signalled when a claim names another broker as a partition's owner in `directory`.
    pub directory_changed: Notify,
    /// Set once the owners topic was read up to where it ended when this broker started:
    /// take-overs wait for it, so they know every snapshot announced before.
    pub directory_ready: Ready,
    /// Standby replicas: which partitions the core has taken (closed to standby writes) and
    /// how far each copy has got.
    pub standby: super::standby::Standby,
    /// SWF tasks ready on the task lists of the partitions owned here, and the polls
    /// waiting for them.
    pub board: super::board::Board,
    /// Signalled after every batch the core applied (requests that wait to read their
    /// writes look again).
    pub applied: Notify,
    /// How many outbox entries each owned partition holds in memory (`broker::young`): the
    /// store does not count them.
    pub held_outbox: RwLock<BTreeMap<PartitionId, usize>>,
}

impl Shared {
    /// The state partitions this broker owns now.
    pub fn owned(&self) -> BTreeMap<PartitionId, i64> {
        self.owned.read().map(|o| o.clone()).unwrap_or_default()
    }

    /// The current version of workflow `id`.
    pub fn definition(&self, id: &str) -> Option<Arc<Deployed>> {
        self.definitions.read().ok()?.get(id).cloned()
    }

    pub fn owns(&self, p: PartitionId) -> bool {
        self.owned.read().is_ok_and(|o| o.contains_key(&p))
    }

    /// Records how many outbox entries these partitions hold in memory now.
    pub(super) fn held_outbox(&self, counts: impl IntoIterator<Item = (PartitionId, usize)>) {
        if let Ok(mut h) = self.held_outbox.write() {
            for (p, n) in counts {
                match n {
                    0 => h.remove(&p),
                    n => h.insert(p, n),
                };
            }
        }
    }

    /// How many outbox entries partition `p` holds in memory.
    pub fn outbox_held(&self, p: PartitionId) -> usize {
        self.held_outbox
            .read()
            .map_or(0, |h| h.get(&p).copied().unwrap_or(0))
    }

    pub(super) fn set_owned(&self, owned: BTreeMap<PartitionId, i64>) {
        if let Ok(mut o) = self.owned.write() {
            *o = owned;
        }
        self.owned_changed.notify_one();
    }
}

/// A flag that is set once and can be waited for.
#[derive(Debug, Default)]
pub struct Ready {
    set: std::sync::Mutex<bool>,
    changed: std::sync::Condvar,
}

impl Ready {
    pub fn set(&self) {
        if let Ok(mut s) = self.set.lock() {
            *s = true;
        }
        self.changed.notify_all();
    }

    /// Whether it is set, waiting at most `limit` for it.
    pub fn wait(&self, limit: std::time::Duration) -> bool {
        let Ok(guard) = self.set.lock() else {
            return false;
        };
        self.changed
            .wait_timeout_while(guard, limit, |set| !*set)
            .map(|(set, _)| *set)
            .unwrap_or(false)
    }
}

/// How many partitions each of the broker's groups has assigned it now: input topic
/// partitions (`kafka.group_id`; `None` until the group first assigned, an assignment of none
/// being `Some(0)`) and state partitions (its `.state` group; 0: none yet).
#[derive(Clone)]
pub struct Assigned {
    pub inputs: tokio::sync::watch::Receiver<Option<usize>>,
    pub state: tokio::sync::watch::Receiver<usize>,
}

impl Assigned {
    /// Waits until the input group has assigned this broker its input partitions, none
    /// included (or its consumer is gone).
    pub async fn inputs_decided(&mut self) {
        let _ = self.inputs.wait_for(Option::is_some).await;
    }
}
