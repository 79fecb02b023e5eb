//! A Kafka record to a CloudEvent, through the SDK's Kafka protocol binding (binary mode with
//! `ce_` headers; structured mode with `content-type: application/cloudevents+json`). A record
//! without headers is tried as a structured JSON event. Hostile records never crash the
//! broker: null header values are refused before the binding sees them (it would panic), and
//! the binding runs under `catch_unwind` as a second guard.

use crate::cloudevent::{from_sdk, DecodeError};
use crate::engine::Event;
use cloudevents::binding::rdkafka::MessageExt;
use rdkafka::message::{Headers, Message};

/// A record (as consumed, or an owned copy) as an event.
pub fn decode<M: Message + MessageExt>(msg: &M) -> Result<Event, DecodeError> {
    let not = |m: String| DecodeError::NotCloudEvent(m);
    let Some(headers) = msg.headers() else {
        return structured(msg.payload());
    };
    let mut binary = false;
    for h in headers.iter() {
        if h.value.is_none() {
            return Err(not(format!("header {:?} has no value", h.key)));
        }
        if h.key == "ce_specversion" {
            binary = true;
        }
    }
    let structured_ct = headers.iter().any(|h| {
        h.key.eq_ignore_ascii_case("content-type")
            && h.value
                .is_some_and(|v| v.starts_with(b"application/cloudevents"))
    });
    if !binary && !structured_ct {
        return structured(msg.payload());
    }
    let ce = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| msg.to_event()))
        .map_err(|_| not("the CloudEvents Kafka binding could not read the record".into()))?
        .map_err(|e| not(e.to_string()))?;
    from_sdk(&ce)
}

fn structured(payload: Option<&[u8]>) -> Result<Event, DecodeError> {
    let payload = payload.ok_or_else(|| {
        DecodeError::NotCloudEvent("record has neither ce_ headers nor a payload".into())
    })?;
    let ce: cloudevents::Event = serde_json::from_slice(payload).map_err(|e| {
        DecodeError::NotCloudEvent(format!(
            "no ce_specversion header and the payload is not a structured CloudEvent: {e}"
        ))
    })?;
    from_sdk(&ce)
}
