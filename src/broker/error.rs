//! Why the core stopped.

use crate::cluster::partition::PartitionId;
use crate::cluster::LogError;
use crate::store::StoreError;

/// Why the core stopped.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(
        "the changelog of state partition {partition} starts at offset {start}, but this \
         broker's store stops at {have} and no snapshot covers the gap: the records between \
         were deleted before a snapshot of them was announced. Restore the snapshot topic and \
         the owners topic, or start over with new topics"
    )]
    Trimmed {
        partition: PartitionId,
        start: i64,
        have: i64,
    },
}
