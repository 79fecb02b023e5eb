//! Events addressed by an attribute rather than correlated (docs/asl.md, README "Starting by
//! event"):
//! - an event of type [`START_EVENT`] with a `workflowid` attribute starts that workflow
//!   (either language) with the event's data as input; the instance id is derived from the
//!   event's source and id, so a redelivered start event starts nothing new;
//! - an event with a `tasktoken` attribute answers the ASL task that handed the token out:
//!   it goes to the token's instance;
//! - an event with a `callbackid` attribute answers a durable function's callback: it goes
//!   to the instance the callback id names.

use super::answers::token_target;
use super::batch::{Batch, Result};
use super::registry::Registry;
use super::router::{start_id, Routed};
use super::Stat;
use crate::cluster::partition::{PartitionId, Partitions};
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
