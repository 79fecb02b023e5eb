//! Events addressed by an attribute rather than correlated (docs/asl.md, README "Starting by
//! event"):
//! - an event of type [`START_EVENT`] with a `workflowid` attribute starts that workflow
//!   (either language) with the event's data as input; the instance id is derived from the
//!   event's source and id, so a redelivered start event starts nothing new;
//! - an event with a `tasktoken` attribute answers the ASL task that handed the token out:
//!   it goes to the token's instance;
//! - an event with a `callbackid` attribute answers a durable function's callback: it goes
//!   to the instance the callback id names.

use super::batch::{Batch, Result};
use super::registry::Registry;
use super::router::{start_id, Routed};
use super::Stat;
use crate::cluster::partition::{PartitionId, Partitions};
use crate::engine::asl::keys::token_instance;
use crate::engine::durable::CALLBACK_ATTR;
use crate::engine::Event;
use crate::store::key;

/// The event type that starts the workflow its `workflowid` attribute names.
pub const START_EVENT: &str = "flowbroker.workflow.start";

/// The workflow a start event names, if it is one.
pub fn start_of(event: &Event) -> Option<String> {
    (event.event_type == START_EVENT)
        .then(|| event.attribute("workflowid"))
        .flatten()
}

/// The key that places a start event's instance: its source and id.
fn start_key(event: &Event) -> String {
    key(&[&event.source, &event.id])
}

/// Whether an event is addressed to one instance by a task token or a callback id.
pub fn is_answer(event: &Event) -> bool {
    event.attribute("tasktoken").is_some() || event.attribute(CALLBACK_ATTR).is_some()
}

/// The instance a task token answer (or a callback answer) goes to: `Some(Err)` when the
/// token or callback id is not one flowbroker handed out.
pub fn token_target(event: &Event) -> Option<std::result::Result<String, String>> {
    if let Some(cb) = event.attribute(CALLBACK_ATTR) {
        return Some(
            crate::durable::arn::read_callback(&cb)
                .map(|(instance, _)| instance)
                .map_err(|e| {
                    format!(
                        "{e} (answer with the CallbackId the durable function's callback \
                         operation got)"
                    )
                }),
        );
    }
    let token = event.attribute("tasktoken")?;
    Some(token_instance(&token).map(str::to_string).ok_or_else(|| {
        format!(
            "tasktoken {token:?} is not a task token flowbroker handed out (they look like \
             {{instance}}/{{visit}}/t{{attempt}}; answer with the tasktoken attribute of the \
             flowbroker.task.requested event)"
        )
    }))
}

/// The partitions an addressed event goes to: the token's instance's, or the start key's;
/// `None` when the event is not addressed.
pub fn targets(reg: &Registry, parts: Partitions, event: &Event) -> Option<Vec<PartitionId>> {
    if let Some(t) = token_target(event) {
        return Some(
            t.ok()
                .and_then(|i| parts.of_instance(&i).ok())
                .into_iter()
                .collect(),
        );
    }
    let wf = start_of(event)?;
    reg.current(&wf)?;
    Some(vec![parts.of_key(&wf, &start_key(event))])
}

impl Batch<'_, '_> {
    /// Starts the workflow a start event names, on the partition its key belongs to.
    pub(super) fn start_addressed(&mut self, event: &Event, r: &mut Routed) -> Result<()> {
        let Some(workflow) = start_of(event) else {
            return Ok(());
        };
        let Some(wf) = self.reg.current(&workflow).cloned() else {
            r.rejected = Some(format!(
                "no workflow {workflow:?} is deployed (the workflowid attribute of a \
                 {START_EVENT} event names the workflow to start)"
            ));
            return Ok(());
        };
        if self.parts.of_key(&workflow, &start_key(event)) != self.p {
            return Ok(());
        }
        if let Some(why) = self.start_refused(&wf) {
            self.fx.stats.push(Stat::StartRejected(wf.id.clone()));
            r.rejected = Some(why);
            return Ok(());
        }
        let id = start_id(self.p, &workflow, std::slice::from_ref(event));
        let input = event.data.clone().unwrap_or(serde_json::json!({}));
        let upstream = crate::trace::Upstream::of_event(event);
        match self.create(&id, &wf, input, vec![], None, upstream)? {
            Ok(true) => r.started.push(id),
            Ok(false) => r.delivered.push(id),
            Err(e) => r.rejected = Some(e.to_string()),
        }
        Ok(())
    }
}
