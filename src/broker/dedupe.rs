//! Duplicate events: CloudEvents are unique by `source` and `id`, so an event seen again within
//! `dedupe_window` (a producer's retry, a client re-POSTing, the same event on Kafka and HTTP)
//! is dropped and counted instead of being applied twice. Kafka redelivery after a crash is
//! handled by stored offsets already; this covers copies at different offsets.

use super::batch::{Batch, Result};
use super::Stat;
use crate::engine::Event;
use crate::store::{key, num, Table, SEP};
use chrono::{DateTime, Utc};

/// Entries removed per sweep at most.
const SWEEP_LIMIT: usize = 10_000;

impl Batch<'_, '_> {
    /// True when the event was consumed within the window (and counts it); else remembers it.
    pub fn seen_before(&mut self, event: &Event) -> Result<bool> {
        let window = crate::time::Duration::parse(&self.cfg.dedupe_window)
            .map(|d| d.after(self.now) - self.now)
            .unwrap_or_else(|_| chrono::Duration::minutes(10));
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
        let ms = until.timestamp_millis().max(0) as u64;
        self.tx.put(Table::SeenExpiry, &key(&[&num(ms), &k]), &())?;
        Ok(false)
    }

    /// Forgets events whose window has passed.
    pub fn sweep_seen(&mut self) -> Result<()> {
        let end = num(self.now.timestamp_millis().max(0) as u64);
        let due: Vec<(String, ())> = self.tx.range(Table::SeenExpiry, "", &end, SWEEP_LIMIT)?;
        for (k, ()) in due {
            self.tx.delete(Table::SeenExpiry, &k)?;
            if let Some((ms, seen)) = k.split_once(SEP) {
                let until: Option<DateTime<Utc>> = self.tx.get(Table::Seen, seen)?;
                let same = until.is_some_and(|u| num(u.timestamp_millis().max(0) as u64) == ms);
                if same {
                    self.tx.delete(Table::Seen, seen)?;
                }
            }
        }
        Ok(())
    }
}
