//! Task lists and task tokens. A task list is named per domain and per kind (decision or
//! activity tasks); a token names the execution, the task's kind and the events that
//! scheduled and started it, so a token from an attempt that timed out or finished is
//! recognised as stale without an index.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

/// Decision tasks or activity tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskKind {
    Decision,
    Activity,
}

/// A task list of a domain, for one kind of task.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TaskQueue {
    pub kind: TaskKind,
    pub domain: String,
    pub list: String,
}

/// A task handed to a poller: the execution's instance, the task's kind and the ids of the
/// events that scheduled and started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskToken {
    pub instance: String,
    pub kind: TaskKind,
    pub scheduled: i64,
    pub started: i64,
}

/// A token the broker did not issue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task token {0:?} was not issued by this service")]
pub struct BadToken(pub String);

impl TaskToken {
    pub fn encode(&self) -> String {
        let kind = match self.kind {
            TaskKind::Decision => 'd',
            TaskKind::Activity => 'a',
        };
        let raw = format!(
            "{kind}\x1f{}\x1f{}\x1f{}",
            self.instance, self.scheduled, self.started
        );
        URL_SAFE_NO_PAD.encode(raw)
    }

    pub fn decode(token: &str) -> Result<TaskToken, BadToken> {
        let bad = || BadToken(token.chars().take(64).collect());
        let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
        let raw = String::from_utf8(raw).map_err(|_| bad())?;
        let mut it = raw.split('\x1f');
        let kind = match it.next() {
            Some("d") => TaskKind::Decision,
            Some("a") => TaskKind::Activity,
            _ => return Err(bad()),
        };
        let (Some(instance), Some(s), Some(t), None) = (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(bad());
        };
        Ok(TaskToken {
            instance: instance.to_string(),
            kind,
            scheduled: s.parse().map_err(|_| bad())?,
            started: t.parse().map_err(|_| bad())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_back_and_foreign_ones_are_refused() {
        let t = TaskToken {
            instance: "p3-9f1c".into(),
            kind: TaskKind::Activity,
            scheduled: 5,
            started: 7,
        };
        assert_eq!(TaskToken::decode(&t.encode()), Ok(t));
        assert!(TaskToken::decode("12342e17-80f6-FAKE-TASK-TOKEN32f0223").is_err());
        assert!(TaskToken::decode("").is_err());
    }
}
