//! Lenient scalar fields: the spec types some fields as "string or integer", and YAML turns
//! `version: 1.0` into a number. These accept either and keep the user's spelling.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// A string that may be written as a number (`version: 1.0`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(transparent)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Text(s)),
            serde_json::Value::Number(n) => Ok(Text(n.to_string())),
            serde_json::Value::Bool(b) => Ok(Text(b.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "expected a string, found {}",
                kind(&other)
            ))),
        }
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A non-negative count written as an integer or a string of digits (`maxAttempts: "3"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Count(pub u32);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let n = match &v {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        n.and_then(|n| u32::try_from(n).ok())
            .map(Count)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "expected a non-negative integer (or a string of digits), found {}",
                    match &v {
                        serde_json::Value::String(s) => format!("{s:?}"),
                        other => other.to_string(),
                    }
                ))
            })
    }
}

pub(crate) fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
