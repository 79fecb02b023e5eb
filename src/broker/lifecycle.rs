//! Lifecycle events (`flowbroker.instance.<what>`): one per start and end of an instance, on
//! `kafka.lifecycle_topic`, through the outbox like every produced event (`Batch::lifecycle`
//! in `broker::effects` stamps and stores them).

use super::records::InstanceRecord;
use crate::engine::Event;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

/// What happened to an instance, as its lifecycle event's type names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    Started,
    Completed,
    Terminated,
    Failed,
    Cancelled,
}

impl Lifecycle {
    /// The last part of the event type.
    pub fn name(self) -> &'static str {
        match self {
            Lifecycle::Started => "started",
            Lifecycle::Completed => "completed",
            Lifecycle::Terminated => "terminated",
            Lifecycle::Failed => "failed",
            Lifecycle::Cancelled => "cancelled",
        }
    }

    /// The CloudEvents `type`.
    pub fn event_type(self) -> &'static str {
        match self {
            Lifecycle::Started => "flowbroker.instance.started",
            Lifecycle::Completed => "flowbroker.instance.completed",
            Lifecycle::Terminated => "flowbroker.instance.terminated",
            Lifecycle::Failed => "flowbroker.instance.failed",
            Lifecycle::Cancelled => "flowbroker.instance.cancelled",
        }
    }
}

/// The lifecycle event of `rec` (without its trace): id a UUID v5 of
/// `<instance id>/lifecycle/<what>` (one per instance and kind, so a consumer can drop a
/// second copy), `source` from `source` (the `event_source` setting, `{workflowId}` replaced),
/// `subject` the instance id, and data the instance's ids, version and status, then `extra`
/// (what it started with or ended with) and its parent.
pub fn event(
    source: &str,
    now: DateTime<Utc>,
    rec: &InstanceRecord,
    what: Lifecycle,
    extra: Option<(&'static str, Value)>,
) -> Event {
    let inst = &rec.instance;
    let mut data = Map::with_capacity(6);
    data.insert("instanceId".into(), Value::String(inst.id.clone()));
    data.insert("workflowId".into(), Value::String(inst.workflow_id.clone()));
    data.insert("version".into(), Value::String(rec.version.clone()));
    data.insert(
        "status".into(),
        serde_json::to_value(inst.status).unwrap_or(Value::Null),
    );
    if let Some((k, v)) = extra {
        data.insert(k.into(), v);
    }
    if let Some(p) = &rec.parent {
        data.insert("parentId".into(), Value::String(p.clone()));
    }
    let mut extensions = Map::with_capacity(4);
    extensions.insert("workflowid".into(), Value::String(inst.workflow_id.clone()));
    extensions.insert("workflowinstanceid".into(), Value::String(inst.id.clone()));
    let name = [inst.id.as_str(), "/lifecycle/", what.name()].concat();
    let id = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, name.as_bytes());
    Event {
        id: id
            .hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer())
            .to_owned(),
        source: source_of(source, &inst.workflow_id),
        event_type: what.event_type().to_owned(),
        time: Some(now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        datacontenttype: Some("application/json".into()),
        subject: Some(inst.id.clone()),
        data: Some(Value::Object(data)),
        extensions,
    }
}

/// `template` with every `{workflowId}` replaced by `workflow`. (A search for `{` by `memchr`
/// first: a search for the whole placeholder, as `str::replace` makes, costs more than the
/// rest of a short template's copy.)
pub fn source_of(template: &str, workflow: &str) -> String {
    const PLACE: &str = "{workflowId}";
    let mut out = String::with_capacity(template.len() + workflow.len());
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        let (before, from) = rest.split_at(i);
        out.push_str(before);
        if let Some(after) = from.strip_prefix(PLACE) {
            out.push_str(workflow);
            rest = after;
        } else {
            out.push('{');
            rest = &from[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(parent: Option<&str>) -> InstanceRecord {
        serde_json::from_value(json!({
            "instance": {"id": "p3-6a27f91d-1edd-55d7-be5e-8422f519ae00", "workflowId": "order",
                "status": "COMPLETED", "state": "Done", "visit": 1, "seq": 2,
                "data": {"a": 1}, "correlation": {}, "activity": {"kind": "idle"},
                "timers": [], "children": []},
            "version": "292fc61368f7", "parent": parent, "wait": false,
            "created": "2024-01-01T10:01:00Z", "updated": "2024-01-01T10:01:00Z", "history": 3
        }))
        .unwrap()
    }

    /// What the event was before it was built field by field: `json!`, `format!` and
    /// `str::replace`.
    fn as_formatted(
        source: &str,
        now: DateTime<Utc>,
        rec: &InstanceRecord,
        what: &str,
        extra: Value,
    ) -> Event {
        let inst = &rec.instance;
        let mut data = json!({"instanceId": inst.id, "workflowId": inst.workflow_id,
            "version": rec.version, "status": inst.status});
        if let (Value::Object(d), Value::Object(e)) = (&mut data, extra) {
            d.extend(e);
        }
        if let Some(p) = &rec.parent {
            data["parentId"] = json!(p);
        }
        let mut extensions = Map::new();
        extensions.insert("workflowid".into(), json!(inst.workflow_id));
        extensions.insert("workflowinstanceid".into(), json!(inst.id));
        Event {
            id: uuid::Uuid::new_v5(
                &uuid::Uuid::NAMESPACE_URL,
                format!("{}/lifecycle/{what}", inst.id).as_bytes(),
            )
            .to_string(),
            source: source.replace("{workflowId}", &inst.workflow_id),
            event_type: format!("flowbroker.instance.{what}"),
            time: Some(now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            datacontenttype: Some("application/json".into()),
            subject: Some(inst.id.clone()),
            data: Some(data),
            extensions,
        }
    }

    #[test]
    fn events_are_what_formatting_them_gave() {
        let now: DateTime<Utc> = "2024-01-01T10:01:00.123456Z".parse().unwrap();
        let kinds = [
            (Lifecycle::Started, Some(("input", json!({"x": [1, 2]})))),
            (Lifecycle::Completed, Some(("output", json!("done")))),
            (Lifecycle::Terminated, Some(("output", json!(null)))),
            (Lifecycle::Failed, Some(("error", json!({"name": "E"})))),
            (Lifecycle::Cancelled, None),
        ];
        for source in [
            "/flowbroker/{workflowId}",
            "urn:x",
            "/{workflowId}/a/{workflowId}",
        ] {
            for parent in [None, Some("p1-parent")] {
                let rec = record(parent);
                for (what, extra) in &kinds {
                    let ours = event(source, now, &rec, *what, extra.clone());
                    let mut old = json!({});
                    if let Some((k, v)) = extra {
                        old[*k] = v.clone();
                    }
                    let theirs = as_formatted(source, now, &rec, what.name(), old);
                    assert_eq!(ours, theirs, "{source} {parent:?} {what:?}");
                    // and written out the same, key order included
                    assert_eq!(
                        serde_json::to_string(&ours).unwrap(),
                        serde_json::to_string(&theirs).unwrap()
                    );
                }
            }
        }
    }

    #[test]
    fn sources_replace_every_placeholder() {
        assert_eq!(source_of("/flowbroker/{workflowId}", "w"), "/flowbroker/w");
        assert_eq!(source_of("urn:x", "w"), "urn:x");
        assert_eq!(source_of("{workflowId}/{workflowId}", "w"), "w/w");
        assert_eq!(source_of("{workflowId}", "w"), "w");
        assert_eq!(source_of("{a}{{workflowId}}{", "w"), "{a}{w}{");
        assert_eq!(source_of("ü{workflowId", "w"), "ü{workflowId");
    }
}
