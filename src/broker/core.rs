//! The core: applies inputs to the state partitions this broker owns, one store transaction
//! per partition per round, commits the round, then carries out the effects (produce, invoke,
//! reply, commit Kafka offsets). With a changelog, rounds are pipelined: a round is built
//! while the one before it is appended, and lands (`broker::landing`) once Kafka has it.
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

pub use super::error::CoreError;
use super::flight::{Finish, Flight};
use super::processor::PartInput;
use super::records::{Call, OutRecord, StoredVersion};
use super::registry::Registry;
pub use super::shared::Shared;
use super::tickets::Ticket;
use super::timed::Timer;
use super::window::FirstDeployed;
use super::{Clock, Cmd, OutboxKey, Stat};
use crate::cluster::node::InputPartition;
use crate::cluster::partition::{InstanceId, PartitionId, Partitions};
use crate::cluster::work::{ReadFrom, Source, Work};
use crate::cluster::Log;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::store::{split_at, Pending, Scope, Store, StoreError, Table, SEP};
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Commits `(topic, partition, next offset)` to the Kafka group.
pub type CommitOffsets = Box<dyn Fn(Vec<(String, i32, i64)>) + Send>;

/// Where effects go after commit.
pub struct Outlets {
    pub produce: mpsc::UnboundedSender<super::LetOut>,
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
    pub(super) metrics: Arc<Metrics>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) out: Outlets,
    pub(super) shared: Arc<Shared>,
    pub(super) parts: Partitions,
    pub(super) last_sweep: DateTime<Utc>,
    /// Messages between partitions committed but not applied yet (delivered in process).
    pub(super) loopback: Vec<(PartitionId, PartInput)>,
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
    /// Partitions let go (or taken back) because another broker fenced them after a batch of
    /// this broker's that stands (`handoff::Recheck`): the fence that batch was built
    /// under and the offset of the last such batch. A later batch of the same fence, already
    /// on its way then, stands too when no other broker's fence precedes it
    /// (`broker::landing`).
    pub(super) held_off: BTreeMap<PartitionId, (i64, i64)>,
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
    /// Per owned partition: instance records kept decoded between rounds (`broker::hot`).
    pub(super) hot: BTreeMap<PartitionId, super::hot::Hot<super::records::InstanceRecord>>,
    /// Landed outbox entries Kafka has not acknowledged yet, kept out of the store while they
    /// are young (`broker::young`).
    pub(super) young: super::young::Young,
    /// The processor threads (`broker::pool`).
    pub(super) pool: super::pool::Pool,
    /// Input records that were to be applied here directly, of partitions let go since: they
    /// go through the work topic to the new owner, in the order they were consumed.
    pub(super) strays: Vec<(PartitionId, Work)>,
    /// Input records for partitions owned here waiting behind a forward of their input's run
    /// to be read back, then applied directly.
    pub(super) held: super::held::Held,
    /// Held records of partitions let go since: they follow their run's first forward, which
    /// may be in the round being built, so they leave with a round's forward, never before.
    pub(super) held_strays: Vec<(PartitionId, Work)>,
    /// Rounds whose changelog appends are on their way, oldest first.
    pub(super) flights: std::collections::VecDeque<Flight>,
    /// Per partition: the writes of its rounds in flight (the next round reads through them).
    pub(super) pending: BTreeMap<PartitionId, Pending>,
    /// The number of the last step built (its pending writes carry it).
    pub(super) rounds: u64,
}

/// What the core reads, each on a channel of its own so that none queues behind another.
pub struct Queues {
    /// Requests, function results, the directory watcher's files: everything not below. The
    /// core stops when every sender is gone.
    pub cmds: mpsc::Receiver<Cmd>,
    /// Ownership changes, acknowledgements, definitions: taken before the others.
    pub control: mpsc::UnboundedReceiver<Cmd>,
    /// The work topic's records: they let input records held here go (`broker::held`).
    pub work: mpsc::Receiver<Cmd>,
    /// Input records consumed from Kafka: not taken while many are held.
    pub inputs: mpsc::Receiver<Cmd>,
}

impl Queues {
    /// `cmds` and `control`, with nothing ever on the work and input queues (no Kafka).
    pub fn without_kafka(
        cmds: mpsc::Receiver<Cmd>,
        control: mpsc::UnboundedReceiver<Cmd>,
    ) -> Queues {
        Queues {
            cmds,
            control,
            work: mpsc::channel(1).1,
            inputs: mpsc::channel(1).1,
        }
    }
}

/// At most this many rounds wait for their changelog appends at once; intake waits beyond.
/// One round is built while the one before it is appended.
pub const MAX_FLIGHTS: usize = 2;

/// A round takes no more commands once they hold this many inputs: a round lands (its
/// effects leave) only after the next one is built, so rounds stay short.
const ROUND_INPUTS: usize = 2000;

/// How often expired buffered events, seen event ids and finished instances are swept.
pub(super) const SWEEP_EVERY_SECS: i64 = 5;

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
        for (k, at) in tx.prefix::<DateTime<Utc>>(Table::Meta, FirstDeployed::PREFIX)? {
            if let Some(wf) = k.split(SEP).nth(1) {
                reg.anchor(wf, at);
            }
        }
        drop(tx);
        let now = clock.now();
        let parts = cfg.cluster.parts();
        let pool = super::pool::Pool::new(cfg.cluster.processor_threads);
        tracing::debug!(threads = pool.threads(), "partition processor threads");
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
            held_off: BTreeMap::new(),
            reader: None,
            reading: BTreeMap::new(),
            epochs: 0,
            inflight: Default::default(),
            snapshots: None,
            resumed: Default::default(),
            group_assigned: false,
            direct: Default::default(),
            strays: Vec::new(),
            held_strays: Vec::new(),
            hot: BTreeMap::new(),
            young: Default::default(),
            pool,
            held: Default::default(),
            flights: Default::default(),
            pending: BTreeMap::new(),
            rounds: 0,
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

    /// Snapshots the owned partitions with `writer` (docs/scale.md "Snapshots").
    pub fn attach_snapshots(&mut self, writer: Box<dyn crate::cluster::snapshot::Writer>) {
        self.snapshots = Some(super::snapshots::Plan::new(writer, &self.cfg.cluster));
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
            mpsc::UnboundedReceiver<super::LetOut>,
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

    /// Runs until every sender of `q.cmds` is gone. A store error stops the core: the process
    /// must restart from the last commit rather than continue from a state it could not save.
    /// With a changelog, rounds are pipelined: new rounds are built while earlier ones wait
    /// for their appends (up to `MAX_FLIGHTS`), and each lands when Kafka has it.
    pub async fn run(mut self, mut q: Queues) -> Result<(), CoreError> {
        enum Next {
            Landed(Vec<super::flight::Appended>),
            Control(Box<Cmd>),
            Cmd(Box<Cmd>),
            Due,
            Closed,
        }
        loop {
            let room = self.flights.len() < MAX_FLIGHTS;
            // held records of a partition let go while a round was built or landed leave with
            // the next round's forward, with or without commands
            if room && !self.held_strays.is_empty() {
                self.build(Vec::new())?;
                continue;
            }
            let due = self.next_due()?;
            let wait = due.map(|d| (d - self.clock.now()).to_std().unwrap_or_default());
            // input records wait while many are held: only the work topic lets those go
            let inputs = room && !self.held.full();
            let landing = async {
                match self.flights.front_mut() {
                    Some(f) => (&mut f.landed).await,
                    None => std::future::pending().await,
                }
            };
            let next = tokio::select! {
                biased;
                a = landing => Next::Landed(a),
                Some(c) = q.control.recv() => Next::Control(Box::new(c)),
                Some(c) = q.work.recv(), if room => Next::Cmd(Box::new(c)),
                cmd = q.cmds.recv(), if room => match cmd {
                    Some(c) => Next::Cmd(Box::new(c)),
                    None => Next::Closed,
                },
                Some(c) = q.inputs.recv(), if inputs => Next::Cmd(Box::new(c)),
                _ = sleep(wait), if room => Next::Due,
            };
            let mut cmds = Vec::new();
            let mut picked = None;
            match next {
                Next::Landed(appended) => {
                    let f = self.flights.pop_front().expect("a round in flight landed");
                    let mut left = BTreeMap::new();
                    self.land(f, appended, &mut left)?;
                    // a partition taken back while landing has inputs of its own (calls to
                    // invoke again, schedules to plan): the next round applies them
                    if left.is_empty() {
                        continue;
                    }
                    for (p, list) in left {
                        self.loopback.extend(list.into_iter().map(|i| (p, i)));
                    }
                }
                Next::Closed => return self.land_all(&mut BTreeMap::new()),
                Next::Control(c) => cmds.push(*c),
                Next::Cmd(c) => picked = Some(*c),
                Next::Due => {}
            }
            // the control channel first: a batch picked from another may have waited for
            // what it carries (definitions: `kafka::definitions::Caught`)
            while let Ok(c) = q.control.try_recv() {
                cmds.push(c);
            }
            cmds.extend(picked);
            let mut size: usize = cmds.iter().map(Cmd::size).sum();
            // the other three in turn, so none waits behind another
            let mut turn = 0;
            while room && cmds.len() < 256 && size < ROUND_INPUTS {
                let next = (0..3).find_map(|k| match (turn + k) % 3 {
                    0 => q.work.try_recv().ok(),
                    1 => q.cmds.try_recv().ok(),
                    _ if inputs => q.inputs.try_recv().ok(),
                    _ => None,
                });
                turn += 1;
                match next {
                    Some(c) => {
                        // definitions sent before this batch waited for them go first
                        while let Ok(x) = q.control.try_recv() {
                            cmds.push(x);
                        }
                        size += c.size();
                        cmds.push(c);
                    }
                    None => break,
                }
            }
            self.build(cmds)?;
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

    /// The first timer of `p`, rounds in flight included.
    pub(super) fn first_timer(&self, p: PartitionId) -> Result<Option<DateTime<Utc>>, StoreError> {
        let none = Pending::default();
        let pending = self.pending.get(&p).unwrap_or(&none);
        let tx = self.store.scoped_over(Scope::Partition(p.0), pending);
        let first = tx.first_of::<Timer>()?;
        Ok(first.and_then(|(k, _)| split_at(&k).map(|(t, _)| t)))
    }

    /// Applies commands and lands the round: when this returns, its effects have left.
    pub fn process(&mut self, cmds: Vec<Cmd>) -> Result<(), CoreError> {
        self.build(cmds)?;
        self.land_all(&mut BTreeMap::new())
    }

    /// Builds a round from commands: each partition's share in one transaction (a batch);
    /// with a changelog, the batches are sent to it and the round waits in flight for
    /// [`Core::land`]; without one, each batch lands at once and messages between partitions
    /// are applied in the next step, until none are left.
    fn build(&mut self, cmds: Vec<Cmd>) -> Result<(), CoreError> {
        let now = self.clock.now();
        if !cmds.is_empty() {
            let taken: usize = cmds.iter().map(Cmd::size).sum();
            self.metrics.round_inputs.observe(taken as f64);
        }
        let mut forward: Vec<(PartitionId, Work)> = Vec::new();
        let mut inputs: BTreeMap<PartitionId, Vec<PartInput>> = BTreeMap::new();
        for (p, i) in std::mem::take(&mut self.loopback) {
            inputs.entry(p).or_default().push(i);
        }
        let mut finish = Finish {
            tickets: Vec::new(),
            offsets: BTreeMap::new(),
            stats: Vec::new(),
            now,
        };
        // (ticket, index in `forward`): requests answered with where their work went
        let mut positions: Vec<(usize, usize)> = Vec::new();
        // A round of nothing but Kafka acknowledgements only forgets outbox entries: losing
        // that in a crash re-sends them with the same ids, so it need not wait for the disk.
        let acks_only = !cmds.is_empty() && cmds.iter().all(|c| matches!(c, Cmd::Acked(_)));
        for cmd in cmds {
            // ownership changes see every earlier round landed
            if matches!(
                cmd,
                Cmd::Assigned(_) | Cmd::Assignment(_) | Cmd::Resume(..) | Cmd::Revoked(..)
            ) {
                self.land_all(&mut inputs)?;
            }
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
                        tickets: &mut finish.tickets,
                        offsets: &mut finish.offsets,
                        stats: &mut finish.stats,
                        forward: &mut forward,
                    };
                    self.take(cmd, now, &mut sinks)?
                }
            }
            self.unstray(&mut forward);
            self.unhold(&mut inputs, &mut finish);
        }
        // (a round of no commands: held records of a partition let go, `Core::run`)
        self.unstray(&mut forward);
        // a held record's input offset is not committed: after a crash it is read again
        self.hold_back_offsets(&mut finish.offsets);
        self.metrics.input_held.set(self.held.len() as i64);
        let (hits, misses) = self
            .hot
            .values_mut()
            .map(|h| h.counts())
            .fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
        let cache = &self.metrics.instance_cache;
        cache.with_label_values(&["hit"]).inc_by(hits);
        cache.with_label_values(&["miss"]).inc_by(misses);
        self.forward_elsewhere(&mut inputs, &mut finish, &mut forward, &mut positions);
        let (steps, landed) = self.steps(inputs, &mut finish, now, acks_only)?;
        self.send_forward(forward, positions, &mut finish)?;
        self.backpressure();
        if self.log.is_none() {
            self.finish(finish);
            return Ok(());
        }
        self.flights.push_back(Flight {
            steps,
            finish,
            landed: super::flight::Landing::new(landed),
        });
        Ok(())
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
            self.metrics.intake_paused.set(i64::from(next));
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
    ) -> Result<(), CoreError> {
        match cmd {
            Cmd::Files(files) => {
                let store = self.store.clone();
                let tx = store.write()?;
                let changed = self.deploy(&tx, &files, now)?;
                tx.commit()?;
                for id in changed {
                    sinks.push(self.parts.of_key(&id, ""), PartInput::Plan(id));
                }
            }
            Cmd::Records(records) => self.take_records(records, sinks)?,
            Cmd::Event { event, reply } => self.take_event(event, reply, sinks),
            Cmd::Start { start, reply } => self.take_start(start, reply, sinks),
            Cmd::Cancel { id, reply } => self.take_cancel(id, reply, sinks),
            Cmd::Apply { id, input, reply } => self.take_apply(id, input, reply, sinks),
            Cmd::CallDone { call, outcome } => {
                self.inflight.called(&call);
                if let Ok(p) = self.parts.of_instance(&call.instance) {
                    sinks.push(p, PartInput::CallDone { call, outcome });
                }
            }
            Cmd::Acked(acked) => self.take_acked(acked, sinks),
            Cmd::Work {
                partition,
                epoch,
                records,
            } => self.take_work(partition, epoch, records, sinks),
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

    /// Hands a call to the invoker, unless this process is running it already.
    pub(super) fn invoke(&mut self, c: Call) {
        if self.inflight.call(&c) {
            let _ = self.out.invoke.send(c);
        }
    }

    /// Sends committed outbox records: messages between partitions are applied in process in
    /// the next round; everything else goes to Kafka, stamped `at` (when the broker last
    /// checked that it still owns their partition).
    pub(super) fn send_out(&mut self, out: Vec<(OutboxKey, OutRecord)>, at: DateTime<Utc>) {
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
            let _ = self.out.produce.send(super::LetOut { at, records: kafka });
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
pub(super) fn input_of(work: &Work) -> Option<InputPartition> {
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
pub(super) struct Sinks<'a> {
    pub inputs: &'a mut BTreeMap<PartitionId, Vec<PartInput>>,
    pub tickets: &'a mut Vec<Ticket>,
    pub offsets: &'a mut BTreeMap<(String, i32), i64>,
    pub stats: &'a mut Vec<Stat>,
    pub forward: &'a mut Vec<(PartitionId, Work)>,
}

async fn sleep(wait: Option<std::time::Duration>) {
    match wait {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}
