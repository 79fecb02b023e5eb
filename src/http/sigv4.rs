//! AWS Signature Version 4, checked on the AWS API's paths when `http.auth_token` is set:
//! every AWS SDK signs its requests with a key pair, so a broker configured with one
//! (`http.aws_access_key_id`, `http.aws_secret_access_key`) admits requests signed with it
//! and refuses any other signature, as S3-compatible servers do. The canonical request is
//! built as botocore builds it for non-S3 services (the path as sent, URI-encoded once more;
//! the query's pairs sorted; the signed headers; the body's SHA-256).

use axum::http::{HeaderMap, Method};
use chrono::{DateTime, NaiveDateTime, Utc};
use ring::{digest, hmac};
use subtle::ConstantTimeEq;

/// How far a request's `X-Amz-Date` may be from the broker's clock (AWS's rule).
pub const MAX_SKEW_SECS: i64 = 15 * 60;

/// The key pair requests must be signed with.
#[derive(Clone)]
pub struct AwsKey {
    pub access_key_id: String,
    pub secret: String,
}

impl std::fmt::Debug for AwsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsKey")
            .field("access_key_id", &self.access_key_id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Why a signed request was refused; the `x-amzn-ErrorType` AWS would answer with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigError {
    #[error("the Authorization header is not an AWS4-HMAC-SHA256 signature: {0}")]
    Malformed(String),
    #[error("the access key id {0:?} is not the one this broker admits (http.aws_access_key_id)")]
    UnknownKey(String),
    #[error("the request's X-Amz-Date {0:?} is missing, unreadable or more than 15 minutes from the broker's clock")]
    Skewed(String),
    #[error("the request signature does not match: check the secret access key (http.aws_secret_access_key) and the endpoint URL")]
    Mismatch,
}

impl SigError {
    pub fn aws_type(&self) -> &'static str {
        match self {
            SigError::Malformed(_) => "IncompleteSignatureException",
            SigError::UnknownKey(_) => "UnrecognizedClientException",
            SigError::Skewed(_) => "InvalidSignatureException",
            SigError::Mismatch => "InvalidSignatureException",
        }
    }
}

/// Whether an `Authorization` value is a SigV4 signature.
pub fn is_signed(authorization: &str) -> bool {
    authorization.starts_with("AWS4-HMAC-SHA256 ")
}

struct Parts<'a> {
    key_id: &'a str,
    scope: &'a str,
    signed: Vec<&'a str>,
    signature: &'a str,
}

fn parse(authorization: &str) -> Result<Parts<'_>, SigError> {
    let bad = |why: &str| SigError::Malformed(why.to_string());
    let rest = authorization
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or_else(|| bad("not AWS4-HMAC-SHA256"))?;
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=').ok_or_else(|| bad(part))?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => signature = Some(v),
            _ => {}
        }
    }
    let credential = credential.ok_or_else(|| bad("no Credential"))?;
    let (key_id, scope) = credential
        .split_once('/')
        .ok_or_else(|| bad("Credential has no scope"))?;
    Ok(Parts {
        key_id,
        scope,
        signed: signed
            .ok_or_else(|| bad("no SignedHeaders"))?
            .split(';')
            .collect(),
        signature: signature.ok_or_else(|| bad("no Signature"))?,
    })
}

/// Checks a signed request against `key` at time `now`.
#[allow(clippy::too_many_arguments)]
pub fn verify(
    key: &AwsKey,
    method: &Method,
    raw_path: &str,
    raw_query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), SigError> {
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let p = parse(authorization)?;
    if p.key_id != key.access_key_id {
        return Err(SigError::UnknownKey(p.key_id.to_string()));
    }
    let amz_date = headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let at = NaiveDateTime::parse_from_str(amz_date, "%Y%m%dT%H%M%SZ")
        .map(|t| t.and_utc())
        .map_err(|_| SigError::Skewed(amz_date.to_string()))?;
    if (now - at).num_seconds().abs() > MAX_SKEW_SECS {
        return Err(SigError::Skewed(amz_date.to_string()));
    }
    let mut canonical_headers = String::new();
    for name in &p.signed {
        let values: Vec<String> = headers
            .get_all(*name)
            .iter()
            .map(|v| collapse(v.to_str().unwrap_or_default()))
            .collect();
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let payload = headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| hex(digest::digest(&digest::SHA256, body).as_ref()));
    let canonical = format!(
        "{method}\n{}\n{}\n{canonical_headers}\n{}\n{payload}",
        encode(raw_path, true),
        canonical_query(raw_query.unwrap_or_default()),
        p.signed.join(";"),
    );
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{}\n{}",
        p.scope,
        hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
    );
    let mut k = format!("AWS4{}", key.secret).into_bytes();
    for part in p.scope.split('/') {
        k = sign(&k, part.as_bytes());
    }
    let expected = hex(&sign(&k, to_sign.as_bytes()));
    if expected.as_bytes().ct_eq(p.signature.as_bytes()).into() {
        Ok(())
    } else {
        Err(SigError::Mismatch)
    }
}

fn sign(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn collapse(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// URI-encodes as SigV4 does: unreserved characters (and `/` in a path) stay.
fn encode(s: &str, path: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if path => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The query's pairs decoded, encoded as SigV4 wants, sorted.
fn canonical_query(q: &str) -> String {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let mut pairs: Vec<(String, String)> = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (encode(&decode(k), false), encode(&decode(v), false))
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's documented example (IAM ListUsers, "Examples of the complete Signature
    /// Version 4 signing process"): the signature it gives.
    #[test]
    fn the_documented_example_verifies() {
        let key = AwsKey {
            access_key_id: "AKIDEXAMPLE".into(),
            secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        };
        let mut h = HeaderMap::new();
        h.insert(
            "content-type",
            "application/x-www-form-urlencoded; charset=utf-8"
                .parse()
                .unwrap(),
        );
        h.insert("host", "iam.amazonaws.com".parse().unwrap());
        h.insert("x-amz-date", "20150830T123600Z".parse().unwrap());
        h.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
                .parse()
                .unwrap(),
        );
        let at = "2015-08-30T12:40:00Z".parse().unwrap();
        let q = Some("Action=ListUsers&Version=2010-05-08");
        assert_eq!(verify(&key, &Method::GET, "/", q, &h, b"", at), Ok(()));
        let other = AwsKey {
            secret: "wrong".into(),
            ..key.clone()
        };
        assert_eq!(
            verify(&other, &Method::GET, "/", q, &h, b"", at),
            Err(SigError::Mismatch)
        );
        let late = "2015-08-30T13:00:00Z".parse().unwrap();
        assert!(matches!(
            verify(&key, &Method::GET, "/", q, &h, b"", late),
            Err(SigError::Skewed(_))
        ));
        let stranger = AwsKey {
            access_key_id: "AKIDOTHER".into(),
            ..key
        };
        assert!(matches!(
            verify(&stranger, &Method::GET, "/", q, &h, b"", at),
            Err(SigError::UnknownKey(_))
        ));
    }

    #[test]
    fn paths_are_encoded_once_more_as_botocore_signs_them() {
        assert_eq!(
            encode(
                "/2025-12-01/durable-executions/arn%3Aaws%2Fx/checkpoint",
                true
            ),
            "/2025-12-01/durable-executions/arn%253Aaws%252Fx/checkpoint"
        );
        assert_eq!(canonical_query("b=2&a=x%2By&a=1"), "a=1&a=x%2By&b=2");
    }
}
