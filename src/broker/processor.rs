//! A state partition's processor: one batch of the partition's inputs (records, messages of
//! other partitions, function results, outbox acknowledgements, schedule plans) applied in
//! one store transaction, then its due timers and sweeps. It sees only its partition's keys
//! (and the writes of its rounds in flight), reads nothing of the core but what it is given,
//! and returns what it decided: the transaction's writes, the effects to carry out after they
//! land, and what it sent back to other partitions in process. Nothing here commits, sends or
//! replies; the core routes inputs to processors and does that (`broker::core`,
//! `broker::round`, `broker::landing`).

use super::apply::Outcome;
use super::batch::{Batch, Effects};
use super::entries::CallOf;
use super::hot::Hot;
use super::positions::WorkOffset;
use super::records::{Call, InstanceRecord};
use super::registry::Registry;
use super::OutboxKey;
use crate::cluster::partition::{PartitionId, Partitions};
use crate::cluster::work::Work;
use crate::config::Config;
use crate::engine::Input;
use crate::store::{Pending, Scope, Store, StoreError, Table, Write};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// A partition's batch stops taking inputs once its writes reach this size; the rest go in
/// the next round. One changelog record per batch must stay under Kafka's message size limit
/// (1 MB by default).
const BATCH_BYTES: usize = 512 * 1024;

/// One input of a partition's batch.
pub(super) enum PartInput {
    Work {
        work: Work,
        ticket: Option<usize>,
        /// Its offset in the work topic, when it was read from there.
        offset: Option<i64>,
    },
    /// A message of another partition, delivered in process; `ack` is its outbox entry.
    Message { work: Work, ack: OutboxKey },
    CallDone {
        call: Call,
        outcome: Result<Value, crate::engine::ErrorInfo>,
    },
    /// Outbox entries to forget (Kafka acknowledged them, or they were delivered in process),
    /// with the topic and type to count (`None`: not counted; `Core::take_acked` decides).
    Acked(u64, Option<(String, String)>),
    /// Plan the cron schedule of a workflow (after a deploy).
    Plan(String),
}

/// What a processor needs to apply one batch: the store and the writes of the partition's
/// rounds in flight (read as if stored), the deployed definitions, and the partition's own
/// state kept between batches.
pub(super) struct Processor<'a> {
    pub p: PartitionId,
    pub parts: Partitions,
    pub store: &'a Store,
    pub pending: &'a Pending,
    pub reg: &'a Registry,
    pub cfg: &'a Config,
    /// The changelog offset of this broker's fence on the partition (0 without a changelog).
    pub fence: i64,
    /// Whether spans are built (an OTLP exporter is configured).
    pub spans: bool,
    /// Instance records kept decoded between batches.
    pub hot: &'a mut Hot<InstanceRecord>,
}

/// What one batch decided.
pub(super) struct Applied {
    /// The transaction's writes: the partition's changelog batch.
    pub writes: Vec<Write>,
    /// What to carry out once the writes land.
    pub effects: Effects,
    /// Inputs not taken (the batch reached [`BATCH_BYTES`]): the next step's.
    pub rest: Vec<PartInput>,
    /// Acknowledgements of the messages of other partitions applied here (each forgets its
    /// sender's outbox entry): inputs of those partitions in the next step.
    pub acks: Vec<(PartitionId, PartInput)>,
    /// Produced records Kafka acknowledged, by topic and type, to count.
    pub produced: Vec<(String, String)>,
    /// What the requests among the inputs come to, by their ticket (`PartInput::Work`).
    pub settled: Vec<(usize, Outcome)>,
}

impl Processor<'_> {
    /// Applies `inputs` in order, fires due timers and sweeps expired entries (`sweep`: the
    /// periodic sweep too).
    pub fn apply(
        self,
        inputs: Vec<PartInput>,
        now: DateTime<Utc>,
        sweep: bool,
    ) -> Result<Applied, StoreError> {
        let p = self.p;
        let tx = self.store.scoped_over(Scope::Partition(p.0), self.pending);
        let mut b = Batch::new(&tx, (p, self.parts), self.reg, self.cfg, now);
        b.fence = self.fence;
        b.spans = self.spans;
        b.hot = Some(self.hot);
        b.kept = super::kept::Kept::at_start(&tx)?;
        b.kept.head_up(&tx)?;
        let mut produced = Vec::new();
        let mut acks = Vec::new();
        let mut settled = Vec::new();
        let mut inputs = inputs.into_iter();
        let mut rest = Vec::new();
        while let Some(i) = inputs.next() {
            if tx.written() >= BATCH_BYTES {
                rest.push(i);
                rest.extend(inputs.by_ref());
                break;
            }
            match i {
                PartInput::Work {
                    work,
                    ticket,
                    offset,
                } => {
                    if let Some(o) = offset {
                        // the work topic position: below it, records were applied already
                        let next = tx.read(&WorkOffset)?.unwrap_or(0);
                        if o < next {
                            tracing::debug!(partition = %p, offset = o, next,
                                "work record below the stored offset skipped");
                            continue;
                        }
                        tx.write(&WorkOffset, &(o + 1))?;
                    }
                    let outcome = b.apply_work(work)?;
                    if let Some(t) = ticket {
                        settled.push((t, outcome));
                    }
                }
                PartInput::Message { work, ack } => {
                    b.apply_work(work)?;
                    acks.push((ack.partition, PartInput::Acked(ack.seq, None)));
                }
                PartInput::CallDone { call, outcome } => {
                    // A result for a call no longer in flight (applied before a restart, or
                    // superseded by a retry) is dropped.
                    if tx.read(&CallOf(&call.key))?.as_ref() == Some(&call) {
                        tx.unset(&CallOf(&call.key)); // just read
                        let input = match outcome {
                            Ok(result) => Input::ActionResult {
                                key: call.key.clone(),
                                result,
                            },
                            Err(error) => Input::ActionFailed {
                                key: call.key.clone(),
                                error,
                            },
                        };
                        b.queue(&call.instance, input);
                        b.drain()?;
                    }
                }
                PartInput::Acked(seq, counted) => {
                    // removed unread: an entry gone already leaves a tombstone that changes
                    // nothing (what is counted: docs/broker.md "Shutdown and restarts")
                    tx.remove(Table::Outbox, &OutboxKey::stored(seq));
                    produced.extend(counted);
                }
                PartInput::Plan(workflow) => b.plan_schedule(&workflow, true)?,
            }
        }
        super::sweep::fire_timers(&mut b)?;
        // every batch removes expired entries in proportion to what it added (docs/broker.md
        // "Bounded tables"); the periodic sweep also runs when nothing is consumed
        super::sweep::sweep_buffer(&mut b, sweep)?;
        b.sweep_seen(sweep)?;
        b.sweep_finished(sweep)?;
        b.drain()?;
        b.kept.seal(&tx)?;
        let effects = std::mem::take(&mut b.fx);
        drop(b);
        Ok(Applied {
            writes: tx.into_writes(),
            effects,
            rest,
            acks,
            produced,
            settled,
        })
    }
}
