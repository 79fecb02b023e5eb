//! Bearer-token access (`http.auth_token`): every request but the probes (`GET /health`,
//! `GET /ready`) and the console's login page carries `Authorization: Bearer <token>` or the
//! console's `flowbroker_token` cookie (set by its login form), compared in constant time;
//! anything else is answered 401 with `WWW-Authenticate: Bearer`, or, for a console page, sent
//! to the login page. Also refuses a body over `http.max_body_bytes` by its
//! declared length with a JSON 413 (a body without a length is cut off at the same limit by
//! axum's `DefaultBodyLimit`).

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// What every request is checked against.
#[derive(Clone)]
pub struct Gate {
    /// `None`: no token configured, every request passes.
    token: Option<Arc<[u8]>>,
    pub max_body_bytes: usize,
    /// With a token: the key pair AWS-signed requests on the AWS API's paths must use.
    aws: Option<Arc<super::sigv4::AwsKey>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_body_bytes", &self.max_body_bytes)
            .field("aws", &self.aws)
            .finish()
    }
}

impl Gate {
    pub fn new(token: Option<String>, max_body_bytes: usize) -> Gate {
        Gate {
            token: token.map(|t| Arc::from(t.into_bytes())),
            max_body_bytes,
            aws: None,
        }
    }

    /// Admits requests on the AWS API's paths signed (SigV4) with this key pair.
    pub fn with_aws(mut self, key: Option<super::sigv4::AwsKey>) -> Gate {
        self.aws = key.map(Arc::new);
        self
    }

    /// The `Authorization` value this broker sends when it forwards a request.
    pub fn authorization(&self) -> Option<String> {
        self.token
            .as_ref()
            .map(|t| format!("Bearer {}", String::from_utf8_lossy(t)))
    }

    /// Whether a token is configured at all.
    pub fn required(&self) -> bool {
        self.token.is_some()
    }

    /// Whether an `Authorization` header value carries the token.
    fn admits(&self, authorization: Option<&[u8]>) -> bool {
        self.admits_token(authorization.and_then(|v| bearer(v)))
    }

    /// Whether `given` is the token (always, when none is configured).
    pub fn admits_token(&self, given: Option<&[u8]>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let Some(given) = given else {
            return false;
        };
        // `ct_eq` on slices of different lengths is false without looking at the bytes; the
        // length of the token is not a secret worth hiding
        given.ct_eq(token).into()
    }
}

/// The credentials of `Bearer <credentials>` (the scheme is case-insensitive).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| rest.trim_ascii())
}

/// The name of the console's cookie that carries the token.
pub const COOKIE: &str = "flowbroker_token";

/// The value of cookie [`COOKIE`] in a `Cookie` header.
fn cookie(value: &[u8]) -> Option<&[u8]> {
    value.split(|b| *b == b';').find_map(|pair| {
        let pair = pair.trim_ascii();
        let rest = pair.strip_prefix(COOKIE.as_bytes())?;
        rest.strip_prefix(b"=")
    })
}

/// The middleware: the probes and the login page are open; everything else needs the token.
pub async fn check(State(gate): State<Gate>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let signed = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(super::sigv4::is_signed);
    let aws =
        super::lambda::is_aws_path(path) || (path == "/" && super::swf::is_swf(req.headers()));
    if gate.required() && signed && aws {
        return check_signed(&gate, req, next).await;
    }
    if !matches!(path, "/health" | "/ready" | "/ui/login") {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes());
        // the console's cookie counts only without a header, and is looked for only then
        let admitted = gate.admits(given)
            || (given.is_none()
                && gate.admits_token(
                    req.headers()
                        .get_all(header::COOKIE)
                        .iter()
                        .find_map(|v| cookie(v.as_bytes())),
                ));
        if !admitted && (path == "/ui" || path.starts_with("/ui/")) {
            return (
                StatusCode::SEE_OTHER,
                [(header::LOCATION, "/ui/login")],
                "this broker requires a token: log in at /ui/login",
            )
                .into_response();
        }
        if !admitted {
            let why = if given.is_some() {
                "the bearer token is not the one this broker expects (http.auth_token)"
            } else {
                "this broker requires a token: send Authorization: Bearer <http.auth_token>"
            };
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                Json(json!({ "error": why })),
            )
                .into_response();
        }
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // the AWS API's paths take a durable function's 6 MiB checkpoints
    let max = if super::lambda::is_aws_path(path) {
        gate.max_body_bytes.max(super::lambda::MAX_BODY)
    } else {
        gate.max_body_bytes
    };
    if let Some(n) = declared.filter(|n| *n > max as u64) {
        let why = format!(
            "the request body of {n} bytes is over the limit of {max} bytes (http.max_body_bytes)"
        );
        if super::lambda::is_aws_path(path) {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                [("x-amzn-ErrorType", "RequestTooLargeException")],
                Json(json!({"Type": "User", "message": why, "Message": why})),
            )
                .into_response();
        }
        return (StatusCode::PAYLOAD_TOO_LARGE, Json(json!({ "error": why }))).into_response();
    }
    next.run(req).await
}

/// An AWS-signed request on the AWS API's paths: its signature checked against the
/// configured key pair (the body is read to hash it), refused AWS-style otherwise.
async fn check_signed(gate: &Gate, req: Request, next: Next) -> Response {
    let refuse = |kind: &'static str, why: String| {
        (
            StatusCode::FORBIDDEN,
            [("x-amzn-ErrorType", kind)],
            // `__type` for the JSON 1.0 APIs (SWF), the header for rest-json (Lambda)
            Json(json!({"Type": "User", "__type": kind, "message": why, "Message": why})),
        )
            .into_response()
    };
    let Some(key) = gate.aws.as_deref() else {
        return refuse(
            "UnrecognizedClientException",
            "this broker takes AWS-signed requests only with a key pair configured: set \
             http.aws_access_key_id and http.aws_secret_access_key (or send Authorization: \
             Bearer <http.auth_token>)"
                .into(),
        );
    };
    let (parts, body) = req.into_parts();
    let limit = gate.max_body_bytes.max(super::lambda::MAX_BODY);
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            Json(json!({"error": format!("the request body is over the limit of {limit} bytes")})),
        )
            .into_response();
    };
    let checked = super::sigv4::verify(
        key,
        &parts.method,
        parts.uri.path(),
        parts.uri.query(),
        &parts.headers,
        &bytes,
        chrono::Utc::now(),
    );
    match checked {
        Ok(()) => next.run(Request::from_parts(parts, bytes.into())).await,
        Err(e) => refuse(e.aws_type(), e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let g = Gate::new(Some("s3cret".into()), 10);
        assert!(g.admits(Some(b"Bearer s3cret")));
        assert!(g.admits(Some(b"bearer s3cret ")));
        assert!(!g.admits(None));
        assert!(!g.admits(Some(b"Bearer s3cre")));
        assert!(!g.admits(Some(b"Bearer s3cretx")));
        assert!(!g.admits(Some(b"Basic s3cret")));
        assert!(!g.admits(Some(b"s3cret")));
        assert!(!g.admits(Some(b"Bearer ")));
        assert!(g.admits_token(Some(b"s3cret")));
        assert!(!g.admits_token(Some(b"s3cre")));
        assert_eq!(
            cookie(b"a=1; flowbroker_token=s3cret; b=2"),
            Some(&b"s3cret"[..])
        );
        assert_eq!(cookie(b"flowbroker_token_x=1"), None);
        let open = Gate::new(None, 10);
        assert!(open.admits(None));
        assert_eq!(g.authorization().as_deref(), Some("Bearer s3cret"));
        assert!(!format!("{g:?}").contains("s3cret"));
    }
}
