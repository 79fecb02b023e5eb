//! The fuzz targets, one function per untrusted input. Each takes arbitrary bytes and must
//! return without panicking, whatever they hold; errors are the expected answer to bad input.
//! The `afl` binaries call them under AFL++; `replay` runs saved inputs through them without
//! instrumentation; `seeds` writes the seed corpora from the project's fixtures.

use flowbroker::load::Format;

/// The targets by name.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("workflow", workflow),
    ("expr", expr),
    ("record", record),
    ("http", http),
    ("config", config),
];

/// A workflow file: the first byte picks JSON (even) or YAML (odd), and a Serverless Workflow
/// (bit 1 clear) or an ASL machine (set); the rest is the text. A definition that loads is
/// validated and compiled, as a deployment would.
pub fn workflow(data: &[u8]) {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let format = if pick % 2 == 0 {
        Format::Json
    } else {
        Format::Yaml
    };
    let text = String::from_utf8_lossy(text);
    if pick & 2 != 0 {
        let _ = flowbroker::asl::parse("fuzz.asl.json", &text, format);
        return;
    }
    let parsed = flowbroker::load::parse_workflow("fuzz", &text, format);
    if let Some(wf) = parsed.workflow {
        let _ = flowbroker::validate::validate("fuzz", &wf);
        let _ = flowbroker::definition::Definition::from_workflow(wf);
    }
}

/// An expression (up to the first NUL) and the JSON data it is evaluated on (after it).
pub fn expr(data: &[u8]) {
    let (source, rest) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let source = String::from_utf8_lossy(source);
    let doc: serde_json::Value = serde_json::from_slice(rest)
        .unwrap_or_else(|_| serde_json::json!({"a": [1, {"b": "x"}], "n": 2, "s": "t"}));
    for e in [
        flowbroker::expr::Expr::compile(&source),
        flowbroker::expr::Expr::template(&source),
    ]
    .into_iter()
    .flatten()
    {
        let _ = e.eval(&doc);
        let _ = e.select(&doc);
        let _ = e.is_true(&doc);
        let _ = e.stray_text();
    }
    asl_expr(&source, &doc);
}

/// The same text as an ASL path, Reference Path, intrinsic function call and JSONata
/// expression (compiled only: an evaluation may run for its full second).
fn asl_expr(source: &str, doc: &serde_json::Value) {
    use flowbroker::asl::{intrinsic, jsonata, path};
    let mut scope = path::Scope::default();
    scope.vars.insert("v".into(), doc.clone());
    if let Ok(p) = path::Path::compile(source) {
        let _ = p.select(doc, &scope);
    }
    if let Ok(p) = path::RefPath::compile(source) {
        let _ = p.get(doc, &scope);
        let _ = p.put(doc.clone(), serde_json::json!(1));
    }
    if let Ok(c) = intrinsic::parse(source) {
        let mut select = |p: &path::Path| {
            p.select(doc, &scope)
                .ok_or_else(|| flowbroker::asl::failure::Failure::new("States.Runtime", "none"))
        };
        let _ = c.eval(&mut select, &mut intrinsic::Dice::new("fuzz"));
    }
    let _ = jsonata::Expr::parse(source);
}

/// Reads length-prefixed fields off the front of the input.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }

    /// A field of the length its first byte gives; 255: absent.
    fn field(&mut self) -> Option<Option<&'a [u8]>> {
        let n = self.byte()?;
        if n == 255 {
            return Some(None);
        }
        let n = (n as usize).min(self.0.len());
        let (f, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(Some(f))
    }

    /// `(name, value)` pairs: a count byte (at most 15), then a name and a value field each.
    fn headers(&mut self) -> Vec<(String, Option<&'a [u8]>)> {
        let n = self.byte().unwrap_or(0) % 16;
        let mut out = Vec::new();
        for _ in 0..n {
            let (Some(name), Some(value)) = (self.field(), self.field()) else {
                break;
            };
            out.push((String::from_utf8_lossy(name.unwrap_or_default()).into(), value));
        }
        out
    }
}

/// Builds the input [`record`] and [`http`] read: headers, then the payload.
pub fn encode(headers: &[(&str, Option<&[u8]>)], payload: &[u8]) -> Vec<u8> {
    let mut out = vec![headers.len() as u8];
    for (k, v) in headers {
        out.push(k.len() as u8);
        out.extend_from_slice(k.as_bytes());
        match v {
            Some(v) => {
                out.push(v.len() as u8);
                out.extend_from_slice(v);
            }
            None => out.push(255),
        }
    }
    out.extend_from_slice(payload);
    out
}

/// A Kafka record (headers, some without a value, then the payload) through the decoder the
/// consumer uses.
pub fn record(data: &[u8]) {
    use rdkafka::message::{Header, OwnedHeaders, OwnedMessage, Timestamp};
    let mut c = Cursor(data);
    let headers = c.headers();
    let payload = c.0.to_vec();
    let mut h = OwnedHeaders::new_with_capacity(headers.len());
    for (key, value) in &headers {
        h = h.insert(Header {
            key: key.as_str(),
            value: *value,
        });
    }
    let msg = OwnedMessage::new(
        Some(payload),
        None,
        "fuzz".into(),
        Timestamp::NotAvailable,
        0,
        0,
        (!headers.is_empty()).then_some(h),
    );
    let _ = flowbroker::kafka::decode::decode(&msg);
}

/// An HTTP request (headers, then the body) through the CloudEvents ingress's reader.
pub fn http(data: &[u8]) {
    use axum::http::{HeaderMap, HeaderName, HeaderValue};
    let mut c = Cursor(data);
    let mut map = HeaderMap::new();
    for (key, value) in c.headers() {
        let (Ok(name), Some(Ok(value))) = (
            HeaderName::from_bytes(key.as_bytes()),
            value.map(HeaderValue::from_bytes),
        ) else {
            continue;
        };
        map.append(name, value);
    }
    let _ = flowbroker::cloudevent::from_http(&map, c.0.to_vec());
}

/// A config file's text (no environment).
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(cfg) = flowbroker::config::Config::parse(&text, "fuzz", Vec::new()) {
        let _ = cfg.windows(chrono::DateTime::UNIX_EPOCH);
        let _ = cfg.http.token();
    }
}
