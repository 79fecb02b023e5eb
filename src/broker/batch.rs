//! One store transaction's worth of work: applying inputs to instances, keeping the indexes
//! in step, and turning the engine's actions into stored effects (outbox, calls, timers,
//! children). Nothing here talks to Kafka or HTTP; [`Effects`] says what to do after commit.

use super::compound::{BufferedAt, VersionOf};
use super::entries::{CallOf, InstanceOf};
use super::hot::Hot;
use super::index;
use super::lifecycle::{self, Lifecycle};
use super::records::{Call, HistoryEntryOf, InstanceRecord, OutRecord, StoredVersion, TimerEntry};
use super::registry::{Deployed, Registry};
use super::timed::Finished;
use super::Stat;
use crate::cluster::partition::{PartitionId, Partitions};
use crate::cluster::work::{IndexChange, IndexEntry, Source, Work};
use crate::config::{Config, Windows};
use crate::engine::{self, Action, EngineError, ErrorInfo, Event, Input, Instance};
use crate::store::{At, Txn};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub type Result<T> = crate::store::Result<T>;

/// What to do once the transaction has committed.
#[derive(Debug, Default)]
pub struct Effects {
    /// Outbox entries to send (sequence number in the outbox table, record).
    pub outbox: Vec<(u64, OutRecord)>,
    /// Function calls to make.
    pub calls: Vec<Call>,
    /// Metrics to count.
    pub stats: Vec<Stat>,
    /// Finished spans to export (only built when [`Batch::spans`] is set).
    pub spans: Vec<crate::trace::span::SpanRecord>,
    /// SWF tasks ready for pollers.
    pub offers: Vec<(crate::swf::task::TaskQueue, super::board::Ready)>,
}

/// The instance a child is started by.
pub struct Parent {
    pub id: String,
    /// Whether the parent waits for the child's result.
    pub wait: bool,
    /// The parent's workflow and version, then its own lineage.
    pub lineage: Vec<(String, String)>,
    /// The parent's trace: the child's span is parented to the parent's.
    pub trace: Option<crate::trace::TraceContext>,
}

/// What `apply_now` keeps of an instance before the engine takes it.
pub(super) struct Before {
    pub status: engine::Status,
    pub visit: u64,
    /// The state it was in, and since when.
    pub state: Option<String>,
    pub since: DateTime<Utc>,
    waits: BTreeSet<index::Entry>,
    active: BTreeSet<index::Entry>,
}

struct Queued {
    instance: String,
    input: Input,
    /// The buffer entry this event came from (deleted when applied).
    buffered: Option<BufferedAt>,
}

/// Entries this batch added to tables that expire, so that the batch's sweeps remove at
/// least as many (twice as many, to catch up) and no table outgrows its sweep.
#[derive(Debug, Default, Clone, Copy)]
pub struct Added {
    /// `SeenExpiry` entries (dedupe).
    pub seen: usize,
    /// Of those, new `Seen` keys (the `flowbroker_dedupe_entries` gauge).
    pub seen_new: usize,
    /// `Finished` entries (retention).
    pub finished: usize,
    /// `BufferExpiry` entries.
    pub buffered: usize,
}

impl Added {
    /// How many due entries a sweep removes: twice the batch's additions, and at least
    /// `floor` on the periodic sweep (which also runs when nothing is consumed).
    pub fn pace(added: usize, periodic: bool, floor: usize) -> usize {
        let keep_up = added.saturating_mul(2);
        if periodic {
            keep_up.max(floor)
        } else {
            keep_up
        }
    }
}

pub struct Batch<'a, 's> {
    /// Scoped to partition `p`: every key read or written here is this partition's.
    pub tx: &'a Txn<'s>,
    pub p: PartitionId,
    pub parts: Partitions,
    /// The changelog offset of this partition's owner's fence (0 without a changelog).
    pub fence: i64,
    pub reg: &'a Registry,
    pub cfg: &'a Config,
    pub now: DateTime<Utc>,
    /// The config's durations, parsed once for the batch.
    pub windows: Windows,
    pub fx: Effects,
    pub added: Added,
    /// Whether spans are exported: only then are they built (`broker::spans`).
    pub spans: bool,
    /// Decoded records kept between batches (`broker::hot`); `None`: every input decodes.
    pub hot: Option<&'a mut Hot<InstanceRecord>>,
    /// What the partition keeps complete: whether its `Active` entries can be removed
    /// unread (`broker::active`) and its unpinned `Waits` keys looked up only when they have
    /// a head (`broker::unpinned`); the processor finds out before the batch writes anything.
    pub(super) kept: super::kept::Kept,
    queue: VecDeque<Queued>,
}

impl<'a, 's> Batch<'a, 's> {
    pub fn new(
        tx: &'a Txn<'s>,
        (p, parts): (PartitionId, Partitions),
        reg: &'a Registry,
        cfg: &'a Config,
        now: DateTime<Utc>,
    ) -> Self {
        Batch {
            tx,
            p,
            parts,
            fence: 0,
            reg,
            cfg,
            now,
            windows: cfg.windows(now),
            fx: Effects::default(),
            added: Added::default(),
            spans: false,
            hot: None,
            kept: Default::default(),
            queue: VecDeque::new(),
        }
    }

    /// The engine's limits from the configuration.
    fn limits(&self) -> engine::Limits {
        engine::Limits {
            max_event_bytes: self.cfg.kafka.max_event_bytes,
        }
    }

    pub fn load(&self, id: &str) -> Result<Option<InstanceRecord>> {
        self.tx.read(&InstanceOf(id))
    }

    /// [`Batch::load`] for an input about to be applied: the record kept decoded from the
    /// last write when the store still holds what was written then (`broker::hot`).
    fn load_to_apply(&mut self, id: &str) -> Result<Option<InstanceRecord>> {
        let Some(hot) = self.hot.as_deref_mut() else {
            return self.load(id);
        };
        let found = self
            .tx
            .read_raw(&InstanceOf(id), |stored| match hot.take(id, stored) {
                Some(rec) => {
                    #[cfg(debug_assertions)]
                    same_as_decoded(id, stored, &rec);
                    Ok(rec)
                }
                None => Txn::decode_entry(&InstanceOf(id), stored),
            })?;
        match found {
            Some(rec) => rec.map(Some),
            None => {
                hot.forget(id);
                Ok(None)
            }
        }
    }

    /// Creates instance `id` of `wf` and starts it with `input` and start `events`.
    /// Returns false (and does nothing) when the id exists already.
    pub fn create(
        &mut self,
        id: &str,
        wf: &Deployed,
        input: Value,
        events: Vec<Event>,
        parent: Option<Parent>,
        upstream: Option<crate::trace::Upstream>,
    ) -> Result<std::result::Result<bool, EngineError>> {
        use crate::trace::{TraceContext, Upstream};
        if self.load(id)?.is_some() {
            return Ok(Ok(false));
        }
        if let Some(open) = self.open_swf_run(&wf.id, &input, parent.as_ref())? {
            return Ok(Err(crate::engine::swf::SwfError::AlreadyStarted(format!(
                "an execution of workflow id {:?} is open (runId {})",
                input
                    .get("workflowId")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                crate::swf::run_id_of(&open)
            ))
            .into()));
        }
        // the trace it continues: its parent's, the request's, or its first start event's
        let trace = match parent.as_ref().and_then(|p| p.trace.as_ref()) {
            Some(t) => t.for_child(id),
            None => {
                let upstream = upstream.or_else(|| events.iter().find_map(Upstream::of_event));
                TraceContext::for_instance(id, upstream.as_ref())
            }
        };
        let (parent, wait, lineage) = match parent {
            Some(p) => (Some(p.id), p.wait, p.lineage),
            None => (None, false, vec![]),
        };
        let rec = InstanceRecord {
            instance: Instance::new(id, &wf.id),
            version: wf.version.clone(),
            parent,
            wait,
            lineage,
            created: self.now,
            updated: self.now,
            since: None,
            history: 0,
            trace: Some(trace),
        };
        // the partition keeps the versions its instances run on: a broker that takes it over
        // runs them whatever its own workflows_dir holds (docs/scale.md)
        let vk = VersionOf::new(&wf.id, &wf.version);
        if !self.tx.holds(&vk)? {
            self.tx.write(&vk, &StoredVersion::of(wf))?;
        }
        // applied as it is, not stored first and read back: the instance is written once,
        // after its start, and not at all when the engine refuses the start (the version row
        // above stays: it is the same whoever writes it, and is never deleted)
        Ok(self
            .apply_to(id, rec, Input::Start { input, events })?
            .map(|()| true))
    }

    /// The open run of the SWF workflow id an SWF start names, other than the run that
    /// continues as this one.
    fn open_swf_run(
        &self,
        workflow: &str,
        input: &Value,
        parent: Option<&Parent>,
    ) -> Result<Option<String>> {
        if workflow != crate::swf::EXECUTIONS {
            return Ok(None);
        }
        let (Some(domain), Some(workflow_id)) = (
            input.get("domain").and_then(Value::as_str),
            input.get("workflowId").and_then(Value::as_str),
        ) else {
            return Ok(None);
        };
        let key = crate::swf::RunKey {
            domain: domain.into(),
            workflow_id: workflow_id.into(),
        };
        let open = self.tx.read(&index::open_run(&key))?;
        Ok(open.filter(|o| parent.is_none_or(|p| p.id != *o)))
    }

    /// Queues an input for an instance (applied by [`Batch::drain`]).
    pub fn queue(&mut self, instance: &str, input: Input) {
        self.queue.push_back(Queued {
            instance: instance.to_string(),
            input,
            buffered: None,
        });
    }

    /// Applies everything queued, including what that leads to.
    pub fn drain(&mut self) -> Result<()> {
        while let Some(w) = self.queue.pop_front() {
            match self.apply_now(&w.instance, w.input)? {
                Ok(()) => {
                    if let Some(k) = w.buffered {
                        if let Some(b) = self.tx.read(&k)? {
                            self.delete_buffered(&k, &b)?;
                        }
                        self.fx.stats.push(Stat::BufferDelivered);
                    }
                }
                Err(e) => {
                    if w.buffered.is_none() {
                        tracing::debug!(instance = %w.instance, error = %e, "input refused");
                    }
                }
            }
        }
        Ok(())
    }

    /// Applies one input now. `Err(EngineError)` means the engine refused it and nothing
    /// changed; the outer `Result` is the store's.
    pub fn apply_now(
        &mut self,
        id: &str,
        input: Input,
    ) -> Result<std::result::Result<(), EngineError>> {
        let Some(rec) = self.load_to_apply(id)? else {
            return Ok(Err(EngineError::NotStarted(id.to_string())));
        };
        self.apply_to(id, rec, input)
    }

    /// Applies one input to `rec`, instance `id` as stored (or about to be created), and
    /// stores the result. Nothing is written when the engine refuses the input.
    fn apply_to(
        &mut self,
        id: &str,
        mut rec: InstanceRecord,
        input: Input,
    ) -> Result<std::result::Result<(), EngineError>> {
        let Some(def) = self
            .reg
            .effective(&rec.instance.workflow_id, &rec.version, &rec.lineage)
        else {
            tracing::error!(instance = id, workflow = %rec.instance.workflow_id, version = %rec.version,
                "the instance's workflow version is not in the store; input dropped");
            return Ok(Err(EngineError::UnknownState(rec.version.clone())));
        };
        let def = &*def;
        // what reindexing and counting need of the instance before; the engine takes it
        let before = Before {
            status: rec.instance.status,
            visit: rec.instance.visit,
            // only the spans need it (a clone per input otherwise spent for nothing)
            state: if self.spans {
                rec.instance.state.clone()
            } else {
                None
            },
            since: rec.since.unwrap_or(rec.updated),
            waits: index::waits(def, &rec.instance),
            active: index::active(def, &rec.instance),
        };
        let inst = std::mem::replace(&mut rec.instance, Instance::new("", ""));
        // A bug in the engine must not become a crash loop on the same record: the input is
        // refused (and logged) and the stream moves on.
        let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            engine::apply_with(def, inst, input.clone(), self.now, self.limits())
        }));
        let step = match applied {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Ok(Err(e)),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                tracing::error!(instance = id, input = ?input, panic = %why,
                    "the engine panicked on this input; input dropped (please report this)");
                return Ok(Err(EngineError::UnknownState(format!(
                    "engine panic: {why}"
                ))));
            }
        };
        if self.spans {
            self.step_spans(def, &rec, &before, &step.instance, &step.entered);
        }
        if !step.entered.is_empty() {
            rec.since = Some(self.now);
        }
        if tracing::enabled!(tracing::Level::DEBUG) {
            let kind = serde_json::to_value(&input).ok();
            let kind = kind
                .as_ref()
                .and_then(|k| k["kind"].as_str())
                .unwrap_or("?");
            tracing::debug!(instance = id, workflow = %step.instance.workflow_id, input = kind,
                state = ?step.instance.state, status = step.instance.status.as_str(),
                actions = step.actions.len(), "applied");
        }
        let entry = HistoryEntryOf {
            at: self.now,
            input: &input,
            actions: &step.actions,
            state: step.instance.state.as_deref(),
            status: step.instance.status,
            entered: &step.entered,
        };
        self.record_history(id, rec.history, entry)?;
        // the `started` lifecycle event carries a start's input, once the history has it
        let started = match input {
            Input::Start { input, .. } => Some(input),
            _ => None,
        };
        rec.history += 1;
        rec.updated = self.now;
        rec.instance = step.instance;
        self.reindex(def, before.waits, before.active, &rec.instance)?;
        if let Some(input) = started {
            self.count_status(None, rec.instance.status)?;
            self.started(&rec, input)?;
        } else if before.status != rec.instance.status {
            self.count_status(Some(before.status), rec.instance.status)?;
        }
        let transitions = rec.instance.visit.saturating_sub(before.visit);
        if transitions > 0 {
            self.fx.stats.push(Stat::Transitions(transitions));
        }
        for action in step.actions {
            self.act(&mut rec, action)?;
        }
        let bytes = Txn::encode(&rec);
        // a finished instance takes no more inputs: not worth keeping decoded
        let kept = (self.hot.is_some() && !rec.instance.status.is_final()).then(|| bytes.clone());
        self.tx.write_encoded(&InstanceOf(id), bytes)?;
        // an instance that waits is read again when its next input comes: kept in memory
        // (`store::resident`); a finished one is read once more at most, by retention
        if rec.instance.status.is_final() {
            self.tx.forget(&InstanceOf(id));
        } else {
            self.tx.keep(&InstanceOf(id));
            self.offer_buffered(def, &rec.instance)?;
        }
        if let (Some(hot), Some(bytes)) = (self.hot.as_deref_mut(), kept) {
            #[cfg(debug_assertions)]
            same_as_decoded(id, &bytes, &rec);
            hot.offer(id, bytes, rec);
        }
        Ok(Ok(()))
    }

    /// Keeps `Waits` and `Active` in step with the instance: entries of keys this partition
    /// owns are written here, the others are sent to their partitions (docs/scale.md).
    fn reindex(
        &mut self,
        def: &crate::definition::Definition,
        ow: BTreeSet<index::Entry>,
        oa: BTreeSet<index::Entry>,
        new: &Instance,
    ) -> Result<()> {
        let mut remote: BTreeMap<PartitionId, Vec<IndexChange>> = BTreeMap::new();
        let (nw, na) = (index::waits(def, new), index::active(def, new));
        let changes = [
            (IndexEntry::Waits, ow.difference(&nw), false),
            (IndexEntry::Waits, nw.difference(&ow), true),
            (IndexEntry::Active, oa.difference(&na), false),
            (IndexEntry::Active, na.difference(&oa), true),
        ];
        for (kind, entries, present) in changes {
            for e in entries {
                for owner in e.owners(self.parts) {
                    if owner == self.p {
                        self.index_here(kind, e, present)?;
                    } else {
                        remote.entry(owner).or_default().push(IndexChange {
                            entry: kind,
                            key: match kind {
                                IndexEntry::Waits => e.waits().into_key(),
                                IndexEntry::Active => e.active().into_key(),
                            },
                            instance: e.instance.clone(),
                            present,
                        });
                    }
                }
            }
        }
        for (to, changes) in remote {
            self.send(to, |source| Work::Index { changes, source })?;
        }
        Ok(())
    }

    /// Writes (or removes) an index entry this partition owns. A new active entry takes the
    /// events held for its key.
    pub(super) fn index_here(
        &mut self,
        kind: IndexEntry,
        e: &index::Entry,
        present: bool,
    ) -> Result<()> {
        match (kind, present) {
            // with the head of an unpinned key (`broker::unpinned`)
            (IndexEntry::Waits, true) => super::unpinned::put(self.tx, e)?,
            // (a pinned one removed unread: an entry not there, a message about an entry
            // already gone, leaves a tombstone that changes nothing)
            (IndexEntry::Waits, false) => super::unpinned::remove(self.tx, e)?,
            (IndexEntry::Active, false) => {
                super::active::remove(self.tx, self.kept.marks, &e.active(), &e.instance)?
            }
            (IndexEntry::Active, true) => {
                let k = e.active();
                super::active::put(self.tx, &k, &e.instance)?;
                self.adopt_held(&k, &e.instance)?;
            }
        }
        Ok(())
    }

    /// Whether instance `id` lives on this partition.
    pub fn is_here(&self, id: &str) -> bool {
        self.parts.of_instance(id).ok() == Some(self.p)
    }

    /// Sends a message to partition `to` through the outbox (its sequence number is the
    /// position the receiver deduplicates on).
    pub fn send(&mut self, to: PartitionId, make: impl FnOnce(Source) -> Work) -> Result<()> {
        let seq = self.next_outbox_seq()?;
        let work = make(Source::Partition {
            partition: self.p,
            fence: self.fence,
            seq,
        });
        self.put_outbox(
            seq,
            OutRecord::Work {
                partition: to,
                work: Box::new(work),
            },
        )
    }

    /// Applies `input` to instance `to`: queued here, or sent to its partition.
    pub(super) fn send_input(&mut self, to: &str, input: Input) -> Result<()> {
        if self.is_here(to) {
            self.queue(to, input);
            return Ok(());
        }
        match self.parts.of_instance(to) {
            Ok(p) => self.send(p, |source| Work::Apply {
                id: to.to_string(),
                input: Box::new(input),
                source,
            }),
            Err(e) => {
                tracing::warn!(to, error = %e, "input for an instance id no partition holds; dropped");
                Ok(())
            }
        }
    }

    /// Carries out one engine action inside the transaction.
    fn act(&mut self, rec: &mut InstanceRecord, action: Action) -> Result<()> {
        match action {
            Action::Produce { event } => self.produce(rec, event)?,
            Action::Invoke {
                key,
                function,
                resource,
                parameters,
                attempt,
                timeout_secs,
                stale_on_takeover,
            } => {
                let call = Invocation {
                    key,
                    function,
                    resource,
                    parameters,
                    attempt,
                    timeout_secs,
                    stale_on_takeover,
                };
                self.invoke(rec, call)?
            }
            Action::ArmTimer { id: timer, due } => {
                let entry = TimerEntry::Instance {
                    instance: rec.instance.id.clone(),
                    id: timer.clone(),
                };
                self.arm(&timer, due, &entry)?;
            }
            Action::CancelTimer { id: timer } => self.disarm(&timer)?,
            Action::StartChild {
                id: child,
                workflow_id,
                input,
                wait,
            } => self.start_child(rec, child, workflow_id, input, wait)?,
            Action::CancelChild { id: child } => self.queue(&child, Input::Cancel),
            Action::Complete { output } => self.ended(rec, Lifecycle::Completed, output)?,
            Action::Terminate { output } => self.ended(rec, Lifecycle::Terminated, output)?,
            Action::Fail { error } => {
                tracing::info!(instance = %rec.instance.id, workflow = %rec.instance.workflow_id,
                    error = %error.name, message = %error.message, "instance failed");
                let error_json = serde_json::to_value(&error).unwrap_or(Value::Null);
                self.lifecycle(rec, Lifecycle::Failed, Some(("error", error_json)))?;
                let id = rec.instance.id.clone();
                self.notify_parent(rec, Input::ChildFailed { id, error });
            }
            Action::Cancelled => {
                self.lifecycle(rec, Lifecycle::Cancelled, None)?;
            }
            Action::Send { to, input } => self.send_input(&to, *input)?,
            Action::SendToRun {
                key,
                run_id,
                call,
                failed,
            } => {
                let p = key.partition(self.parts);
                let from = rec.instance.id.clone();
                if p == self.p {
                    self.call_run(&key, run_id.as_deref(), *call, &from, *failed)?;
                } else {
                    self.send(p, |source| Work::SwfToRun {
                        key,
                        run_id,
                        call,
                        from,
                        failed,
                        source,
                    })?;
                }
            }
            Action::Offer { queue, scheduled } => {
                let ready = super::board::Ready {
                    partition: self.p,
                    instance: rec.instance.id.clone(),
                    scheduled,
                };
                self.fx.offers.push((queue, ready));
            }
        }
        if rec.instance.status.is_final() {
            self.finish(rec)?;
        }
        Ok(())
    }

    /// An event the instance produces: to the outbox, on the topic its type maps to.
    fn produce(&mut self, rec: &InstanceRecord, mut event: Event) -> Result<()> {
        if self.cfg.event_source != "/flowbroker/{workflowId}" {
            event.source = lifecycle::source_of(&self.cfg.event_source, &rec.instance.workflow_id);
        }
        let cfg = self.cfg;
        let topic = cfg
            .kafka
            .topics
            .get(&event.event_type)
            .unwrap_or(&cfg.kafka.output_topic);
        let key = index::kafka_key(&rec.instance);
        if let Some(t) = &rec.trace {
            t.stamp(&mut event);
        }
        if self.spans {
            self.sent_span(rec, &event, topic, false);
        }
        self.outbox_event(topic, &key, &event)
    }

    /// A function call: kept in `Calls` and handed to the invoker after the commit, or failed
    /// back to the instance when its resource is not a URL the broker can call.
    fn invoke(&mut self, rec: &InstanceRecord, c: Invocation) -> Result<()> {
        let id = rec.instance.id.clone();
        let Some(url) = self.resolve(&c.function, &c.resource) else {
            let (function, resource) = (&c.function, &c.resource);
            let error = ErrorInfo::new(
                "FunctionNotConfigured",
                format!(
                    "function {function:?} has resource {resource:?}, which is not a plain \
                     http(s) URL; map {function:?} to a URL in the [functions] table of the \
                     broker config (or FLOWBROKER_FUNCTIONS)"
                ),
            );
            self.queue(&id, Input::ActionFailed { key: c.key, error });
            return Ok(());
        };
        let trace = rec.trace.as_ref();
        let call = Call {
            instance: id,
            workflow: rec.instance.workflow_id.clone(),
            traceparent: trace.map(|t| t.traceparent(t.call_span(&c.key, c.attempt))),
            tracestate: trace.and_then(|t| t.state.clone()),
            parent_span: trace.map(|t| match &rec.instance.activity {
                // a durable function's invocations hang under its instance
                crate::engine::Activity::Durable { .. } => t.span_id,
                _ => t.state_span(&rec.instance.visit_key()),
            }),
            key: c.key,
            function: c.function,
            url,
            parameters: c.parameters,
            attempt: c.attempt,
            timeout_secs: c.timeout_secs,
            stale_on_takeover: c.stale_on_takeover,
        };
        self.tx.write(&CallOf(&call.key), &call)?;
        self.fx.calls.push(call);
        Ok(())
    }

    /// A child instance: created here when its id is of this partition, else sent to its own
    /// (an SWF child run, started there and refused back here).
    fn start_child(
        &mut self,
        rec: &InstanceRecord,
        child: String,
        workflow_id: String,
        input: Value,
        wait: bool,
    ) -> Result<()> {
        let id = rec.instance.id.clone();
        if !self.is_here(&child) {
            let p = self.parts.of_instance(&child).unwrap_or(self.p);
            return self.send(p, |source| Work::Start {
                id: child,
                workflow: workflow_id,
                input,
                source,
                trace: None,
                parent: Some(id),
            });
        }
        match self.reg.current(&workflow_id).cloned() {
            Some(wf) => {
                let parent = Parent {
                    id: id.clone(),
                    wait,
                    // an SWF run inherits no definitions from the run it continues
                    lineage: if wf.id == crate::swf::EXECUTIONS {
                        Vec::new()
                    } else {
                        std::iter::once((rec.instance.workflow_id.clone(), rec.version.clone()))
                            .chain(rec.lineage.iter().cloned())
                            .collect()
                    },
                    trace: rec.trace.clone(),
                };
                if let Err(e) = self.create(&child, &wf, input, vec![], Some(parent), None)? {
                    if wait {
                        let error = ErrorInfo::new("SubflowStartFailed", e.to_string());
                        self.queue(&id, Input::ChildFailed { id: child, error });
                    }
                }
            }
            None if wait => {
                let error = ErrorInfo::new(
                    "SubflowNotFound",
                    format!("no workflow with id {workflow_id:?} is deployed"),
                );
                self.queue(&id, Input::ChildFailed { id: child, error });
            }
            None => {
                tracing::warn!(instance = %id, workflow = %workflow_id, "subflow not deployed; not started")
            }
        }
        Ok(())
    }

    /// The instance completed or was terminated with `output`: its lifecycle event, and its
    /// parent told when it waits (the output is copied only then).
    fn ended(&mut self, rec: &InstanceRecord, how: Lifecycle, output: Value) -> Result<()> {
        let terminated = how == Lifecycle::Terminated;
        let told = rec.wait && rec.parent.is_some();
        let (event, parent) = if told {
            (output.clone(), Some(output))
        } else {
            (output, None)
        };
        self.lifecycle(rec, how, Some(("output", event)))?;
        if let Some(output) = parent {
            let id = rec.instance.id.clone();
            self.notify_parent(
                rec,
                Input::ChildCompleted {
                    id,
                    output,
                    terminated,
                },
            );
        }
        Ok(())
    }

    fn notify_parent(&mut self, rec: &InstanceRecord, input: Input) {
        if let (Some(parent), true) = (&rec.parent, rec.wait) {
            self.queue(&parent.clone(), input);
        }
    }

    /// A finished instance waits for nothing: its timers and buffered events go, and it is
    /// remembered for retention.
    fn finish(&mut self, rec: &InstanceRecord) -> Result<()> {
        self.tx
            .write(&At::<Finished>::new(self.now, &rec.instance.id), &())?;
        self.added.finished += 1;
        for t in &rec.instance.timers {
            self.disarm(t)?;
        }
        if !self.may_have_buffered()? {
            return Ok(());
        }
        let prefix = BufferedAt::instance_prefix(&rec.instance.id);
        for (k, b) in self.tx.scan::<BufferedAt>(&prefix)? {
            self.delete_buffered(&BufferedAt::found(k), &b)?;
            self.fx.stats.push(Stat::BufferDropped);
        }
        Ok(())
    }

    /// Queues buffered events the instance now waits for.
    fn offer_buffered(
        &mut self,
        def: &crate::definition::Definition,
        inst: &Instance,
    ) -> Result<()> {
        let waiting = engine::waits_for(def, inst);
        if waiting.is_empty() || !self.may_have_buffered()? {
            return Ok(());
        }
        let queued: Vec<&str> = self
            .queue
            .iter()
            .filter_map(|w| w.buffered.as_ref().map(BufferedAt::as_str))
            .collect();
        let mut offers = Vec::new();
        let prefix = BufferedAt::instance_prefix(&inst.id);
        for (k, b) in self.tx.scan::<BufferedAt>(&prefix)? {
            if queued.contains(&k.as_str()) {
                continue;
            }
            let wanted = def.workflow.events.iter().any(|ed| {
                ed.source.as_deref() == Some(b.event.source.as_str())
                    && ed.ce_type() == b.event.event_type
                    && waiting.contains(&ed.name)
                    && engine::correlates(def, inst, &ed.name, &b.event)
            });
            if wanted {
                offers.push(Queued {
                    instance: inst.id.clone(),
                    input: Input::Event { event: b.event },
                    buffered: Some(BufferedAt::found(k)),
                });
                break; // one at a time: the first may change what the instance waits for
            }
        }
        self.queue.extend(offers);
        Ok(())
    }
}

/// Debug builds: a record kept decoded is what decoding the stored bytes gives (`broker::hot`
/// rests on it), checked when it is kept and when it is used.
#[cfg(debug_assertions)]
fn same_as_decoded(id: &str, stored: &[u8], kept: &InstanceRecord) {
    let decoded: InstanceRecord =
        Txn::decode_entry(&InstanceOf(id), stored).expect("a kept record's bytes decode");
    assert!(
        decoded == *kept,
        "instance {id}: the record kept decoded differs from decoding its bytes"
    );
}

/// An [`Action::Invoke`]'s fields, for [`Batch::invoke`].
struct Invocation {
    key: String,
    function: String,
    resource: String,
    parameters: Value,
    attempt: u32,
    timeout_secs: Option<u64>,
    stale_on_takeover: bool,
}
