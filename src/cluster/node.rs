//! A broker's lasting identity, which is its data directory's: a process gets a new name
//! (its fences and claims say which run wrote them), but a broker restarted on the same
//! `data_dir` is the same node. Its claims carry the [`NodeId`], so after a restart it knows
//! which state partitions it held last, and it keeps the input topic partitions the group
//! last gave it ([`Inputs`]): it resumes both at once instead of waiting for the group
//! (docs/scale.md "Restart").

use serde::{Deserialize, Serialize};
use std::fmt;

/// The identity of a data directory, made once and kept in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub String);

impl NodeId {
    /// A new, random identity (for a data directory that has none yet).
    pub fn fresh() -> NodeId {
        NodeId(uuid::Uuid::new_v4().simple().to_string())
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One input topic partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InputPartition {
    pub topic: String,
    pub partition: i32,
}

/// The input topic partitions the consumer group last gave this node.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Inputs(pub Vec<InputPartition>);
