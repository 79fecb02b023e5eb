//! Applying input records on the state partitions this broker owns without the work topic
//! hop (docs/scale.md "No hop for owned partitions").
//!
//! A state partition drops a record whose source position is at or below the highest it
//! applied from that source, so the records of one input partition must reach it in offset
//! order, whichever way they travel. A record applied directly overtakes every record of
//! the same input partition still in the work topic, so a record of input partition `i`
//! for state partition `p` is applied directly only when none can be there:
//!
//! - **`p` has read its work topic past this broker's last forward to it**, and no forward to
//!   `p` is pending in the current round (it would land after the direct record).
//! - **This broker forwarded a record of `i`'s current run to `p`, and `p` applied it.** A run
//!   is what this broker consumed of `i` without a gap. Records of `i` at earlier offsets
//!   forwarded by anyone (another broker that held `i`, or this one before a restart) were
//!   acknowledged before their offsets were committed, so before this run's first fetch,
//!   so before this broker's forward: reading that forward back proves they are applied.
//!   A copy forwarded later by a former holder of `i` is at or above the run's start, so
//!   this broker consumes that record itself and either copy is dropped as the other's
//!   duplicate.
//!
//! The rules are pure bookkeeping; the core feeds them what it consumes, forwards and reads.

use crate::cluster::node::InputPartition;
use crate::cluster::partition::PartitionId;
use std::collections::{BTreeMap, BTreeSet};

/// A forward to a partition sent in this round whose offset is not known yet.
const PENDING: i64 = i64::MAX;

/// Which input partitions may skip the work topic into which state partitions.
#[derive(Debug, Default)]
pub struct Direct {
    /// Per input partition: the offset the current run expects next.
    next: BTreeMap<InputPartition, i64>,
    /// The (input partition, state partition) pairs with a forward in the current run.
    barrier: BTreeSet<(InputPartition, PartitionId)>,
    /// Per state partition: the work topic offset of this broker's last forward to it
    /// ([`PENDING`] while a round's forward is not acknowledged yet).
    forwarded: BTreeMap<PartitionId, i64>,
    /// Per owned state partition: the next work topic offset it will apply.
    read: BTreeMap<PartitionId, i64>,
}

impl Direct {
    /// A record of `input` at `offset` was consumed: a gap (or a step back) starts a new run,
    /// and the input's records go through the work topic again until a forward is read back.
    pub fn consumed(&mut self, input: &InputPartition, offset: i64) {
        match self.next.get_mut(input) {
            Some(next) if *next == offset => *next = offset + 1,
            _ => {
                self.next.insert(input.clone(), offset + 1);
                self.barrier.retain(|(i, _)| i != input);
            }
        }
    }

    /// True when a record of `input` (just [`Direct::consumed`]) may be applied on `p`, owned
    /// here, without going through the work topic.
    pub fn allows(&self, input: &InputPartition, p: PartitionId) -> bool {
        let Some(&read) = self.read.get(&p) else {
            return false;
        };
        self.barrier.contains(&(input.clone(), p))
            && self.forwarded.get(&p).is_none_or(|&f| f < read)
    }

    /// True when the current run of `input` has a forward to `p`: its later records must not
    /// overtake it (`broker::held` keeps them until [`Direct::allows`]).
    pub fn began(&self, input: &InputPartition, p: PartitionId) -> bool {
        self.barrier.contains(&(input.clone(), p))
    }

    /// The offset of `input` the current run expects next: everything before it was consumed.
    pub fn next(&self, input: &InputPartition) -> Option<i64> {
        self.next.get(input).copied()
    }

    /// A record for `p` (of `input`, when it is an input record) goes into this round's
    /// forward: nothing of any input may overtake it into `p` until it is read back.
    pub fn forwarding(&mut self, input: Option<&InputPartition>, p: PartitionId) {
        self.forwarded.insert(p, PENDING);
        if let Some(i) = input {
            self.barrier.insert((i.clone(), p));
        }
    }

    /// The round's forward to `p` was acknowledged at work topic offset `at` (the last of
    /// its records there).
    pub fn forwarded(&mut self, p: PartitionId, at: i64) {
        let f = self.forwarded.entry(p).or_insert(at);
        *f = if *f == PENDING { at } else { (*f).max(at) };
    }

    /// `p` reads its work topic from `offset` (taken over) or applies the records before it.
    pub fn read(&mut self, p: PartitionId, offset: i64) {
        let r = self.read.entry(p).or_insert(offset);
        *r = (*r).max(offset);
    }

    /// `p` was taken over here and reads its work topic from `offset`.
    pub fn taken(&mut self, p: PartitionId, offset: i64) {
        self.read.insert(p, offset);
    }

    /// `p` is no longer owned here.
    pub fn released(&mut self, p: PartitionId) {
        self.read.remove(&p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(n: i32) -> InputPartition {
        InputPartition {
            topic: "in".into(),
            partition: n,
        }
    }

    const P: PartitionId = PartitionId(3);

    /// The input's run has a forward to `P` acknowledged at `at`.
    fn barrier(d: &mut Direct, i: &InputPartition, at: i64) {
        d.forwarding(Some(i), P);
        d.forwarded(P, at);
    }

    /// `P` owned, `i`'s run started at offset 0 with a forward that `P` has read back.
    fn direct_from_start(i: &InputPartition) -> Direct {
        let mut d = Direct::default();
        d.taken(P, 0);
        d.consumed(i, 0);
        barrier(&mut d, i, 0);
        d.read(P, 1);
        assert!(d.allows(i, P));
        d
    }

    #[test]
    fn direct_only_after_a_forward_of_the_run_is_read_back() {
        let mut d = Direct::default();
        let i = input(0);
        d.taken(P, 0);
        d.consumed(&i, 10);
        assert!(!d.allows(&i, P), "no forward of this run yet");
        barrier(&mut d, &i, 5);
        d.consumed(&i, 11);
        assert!(!d.allows(&i, P), "the forward is not read back");
        d.read(P, 5);
        assert!(!d.allows(&i, P), "offset 5 itself is not applied yet");
        d.read(P, 6);
        assert!(d.allows(&i, P));
        let other = input(1);
        d.consumed(&other, 0);
        assert!(!d.allows(&other, P), "another input has its own run");
    }

    #[test]
    fn a_gap_starts_a_new_run() {
        let i = input(0);
        let mut d = direct_from_start(&i);
        d.consumed(&i, 1);
        assert!(d.allows(&i, P));
        // another broker held the input meanwhile and committed up to 40
        d.consumed(&i, 40);
        assert!(!d.allows(&i, P));
        barrier(&mut d, &i, 7);
        d.read(P, 8);
        d.consumed(&i, 41);
        assert!(d.allows(&i, P));
        // a step back (this broker's own uncommitted records read again)
        d.consumed(&i, 30);
        assert!(!d.allows(&i, P));
    }

    #[test]
    fn a_pending_forward_blocks_every_input() {
        let mut d = Direct::default();
        let (a, b) = (input(0), input(1));
        d.taken(P, 0);
        for i in [&a, &b] {
            d.consumed(i, 0);
            barrier(&mut d, i, 0);
        }
        d.read(P, 1);
        assert!(d.allows(&a, P) && d.allows(&b, P));
        // a record of `a` forwarded in this round (the partition was not owned a moment ago)
        d.forwarding(Some(&a), P);
        assert!(!d.allows(&a, P) && !d.allows(&b, P));
        d.forwarded(P, 9);
        assert!(!d.allows(&b, P));
        d.read(P, 10);
        assert!(d.allows(&b, P));
    }

    #[test]
    fn not_owned_is_never_direct() {
        let i = input(0);
        let mut d = direct_from_start(&i);
        d.released(P);
        assert!(!d.allows(&i, P));
        // taken back: its work topic is read from the stored offset, below the last forward
        d.taken(P, 0);
        assert!(!d.allows(&i, P));
        d.read(P, 1);
        assert!(d.allows(&i, P));
    }
}
