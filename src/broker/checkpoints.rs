//! Node-scope records in the store: each state partition's changelog checkpoint (where
//! restoring it reads the changelog from) and the other keys a broker keeps for itself (its
//! node id, its input partitions), outside every partition's scope. Each is an
//! [`Entry`], so its key and its value's type are spelled in one place.

use crate::cluster::changelog::Checkpoint;
use crate::cluster::node::{Inputs, NodeId};
use crate::cluster::partition::PartitionId;
use crate::store::{Entry, Table};
use std::borrow::Cow;

/// A partition's changelog checkpoint.
pub(super) struct CheckpointOf(pub PartitionId);

impl Entry for CheckpointOf {
    const TABLE: Table = Table::Meta;
    type Value = Checkpoint;

    fn key(&self) -> Cow<'_, str> {
        let mut k = String::with_capacity(16);
        k.push_str("changelog");
        k.push(crate::store::SEP);
        k.push_str(&self.0 .0.to_string());
        Cow::Owned(k)
    }
}

/// This data directory's node id.
pub(super) struct NodeOf;

impl Entry for NodeOf {
    const TABLE: Table = Table::Meta;
    type Value = NodeId;

    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed("node")
    }
}

/// The input topic partitions the group gave this node last.
pub(super) struct InputsOf;

impl Entry for InputsOf {
    const TABLE: Table = Table::Meta;
    type Value = Inputs;

    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed("inputs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_names_existing_stores_hold() {
        assert_eq!(
            CheckpointOf(PartitionId(12)).key(),
            format!("changelog{}12", crate::store::SEP)
        );
        assert_eq!(NodeOf.key(), "node");
        assert_eq!(InputsOf.key(), "inputs");
    }
}
