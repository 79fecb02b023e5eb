//! Records of the work topic: everything a state partition applies arrives as one of these, on
//! the work topic's partition of the same number. Each carries where it came from; the
//! receiving partition keeps, per source, the highest position it applied and drops copies at
//! or below it (a re-forward after an ingress crash, an outbox re-sent after a hand-off). That
//! makes applying them exactly once without Kafka transactions and without event-id dedupe.

use super::partition::PartitionId;
use crate::engine::Event;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where the work reader reads a state partition from, for one take-over: the core drops
/// batches of an earlier read (fetched before the partition was let go and taken again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadFrom {
    /// The work topic offset to read from.
    pub offset: i64,
    /// Which take-over this read belongs to (grows with each one).
    pub epoch: u64,
}

/// Where a work record came from, and its position there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "camelCase")]
pub enum Source {
    /// A record of a user's input topic, forwarded by the ingress.
    Input {
        topic: String,
        partition: i32,
        offset: i64,
    },
    /// A message another state partition sent from its outbox: `fence` is the changelog
    /// offset of its owner's fence when the message was made (0 without a changelog), `seq`
    /// its outbox sequence number. A new owner's messages rank above an old owner's, so a
    /// sequence number an old owner used in a batch that was fenced out never hides one.
    Partition {
        partition: PartitionId,
        #[serde(default)]
        fence: i64,
        seq: u64,
    },
    /// A request to one broker's HTTP API (retries are made safe by ids, not positions).
    Http,
}

/// The slot a source's positions are counted in, and the position: an input offset
/// `(0, offset)`, or a message's `(fence, seq)`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub slot: SourceSlot,
    pub at: (i64, i64),
}

/// A source whose positions only grow: an input topic partition, or a sending partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceSlot {
    Input { topic: String, partition: i32 },
    Partition(PartitionId),
}

impl std::fmt::Display for SourceSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceSlot::Input { topic, partition } => write!(f, "in:{topic}:{partition}"),
            SourceSlot::Partition(p) => write!(f, "part:{p}"),
        }
    }
}

impl Source {
    /// The position to deduplicate on; `None` for sources without one.
    pub fn position(&self) -> Option<Position> {
        match self {
            Source::Input {
                topic,
                partition,
                offset,
            } => Some(Position {
                slot: SourceSlot::Input {
                    topic: topic.clone(),
                    partition: *partition,
                },
                at: (0, *offset),
            }),
            Source::Partition {
                partition,
                fence,
                seq,
            } => Some(Position {
                slot: SourceSlot::Partition(*partition),
                at: (*fence, *seq as i64),
            }),
            Source::Http => None,
        }
    }
}

/// One record of the work topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "work", rename_all = "camelCase")]
pub enum Work {
    /// An event to correlate on this partition (its key, or its `workflowinstanceid`, is here).
    /// `only`: correlate for this workflow alone (an event an instance handed back). `sole`:
    /// this partition is the event's only target, so it may count it as unmatched.
    Event {
        event: Event,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        only: Option<String>,
        #[serde(default)]
        sole: bool,
        /// Handed back by an instance with values not pinned yet that no longer took it: it
        /// is not sent to such instances of other partitions again, so it cannot bounce.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        returned: bool,
        source: Source,
    },
    /// A direct start with the id the API chose (deterministic for an `Idempotency-Key`).
    Start {
        id: String,
        workflow: String,
        input: Value,
        source: Source,
        /// The request's trace context, continued by the instance.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trace: Option<crate::trace::Carrier>,
        /// The instance (on another partition) that started this one as its child: told with
        /// `ChildFailed` when the start is refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
    },
    /// An SWF call for the run `run_id` of `key` (its open run when `None`), from the
    /// instance `from` on another partition; `failed` goes back to it when no such run is
    /// open (`Action::SendToRun`).
    SwfToRun {
        key: crate::swf::RunKey,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        call: Box<crate::engine::swf::Call>,
        from: String,
        failed: Box<crate::engine::Input>,
        source: Source,
    },
    /// From a domain's partition: an SWF start event (`flowbroker.swf.start`) with its start
    /// attributes resolved against the domain's registry, for the workflow id's partition.
    SwfStart {
        event: Event,
        attrs: Value,
        source: Source,
    },
    /// Cancel an instance of this partition.
    Cancel { id: String, source: Source },
    /// Apply an input to an instance of this partition: from an API request (a durable
    /// function's checkpoint, an SWF call), answered with the instance after it by the owner
    /// that took the request; or from another partition's instance (`Action::Send`).
    Apply {
        id: String,
        input: Box<crate::engine::Input>,
        source: Source,
    },
    /// From another partition: an event for `instance`, which lives here. `unpinned` when the
    /// instance matched as one with nothing pinned yet: if it no longer accepts the event, the
    /// event goes back to its key's partition (docs/scale.md "Routing").
    Deliver {
        instance: String,
        event: Event,
        unpinned: bool,
        source: Source,
    },
    /// From an instance's partition: its index entries for keys this partition owns.
    Index {
        changes: Vec<IndexChange>,
        source: Source,
    },
    /// An input record that is not a usable CloudEvent, to copy to the dead-letter topic with
    /// the reason (`kind`: `not_cloudevent`, `bad_data`, `bad_attribute`, `too_large`,
    /// `unmatched`).
    DeadLetter {
        key: Option<Vec<u8>>,
        payload: Option<Vec<u8>>,
        headers: Vec<(String, Vec<u8>)>,
        kind: String,
        reason: String,
        source: Source,
    },
}

impl Work {
    pub fn source(&self) -> &Source {
        match self {
            Work::Event { source, .. }
            | Work::Start { source, .. }
            | Work::SwfStart { source, .. }
            | Work::SwfToRun { source, .. }
            | Work::Cancel { source, .. }
            | Work::Apply { source, .. }
            | Work::Deliver { source, .. }
            | Work::Index { source, .. }
            | Work::DeadLetter { source, .. } => source,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("work records serialize")
    }

    pub fn decode(bytes: &[u8]) -> Result<Work, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// An index entry of a remote instance added or removed on a key's partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexChange {
    /// `Waits` or `Active`.
    pub entry: IndexEntry,
    /// The entry's key in its table.
    pub key: String,
    /// The instance it points to (`Active` values, the last part of `Waits` keys).
    pub instance: String,
    pub present: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IndexEntry {
    Waits,
    Active,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_round_trip_and_name_their_position() {
        let w = Work::Start {
            id: "p1-x".into(),
            workflow: "order".into(),
            input: json!({"a": 1}),
            parent: None,
            trace: Some(crate::trace::Carrier {
                traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
                tracestate: None,
            }),
            source: Source::Partition {
                partition: PartitionId(3),
                fence: 7,
                seq: 42,
            },
        };
        assert_eq!(Work::decode(&w.encode()).unwrap(), w);
        assert_eq!(
            w.source().position(),
            Some(Position {
                slot: SourceSlot::Partition(PartitionId(3)),
                at: (7, 42)
            })
        );
        let input = Source::Input {
            topic: "in".into(),
            partition: 2,
            offset: 9,
        };
        assert_eq!(input.position().unwrap().slot.to_string(), "in:in:2");
        // a later owner's first message ranks above an earlier owner's last
        let old = Source::Partition {
            partition: PartitionId(3),
            fence: 7,
            seq: 900,
        };
        let new = Source::Partition {
            partition: PartitionId(3),
            fence: 12,
            seq: 1,
        };
        assert!(new.position() > old.position());
        assert_eq!(Source::Http.position(), None);
    }
}
