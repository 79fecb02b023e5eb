//! Who owns which state partition, as the brokers announce it: after a broker has fenced and
//! restored a partition it publishes a [`Claim`] (partition, the changelog offset of its fence,
//! its name and its HTTP address) to the owners topic, and every broker folds the claims it
//! reads into a [`Directory`]. The claim with the highest fence wins, so a claim that arrives
//! late from a broker that was already fenced out never hides the current owner. This is the
//! `application.server` metadata of Kafka Streams' interactive queries: the API of any broker
//! answers for any instance by asking the owner. The owners topic also carries each
//! partition's latest snapshot [`Manifest`], folded here too.

use super::node::NodeId;
use super::partition::PartitionId;
use super::snapshot::Manifest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One broker's announcement that it owns a partition since its fence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub partition: PartitionId,
    /// The changelog offset of the owner's fence record: later owners have higher fences.
    pub fence: i64,
    /// The broker's name (as in its fence records).
    pub broker: String,
    /// Where the broker's HTTP API answers (`http.advertised_url`).
    pub url: String,
    /// The broker's lasting identity (its data directory's; absent in claims of older
    /// versions): a broker restarted on the same `data_dir` resumes what it claimed last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
}

#[derive(Debug, thiserror::Error)]
#[error("not a partition claim: {0}")]
pub struct ClaimError(#[from] serde_json::Error);

impl Claim {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a claim serializes")
    }

    pub fn decode(bytes: &[u8]) -> Result<Claim, ClaimError> {
        Ok(serde_json::from_slice(bytes)?)
    }
}

/// The latest claim and the latest snapshot per partition.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    claims: BTreeMap<PartitionId, Claim>,
    snapshots: BTreeMap<PartitionId, Manifest>,
}

impl Directory {
    /// Folds a claim in; returns whether the partition's owner is now another broker than
    /// before (requests waiting for it look again). A claim with a lower fence than the one
    /// known is stale (its broker was fenced out since) and ignored.
    pub fn offer(&mut self, claim: Claim) -> bool {
        match self.claims.get(&claim.partition) {
            Some(known) if known.fence > claim.fence => false,
            known => {
                let moved = known.is_none_or(|k| k.broker != claim.broker);
                self.claims.insert(claim.partition, claim);
                moved
            }
        }
    }

    /// The broker that claimed `p` last, if any did.
    pub fn owner(&self, p: PartitionId) -> Option<&Claim> {
        self.claims.get(&p)
    }

    pub fn claims(&self) -> impl Iterator<Item = &Claim> {
        self.claims.values()
    }

    /// Folds a snapshot manifest in: the one furthest along the changelog is the partition's.
    pub fn offer_snapshot(&mut self, m: Manifest) {
        match self.snapshots.get(&m.partition) {
            Some(known) if known.next >= m.next => {}
            _ => {
                self.snapshots.insert(m.partition, m);
            }
        }
    }

    /// The latest snapshot of `p`, if one was announced.
    pub fn snapshot(&self, p: PartitionId) -> Option<&Manifest> {
        self.snapshots.get(&p)
    }
}

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

    fn claim(p: u16, fence: i64, broker: &str) -> Claim {
        Claim {
            partition: PartitionId(p),
            fence,
            broker: broker.into(),
            url: format!("http://{broker}:8080"),
            node: None,
        }
    }

    #[test]
    fn the_highest_fence_owns_the_partition_whatever_the_order_claims_arrive_in() {
        let mut d = Directory::default();
        assert!(d.offer(claim(3, 10, "a")));
        assert!(d.offer(claim(3, 25, "b")));
        // a's second claim was written before b fenced it out, but read after b's
        assert!(!d.offer(claim(3, 12, "a")));
        assert_eq!(d.owner(PartitionId(3)).unwrap().broker, "b");
        // b taking it back under a newer fence is no change of owner
        assert!(!d.offer(claim(3, 30, "b")));
        assert_eq!(d.owner(PartitionId(3)).unwrap().fence, 30);
        assert!(d.owner(PartitionId(4)).is_none());
        assert!(d.offer(claim(4, 1, "a")));
        assert_eq!(d.claims().count(), 2);
    }

    #[test]
    fn claims_round_trip_and_garbage_is_an_error() {
        let c = claim(7, 99, "x");
        assert_eq!(Claim::decode(&c.encode()).unwrap(), c);
        assert!(Claim::decode(b"{\"partition\":1}").is_err());
    }

    fn claim_by(p: u16, fence: i64, node: Option<&str>) -> Claim {
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
        d.offer(claim_by(0, 1, Some("a")));
        d.offer(claim_by(1, 2, Some("a")));
        d.offer(claim_by(1, 5, Some("b"))); // taken over by b since
        d.offer(claim_by(2, 3, None)); // a claim from before node ids
        d.offer(claim_by(3, 9, Some("a")));
        d.offer(claim_by(3, 4, Some("b"))); // late and stale: a's stands
        let a = NodeId("a".into());
        assert_eq!(
            held_last(&d, &a),
            vec![PartitionId(0), PartitionId(3)],
            "{d:?}"
        );
        assert_eq!(held_last(&d, &NodeId("b".into())), vec![PartitionId(1)]);
    }
}
