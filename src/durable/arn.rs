//! The names the broker mints for durable executions, and reads back to find the execution:
//! the execution ARN (its last segment is the instance id, `/` written `_`), checkpoint
//! tokens (the instance and the checkpoint sequence the holder last saw) and callback ids
//! (the instance and the CALLBACK operation's id). Tokens and callback ids are standard
//! base64, as the API's patterns require; nothing here needs an index to route.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// The region and account the ARNs name (flowbroker has neither; SDKs only carry them).
pub const REGION: &str = "us-east-1";
pub const ACCOUNT: &str = "000000000000";

/// Why a name the broker minted could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("{0:?} is not a durable execution ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME:$LATEST/durable-execution/EXECUTION/ID)")]
    Arn(String),
    #[error("Invalid checkpoint token {0:?}: it was not issued by this broker")]
    Token(String),
    #[error("{0:?} is not a callback id issued by this broker")]
    Callback(String),
}

/// The ARN of function `function`'s execution `name`, instance `instance`.
pub fn execution_arn(function: &str, name: &str, instance: &str) -> String {
    format!(
        "{}/durable-execution/{}/{}",
        function_arn(function),
        name,
        instance.replace('/', "_")
    )
}

/// The function's ARN (version `$LATEST`).
pub fn function_arn(function: &str) -> String {
    format!("arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function}:$LATEST")
}

/// The instance an execution ARN names.
pub fn instance_of_arn(arn: &str) -> Result<String, NameError> {
    let bad = || NameError::Arn(arn.to_string());
    let (head, tail) = arn.split_once("/durable-execution/").ok_or_else(bad)?;
    if !head.starts_with("arn:") || !head.contains(":function:") {
        return Err(bad());
    }
    let (_name, id) = tail.split_once('/').ok_or_else(bad)?;
    let ok = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then(|| id.replace('_', "/")).ok_or_else(bad)
}

/// The function name in a function name or ARN (`orders`, `orders:$LATEST`,
/// `arn:aws:lambda:r:a:function:orders:1`).
pub fn function_of(name_or_arn: &str) -> &str {
    let rest = match name_or_arn.split_once("function:") {
        Some((_, rest)) => rest,
        None => name_or_arn,
    };
    rest.split(':').next().unwrap_or(rest)
}

/// A checkpoint token: valid while the execution's checkpoint sequence is `seq`.
pub fn token(instance: &str, seq: u64) -> String {
    STANDARD.encode(format!("{seq}:{instance}"))
}

/// The instance and sequence a checkpoint token carries.
pub fn read_token(token: &str) -> Result<(String, u64), NameError> {
    let bad = || NameError::Token(token.to_string());
    let text = String::from_utf8(STANDARD.decode(token).map_err(|_| bad())?).map_err(|_| bad())?;
    let (seq, instance) = text.split_once(':').ok_or_else(bad)?;
    Ok((instance.to_string(), seq.parse().map_err(|_| bad())?))
}

/// The callback id of CALLBACK operation `op` of `instance`.
pub fn callback_id(instance: &str, op: &str) -> String {
    STANDARD.encode(format!("{instance}\u{1f}{op}"))
}

/// The instance and operation id a callback id names.
pub fn read_callback(id: &str) -> Result<(String, String), NameError> {
    let bad = || NameError::Callback(id.to_string());
    let text = String::from_utf8(STANDARD.decode(id).map_err(|_| bad())?).map_err(|_| bad())?;
    let (instance, op) = text.split_once('\u{1f}').ok_or_else(bad)?;
    Ok((instance.to_string(), op.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let id = "p3-9b2f0c1e-2a4b-4c5d-8e6f-0a1b2c3d4e5f/4/inv";
        let arn = execution_arn("orders", "e1", id);
        assert!(arn.starts_with("arn:aws:lambda:us-east-1:000000000000:function:orders:$LATEST/durable-execution/e1/p3-"));
        assert_eq!(instance_of_arn(&arn).unwrap(), id);
        assert!(instance_of_arn("arn:aws:lambda:x/durable-execution/e1/a b").is_err());
        let t = token(id, 7);
        assert!(t
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c)));
        assert_eq!(read_token(&t).unwrap(), (id.to_string(), 7));
        assert!(read_token("bm9wZQ==").is_err());
        let cb = callback_id(id, "2-1");
        assert_eq!(
            read_callback(&cb).unwrap(),
            (id.to_string(), "2-1".to_string())
        );
        assert_eq!(
            function_of("arn:aws:lambda:r:1:function:orders:$LATEST"),
            "orders"
        );
        assert_eq!(function_of("orders"), "orders");
    }
}
