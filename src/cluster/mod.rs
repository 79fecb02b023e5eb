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

pub mod changelog;
pub mod partition;
pub mod work;
