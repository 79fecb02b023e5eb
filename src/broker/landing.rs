//! Landing rounds in flight (`broker::flight`): once every append of a round is
//! acknowledged, its batches are checked against newer fences, written to the store, and only
//! then are its effects let out, its requests answered and its input offsets committed.

use super::batch::Effects;
use super::checkpoints::CheckpointOf;
use super::core::Core;
use super::error::CoreError;
use super::flight::{Appended, Finish, Flight, Step};
use super::processor::PartInput;
use super::snapshots::Latest;
use super::tickets;
use super::OutboxKey;
use crate::cluster::changelog::Checkpoint;
use crate::cluster::partition::PartitionId;
use crate::store::Entry as _;
use crate::store::Write;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// A store commit that takes this long is logged as a warning (all are in
/// `flowbroker_store_commit_seconds`).
const SLOW_COMMIT: std::time::Duration = std::time::Duration::from_secs(1);

/// What the changelog's offsets say of a step's batches ([`Core::verdict`]).
#[derive(Default)]
struct Verdict {
    /// The changelog record each partition's batch got, for the batches no fence voids
    /// (empty without a changelog).
    landed: BTreeMap<PartitionId, i64>,
    /// Partitions another broker's fence took from under this broker: their batches are void.
    lost: BTreeSet<PartitionId>,
    /// Of those, partitions to take back (a resumed broker's provisional fence while the group
    /// has them here).
    retake: Vec<PartitionId>,
}

impl Core {
    /// Lands every round in flight, oldest first, waiting for their appends. `inputs` are
    /// the inputs of a round being built (a partition lost meanwhile lets them go).
    pub(super) fn land_all(
        &mut self,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) -> Result<(), CoreError> {
        while let Some(mut f) = self.flights.pop_front() {
            let appended = futures::executor::block_on(&mut f.landed);
            self.land(f, appended, inputs)?;
        }
        Ok(())
    }

    /// Lands round `f`, whose appends acknowledged `appended`.
    pub(super) fn land(
        &mut self,
        f: Flight,
        appended: Vec<Appended>,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) -> Result<(), CoreError> {
        let Flight {
            steps, mut finish, ..
        } = f;
        let mut appended: VecDeque<_> = appended.into();
        for step in steps {
            let a = appended.pop_front().expect("an append per step");
            self.land_step(step, a, &appended, &mut finish, inputs)?;
        }
        // void batches' direct records go to the new owners before any offset is committed
        self.flush_strays()?;
        self.finish(finish);
        Ok(())
    }

    /// Lands one append (a step of a round): batches of partitions lost to a newer fence (or
    /// built under an older fence of this broker) are void; the others go to the store, then
    /// their effects leave. `later` are what the round's later steps' appends acknowledged.
    pub(super) fn land_step(
        &mut self,
        step: Step,
        appended: Appended,
        later: &VecDeque<Appended>,
        finish: &mut Finish,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) -> Result<(), CoreError> {
        let appended = appended?;
        if self.log.is_some() && !step.changed.is_empty() {
            self.metrics
                .landing_seconds
                .observe(step.sent.0.elapsed().as_secs_f64());
        }
        let Step {
            seq,
            changed,
            mut effects,
            mut direct,
            mut asked,
            fences,
            sent,
            lazy,
        } = step;
        // built under a fence that is no longer the partition's: let go (or lost) since
        let void: BTreeSet<PartitionId> = fences
            .iter()
            .filter(|(p, f)| self.log.is_some() && self.fences.get(p) != Some(f))
            .map(|(p, _)| *p)
            .collect();
        // of those, batches of a partition held off after an earlier batch of the same fence
        // (below) that still precede the other broker's fence: they stand like it (the new
        // owner restores them and lets their effects out), so their requests were applied
        let stood = self.still_standing(&appended, &void, &fences)?;
        let Verdict {
            landed,
            lost,
            retake,
        } = self.verdict(appended, &void)?;
        let gone = |p: &PartitionId| void.contains(p) || lost.contains(p);
        let writes = self.stage(seq, changed, gone, &landed);
        // a void batch lets nothing out; its requests are told to retry and its direct input
        // records go to the new owner (work topic records are read again there). A batch that
        // stood lets nothing out either; its requests keep their answers
        effects.retain(|(p, _)| !gone(p));
        for &p in void.difference(&stood).chain(&lost) {
            for t in asked.remove(&p).unwrap_or_default() {
                if let Some(t) = finish.tickets.get_mut(t) {
                    tickets::moved(t, p);
                }
            }
            let records = direct.remove(&p).unwrap_or_default();
            self.strays.extend(records.into_iter().map(|w| (p, w)));
        }
        for p in lost {
            self.release(p, inputs);
        }
        for p in retake {
            self.take_over(p, inputs)?;
        }
        let lazy = lazy
            && effects.iter().all(|(_, fx)| {
                fx.outbox.is_empty()
                    && fx.calls.is_empty()
                    && fx.stats.is_empty()
                    && fx.offers.is_empty()
            });
        self.commit(&writes, lazy)?;
        // paused between the append and here (a stopped or starved process) long enough for
        // the group to move a partition: its effects stay in (the new owner sends them). The
        // records let out below carry the time of this check (`LetOut::at`)
        let checked = self.clock.now();
        self.recheck(&mut effects, later, sent, checked, &fences, inputs)?;
        self.let_out(effects, finish, checked);
        Ok(())
    }

    /// Which of the step's appended batches stand, by the changelog's offsets: a batch right
    /// after this broker's last record of its partition does at no cost; one with records
    /// between is void if another broker's fence is among them (the partition is lost, and
    /// taken back when the fence is a resumed broker's provisional one while the group has it
    /// here). Void batches (`void`) are left out.
    fn verdict(
        &mut self,
        appended: Vec<(PartitionId, i64)>,
        void: &BTreeSet<PartitionId>,
    ) -> Result<Verdict, CoreError> {
        let mut v = Verdict::default();
        let Some(log) = self.log.as_mut() else {
            return Ok(v);
        };
        for (p, offset) in appended {
            if void.contains(&p) {
                continue;
            }
            // a zombie check that costs nothing while nobody else writes: only this
            // broker's records since its fence means it still owns `p`
            let prev = self.tail.get(&p).copied().unwrap_or(-1);
            if offset != prev + 1 {
                if let Some(by) = super::handoff::fenced_by(log.as_mut(), p, prev + 1, offset - 1)?
                {
                    if by.provisional && !self.resumed.contains(&p) {
                        tracing::warn!(partition = %p, by = %by.owner, batch = offset,
                            "a restarted broker resumed this state partition while the \
                             group has it here: the batch is void and the partition is \
                             taken back");
                        v.retake.push(p);
                    } else {
                        tracing::error!(partition = %p, by = %by.owner, batch = offset,
                            "another broker took this state partition over without this \
                             broker noticing: the batch is void (neither stored nor let \
                             out) and the partition released");
                    }
                    v.lost.insert(p);
                    continue;
                }
            }
            self.tail.insert(p, offset);
            v.landed.insert(p, offset);
        }
        Ok(v)
    }

    /// The store writes of round step `seq`'s batches (`changed`) but those of partitions
    /// `gone`, and a checkpoint for each partition whose batch `landed` at a changelog offset.
    fn stage(
        &mut self,
        seq: u64,
        changed: Vec<(PartitionId, Arc<Vec<Write>>)>,
        gone: impl Fn(&PartitionId) -> bool,
        landed: &BTreeMap<PartitionId, i64>,
    ) -> Vec<Write> {
        let now = self.clock.now();
        let size = changed.iter().map(|(_, w)| w.len()).sum::<usize>();
        let mut writes = Vec::with_capacity(landed.len() + size);
        for (p, w) in changed {
            if gone(&p) {
                continue;
            }
            if let Some(pending) = self.pending.get_mut(&p) {
                pending.settle(seq);
            }
            // (counted once the batch stands: a void one is not in the changelog's state)
            if let Some(plan) = self.snapshots.as_mut() {
                plan.grew(p, &w);
            }
            // (the pending writes let go of them above)
            let w = Arc::try_unwrap(w).unwrap_or_else(|w| (*w).clone());
            match landed.get(&p) {
                // outbox entries wait in memory for Kafka (`broker::young`)
                Some(&offset) => self.young.land(p, offset, w, now, &mut writes),
                None => writes.extend(w),
            }
        }
        for (&p, &offset) in landed {
            // not past the record of an outbox entry the store does not have yet
            let cp = Checkpoint {
                next: self.young.first(p).unwrap_or(offset + 1),
                fence: self.fences.get(&p).copied(),
            };
            writes.push(CheckpointOf(p).node_write(&cp));
        }
        self.shared
            .held_outbox(landed.keys().map(|&p| (p, self.young.len(p))));
        writes
    }

    /// Writes a step's batches to the store, timed; waits for the disk only without a
    /// changelog (with one, the local store is a cache of it), and not for a `lazy` step
    /// (one that lets nothing out).
    fn commit(&mut self, writes: &[Write], lazy: bool) -> Result<(), CoreError> {
        let t0 = std::time::Instant::now();
        let sync = !lazy && self.log.is_none();
        self.store.apply(writes, sync)?;
        let took = t0.elapsed();
        self.metrics
            .commit_seconds
            .with_label_values(&[] as &[&str])
            .observe(took.as_secs_f64());
        if took >= SLOW_COMMIT {
            // fjall logs its stalls at `info`, which the default filter leaves out
            tracing::warn!(
                took_ms = took.as_millis() as u64,
                writes = writes.len(),
                "a store commit was slow: the store holds commits back while its memtables not \
                 flushed yet fill store.write_buffer_mib, or the disk is slow (docs/store.md \
                 \"Memory\")"
            );
        }
        Ok(())
    }

    /// A step landing late (`handoff::Recheck`) looks for another broker's fence after its
    /// batches: the effects of a partition taken over meanwhile stay in (the new owner sends
    /// them) and the partition is let go, or taken back when the fence is a resumed broker's
    /// provisional one while the group has it here.
    fn recheck(
        &mut self,
        effects: &mut Vec<(PartitionId, Effects)>,
        later: &VecDeque<Appended>,
        sent: (std::time::Instant, DateTime<Utc>),
        checked: DateTime<Utc>,
        fences: &BTreeMap<PartitionId, i64>,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) -> Result<(), CoreError> {
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        // the records this broker appended after the batch, as far as Kafka acknowledged
        // them: the round's later steps, then the rounds built after it
        let flights = &mut self.flights;
        let own = |p: PartitionId| -> BTreeSet<i64> {
            let steps = later.iter().filter_map(|a| a.as_ref().ok()).flatten();
            let steps = steps.filter(|(q, _)| *q == p).map(|(_, o)| *o);
            let rounds = flights.iter_mut().flat_map(|f| f.landed.acked_so_far(p));
            steps.chain(rounds).collect()
        };
        let check = super::handoff::Recheck {
            sent,
            now: checked,
            metrics: &self.metrics,
        };
        let held = check.fenced(log.as_mut(), &self.tail, effects, own)?;
        effects.retain(|(p, _)| !held.iter().any(|(q, _)| q == p));
        for (p, by) in held {
            if let (Some(&fence), Some(&last)) = (fences.get(&p), self.tail.get(&p)) {
                self.held_off.insert(p, (fence, last));
            }
            self.release(p, inputs);
            if by.provisional && !self.resumed.contains(&p) {
                // as at an unexpected offset (`verdict`): the group has `p` here
                tracing::warn!(partition = %p, by = %by.owner,
                    "this broker was paused after its batch was appended and a restarted \
                     broker resumed the partition meanwhile while the group has it here: \
                     the batch's effects stay in and the partition is taken back (its \
                     restore sends them)");
                self.take_over(p, inputs)?;
            } else {
                tracing::error!(partition = %p, by = %by.owner,
                    "this broker was paused after its batch was appended and another \
                     broker took the partition over meanwhile: the batch's effects stay in \
                     (the new owner sends them) and the partition is released");
            }
        }
        Ok(())
    }

    /// Lets a landed step's effects out: function calls, task offers, spans, and its outbox
    /// records (stamped `checked`, when the step was last checked against fences); its
    /// counts go to the round's `finish`.
    fn let_out(
        &mut self,
        effects: Vec<(PartitionId, Effects)>,
        finish: &mut Finish,
        checked: DateTime<Utc>,
    ) {
        for (p, mut fx) in effects {
            finish.stats.append(&mut fx.stats);
            if let Some(x) = &self.out.spans {
                x.export(std::mem::take(&mut fx.spans));
            }
            for c in fx.calls {
                self.invoke(c);
            }
            for (queue, ready) in fx.offers {
                self.shared.board.offer(queue, ready);
            }
            let out: Vec<_> = fx
                .outbox
                .into_iter()
                .map(|(seq, rec)| (OutboxKey { partition: p, seq }, rec))
                .collect();
            self.send_out(out, checked);
        }
    }

    /// The partitions among `void` whose batch stands after all: built under the fence of a
    /// partition held off ([`Core::held_off`]), and no other broker's fence between the last
    /// batch of it that stood and this one (a partition's appends may be on their way
    /// together, docs/broker.md "Pipelined rounds"). Their effects stay in as the held-off
    /// batch's did; nothing of them is stored here (the partition is let go). Their direct
    /// input records went to the new owner when the partition was let go, and it drops them
    /// as applied (by their source position: it restored the batch).
    fn still_standing(
        &mut self,
        appended: &[(PartitionId, i64)],
        void: &BTreeSet<PartitionId>,
        fences: &BTreeMap<PartitionId, i64>,
    ) -> Result<BTreeSet<PartitionId>, CoreError> {
        let mut stood = BTreeSet::new();
        let Some(log) = self.log.as_mut() else {
            return Ok(stood);
        };
        for &(p, offset) in appended {
            let Some(&(fence, last)) = self.held_off.get(&p) else {
                continue;
            };
            if !void.contains(&p) || fences.get(&p) != Some(&fence) {
                continue;
            }
            if super::handoff::fenced_by(log.as_mut(), p, last + 1, offset - 1)?.is_none() {
                tracing::warn!(partition = %p, batch = offset,
                    "a batch appended before another broker's fence, while this broker was \
                     paused: it stands (the new owner lets its effects out)");
                self.held_off.insert(p, (fence, offset));
                stood.insert(p);
            }
        }
        Ok(stood)
    }

    /// Sends strays (direct input records of partitions let go) through the work topic now:
    /// each was consumed before anything of its input the round being built forwards. Held
    /// records of partitions let go (`Core::held_strays`) wait for that round's forward.
    pub(super) fn flush_strays(&mut self) -> Result<(), CoreError> {
        if self.strays.is_empty() {
            return Ok(());
        }
        let mut forward = Vec::new();
        let strays = std::mem::take(&mut self.strays);
        self.place_strays(strays, &mut forward);
        if let Some(log) = self.log.as_mut() {
            for (p, offset) in log.forward(forward)? {
                self.direct.forwarded(p, offset);
            }
        }
        Ok(())
    }

    /// A landed round's requests are answered, its input offsets committed, its counts
    /// counted; then whatever waits on applied state looks again.
    pub(super) fn finish(&mut self, finish: Finish) {
        let Finish {
            tickets,
            offsets,
            stats,
            now,
        } = finish;
        tickets::answer(tickets);
        if !offsets.is_empty() {
            let list: Vec<(String, i32, i64)> =
                offsets.into_iter().map(|((t, p), o)| (t, p, o)).collect();
            (self.out.commit_offsets)(list);
        }
        super::stats::count(&self.metrics, &self.reg, stats);
        self.backpressure();
        // requests waiting to read what they wrote look again (`http::barrier`)
        self.shared.applied.notify_waiters();
        if let Some(plan) = self.snapshots.as_mut() {
            // the latest snapshot announced of a partition (`due` reads it only for one whose
            // interval has passed, or that it hands to the writer)
            let directory = &self.shared.directory;
            let latest = |p: PartitionId| {
                let d = directory.read().ok()?;
                let m = d.snapshot(p)?;
                Some(Latest {
                    next: m.next,
                    bytes: m.bytes,
                    keys: m.keys,
                })
            };
            let (tail, young) = (&self.tail, &self.young);
            let next = |p: PartitionId| {
                let t = tail.get(&p)?;
                Some(young.first(p).unwrap_or(t + 1))
            };
            plan.due(&self.owned, &next, &self.fences, &self.store, &latest, now);
        }
    }
}
