//! The Lambda durable execution API at AWS's paths (rest-json, as botocore's `lambda` model
//! spells it), so the official SDKs and `aws lambda` run against the broker with
//! `AWS_ENDPOINT_URL_LAMBDA`: checkpoints, state pages, executions, stop, callbacks, and
//! `Invoke` to start an execution. Paths carry the ARN and callback ids percent-encoded
//! (`%2F` included), so routes are matched on the raw path and each segment decoded after.
//! Errors carry `x-amzn-ErrorType`, which is how botocore names the exception.
//! docs/durable.md.
//!
//! Layout: this file routes (and relays a request to the broker that owns its execution)
//! and speaks AWS's errors; [`execution`] checkpoints, state pages, get and stop;
//! [`callback`] the callback API; [`list`] history and the list by function; [`invoke`]
//! starts executions.

mod callback;
mod execution;
mod invoke;
mod list;

use super::forward::{forwarded, unavailable, Route};
use super::{ask, ApiError, AppState};
use crate::broker::entries::InstanceOf;
use crate::broker::records::InstanceRecord;
use crate::broker::{AdminError, Applied, Cmd};
use crate::durable::arn;
use crate::engine::durable::Run;
use crate::engine::{Activity, EngineError, Input};
use crate::store::Scope;
use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};

/// The largest request body on these paths: a 6 MiB checkpoint payload and its envelope.
pub const MAX_BODY: usize = 7 * 1024 * 1024;
/// The largest callback result (`SendDurableExecutionCallbackSuccess`).
pub const MAX_CALLBACK_RESULT: usize = 1024 * 1024;

/// Whether a path is one of the AWS API's (they get [`MAX_BODY`]).
pub fn is_aws_path(path: &str) -> bool {
    path.starts_with("/2025-12-01/") || path.starts_with("/2015-03-31/")
}

pub fn routes(state: AppState) -> Router {
    Router::new()
        .route("/2025-12-01/{*rest}", any(durable))
        .route("/2015-03-31/functions/{*rest}", any(invoke::invoke))
        .with_state(state)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
}

/// An AWS error: status, `x-amzn-ErrorType`, `{"Type", "message"}`.
struct AwsError(StatusCode, &'static str, String);

impl IntoResponse for AwsError {
    fn into_response(self) -> Response {
        let mut r = (
            self.0,
            axum::Json(json!({
                "Type": if self.0.is_server_error() { "Service" } else { "User" },
                "__type": self.1,
                "message": self.2,
                "Message": self.2,
            })),
        )
            .into_response();
        r.headers_mut()
            .insert("x-amzn-ErrorType", HeaderValue::from_static(self.1));
        r
    }
}

fn invalid(msg: impl Into<String>) -> AwsError {
    AwsError(
        StatusCode::BAD_REQUEST,
        "InvalidParameterValueException",
        msg.into(),
    )
}

fn not_found(msg: impl Into<String>) -> AwsError {
    AwsError(
        StatusCode::NOT_FOUND,
        "ResourceNotFoundException",
        msg.into(),
    )
}

impl From<AdminError> for AwsError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::NotFound(m) => not_found(m),
            AdminError::Invalid(m) | AdminError::Refused(m) => invalid(m),
            AdminError::Moved(m) => {
                AwsError(StatusCode::SERVICE_UNAVAILABLE, "ServiceException", m)
            }
            AdminError::Internal(m) => {
                AwsError(StatusCode::INTERNAL_SERVER_ERROR, "ServiceException", m)
            }
        }
    }
}

impl From<ApiError> for AwsError {
    fn from(e: ApiError) -> Self {
        let kind = match e.0 {
            StatusCode::NOT_FOUND => "ResourceNotFoundException",
            s if s.is_server_error() => "ServiceException",
            _ => "InvalidParameterValueException",
        };
        AwsError(e.0, kind, e.1)
    }
}

/// The stale-token message: the Python SDK retries on `Invalid checkpoint token`, the
/// JavaScript SDK on `Invalid Checkpoint Token` (both match the start, case-sensitively).
fn stale(headers: &HeaderMap, e: &EngineError) -> AwsError {
    let js = headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ua| ua.contains("durable-execution-sdk-js"));
    let head = if js {
        "Invalid Checkpoint Token"
    } else {
        "Invalid checkpoint token"
    };
    invalid(format!("{head}: {e}"))
}

/// The path's segments after the version, percent-decoded one by one.
fn segments(path: &str, prefix: &str) -> Vec<String> {
    path.strip_prefix(prefix)
        .unwrap_or_default()
        .split('/')
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

/// The query's parameters (the last of a repeated name); axum's own query parsing.
fn query(uri: &axum::http::Uri) -> std::collections::HashMap<String, String> {
    axum::extract::Query::try_from_uri(uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

async fn durable(
    State(s): State<AppState>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seg = segments(uri.path(), "/2025-12-01/");
    let seg: Vec<&str> = seg.iter().map(String::as_str).collect();
    // the instance a request is about: the ARN's, or the callback id's
    let instance = match seg.as_slice() {
        ["durable-executions", a, ..] => {
            arn::instance_of_arn(a).map_err(|e| not_found(e.to_string()))
        }
        ["durable-execution-callbacks", id, _] => arn::read_callback(id)
            .map(|(i, _)| i)
            .map_err(|e| not_found(e.to_string())),
        ["functions", f, "durable-executions"] => {
            return list::by_function(&s, f, &uri, &headers)
                .await
                .unwrap_or_else(IntoResponse::into_response)
        }
        _ => Err(unserved(&method, &uri)),
    };
    let result = async {
        let id = instance?;
        if let Some(relayed) = relay_to_owner(&s, &uri, &headers, &method, &body, &id).await? {
            return Ok(relayed);
        }
        match (&method, seg.as_slice()) {
            (&Method::POST, [_, _, "checkpoint"]) => {
                execution::checkpoint(&s, &headers, &body, id).await
            }
            (&Method::GET, [_, _, "state"]) => execution::state(&s, &uri, id).await,
            (&Method::GET, [_, _, "history"]) => list::history(&s, &uri, id).await,
            (&Method::GET, ["durable-executions", _]) => execution::execution(&s, &uri, id).await,
            (&Method::POST, [_, _, "stop"]) => execution::stop(&s, id).await,
            (&Method::POST, ["durable-execution-callbacks", cb, what]) => {
                let call = callback::Callback {
                    id: cb.to_string(),
                    what: what.to_string(),
                };
                callback::callback(&s, &body, &id, call).await
            }
            _ => Err(unserved(&method, &uri)),
        }
    };
    result.await.unwrap_or_else(IntoResponse::into_response)
}

fn unserved(method: &Method, uri: &axum::http::Uri) -> AwsError {
    not_found(format!(
        "{method} {} is not a durable execution API flowbroker serves",
        uri.path()
    ))
}

/// Relays the request to the owner of `instance`'s state partition when another broker
/// owns it (`Some` answer), else `None`: serve it here.
async fn relay_to_owner(
    s: &AppState,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    method: &Method,
    body: &Bytes,
    instance: &str,
) -> Result<Option<Response>, AwsError> {
    let p = s
        .peers
        .parts
        .of_instance(instance)
        .map_err(|_| not_found(format!("no durable execution {instance:?}")))?;
    match s.peers.route(&s.shared, p, forwarded(headers)) {
        Route::Local => Ok(None),
        Route::Remote(url) => Ok(Some(
            s.peers
                .relay(method.clone(), &url, &uri.to_string(), Some(body.to_vec()))
                .await,
        )),
        Route::Unavailable(why) => Ok(Some(unavailable(why))),
    }
}

/// The stored instance `id` and its execution record.
fn stored(s: &AppState, id: &str) -> Result<(InstanceRecord, Box<Run>), AwsError> {
    let missing = || not_found(format!("no durable execution {id:?}"));
    let p = s.peers.parts.of_instance(id).map_err(|_| missing())?;
    let tx = crate::http::snapshot::read(&s.store).map_err(ApiError::from)?;
    let rec: InstanceRecord = tx
        .read_in(Scope::Partition(p.0), &InstanceOf(id))
        .map_err(ApiError::from)?
        .ok_or_else(missing)?;
    run_of(rec)
}

fn run_of(mut rec: InstanceRecord) -> Result<(InstanceRecord, Box<Run>), AwsError> {
    match std::mem::take(&mut rec.instance.activity) {
        Activity::Durable { durable } => Ok((rec, durable)),
        _ => Err(not_found(format!(
            "instance {:?} is not a durable execution",
            rec.instance.id
        ))),
    }
}

async fn apply(s: &AppState, id: &str, input: Input) -> Result<Applied, AwsError> {
    ask(&s.core, |reply| Cmd::Apply {
        id: id.to_string(),
        input,
        reply,
    })
    .await
    .map_err(AwsError::from)
}

fn ok(v: Value) -> Result<Response, AwsError> {
    Ok((StatusCode::OK, axum::Json(v)).into_response())
}
