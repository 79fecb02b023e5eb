//! Duplicate events: CloudEvents are unique by `source` and `id`, so an event seen again within
//! `dedupe_window` (a producer's retry, a client re-POSTing, the same event on Kafka and HTTP)
//! is dropped and counted instead of being applied twice. Kafka redelivery after a crash is
//! handled by stored offsets already; this covers copies at different offsets.

use super::batch::{Batch, Result};
use super::Stat;
use crate::engine::Event;
use crate::store::{at, key, Table};
use chrono::{DateTime, Utc};

/// Entries removed per sweep at most.
const SWEEP_LIMIT: usize = 10_000;

impl Batch<'_, '_> {
    /// True when the event was consumed within the window (and counts it); else remembers it.
    pub fn seen_before(&mut self, event: &Event) -> Result<bool> {
        let window = self.windows.dedupe;
        if window <= chrono::Duration::zero() {
            return Ok(false);
        }
        let k = key(&[&event.source, &event.id]);
        if let Some(until) = self.tx.get::<DateTime<Utc>>(Table::Seen, &k)? {
            if until > self.now {
                self.fx
                    .stats
                    .push(Stat::DuplicateEvent(event.event_type.clone()));
                return Ok(true);
            }
        }
        let until = self.now + window;
        self.tx.put(Table::Seen, &k, &until)?;
        self.tx.put(Table::SeenExpiry, &at(until, &k), &())?;
        Ok(false)
    }

    /// Forgets events whose window has passed (unless they were seen again since).
    pub fn sweep_seen(&mut self) -> Result<()> {
        let due: Vec<(String, ())> = self.tx.take_due(Table::SeenExpiry, self.now, SWEEP_LIMIT)?;
        for (seen, ()) in due {
            let until: Option<DateTime<Utc>> = self.tx.get(Table::Seen, &seen)?;
            if until.is_some_and(|u| u <= self.now) {
                self.tx.delete(Table::Seen, &seen)?;
            }
        }
        Ok(())
    }
}
