//! Retention: finished instances and their history are deleted `retention` after they finished
//! (default 7 days), so a long-running broker's store does not grow without bound.

use super::batch::{Batch, Result};
use super::records::InstanceRecord;
use crate::store::{key, num, Table, SEP};

/// Instances forgotten per sweep at most.
const SWEEP_LIMIT: usize = 1_000;

impl Batch<'_, '_> {
    /// Deletes instances that finished more than `retention` ago.
    pub fn sweep_finished(&mut self) -> Result<()> {
        let Ok(keep) = crate::time::Duration::parse(&self.cfg.retention) else {
            return Ok(()); // empty (or invalid, reported at start): keep forever
        };
        let keep = keep.after(self.now) - self.now;
        let before = num((self.now - keep).timestamp_millis().max(0) as u64);
        let due: Vec<(String, ())> = self.tx.range(Table::Finished, "", &before, SWEEP_LIMIT)?;
        for (k, ()) in due {
            self.tx.delete(Table::Finished, &k)?;
            let Some((_, id)) = k.split_once(SEP) else {
                continue;
            };
            let Some(rec) = self.tx.get::<InstanceRecord>(Table::Instances, id)? else {
                continue;
            };
            if !rec.instance.status.is_final() {
                continue;
            }
            self.tx.delete(Table::Instances, id)?;
            for (h, _) in self
                .tx
                .prefix::<serde_json::Value>(Table::History, &format!("{id}{SEP}"))?
            {
                self.tx.delete(Table::History, &h)?;
            }
            self.tx
                .bump(&key(&["status", rec.instance.status.as_str()]), -1)?;
        }
        Ok(())
    }
}
