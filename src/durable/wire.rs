//! The durable execution API's data, spelled as AWS spells it (botocore's `lambda` model,
//! rest-json): operations as the broker records them and hands them to the SDK, the updates a
//! checkpoint carries, error objects. Timestamps travel as epoch seconds.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What an operation is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OpType {
    Execution,
    Context,
    Step,
    Wait,
    Callback,
    ChainedInvoke,
}

/// Where an operation is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OpStatus {
    Started,
    Pending,
    Ready,
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
    Stopped,
}

impl OpStatus {
    pub fn is_final(self) -> bool {
        matches!(
            self,
            OpStatus::Succeeded
                | OpStatus::Failed
                | OpStatus::Cancelled
                | OpStatus::TimedOut
                | OpStatus::Stopped
        )
    }
}

/// What a checkpoint asks of an operation.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OpAction {
    Start,
    Succeed,
    Fail,
    Retry,
    Cancel,
}

/// An error as Lambda reports one (`ErrorObject`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "PascalCase")]
pub struct ErrorObject {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_data: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack_trace: Vec<String>,
}

impl ErrorObject {
    pub fn new(error_type: &str, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            error_type: Some(error_type.to_string()),
            error_message: Some(message.into()),
            ..ErrorObject::default()
        }
    }
}

/// One operation of an execution, as `GetDurableExecutionState` returns it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct Operation {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "Type")]
    pub op_type: OpType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_type: Option<String>,
    pub status: OpStatus,
    #[serde(with = "epoch")]
    pub start_timestamp: DateTime<Utc>,
    #[serde(
        default,
        with = "epoch::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_timestamp: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_details: Option<ExecutionDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_details: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_details: Option<StepDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_details: Option<WaitDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_details: Option<CallbackDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chained_invoke_details: Option<Outcome>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct ExecutionDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_payload: Option<String>,
}

/// A result or an error: `ContextDetails` (with `ReplayChildren`) and
/// `ChainedInvokeDetails` (without).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct Outcome {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_children: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct StepDetails {
    #[serde(default)]
    pub attempt: u32,
    #[serde(
        default,
        with = "epoch::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_attempt_timestamp: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct WaitDetails {
    #[serde(
        default,
        with = "epoch::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub scheduled_end_timestamp: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct CallbackDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// One change a checkpoint asks for (`OperationUpdate`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct OperationUpdate {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "Type")]
    pub op_type: OpType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_type: Option<String>,
    pub action: OpAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_options: Option<ContextOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_options: Option<StepOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_options: Option<WaitOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_options: Option<CallbackOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chained_invoke_options: Option<ChainedInvokeOptions>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct ContextOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_children: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct StepOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_delay_seconds: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct WaitOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct CallbackOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_timeout_seconds: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct ChainedInvokeOptions {
    pub function_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
}

/// Timestamps as epoch seconds with fractions (rest-json's default); strings in RFC 3339 are
/// read too.
pub mod epoch {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(t.timestamp_millis() as f64 / 1000.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum T {
            Secs(f64),
            Text(String),
        }
        let bad = || serde::de::Error::custom("not a timestamp");
        match T::deserialize(d)? {
            T::Secs(s) => {
                DateTime::from_timestamp_millis((s * 1000.0).round() as i64).ok_or_else(bad)
            }
            T::Text(t) => DateTime::parse_from_rfc3339(&t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| bad()),
        }
    }

    pub mod option {
        use chrono::{DateTime, Utc};
        use serde::{Deserializer, Serializer};

        pub fn serialize<S: Serializer>(
            t: &Option<DateTime<Utc>>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => super::serialize(t, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<DateTime<Utc>>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}
