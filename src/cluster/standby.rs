//! Standby replicas (docs/scale.md "Standby replicas"), as Kafka Streams'
//! `num.standby.replicas`: a broker keeps a warm copy of partitions it does not own by tailing
//! their changelogs into its store, so when one of them fails over to it, the take-over
//! restores only the records after the copy. Which broker stands by for which partition
//! follows from the claims alone, with no protocol of its own: the nodes that own a partition
//! form a ring in id order, and each partition's standbys are the `n` nodes after its owner.

use super::directory::Directory;
use super::node::NodeId;
use super::partition::PartitionId;
use std::collections::BTreeSet;

/// The partitions `me` stands by for with `replicas` standbys per partition: those owned by
/// another node whose next `replicas` nodes in the ring include `me`. Partitions `me` owns
/// (in `owned`) are not among them.
pub fn standby_for(
    directory: &Directory,
    me: &NodeId,
    owned: &BTreeSet<PartitionId>,
    replicas: usize,
) -> BTreeSet<PartitionId> {
    if replicas == 0 {
        return BTreeSet::new();
    }
    let mut ring: BTreeSet<&NodeId> = directory.claims().filter_map(|c| c.node.as_ref()).collect();
    ring.insert(me);
    let ring: Vec<&NodeId> = ring.into_iter().collect();
    let at = |n: &NodeId| ring.iter().position(|x| *x == n);
    let Some(mine) = at(me) else {
        return BTreeSet::new();
    };
    directory
        .claims()
        .filter(|c| !owned.contains(&c.partition))
        .filter_map(|c| {
            let owner = at(c.node.as_ref()?)?;
            if owner == mine {
                return None; // a claim of this node's from before a restart: not a standby's
            }
            // how far after the owner `me` is in the ring
            let after = (mine + ring.len() - owner) % ring.len();
            (after <= replicas).then_some(c.partition)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::directory::Claim;

    fn d(claims: &[(u16, &str)]) -> Directory {
        let mut d = Directory::default();
        for (i, (p, n)) in claims.iter().enumerate() {
            d.offer(Claim {
                partition: PartitionId(*p),
                fence: i as i64,
                broker: n.to_string(),
                url: String::new(),
                node: Some(NodeId(n.to_string())),
            });
        }
        d
    }

    fn set(ps: &[u16]) -> BTreeSet<PartitionId> {
        ps.iter().map(|p| PartitionId(*p)).collect()
    }

    #[test]
    fn each_partition_has_the_next_nodes_in_the_ring_as_standbys() {
        let dir = d(&[(0, "a"), (1, "a"), (2, "b"), (3, "c")]);
        let n = |s: &str| NodeId(s.into());
        // one standby: a's partitions on b, b's on c, c's on a
        assert_eq!(standby_for(&dir, &n("b"), &set(&[2]), 1), set(&[0, 1]));
        assert_eq!(standby_for(&dir, &n("c"), &set(&[3]), 1), set(&[2]));
        assert_eq!(standby_for(&dir, &n("a"), &set(&[0, 1]), 1), set(&[3]));
        // two standbys: every other node's partitions
        assert_eq!(standby_for(&dir, &n("a"), &set(&[0, 1]), 2), set(&[2, 3]));
        // none
        assert!(standby_for(&dir, &n("b"), &set(&[2]), 0).is_empty());
        // a node that owns nothing yet still takes its place in the ring
        assert_eq!(standby_for(&dir, &n("d"), &set(&[]), 1), set(&[3]));
        // more standbys than other nodes: each partition once
        assert_eq!(standby_for(&dir, &n("b"), &set(&[2]), 5), set(&[0, 1, 3]));
    }
}
