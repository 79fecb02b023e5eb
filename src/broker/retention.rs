//! Retention: finished instances, their history and its payloads are deleted `retention` after they finished
//! (default 7 days), so a long-running broker's store does not grow without bound.

use super::batch::{Added, Batch, Result};
use super::counters::Counter;
use super::entries::InstanceOf;
use super::timed::Finished;

/// Instances the periodic sweep forgets at least, when due.
const SWEEP_LIMIT: usize = 1_000;

impl Batch<'_, '_> {
    /// Deletes instances that finished more than `retention` ago: twice as many as finished
    /// in this batch, so retention keeps pace with any completion rate, and up to
    /// [`SWEEP_LIMIT`] on the `periodic` sweep.
    pub fn sweep_finished(&mut self, periodic: bool) -> Result<()> {
        let Some(keep) = self.windows.retention else {
            return Ok(()); // empty: keep forever
        };
        let limit = Added::pace(self.added.finished, periodic, SWEEP_LIMIT);
        if limit == 0 {
            return Ok(());
        }
        for (id, ()) in self.tx.take_due_of::<Finished>(self.now - keep, limit)? {
            let id = id.as_str();
            let Some(rec) = self.tx.read(&InstanceOf(id))? else {
                continue;
            };
            if !rec.instance.status.is_final() {
                continue;
            }
            // just read, so there: removed without looking again
            self.tx.unset(&InstanceOf(id));
            self.forget_history(id)?;
            Counter::Status(rec.instance.status).bump(self.tx, -1)?;
        }
        Ok(())
    }
}
