//! The callback API: `SendDurableExecutionCallbackSuccess|Failure|Heartbeat`, applied as the
//! callback events a CloudEvent would carry.

use super::{apply, invalid, not_found, ok, AwsError, MAX_CALLBACK_RESULT};
use crate::durable::wire::ErrorObject;
use crate::engine::durable::{
    CALLBACK_ATTR, CALLBACK_FAILURE, CALLBACK_HEARTBEAT, CALLBACK_SUCCESS,
};
use crate::engine::{EngineError, Event, Input};
use crate::http::AppState;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

pub struct Callback {
    pub id: String,
    pub what: String,
}

/// `succeed` (the raw body is the result, kept verbatim), `fail` (an ErrorObject) and
/// `heartbeat`, applied as the callback events a CloudEvent would carry.
pub async fn callback(
    s: &AppState,
    body: &Bytes,
    instance: &str,
    call: Callback,
) -> Result<Response, AwsError> {
    let (event_type, data, content_type) = match call.what.as_str() {
        "succeed" => {
            if body.len() > MAX_CALLBACK_RESULT {
                return Err(invalid(format!(
                    "the callback result is {} bytes; the limit is {MAX_CALLBACK_RESULT} (1 MiB)",
                    body.len()
                )));
            }
            let text = String::from_utf8_lossy(body).into_owned();
            (
                CALLBACK_SUCCESS,
                (!text.is_empty()).then_some(Value::String(text)),
                "application/octet-stream",
            )
        }
        "fail" => {
            let e: ErrorObject = if body.iter().all(u8::is_ascii_whitespace) {
                ErrorObject::default()
            } else {
                serde_json::from_slice(body)
                    .map_err(|e| invalid(format!("the body is not an ErrorObject: {e}")))?
            };
            (CALLBACK_FAILURE, Some(json!(e)), "application/json")
        }
        "heartbeat" => (CALLBACK_HEARTBEAT, None, "application/json"),
        other => return Err(not_found(format!("no callback action {other:?}"))),
    };
    let mut extensions = serde_json::Map::new();
    extensions.insert(CALLBACK_ATTR.into(), Value::String(call.id.clone()));
    let event = Event {
        id: uuid::Uuid::new_v4().to_string(),
        source: "/flowbroker/lambda-api".into(),
        event_type: event_type.into(),
        time: Some(chrono::Utc::now().to_rfc3339()),
        datacontenttype: Some(content_type.into()),
        subject: None,
        data,
        extensions,
    };
    match apply(s, instance, Input::Event { event }).await? {
        Ok(_) => ok(json!({})),
        Err(EngineError::CallbackNotActive(_) | EngineError::Finished { .. }) => Err(AwsError(
            StatusCode::BAD_REQUEST,
            "CallbackTimeoutException",
            format!(
                "callback {} is not active: it was answered, timed out, or its execution has \
                 finished",
                call.id
            ),
        )),
        Err(e) => Err(invalid(e.to_string())),
    }
}
