//! The core: applies inputs to the state partitions this broker owns, one store transaction
//! per partition per round, commits the round, then carries out the effects (produce, invoke,
//! reply, commit Kafka offsets).
//!
//! Crash safety comes from the order: nothing leaves the process before the transaction that
//! decided it has committed, and everything that must leave is in the store until it has:
//! produced events stay in the outbox until Kafka acknowledges them (re-sent with the same ids
//! after a restart), function calls stay in `calls` until their result is applied (re-invoked
//! after a restart with the same idempotency key), and each partition remembers the highest
//! source position it applied (a record seen again after a restart is dropped).
//!
//! Messages between partitions (index entries, deliveries) are outbox records too. Here they
//! are delivered in process, in the round after the one that committed them (single node;
//! docs/scale.md describes the work topic that carries them between brokers).

use super::apply::Outcome;
use super::batch::{Batch, Effects};
use super::records::{Call, OutRecord, StoredVersion, TimerEntry};
use super::registry::Registry;
use super::router::Routed;
pub use super::shared::Shared;
use super::{AdminError, Clock, Cmd, Delivery, OutboxKey, Reply, Stat};
use crate::cluster::changelog::{Checkpoint, Entry};
use crate::cluster::node::InputPartition;
use crate::cluster::partition::{InstanceId, PartitionId, Partitions};
use crate::cluster::work::{ReadFrom, Source, Work};
use crate::cluster::{Log, LogError};
use crate::config::Config;
use crate::engine::Input;
use crate::metrics::Metrics;
use crate::store::{split_at, Scope, Store, StoreError, Table, Write, SEP};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Commits `(topic, partition, next offset)` to the Kafka group.
pub type CommitOffsets = Box<dyn Fn(&[(String, i32, i64)]) + Send>;

/// Where effects go after commit.
pub struct Outlets {
    pub produce: mpsc::UnboundedSender<Vec<(OutboxKey, OutRecord)>>,
    pub invoke: mpsc::UnboundedSender<Call>,
    /// Commits consumed offsets (next offset to read) to the Kafka group, best effort.
    pub commit_offsets: CommitOffsets,
    /// Where finished spans go (`None`: no OTLP export configured, no spans built).
    pub spans: Option<crate::otel::Exporter>,
    /// `true`: intake is paused (backpressure, see [`Core::backpressure`]); the consumers
    /// pause their partitions while it is.
    pub intake: tokio::sync::watch::Sender<bool>,
}

pub struct Core {
    pub(super) store: Arc<Store>,
    pub(super) reg: Registry,
    pub(super) cfg: Arc<Config>,
    metrics: Arc<Metrics>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) out: Outlets,
    pub(super) shared: Arc<Shared>,
    pub(super) parts: Partitions,
    last_sweep: DateTime<Utc>,
    /// Messages between partitions committed but not applied yet (delivered in process).
    loopback: Vec<(PartitionId, PartInput)>,
    /// The Kafka side (changelog, work topic); `None`: one process owns every partition and
    /// messages between partitions stay in process (tests, benches).
    pub(super) log: Option<Box<dyn Log>>,
    /// The state partitions this broker owns now.
    pub(super) owned: BTreeSet<PartitionId>,
    /// The changelog offset of this broker's fence, per owned partition.
    pub(super) fences: BTreeMap<PartitionId, i64>,
    /// The changelog offset of this broker's last record (fence or batch), per owned
    /// partition: a batch acknowledged at any other offset than the next one means another
    /// broker wrote to the partition since, and it is checked for a newer fence.
    pub(super) tail: BTreeMap<PartitionId, i64>,
    /// Where to say which work topic partitions to read, from which offset (`None`: stop).
    pub(super) reader: Option<mpsc::UnboundedSender<(PartitionId, Option<ReadFrom>)>>,
    /// Per partition being read: the epoch of its current read; a counter for the next.
    pub(super) reading: BTreeMap<PartitionId, u64>,
    pub(super) epochs: u64,
    /// Outbox records and calls handed out and not heard back about (take-over skips them).
    pub(super) inflight: super::inflight::InFlight,
    /// Snapshots of the owned partitions (`None`: not written, not loaded).
    pub(super) snapshots: Option<super::snapshots::Plan>,
    /// Partitions resumed after a restart that the group has not assigned yet.
    pub(super) resumed: std::collections::BTreeSet<PartitionId>,
    /// Set by the group's first assignment: from then on nothing is resumed.
    pub(super) group_assigned: bool,
    /// Which input records may skip the work topic into the partitions owned here.
    pub(super) direct: super::direct::Direct,
    /// Input records that were to be applied here directly, of partitions let go since: they
    /// go through the work topic to the new owner, in the order they were consumed.
    pub(super) strays: Vec<(PartitionId, Work)>,
}

/// Why the core stopped.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(
        "the changelog of state partition {partition} starts at offset {start}, but this \
         broker's store stops at {have} and no snapshot covers the gap: the records between \
         were deleted before a snapshot of them was announced. Restore the snapshot topic and \
         the owners topic, or start over with new topics"
    )]
    Trimmed {
        partition: PartitionId,
        start: i64,
        have: i64,
    },
}

/// The node-scope key of a partition's changelog checkpoint.
pub(super) fn checkpoint_key(p: PartitionId) -> String {
    crate::store::key(&["changelog", &p.0.to_string()])
}

/// The partition-scope key of the next work topic offset to read.
pub const WORK_OFFSET: &str = "work";

/// A partition's batch stops taking inputs once its writes reach this size; the rest go in
/// the next round. One changelog record per batch must stay under Kafka's message size limit
/// (1 MB by default).
const BATCH_BYTES: usize = 512 * 1024;

/// How often expired buffered events, seen event ids and finished instances are swept.
const SWEEP_EVERY_SECS: i64 = 5;

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
    /// with the topic and type to count (`None`: not counted).
    Acked(String, Option<(String, String)>),
    /// Plan the cron schedule of a workflow (after a deploy).
    Plan(String),
}

/// A request waiting for the partitions its work went to.
enum Ticket {
    Event {
        reply: Reply<Routed>,
        routed: Routed,
        /// Set when the partition applying it was lost mid-round.
        failed: Option<AdminError>,
    },
    Start(
        Reply<super::Started>,
        Option<Result<super::Started, AdminError>>,
    ),
    Cancel(Reply<()>, Option<Result<(), AdminError>>),
    Apply(
        Reply<super::Applied>,
        Option<Result<super::Applied, AdminError>>,
    ),
}

impl Core {
    pub fn new(
        store: Arc<Store>,
        cfg: Arc<Config>,
        metrics: Arc<Metrics>,
        clock: Arc<dyn Clock>,
        out: Outlets,
        shared: Arc<Shared>,
    ) -> Result<Core, StoreError> {
        let mut reg = Registry::default();
        let tx = store.read()?;
        // versions deployed here, and those the partitions in this store keep for their
        // instances
        for (_, k, v) in tx.partitioned::<StoredVersion>(Table::Versions)? {
            let mut parts = k.split(SEP);
            let (Some(id), Some(version)) = (parts.next(), parts.next()) else {
                continue;
            };
            if reg.version(id, version).is_none() {
                if let Some(d) = v.revive(id, version) {
                    reg.remember(d);
                }
            }
        }
        for (k, at) in tx.prefix::<DateTime<Utc>>(Table::Meta, "first_deployed")? {
            if let Some(wf) = k.split(SEP).nth(1) {
                reg.anchor(wf, at);
            }
        }
        drop(tx);
        let now = clock.now();
        let parts = cfg.cluster.parts();
        Ok(Core {
            store,
            reg,
            cfg,
            metrics,
            clock,
            out,
            shared,
            parts,
            last_sweep: now,
            loopback: Vec::new(),
            log: None,
            owned: parts.all().collect(),
            fences: BTreeMap::new(),
            tail: BTreeMap::new(),
            reader: None,
            reading: BTreeMap::new(),
            epochs: 0,
            inflight: Default::default(),
            snapshots: None,
            resumed: Default::default(),
            group_assigned: false,
            direct: Default::default(),
            strays: Vec::new(),
        })
        .inspect(|c| c.publish_owned())
    }

    /// Runs on Kafka: owns only the partitions the consumer group assigns (none until then),
    /// writes every batch to the changelog first, and sends messages and inputs through the
    /// work topic; `reader` is told which work topic partitions to read from which offset.
    pub fn attach(
        &mut self,
        log: Box<dyn Log>,
        reader: mpsc::UnboundedSender<(PartitionId, Option<ReadFrom>)>,
    ) {
        self.log = Some(log);
        self.reader = Some(reader);
        self.owned.clear();
        self.publish_owned();
    }

    /// The broker's counters (those a detached core counts too).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The state partitions this broker owns now.
    pub fn owned(&self) -> Vec<PartitionId> {
        self.owned.iter().copied().collect()
    }

    /// A core whose effects go to channels the caller reads (tests, benches, replays): the
    /// receivers of produced records and of function calls; offsets are not committed anywhere.
    #[allow(clippy::type_complexity)]
    pub fn detached(
        store: Arc<Store>,
        cfg: Config,
        clock: Arc<dyn Clock>,
    ) -> Result<
        (
            Core,
            mpsc::UnboundedReceiver<Vec<(OutboxKey, OutRecord)>>,
            mpsc::UnboundedReceiver<Call>,
        ),
        StoreError,
    > {
        let (produce, out) = mpsc::unbounded_channel();
        let (invoke, calls) = mpsc::unbounded_channel();
        let core = Core::new(
            store,
            Arc::new(cfg),
            Arc::new(Metrics::new()),
            clock,
            Outlets {
                produce,
                invoke,
                commit_offsets: Box::new(|_| {}),
                spans: None,
                intake: tokio::sync::watch::channel(false).0,
            },
            Arc::new(Shared::default()),
        )?;
        Ok((core, out, calls))
    }

    /// Runs until every sender of `rx` is gone. A store error stops the core: the process
    /// must restart from the last commit rather than continue from a state it could not save.
    pub async fn run(
        mut self,
        mut rx: mpsc::Receiver<Cmd>,
        mut control: mpsc::UnboundedReceiver<Cmd>,
    ) -> Result<(), CoreError> {
        loop {
            let due = self.next_due()?;
            let mut cmds = Vec::new();
            let wait = due.map(|d| (d - self.clock.now()).to_std().unwrap_or_default());
            tokio::select! {
                biased;
                Some(c) = control.recv() => cmds.push(c),
                cmd = rx.recv() => match cmd {
                    Some(c) => cmds.push(c),
                    None => return Ok(()),
                },
                _ = sleep(wait) => {}
            }
            while let Ok(c) = control.try_recv() {
                cmds.push(c);
            }
            while cmds.len() < 256 {
                match rx.try_recv() {
                    Ok(c) => cmds.push(c),
                    Err(_) => break,
                }
            }
            self.process(cmds)?;
        }
    }

    /// The time of the earliest timer of any partition, or of the next sweep.
    pub fn next_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let sweep = self.last_sweep + chrono::Duration::seconds(SWEEP_EVERY_SECS);
        let mut due = sweep;
        for &p in &self.owned {
            if let Some(t) = self.first_timer(p)? {
                due = due.min(t);
            }
        }
        Ok(Some(due))
    }

    fn first_timer(&self, p: PartitionId) -> Result<Option<DateTime<Utc>>, StoreError> {
        let tx = self.store.scoped(Scope::Partition(p.0));
        let first = tx.first::<TimerEntry>(Table::Timers)?;
        Ok(first.and_then(|(k, _)| split_at(&k).map(|(t, _)| t)))
    }

    /// Applies commands: each partition's share in one transaction per round; a round's
    /// transactions commit together, then their effects leave; messages between partitions
    /// are applied in the next round, until none are left.
    pub fn process(&mut self, cmds: Vec<Cmd>) -> Result<(), CoreError> {
        let now = self.clock.now();
        let mut forward: Vec<(PartitionId, Work)> = Vec::new();
        let mut inputs: BTreeMap<PartitionId, Vec<PartInput>> = BTreeMap::new();
        for (p, i) in std::mem::take(&mut self.loopback) {
            inputs.entry(p).or_default().push(i);
        }
        let mut tickets: Vec<Ticket> = Vec::new();
        // (ticket, index in `forward`): requests answered with where their work went
        let mut positions: Vec<(usize, usize)> = Vec::new();
        let mut offsets: BTreeMap<(String, i32), i64> = BTreeMap::new();
        let mut stats: Vec<Stat> = Vec::new();
        // A round of nothing but Kafka acknowledgements only forgets outbox entries: losing
        // that in a crash re-sends them with the same ids, so it need not wait for the disk.
        let acks_only = !cmds.is_empty() && cmds.iter().all(|c| matches!(c, Cmd::Acked(_)));
        for cmd in cmds {
            match cmd {
                Cmd::Assigned(ps) => {
                    for p in ps {
                        if !self.owned.contains(&p) {
                            self.take_over(p, &mut inputs)?;
                        }
                    }
                }
                Cmd::Assignment(all) => self.settle_resumed(all, &mut inputs),
                Cmd::Resume(ps, done) => {
                    let resumed = self.resume(ps, &mut inputs)?;
                    let _ = done.send(resumed);
                }
                Cmd::Inputs(i) => self.remember_inputs(&i)?,
                Cmd::Revoked(ps, done) => {
                    for p in ps {
                        self.release(p, &mut inputs);
                    }
                    if let Some(d) = done {
                        let _ = d.send(());
                    }
                }
                cmd => {
                    let mut sinks = Sinks {
                        inputs: &mut inputs,
                        tickets: &mut tickets,
                        offsets: &mut offsets,
                        stats: &mut stats,
                        forward: &mut forward,
                    };
                    self.take(cmd, now, &mut sinks)?
                }
            }
            self.unstray(&mut forward);
        }
        // inputs of partitions owned elsewhere go through the work topic (their owner applies
        // them); on one process everything is owned
        let elsewhere: Vec<PartitionId> = inputs
            .keys()
            .filter(|p| !self.owned.contains(p))
            .copied()
            .collect();
        for p in elsewhere {
            for i in inputs.remove(&p).unwrap_or_default() {
                if let PartInput::Work { work, ticket, .. } = i {
                    if let Some(t) = ticket.and_then(|t| tickets.get_mut(t)) {
                        if let Ticket::Apply(..) = t {
                            moved(t, p); // its caller asks the owner (the API relays)
                            continue;
                        }
                        forwarded(t, p, &work);
                        if let Some(i) = ticket {
                            positions.push((i, forward.len()));
                        }
                    }
                    self.direct.forwarding(input_of(&work).as_ref(), p);
                    forward.push((p, work));
                }
            }
        }
        let sweep = now >= self.last_sweep + chrono::Duration::seconds(SWEEP_EVERY_SECS);
        if sweep {
            self.last_sweep = now;
        }
        let mut first = true;
        loop {
            // partitions with inputs, and (in the first round) those with due timers or a sweep
            let mut todo: Vec<PartitionId> = inputs.keys().copied().collect();
            if first {
                for p in self.owned.clone() {
                    let due = self.first_timer(p)?.is_some_and(|t| t <= now);
                    if (due || sweep) && !todo.contains(&p) {
                        todo.push(p);
                    }
                }
            }
            if todo.is_empty() {
                break;
            }
            todo.sort();
            let mut writes: Vec<Write> = Vec::new();
            let mut effects: Vec<(PartitionId, Effects)> = Vec::new();
            let mut changed: Vec<(PartitionId, Vec<Write>)> = Vec::new();
            let mut asked: BTreeMap<PartitionId, Vec<usize>> = BTreeMap::new();
            // input records applied directly, kept until their batch is in the changelog: a
            // batch void by a newer fence sends them to the new owner instead
            let mut direct: BTreeMap<PartitionId, Vec<Work>> = BTreeMap::new();
            for p in todo {
                let batch = inputs.remove(&p).unwrap_or_default();
                if !self.owned.contains(&p) {
                    continue;
                }
                if self.log.is_some() {
                    direct.insert(p, batch.iter().filter_map(direct_work).cloned().collect());
                }
                asked.insert(
                    p,
                    batch
                        .iter()
                        .filter_map(|i| match i {
                            PartInput::Work {
                                ticket: Some(t), ..
                            } => Some(*t),
                            _ => None,
                        })
                        .collect(),
                );
                let (w, fx, rest) = self.partition(p, batch, now, first && sweep, &mut tickets)?;
                if !rest.is_empty() {
                    inputs.insert(p, rest);
                }
                if !w.is_empty() {
                    changed.push((p, w));
                }
                effects.push((p, fx));
            }
            // on Kafka the changelog takes each partition's batch first: only what it
            // acknowledged is applied here and let out
            // (the batches move into the entries and back out: no copy of the writes)
            let mut lost: BTreeSet<PartitionId> = BTreeSet::new();
            // lost to a resumed broker's provisional fence while the group assigns them here
            let mut retake: Vec<PartitionId> = Vec::new();
            let appending = (std::time::Instant::now(), self.clock.now());
            let changed = match self.log.as_mut() {
                None => changed,
                Some(log) => {
                    let entries: Vec<(PartitionId, Entry)> = changed
                        .into_iter()
                        .map(|(p, writes)| {
                            let fence = self.fences.get(&p).copied().unwrap_or(-1);
                            (p, Entry::Batch { fence, writes })
                        })
                        .collect();
                    for (p, offset) in log.append(&entries)? {
                        // a zombie check that costs nothing while nobody else writes: only
                        // this broker's records since its fence means it still owns `p`
                        let prev = self.tail.get(&p).copied().unwrap_or(-1);
                        if offset != prev + 1 {
                            if let Some(by) =
                                super::handoff::fenced_by(log.as_mut(), p, prev + 1, offset - 1)?
                            {
                                if by.provisional && !self.resumed.contains(&p) {
                                    tracing::warn!(partition = %p, by = %by.owner, batch = offset,
                                        "a restarted broker resumed this state partition while \
                                         the group has it here: the batch is void and the \
                                         partition is taken back");
                                    retake.push(p);
                                } else {
                                    tracing::error!(partition = %p, by = %by.owner, batch = offset,
                                        "another broker took this state partition over without \
                                         this broker noticing: the batch is void (neither stored \
                                         nor let out) and the partition released");
                                }
                                lost.insert(p);
                                continue;
                            }
                        }
                        self.tail.insert(p, offset);
                        let cp = Checkpoint {
                            next: offset + 1,
                            fence: self.fences.get(&p).copied(),
                        };
                        writes.push(node_write(&checkpoint_key(p), &cp));
                    }
                    entries
                        .into_iter()
                        .filter(|(p, _)| !lost.contains(p))
                        .filter_map(|(p, e)| match e {
                            Entry::Batch { writes, .. } => Some((p, writes)),
                            Entry::Fence { .. } => None,
                        })
                        .collect()
                }
            };
            for (_, w) in changed {
                writes.extend(w);
            }
            // a partition lost to a newer fence lets nothing out; its requests are told to
            // retry (their work is not applied; the owner reads the work topic again)
            effects.retain(|(p, _)| !lost.contains(p));
            for p in lost {
                for t in asked.remove(&p).unwrap_or_default() {
                    if let Some(t) = tickets.get_mut(t) {
                        moved(t, p);
                    }
                }
                let void = direct.remove(&p).unwrap_or_default();
                self.strays.extend(void.into_iter().map(|w| (p, w)));
                self.release(p, &mut inputs);
                self.unstray(&mut forward);
            }
            for p in retake {
                self.take_over(p, &mut inputs)?;
            }
            let lazy = acks_only
                && effects.iter().all(|(_, fx)| {
                    fx.outbox.is_empty()
                        && fx.calls.is_empty()
                        && fx.stats.is_empty()
                        && fx.offers.is_empty()
                });
            let t0 = std::time::Instant::now();
            // with a changelog, the local store is a cache of it: no need to wait for the disk
            let sync = !lazy && self.log.is_none();
            self.store.apply(&writes, sync)?;
            self.metrics
                .commit_seconds
                .with_label_values(&[] as &[&str])
                .observe(t0.elapsed().as_secs_f64());
            // paused between the append and here (a stopped or starved process) long enough
            // for the group to move a partition: its effects stay in (the new owner sends them)
            if let Some(log) = self.log.as_mut() {
                let held = super::handoff::fenced_since(
                    log.as_mut(),
                    appending,
                    self.clock.now(),
                    &self.tail,
                    &effects,
                )?;
                if !held.is_empty() {
                    effects.retain(|(p, _)| !held.contains(p));
                    for p in held {
                        self.release(p, &mut inputs);
                        self.unstray(&mut forward);
                    }
                }
            }
            for (p, mut fx) in effects {
                stats.extend(fx.stats);
                if let Some(x) = &self.out.spans {
                    x.export(std::mem::take(&mut fx.spans));
                }
                for c in fx.calls {
                    self.invoke(c);
                }
                for (queue, ready) in fx.offers {
                    self.shared.board.offer(queue, ready);
                }
                let mut out = Vec::new();
                for (key, rec) in fx.outbox {
                    out.push((OutboxKey { partition: p, key }, rec));
                }
                self.send_out(out);
            }
            for (p, i) in std::mem::take(&mut self.loopback) {
                inputs.entry(p).or_default().push(i);
            }
            first = false;
        }
        // forwarded work is in Kafka before any request that sent it is answered
        if !forward.is_empty() {
            match self.log.as_mut() {
                Some(log) => {
                    let at = log.forward(forward)?;
                    for &(p, offset) in &at {
                        self.direct.forwarded(p, offset);
                    }
                    for (t, i) in positions {
                        if let (Some(Ticket::Start(_, Some(Ok(s)))), Some(pos)) =
                            (tickets.get_mut(t), at.get(i))
                        {
                            s.position = Some(*pos);
                        }
                    }
                }
                None => tracing::warn!(
                    records = forward.len(),
                    "work for partitions nobody owns dropped (no Kafka attached)"
                ),
            }
        }
        for t in tickets {
            match t {
                Ticket::Event {
                    reply,
                    routed,
                    failed,
                } => {
                    let _ = reply.send(failed.map_or(Ok(routed), Err));
                }
                Ticket::Start(reply, r) => {
                    let _ = reply.send(r.unwrap_or_else(|| {
                        Err(AdminError::Internal("the start was not applied".into()))
                    }));
                }
                Ticket::Cancel(reply, r) => {
                    let _ = reply.send(r.unwrap_or_else(|| {
                        Err(AdminError::Internal("the cancel was not applied".into()))
                    }));
                }
                Ticket::Apply(reply, r) => {
                    let _ = reply.send(r.unwrap_or_else(|| {
                        Err(AdminError::Internal("the input was not applied".into()))
                    }));
                }
            }
        }
        if !offsets.is_empty() {
            let list: Vec<(String, i32, i64)> =
                offsets.into_iter().map(|((t, p), o)| (t, p, o)).collect();
            (self.out.commit_offsets)(&list);
        }
        self.count(stats);
        self.backpressure();
        // requests waiting to read what they wrote look again (`http::barrier`)
        self.shared.applied.notify_waiters();
        self.plan_snapshots(now);
        Ok(())
    }

    /// Moves input records of partitions let go (`Core::strays`) into the round's forward,
    /// after what is there already: they keep their order among the input's records.
    fn unstray(&mut self, forward: &mut Vec<(PartitionId, Work)>) {
        for (p, work) in std::mem::take(&mut self.strays) {
            self.direct.forwarding(input_of(&work).as_ref(), p);
            forward.push((p, work));
        }
    }

    /// Pauses intake once `kafka.max_in_flight` outbox records and function calls are out
    /// and not heard back about (handed to the producer or the invoker: everything they hold
    /// in memory), and resumes it at half of that. Acknowledgements and call results keep
    /// coming while intake is paused, so it always resumes once Kafka takes the records.
    pub(super) fn backpressure(&self) {
        let (sending, calling) = self.inflight.len();
        let out = sending + calling;
        let high = self.cfg.kafka.max_in_flight.max(1);
        self.out.intake.send_if_modified(|paused| {
            let next = if *paused { out > high / 2 } else { out >= high };
            if next == *paused {
                return false;
            }
            tracing::debug!(in_flight = out, paused = next, "intake backpressure");
            *paused = next;
            true
        });
    }

    /// Turns one command into partition inputs (or applies it, for node-level commands).
    fn take(
        &mut self,
        cmd: Cmd,
        now: DateTime<Utc>,
        sinks: &mut Sinks<'_>,
    ) -> Result<(), StoreError> {
        let parts = self.parts;
        let kafka = self.log.is_some();
        let Sinks {
            inputs,
            tickets,
            offsets,
            stats,
            forward,
        } = sinks;
        let mut push = |p: PartitionId, i: PartInput| inputs.entry(p).or_default().push(i);
        match cmd {
            Cmd::Files(files) => {
                let store = self.store.clone();
                let tx = store.write()?;
                let changed = self.deploy(&tx, &files, now)?;
                tx.commit()?;
                for id in changed {
                    push(parts.of_key(&id, ""), PartInput::Plan(id));
                }
            }
            Cmd::Records(records) => {
                for r in records {
                    let slot = (r.topic.clone(), r.partition);
                    let next = offsets.get(&slot).copied().unwrap_or(0).max(r.offset + 1);
                    offsets.insert(slot, next);
                    let input = InputPartition {
                        topic: r.topic.clone(),
                        partition: r.partition,
                    };
                    self.direct.consumed(&input, r.offset);
                    let ing = super::ingest::record(&self.reg, parts, &self.cfg, r);
                    stats.extend(ing.stats);
                    for (p, work) in ing.work {
                        // exactly once by source position at the owner, wherever it is: here
                        // at once when nothing of its input can be ahead of it in the work
                        // topic (`broker::direct`), else through the work topic
                        let here =
                            !kafka || self.owned.contains(&p) && self.direct.allows(&input, p);
                        if let Work::Event { event, source, .. } = &work {
                            tracing::debug!(to = %p, id = %event.id, from = ?source, here, "route");
                        }
                        stats.push(Stat::Routed(if here { "direct" } else { "work_topic" }));
                        if here {
                            push(
                                p,
                                PartInput::Work {
                                    work,
                                    ticket: None,
                                    offset: None,
                                },
                            );
                        } else {
                            self.direct.forwarding(Some(&input), p);
                            forward.push((p, work));
                        }
                    }
                }
            }
            Cmd::Event { event, reply } => {
                let ing =
                    super::ingest::event(&self.reg, parts, &self.cfg, event, Source::Http, None);
                stats.extend(ing.stats);
                let ticket = tickets.len();
                tickets.push(Ticket::Event {
                    reply,
                    routed: Routed::default(),
                    failed: None,
                });
                for (p, work) in ing.work {
                    push(
                        p,
                        PartInput::Work {
                            work,
                            ticket: Some(ticket),
                            offset: None,
                        },
                    );
                }
            }
            Cmd::Start {
                workflow,
                input,
                key,
                trace,
                at,
                reply,
            } => {
                // checked here too, so a start forwarded to another broker's partition is not
                // answered 201 for a workflow that owner will refuse
                let refused = match self.reg.current(&workflow) {
                    Some(_) if at.is_none() && super::registry::Registry::is_builtin(&workflow) => {
                        Some(AdminError::Refused(format!(
                            "{workflow:?} is built in: start Amazon SWF executions with \
                             StartWorkflowExecution (docs/swf.md)"
                        )))
                    }
                    None => Some(AdminError::NotFound(format!(
                        "no workflow {workflow:?} is deployed (GET /v1/workflows lists them)"
                    ))),
                    Some(wf) => super::window::direct_refusal(wf).map(AdminError::Refused),
                };
                if let Some(e) = refused {
                    let _ = reply.send(Err(e));
                    return Ok(());
                }
                let id = at.unwrap_or_else(|| direct_id(parts, &workflow, key.as_deref()));
                let ticket = tickets.len();
                tickets.push(Ticket::Start(reply, None));
                let work = Work::Start {
                    parent: None,
                    id: id.to_string(),
                    workflow,
                    input,
                    source: Source::Http,
                    trace,
                };
                push(
                    id.partition(),
                    PartInput::Work {
                        work,
                        ticket: Some(ticket),
                        offset: None,
                    },
                );
            }
            Cmd::Cancel { id, reply } => match parts.of_instance(&id) {
                Ok(p) => {
                    tickets.push(Ticket::Cancel(reply, None));
                    let work = Work::Cancel {
                        id,
                        source: Source::Http,
                    };
                    push(p, ticketed(tickets.len() - 1, work));
                }
                Err(_) => drop(reply.send(Err(no_instance(&id)))),
            },
            Cmd::Apply { id, input, reply } => match parts.of_instance(&id) {
                Ok(p) => {
                    tickets.push(Ticket::Apply(reply, None));
                    let work = Work::Apply {
                        id,
                        input: Box::new(input),
                        source: Source::Http,
                    };
                    push(p, ticketed(tickets.len() - 1, work));
                }
                Err(_) => drop(reply.send(Err(no_instance(&id)))),
            },
            Cmd::CallDone { call, outcome } => {
                self.inflight.called(&call);
                if let Ok(p) = parts.of_instance(&call.instance) {
                    push(p, PartInput::CallDone { call, outcome });
                }
            }
            Cmd::Acked(acked) => {
                for a in acked {
                    self.inflight.acked(&a.key);
                    let counted = match a.delivery {
                        Delivery::Delivered => Some((a.topic, a.label)),
                        Delivery::DeadLettered => {
                            stats.push(Stat::DeadLettered("undeliverable"));
                            None
                        }
                        Delivery::Dropped => {
                            stats.push(Stat::OutputDropped);
                            None
                        }
                    };
                    push(a.key.partition, PartInput::Acked(a.key.key, counted));
                }
            }
            Cmd::Work {
                partition,
                epoch,
                records,
            } => {
                if self.reading.get(&partition) != Some(&epoch) {
                    // fetched by a read that ended (the partition was let go, maybe taken
                    // again since): the current read, if any, delivers them again
                    tracing::debug!(partition = %partition, records = records.len(),
                        "work records of an earlier read dropped");
                    return Ok(());
                }
                if let Some((last, _)) = records.last() {
                    self.direct.read(partition, last + 1);
                }
                for (offset, work) in records {
                    push(
                        partition,
                        PartInput::Work {
                            work,
                            ticket: None,
                            offset: Some(offset),
                        },
                    );
                }
            }
            Cmd::Assigned(_)
            | Cmd::Assignment(_)
            | Cmd::Revoked(..)
            | Cmd::Resume(..)
            | Cmd::Inputs(_) => {
                unreachable!("handled by process")
            }
        }
        Ok(())
    }

    /// One partition's transaction: its inputs, due timers, sweeps. Returns its writes and
    /// effects; nothing is committed here.
    fn partition(
        &mut self,
        p: PartitionId,
        inputs: Vec<PartInput>,
        now: DateTime<Utc>,
        sweep: bool,
        tickets: &mut [Ticket],
    ) -> Result<(Vec<Write>, Effects, Vec<PartInput>), StoreError> {
        let store = self.store.clone();
        let tx = store.scoped(Scope::Partition(p.0));
        let reg = &self.reg;
        let cfg = &*self.cfg;
        let mut b = Batch::new(&tx, (p, self.parts), reg, cfg, now);
        b.fence = self.fences.get(&p).copied().unwrap_or(0);
        b.spans = self.out.spans.is_some();
        let mut produced = Vec::new();
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
                        let next = tx.get::<i64>(Table::Offsets, WORK_OFFSET)?.unwrap_or(0);
                        if o < next {
                            tracing::debug!(partition = %p, offset = o, next,
                                "work record below the stored offset skipped");
                            continue;
                        }
                        tx.put(Table::Offsets, WORK_OFFSET, &(o + 1))?;
                    }
                    let outcome = b.apply_work(work)?;
                    if let Some(t) = ticket.and_then(|t| tickets.get_mut(t)) {
                        settle(t, outcome);
                    }
                }
                PartInput::Message { work, ack } => {
                    b.apply_work(work)?;
                    self.loopback
                        .push((ack.partition, PartInput::Acked(ack.key, None)));
                }
                PartInput::CallDone { call, outcome } => {
                    // A result for a call no longer in flight (applied before a restart, or
                    // superseded by a retry) is dropped.
                    if tx.get::<Call>(Table::Calls, &call.key)?.as_ref() == Some(&call) {
                        tx.delete(Table::Calls, &call.key)?;
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
                PartInput::Acked(k, counted) => {
                    if tx.delete(Table::Outbox, &k)? {
                        if let Some(c) = counted {
                            produced.push(c);
                        }
                    }
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
        let fx: Effects = std::mem::take(&mut b.fx);
        drop(b);
        for (topic, ty) in produced {
            self.metrics
                .produced
                .with_label_values(&[&topic, &ty])
                .inc();
        }
        Ok((tx.writes(), fx, rest))
    }

    /// Hands a call to the invoker, unless this process is running it already.
    pub(super) fn invoke(&mut self, c: Call) {
        if self.inflight.call(&c) {
            let _ = self.out.invoke.send(c);
        }
    }

    /// Sends committed outbox records: messages between partitions are applied in process in
    /// the next round; everything else goes to Kafka.
    pub(super) fn send_out(&mut self, out: Vec<(OutboxKey, OutRecord)>) {
        let mut kafka = Vec::new();
        for (k, rec) in out {
            match rec {
                OutRecord::Work { partition, work } if self.log.is_none() => {
                    self.loopback.push((
                        partition,
                        PartInput::Message {
                            work: *work,
                            ack: k,
                        },
                    ));
                }
                // an entry already with the producer (a partition given up and taken back)
                // stays there; the producer says when it is done with it (`Cmd::Acked`)
                rec => {
                    if self.inflight.send(&k) {
                        kafka.push((k, rec));
                    }
                }
            }
        }
        if !kafka.is_empty() {
            let _ = self.out.produce.send(kafka);
        }
    }

    fn count(&self, stats: Vec<Stat>) {
        let m = &self.metrics;
        for s in stats {
            match s {
                Stat::Consumed(src, ty) => {
                    let ty = self.reg.type_label(ty);
                    m.consumed.with_label_values(&[src, &ty]).inc()
                }
                Stat::DeadLettered(reason) => m.dead_lettered.with_label_values(&[reason]).inc(),
                Stat::Unmatched(ty) => {
                    let ty = self.reg.type_label(ty);
                    m.unmatched.with_label_values(&[&ty]).inc()
                }
                Stat::Duplicate => m.duplicates.inc(),
                Stat::DuplicateEvent(ty) => {
                    let ty = self.reg.type_label(ty);
                    m.duplicate_events.with_label_values(&[&ty]).inc()
                }
                Stat::Buffered => m.buffered.with_label_values(&["buffered"]).inc(),
                Stat::Held => m.buffered.with_label_values(&["held"]).inc(),
                Stat::BufferDelivered => m.buffered.with_label_values(&["delivered"]).inc(),
                Stat::BufferExpired => m.buffered.with_label_values(&["expired"]).inc(),
                Stat::BufferDropped => m.buffered.with_label_values(&["dropped"]).inc(),
                Stat::JoinExpired => m.joins_expired.inc(),
                Stat::Transitions(n) => m.transitions.inc_by(n),
                Stat::Refused => m.refused.inc(),
                Stat::OutputDropped => m.output_dropped.inc(),
                Stat::StartRejected(wf) => m.starts_rejected.with_label_values(&[&wf]).inc(),
                Stat::Tick {
                    workflow,
                    lag,
                    catch_up,
                } => {
                    m.schedule_lag.with_label_values(&[&workflow]).observe(lag);
                    let outcome = if catch_up { "catch_up" } else { "fired" };
                    m.schedule_ticks
                        .with_label_values(&[&workflow, outcome])
                        .inc();
                }
                Stat::TicksSkipped(workflow, n) => m
                    .schedule_ticks
                    .with_label_values(&[&workflow, "skipped"])
                    .inc_by(n),
                Stat::Routed(path) => m.routed.with_label_values(&[path]).inc(),
            }
        }
    }
}

/// An input record to be applied on its partition without having gone through the work topic.
pub(super) fn direct_work(i: &PartInput) -> Option<&Work> {
    match i {
        PartInput::Work {
            work,
            ticket: None,
            offset: None,
        } if matches!(work.source(), Source::Input { .. }) => Some(work),
        _ => None,
    }
}

/// The input topic partition a work record was consumed from, if it was.
fn input_of(work: &Work) -> Option<InputPartition> {
    match work.source() {
        Source::Input {
            topic, partition, ..
        } => Some(InputPartition {
            topic: topic.clone(),
            partition: *partition,
        }),
        _ => None,
    }
}

/// Work a request waits on (its ticket), applied in its partition's next round.
fn ticketed(ticket: usize, work: Work) -> PartInput {
    PartInput::Work {
        work,
        ticket: Some(ticket),
        offset: None,
    }
}

fn no_instance(id: &str) -> AdminError {
    AdminError::NotFound(format!("no instance {id:?}"))
}

/// Records what a partition answered for a request.
fn settle(t: &mut Ticket, outcome: Outcome) {
    match (t, outcome) {
        (Ticket::Event { routed, .. }, Outcome::Routed(r)) => {
            routed.delivered.extend(r.delivered);
            routed.buffered.extend(r.buffered);
            routed.started.extend(r.started);
            routed.joined.extend(r.joined);
            routed.held.extend(r.held);
            routed.forwarded.extend(r.forwarded);
            if r.rejected.is_some() {
                routed.rejected = r.rejected;
            }
        }
        (Ticket::Start(_, slot), Outcome::Started(r)) => {
            *slot = Some(r.map(|id| super::Started { id, position: None }))
        }
        (Ticket::Cancel(_, slot), Outcome::Cancelled(r)) => *slot = Some(r),
        (Ticket::Apply(_, slot), Outcome::Applied(r)) => *slot = Some(r),
        _ => {}
    }
}

/// Fails a request whose partition turned out to be owned by another broker (a newer fence):
/// its work was not applied here, the client retries.
fn moved(t: &mut Ticket, p: PartitionId) {
    let why = || {
        AdminError::Moved(format!(
            "state partition {p} moved to another broker while this request was applied; retry"
        ))
    };
    match t {
        Ticket::Event { failed, .. } => *failed = Some(why()),
        Ticket::Start(_, slot) => *slot = Some(Err(why())),
        Ticket::Cancel(_, slot) => *slot = Some(Err(why())),
        Ticket::Apply(_, slot) => *slot = Some(Err(why())),
    }
}

/// Answers a request whose work went to a partition another broker owns: it is in Kafka
/// (forwarded, and acknowledged, before the reply leaves) and that broker applies it.
fn forwarded(t: &mut Ticket, p: PartitionId, work: &Work) {
    match (t, work) {
        (Ticket::Event { routed, .. }, _) => routed.forwarded.push(p.0),
        (Ticket::Start(_, slot), Work::Start { id, .. }) => {
            *slot = Some(Ok(super::Started {
                id: id.clone(),
                position: None,
            }))
        }
        (Ticket::Cancel(_, slot), _) => *slot = Some(Ok(())),
        _ => {}
    }
}

/// The id of a directly started instance: derived from the `Idempotency-Key` when there is
/// one (a retried request gets the same instance), else random; its partition follows from it.
pub fn direct_id(parts: Partitions, workflow: &str, key: Option<&str>) -> InstanceId {
    let uuid = match key {
        Some(k) => uuid::Uuid::new_v5(
            &uuid::Uuid::NAMESPACE_URL,
            format!("{workflow}\n{k}").as_bytes(),
        ),
        None => uuid::Uuid::new_v4(),
    };
    InstanceId::new(parts.of_key(workflow, &uuid.to_string()), uuid)
}

/// Where [`Core::take`] puts what a command turns into.
struct Sinks<'a> {
    inputs: &'a mut BTreeMap<PartitionId, Vec<PartInput>>,
    tickets: &'a mut Vec<Ticket>,
    offsets: &'a mut BTreeMap<(String, i32), i64>,
    stats: &'a mut Vec<Stat>,
    forward: &'a mut Vec<(PartitionId, Work)>,
}

/// A write of a node-scope key (checkpoints).
pub(super) fn node_write<T: serde::Serialize>(key: &str, value: &T) -> Write {
    Write {
        table: Table::Meta,
        key: key.to_string(),
        value: Some(serde_json::to_vec(value).expect("checkpoints serialize")),
    }
}

async fn sleep(wait: Option<std::time::Duration>) {
    match wait {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}
