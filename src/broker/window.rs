//! When a workflow may start: a scheduled start's `interval` window and `directInvoke`
//! (SEMANTICS.md "Schedules").
//!
//! - Outside its interval the start state is inactive: start events are rejected (counted).
//! - Direct starts (admin API) are refused when `directInvoke` is `exclusive`; with `allow`
//!   (the default when absent) they are accepted at any time, inside the window or not.
//! - A bare duration interval counts from the workflow's first deployment (the first time
//!   this broker deployed that workflow id, kept in the store across versions).

use super::batch::Batch;
use super::registry::Deployed;
use crate::model::{DirectInvoke, Schedule, StartKind};
use crate::store::{key, Entry, Table};
use crate::time::Written;
use chrono::{DateTime, Utc};
use std::borrow::Cow;

/// The schedule of a scheduled start, if the workflow has one.
pub fn schedule(d: &Deployed) -> Option<&Schedule> {
    let start = d.def.workflow.start_state()?.common().start?;
    match start.kind {
        StartKind::Scheduled => start.schedule.as_ref(),
        StartKind::Default => None,
    }
}

/// When a workflow id was first deployed (node scope, kept across versions).
pub struct FirstDeployed<'a>(pub &'a str);

impl FirstDeployed<'_> {
    /// The first part of every such key (the registry reads them all at start).
    pub const PREFIX: &'static str = "first_deployed";
}

impl Entry for FirstDeployed<'_> {
    const TABLE: Table = Table::Meta;
    type Value = DateTime<Utc>;

    fn key(&self) -> Cow<'_, str> {
        Cow::Owned(key(&[Self::PREFIX, self.0]))
    }
}

impl Batch<'_, '_> {
    fn anchor(&self, workflow: &str) -> DateTime<Utc> {
        self.reg.anchored(workflow).unwrap_or(self.now)
    }

    /// Why a start event may not start `wf` now: outside its interval.
    pub fn start_refused(&self, wf: &Deployed) -> Option<String> {
        let s = schedule(wf)?;
        let iv = s.interval.as_ref()?.get()?;
        let anchor = self.anchor(&wf.id);
        if iv.contains(anchor, self.now) {
            return None;
        }
        let (from, to) = iv.window(anchor);
        Some(format!(
            "workflow {} starts only between {} and {} (schedule interval {:?})",
            wf.id,
            from.to_rfc3339(),
            to.to_rfc3339(),
            s.interval.as_ref().map(Written::text).unwrap_or_default()
        ))
    }

    /// Why a direct (admin API) start of `wf` is refused now.
    pub fn direct_refused(&self, wf: &Deployed) -> Option<String> {
        direct_refusal(wf)
    }
}

/// Why a direct (admin API) start of `wf` is refused: `directInvoke: exclusive`.
pub fn direct_refusal(wf: &Deployed) -> Option<String> {
    let s = schedule(wf)?;
    match s.direct_invoke.unwrap_or(DirectInvoke::Allow) {
        DirectInvoke::Allow => None,
        DirectInvoke::Exclusive => Some(format!(
            "workflow {} starts only on its schedule (directInvoke: exclusive); \
             set directInvoke: allow to start it directly",
            wf.id
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_deployment_is_kept_under_the_name_stores_hold() {
        assert_eq!(
            FirstDeployed("orders").key(),
            format!("first_deployed{}orders", crate::store::SEP)
        );
        assert!(FirstDeployed("orders")
            .key()
            .starts_with(FirstDeployed::PREFIX));
    }
}
