//! Time-driven work each batch does: firing due timers and sweeping expired buffered events.

use super::batch::{Added, Batch};
use super::compound::BufferedAt;
use super::entries::TimerIdOf;
use super::records::TimerEntry;
use super::timed::{BufferExpiry, Timer};
use super::Stat;
use crate::engine::Input;
use crate::store::StoreError;

/// Entries a batch fires at most per due-timer pass.
const TIMERS_PER_BATCH: usize = 1000;
/// Buffered events the periodic sweep expires at least, when due.
const SWEEP_LIMIT: usize = 10_000;

/// Fires every due timer, each exactly once (its entry goes in the same transaction).
pub(super) fn fire_timers(b: &mut Batch<'_, '_>) -> Result<(), StoreError> {
    for (id, entry) in b.tx.take_due_of::<Timer>(b.now, TIMERS_PER_BATCH)? {
        // its id's entry points here (`arm` replaces both together): removed unread
        b.tx.unset(&TimerIdOf(&id));
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
/// keeps this from reading events that are not due. Removes twice as many as this batch
/// buffered, and up to [`SWEEP_LIMIT`] on the `periodic` sweep.
pub(super) fn sweep_buffer(b: &mut Batch<'_, '_>, periodic: bool) -> Result<(), StoreError> {
    let limit = Added::pace(b.added.buffered, periodic, SWEEP_LIMIT);
    if limit == 0 {
        return Ok(());
    }
    for (k, ()) in b.tx.take_due_of::<BufferExpiry>(b.now, limit)? {
        let k = BufferedAt::found(k);
        let Some(e) = b.tx.read(&k)? else {
            continue;
        };
        b.delete_buffered(&k, &e)?;
        tracing::info!(event = %e.event.id, r#type = %e.event.event_type,
            waiting_for = k.waiting_for(),
            "buffered event expired before an instance waited for it");
        b.fx.stats.push(Stat::BufferExpired);
    }
    Ok(())
}
