//! Node-scope records in the store: each state partition's changelog checkpoint (where
//! restoring it reads the changelog from) and the other keys a broker keeps for itself (its
//! node id, its input partitions), outside every partition's scope.

use crate::cluster::partition::PartitionId;
use crate::store::{Table, Write};

/// The node-scope key of a partition's changelog checkpoint.
pub(super) fn checkpoint_key(p: PartitionId) -> String {
    crate::store::key(&["changelog", &p.0.to_string()])
}

/// A write of a node-scope key (checkpoints).
pub(super) fn node_write<T: serde::Serialize>(key: &str, value: &T) -> Write {
    Write {
        table: Table::Meta,
        key: key.to_string(),
        value: Some(
            serde_json::to_vec(value)
                .expect("checkpoints serialize")
                .into(),
        ),
    }
}
