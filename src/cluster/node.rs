//! A broker's lasting identity, which is its data directory's: a process gets a new name
//! (its fences and claims say which run wrote them), but a broker restarted on the same
//! `data_dir` is the same node. Its claims carry the [`NodeId`], so after a restart it knows
//! which state partitions it held last, and it keeps the input topic partitions the group
//! last gave it ([`Inputs`]): it resumes both at once instead of waiting for the group
//! (docs/scale.md "Restart").

use super::directory::Directory;
use super::partition::PartitionId;
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

/// The state partitions whose latest claim is `node`'s: no other broker claimed them since
/// this node last held them.
pub fn held_last(directory: &Directory, node: &NodeId) -> Vec<PartitionId> {
    directory
        .claims()
        .filter(|c| c.node.as_ref() == Some(node))
        .map(|c| c.partition)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::directory::Claim;

    fn claim(p: u16, fence: i64, node: Option<&str>) -> Claim {
        Claim {
            partition: PartitionId(p),
            fence,
            broker: format!("run-{fence}"),
            url: String::new(),
            node: node.map(|n| NodeId(n.into())),
        }
    }

    #[test]
    fn a_node_held_last_what_no_one_claimed_since() {
        let mut d = Directory::default();
        d.offer(claim(0, 1, Some("a")));
        d.offer(claim(1, 2, Some("a")));
        d.offer(claim(1, 5, Some("b"))); // taken over by b since
        d.offer(claim(2, 3, None)); // a claim from before node ids
        d.offer(claim(3, 9, Some("a")));
        d.offer(claim(3, 4, Some("b"))); // late and stale: a's stands
        let a = NodeId("a".into());
        assert_eq!(
            held_last(&d, &a),
            vec![PartitionId(0), PartitionId(3)],
            "{d:?}"
        );
        assert_eq!(held_last(&d, &NodeId("b".into())), vec![PartitionId(1)]);
    }
}
