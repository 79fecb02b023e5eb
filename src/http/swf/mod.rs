//! Amazon SWF's API on the HTTP listener, as botocore's `swf` model spells it: JSON 1.0
//! over `POST /` with `X-Amz-Target: SimpleWorkflowService.<Action>`, so boto3's `swf`
//! client and frameworks built on it run against the broker with `AWS_ENDPOINT_URL_SWF`.
//! Faults carry `__type` and `x-amzn-ErrorType`. A request about a domain or an execution
//! is relayed to the broker that owns its state partition. docs/swf.md.
//!
//! Layout: this file dispatches, relays and speaks SWF's faults; [`registry`] domains and
//! types; [`executions`] starting, signalling, cancelling, terminating, describing,
//! history and lists; [`tasks`] polls, task responses, heartbeats and counts.

mod executions;
mod gather;
mod registry;
mod tasks;

use super::forward::{forwarded, Route};
use super::{ask, ApiError, AppState};
use crate::broker::entries::InstanceOf;
use crate::broker::records::InstanceRecord;
use crate::broker::{AdminError, Cmd, StartRequest};
use crate::cluster::partition::PartitionId;
use crate::engine::swf::SwfError;
use crate::engine::{EngineError, Input};
use crate::store::Scope;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

/// The `X-Amz-Target` prefix of SWF's actions.
pub const TARGET: &str = "SimpleWorkflowService.";
/// Internal: a domain's registry as the broker stores it (asked of the domain's owner).
const REGISTRY: &str = "FlowbrokerDomainRegistry";
/// Internal: a decision or activity task ready on the asked broker's board now (asked by
/// another broker's poll).
const TAKE_DECISION: &str = "FlowbrokerTakeDecisionTask";
const TAKE_ACTIVITY: &str = "FlowbrokerTakeActivityTask";

/// Whether a request is an SWF API call (it may be SigV4-signed).
pub fn is_swf(headers: &HeaderMap) -> bool {
    headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with(TARGET))
}

/// An SWF fault: status, the fault's name, a message.
pub struct Fault(pub StatusCode, pub &'static str, pub String);

pub type Answer = Result<Response, Fault>;

impl IntoResponse for Fault {
    fn into_response(self) -> Response {
        let body = json!({
            "__type": format!("com.amazonaws.swf.base.model#{}", self.1),
            "message": self.2,
        });
        let mut r = (self.0, body.to_string()).into_response();
        let h = r.headers_mut();
        h.insert("x-amzn-ErrorType", HeaderValue::from_static(self.1));
        h.insert(
            "content-type",
            HeaderValue::from_static("application/x-amz-json-1.0"),
        );
        r
    }
}

pub fn fault(kind: &'static str, msg: impl Into<String>) -> Fault {
    Fault(StatusCode::BAD_REQUEST, kind, msg.into())
}

pub fn unknown(msg: impl Into<String>) -> Fault {
    fault("UnknownResourceFault", msg)
}

pub fn invalid(msg: impl Into<String>) -> Fault {
    fault("ValidationException", msg)
}

impl From<SwfError> for Fault {
    fn from(e: SwfError) -> Self {
        fault(e.fault(), e.to_string())
    }
}

impl From<ApiError> for Fault {
    fn from(e: ApiError) -> Self {
        match e.0 {
            StatusCode::NOT_FOUND => unknown(e.1),
            s if s.is_server_error() => Fault(s, "InternalFailure", e.1),
            _ => invalid(e.1),
        }
    }
}

impl From<EngineError> for Fault {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Swf(e) => e.into(),
            EngineError::Finished { .. } | EngineError::NotStarted(_) => {
                unknown(format!("Unknown execution: {e}"))
            }
            e => invalid(e.to_string()),
        }
    }
}

/// A successful answer.
pub fn ok(v: Value) -> Answer {
    let mut r = (StatusCode::OK, v.to_string()).into_response();
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    Ok(r)
}

/// The request's members.
pub struct Req {
    pub action: String,
    pub body: Map<String, Value>,
    pub raw: Bytes,
    pub forwarded: bool,
}

impl Req {
    pub fn str(&self, name: &str) -> Option<&str> {
        self.body.get(name).and_then(Value::as_str)
    }

    pub fn need(&self, name: &str) -> Result<&str, Fault> {
        self.str(name)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| invalid(format!("1 validation error detected: {name} is required")))
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.body.get(name).filter(|v| !v.is_null())
    }
}

/// `POST /` with an SWF `X-Amz-Target`.
pub async fn endpoint(State(s): State<AppState>, headers: HeaderMap, raw: Bytes) -> Response {
    let Some(action) = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.strip_prefix(TARGET))
        .map(str::to_string)
    else {
        return fault(
            "UnknownOperationException",
            "POST / serves Amazon SWF's API: send X-Amz-Target: SimpleWorkflowService.<Action>",
        )
        .into_response();
    };
    let body = if raw.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Value>(&raw) {
            Ok(Value::Object(m)) => m,
            _ => {
                return fault("SerializationException", "the body is not a JSON object")
                    .into_response()
            }
        }
    };
    let req = Req {
        action,
        body,
        raw,
        forwarded: forwarded(&headers),
    };
    let t0 = std::time::Instant::now();
    let answer = dispatch(&s, &req).await;
    tracing::debug!(action = %req.action, ok = answer.is_ok(),
        ms = t0.elapsed().as_millis() as u64, "SWF call");
    let mut r = answer.unwrap_or_else(IntoResponse::into_response);
    // each call on its own connection: a client that forks (simpleflow's deciders and
    // workers) shares its pool's sockets between processes, and over plain HTTP one
    // process's call would wait behind another's 60 s poll on the same connection
    r.headers_mut()
        .insert("connection", HeaderValue::from_static("close"));
    r
}

async fn dispatch(s: &AppState, r: &Req) -> Answer {
    match r.action.as_str() {
        "RegisterDomain"
        | "DescribeDomain"
        | "DeprecateDomain"
        | "UndeprecateDomain"
        | "RegisterWorkflowType"
        | "RegisterActivityType"
        | "DescribeWorkflowType"
        | "DescribeActivityType"
        | "ListWorkflowTypes"
        | "ListActivityTypes"
        | "DeprecateWorkflowType"
        | "DeprecateActivityType"
        | "UndeprecateWorkflowType"
        | "UndeprecateActivityType"
        | REGISTRY => registry::call(s, r).await,
        "ListDomains" => registry::list_domains(s, r).await,
        "StartWorkflowExecution" => executions::start(s, r).await,
        "SignalWorkflowExecution"
        | "RequestCancelWorkflowExecution"
        | "TerminateWorkflowExecution"
        | "DescribeWorkflowExecution"
        | "GetWorkflowExecutionHistory" => executions::call(s, r).await,
        "ListOpenWorkflowExecutions"
        | "ListClosedWorkflowExecutions"
        | "CountOpenWorkflowExecutions"
        | "CountClosedWorkflowExecutions" => executions::list(s, r).await,
        "PollForDecisionTask" | "PollForActivityTask" => tasks::poll(s, r).await,
        TAKE_DECISION | TAKE_ACTIVITY if r.forwarded => tasks::take_now(s, r).await,
        "RespondDecisionTaskCompleted"
        | "RespondActivityTaskCompleted"
        | "RespondActivityTaskFailed"
        | "RespondActivityTaskCanceled"
        | "RecordActivityTaskHeartbeat" => tasks::respond(s, r).await,
        "CountPendingDecisionTasks" | "CountPendingActivityTasks" => tasks::count(s, r),
        other => Err(fault(
            "UnknownOperationException",
            format!("{other} is not an Amazon SWF action flowbroker serves (docs/swf.md)"),
        )),
    }
}

/// The other brokers that own partitions now (their URLs).
pub fn remote_owners(s: &AppState) -> std::collections::BTreeSet<String> {
    s.peers
        .parts
        .all()
        .filter_map(|p| match s.peers.route(&s.shared, p, false) {
            Route::Remote(url) => Some(url),
            _ => None,
        })
        .collect()
}

/// Relays the request to the owner of partition `p` when another broker owns it (`Some`
/// answer), else `None`: serve it here.
pub async fn relay(s: &AppState, r: &Req, p: PartitionId) -> Result<Option<Response>, Fault> {
    match s.peers.route(&s.shared, p, r.forwarded) {
        Route::Local => Ok(None),
        Route::Remote(url) => {
            let target = format!("{TARGET}{}", r.action);
            let headers = [
                ("x-amz-target", target.as_str()),
                ("content-type", "application/x-amz-json-1.0"),
            ];
            Ok(Some(
                s.peers
                    .relay_with(Method::POST, &url, "/", Some(r.raw.to_vec()), &headers)
                    .await,
            ))
        }
        Route::Unavailable(why) => Err(Fault(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
            why,
        )),
    }
}

/// The stored instance `id` (on a partition owned here).
pub fn stored(s: &AppState, id: &str) -> Result<Option<InstanceRecord>, Fault> {
    let Ok(p) = s.peers.parts.of_instance(id) else {
        return Ok(None);
    };
    let tx = crate::http::snapshot::read(&s.store).map_err(ApiError::from)?;
    Ok(tx
        .read_in(Scope::Partition(p.0), &InstanceOf(id))
        .map_err(ApiError::from)?)
}

/// Applies `input` to instance `id` and answers with the instance after it.
pub async fn apply(s: &AppState, id: &str, input: Input) -> Result<InstanceRecord, Fault> {
    let applied = ask(&s.core, |reply| Cmd::Apply {
        id: id.to_string(),
        input,
        reply,
    })
    .await
    .map_err(|e| match e.0 {
        StatusCode::NOT_FOUND => unknown(format!("Unknown execution: {}", e.1)),
        _ => Fault::from(e),
    })?;
    applied.map(|r| *r).map_err(Fault::from)
}

/// Starts instance `at` of built-in workflow `workflow` with `input`.
pub async fn start_instance(
    s: &AppState,
    workflow: &str,
    input: Value,
    at: crate::cluster::partition::InstanceId,
) -> Result<String, AdminError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    s.core
        .send(Cmd::Start {
            start: StartRequest {
                workflow: workflow.to_string(),
                input,
                key: None,
                trace: None,
                at: Some(at),
            },
            reply: tx,
        })
        .await
        .map_err(|_| AdminError::Internal("the broker is shutting down".into()))?;
    rx.await
        .map_err(|_| AdminError::Internal("the broker is shutting down".into()))?
        .map(|s| s.id)
}
