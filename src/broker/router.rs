//! Correlation: where a consumed CloudEvent goes (SEMANTICS.md "Events and correlation").
//!
//! 1. An event with a `workflowinstanceid` attribute goes to that instance only (buffered if
//!    it does not wait for it yet).
//! 2. Otherwise, for each workflow with a matching event definition (an index on
//!    `(source, type)`), the event's correlation key is computed and looked up in `Waits`:
//!    every instance waiting for that definition under that key (or with values not pinned
//!    yet, or with expression values its attributes equal: `index`) gets it.
//! 3. If none waits, the active instance for that key (`Active`) gets it buffered.
//! 4. If there is none and the definition starts the workflow, a new instance is created (or
//!    the pending all-events start for that key grows).
//!
//! Before 2: an event with a `tasktoken` attribute goes to the token's instance, and a
//! `flowbroker.workflow.start` event starts the workflow it names (`broker::addressed`).
//!
//! Every step is a point or prefix lookup; nothing scans instances.

use super::answers::token_target;
use super::batch::{Batch, Result};
use super::compound::{ActiveOf, JoinOf, WaitsOf};
use super::index;
use super::records::TimerEntry;
use super::registry::event_start;
use super::Stat;
use crate::cluster::partition::{InstanceId, PartitionId};
use crate::cluster::work::Work;
use crate::definition::Body;
use crate::engine::{EngineError, Event, Input};
use crate::store::{Entry as _, SEP};
use std::collections::BTreeSet;

/// What happened to an event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Routed {
    /// Instances the event was applied to.
    pub delivered: Vec<String>,
    /// Instances it was buffered for.
    pub buffered: Vec<String>,
    /// Instances it started.
    pub started: Vec<String>,
    /// Pending all-events starts it joined (`workflow/key`).
    pub joined: Vec<String>,
    /// Held for an instance of that key that has not started yet (`workflow/event/key`).
    pub held: Vec<String>,
    /// Why it was rejected, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
    /// State partitions owned by other brokers it was sent to (they apply it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forwarded: Vec<u16>,
}

impl Routed {
    /// The answer for an event already consumed within the dedupe window.
    pub fn duplicate() -> Routed {
        Routed {
            delivered: vec![],
            buffered: vec![],
            started: vec![],
            joined: vec![],
            held: vec![],
            rejected: Some(
                "duplicate: an event with this source and id was already consumed".into(),
            ),
            forwarded: vec![],
        }
    }

    pub fn matched(&self) -> bool {
        !(self.delivered.is_empty()
            && self.buffered.is_empty()
            && self.started.is_empty()
            && self.joined.is_empty()
            && self.held.is_empty()
            && self.forwarded.is_empty())
    }
}

impl Batch<'_, '_> {
    /// Routes one event on this partition and applies everything that follows from it:
    /// the event's `workflowinstanceid` instance when it lives here, else every matching
    /// workflow whose key for the event this partition owns (`only`: just that workflow).
    /// Instances of other partitions found in the index get the event as a message, except
    /// those with values not pinned yet when the event was `returned` by one of them.
    pub fn route(
        &mut self,
        mut event: Event,
        only: Option<&str>,
        returned: bool,
    ) -> Result<Routed> {
        let mut r = Routed {
            delivered: vec![],
            buffered: vec![],
            started: vec![],
            joined: vec![],
            held: vec![],
            rejected: None,
            forwarded: vec![],
        };
        if self.swf_event(&event, &mut r)? {
            // an SWF start or signal (`swf_events`)
        } else if let Some(target) = event.attribute("workflowinstanceid") {
            self.route_to_instance(&target, event, &mut r)?;
        } else if let Some(target) = token_target(&event) {
            match target {
                Ok(inst) => self.route_to_instance(&inst, event, &mut r)?,
                Err(why) => r.rejected = Some(why),
            }
        } else {
            if only.is_none() {
                self.start_addressed(&event, &mut r)?;
            }
            // (the registry outlives the batch: its matches are borrowed, not copied)
            let reg = self.reg;
            let matches = reg.matching(&event.source, &event.event_type);
            let mut seen = BTreeSet::new();
            for (i, m) in matches.iter().enumerate() {
                if only.is_some_and(|w| w != m.workflow) {
                    continue;
                }
                let Some(ed) = m.def.workflow.event(&m.event) else {
                    continue;
                };
                let Some(values) = index::EventValues::of(ed, &event) else {
                    continue;
                };
                let k = values.key();
                if self.parts.of_key(&m.workflow, &k) != self.p {
                    continue; // another partition owns this key
                }
                let mut got = false;
                for wk in values.wait_keys() {
                    let unpinned = index::has_any(&wk);
                    if !super::unpinned::may_wait(
                        self.tx,
                        self.kept.heads,
                        &m.workflow,
                        &m.event,
                        &wk,
                    )? {
                        continue; // nobody waits under this unpinned key here
                    }
                    let p = WaitsOf::prefix(&m.workflow, &m.event, &wk);
                    for (entry, ()) in self.tx.scan::<WaitsOf>(&p)? {
                        let inst = entry.rsplit(SEP).next().unwrap_or_default().to_string();
                        if seen.contains(&inst) {
                            continue;
                        }
                        if !self.is_here(&inst) {
                            if returned && unpinned {
                                continue;
                            }
                            self.deliver_elsewhere(&inst, &event, unpinned)?;
                            seen.insert(inst.clone());
                            r.delivered.push(inst);
                            got = true;
                            continue;
                        }
                        let input = Input::Event {
                            event: event.clone(),
                        };
                        match self.apply_now(&inst, input)? {
                            Ok(()) => {
                                seen.insert(inst.clone());
                                r.delivered.push(inst);
                                got = true;
                            }
                            Err(e) => {
                                tracing::debug!(instance = %inst, event = %event.id,
                                    error = %e, "a waiting instance refused the event");
                                self.fx.stats.push(Stat::Refused);
                            }
                        }
                    }
                }
                if got {
                    continue;
                }
                let active = index::keyed(ed).then(|| ActiveOf::new(&m.workflow, &m.event, &k));
                if let Some(a) = &active {
                    if let Some(inst) = self.tx.read(a)? {
                        if seen.insert(inst.clone()) {
                            if self.is_here(&inst) {
                                tracing::debug!(instance = %inst, event = %event.id,
                                    "buffered for the active instance of its key");
                                let ttl = self.ttl(ed);
                                self.buffer(&inst, event.clone(), ttl)?;
                            } else {
                                self.deliver_elsewhere(&inst, &event, false)?;
                            }
                            r.buffered.push(inst);
                        }
                        continue;
                    }
                }
                // the last match takes the event itself (one match is the usual case)
                let this = match i + 1 == matches.len() {
                    true => std::mem::take(&mut event),
                    false => event.clone(),
                };
                let not_started = self.maybe_start(&m.workflow, &m.event, &k, this, &mut r)?;
                if let (Some(this), Some(a)) = (not_started, &active) {
                    // no instance has this key yet: hold the event for the one that will
                    let ttl = self.ttl(ed);
                    self.hold(a, this, ttl)?;
                    r.held.push(format!("{}/{}/{k}", m.workflow, m.event));
                }
            }
        }
        self.drain()?;
        Ok(r)
    }

    /// Sends `event` to instance `inst` of another partition, which applies it, or buffers it
    /// (an active instance not waiting for it yet), or, for a match as an instance with
    /// nothing pinned (`unpinned`) that no longer takes it, hands it back here.
    fn deliver_elsewhere(&mut self, inst: &str, event: &Event, unpinned: bool) -> Result<()> {
        let Ok(to) = self.parts.of_instance(inst) else {
            return Ok(());
        };
        let (instance, event) = (inst.to_string(), event.clone());
        self.send(to, |source| Work::Deliver {
            instance,
            event,
            unpinned,
            source,
        })
    }

    pub(super) fn route_to_instance(
        &mut self,
        target: &str,
        event: Event,
        r: &mut Routed,
    ) -> Result<()> {
        let rec = if self.is_here(target) {
            self.load(target)?
        } else {
            None
        };
        let Some(rec) = rec else {
            r.rejected = Some(format!("no instance {target:?} (workflowinstanceid)"));
            return Ok(());
        };
        let input = Input::Event {
            event: event.clone(),
        };
        match self.apply_now(target, input)? {
            Ok(()) => r.delivered.push(target.to_string()),
            Err(EngineError::NotWaiting { .. }) => {
                let d = self
                    .reg
                    .effective(&rec.instance.workflow_id, &rec.version, &rec.lineage);
                let ed = d.as_ref().and_then(|d| {
                    d.workflow.events.iter().find(|e| {
                        e.source.as_deref() == Some(event.source.as_str())
                            && e.ce_type() == event.event_type
                    })
                });
                match ed {
                    _ if d
                        .as_ref()
                        .is_some_and(|d| matches!(d.body, Body::Durable(_))) =>
                    {
                        r.rejected = Some(format!(
                            "instance {target} runs a durable function, which takes only \
                             callback answers ({}, {}, {} with a callbackid attribute)",
                            crate::engine::durable::CALLBACK_SUCCESS,
                            crate::engine::durable::CALLBACK_FAILURE,
                            crate::engine::durable::CALLBACK_HEARTBEAT
                        ))
                    }
                    _ if d
                        .as_ref()
                        .is_some_and(|d| matches!(d.body, Body::Machine(_))) =>
                    {
                        r.rejected = Some(format!(
                            "instance {target} runs an ASL machine, which takes only task \
                             token answers ({}, {}, {} with a tasktoken attribute)",
                            crate::engine::asl::TASK_SUCCESS,
                            crate::engine::asl::TASK_FAILURE,
                            crate::engine::asl::TASK_HEARTBEAT
                        ))
                    }
                    Some(ed) => {
                        let ttl = self.ttl(ed);
                        self.buffer(target, event, ttl)?;
                        r.buffered.push(target.to_string());
                    }
                    None => {
                        r.rejected = Some(format!(
                            "workflow {} defines no event with source {:?} and type {:?}",
                            rec.instance.workflow_id, event.source, event.event_type
                        ))
                    }
                }
            }
            Err(e) => r.rejected = Some(e.to_string()),
        }
        Ok(())
    }

    /// Starts `workflow` on event `name` if its current version starts on it (or takes the
    /// event into a pending all-events start, or refuses it); gives the event back when that
    /// version does not start on it.
    fn maybe_start(
        &mut self,
        workflow: &str,
        name: &str,
        k: &str,
        event: Event,
        r: &mut Routed,
    ) -> Result<Option<Event>> {
        let Some(wf) = self.reg.current(workflow).cloned() else {
            return Ok(Some(event));
        };
        let Some(start) = event_start(&wf.def) else {
            return Ok(Some(event));
        };
        if !start.names.contains(&name) {
            return Ok(Some(event));
        }
        if let Some(why) = self.start_refused(&wf) {
            self.fx.stats.push(Stat::StartRejected(wf.id.clone()));
            r.rejected = Some(why);
            return Ok(None);
        }
        let events = if start.all {
            let jk = JoinOf::new(workflow, k);
            let mut join = self.tx.read(&jk)?.unwrap_or_default();
            if !join.names.iter().any(|n| n == name) {
                join.names.push(name.to_string());
                join.events.push(event);
            }
            let complete = start
                .names
                .iter()
                .all(|n| join.names.iter().any(|j| j == n));
            let timer = format!("join{SEP}{}", jk.key());
            if !complete {
                self.tx.write(&jk, &join)?;
                if let Some(gap) = start.timeout {
                    let due = gap.after(self.now);
                    let entry = TimerEntry::Join {
                        workflow: workflow.to_string(),
                        key: k.to_string(),
                    };
                    self.arm(&timer, due, &entry)?;
                }
                r.joined.push(format!("{workflow}/{k}"));
                return Ok(None);
            }
            self.tx.unset(&jk); // just read (or seen absent)
            self.disarm(&timer)?;
            join.events
        } else {
            vec![event]
        };
        let id = start_id(self.p, workflow, &events);
        match self.create(&id, &wf, serde_json::json!({}), events, None, None)? {
            Ok(true) => r.started.push(id),
            Ok(false) => r.delivered.push(id),
            Err(e) => r.rejected = Some(e.to_string()),
        }
        Ok(None)
    }

    /// The gap timeout of a pending all-events start expired: drop it.
    pub fn expire_join(&mut self, workflow: &str, k: &str) -> Result<()> {
        if self.tx.erase(&JoinOf::new(workflow, k))? {
            tracing::info!(
                workflow,
                key = k,
                "pending all-events start timed out; dropped"
            );
            self.fx.stats.push(Stat::JoinExpired);
        }
        Ok(())
    }

    /// The buffer TTL of an event definition: `metadata.bufferTtl`, else the broker's.
    fn ttl(&self, ed: &crate::model::EventDef) -> chrono::Duration {
        ed.buffer_ttl
            .map(|d| d.after(self.now) - self.now)
            .unwrap_or(self.windows.buffer_ttl)
    }
}

/// Instances started by events get ids derived from the events (on the partition of their
/// key), so the same start event delivered twice (Kafka and HTTP, or a producer retry) starts
/// one instance.
pub(super) fn start_id(p: PartitionId, workflow: &str, events: &[Event]) -> String {
    let mut seed = workflow.to_string();
    for e in events {
        seed.push('\n');
        seed.push_str(&e.source);
        seed.push('\n');
        seed.push_str(&e.id);
    }
    InstanceId::derived(p, seed.as_bytes()).to_string()
}
