//! Input records held back for a state partition owned here until they may skip the work
//! topic (docs/scale.md "No hop for owned partitions").
//!
//! The first record of an input partition's run for a state partition goes through the work
//! topic (`broker::direct`); the records after it must not overtake it. Sending them after
//! it through the work topic too is correct, but with a backlog the forward is never read
//! back before the next one leaves, so every queued record would take the hop. Instead they
//! wait here, in the order they were consumed, and are applied directly once the partition
//! has read the forward back.
//!
//! Memory is bounded: from [`HELD_PAUSE`] records on, the core takes no more input records
//! until some go, and past [`HELD_MAX`] a pair's records go through the work topic after all
//! (in order, so still correct). The input offsets committed never pass a held record
//! ([`Held::lowest`]): after a crash it is consumed again.

use crate::cluster::node::InputPartition;
use crate::cluster::partition::PartitionId;
use crate::cluster::work::{Source, Work};
use std::collections::BTreeMap;

/// The most input records held back at once, over every pair: about four rounds of input.
/// A record is about its event's size in memory, a few KB with usual events, so this is tens
/// of MB at most (the input channel in front of the core holds more).
pub const HELD_MAX: usize = 8192;

/// From this many held records on, the core takes no more input records (`Core::run`) until
/// the work topic lets some go; requests, call results and the work topic's records come on
/// channels of their own and go on. A round adds at most about `ROUND_INPUTS` (2,000) more,
/// so [`HELD_MAX`] is reached only if the work topic stalls.
pub const HELD_PAUSE: usize = HELD_MAX / 2;

/// Records held back per (input partition, state partition), in consumption order.
#[derive(Debug, Default)]
pub struct Held {
    pairs: BTreeMap<(InputPartition, PartitionId), Vec<Work>>,
    count: usize,
}

impl Held {
    /// True when records of `input` for `p` are held: a later one must wait behind them.
    pub fn holds(&self, input: &InputPartition, p: PartitionId) -> bool {
        self.pairs.contains_key(&(input.clone(), p))
    }

    /// Holds `work` behind the pair's earlier records. Past the bound, the pair's records
    /// come back instead, `work` last, to go through the work topic in this order.
    pub fn hold(
        &mut self,
        input: &InputPartition,
        p: PartitionId,
        work: Work,
    ) -> Result<(), Vec<Work>> {
        let key = (input.clone(), p);
        if self.count >= HELD_MAX {
            let mut records = self.pairs.remove(&key).unwrap_or_default();
            self.count -= records.len();
            records.push(work);
            return Err(records);
        }
        self.pairs.entry(key).or_default().push(work);
        self.count += 1;
        Ok(())
    }

    /// Takes out, in order, the records of every pair `ready` says may go direct now.
    pub fn ready(
        &mut self,
        mut ready: impl FnMut(&InputPartition, PartitionId) -> bool,
    ) -> Vec<(InputPartition, PartitionId, Vec<Work>)> {
        let keys: Vec<(InputPartition, PartitionId)> = self
            .pairs
            .keys()
            .filter(|(i, p)| ready(i, *p))
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|key| {
                let records = self.pairs.remove(&key)?;
                self.count -= records.len();
                Some((key.0, key.1, records))
            })
            .collect()
    }

    /// Takes out every record held for `p` (let go: they go to its new owner).
    pub fn release(&mut self, p: PartitionId) -> Vec<Work> {
        let keys: Vec<_> = self
            .pairs
            .keys()
            .filter(|(_, q)| *q == p)
            .cloned()
            .collect();
        let mut out = Vec::new();
        for key in keys {
            let records = self.pairs.remove(&key).unwrap_or_default();
            self.count -= records.len();
            out.extend(records);
        }
        out
    }

    /// Takes out the records held for `p` of `input`.
    pub fn take(&mut self, input: &InputPartition, p: PartitionId) -> Vec<Work> {
        let records = self.pairs.remove(&(input.clone(), p)).unwrap_or_default();
        self.count -= records.len();
        records
    }

    /// Takes out every record of `input` held, per partition.
    pub fn take_input(&mut self, input: &InputPartition) -> Vec<(PartitionId, Vec<Work>)> {
        let keys: Vec<_> = self
            .pairs
            .keys()
            .filter(|(i, _)| i == input)
            .cloned()
            .collect();
        keys.into_iter()
            .map(|(i, p)| (p, self.take(&i, p)))
            .collect()
    }

    /// The lowest offset of `input` held, for any partition: committed offsets stop there.
    pub fn lowest(&self, input: &InputPartition) -> Option<i64> {
        self.pairs
            .iter()
            .filter(|((i, _), _)| i == input)
            .filter_map(|(_, records)| records.first().and_then(|w| offset(w.source())))
            .min()
    }

    /// True when the core should take no more input records for now ([`HELD_PAUSE`]).
    pub fn full(&self) -> bool {
        self.count >= HELD_PAUSE
    }

    /// The number of records held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

fn offset(source: &Source) -> Option<i64> {
    match source {
        Source::Input { offset, .. } => Some(*offset),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::work::Work;

    fn input(n: i32) -> InputPartition {
        InputPartition {
            topic: "in".into(),
            partition: n,
        }
    }

    fn record(i: &InputPartition, offset: i64) -> Work {
        Work::Start {
            id: format!("x{offset}"),
            workflow: "w".into(),
            input: serde_json::Value::Null,
            source: Source::Input {
                topic: i.topic.clone(),
                partition: i.partition,
                offset,
            },
            trace: None,
            parent: None,
        }
    }

    fn offsets(records: &[Work]) -> Vec<i64> {
        records.iter().filter_map(|w| offset(w.source())).collect()
    }

    #[test]
    fn records_come_out_in_order_once_ready() {
        let mut h = Held::default();
        let (a, b) = (input(0), input(1));
        let (p, q) = (PartitionId(1), PartitionId(2));
        for o in 10..13 {
            h.hold(&a, p, record(&a, o)).unwrap();
        }
        h.hold(&b, p, record(&b, 5)).unwrap();
        h.hold(&a, q, record(&a, 13)).unwrap();
        assert!(h.holds(&a, p) && h.holds(&b, p) && h.holds(&a, q));
        assert_eq!(h.lowest(&a), Some(10));
        assert_eq!(h.lowest(&b), Some(5));
        let out = h.ready(|i, part| *i == a && part == p);
        assert_eq!(out.len(), 1);
        assert_eq!(offsets(&out[0].2), vec![10, 11, 12]);
        assert!(!h.holds(&a, p));
        assert_eq!(
            h.lowest(&a),
            Some(13),
            "the other partition's record still holds the commit"
        );
        assert_eq!(h.len(), 2);
        let released = h.release(p);
        assert_eq!(offsets(&released), vec![5]);
        assert_eq!(h.lowest(&b), None);
        assert_eq!(h.len(), 1);
        let rest = h.take_input(&a);
        assert_eq!(rest.len(), 1);
        assert_eq!((rest[0].0, offsets(&rest[0].1)), (q, vec![13]));
        assert!(h.is_empty() && !h.holds(&a, q));
    }

    #[test]
    fn past_the_bound_a_pair_comes_back_in_order() {
        let mut h = Held::default();
        let (a, b) = (input(0), input(1));
        let p = PartitionId(1);
        for o in 0..HELD_MAX as i64 - 2 {
            h.hold(&a, p, record(&a, o)).unwrap();
        }
        h.hold(&b, p, record(&b, 0)).unwrap();
        h.hold(&b, p, record(&b, 1)).unwrap();
        let back = h.hold(&b, p, record(&b, 2)).unwrap_err();
        assert_eq!(
            offsets(&back),
            vec![0, 1, 2],
            "the pair's records, the new one last"
        );
        assert!(!h.holds(&b, p));
        assert_eq!(h.len(), HELD_MAX - 2);
        // room again: the next record of `b` is held
        h.hold(&b, p, record(&b, 3)).unwrap();
        assert!(h.holds(&b, p));
    }
}
