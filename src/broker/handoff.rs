//! Hand-off of state partitions between brokers: taking one over (fence, restore from the
//! changelog, resume the work topic at the restored offset, re-send the outbox, re-invoke
//! calls, plan schedules), letting one go, and finding out that another broker fenced this
//! one out (docs/scale.md).

use super::checkpoints::CheckpointOf;
use super::core::Core;
use super::error::CoreError;
use super::positions::WorkOffset;
use super::processor::PartInput;
use super::records::{Call, OutRecord, StoredVersion};
use super::{OutboxKey, Stat};
use crate::cluster::changelog::{Checkpoint, Entry};
use crate::cluster::partition::PartitionId;
use crate::cluster::work::ReadFrom;
use crate::cluster::{Log, LogError};
use crate::engine::ErrorInfo;
use crate::store::Entry as _;
use crate::store::{Scope, StoreError, Table, SEP};
use std::collections::BTreeMap;

impl Core {
    /// Takes partition `p` over (the consumer group assigned it): appends a fence to its
    /// changelog, restores what this broker's store missed up to that fence (ignoring batches
    /// of fenced-out owners), then reads the work topic from the offset the state records,
    /// re-sends its outbox, re-invokes its calls and plans its schedules.
    pub(super) fn take_over(
        &mut self,
        p: PartitionId,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) -> Result<(), CoreError> {
        self.take_over_as(p, inputs, false)
    }

    /// [`Core::take_over`], with a provisional fence when `provisional` (a resumed partition
    /// the group has not assigned yet).
    pub(super) fn take_over_as(
        &mut self,
        p: PartitionId,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
        provisional: bool,
    ) -> Result<(), CoreError> {
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        let t0 = std::time::Instant::now();
        // no standby write reaches `p` from here on: the checkpoint read below is the copy's
        self.shared.standby.take(p);
        self.store.forget_due(Scope::Partition(p.0));
        self.store.forget_resident(Scope::Partition(p.0));
        let owner = log.owner();
        let fence = log.append(&[(p, Entry::Fence { owner, provisional })])?[0].1;
        let node = self.store.write()?;
        let mut cp: Checkpoint = node.read(&CheckpointOf(p))?.unwrap_or_default();
        drop(node);
        if cp.next > fence {
            tracing::warn!(partition = %p, local = cp.next, fence,
                "the changelog is shorter than this broker's store (was the Kafka data lost?); \
                 continuing from the store");
            cp.next = fence;
        }
        let snapshot = super::snapshots::load(
            log.as_mut(),
            &self.store,
            &self.shared,
            self.snapshots.as_ref(),
            p,
            &mut cp,
        )?;
        let entries = log.read(p, cp.next, fence)?;
        let restored = entries.len().saturating_sub(1);
        let mut writes = Vec::new();
        for (offset, entry) in entries {
            if let Some(w) = cp.offer(offset, entry) {
                writes.extend(w);
            }
        }
        cp.next = fence + 1;
        cp.fence = Some(fence);
        writes.push(CheckpointOf(p).node_write(&cp));
        self.store.apply(&writes, false)?;
        self.fences.insert(p, fence);
        self.tail.insert(p, fence);
        self.owned.insert(p);
        let now = self.clock.now();
        let parts = self.parts.count();
        if let Some(plan) = self.snapshots.as_mut() {
            plan.owned(p, parts, snapshot, now);
        }
        self.publish_owned();
        let tx = self.store.scoped(Scope::Partition(p.0));
        let mut swf = false;
        // the versions the partition's instances run on, even if this broker never deployed them
        for (k, v) in tx.prefix::<StoredVersion>(Table::Versions, "")? {
            if let Some((id, version)) = k.split_once(SEP) {
                swf |= id == crate::swf::EXECUTIONS;
                if self.reg.version(id, version).is_none() {
                    if let Some(d) = v.revive(id, version) {
                        tracing::info!(partition = %p, workflow = id, version,
                            "running a version this partition's instances use (not deployed here)");
                        self.reg.remember(d);
                    }
                }
            }
        }
        let work_offset = tx.read(&WorkOffset)?.unwrap_or(0);
        let outbox: Vec<(u64, OutRecord)> = tx
            .prefix_raw(Table::Outbox, "")?
            .into_iter()
            .map(|(k, v)| {
                let seq = OutboxKey::parse(&k).ok_or_else(|| StoreError::Unreadable {
                    table: Table::Outbox.name(),
                    key: k.clone(),
                    why: "not an outbox sequence number (20 digits)".into(),
                })?;
                OutRecord::decode(&self.cfg.kafka, &k, &v).map(|r| (seq, r))
            })
            .collect::<Result<_, _>>()?;
        let calls: Vec<(String, Call)> = tx.prefix(Table::Calls, "")?;
        let ready = if swf {
            super::swf_tasks::ready(&tx, p)?
        } else {
            Vec::new()
        };
        drop(tx);
        for (queue, r) in ready {
            self.shared.board.offer(queue, r);
        }
        self.direct.taken(p, work_offset);
        if let Some(r) = &self.reader {
            self.epochs += 1;
            self.reading.insert(p, self.epochs);
            let from = ReadFrom {
                offset: work_offset,
                epoch: self.epochs,
            };
            let _ = r.send((p, Some(from)));
        }
        let outbox: Vec<(OutboxKey, OutRecord)> = outbox
            .into_iter()
            .map(|(seq, rec)| (OutboxKey { partition: p, seq }, rec))
            .filter(|(k, _)| !self.inflight.sending(k))
            .collect();
        let calls: Vec<Call> = calls
            .into_iter()
            .map(|(_, c)| c)
            .filter(|c| !self.inflight.calling(c))
            .collect();
        let (sending, calling) = self.inflight.len();
        tracing::info!(partition = %p, fence, snapshot, restored, work_offset, resent = outbox.len(),
            reinvoked = calls.len(), in_flight_records = sending, in_flight_calls = calling,
            took_ms = t0.elapsed().as_millis() as u64, "state partition taken over");
        let now = self.clock.now();
        self.send_out(outbox, now);
        for c in calls {
            if c.stale_on_takeover {
                // its payload is as old as the call: the engine invokes again with the state
                // as it is now (a durable function's invocation)
                let lost = ErrorInfo::new(
                    "InvocationLost",
                    "the state partition changed owner before this invocation's answer was \
                     applied; invoked again with the current operations",
                );
                inputs.entry(p).or_default().push(PartInput::CallDone {
                    call: c,
                    outcome: Err(lost),
                });
            } else {
                self.invoke(c);
            }
        }
        for d in self.reg.all_current() {
            if self.parts.of_key(&d.id, "") == p {
                inputs
                    .entry(p)
                    .or_default()
                    .push(PartInput::Plan(d.id.clone()));
            }
        }
        Ok(())
    }

    pub(super) fn publish_owned(&self) {
        self.shared.set_owned(
            self.owned
                .iter()
                .map(|p| (*p, self.fences.get(p).copied().unwrap_or(-1)))
                .collect(),
        );
    }

    /// Lets partition `p` go (the consumer group moved it): its inputs are dropped here (the
    /// new owner reads them from the work topic), except input records that were to be
    /// applied here directly, which become strays (forwarded to the new owner); its timers
    /// stop firing here.
    pub(super) fn release(
        &mut self,
        p: PartitionId,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
    ) {
        // direct input records of rounds in flight first (their batches are void now, or stand
        // after a pause, `broker::landing`: then the new owner, which restored them, drops the
        // copies by their source position), then those of the round being built: in the order
        // they were consumed
        for f in self.flights.iter_mut() {
            for step in f.steps.iter_mut() {
                let records = step.direct.remove(&p).unwrap_or_default();
                self.strays.extend(records.into_iter().map(|w| (p, w)));
            }
        }
        self.pending.remove(&p);
        self.hot.remove(&p);
        // the changelog has them, and the checkpoint is not past them
        self.young.release(p);
        self.shared.held_outbox([(p, 0)]);
        // void batches' takes never reach the store
        self.store.forget_due(Scope::Partition(p.0));
        self.store.forget_resident(Scope::Partition(p.0));
        let dropped = inputs.remove(&p).unwrap_or_default();
        for i in dropped {
            if self.log.is_none() || super::core::direct_work(&i).is_none() {
                continue;
            }
            if let PartInput::Work { work, .. } = i {
                self.strays.push((p, work));
            }
        }
        // held behind their run's first forward: they follow it to the new owner, with the
        // round's forward (it may be in there)
        let held = self.held.release(p);
        let routed = vec![Stat::Routed("work_topic"); held.len()];
        super::stats::count(&self.metrics, &self.reg, routed);
        self.held_strays.extend(held.into_iter().map(|w| (p, w)));
        self.direct.released(p);
        self.fences.remove(&p);
        self.tail.remove(&p);
        if let Some(plan) = self.snapshots.as_mut() {
            plan.released(p);
        }
        let was_owned = self.owned.remove(&p);
        self.shared.standby.give_back(p);
        if !was_owned || self.log.is_none() {
            return;
        }
        tracing::info!(partition = %p, "state partition released");
        self.shared.board.release(p);
        self.publish_owned();
        if let Some(r) = &self.reader {
            self.reading.remove(&p);
            let _ = r.send((p, None));
        }
    }
}

/// Another broker's fence found after this broker's records.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct FencedBy {
    pub owner: String,
    /// Every such fence is provisional (a restarted broker resuming what it held last).
    pub provisional: bool,
}

/// The brokers whose fences are among the changelog records `from..=through` of partition `p`
/// (written by others while this broker thought it owned `p`), if any. `from` follows a
/// record of this broker's own: when records from there on were deleted, another broker owned
/// `p` since (only an owner deletes, and only before a snapshot of its own, which this
/// broker's snapshots never pass: they stand for what it had already stored), so the deletion
/// counts as its fence, a fence not provisional (the deleted one's kind is not known), unless
/// a fence is found among the records left.
pub(super) fn fenced_by(
    log: &mut dyn Log,
    p: PartitionId,
    from: i64,
    through: i64,
) -> Result<Option<FencedBy>, LogError> {
    if from > through {
        return Ok(None);
    }
    // looked at first: a read from deleted records may find nothing to tell it so (a
    // partition deleted to its end) and wait out its deadline
    let mut start = log.start(p)?;
    let entries = if start > from {
        read_left(log, p, start, through)?
    } else {
        match log.read(p, from, through) {
            Ok(entries) => entries,
            Err(e) => {
                // deleted meanwhile?
                start = log.start(p)?;
                if start <= from {
                    return Err(e);
                }
                read_left(log, p, start, through)?
            }
        }
    };
    let mut by: Option<FencedBy> = None;
    for (_, e) in entries {
        if let Entry::Fence { owner, provisional } = e {
            let all = by.as_ref().is_none_or(|b| b.provisional) && provisional;
            by = Some(FencedBy {
                owner,
                provisional: all && start <= from,
            });
        }
    }
    if start > from {
        tracing::warn!(partition = %p, from, start,
            "the changelog was deleted past this broker's last record: another broker owned \
             the partition since");
        by.get_or_insert(FencedBy {
            owner: format!("another broker (the changelog now starts at {start})"),
            provisional: false,
        });
    }
    Ok(by)
}

/// The records of `p` from `start` (the first kept) through `through`, if any.
fn read_left(
    log: &mut dyn Log,
    p: PartitionId,
    start: i64,
    through: i64,
) -> Result<Vec<(i64, Entry)>, LogError> {
    if start > through {
        return Ok(Vec::new());
    }
    log.read(p, start, through)
}

/// How long after its append a batch's effects may leave without looking at the changelog
/// again. Far below any session timeout (Kafka's minimum is 6 s): the group cannot move a
/// partition and its new owner fence it sooner than that after this broker stopped
/// heartbeating. Also far below the 30 s a revocation waits for the core
/// (`kafka::membership`). Not derived from `kafka.session_timeout_ms`: `kafka.properties`
/// may set the group's own, and a broker cut off from the group coordinator may have sent
/// its last heartbeat long before the append.
const RECHECK_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The check before a landing batch's effects leave, for a broker stopped or starved
/// between the append and its landing.
pub(super) struct Recheck<'a> {
    /// When the batch's append was sent (monotonic, and the core's clock).
    pub sent: (std::time::Instant, chrono::DateTime<chrono::Utc>),
    pub now: chrono::DateTime<chrono::Utc>,
    pub metrics: &'a crate::metrics::Metrics,
}

impl Recheck<'_> {
    /// The partitions among `effects` that another broker fenced after this broker appended
    /// their batch (the last record of each in `tail`), and by whom, when more than
    /// [`RECHECK_AFTER`] passed since the append (by the monotonic clock or the core's):
    /// this broker was stopped or starved in between, and must not let the batch's effects
    /// out. The batch itself stands (it precedes the fence); whoever owns the partition next
    /// restores it and sends its outbox. `own(p)` are the offsets of `p` that this broker's
    /// later changelog appends (`Log::send`) got, as far as Kafka acknowledged them: when every
    /// record after the batch is one of those, none is a fence, and nothing is read back (an
    /// offset Kafka acknowledged is taken to stay that record's: no unclean leader election
    /// truncated the changelog).
    pub fn fenced<T>(
        &self,
        log: &mut dyn Log,
        tail: &BTreeMap<PartitionId, i64>,
        effects: &[(PartitionId, T)],
        mut own: impl FnMut(PartitionId) -> std::collections::BTreeSet<i64>,
    ) -> Result<Vec<(PartitionId, FencedBy)>, LogError> {
        let by_clock = (self.now - self.sent.1).to_std().unwrap_or_default();
        if self.sent.0.elapsed().max(by_clock) <= RECHECK_AFTER || effects.is_empty() {
            return Ok(Vec::new());
        }
        let landed: Vec<(PartitionId, i64)> = effects
            .iter()
            .filter_map(|(p, _)| Some((*p, *tail.get(p)?)))
            .collect();
        let partitions: Vec<PartitionId> = landed.iter().map(|(p, _)| *p).collect();
        // every end in one question: this runs on the core thread, and a Kafka slow enough
        // to bring a landing here answers each question slowly
        let ends = log.ends(&partitions)?;
        debug_assert_eq!(ends.len(), partitions.len(), "an end per partition asked");
        let rechecks = &self.metrics.landing_rechecks;
        rechecks.with_label_values(&["ends"]).inc();
        let mut out = Vec::new();
        for ((p, last), end) in landed.into_iter().zip(ends) {
            if end <= last + 1 {
                continue;
            }
            let after = end - last - 1;
            if own(p).range(last + 1..end).count() as i64 == after {
                continue;
            }
            rechecks.with_label_values(&["records"]).inc();
            if let Some(by) = fenced_by(log, p, last + 1, end - 1)? {
                out.push((p, by));
            }
        }
        Ok(out)
    }
}
