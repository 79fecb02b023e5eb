//! State partitions: a fixed number `P`, set when the work and changelog topics are created.
//! A correlation key belongs to `hash(workflow, key) mod P`; an instance to the partition its
//! id carries (`p{n}-{uuid}`, and a child id extends its parent's: `p3-…/2/sub`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One state partition: partition `n` of the work topic and of the changelog topic.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct PartitionId(pub u16);

impl PartitionId {
    /// As a Kafka partition number.
    pub fn kafka(self) -> i32 {
        i32::from(self.0)
    }
}

impl fmt::Display for PartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How many state partitions there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partitions(u16);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    #[error("the number of state partitions must be between 1 and 4096, not {0}")]
    Count(usize),
    #[error("{0:?} is not an instance id (they look like p3-<uuid>, children p3-<uuid>/2/sub)")]
    NotAnInstanceId(String),
    #[error("instance {id:?} belongs to partition {partition}, but there are only {count}")]
    OutOfRange {
        id: String,
        partition: u16,
        count: u16,
    },
}

impl Partitions {
    pub fn new(count: usize) -> Result<Partitions, PartitionError> {
        match u16::try_from(count) {
            Ok(n) if (1..=4096).contains(&n) => Ok(Partitions(n)),
            _ => Err(PartitionError::Count(count)),
        }
    }

    pub fn count(self) -> u16 {
        self.0
    }

    pub fn all(self) -> impl Iterator<Item = PartitionId> {
        (0..self.0).map(PartitionId)
    }

    /// The partition that owns `key` of `workflow` (a correlation key, or `""` for a
    /// workflow's own things: its schedule, its events without a key).
    pub fn of_key(self, workflow: &str, key: &str) -> PartitionId {
        let mut bytes = Vec::with_capacity(workflow.len() + key.len() + 1);
        bytes.extend_from_slice(workflow.as_bytes());
        bytes.push(0x1f);
        bytes.extend_from_slice(key.as_bytes());
        let h = xxhash_rust::xxh3::xxh3_64(&bytes);
        PartitionId((h % u64::from(self.0)) as u16)
    }

    /// The partition an instance (or a child of it) belongs to.
    pub fn of_instance(self, id: &str) -> Result<PartitionId, PartitionError> {
        let p = InstanceId::from_str(id)?.partition();
        if p.0 >= self.0 {
            return Err(PartitionError::OutOfRange {
                id: id.to_string(),
                partition: p.0,
                count: self.0,
            });
        }
        Ok(p)
    }
}

/// The store scope holding an instance's keys (its state partition), from its id alone.
pub fn scope_of(id: &str) -> Option<crate::store::Scope> {
    let p = InstanceId::from_str(id).ok()?.partition();
    Some(crate::store::Scope::Partition(p.0))
}

/// A root instance id: the partition it lives on and a UUID. Child ids extend it with
/// `/{visit}/{lane}`; they parse to their root's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InstanceId {
    partition: PartitionId,
    uuid: uuid::Uuid,
}

impl InstanceId {
    pub fn new(partition: PartitionId, uuid: uuid::Uuid) -> InstanceId {
        InstanceId { partition, uuid }
    }

    /// A deterministic id: the same `seed` gives the same id (retried requests, redelivered
    /// start events, cron ticks).
    pub fn derived(partition: PartitionId, seed: &[u8]) -> InstanceId {
        InstanceId::new(
            partition,
            uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, seed),
        )
    }

    pub fn partition(&self) -> PartitionId {
        self.partition
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}-{}", self.partition.0, self.uuid)
    }
}

impl FromStr for InstanceId {
    type Err = PartitionError;

    /// Parses a root id or a child id (whose root is the part before the first `/`).
    fn from_str(s: &str) -> Result<InstanceId, PartitionError> {
        let bad = || PartitionError::NotAnInstanceId(s.to_string());
        let root = s.split('/').next().unwrap_or_default();
        let (p, uuid) = root
            .strip_prefix('p')
            .and_then(|r| r.split_once('-'))
            .ok_or_else(bad)?;
        let partition = p.parse::<u16>().map_err(|_| bad())?;
        let uuid = uuid::Uuid::parse_str(uuid).map_err(|_| bad())?;
        Ok(InstanceId::new(PartitionId(partition), uuid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_partition_and_children_their_roots() {
        let parts = Partitions::new(12).unwrap();
        let id = InstanceId::derived(PartitionId(7), b"seed");
        let text = id.to_string();
        assert!(text.starts_with("p7-"), "{text}");
        assert_eq!(text.parse::<InstanceId>().unwrap(), id);
        assert_eq!(parts.of_instance(&text).unwrap(), PartitionId(7));
        assert_eq!(
            parts.of_instance(&format!("{text}/3/sub/1/i0")).unwrap(),
            PartitionId(7)
        );
        assert_eq!(InstanceId::derived(PartitionId(7), b"seed"), id);
        assert!(parts.of_instance("b3c1a0e2-not-ours").is_err());
        assert!(matches!(
            Partitions::new(4).unwrap().of_instance(&text),
            Err(PartitionError::OutOfRange { .. })
        ));
        assert!(Partitions::new(0).is_err());
    }

    const PINNED: u16 = 10;

    #[test]
    fn keys_spread_over_partitions_stably() {
        let parts = Partitions::new(12).unwrap();
        let a = parts.of_key("order", "o-1");
        assert_eq!(a, parts.of_key("order", "o-1"));
        // the workflow is part of the key: the same value of two workflows may differ
        let mut used = std::collections::BTreeSet::new();
        for i in 0..1000 {
            used.insert(parts.of_key("order", &format!("o-{i}")));
        }
        assert_eq!(used.len(), 12, "1000 keys use every partition");
        // the hash is fixed (XXH3-64 of `workflow 0x1f key`): a key's partition never changes
        // across versions of the broker, or stored state would be on the wrong partition
        assert_eq!(a, PartitionId(PINNED));
        assert_eq!(Partitions::new(1).unwrap().of_key("x", "y"), PartitionId(0));
    }
}
