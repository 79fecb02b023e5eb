//! The Lambda durable execution API at AWS's paths (rest-json, as botocore's `lambda` model
//! spells it), so the official SDKs and `aws lambda` run against the broker with
//! `AWS_ENDPOINT_URL_LAMBDA`: checkpoints, state pages, executions, stop, callbacks, and
//! `Invoke` to start an execution. Paths carry the ARN and callback ids percent-encoded
//! (`%2F` included), so routes are matched on the raw path and each segment decoded after.
//! Errors carry `x-amzn-ErrorType`, which is how botocore names the exception.
//! docs/durable.md.

use super::forward::{forwarded, unavailable, Route};
use super::{ask, ApiError, AppState};
use crate::broker::records::InstanceRecord;
use crate::broker::{AdminError, Applied, Cmd};
use crate::durable::arn;
use crate::durable::wire::{ErrorObject, Operation};
use crate::engine::durable::{
    Run, CALLBACK_ATTR, CALLBACK_FAILURE, CALLBACK_HEARTBEAT, CALLBACK_SUCCESS,
};
use crate::engine::{Activity, EngineError, Event, Input, Status};
use crate::store::{Scope, Table};
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
        .route("/2015-03-31/functions/{*rest}", any(invoke))
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

fn query(uri: &axum::http::Uri) -> std::collections::HashMap<String, String> {
    uri.query()
        .map(|q| {
            q.split('&')
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    let d = |s: &str| {
                        percent_encoding::percent_decode_str(&s.replace('+', "%20"))
                            .decode_utf8_lossy()
                            .into_owned()
                    };
                    (d(k), d(v))
                })
                .collect()
        })
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
    let result = match (&method, seg.as_slice()) {
        (&Method::POST, ["durable-executions", a, "checkpoint"]) => {
            routed(&s, &uri, &headers, &method, &body, a, checkpoint).await
        }
        (&Method::GET, ["durable-executions", a, "state"]) => {
            routed(&s, &uri, &headers, &method, &body, a, state).await
        }
        (&Method::GET, ["durable-executions", a]) => {
            routed(&s, &uri, &headers, &method, &body, a, execution).await
        }
        (&Method::POST, ["durable-executions", a, "stop"]) => {
            routed(&s, &uri, &headers, &method, &body, a, stop).await
        }
        (&Method::POST, ["durable-execution-callbacks", id, what]) => {
            match arn::read_callback(id) {
                Ok((instance, _)) => {
                    let call = Callback {
                        id: id.to_string(),
                        what: what.to_string(),
                    };
                    match routed_to(&s, &uri, &headers, &method, &body, &instance).await {
                        Ok(None) => callback(&s, &body, &instance, call).await,
                        Ok(Some(relayed)) => Ok(relayed),
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(not_found(e.to_string())),
            }
        }
        _ => Err(AwsError(
            StatusCode::NOT_FOUND,
            "ResourceNotFoundException",
            format!(
                "{method} {} is not a durable execution API flowbroker serves",
                uri.path()
            ),
        )),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

/// Relays the request to the owner of `instance`'s state partition when another broker
/// owns it (`Some` answer), else `None`: serve it here.
async fn routed_to(
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

type Handler = for<'a> fn(
    &'a AppState,
    &'a HeaderMap,
    &'a Bytes,
    &'a axum::http::Uri,
    String,
) -> futures::future::BoxFuture<'a, Result<Response, AwsError>>;

async fn routed(
    s: &AppState,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    method: &Method,
    body: &Bytes,
    execution_arn: &str,
    handler: Handler,
) -> Result<Response, AwsError> {
    let id = arn::instance_of_arn(execution_arn).map_err(|e| not_found(e.to_string()))?;
    if let Some(relayed) = routed_to(s, uri, headers, method, body, &id).await? {
        return Ok(relayed);
    }
    handler(s, headers, body, uri, id).await
}

/// The stored instance `id` and its execution record.
fn stored(s: &AppState, id: &str) -> Result<(InstanceRecord, Box<Run>), AwsError> {
    let missing = || not_found(format!("no durable execution {id:?}"));
    let p = s.peers.parts.of_instance(id).map_err(|_| missing())?;
    let tx = s.store.read().map_err(ApiError::from)?;
    let rec: InstanceRecord = tx
        .get_in(Scope::Partition(p.0), Table::Instances, id)
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

fn checkpoint<'a>(
    s: &'a AppState,
    headers: &'a HeaderMap,
    body: &'a Bytes,
    _uri: &'a axum::http::Uri,
    id: String,
) -> futures::future::BoxFuture<'a, Result<Response, AwsError>> {
    Box::pin(async move {
        let req: Value = serde_json::from_slice(body)
            .map_err(|e| invalid(format!("the body is not JSON: {e}")))?;
        let token = req
            .get("CheckpointToken")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("CheckpointToken is required"))?
            .to_string();
        let input = Input::Checkpoint {
            token,
            client_token: req
                .get("ClientToken")
                .and_then(Value::as_str)
                .map(str::to_string),
            updates: req.get("Updates").cloned().unwrap_or_else(|| json!([])),
        };
        let rec = match apply(s, &id, input).await? {
            Ok(rec) => rec,
            Err(e @ (EngineError::InvalidCheckpointToken(_) | EngineError::Finished { .. })) => {
                return Err(stale(headers, &e))
            }
            Err(e) => return Err(invalid(e.to_string())),
        };
        let (_, run) = run_of(*rec)?;
        let last = run
            .last
            .as_ref()
            .ok_or_else(|| invalid("the checkpoint was not recorded"))?;
        let ops: Vec<&Operation> = last.ops.iter().filter_map(|o| run.get(o)).collect();
        let mut answer = json!({"NewExecutionState": {"Operations": ops}});
        if let Some(t) = &last.outbound {
            answer["CheckpointToken"] = json!(t);
        }
        ok(answer)
    })
}

fn state<'a>(
    s: &'a AppState,
    _headers: &'a HeaderMap,
    _body: &'a Bytes,
    uri: &'a axum::http::Uri,
    id: String,
) -> futures::future::BoxFuture<'a, Result<Response, AwsError>> {
    Box::pin(async move {
        let q = query(uri);
        let (_, run) = stored(s, &id)?;
        let token = q.get("CheckpointToken").map(String::as_str).unwrap_or("");
        match arn::read_token(token) {
            Ok((i, seq)) if i == id && seq <= run.token => {}
            _ => return Err(invalid("Invalid checkpoint token")),
        }
        let marker = match q.get("Marker").filter(|m| !m.is_empty()) {
            Some(m) => m.parse().map_err(|_| invalid("Invalid marker"))?,
            None => 0,
        };
        let max = q
            .get("MaxItems")
            .and_then(|m| m.parse().ok())
            .unwrap_or(100usize);
        let (page, next) = run.page(marker, max);
        let mut answer = json!({"Operations": page});
        if let Some(n) = next {
            answer["NextMarker"] = json!(n.to_string());
        }
        ok(answer)
    })
}

/// The execution's status as Lambda reports it.
fn lambda_status(rec: &InstanceRecord) -> &'static str {
    let timed_out = rec
        .instance
        .error
        .as_ref()
        .is_some_and(|e| e.name == crate::engine::durable::EXECUTION_TIMEOUT);
    match rec.instance.status {
        Status::Running | Status::Waiting => "RUNNING",
        Status::Completed | Status::Terminated => "SUCCEEDED",
        Status::Failed if timed_out => "TIMED_OUT",
        Status::Failed => "FAILED",
        Status::Cancelled => "STOPPED",
    }
}

fn execution<'a>(
    s: &'a AppState,
    _headers: &'a HeaderMap,
    _body: &'a Bytes,
    uri: &'a axum::http::Uri,
    id: String,
) -> futures::future::BoxFuture<'a, Result<Response, AwsError>> {
    Box::pin(async move {
        let include = query(uri).get("IncludeExecutionData").map(String::as_str) != Some("false");
        let (rec, run) = stored(s, &id)?;
        let exec = run.ops.first().map(|o| &o.op);
        let mut answer = json!({
            "DurableExecutionArn": run.arn,
            "DurableExecutionName": run.name,
            "FunctionArn": arn::function_arn(&rec.instance.workflow_id),
            "Status": lambda_status(&rec),
            "StartTimestamp": exec.map(|e| e.start_timestamp.timestamp_millis() as f64 / 1000.0),
            "Version": "$LATEST",
            "ExecutionDataIncluded": include,
        });
        if let Some(end) = exec.and_then(|e| e.end_timestamp) {
            answer["EndTimestamp"] = json!(end.timestamp_millis() as f64 / 1000.0);
        }
        if include {
            answer["InputPayload"] = json!(rec.instance.data.to_string());
            if let Some(out) = &rec.instance.output {
                answer["Result"] = json!(out.to_string());
            }
            if let Some(e) = &rec.instance.error {
                answer["Error"] = json!(crate::engine::durable::error_object(e));
            }
        }
        ok(answer)
    })
}

fn stop<'a>(
    s: &'a AppState,
    _headers: &'a HeaderMap,
    _body: &'a Bytes,
    _uri: &'a axum::http::Uri,
    id: String,
) -> futures::future::BoxFuture<'a, Result<Response, AwsError>> {
    Box::pin(async move {
        match apply(s, &id, Input::Cancel).await? {
            Ok(_) | Err(EngineError::Finished { .. }) => {}
            Err(e) => return Err(invalid(e.to_string())),
        }
        let (_, run) = stored(s, &id)?;
        let end = run
            .ops
            .first()
            .and_then(|o| o.op.end_timestamp)
            .unwrap_or_else(chrono::Utc::now);
        ok(json!({"StopTimestamp": end.timestamp_millis() as f64 / 1000.0}))
    })
}

struct Callback {
    id: String,
    what: String,
}

/// `succeed` (the raw body is the result, kept verbatim), `fail` (an ErrorObject) and
/// `heartbeat`, applied as the callback events a CloudEvent would carry.
async fn callback(
    s: &AppState,
    body: &Bytes,
    instance: &str,
    call: Callback,
) -> Result<Response, AwsError> {
    let (event_type, data, content_type) = match call.what.as_str() {
        "succeed" => {
            if body.len() > MAX_CALLBACK_RESULT {
                return Err(AwsError(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "RequestTooLargeException",
                    format!(
                        "the callback result is {} bytes; the limit is {MAX_CALLBACK_RESULT}",
                        body.len()
                    ),
                ));
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

/// `Invoke`: starts an execution of the durable function `{name}` with the body as input
/// (`X-Amz-Durable-Execution-Name` names it: the same name starts nothing new) and answers
/// 202 with its ARN in `X-Amz-Durable-Execution-Arn`.
async fn invoke(
    State(s): State<AppState>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seg = segments(uri.path(), "/2015-03-31/functions/");
    let run = async {
        let [name, "invocations"] = seg.iter().map(String::as_str).collect::<Vec<_>>()[..] else {
            return Err(not_found(format!("{method} {} is not served", uri.path())));
        };
        if method != Method::POST {
            return Err(not_found(format!("{method} {} is not served", uri.path())));
        }
        let workflow = arn::function_of(name).to_string();
        match s.shared.definition(&workflow) {
            Some(d) if matches!(d.def.body, crate::definition::Body::Durable(_)) => {}
            Some(_) => {
                return Err(invalid(format!(
                    "{workflow:?} is not a durable function: start it with POST \
                     /v1/workflows/{workflow}/instances"
                )))
            }
            None => {
                return Err(not_found(format!(
                    "Function not found: no durable function {workflow:?} is deployed"
                )))
            }
        }
        let input: Value = if body.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            serde_json::from_slice(&body)
                .map_err(|e| invalid(format!("the payload is not JSON: {e}")))?
        };
        let name = headers
            .get("x-amz-durable-execution-name")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let id = ask(&s.core, |reply| Cmd::Start {
            workflow: workflow.clone(),
            input,
            key: name.map(|n| format!("durable-execution-name\n{n}")),
            trace: None,
            reply,
        })
        .await?;
        let arn = arn::execution_arn(&workflow, &id.replace('/', "_"), &id);
        let mut r = (StatusCode::ACCEPTED, "").into_response();
        if let Ok(v) = HeaderValue::from_str(&arn) {
            r.headers_mut().insert("X-Amz-Durable-Execution-Arn", v);
        }
        r.headers_mut().insert(
            "X-Amz-Executed-Version",
            HeaderValue::from_static("$LATEST"),
        );
        Ok(r)
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}
