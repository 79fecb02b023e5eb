//! `Invoke` (`POST /2015-03-31/functions/{name}/invocations`): starts a durable
//! function's execution, as `aws lambda invoke` and boto3 do.

use super::{invalid, not_found, segments};
use crate::broker::{Cmd, StartRequest};
use crate::durable::arn;
use crate::http::{ask, AppState};
use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// `Invoke`: starts an execution of the durable function `{name}` with the body as input
/// (`X-Amz-Durable-Execution-Name` names it: the same name starts nothing new) and answers
/// 202 with its ARN in `X-Amz-Durable-Execution-Arn`.
pub async fn invoke(
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
            start: StartRequest {
                workflow: workflow.clone(),
                input,
                key: name.map(|n| format!("durable-execution-name\n{n}")),
                at: None,
                trace: None,
            },
            reply,
        })
        .await?
        .id;
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
