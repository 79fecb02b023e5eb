//! The HTTP client of the CLI's broker commands: the server from `--server` or
//! `FLOWBROKER_SERVER`, the bearer token from `--token`/`FLOWBROKER_HTTP_AUTH_TOKEN` (or a file),
//! answers as JSON with errors that say what to do.

use serde_json::Value;
use std::time::Duration;

/// Where the broker is and how to get in.
#[derive(Debug, Clone, clap::Args)]
pub struct Server {
    /// The broker's HTTP API.
    #[arg(
        long,
        global = true,
        env = "FLOWBROKER_SERVER",
        default_value = "http://127.0.0.1:8080"
    )]
    pub server: String,
    /// Bearer token, when the broker has `http.auth_token` set.
    #[arg(
        long,
        global = true,
        env = "FLOWBROKER_HTTP_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Read the bearer token from this file (a mounted secret).
    #[arg(long, global = true, env = "FLOWBROKER_HTTP_AUTH_TOKEN_FILE")]
    pub token_file: Option<std::path::PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the broker at {server} ({why}); is it running? Set --server or FLOWBROKER_SERVER")]
    Unreachable { server: String, why: String },
    #[error("{method} {path}: {status}: {message}")]
    Api {
        method: &'static str,
        path: String,
        status: u16,
        message: String,
    },
    #[error("the broker answered {path} with something that is not JSON: {why}")]
    NotJson { path: String, why: String },
    #[error("cannot read the token file {path}: {why}")]
    TokenFile { path: String, why: String },
    #[error("{0}")]
    Runtime(String),
}

impl ClientError {
    /// The HTTP status, for an answer the broker gave.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A blocking client (one request at a time, on a small runtime of its own).
pub struct Client {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

impl Client {
    pub fn new(s: &Server) -> Result<Client, ClientError> {
        let token = match (&s.token, &s.token_file) {
            (Some(t), _) if !t.is_empty() => Some(t.clone()),
            (_, Some(path)) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| ClientError::TokenFile {
                        path: path.display().to_string(),
                        why: e.to_string(),
                    })?
                    .trim()
                    .to_string(),
            ),
            _ => None,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Runtime(e.to_string()))?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ClientError::Runtime(e.to_string()))?;
        Ok(Client {
            base: s.server.trim_end_matches('/').to_string(),
            token,
            http,
            rt,
        })
    }

    pub fn get(&self, path: &str) -> Result<Value, ClientError> {
        self.call(reqwest::Method::GET, "GET", path, None, &[])
    }

    pub fn post(
        &self,
        path: &str,
        body: &Value,
        headers: &[(&str, String)],
    ) -> Result<Value, ClientError> {
        self.call(reqwest::Method::POST, "POST", path, Some(body), headers)
    }

    fn call(
        &self,
        method: reqwest::Method,
        name: &'static str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
    ) -> Result<Value, ClientError> {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        self.rt.block_on(async {
            let r = req.send().await.map_err(|e| ClientError::Unreachable {
                server: self.base.clone(),
                why: root_cause(&e),
            })?;
            let status = r.status();
            let text = r.text().await.map_err(|e| ClientError::Unreachable {
                server: self.base.clone(),
                why: root_cause(&e),
            })?;
            if !status.is_success() {
                let message = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v["error"].as_str().map(str::to_string))
                    .unwrap_or_else(|| text.trim().to_string());
                let message = match status.as_u16() {
                    401 => format!("{message} (pass the broker's token with --token or FLOWBROKER_HTTP_AUTH_TOKEN)"),
                    _ => message,
                };
                return Err(ClientError::Api {
                    method: name,
                    path: path.to_string(),
                    status: status.as_u16(),
                    message,
                });
            }
            if text.trim().is_empty() {
                return Ok(Value::Null);
            }
            serde_json::from_str(&text).map_err(|e| ClientError::NotJson {
                path: path.to_string(),
                why: e.to_string(),
            })
        })
    }
}

/// The innermost cause of a request error ("Connection refused", not "error sending request").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// An id or name as one path segment (child instance ids keep their `/`).
pub fn segment(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ' ' => "%20".to_string(),
            '?' => "%3F".to_string(),
            '#' => "%23".to_string(),
            '%' => "%25".to_string(),
            c => c.to_string(),
        })
        .collect()
}
