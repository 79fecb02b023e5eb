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
use super::records::{Call, OutRecord, StoredVersion, TimerEntry};
use super::registry::{Deployed, Registry};
use super::{AdminError, Clock, Cmd, Stat};
use crate::config::Config;
use crate::engine::Input;
use crate::metrics::Metrics;
use crate::store::{key, split_at, Store, StoreError, Table, SEP};
use chrono::{DateTime, Utc};
use serde_json::Value;
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
    pub(super) reg: Registry,
    cfg: Arc<Config>,
    metrics: Arc<Metrics>,
    clock: Arc<dyn Clock>,
    out: Outlets,
    pub(super) shared: Arc<Shared>,
    last_sweep: DateTime<Utc>,
    /// False until the first workflow directory scan was applied.
    deployed_once: bool,
}

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
        let timer = first.and_then(|(k, _)| split_at(&k).map(|(t, _)| t));
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
                        super::ingest::consume(&mut b, r)?;
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
                    let result = super::ingest::start(&mut b, &workflow, input)?;
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
        super::sweep::fire_timers(&mut b)?;
        if now >= self.last_sweep + chrono::Duration::seconds(SWEEP_EVERY_SECS) {
            super::sweep::sweep_buffer(&mut b)?;
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
                Stat::Held => m.buffered.with_label_values(&["held"]).inc(),
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
}

async fn sleep(wait: Option<std::time::Duration>) {
    match wait {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}
