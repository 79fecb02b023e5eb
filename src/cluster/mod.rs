//! Scale-out (docs/scale.md): state partitions owned through the consumer group, the work topic
//! every input travels on, and the changelog every committed batch is written to.
//!
//! - [`partition`]: which state partition a correlation key or an instance belongs to, and
//!   instance ids that carry their partition.
//! - [`work`]: the records of the work topic (events to correlate, direct starts, cancels,
//!   and the messages partitions send each other), with the source position that makes
//!   applying them exactly once.
//! - [`changelog`]: one changelog record per committed batch, fence records, and the rule that
//!   keeps a fenced-out owner's batches from being restored.
//! - [`definitions`]: the definitions topic's records (a workflow file as one broker
//!   deployed it), the catalog folded from them, and the rule at start between a broker's own
//!   files and the cluster's.
//! - [`snapshot`]: a partition's keys as of one changelog offset, in chunks, and the manifest
//!   that announces them; restore loads the latest and reads the changelog after it.
//! - [`directory`]: which broker owns which partition, from the claims brokers publish after
//!   taking a partition over (the API forwards to the owner).
//! - [`node`]: a broker's lasting identity (its data directory's), and what it held last, so
//!   a restarted broker resumes at once; [`standby`]: which partitions a broker keeps a warm
//!   copy of (standby replicas).

pub mod changelog;
pub mod definitions;
pub mod directory;
pub mod node;
pub mod partition;
pub mod snapshot;
pub mod standby;
pub mod work;

use changelog::Entry;
use partition::PartitionId;
use work::Work;

/// The body of a binary changelog record or snapshot chunk (after its marker and format
/// bytes): one postcard value and nothing after it. The error says what is wrong with it;
/// `what` names the record or chunk.
pub(crate) fn postcard_whole<'a, T: serde::Deserialize<'a>>(
    body: &'a [u8],
    what: &str,
) -> Result<T, String> {
    let (value, rest) = postcard::take_from_bytes(body).map_err(|e| e.to_string())?;
    match rest.len() {
        0 => Ok(value),
        n => Err(format!("{n} bytes after the {what}")),
    }
}

/// Why the Kafka side of the cluster failed a call; the core stops on it (it restarts from
/// the last batch the changelog acknowledged).
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("changelog partition {partition}: {why}")]
    Changelog { partition: PartitionId, why: String },
    #[error("work topic partition {partition}: {why}")]
    Work { partition: PartitionId, why: String },
    #[error("snapshot of partition {partition}: {why}")]
    Snapshot { partition: PartitionId, why: String },
}

/// What the core needs from Kafka synchronously (it runs on a thread of its own): append
/// batches and fences to the changelog, read a partition's changelog back, and forward work
/// records to the work topic. Every call returns once Kafka acknowledged (or answered).
pub trait Log: Send {
    /// Appends one record per partition; returns the offset each got.
    fn append(
        &mut self,
        entries: &[(PartitionId, Entry)],
    ) -> Result<Vec<(PartitionId, i64)>, LogError>;

    /// Starts appending one record per partition and returns once they are queued; the
    /// append resolves to what [`Log::append`] returns (pipelined rounds). A record that
    /// cannot be queued is an error now, so no later round is appended after it. By default
    /// it appends right away.
    fn send(&mut self, entries: &[(PartitionId, Entry)]) -> Result<Appending, LogError> {
        let r = self.append(entries);
        Ok(Box::pin(std::future::ready(r)))
    }

    /// The changelog records of `partition` from offset `from` through offset `through`.
    fn read(
        &mut self,
        partition: PartitionId,
        from: i64,
        through: i64,
    ) -> Result<Vec<(i64, Entry)>, LogError>;

    /// The offset the next record appended to `partition` will get (its end).
    fn end(&mut self, partition: PartitionId) -> Result<i64, LogError>;

    /// [`Log::end`] of each of `partitions`, in their order. By default one question per
    /// partition; a log that can ask for all of them at once should.
    fn ends(&mut self, partitions: &[PartitionId]) -> Result<Vec<i64>, LogError> {
        partitions.iter().map(|&p| self.end(p)).collect()
    }

    /// The first offset of `partition` still held (records before it were deleted).
    fn start(&mut self, partition: PartitionId) -> Result<i64, LogError>;

    /// Reads the chunks of snapshot `m` in order, handing each to `apply`.
    fn read_snapshot(
        &mut self,
        m: &snapshot::Manifest,
        apply: &mut dyn FnMut(Vec<crate::store::Write>) -> Result<(), LogError>,
    ) -> Result<(), LogError>;

    /// Sends work records to their partitions of the work topic, in order per partition;
    /// returns the offset each got, in the order given.
    fn forward(
        &mut self,
        work: Vec<(PartitionId, Work)>,
    ) -> Result<Vec<(PartitionId, i64)>, LogError>;

    /// This broker's name in fence records.
    fn owner(&self) -> String;
}

/// A changelog append on its way ([`Log::send`]): the offset each partition's record got.
pub type Appending = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<(PartitionId, i64)>, LogError>> + Send>,
>;

/// The end offset of a work topic partition, as Kafka reports it when called (`None`:
/// unknown).
pub type WorkEnd = std::sync::Arc<dyn Fn(PartitionId) -> Option<i64> + Send + Sync>;
