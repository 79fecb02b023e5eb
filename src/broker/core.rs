//! The single writer: batches commands, applies each batch in one store transaction, commits,
//! then carries out the effects (produce, invoke, reply, commit Kafka offsets).
//!
//! Crash safety comes from the order: nothing leaves the process before the transaction that
//! decided it has committed, and everything that must leave is in the store until it has:
//! produced events stay in the outbox until Kafka acknowledges them (re-sent with the same ids
//! after a restart), function calls stay in `calls` until their result is applied (re-invoked
//! after a restart with the same idempotency key), and the consumed offsets are stored with
//! the state they produced (records at or below a stored offset are skipped after a restart).

use super::batch::{Batch, Effects};
use super::records::{Buffered, Call, OutRecord, StoredVersion, TimerEntry};
use super::registry::{Deployed, Registry, WorkflowView};
use super::{AdminError, Clock, Cmd, Record, Stat};
use crate::config::Config;
use crate::engine::{Input, Status};
use crate::metrics::Metrics;
use crate::store::{key, num, Store, StoreError, Table, SEP};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use tokio::sync::mpsc;

/// Commits `(topic, partition, next offset)` to the Kafka group.
pub type CommitOffsets = Box<dyn Fn(&[(String, i32, i64)]) + Send>;

/// Where effects go after commit.
pub struct Outlets {
    pub produce: mpsc::UnboundedSender<Vec<(String, OutRecord)>>,
    pub invoke: mpsc::UnboundedSender<Call>,
    /// Commits consumed offsets (next offset to read) to the Kafka group, best effort.
    pub commit_offsets: CommitOffsets,
}

/// What the HTTP side reads without asking the core.
#[derive(Default)]
pub struct Shared {
    /// `GET /v1/workflows`.
    pub workflows: RwLock<Value>,
}

pub struct Core {
    store: Arc<Store>,
    reg: Registry,
    cfg: Arc<Config>,
    metrics: Arc<Metrics>,
    clock: Arc<dyn Clock>,
    out: Outlets,
    shared: Arc<Shared>,
    last_sweep: DateTime<Utc>,
    /// False until the first workflow directory scan was applied.
    deployed_once: bool,
}

/// Entries a batch fires at most per due-timer pass.
const TIMERS_PER_BATCH: usize = 1000;
/// How often expired buffered events are swept.
const SWEEP_EVERY_SECS: i64 = 5;

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
        for (k, v) in tx.prefix::<StoredVersion>(Table::Versions, "")? {
            let mut parts = k.split(SEP);
            let (Some(id), Some(version)) = (parts.next(), parts.next()) else {
                continue;
            };
            let format = crate::load::Format::from_path(std::path::Path::new(&v.file))
                .unwrap_or(crate::load::Format::Yaml);
            match crate::definition::Definition::parse(&v.file, &v.source, format) {
                Ok(def) => reg.remember(Deployed {
                    id: id.to_string(),
                    version: version.to_string(),
                    file: v.file,
                    source: v.source,
                    def: Arc::new(def),
                    deployed: v.deployed,
                }),
                Err(e) => tracing::error!(workflow = id, version, errors = ?e.diagnostics,
                    "a stored workflow version no longer validates; its instances cannot run"),
            }
        }
        drop(tx);
        let now = clock.now();
        Ok(Core {
            store,
            reg,
            cfg,
            metrics,
            clock,
            out,
            shared,
            last_sweep: now,
            deployed_once: false,
        })
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
            mpsc::UnboundedReceiver<Vec<(String, OutRecord)>>,
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
            },
            Arc::new(Shared::default()),
        )?;
        Ok((core, out, calls))
    }

    /// Re-sends the outbox and re-invokes calls in flight (after a restart).
    pub fn recover(&mut self) -> Result<(), StoreError> {
        let tx = self.store.read()?;
        let outbox: Vec<(String, OutRecord)> = tx.prefix(Table::Outbox, "")?;
        let calls: Vec<(String, Call)> = tx.prefix(Table::Calls, "")?;
        if !outbox.is_empty() || !calls.is_empty() {
            tracing::info!(
                outbox = outbox.len(),
                calls = calls.len(),
                "recovering: re-sending unacknowledged events and re-invoking calls in flight"
            );
        }
        if !outbox.is_empty() {
            let _ = self.out.produce.send(outbox);
        }
        for (_, c) in calls {
            let _ = self.out.invoke.send(c);
        }
        Ok(())
    }

    /// Runs until every sender of `rx` is gone. A store error stops the core: the process
    /// must restart from the last commit rather than continue from a state it could not save.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Cmd>) -> Result<(), StoreError> {
        loop {
            let due = self.next_due()?;
            let mut cmds = Vec::new();
            let wait = due.map(|d| (d - self.clock.now()).to_std().unwrap_or_default());
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(c) => cmds.push(c),
                    None => return Ok(()),
                },
                _ = sleep(wait) => {}
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

    /// The time of the earliest timer, if any.
    pub fn next_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let tx = self.store.read()?;
        let first = tx.first::<TimerEntry>(Table::Timers)?;
        drop(tx);
        let sweep = self.last_sweep + chrono::Duration::seconds(SWEEP_EVERY_SECS);
        let timer = first.and_then(|(k, _)| {
            let ms: i64 = k.split(SEP).next()?.parse().ok()?;
            DateTime::from_timestamp_millis(ms)
        });
        Ok(Some(timer.map_or(sweep, |t| t.min(sweep))))
    }

    /// Applies a batch of commands in one transaction and carries out the effects.
    pub fn process(&mut self, cmds: Vec<Cmd>) -> Result<(), StoreError> {
        let now = self.clock.now();
        let store = self.store.clone();
        let tx = store.write()?;
        let mut replies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
        let mut offsets: BTreeMap<(String, i32), i64> = BTreeMap::new();
        let mut cmds = cmds;
        // A batch of nothing but Kafka acknowledgements only forgets outbox entries: losing
        // that in a crash re-sends them with the same ids, so it need not wait for the disk.
        let acks_only = !cmds.is_empty() && cmds.iter().all(|c| matches!(c, Cmd::Acked(_)));
        // Deploy first: the rest of the batch sees the new versions.
        let mut replan = Vec::new();
        cmds.retain_mut(|c| {
            if let Cmd::Files(files) = c {
                replan.push(std::mem::take(files));
                false
            } else {
                true
            }
        });
        let mut changed: Vec<String> = Vec::new();
        for files in replan {
            changed.extend(self.deploy(&tx, &files, now)?);
        }
        let reg = &self.reg;
        let cfg = &*self.cfg;
        let mut b = Batch::new(&tx, reg, cfg, now);
        if !changed.is_empty() || !self.deployed_once {
            for id in &changed {
                b.plan_schedule(id, true)?;
            }
            self.deployed_once = true;
        }
        for cmd in cmds {
            match cmd {
                Cmd::Records(records) => {
                    for r in records {
                        let slot = (r.topic.clone(), r.partition);
                        let stored = match offsets.get(&slot) {
                            Some(o) => *o,
                            None => tx
                                .get::<i64>(
                                    Table::Offsets,
                                    &key(&[&r.topic, &r.partition.to_string()]),
                                )?
                                .unwrap_or(-1),
                        };
                        if r.offset < stored {
                            b.fx.stats.push(Stat::Duplicate);
                            continue;
                        }
                        offsets.insert(slot, r.offset + 1);
                        consume(&mut b, r)?;
                    }
                }
                Cmd::Event { event, reply } => {
                    b.fx.stats
                        .push(Stat::Consumed("http", event.event_type.clone()));
                    let routed = if b.seen_before(&event)? {
                        super::router::Routed::duplicate()
                    } else {
                        b.route(event)?
                    };
                    replies.push(Box::new(move || {
                        let _ = reply.send(Ok(routed));
                    }));
                }
                Cmd::Start {
                    workflow,
                    input,
                    reply,
                } => {
                    let result = start(&mut b, &workflow, input)?;
                    replies.push(Box::new(move || {
                        let _ = reply.send(result);
                    }));
                }
                Cmd::Cancel { id, reply } => {
                    let result = match b.apply_now(&id, Input::Cancel)? {
                        Ok(()) => Ok(()),
                        Err(crate::engine::EngineError::NotStarted(_)) => {
                            Err(AdminError::NotFound(format!("no instance {id:?}")))
                        }
                        Err(e) => Err(AdminError::Refused(e.to_string())),
                    };
                    b.drain()?;
                    replies.push(Box::new(move || {
                        let _ = reply.send(result);
                    }));
                }
                Cmd::CallDone { call, outcome } => {
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
                Cmd::Acked(acked) => {
                    for (k, topic, ty) in acked {
                        if tx.delete(Table::Outbox, &k)? {
                            self.metrics
                                .produced
                                .with_label_values(&[&topic, &ty])
                                .inc();
                        }
                    }
                }
                Cmd::Files(_) => unreachable!("handled above"),
            }
        }
        fire_timers(&mut b)?;
        if now >= self.last_sweep + chrono::Duration::seconds(SWEEP_EVERY_SECS) {
            sweep_buffer(&mut b)?;
            b.sweep_seen()?;
            b.sweep_finished()?;
            self.last_sweep = now;
        }
        b.drain()?;
        for ((topic, partition), next) in &offsets {
            tx.put(Table::Offsets, &key(&[topic, &partition.to_string()]), next)?;
        }
        let fx: Effects = std::mem::take(&mut b.fx);
        drop(b);
        let lazy = acks_only && fx.outbox.is_empty() && fx.calls.is_empty() && fx.stats.is_empty();
        let t0 = std::time::Instant::now();
        if lazy {
            tx.commit_lazy()?;
        } else {
            tx.commit()?;
        }
        self.metrics
            .commit_seconds
            .with_label_values(&[] as &[&str])
            .observe(t0.elapsed().as_secs_f64());
        self.after_commit(fx, replies, offsets);
        Ok(())
    }

    fn after_commit(
        &mut self,
        fx: Effects,
        replies: Vec<Box<dyn FnOnce() + Send>>,
        offsets: BTreeMap<(String, i32), i64>,
    ) {
        if !fx.outbox.is_empty() {
            let _ = self.out.produce.send(fx.outbox);
        }
        for c in fx.calls {
            let _ = self.out.invoke.send(c);
        }
        for r in replies {
            r();
        }
        if !offsets.is_empty() {
            let list: Vec<(String, i32, i64)> =
                offsets.into_iter().map(|((t, p), o)| (t, p, o)).collect();
            (self.out.commit_offsets)(&list);
        }
        let m = &self.metrics;
        for s in fx.stats {
            match s {
                Stat::Consumed(src, ty) => m.consumed.with_label_values(&[src, &ty]).inc(),
                Stat::DeadLettered(reason) => m.dead_lettered.with_label_values(&[reason]).inc(),
                Stat::Unmatched(ty) => m.unmatched.with_label_values(&[&ty]).inc(),
                Stat::Duplicate => m.duplicates.inc(),
                Stat::DuplicateEvent(ty) => m.duplicate_events.with_label_values(&[&ty]).inc(),
                Stat::Buffered => m.buffered.with_label_values(&["buffered"]).inc(),
                Stat::BufferDelivered => m.buffered.with_label_values(&["delivered"]).inc(),
                Stat::BufferExpired => m.buffered.with_label_values(&["expired"]).inc(),
                Stat::BufferDropped => m.buffered.with_label_values(&["dropped"]).inc(),
                Stat::JoinExpired => m.joins_expired.inc(),
                Stat::Transitions(n) => m.transitions.inc_by(n),
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
            }
        }
    }

    /// Applies the workflow directory; returns the ids whose current version changed.
    fn deploy(
        &mut self,
        tx: &crate::store::Txn,
        files: &BTreeMap<String, String>,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        let changes = self.reg.sync(files, now);
        let mut changed = Vec::new();
        for d in &changes.deployed {
            let vk = key(&[&d.id, &d.version]);
            if tx.get::<StoredVersion>(Table::Versions, &vk)?.is_none() {
                let v = StoredVersion {
                    file: d.file.clone(),
                    source: d.source.clone(),
                    deployed: now,
                };
                tx.put(Table::Versions, &vk, &v)?;
            }
            let fk = super::window::first_deployed_key(&d.id);
            if tx.get::<DateTime<Utc>>(Table::Meta, &fk)?.is_none() {
                tx.put(Table::Meta, &fk, &now)?;
            }
            for w in &d.def.warnings {
                tracing::warn!(file = %d.file, "{w}");
            }
            tracing::info!(workflow = %d.id, version = %d.version, file = %d.file, "deployed");
            changed.push(d.id.clone());
        }
        for id in &changes.undeployed {
            tracing::info!(workflow = %id, "undeployed (file removed); running instances continue");
            changed.push(id.clone());
        }
        for (file, diags) in &changes.rejected {
            for d in diags {
                tracing::error!(file = %file, "{d}");
            }
            tracing::error!(file = %file, "workflow file rejected; the previous version (if any) keeps running");
        }
        self.publish_workflows();
        Ok(changed)
    }

    fn publish_workflows(&self) {
        let deployed: Vec<WorkflowView> = self
            .reg
            .all_current()
            .map(|d| WorkflowView::from(&**d))
            .collect();
        let invalid: Vec<Value> = self
            .reg
            .invalid()
            .iter()
            .map(|(file, diags)| {
                json!({
                    "file": file,
                    "errors": diags.iter().filter(|d| d.is_error()).map(|d| json!({
                        "path": d.path, "message": d.message, "text": d.to_string(),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        if let Ok(mut w) = self.shared.workflows.write() {
            *w = json!({"workflows": deployed, "invalid": invalid});
        }
    }
}

async fn sleep(wait: Option<std::time::Duration>) {
    match wait {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Where a record came from, kept for the dead-letter copy.
struct Origin {
    topic: String,
    partition: i32,
    offset: i64,
    key: Option<Vec<u8>>,
    payload: Option<Vec<u8>>,
    headers: Vec<(String, Vec<u8>)>,
}

/// One Kafka record: route its event, or dead-letter it.
fn consume(b: &mut Batch<'_, '_>, r: Record) -> Result<(), StoreError> {
    let Record {
        topic,
        partition,
        offset,
        event,
        key,
        payload,
        headers,
    } = r;
    let origin = Origin {
        topic,
        partition,
        offset,
        key,
        payload,
        headers,
    };
    match event {
        Ok(event) => {
            b.fx.stats
                .push(Stat::Consumed("kafka", event.event_type.clone()));
            if b.seen_before(&event)? {
                return Ok(());
            }
            let routed = b.route(event)?;
            if !routed.matched() && b.cfg.kafka.dlq_unmatched {
                let reason = routed
                    .rejected
                    .unwrap_or_else(|| "no workflow or instance matches this event".into());
                dead_letter(b, origin, "unmatched", &reason)?;
            }
        }
        Err(e) => {
            tracing::warn!(topic = %origin.topic, partition = origin.partition,
                offset = origin.offset, error = %e,
                "record is not a usable CloudEvent; sent to the dead-letter topic");
            dead_letter(b, origin, e.kind(), &e.to_string())?;
        }
    }
    Ok(())
}

/// Copies a record to the dead-letter topic with the reason and its origin in headers.
fn dead_letter(
    b: &mut Batch<'_, '_>,
    o: Origin,
    kind: &'static str,
    reason: &str,
) -> Result<(), StoreError> {
    let mut headers = o.headers;
    headers.push(("flowbroker-dlq-reason".into(), reason.as_bytes().to_vec()));
    headers.push(("flowbroker-dlq-kind".into(), kind.as_bytes().to_vec()));
    headers.push(("flowbroker-dlq-topic".into(), o.topic.into_bytes()));
    headers.push((
        "flowbroker-dlq-partition".into(),
        o.partition.to_string().into_bytes(),
    ));
    headers.push((
        "flowbroker-dlq-offset".into(),
        o.offset.to_string().into_bytes(),
    ));
    b.fx.stats.push(Stat::DeadLettered(kind));
    let topic = b.cfg.kafka.dlq_topic.clone();
    b.outbox(OutRecord::Raw {
        topic,
        key: o.key,
        payload: o.payload,
        headers,
    })
}

/// A direct start from the admin API.
fn start(
    b: &mut Batch<'_, '_>,
    workflow: &str,
    input: Value,
) -> Result<Result<String, AdminError>, StoreError> {
    let Some(wf) = b.reg.current(workflow).cloned() else {
        return Ok(Err(AdminError::NotFound(format!(
            "no workflow {workflow:?} is deployed (GET /v1/workflows lists them)"
        ))));
    };
    if let Some(why) = b.direct_refused(&wf) {
        return Ok(Err(AdminError::Refused(why)));
    }
    let id = uuid::Uuid::new_v4().to_string();
    let r = b.create(&id, &wf, input, vec![], None)?;
    b.drain()?;
    Ok(match r {
        Ok(_) => Ok(id),
        Err(e) => Err(AdminError::Invalid(e.to_string())),
    })
}

/// Fires every due timer, each exactly once (its entry goes in the same transaction).
fn fire_timers(b: &mut Batch<'_, '_>) -> Result<(), StoreError> {
    let end = num(b.now.timestamp_millis().max(0) as u64 + 1);
    let due: Vec<(String, TimerEntry)> = b.tx.range(Table::Timers, "", &end, TIMERS_PER_BATCH)?;
    for (k, entry) in due {
        b.tx.delete(Table::Timers, &k)?;
        let id = k.split_once(SEP).map(|(_, id)| id).unwrap_or_default();
        b.tx.delete(Table::TimerIds, id)?;
        match entry {
            TimerEntry::Instance { instance, id } => {
                b.queue(&instance, Input::TimerFired { id });
            }
            TimerEntry::Join { workflow, key } => b.expire_join(&workflow, &key)?,
            TimerEntry::Schedule { workflow } => b.fire_schedule(&workflow)?,
        }
        b.drain()?;
    }
    Ok(())
}

/// Drops buffered events past their TTL (counted and logged).
fn sweep_buffer(b: &mut Batch<'_, '_>) -> Result<(), StoreError> {
    for (k, e) in b.tx.prefix::<Buffered>(Table::Buffer, "")? {
        if e.expires <= b.now {
            b.tx.delete(Table::Buffer, &k)?;
            tracing::info!(event = %e.event.id, r#type = %e.event.event_type,
                instance = k.split(SEP).next().unwrap_or_default(),
                "buffered event expired before its instance waited for it");
            b.fx.stats.push(Stat::BufferExpired);
        }
    }
    Ok(())
}

/// The store-kept gauges for `/metrics`.
pub fn gauges(store: &Store) -> Result<String, StoreError> {
    let tx = store.read()?;
    let mut s = String::from(
        "# HELP flowbroker_instances Instances by status.\n# TYPE flowbroker_instances gauge\n",
    );
    for st in [
        Status::Running,
        Status::Waiting,
        Status::Completed,
        Status::Failed,
        Status::Terminated,
        Status::Cancelled,
    ] {
        let name = serde_json::to_value(st).ok();
        let name = name.as_ref().and_then(Value::as_str).unwrap_or_default();
        let n = tx
            .get::<i64>(Table::Meta, &key(&["status", name]))?
            .unwrap_or(0);
        s.push_str(&format!("flowbroker_instances{{status=\"{name}\"}} {n}\n"));
    }
    s.push_str("# HELP flowbroker_outbox_pending Events committed but not yet acknowledged by Kafka.\n# TYPE flowbroker_outbox_pending gauge\n");
    s.push_str(&format!(
        "flowbroker_outbox_pending {}\n",
        tx.len(Table::Outbox)?
    ));
    s.push_str("# HELP flowbroker_buffered_events Early events waiting for their instance.\n# TYPE flowbroker_buffered_events gauge\n");
    s.push_str(&format!(
        "flowbroker_buffered_events {}\n",
        tx.len(Table::Buffer)?
    ));
    s.push_str("# HELP flowbroker_function_calls_in_flight Function calls not yet answered.\n# TYPE flowbroker_function_calls_in_flight gauge\n");
    s.push_str(&format!(
        "flowbroker_function_calls_in_flight {}\n",
        tx.len(Table::Calls)?
    ));
    Ok(s)
}
