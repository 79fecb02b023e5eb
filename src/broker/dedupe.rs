//! Duplicate events: CloudEvents are unique by `source` and `id`, so an event seen again within
//! `dedupe_window` (a producer's retry, a client re-POSTing, the same event on Kafka and HTTP)
//! is dropped and counted instead of being applied twice. Kafka redelivery after a crash is
//! handled by stored offsets already; this covers copies at different offsets.

use super::batch::{Added, Batch, Result};
use super::compound::SeenOf;
use super::counters::Counter;
use super::timed::SeenExpiry;
use super::Stat;
use crate::engine::Event;
use crate::store::At;
use crate::time::stamp::Stamp;

/// Entries the periodic sweep removes at least, when due.
const SWEEP_LIMIT: usize = 10_000;

impl Batch<'_, '_> {
    /// True when the event was consumed within the window (and counts it); else remembers it.
    pub fn seen_before(&mut self, event: &Event) -> Result<bool> {
        let window = self.windows.dedupe;
        if window <= chrono::Duration::zero() {
            return Ok(false);
        }
        let seen = SeenOf::new(&event.source, &event.id);
        let before = self.tx.read(&seen)?;
        if let Some(Stamp(until)) = before {
            if until > self.now {
                self.fx
                    .stats
                    .push(Stat::DuplicateEvent(event.event_type.clone()));
                return Ok(true);
            }
        }
        let until = self.now + window;
        self.tx.write(&seen, &Stamp(until))?;
        self.tx
            .write(&At::<SeenExpiry>::new(until, seen.as_str()), &())?;
        self.added.seen += 1;
        self.added.seen_new += usize::from(before.is_none());
        Ok(false)
    }

    /// Forgets events whose window has passed (unless they were seen again since): twice as
    /// many as this batch remembered, so the table cannot outgrow its sweep under any intake
    /// rate, and up to [`SWEEP_LIMIT`] on the `periodic` sweep. Keeps the entry count.
    pub fn sweep_seen(&mut self, periodic: bool) -> Result<()> {
        let limit = Added::pace(self.added.seen, periodic, SWEEP_LIMIT);
        let mut gone = 0i64;
        if limit > 0 {
            for (seen, ()) in self.tx.take_due_of::<SeenExpiry>(self.now, limit)? {
                let seen = SeenOf::stored(seen);
                let until = self.tx.read(&seen)?;
                if until.is_some_and(|Stamp(u)| u <= self.now) {
                    // just read, so there: removed without looking again
                    self.tx.unset(&seen);
                    gone += 1;
                }
            }
        }
        let net = self.added.seen_new as i64 - gone;
        if net != 0 {
            Counter::Seen.bump(self.tx, net)?;
        }
        Ok(())
    }
}
