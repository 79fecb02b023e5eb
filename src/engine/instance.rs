//! The instance: everything the engine needs to decide the next step, as plain serde data so it
//! can be stored and replayed.

pub use super::activity::{Activity, Lane, Run, Slot, Source};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Where an instance is in its life.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// Actions or child workflows are in flight.
    Running,
    /// Only events or timers can move it on.
    Waiting,
    Completed,
    Failed,
    Terminated,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Running,
        Status::Waiting,
        Status::Completed,
        Status::Failed,
        Status::Terminated,
        Status::Cancelled,
    ];

    /// The name as the API shows it (`RUNNING`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "RUNNING",
            Status::Waiting => "WAITING",
            Status::Completed => "COMPLETED",
            Status::Failed => "FAILED",
            Status::Terminated => "TERMINATED",
            Status::Cancelled => "CANCELLED",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            Status::Completed | Status::Failed | Status::Terminated | Status::Cancelled
        )
    }
}

/// A workflow error as the language exposes it: `{name, message, trace}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorInfo {
    pub name: String,
    pub message: String,
    #[serde(default)]
    pub trace: String,
}

impl ErrorInfo {
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> ErrorInfo {
        ErrorInfo {
            name: name.into(),
            message: message.into(),
            trace: String::new(),
        }
    }
}

/// A CloudEvent as the engine sees it (consumed or produced). (`Default` is an empty event,
/// what a value moved out leaves behind.)
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Event {
    pub id: String,
    pub source: String,
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datacontenttype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Extension attributes (lowercase names).
    #[serde(default, flatten)]
    pub extensions: Map<String, Value>,
}

impl Event {
    /// A context attribute by name, case-insensitively: a spec attribute (`id`, `source`,
    /// `type`, `specversion`, `time`, `datacontenttype`, `subject`) or an extension.
    pub fn attribute(&self, name: &str) -> Option<String> {
        const SPEC: [&str; 7] = [
            "id",
            "source",
            "type",
            "specversion",
            "time",
            "datacontenttype",
            "subject",
        ];
        if let Some(spec) = SPEC.iter().find(|s| s.eq_ignore_ascii_case(name)) {
            let value = match *spec {
                "id" => Some(&self.id),
                "source" => Some(&self.source),
                "type" => Some(&self.event_type),
                "specversion" => return Some("1.0".to_string()),
                "time" => self.time.as_ref(),
                "datacontenttype" => self.datacontenttype.as_ref(),
                _ => self.subject.as_ref(),
            };
            return value.cloned();
        }
        self.extensions
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
    }

    /// The whole event as structured JSON, as event data filters see it: what serializing it
    /// gives (`serde_json::to_value`), built from its parts without copying them.
    pub fn into_json(self) -> Value {
        let mut m = Map::with_capacity(7 + self.extensions.len());
        m.insert("id".into(), Value::String(self.id));
        m.insert("source".into(), Value::String(self.source));
        m.insert("type".into(), Value::String(self.event_type));
        let optional = [
            ("time", self.time),
            ("datacontenttype", self.datacontenttype),
            ("subject", self.subject),
        ];
        for (k, v) in optional {
            if let Some(v) = v {
                m.insert(k.into(), Value::String(v));
            }
        }
        if let Some(data) = self.data {
            m.insert("data".into(), data);
        }
        // flattened: an extension named as an attribute takes that attribute's place
        for (k, v) in self.extensions {
            m.insert(k, v);
        }
        Value::Object(m)
    }
}

/// One workflow instance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Instance {
    pub id: String,
    pub workflow_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub status: Status,
    /// The current state's name (the last one once finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// How many states have been entered; part of every key, so a revisited state gets new keys.
    pub visit: u64,
    /// How many events have been produced; the source of deterministic event ids.
    pub seq: u64,
    /// The current state's data.
    pub data: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// Correlation values pinned by consumed events (lowercase attribute name -> value).
    #[serde(default)]
    pub correlation: BTreeMap<String, String>,
    pub activity: Activity,
    /// Armed timers, by id.
    #[serde(default)]
    pub timers: BTreeSet<String>,
    /// Child instances it waits for.
    #[serde(default)]
    pub children: BTreeSet<String>,
}

impl Instance {
    /// A fresh instance of workflow `workflow_id`, not yet started.
    pub fn new(id: impl Into<String>, workflow_id: impl Into<String>) -> Instance {
        Instance {
            id: id.into(),
            workflow_id: workflow_id.into(),
            version: None,
            status: Status::Running,
            state: None,
            visit: 0,
            seq: 0,
            data: Value::Object(Map::new()),
            output: None,
            error: None,
            correlation: BTreeMap::new(),
            activity: Activity::Idle,
            timers: BTreeSet::new(),
            children: BTreeSet::new(),
        }
    }

    /// Key prefix of everything the current state visit starts.
    pub fn visit_key(&self) -> String {
        self.key_of_visit(self.visit)
    }

    /// Key prefix of everything state visit `visit` started.
    pub fn key_of_visit(&self, visit: u64) -> String {
        format!("{}/{}", self.id, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn attributes_are_read_from_spec_fields_and_extensions_case_insensitively() {
        let mut extensions = Map::new();
        extensions.insert("patientid".into(), json!("p1"));
        extensions.insert("count".into(), json!(3));
        let e = Event {
            id: "e1".into(),
            source: "/s".into(),
            event_type: "t".into(),
            time: Some("2020-01-01T00:00:00Z".into()),
            datacontenttype: None,
            subject: Some("sub".into()),
            data: None,
            extensions,
        };
        let read = |n: &str| e.attribute(n);
        assert_eq!(read("ID").as_deref(), Some("e1"));
        assert_eq!(read("source").as_deref(), Some("/s"));
        assert_eq!(read("Type").as_deref(), Some("t"));
        assert_eq!(read("specversion").as_deref(), Some("1.0"));
        assert_eq!(read("time").as_deref(), Some("2020-01-01T00:00:00Z"));
        assert_eq!(read("datacontenttype"), None);
        assert_eq!(read("Subject").as_deref(), Some("sub"));
        assert_eq!(read("patientId").as_deref(), Some("p1"));
        assert_eq!(read("count").as_deref(), Some("3"));
        assert_eq!(read("absent"), None);
    }

    #[test]
    fn into_json_is_what_serializing_gives() {
        let base = Event {
            id: "e1".into(),
            source: "/s".into(),
            event_type: "t".into(),
            time: None,
            datacontenttype: None,
            subject: None,
            data: None,
            extensions: Map::new(),
        };
        let mut events = vec![base.clone()];
        let mut full = base.clone();
        full.time = Some("2020-01-01T00:00:00Z".into());
        full.datacontenttype = Some("application/json".into());
        full.subject = Some("sub".into());
        full.data = Some(json!({"b": [1, {"c": null}], "a": "x"}));
        full.extensions.insert("zeta".into(), json!("z"));
        full.extensions.insert("alpha".into(), json!(true));
        events.push(full.clone());
        // extensions named as an attribute (or as `data`) override it in place
        for name in ["id", "subject", "data", "time"] {
            let mut e = full.clone();
            e.extensions.insert(name.into(), json!("ext"));
            events.push(e);
            let mut e = base.clone();
            e.extensions.insert(name.into(), json!(7));
            events.push(e);
        }
        for e in events {
            let want = serde_json::to_value(&e).unwrap();
            let got = e.clone().into_json();
            assert_eq!(got, want, "{e:?}");
            assert_eq!(got.to_string(), want.to_string(), "key order of {e:?}");
        }
    }
}
