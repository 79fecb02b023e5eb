//! Where the live entries of a time-keyed table start (timers, expiry indexes, finished
//! instances: keys from [`super::at`]). Those tables are drained from their oldest key, so
//! their heads are long runs of deleted keys; in an LSM tree every scan from the beginning
//! walks the tombstones of all of them until compaction drops them, and a sweep that removes
//! as many entries as were added then costs more with every sweep (the queue pattern of
//! RocksDB's wiki, "Implement Queue Service Using RocksDB"). So each table and scope keeps,
//! in memory, a key below which nothing is left: scans start there.
//!
//! The bound only moves up when a scan removed everything before it, and moves down when a
//! key below it is written ([`Hints::wrote`]), so it never hides an entry. It is forgotten
//! when a partition changes hands ([`Hints::forget`]): writes restored from the changelog
//! or dropped with a void batch do not go through a transaction.
//!
//! The bound describes the partition as its builder sees it: the store with the rounds in
//! flight over it (`Pending`). Only the builder's transactions may start from it; a reader of
//! the store alone (a plain transaction or a [`super::Snapshot`]) while rounds are in flight
//! sees another table, and scans from its first key.

use super::tables::Table;
use foldhash::HashMap;
use std::sync::Mutex;

/// Per scope prefix and table: the full key below which the table holds nothing.
#[derive(Default)]
pub struct Hints {
    from: Mutex<HashMap<String, HashMap<Table, String>>>,
}

impl Hints {
    /// The full key a scan of `table` in the scope `prefix` may start at (`prefix` when
    /// nothing is known).
    pub fn start(&self, table: Table, prefix: &str) -> String {
        if !table.time_keyed() {
            return prefix.to_string();
        }
        self.from
            .lock()
            .ok()
            .and_then(|m| m.get(prefix)?.get(&table).cloned())
            .filter(|k| k.as_str() > prefix)
            .unwrap_or_else(|| prefix.to_string())
    }

    /// Nothing of `table` in the scope `prefix` is left below the full key `key`.
    pub fn cleared(&self, table: Table, prefix: &str, key: String) {
        if let Ok(mut m) = self.from.lock() {
            let tables = match m.get_mut(prefix) {
                Some(t) => t,
                None => m.entry(prefix.to_string()).or_default(),
            };
            let at = tables.entry(table).or_default();
            if key > *at {
                *at = key;
            }
        }
    }

    /// The full key `key` of `table` was written in the scope `prefix` (a time-keyed table's
    /// writes, on the hot path: no allocation).
    pub fn wrote(&self, table: Table, prefix: &str, key: &str) {
        if !table.time_keyed() {
            return;
        }
        if let Ok(mut m) = self.from.lock() {
            if let Some(at) = m.get_mut(prefix).and_then(|t| t.get_mut(&table)) {
                if key < at.as_str() {
                    *at = key.to_string();
                }
            }
        }
    }

    /// Forgets every bound of the scope `prefix`.
    pub fn forget(&self, prefix: &str) {
        if let Ok(mut m) = self.from.lock() {
            m.remove(prefix);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_rises_with_clearing_and_falls_with_a_write_below_it() {
        let h = Hints::default();
        assert_eq!(h.start(Table::Timers, "p1/"), "p1/");
        h.cleared(Table::Timers, "p1/", "p1/0005".into());
        assert_eq!(h.start(Table::Timers, "p1/"), "p1/0005");
        // an older bound never lowers it
        h.cleared(Table::Timers, "p1/", "p1/0003".into());
        assert_eq!(h.start(Table::Timers, "p1/"), "p1/0005");
        h.wrote(Table::Timers, "p1/", "p1/0004/x");
        assert_eq!(h.start(Table::Timers, "p1/"), "p1/0004/x");
        h.wrote(Table::Timers, "p1/", "p1/0009/x");
        assert_eq!(h.start(Table::Timers, "p1/"), "p1/0004/x");
        // other scopes and tables are apart; a table that is not time-keyed has none
        assert_eq!(h.start(Table::Timers, "p2/"), "p2/");
        assert_eq!(h.start(Table::Instances, "p1/"), "p1/");
        h.forget("p1/");
        assert_eq!(h.start(Table::Timers, "p1/"), "p1/");
    }
}
