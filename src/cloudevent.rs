//! Conversions between the CloudEvents SDK's `Event` (what the Kafka and HTTP bindings read
//! and write) and the engine's [`Event`] (JSON data, lowercase extensions).

use crate::engine::Event;
use cloudevents::event::{Data, ExtensionValue};
use cloudevents::{AttributesReader, EventBuilder, EventBuilderV10};
use serde_json::{Map, Value};

/// Why a message is not an event the broker can use (the dead-letter reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a CloudEvent: {0}")]
    NotCloudEvent(String),
    #[error("data is not valid JSON although datacontenttype is {content_type:?}: {message}")]
    BadData {
        content_type: String,
        message: String,
    },
    #[error("the record is {size} bytes (payload and headers), over kafka.max_input_bytes = {limit}; its payload is not copied (the original stays in its input topic)")]
    TooLarge { size: usize, limit: usize },
    #[error("attribute {attribute} holds the control character U+{code:04X} at character {at}: CloudEvents 1.0 strings may not hold U+0000-U+001F or U+007F-U+009F (remove it, or encode the value)")]
    BadAttribute {
        attribute: String,
        code: u32,
        at: usize,
    },
}

impl DecodeError {
    /// A short stable label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            DecodeError::NotCloudEvent(_) => "not_cloudevent",
            DecodeError::BadData { .. } => "bad_data",
            DecodeError::BadAttribute { .. } => "bad_attribute",
            DecodeError::TooLarge { .. } => "too_large",
        }
    }
}

fn is_json(ct: &str) -> bool {
    let base = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    base == "application/json" || base == "text/json" || base.ends_with("+json")
}

/// An HTTP request as an event (the CloudEvents HTTP binding: binary mode with `ce-` headers,
/// structured mode with `application/cloudevents+json`).
pub fn from_http(headers: &axum::http::HeaderMap, body: Vec<u8>) -> Result<Event, DecodeError> {
    let ce = cloudevents::binding::http::to_event(headers, body).map_err(|e| {
        DecodeError::NotCloudEvent(format!(
            "{e} (send ce-id, ce-source, ce-type and ce-specversion headers, or a structured \
             application/cloudevents+json body)"
        ))
    })?;
    from_sdk(&ce)
}

/// Refuses an event whose string attributes hold a control character, which CloudEvents 1.0
/// disallows (its "Type System": U+0000-U+001F and U+007F-U+009F, `char::is_control`). The
/// store joins attribute values into keys with such characters (`store::SEP` and the index's
/// separators), so one inside a value could make two events' keys alike: a dedupe entry of
/// one source and id taken for another's, or a waits key read as a longer one.
fn check_strings(e: &Event) -> Result<(), DecodeError> {
    let named = [
        ("id", Some(e.id.as_str())),
        ("source", Some(e.source.as_str())),
        ("type", Some(e.event_type.as_str())),
        ("subject", e.subject.as_deref()),
        ("datacontenttype", e.datacontenttype.as_deref()),
    ];
    let extensions = e
        .extensions
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.as_str(), s)));
    let strings = named
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .chain(extensions);
    for (attribute, value) in strings {
        if let Some((at, c)) = value.chars().enumerate().find(|(_, c)| c.is_control()) {
            return Err(DecodeError::BadAttribute {
                attribute: attribute.to_string(),
                code: c.into(),
                at,
            });
        }
    }
    Ok(())
}

/// Reads an SDK event; data must be what its content type says, and its string attributes
/// may not hold control characters ([`check_strings`]).
pub fn from_sdk(ce: &cloudevents::Event) -> Result<Event, DecodeError> {
    let ct = ce.datacontenttype().map(str::to_string);
    let json_ct = ct.as_deref().is_none_or(is_json);
    let bad = |message: String| DecodeError::BadData {
        content_type: ct.clone().unwrap_or_else(|| "(none: JSON assumed)".into()),
        message,
    };
    let data = match ce.data() {
        None => None,
        Some(Data::Json(v)) => Some(v.clone()),
        Some(Data::Binary(b)) if json_ct => {
            Some(serde_json::from_slice(b).map_err(|e| bad(e.to_string()))?)
        }
        Some(Data::String(s)) if json_ct => {
            Some(serde_json::from_str(s).map_err(|e| bad(e.to_string()))?)
        }
        Some(Data::String(s)) => Some(Value::String(s.clone())),
        Some(Data::Binary(b)) => match std::str::from_utf8(b) {
            Ok(s) if ct.as_deref().is_some_and(|c| c.starts_with("text/")) => {
                Some(Value::String(s.to_string()))
            }
            _ => {
                // other binary data travels as base64, as in the JSON event format
                let v = serde_json::to_value(ce).map_err(|e| bad(e.to_string()))?;
                v.get("data_base64").cloned()
            }
        },
    };
    let mut extensions = Map::new();
    for (name, value) in ce.iter_extensions() {
        let v = match value {
            ExtensionValue::String(s) => Value::String(s.clone()),
            ExtensionValue::Boolean(b) => Value::Bool(*b),
            ExtensionValue::Integer(i) => Value::from(*i),
        };
        extensions.insert(name.to_ascii_lowercase(), v);
    }
    let event = Event {
        id: ce.id().to_string(),
        source: ce.source().to_string(),
        event_type: ce.ty().to_string(),
        time: ce
            .time()
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        datacontenttype: ct,
        subject: ce.subject().map(str::to_string),
        data,
        extensions,
    };
    check_strings(&event)?;
    Ok(event)
}

/// Builds an SDK event (for the Kafka binding) from an engine event.
pub fn to_sdk(e: &Event) -> Result<cloudevents::Event, String> {
    let mut b = EventBuilderV10::new()
        .id(e.id.as_str())
        .source(e.source.as_str())
        .ty(e.event_type.as_str());
    if let Some(t) = &e.time {
        b = b.time(t.as_str());
    }
    if let Some(s) = &e.subject {
        b = b.subject(s.as_str());
    }
    for (k, v) in &e.extensions {
        let ext = match v {
            Value::String(s) => ExtensionValue::String(s.clone()),
            Value::Bool(b) => ExtensionValue::Boolean(*b),
            Value::Number(n) if n.is_i64() => ExtensionValue::Integer(n.as_i64().unwrap_or(0)),
            other => ExtensionValue::String(other.to_string()),
        };
        b = b.extension(k.as_str(), ext);
    }
    if let Some(d) = &e.data {
        let ct = e
            .datacontenttype
            .clone()
            .unwrap_or_else(|| "application/json".into());
        b = b.data(ct, d.clone());
    }
    b.build().map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_keeps_attributes_and_data() {
        let mut ext = Map::new();
        ext.insert("patientid".into(), json!("p1"));
        let e = Event {
            id: "1".into(),
            source: "/hospital".into(),
            event_type: "vitals".into(),
            time: Some("2020-01-01T00:00:00Z".into()),
            datacontenttype: Some("application/json".into()),
            subject: Some("s".into()),
            data: Some(json!({"t": 39.5})),
            extensions: ext,
        };
        let back = from_sdk(&to_sdk(&e).unwrap()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn json_content_type_with_bad_bytes_is_a_decode_error() {
        let ce = EventBuilderV10::new()
            .id("1")
            .source("/s")
            .ty("t")
            .data("application/json", Data::Binary(b"{nope".to_vec()))
            .build()
            .unwrap();
        let err = from_sdk(&ce).unwrap_err();
        assert_eq!(err.kind(), "bad_data");
        let ce = EventBuilderV10::new()
            .id("1")
            .source("/s")
            .ty("t")
            .data("text/plain", Data::Binary(b"hello".to_vec()))
            .build()
            .unwrap();
        assert_eq!(from_sdk(&ce).unwrap().data, Some(json!("hello")));
    }

    #[test]
    fn a_control_character_in_a_string_attribute_is_a_decode_error_naming_it() {
        let with = |source: &str, ext: &str| {
            EventBuilderV10::new()
                .id("1")
                .source(source)
                .ty("t")
                .extension("key", ext)
                .build()
                .unwrap()
        };
        // the store's key separator, inside a correlation value
        match from_sdk(&with("/s", "a\u{1f}b")) {
            Err(DecodeError::BadAttribute {
                attribute,
                code,
                at,
            }) => assert_eq!((attribute.as_str(), code, at), ("key", 0x1f, 1)),
            other => panic!("{other:?}"),
        }
        let e = from_sdk(&with("/s\u{85}x", "k")).unwrap_err();
        assert_eq!(e.kind(), "bad_attribute");
        assert!(
            e.to_string().contains("source") && e.to_string().contains("U+0085"),
            "{e}"
        );
        // what is not a control character passes, non-ASCII included
        let ok = from_sdk(&with("/s/é", "k\u{2028}ü")).unwrap();
        assert_eq!(ok.extensions["key"], json!("k\u{2028}ü"));
    }
}
