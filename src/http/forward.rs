//! One cluster, one API: a request about a state partition another broker owns is forwarded
//! to that broker's `http.advertised_url` (from the directory of claims), and its answer is
//! relayed as it is. A forwarded request carries `flowbroker-forwarded: 1` and is never
//! forwarded again; a broker that does not own the partition (any more) answers 503 with
//! `Retry-After`, as does any broker while a partition has no announced owner (a hand-off in
//! progress). Lists ask every owner once and say which partitions answered.

use crate::broker::shared::Shared;
use crate::cluster::partition::{PartitionId, Partitions};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Marks a request one broker forwarded to another.
pub const FORWARDED: &str = "flowbroker-forwarded";

/// How long a forwarded request may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Where a request about one state partition is answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// This broker owns the partition.
    Local,
    /// The broker at this URL announced it owns the partition.
    Remote(String),
    /// Nobody can answer now (why); the client retries.
    Unavailable(String),
}

/// This broker's view of the others: its own name (to recognise its own stale claims), the
/// partition count, and an HTTP client.
#[derive(Clone)]
pub struct Peers {
    me: String,
    pub parts: Partitions,
    client: reqwest::Client,
}

/// Builds the client peers are asked with; it sends `authorization` (the cluster's shared
/// token) on every request.
fn client(authorization: Option<String>) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(value) = authorization.and_then(|a| HeaderValue::from_str(&a).ok()) {
        let mut value = value;
        value.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, value);
    }
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .default_headers(headers)
        .build()
        .expect("an HTTP client")
}

/// Another broker's answer, read whole.
pub struct Answer {
    pub status: StatusCode,
    /// `Content-Type`.
    pub kind: Option<HeaderValue>,
    /// `Retry-After`.
    pub retry: Option<HeaderValue>,
    pub body: axum::body::Bytes,
}

impl Answer {
    /// The `error` of a JSON error body, else the body as text.
    pub fn error(&self) -> String {
        serde_json::from_slice::<Value>(&self.body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&self.body).into_owned())
    }
}

/// Whether the request came from another broker.
pub fn forwarded(headers: &HeaderMap) -> bool {
    headers.contains_key(FORWARDED)
}

/// 503 with `Retry-After: 1` and the reason.
pub fn unavailable(why: String) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1")],
        Json(json!({ "error": why })),
    )
        .into_response()
}

impl Peers {
    /// `authorization`: the header value sent to the others (their shared token).
    pub fn new(me: String, parts: Partitions, authorization: Option<String>) -> Peers {
        Peers {
            me,
            parts,
            client: client(authorization),
        }
    }

    pub fn route(&self, shared: &Shared, p: PartitionId, forwarded: bool) -> Route {
        if shared.owns(p) {
            return Route::Local;
        }
        if forwarded {
            return Route::Unavailable(format!(
                "this broker does not own state partition {p} (it moved); retry"
            ));
        }
        let dir = shared.directory.read();
        match dir.as_ref().ok().and_then(|d| d.owner(p)) {
            Some(c) if c.broker != self.me => Route::Remote(c.url.clone()),
            Some(_) => Route::Unavailable(format!(
                "state partition {p} is moving: this broker let it go and its next owner has \
                 not announced itself yet; retry"
            )),
            None => Route::Unavailable(format!(
                "state partition {p} has no owner yet (the consumer group is assigning \
                 partitions); retry"
            )),
        }
    }

    /// Sends the request to the broker at `url` and relays its answer (status, content type
    /// and body); an owner that does not answer is a 503.
    pub async fn relay(
        &self,
        method: Method,
        url: &str,
        path_and_query: &str,
        body: Option<Vec<u8>>,
    ) -> Response {
        self.relay_with(method, url, path_and_query, body, &[])
            .await
    }

    /// [`Peers::relay`] with more request headers (an AWS JSON API's `X-Amz-Target`).
    pub async fn relay_with(
        &self,
        method: Method,
        url: &str,
        path_and_query: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Response {
        match self.ask(method, url, path_and_query, body, headers).await {
            Ok(a) => {
                let mut resp = (a.status, a.body).into_response();
                let h = resp.headers_mut();
                h.insert(
                    header::CONTENT_TYPE,
                    a.kind
                        .unwrap_or(HeaderValue::from_static("application/json")),
                );
                if let Some(r) = a.retry {
                    h.insert(header::RETRY_AFTER, r);
                }
                resp
            }
            Err(e) => unavailable(format!("the broker at {url} did not answer: {e}; retry")),
        }
    }

    /// Sends the request to the broker at `url` and reads its whole answer.
    pub async fn ask(
        &self,
        method: Method,
        url: &str,
        path_and_query: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Result<Answer, reqwest::Error> {
        let mut req = self
            .client
            .request(method, format!("{url}{path_and_query}"))
            .header(FORWARDED, "1");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.header(header::CONTENT_TYPE, "application/json").body(b);
        }
        let r = req.send().await?;
        Ok(Answer {
            status: r.status(),
            kind: r.headers().get(header::CONTENT_TYPE).cloned(),
            retry: r.headers().get(header::RETRY_AFTER).cloned(),
            body: r.bytes().await?,
        })
    }

    /// Asks the owner of every partition this broker does not own for `path_and_query` (a
    /// list answered with `{field: [...], "statePartitions": {"answered": [...]}}`), once per
    /// owner. Returns the items of each partition from the first owner that answered for it,
    /// and the partitions nobody answered for. `local` are the partitions already answered.
    pub async fn gather(
        &self,
        shared: &Shared,
        local: &BTreeSet<PartitionId>,
        path_and_query: &str,
        field: &str,
        partition_of: impl Fn(&Value) -> Option<PartitionId>,
    ) -> (Vec<Value>, BTreeSet<PartitionId>) {
        let mut owners: BTreeSet<String> = BTreeSet::new();
        for p in self.parts.all().filter(|p| !local.contains(p)) {
            if let Route::Remote(url) = self.route(shared, p, false) {
                owners.insert(url);
            }
        }
        let asks = owners.iter().map(|url| async move {
            let r = self
                .client
                .get(format!("{url}{path_and_query}"))
                .header(FORWARDED, "1")
                .send()
                .await
                .ok()?;
            if !r.status().is_success() {
                return None;
            }
            r.json::<Value>().await.ok()
        });
        let answers = futures::future::join_all(asks).await;
        let mut covered = local.clone();
        let mut items = Vec::new();
        for v in answers.into_iter().flatten() {
            let answered: BTreeSet<PartitionId> = v["statePartitions"]["answered"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_u64())
                        .map(|x| PartitionId(x as u16))
                        .filter(|p| !covered.contains(p))
                        .collect()
                })
                .unwrap_or_default();
            let mut got: BTreeMap<PartitionId, Vec<Value>> = BTreeMap::new();
            for item in v[field].as_array().cloned().unwrap_or_default() {
                if let Some(p) = partition_of(&item).filter(|p| answered.contains(p)) {
                    got.entry(p).or_default().push(item);
                }
            }
            items.extend(got.into_values().flatten());
            covered.extend(answered);
        }
        let missing = self.parts.all().filter(|p| !covered.contains(p)).collect();
        (items, missing)
    }
}
