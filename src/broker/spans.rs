//! The spans an applied step finishes (built only when spans are exported, docs/broker.md
//! "Tracing"): the visit of the state it left, the states it passed through, the instance
//! when it ended; and a producer span for each event it sends. Function calls' spans are the
//! invoker's, which times the request (`crate::invoke`).
//!
//! A span is finished when what it stands for is: a state visit when the instance leaves the
//! state (its start is kept in the instance record), the instance when it ends. Ids come from
//! the instance's [`TraceContext`](crate::trace::TraceContext): a state visit's span is the
//! parent of the calls it makes and the events it sends, and it is the instance span's child.
//! A durable function has no states: each of its operations is a span when it ends (under its
//! parent CONTEXT's), and its invocations are calls under the instance.

use super::batch::{Batch, Before};
use super::records::InstanceRecord;
use crate::definition::Definition;
use crate::durable::wire::{OpStatus, OpType};
use crate::engine::durable::Run;
use crate::engine::{Activity, Event, Instance, Status};
use crate::trace::span::{key, SpanKind, SpanRecord};
use crate::trace::TraceContext;

impl Batch<'_, '_> {
    /// The spans the step from `before` to `after` finished; `entered` are the states it
    /// entered, in order (visits `before.visit + 1 ..= after.visit`). `rec` is the record
    /// around the instance (its own instance already taken by the engine).
    pub(super) fn step_spans(
        &mut self,
        def: &Definition,
        rec: &InstanceRecord,
        before: &Before,
        after: &Instance,
        entered: &[String],
    ) {
        let Some(t) = &rec.trace else {
            return;
        };
        let now = self.now;
        let ended = after.status.is_final() && !before.status.is_final();
        if let Activity::Durable { durable } = &after.activity {
            self.operation_spans(t, rec, after, durable);
        } else {
            self.visit_spans(t, def, (rec, before, after), entered, ended);
        }
        if ended {
            let mut s = t
                .instance_record(&after.workflow_id, (rec.created, now))
                .attr(key::STATUS, after.status.as_str());
            s = with_ids(s, after, &rec.version);
            if let Some(p) = &rec.parent {
                s = s.attr(key::PARENT_INSTANCE, p.as_str());
            }
            if after.status == Status::Failed {
                s = s.failed(failure(after));
            }
            self.fx.spans.push(s);
        }
    }

    /// The spans of the state visits a step of a workflow or machine finished.
    fn visit_spans(
        &mut self,
        t: &TraceContext,
        def: &Definition,
        (rec, before, after): (&InstanceRecord, &Before, &Instance),
        entered: &[String],
        ended: bool,
    ) {
        let now = self.now;
        let mut visits: Vec<(u64, &str, chrono::DateTime<chrono::Utc>)> = Vec::new();
        // the state it was in, left now (or ended with the instance)
        if let Some(state) = before.state.as_deref() {
            if before.visit > 0 && (!entered.is_empty() || ended) {
                visits.push((before.visit, state, before.since));
            }
        }
        // the states it passed through; the last one stays open unless the instance ended
        for (i, state) in entered.iter().enumerate() {
            if i + 1 < entered.len() || ended {
                visits.push((before.visit + 1 + i as u64, state, now));
            }
        }
        let last = visits.len();
        for (n, (visit, state, since)) in visits.into_iter().enumerate() {
            let span = t.state_span(&after.key_of_visit(visit));
            let kind = def
                .workflow
                .state(state)
                .map(|s| s.common().kind.to_string())
                .unwrap_or_default();
            let mut s = t
                .record(
                    state,
                    SpanKind::Internal,
                    (span, Some(t.span_id)),
                    (since, now),
                )
                .attr(key::STATE, state)
                .attr(key::STATE_TYPE, kind)
                .attr(key::VISIT, visit as i64);
            s = with_ids(s, after, &rec.version);
            if n + 1 == last && ended && after.status == Status::Failed {
                s = s.failed(failure(after));
            }
            self.fx.spans.push(s);
        }
    }

    /// A durable execution's operations that ended in this step (their end is now), one
    /// span each from its start to its end, under its parent CONTEXT's span or the
    /// instance's. The EXECUTION operation is the instance span itself.
    fn operation_spans(
        &mut self,
        t: &TraceContext,
        rec: &InstanceRecord,
        after: &Instance,
        run: &Run,
    ) {
        for o in &run.ops {
            let op = &o.op;
            if op.op_type == OpType::Execution
                || !op.status.is_final()
                // (operations keep whole milliseconds: `engine::durable::apply`)
                || op.end_timestamp != Some(crate::time::whole_millis(self.now))
            {
                continue;
            }
            let parent = op
                .parent_id
                .as_deref()
                .map_or(t.span_id, |p| t.operation_span(p));
            let name = op.name.clone().unwrap_or_else(|| op.id.clone());
            let status = serde_json::to_value(op.status).unwrap_or_default();
            let kind = serde_json::to_value(op.op_type).unwrap_or_default();
            let mut s = t
                .record(
                    name,
                    SpanKind::Internal,
                    (t.operation_span(&op.id), Some(parent)),
                    (op.start_timestamp, self.now),
                )
                .attr(key::OPERATION, op.id.as_str())
                .attr(key::OPERATION_TYPE, kind.as_str().unwrap_or_default())
                .attr(key::OPERATION_STATUS, status.as_str().unwrap_or_default());
            if let Some(sub) = &op.sub_type {
                s = s.attr(key::OPERATION_SUBTYPE, sub.as_str());
            }
            if !matches!(op.status, OpStatus::Succeeded) {
                s = s.failed(format!(
                    "{} {:?}",
                    kind.as_str().unwrap_or_default(),
                    op.status
                ));
            }
            s = with_ids(s, after, &rec.version);
            self.fx.spans.push(s);
        }
    }

    /// The producer span of an event the instance sends to `topic`: the child of the state
    /// visit that sends it, or of the instance for its lifecycle events. Its id is the one the
    /// event's `traceparent` carries, so a consumer's spans hang under it.
    pub(super) fn sent_span(
        &mut self,
        rec: &InstanceRecord,
        event: &Event,
        topic: &str,
        lifecycle: bool,
    ) {
        let Some(t) = &rec.trace else {
            return;
        };
        let parent = if lifecycle || rec.instance.visit == 0 {
            t.span_id
        } else {
            t.state_span(&rec.instance.visit_key())
        };
        let s = t
            .record(
                format!("{topic} send"),
                SpanKind::Producer,
                (t.span_of("event", &event.id), Some(parent)),
                (self.now, self.now),
            )
            .attr(key::MESSAGING_SYSTEM, "kafka")
            .attr(key::DESTINATION, topic)
            .attr(key::EVENT_ID, event.id.as_str())
            .attr(key::EVENT_TYPE, event.event_type.as_str())
            .attr(key::EVENT_SOURCE, event.source.as_str());
        let s = with_ids(s, &rec.instance, &rec.version);
        self.fx.spans.push(s);
    }
}

/// The instance and workflow ids every span of an instance carries.
fn with_ids(s: SpanRecord, inst: &Instance, version: &str) -> SpanRecord {
    s.attr(key::INSTANCE, inst.id.as_str())
        .attr(key::WORKFLOW, inst.workflow_id.as_str())
        .attr(key::VERSION, version)
}

fn failure(inst: &Instance) -> String {
    inst.error
        .as_ref()
        .map(|e| format!("{}: {}", e.name, e.message))
        .unwrap_or_else(|| "failed".into())
}
