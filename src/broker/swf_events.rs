//! Amazon SWF executions started and signalled by CloudEvent (docs/swf.md "Events"):
//! - `flowbroker.swf.start` with `swfdomain` and `swfworkflowid` starts a run; its data holds
//!   `StartWorkflowExecution`'s other members (`workflowType` at least). It goes to the
//!   domain's partition, which reads the registry there, resolves the start, and sends it to
//!   the workflow id's partition. The run id is derived from the event's source and id, so a
//!   redelivered start starts nothing new.
//! - `flowbroker.swf.signal` with `swfdomain`, `swfworkflowid`, `swfsignal` (and optionally
//!   `swfrunid`) signals the open run (or that run); its data is the signal's input (text as
//!   it is, other JSON as its text).
//!
//! What cannot be done (an unknown domain or type, an open run already, no open run) is the
//! event's rejection, so it is dead-lettered with the reason.

use super::batch::{Batch, Result};
use super::index::open_run;
use super::router::Routed;
use crate::cluster::partition::{PartitionId, Partitions};
use crate::cluster::work::{Source, Work};
use crate::engine::swf::{domain_of, start_attributes, Call};
use crate::engine::{Event, Input};
use crate::swf::registry::{TypeId, TypeKind};
use crate::swf::RunKey;
use serde_json::Value;

pub const START: &str = "flowbroker.swf.start";
pub const SIGNAL: &str = "flowbroker.swf.signal";

fn run_key(event: &Event) -> Option<RunKey> {
    Some(RunKey {
        domain: event.attribute("swfdomain")?,
        workflow_id: event.attribute("swfworkflowid")?,
    })
}

/// The partition an SWF event goes to, if it is one: the domain's for a start, the
/// workflow id's for a signal. An event missing its attributes goes to the workflow id's
/// partition of nothing: the domain `""`'s, where it is rejected with the reason.
pub fn target(parts: Partitions, event: &Event) -> Option<PartitionId> {
    match event.event_type.as_str() {
        START => {
            let domain = event.attribute("swfdomain").unwrap_or_default();
            Some(crate::swf::domain_instance(parts, &domain).partition())
        }
        SIGNAL => Some(match run_key(event) {
            Some(k) => k.partition(parts),
            None => crate::swf::domain_instance(parts, "").partition(),
        }),
        _ => None,
    }
}

impl Batch<'_, '_> {
    /// Applies an SWF event on this partition; false when the event is not one.
    pub(super) fn swf_event(&mut self, event: &Event, r: &mut Routed) -> Result<bool> {
        let outcome = match event.event_type.as_str() {
            START => self.swf_start(event, r)?,
            SIGNAL => self.swf_signal(event, r)?,
            _ => return Ok(false),
        };
        if let Err(why) = outcome {
            r.rejected = Some(why);
        }
        Ok(true)
    }

    fn swf_start(
        &mut self,
        event: &Event,
        r: &mut Routed,
    ) -> Result<std::result::Result<(), String>> {
        let Some(key) = run_key(event) else {
            return Ok(Err(format!(
                "a {START} event needs the attributes swfdomain and swfworkflowid"
            )));
        };
        let domain_id = crate::swf::domain_instance(self.parts, &key.domain).to_string();
        let Some(domain) = self
            .load(&domain_id)?
            .and_then(|rec| domain_of(&rec.instance).cloned())
        else {
            return Ok(Err(format!("Unknown domain: {}", key.domain)));
        };
        let req = match &event.data {
            Some(Value::Object(m)) => m.clone(),
            _ => {
                return Ok(Err(format!(
                    "a {START} event's data is an object with StartWorkflowExecution's members \
                     (workflowType at least)"
                )))
            }
        };
        let Some(type_id) = req.get("workflowType").and_then(TypeId::from_wire) else {
            return Ok(Err(
                "data.workflowType with a name and a version is required".into(),
            ));
        };
        let attrs = domain
            .usable(TypeKind::Workflow, &type_id)
            .map_err(crate::engine::swf::SwfError::from)
            .and_then(|t| start_attributes(&req, t, &key.domain, &key.workflow_id));
        let mut attrs = match attrs {
            Ok(a) => a,
            Err(e) => return Ok(Err(e.to_string())),
        };
        attrs["partitions"] = serde_json::json!(self.parts.count());
        let to = key.partition(self.parts);
        if to == self.p {
            return Ok(self
                .start_resolved(event, &key, attrs)?
                .map(|id| r.started.push(id)));
        }
        self.send(to, |source| Work::SwfStart {
            event: event.clone(),
            attrs,
            source,
        })?;
        r.forwarded.push(to.0);
        Ok(Ok(()))
    }

    /// A start resolved on the domain's partition, applied on the workflow id's; what it
    /// cannot start (the workflow id has an open run) is dead-lettered here.
    pub(super) fn swf_start_here(
        &mut self,
        event: &Event,
        attrs: Value,
        source: &Source,
    ) -> Result<()> {
        let Some(key) = run_key(event) else {
            return Ok(());
        };
        if let Err(why) = self.start_resolved(event, &key, attrs)? {
            tracing::info!(event = %event.id, reason = %why, "SWF start event not started");
            if self.cfg.kafka.dlq_unmatched {
                let payload = serde_json::to_vec(event).unwrap_or_default();
                self.dead_letter(None, Some(payload), vec![], "unmatched", &why, source)?;
            }
        }
        Ok(())
    }

    /// Starts the run a start event names (its run id derived from the event's source and
    /// id): its instance id, or why not.
    fn start_resolved(
        &mut self,
        event: &Event,
        key: &RunKey,
        attrs: Value,
    ) -> Result<std::result::Result<String, String>> {
        let seed = format!("{}\u{1f}{}", event.source, event.id);
        let uuid = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, seed.as_bytes());
        let id = key.instance(self.parts, uuid).to_string();
        let Some(wf) = self.reg.current(crate::swf::EXECUTIONS).cloned() else {
            return Ok(Err("the SWF definitions are not built in".into()));
        };
        let upstream = crate::trace::Upstream::of_event(event);
        Ok(
            match self.create(&id, &wf, attrs, vec![], None, upstream)? {
                Ok(_) => {
                    self.drain()?;
                    Ok(id)
                }
                Err(e) => Err(e.to_string()),
            },
        )
    }

    /// An SWF call for run `run_id` of `key` (its open run when `None`) from instance `from`:
    /// applied, or `failed` goes back to `from` when no such run takes it.
    pub(super) fn call_run(
        &mut self,
        key: &RunKey,
        run_id: Option<&str>,
        call: Call,
        from: &str,
        failed: Input,
    ) -> Result<()> {
        let id = match run_id {
            Some(run) => uuid::Uuid::parse_str(run)
                .ok()
                .map(|u| key.instance(self.parts, u).to_string()),
            None => self.tx.read(&open_run(key))?,
        };
        let took = match id {
            Some(id) => self.apply_now(&id, Input::Swf { call })?.is_ok(),
            None => false,
        };
        if !took {
            self.send_input(from, failed)?;
        }
        self.drain()
    }

    fn swf_signal(
        &mut self,
        event: &Event,
        r: &mut Routed,
    ) -> Result<std::result::Result<(), String>> {
        let (Some(key), Some(name)) = (run_key(event), event.attribute("swfsignal")) else {
            return Ok(Err(format!(
                "a {SIGNAL} event needs the attributes swfdomain, swfworkflowid and swfsignal"
            )));
        };
        let id = match event.attribute("swfrunid") {
            Some(run) => match uuid::Uuid::parse_str(&run) {
                Ok(u) => Some(key.instance(self.parts, u).to_string()),
                Err(_) => None,
            },
            None => self.tx.read(&open_run(&key))?,
        };
        let Some(id) = id else {
            return Ok(Err(format!(
                "Unknown execution: no open run of workflow id {:?} in domain {:?}",
                key.workflow_id, key.domain
            )));
        };
        let input = match &event.data {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.to_string()),
        };
        let call = Call::Signal { name, input };
        match self.apply_now(&id, Input::Swf { call })? {
            Ok(()) => {
                self.drain()?;
                r.delivered.push(id);
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(format!("the run {id} took no signal: {e}"))),
        }
    }
}
