//! Produced events: type from the definition, deterministic id from instance and sequence,
//! data and extension attributes evaluated against the state data.

use super::instance::{ErrorInfo, Event, Instance};
use super::{Action, Cx};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

/// Namespace of produced event ids (UUID v5 of `{instance}/{sequence}`).
const ID_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6f1c_2b1e_55a4_4c1a_9d0e_f10b_60e4_7a11);

/// The deterministic id of the `seq`-th event produced by `instance`.
pub fn event_id(instance: &str, seq: u64) -> String {
    uuid::Uuid::new_v5(&ID_NAMESPACE, format!("{instance}/{seq}").as_bytes()).to_string()
}

/// Produces a `produceEvent` of a transition or an end.
pub fn produce_event(
    cx: &mut Cx,
    p: &crate::model::ProduceEvent,
    state_data: &Value,
) -> Result<(), ErrorInfo> {
    produce(
        cx,
        &p.event_ref,
        p.data.as_ref(),
        p.context_attributes.as_ref(),
        state_data,
    )
}

/// Produces event definition `name` with `data` (an expression string or an object with
/// embedded expressions; absent: the whole state data) and `attrs`. An event larger than
/// [`super::Limits::max_event_bytes`] is not produced: the error `EventTooLarge`.
pub fn produce(
    cx: &mut Cx,
    name: &str,
    data: Option<&Value>,
    attrs: Option<&Value>,
    state_data: &Value,
) -> Result<(), ErrorInfo> {
    let Some(def) = cx.def.workflow.event(name) else {
        return Ok(());
    };
    let payload = match data {
        None => state_data.clone(),
        Some(Value::String(s)) if s.contains("{{") || s.trim_start().starts_with('$') => cx
            .def
            .expr(s)
            .map(|e| e.eval(state_data))
            .unwrap_or(Value::Null),
        Some(other) => cx.eval_value(other, state_data),
    };
    let mut extensions = Map::new();
    let objects: Vec<&Map<String, Value>> = match attrs {
        Some(Value::Object(m)) => vec![m],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
        _ => vec![],
    };
    for m in objects {
        for (k, v) in m {
            let value = match cx.eval_value(v, state_data) {
                Value::String(s) => Value::String(s),
                other => Value::String(other.to_string()),
            };
            extensions.insert(k.to_ascii_lowercase(), value);
        }
    }
    let (limit, ty) = (cx.limits.max_event_bytes, def.ce_type().to_string());
    emit(&mut cx.inst, &mut cx.out, cx.now, limit, ty, payload, extensions).map_err(|size| {
        ErrorInfo::new(
            "EventTooLarge",
            format!(
                "event {name:?} ({}) would be {size} bytes of JSON, over the limit of {limit} (kafka.max_event_bytes)",
                def.ce_type()
            ),
        )
    })
}

/// Produces an event of `event_type` (both languages): the instance's next deterministic
/// id, source `/flowbroker/{workflowId}`, `extensions` plus `workflowid` and
/// `workflowinstanceid`. `Err(size)`, and nothing produced, when its JSON would be larger
/// than `limit` bytes.
pub(crate) fn emit(
    inst: &mut Instance,
    out: &mut Vec<Action>,
    now: DateTime<Utc>,
    limit: usize,
    event_type: String,
    data: Value,
    mut extensions: Map<String, Value>,
) -> Result<(), usize> {
    extensions.insert("workflowid".into(), Value::String(inst.workflow_id.clone()));
    extensions.insert("workflowinstanceid".into(), Value::String(inst.id.clone()));
    let event = Event {
        id: event_id(&inst.id, inst.seq),
        source: format!("/flowbroker/{}", inst.workflow_id),
        event_type,
        time: Some(now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        datacontenttype: Some("application/json".into()),
        subject: None,
        data: Some(data),
        extensions,
    };
    let size = json_size(&event);
    if size > limit {
        return Err(size);
    }
    inst.seq += 1;
    out.push(Action::Produce { event });
    Ok(())
}

/// The length of a value's JSON, counted without building it.
fn json_size(v: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}
