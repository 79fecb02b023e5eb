//! Amazon SWF's decider model, the fourth language: the service keeps each execution's
//! history, hands it to the user's stateless decider with every decision task, and carries
//! out the decisions it returns. Here is the language's data as SWF spells it: domains and
//! their registered types ([`registry`]), history events ([`history`]), decisions
//! ([`decision`]), task lists and task tokens ([`task`]). The pure interpreter is
//! [`crate::engine::swf`]; the API is `http::swf`. docs/swf.md.

pub mod decision;
pub mod history;
pub mod registry;
pub mod task;

use crate::cluster::partition::{InstanceId, PartitionId, Partitions};

/// The built-in workflow id every SWF execution is an instance of.
pub const EXECUTIONS: &str = "swf";
/// The built-in workflow id every SWF domain is an instance of (its registered types).
pub const DOMAINS: &str = "swf-domain";

/// SWF's own limit on the events of one execution's history.
pub const MAX_HISTORY_EVENTS: usize = 25_000;

/// A domain and a workflow id: the key of an execution's runs. At most one run per key is
/// open; every run of a key lives on the key's state partition.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "camelCase")]
pub struct RunKey {
    pub domain: String,
    pub workflow_id: String,
}

impl RunKey {
    /// The key as the `Active` index stores it: `domain/workflowId` (SWF names contain no
    /// `/`).
    pub fn index_key(&self) -> String {
        format!("{}/{}", self.domain, self.workflow_id)
    }

    pub fn partition(&self, parts: Partitions) -> PartitionId {
        parts.of_key(EXECUTIONS, &self.index_key())
    }

    /// The instance id of run `run_id` (a UUID the broker minted) of this key.
    pub fn instance(&self, parts: Partitions, run_id: uuid::Uuid) -> InstanceId {
        InstanceId::new(self.partition(parts), run_id)
    }
}

/// The instance id of domain `name`'s registry.
pub fn domain_instance(parts: Partitions, name: &str) -> InstanceId {
    InstanceId::derived(parts.of_key(DOMAINS, name), name.as_bytes())
}

/// The run id SWF reports for an instance: its UUID.
pub fn run_id_of(instance: &str) -> &str {
    instance.split_once('-').map_or(instance, |(_, u)| u)
}

/// Why a name is not one SWF accepts: 1 to 256 characters, none of `:` `/` `|`, no control
/// characters, and not the literal `arn`.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let bad = name.is_empty()
        || name.chars().count() > 256
        || name == "arn"
        || name
            .chars()
            .any(|c| matches!(c, ':' | '/' | '|') || c.is_control());
    if bad {
        Err(format!(
            "{what} {name:?} is not valid: 1 to 256 characters, without ':', '/', '|', control \
             characters or the literal string \"arn\""
        ))
    } else {
        Ok(())
    }
}

/// A timeout as SWF writes it: seconds as a string, or `NONE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Timeout(pub Option<u64>);

impl Timeout {
    /// Reads `"60"` or `"NONE"`.
    pub fn parse(text: &str) -> Result<Timeout, String> {
        if text == "NONE" {
            return Ok(Timeout(None));
        }
        text.parse::<u64>()
            .map(|s| Timeout(Some(s)))
            .map_err(|_| format!("timeout {text:?} is not a number of seconds or \"NONE\""))
    }

    pub fn wire(self) -> String {
        match self.0 {
            Some(s) => s.to_string(),
            None => "NONE".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_timeouts_follow_swf_rules() {
        assert!(check_name("domain", "orders-1.0").is_ok());
        assert!(check_name("domain", "a/b").is_err());
        assert!(check_name("domain", "barnacle").is_ok());
        assert!(check_name("domain", "arn").is_err());
        assert!(check_name("domain", "").is_err());
        assert_eq!(Timeout::parse("NONE"), Ok(Timeout(None)));
        assert_eq!(Timeout::parse("60").unwrap().wire(), "60");
        assert!(Timeout::parse("1m").is_err());
    }

    #[test]
    fn runs_of_a_key_share_its_partition() {
        let parts = Partitions::new(12).unwrap();
        let k = RunKey {
            domain: "d".into(),
            workflow_id: "order-1".into(),
        };
        let a = k.instance(parts, uuid::Uuid::new_v4()).to_string();
        let b = k.instance(parts, uuid::Uuid::new_v4()).to_string();
        assert_eq!(parts.of_instance(&a), parts.of_instance(&b));
        assert_eq!(run_id_of(&a).len(), 36);
    }
}
