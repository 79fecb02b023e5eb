//! Time-driven work each batch does: firing due timers and sweeping expired buffered events.

use super::batch::Batch;
use super::records::{Buffered, TimerEntry};
use super::Stat;
use crate::engine::Input;
use crate::store::{num, StoreError, Table, SEP};

/// Entries a batch fires at most per due-timer pass.
const TIMERS_PER_BATCH: usize = 1000;
/// Buffered events expired at most per sweep.
const SWEEP_LIMIT: usize = 10_000;

/// Fires every due timer, each exactly once (its entry goes in the same transaction).
pub(super) fn fire_timers(b: &mut Batch<'_, '_>) -> Result<(), StoreError> {
    let end = num(b.now.timestamp_millis().max(0) as u64 + 1);
    let due: Vec<(String, TimerEntry)> = b.tx.range(Table::Timers, "", &end, TIMERS_PER_BATCH)?;
    for (k, entry) in due {
        b.tx.delete(Table::Timers, &k)?;
        let id = k.split_once(SEP).map(|(_, id)| id).unwrap_or_default();
        b.tx.delete(Table::TimerIds, id)?;
        match entry {
            TimerEntry::Instance { instance, id } => {
                b.queue(&instance, Input::TimerFired { id });
            }
            TimerEntry::Join { workflow, key } => b.expire_join(&workflow, &key)?,
            TimerEntry::Schedule { workflow } => b.fire_schedule(&workflow)?,
        }
        b.drain()?;
    }
    Ok(())
}

/// Drops buffered (and held) events past their TTL, counted and logged; an index by expiry
/// keeps this from reading events that are not due.
pub(super) fn sweep_buffer(b: &mut Batch<'_, '_>) -> Result<(), StoreError> {
    let end = num(b.now.timestamp_millis().max(0) as u64 + 1);
    let due: Vec<(String, ())> = b.tx.range(Table::BufferExpiry, "", &end, SWEEP_LIMIT)?;
    for (x, ()) in due {
        b.tx.delete(Table::BufferExpiry, &x)?;
        let Some((_, k)) = x.split_once(SEP) else {
            continue;
        };
        let Some(e) = b.tx.get::<Buffered>(Table::Buffer, k)? else {
            continue;
        };
        b.delete_buffered(k, &e)?;
        tracing::info!(event = %e.event.id, r#type = %e.event.event_type,
            waiting_for = k.rsplit_once(SEP).map(|(w, _)| w).unwrap_or_default(),
            "buffered event expired before an instance waited for it");
        b.fx.stats.push(Stat::BufferExpired);
    }
    Ok(())
}
