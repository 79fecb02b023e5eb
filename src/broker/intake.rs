//! Input records consumed from Kafka, routed to their state partitions (docs/scale.md "No hop
//! for owned partitions"): applied here directly when `broker::direct` allows it, held
//! behind their run's first forward (`broker::held`) when that forward is not read back yet,
//! else through the work topic to the owner. Exactly once by source position either way.

use super::core::{direct_work, input_of, Core, Sinks};
use super::error::CoreError;
use super::flight::Finish;
use super::processor::PartInput;
use super::Record;
use super::Stat;
use crate::cluster::node::InputPartition;
use crate::cluster::partition::PartitionId;
use crate::cluster::work::{Source, Work};
use std::collections::BTreeMap;

impl Core {
    /// Moves input records of partitions let go (`Core::strays`, `Core::held_strays`) into
    /// the round's forward, each before the first record there of the same input partition
    /// at a later offset for the same partition (or last): a partition must get each input's
    /// records in offset order. A stray applied directly was consumed before what was
    /// forwarded after it, but a held one after its run's first forward, which may be in this
    /// round's forward.
    pub(super) fn unstray(&mut self, forward: &mut Vec<(PartitionId, Work)>) {
        let mut strays = std::mem::take(&mut self.strays);
        strays.append(&mut self.held_strays);
        self.place_strays(strays, forward);
    }

    /// Puts `strays` into `forward` in consumption order per input, whichever step or round
    /// they came from.
    pub(super) fn place_strays(
        &mut self,
        mut strays: Vec<(PartitionId, Work)>,
        forward: &mut Vec<(PartitionId, Work)>,
    ) {
        strays.sort_by_cached_key(|(_, w)| w.source().position());
        for (p, work) in strays {
            self.direct.forwarding(input_of(&work).as_ref(), p);
            place(forward, p, work);
        }
    }

    /// Turns consumed input records into partition inputs and forwards.
    pub(super) fn take_records(
        &mut self,
        records: Vec<Record>,
        sinks: &mut Sinks<'_>,
    ) -> Result<(), CoreError> {
        let (parts, kafka) = (self.parts, self.log.is_some());
        for r in records {
            let slot = (r.topic.clone(), r.partition);
            let next = sinks
                .offsets
                .get(&slot)
                .copied()
                .unwrap_or(0)
                .max(r.offset + 1);
            sinks.offsets.insert(slot, next);
            let input = InputPartition {
                topic: r.topic.clone(),
                partition: r.partition,
            };
            // a new run (a gap, or read again): what its last run held goes first, through
            // the work topic, since the new run's first record will
            if self.direct.next(&input) != Some(r.offset) && !self.held.is_empty() {
                for (p, records) in self.held.take_input(&input) {
                    self.forward_input(&input, p, records, sinks)?;
                }
            }
            self.direct.consumed(&input, r.offset);
            let ing = super::ingest::record(&self.reg, parts, &self.cfg, r);
            sinks.stats.extend(ing.stats);
            for (p, work) in ing.work {
                // exactly once by source position at the owner, wherever it is: here at once
                // when nothing of its input can be ahead of it in the work topic
                let owned = kafka && self.owned.contains(&p);
                let here =
                    !kafka || owned && !self.held.holds(&input, p) && self.direct.allows(&input, p);
                if let Work::Event { event, source, .. } = &work {
                    tracing::debug!(to = %p, id = %event.id, from = ?source, here, "route");
                }
                if here {
                    sinks.stats.push(Stat::Routed("direct"));
                    sinks.inputs.entry(p).or_default().push(PartInput::Work {
                        work,
                        ticket: None,
                        offset: None,
                    });
                    continue;
                }
                // behind a forward of this run not read back yet: held, then applied
                // directly; past the bound, through the work topic after what was held
                let records = if owned && self.direct.began(&input, p) {
                    match self.held.hold(&input, p, work) {
                        Ok(()) => continue,
                        Err(records) => records,
                    }
                } else {
                    let mut records = self.held.take(&input, p);
                    records.push(work);
                    records
                };
                self.forward_input(&input, p, records, sinks)?;
            }
        }
        Ok(())
    }

    /// Sends `records` of `input` (in consumption order) to `p` through the work topic, after
    /// whatever of that input was applied to `p` directly and could still turn out void.
    fn forward_input(
        &mut self,
        input: &InputPartition,
        p: PartitionId,
        records: Vec<Work>,
        sinks: &mut Sinks<'_>,
    ) -> Result<(), CoreError> {
        sinks
            .stats
            .extend(records.iter().map(|_| Stat::Routed("work_topic")));
        // records of this partition applied directly in rounds still in flight go first if
        // their batches turn out void
        if self.flights.iter().any(|f| f.holds_direct(p)) {
            self.land_all(sinks.inputs)?;
            self.unstray(sinks.forward);
        }
        // and this input's direct records of this round go with them, ahead (the round's
        // batch could turn out void after the forward left)
        if let Some(list) = sinks.inputs.get_mut(&p) {
            let (ahead, keep): (Vec<PartInput>, Vec<PartInput>) = std::mem::take(list)
                .into_iter()
                .partition(|i| direct_work(i).and_then(input_of).as_ref() == Some(input));
            *list = keep;
            for i in ahead {
                if let PartInput::Work { work, .. } = i {
                    sinks.forward.push((p, work));
                }
            }
        }
        self.direct.forwarding(Some(input), p);
        sinks
            .forward
            .extend(records.into_iter().map(|work| (p, work)));
        Ok(())
    }

    /// Moves held input records whose partition has read back their run's forward into the
    /// round, in order: applied directly, and their input's offsets may be committed.
    pub(super) fn unhold(
        &mut self,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
        finish: &mut Finish,
    ) {
        if self.held.is_empty() {
            return;
        }
        let (owned, direct) = (&self.owned, &self.direct);
        let ready = self
            .held
            .ready(|i, p| owned.contains(&p) && direct.allows(i, p));
        for (input, p, records) in ready {
            if let Some(next) = self.direct.next(&input) {
                let slot = finish
                    .offsets
                    .entry((input.topic, input.partition))
                    .or_default();
                *slot = (*slot).max(next);
            }
            for work in records {
                finish.stats.push(Stat::Routed("direct"));
                inputs.entry(p).or_default().push(PartInput::Work {
                    work,
                    ticket: None,
                    offset: None,
                });
            }
        }
    }

    /// Stops the round's input offsets at the first record still held: after a crash it is
    /// consumed again.
    pub(super) fn hold_back_offsets(&self, offsets: &mut BTreeMap<(String, i32), i64>) {
        if self.held.is_empty() {
            return;
        }
        for ((topic, partition), next) in offsets.iter_mut() {
            let input = InputPartition {
                topic: topic.clone(),
                partition: *partition,
            };
            if let Some(lowest) = self.held.lowest(&input) {
                *next = (*next).min(lowest);
            }
        }
    }
}

/// Puts `work`, an input record for `p`, into a round's forward before the first record there
/// for `p` of the same input partition at a later offset, or last: each partition gets each
/// input's records in offset order, whichever way the others took.
pub(super) fn place(forward: &mut Vec<(PartitionId, Work)>, p: PartitionId, work: Work) {
    let at = forward
        .iter()
        .position(|(q, w)| *q == p && later(w, &work))
        .unwrap_or(forward.len());
    forward.insert(at, (p, work));
}

/// True when `w` was consumed from the same input partition as `than`, at a later offset.
fn later(w: &Work, than: &Work) -> bool {
    match (w.source(), than.source()) {
        (
            Source::Input {
                topic,
                partition,
                offset,
            },
            Source::Input {
                topic: t,
                partition: q,
                offset: o,
            },
        ) => topic == t && partition == q && offset > o,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(partition: i32, offset: i64) -> Work {
        Work::Start {
            id: format!("x{partition}-{offset}"),
            workflow: "w".into(),
            input: serde_json::Value::Null,
            source: Source::Input {
                topic: "in".into(),
                partition,
                offset,
            },
            trace: None,
            parent: None,
        }
    }

    fn order(forward: &[(PartitionId, Work)]) -> Vec<(u16, i32, i64)> {
        forward
            .iter()
            .map(|(p, w)| match w.source() {
                Source::Input {
                    partition, offset, ..
                } => (p.0, *partition, *offset),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn a_stray_goes_before_later_records_of_its_input_only() {
        let (p, q) = (PartitionId(1), PartitionId(2));
        // this round's forward: a run's first record for p (input 0 at 100), input 1's for p,
        // and input 0's for another partition
        let mut forward = vec![(p, record(0, 100)), (p, record(1, 5)), (q, record(0, 90))];
        // held behind input 0's first forward, then let go: after it, not before
        place(&mut forward, p, record(0, 101));
        // applied directly before a forward of this round: ahead of it
        place(&mut forward, p, record(0, 99));
        assert_eq!(
            order(&forward),
            vec![(1, 0, 99), (1, 0, 100), (1, 1, 5), (2, 0, 90), (1, 0, 101)]
        );
    }
}
