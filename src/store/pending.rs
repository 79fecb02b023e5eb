//! Writes of batches whose changelog append is not acknowledged yet. Rounds are pipelined
//! (docs/broker.md "Pipelined rounds"): the next round of a state partition reads through its
//! pending writes ([`crate::store::Store::scoped_over`]), and the store gets them only once
//! their append is acknowledged, so what is on disk never runs ahead of the changelog.

use super::{str_bounds, Table, Write};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::ops::Bound;

/// One state partition's pending writes by table and full key, each with the step (one
/// append of a round) that wrote it last (`None`: deleted). Values are shared with the
/// round's writes, not copied; keys are looked up borrowed.
#[derive(Debug, Default)]
pub struct Pending {
    tables: BTreeMap<Table, BTreeMap<String, Entry>>,
}

/// The step that wrote a key last, and its value (`None`: deleted).
type Entry = (u64, Option<Bytes>);

impl Pending {
    /// Step `step` wrote `writes` (its append is on its way).
    pub fn add(&mut self, step: u64, writes: &[Write]) {
        for w in writes {
            self.tables
                .entry(w.table)
                .or_default()
                .insert(w.key.clone(), (step, w.value.clone()));
        }
    }

    /// Step `step`'s append was acknowledged and `writes` are in the store: its entries go,
    /// except those a later step wrote over.
    pub fn settle(&mut self, step: u64, writes: &[Write]) {
        for w in writes {
            let Some(t) = self.tables.get_mut(&w.table) else {
                continue;
            };
            if t.get(w.key.as_str()).is_some_and(|(s, _)| *s == step) {
                t.remove(w.key.as_str());
                if t.is_empty() {
                    self.tables.remove(&w.table);
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The pending value of a full key: `Some(None)` when a pending round deleted it.
    pub(super) fn get(&self, table: Table, key: &str) -> Option<Option<&[u8]>> {
        self.tables.get(&table)?.get(key).map(|(_, v)| v.as_deref())
    }

    /// The pending entries of `table` with full keys in `[lo, hi)`, in key order.
    pub(super) fn range<'a>(
        &'a self,
        table: Table,
        lo: &str,
        hi: &Bound<String>,
    ) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        let range = self
            .tables
            .get(&table)
            .map(|t| t.range::<str, _>(str_bounds(lo, hi)));
        range
            .into_iter()
            .flatten()
            .map(|(k, (_, v))| (k.as_str(), v.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(k: &str, v: &str) -> Write {
        Write {
            table: Table::Instances,
            key: k.into(),
            value: Some(Bytes::copy_from_slice(v.as_bytes())),
        }
    }

    #[test]
    fn a_settled_round_leaves_what_later_rounds_wrote() {
        let mut p = Pending::default();
        p.add(1, &[put("a", "1"), put("b", "1")]);
        p.add(2, &[put("b", "2")]);
        p.settle(1, &[put("a", "1"), put("b", "1")]);
        assert_eq!(p.get(Table::Instances, "a"), None);
        assert_eq!(p.get(Table::Instances, "b"), Some(Some(&b"2"[..])));
        p.settle(2, &[put("b", "2")]);
        assert!(p.is_empty());
    }
}
