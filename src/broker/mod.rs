//! The running broker's core: everything between decoded inputs and stored effects.
//!
//! - [`core`]: dispatches commands (Kafka records, HTTP events, admin requests, function
//!   results, outbox acks, workflow file changes), runs rounds of the state partitions'
//!   inputs, one transaction per partition per round; `round`: building a round (inputs of
//!   partitions owned elsewhere forwarded, each owned partition's batch, with its due timers,
//!   applied by its processor in steps, the steps' changelog appends); [`processor`]: one state
//!   partition's batch applied in one transaction, returning its writes, effects and what
//!   its requests came to; `pool`: the processor threads a step's partitions are applied on
//!   at once; `flight`: rounds whose changelog appends are on their way; `landing`: landing them
//!   (fence check, commit, then effects); `tickets`: requests waiting on a round;
//!   [`error`]: why the core stopped; `checkpoints`: node-scope records (each partition's
//!   changelog checkpoint).
//! - The files that add methods to `Core` (`round`, `landing`, `handoff`, `intake`,
//!   `requests`, `resume`, `deploy`) import from `core`, and `core` imports from
//!   none of them; their methods still call each other (`Core::build` calls `steps`,
//!   `land`, `take_over`...), which an import check does not see.
//! - `effects` (outbox, timers, buffer, lifecycle events inside a batch; [`lifecycle`] builds
//!   those events), `deploy`, `sweep`:
//!   the core's work on file changes, due timers and expired buffered events; [`gauges`]:
//!   store-kept metrics.
//! - `handoff`: taking a state partition over (fence, restore, resume), letting it go, and
//!   noticing that another broker fenced this one out; [`resume`]: a restarted broker
//!   taking back at once what its node held last; `snapshots`: writing and loading snapshots
//!   of the owned partitions; [`standby`]: warm copies of other brokers' partitions.
//! - [`batch`]: applying inputs to instances inside one state partition's transaction
//!   (indexes, actions, children, lifecycle events, outbox, calls, timers, messages to other
//!   partitions); [`hot`]: instance records kept decoded between batches.
//! - [`ingest`]: inputs (Kafka records, HTTP events) as work records for the partitions that
//!   own their keys; `intake`: routing consumed input records (directly, held, or through
//!   the work topic); `requests`: the other commands (API requests, the producer's reports,
//!   work topic records) as partition inputs; [`direct`]: when an input record may skip the
//!   work topic into a partition owned here; [`held`]: input records waiting for that, in
//!   order; [`apply`]: applying a work record on its partition, exactly once by its source
//!   position.
//! - [`router`]: correlating a consumed event to instances or starts; `addressed`: events
//!   addressed by attribute (task token answers, `flowbroker.workflow.start`); `answers`:
//!   which instance a task token or callback answer names.
//! - [`dedupe`]: dropping events whose source and id were already consumed.
//! - [`index`]: correlation keys and index entries; [`active`]: the `Active` table's entries,
//!   removed unread (an overwritten one is marked); `unpinned`: the heads of waits keys with
//!   a value not pinned, so that an event scans only those in use; `kept`: whether a
//!   partition keeps those marks and heads complete (heads are counted into an older one).
//! - [`registry`]: deployed workflow versions and the event-type index.
//! - [`schedule`]: cron starts, exactly once, with catch-up.
//! - [`window`]: interval windows and `directInvoke`.
//! - [`history`]: instance history entries, their payloads kept beside them, and the cap on
//!   entries per instance; [`history_entries`]: their typed keys (an entry by instance and
//!   number, a payload by its entry and number).
//! - [`retention`]: forgetting finished instances after `retention`.
//! - [`records`]: what the store's tables hold; [`produced`]: the outbox's Kafka records,
//!   encoded once when they enter it; [`entries`]: the typed entries of the
//!   tables keyed by one id (instances, calls, timer ids, schedules); [`compound`]: those
//!   keyed by several parts (versions, pending all-events starts, unpinned heads, seen
//!   events); [`timed`]: the kinds of the time-keyed tables (timers, expiry indexes,
//!   finished instances); [`counters`]: the
//!   counters each partition keeps; [`positions`]: how far each source of a partition's inputs was applied (the
//!   `offsets` table's two kinds of entry, typed as `store::Entry`s).
//! - [`shared`]: what the HTTP side reads without asking the core (owned partitions, the
//!   directory of owners, deployed workflows); [`board`]: the SWF task board (tasks ready per
//!   task list, long polls waiting); `swf_tasks`: the tasks ready in a partition, read when it
//!   is taken over; `swf_events`: SWF executions started and signalled by CloudEvent.
//! - `inflight`: what was handed to the producer and the invoker and not heard back about;
//!   `young`: outbox entries kept out of the store until they are acknowledged or old;
//!   `stats`: what a round counts, added to the metrics once its batch committed; `spans`:
//!   the spans an applied step finishes.

pub mod active;
mod addressed;
mod answers;
pub mod apply;
pub mod batch;
pub mod board;
mod checkpoints;
pub mod compound;
pub mod core;
pub mod counters;
pub mod dedupe;
mod deploy;
pub mod direct;
pub mod effects;
pub mod entries;
pub mod error;
mod flight;
pub mod gauges;
mod handoff;
pub mod held;
pub mod history;
pub mod history_entries;
pub mod hot;
pub mod index;
mod inflight;
pub mod ingest;
mod intake;
mod kept;
mod landing;
pub mod lifecycle;
mod pool;
pub mod positions;
pub mod processor;
pub mod produced;
pub mod records;
pub mod registry;
mod requests;
pub mod resume;
pub mod retention;
mod round;
pub mod router;
pub mod schedule;
pub mod shared;
mod snapshots;
mod spans;
pub mod standby;
mod stats;
mod sweep;
mod swf_events;
mod swf_tasks;
mod tickets;
pub mod timed;
mod unpinned;
pub mod window;
mod young;

use crate::engine::Event;
use chrono::{DateTime, Utc};
use serde_json::Value;
pub use stats::Stat;
use tokio::sync::oneshot;

/// A clock; the engine never reads one, the core passes `now` in.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told (tests, replays).
pub struct ManualClock(std::sync::Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn new(at: DateTime<Utc>) -> ManualClock {
        ManualClock(std::sync::Mutex::new(at))
    }

    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock().expect("clock lock") = at;
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut t = self.0.lock().expect("clock lock");
        *t += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("clock lock")
    }
}

/// Committed outbox records the core let out to the producer, and when: their Kafka timestamp
/// (`CreateTime`). That is when the broker last checked it still owns their partition (a
/// landing's fence check, or a take-over), so a record carries it also when the producer gets
/// to it later (a process paused in between, docs/scale.md "Fencing").
#[derive(Debug)]
pub struct LetOut {
    pub at: DateTime<Utc>,
    pub records: Vec<(OutboxKey, records::OutRecord)>,
}

impl LetOut {
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

impl IntoIterator for LetOut {
    type Item = (OutboxKey, records::OutRecord);
    type IntoIter = std::vec::IntoIter<Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.records.into_iter()
    }
}

/// An outbox entry that left the broker, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Acked {
    pub key: OutboxKey,
    pub topic: String,
    /// The event type (or record kind), for the metric labels.
    pub label: String,
    pub delivery: Delivery,
}

/// How an outbox entry left the broker.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// Acknowledged by Kafka on its topic.
    Delivered,
    /// Kafka refused it for good (too large, invalid topic, not authorised): a copy with the
    /// reason went to the dead-letter topic instead. (An event that cannot be encoded is
    /// dead-lettered when it enters the outbox, `broker::produced`.)
    DeadLettered,
    /// Refused for good, and so was its dead-letter copy: logged with the reason.
    Dropped,
}

/// An outbox entry: the state partition whose outbox holds it, and its sequence number there
/// (the partition's `outbox.seq` counter when it entered, never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutboxKey {
    pub partition: crate::cluster::partition::PartitionId,
    pub seq: u64,
}

impl OutboxKey {
    /// The key of entry `seq` in its partition's `outbox` table: the number, zero-padded, so
    /// that the table's key order is the order entries entered it.
    pub fn stored(seq: u64) -> String {
        crate::store::num(seq)
    }

    /// The sequence number of an `outbox` table key; `None` for a key [`OutboxKey::stored`]
    /// did not make.
    pub fn parse(key: &str) -> Option<u64> {
        match key.len() == 20 && key.bytes().all(|b| b.is_ascii_digit()) {
            true => key.parse().ok(),
            false => None,
        }
    }
}

/// A consumed Kafka record, decoded off the core's thread.
#[derive(Debug)]
pub struct Record {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub event: Result<Event, crate::cloudevent::DecodeError>,
    pub key: Option<Vec<u8>>,
    pub payload: Option<Vec<u8>>,
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Why an admin request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Internal(String),
    /// The state partition moved to another broker mid-request: retry.
    #[error("{0}")]
    Moved(String),
}

pub type Reply<T> = oneshot::Sender<Result<T, AdminError>>;

/// A started instance: its id and, when another broker's partition applies the start, where
/// the start is in the work topic (a read of the instance there can wait for it).
#[derive(Debug, Clone, PartialEq)]
pub struct Started {
    pub id: String,
    pub position: Option<(crate::cluster::partition::PartitionId, i64)>,
}

/// What an applied input came to: the instance after it, or the engine's refusal (the
/// instance unchanged).
pub type Applied = Result<Box<records::InstanceRecord>, crate::engine::EngineError>;

/// A direct start: the API's, an SWF start's, a durable function's invocation.
pub struct StartRequest {
    pub workflow: String,
    pub input: Value,
    /// The request's `Idempotency-Key`: the same key starts the same instance.
    pub key: Option<String>,
    /// The request's `traceparent`/`tracestate`, continued by the instance.
    pub trace: Option<crate::trace::Carrier>,
    /// The instance id to start, when the caller chose it (an SWF run lives on its workflow
    /// id's partition); else one is derived from `key` or made up.
    pub at: Option<crate::cluster::partition::InstanceId>,
}

/// What the core does.
pub enum Cmd {
    Records(Vec<Record>),
    Event {
        event: Event,
        reply: Reply<router::Routed>,
    },
    Start {
        start: StartRequest,
        reply: Reply<Started>,
    },
    Cancel {
        id: String,
        reply: Reply<()>,
    },
    /// Apply an input to instance `id` (owned here) and answer with the instance after it,
    /// or the engine's refusal (durable functions' checkpoints and callbacks).
    Apply {
        id: String,
        input: crate::engine::Input,
        reply: Reply<Applied>,
    },
    CallDone {
        call: records::Call,
        outcome: Result<Value, crate::engine::ErrorInfo>,
    },
    /// Outbox entries that left: acknowledged by Kafka, or dead-lettered or dropped because
    /// Kafka refuses them for good.
    Acked(Vec<Acked>),
    /// The full set of workflow files (path -> text).
    Files(std::collections::BTreeMap<String, String>),
    /// Records of a work topic partition this broker owns: (offset, record).
    Work {
        partition: crate::cluster::partition::PartitionId,
        /// The read they came from ([`crate::cluster::work::ReadFrom::epoch`]).
        epoch: u64,
        records: Vec<(i64, crate::cluster::work::Work)>,
    },
    /// The consumer group gave this broker these state partitions (work topic partitions):
    /// the ones a rebalance added (all of them with an eager assignor).
    Assigned(Vec<crate::cluster::partition::PartitionId>),
    /// Every state partition the group has given this broker now (sent before each
    /// `Assigned`): resumed partitions outside it are let go (`broker::resume`).
    Assignment(Vec<crate::cluster::partition::PartitionId>),
    /// After a restart, before the group assigns anything: the state partitions this node
    /// held last, to take over provisionally (`broker::resume`); told what was resumed.
    Resume(
        Vec<crate::cluster::partition::PartitionId>,
        oneshot::Sender<Vec<crate::cluster::partition::PartitionId>>,
    ),
    /// The input topic partitions the group gave this broker (kept for a restart).
    Inputs(crate::cluster::node::Inputs),
    /// The consumer group took these state partitions away. `done` is told once the core
    /// has stopped writing them (the rebalance waits for it, so no other broker owns them
    /// before this one has stopped).
    Revoked(
        Vec<crate::cluster::partition::PartitionId>,
        Option<std::sync::mpsc::SyncSender<()>>,
    ),
}

impl Cmd {
    /// How many inputs the command carries (records, acknowledgements), for sizing rounds.
    pub fn size(&self) -> usize {
        match self {
            Cmd::Records(r) => r.len(),
            Cmd::Work { records, .. } => records.len(),
            Cmd::Acked(a) => a.len(),
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OutboxKey;

    #[test]
    fn outbox_keys_are_zero_padded_numbers_in_entry_order_and_read_back() {
        assert_eq!(OutboxKey::stored(42), "00000000000000000042");
        assert!(OutboxKey::stored(9) < OutboxKey::stored(10));
        for seq in [0, 1, 42, u64::MAX] {
            assert_eq!(OutboxKey::parse(&OutboxKey::stored(seq)), Some(seq));
        }
        for other in ["42", "", "0000000000000000004x", "+0000000000000000042"] {
            assert_eq!(OutboxKey::parse(other), None, "{other:?}");
        }
    }
}
