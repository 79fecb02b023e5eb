//! Read your writes (docs/scale.md "One cluster, one API"): a start whose partition another
//! broker owns travels through the work topic and is applied by that owner a moment later.
//! Before the owner says an instance does not exist, it applies its work partition up to the
//! end Kafka reports at that moment, so an id a start returned is never answered 404 while it
//! is in flight; a start answers once the owner shows the instance.

use super::AppState;
use crate::cluster::partition::PartitionId;
use crate::store::Scope;
use std::time::Duration;

pub use crate::cluster::WorkEnd;

/// How long a read waits for its partition's owner to apply what is ahead of it.
pub const WAIT_AT_MOST: Duration = Duration::from_secs(5);

/// Why a read could not tell that its partition's owner applied what is ahead of it.
#[derive(Debug, thiserror::Error)]
pub enum NotCaughtUp {
    #[error("Kafka did not say where work topic partition {0} ends")]
    NoEnd(PartitionId),
    #[error("state partition {0} moved to another broker")]
    Moved(PartitionId),
    #[error("the store could not be read")]
    Store,
    #[error(
        "state partition {partition} applied its work topic up to offset {applied}, not yet \
         to {end}, within {WAIT_AT_MOST:?}"
    )]
    Behind {
        partition: PartitionId,
        applied: i64,
        end: i64,
    },
}

/// Whether this broker, owning `p`, has applied every work record written to `p` before now,
/// and the one at `position` when given (waiting at most [`WAIT_AT_MOST`] for it); the error
/// says why it could not tell.
pub async fn caught_up(
    s: &AppState,
    p: PartitionId,
    position: Option<i64>,
) -> Result<(), NotCaughtUp> {
    let Some(end) = s.work_end.clone() else {
        return Ok(()); // no work topic: every start was applied before it was answered
    };
    let Ok(Some(end)) = tokio::task::spawn_blocking(move || end(p)).await else {
        return Err(NotCaughtUp::NoEnd(p));
    };
    // Kafka's end can lag a record just acknowledged (tansu's does, docs/kafka.md): a known
    // position is the bound that holds
    let end = end.max(position.map_or(0, |o| o + 1));
    let until = tokio::time::Instant::now() + WAIT_AT_MOST;
    loop {
        let notified = s.shared.applied.notified();
        let applied = super::snapshot::read(&s.store)
            .ok()
            .and_then(|tx| {
                tx.read_in(Scope::Partition(p.0), &crate::broker::positions::WorkOffset)
                    .ok()
            })
            .map(|o| o.unwrap_or(0))
            .ok_or(NotCaughtUp::Store)?;
        if applied >= end {
            return Ok(());
        }
        if !s.shared.owns(p) {
            return Err(NotCaughtUp::Moved(p));
        }
        if tokio::time::timeout_at(until, notified).await.is_err() {
            return Err(NotCaughtUp::Behind {
                partition: p,
                applied,
                end,
            });
        }
    }
}
