//! Writes of batches whose changelog append is not acknowledged yet. Rounds are pipelined
//! (docs/broker.md "Pipelined rounds"): the next round of a state partition reads through its
//! pending writes ([`crate::store::Store::scoped_over`]), and the store gets them only once
//! their append is acknowledged, so what is on disk never runs ahead of the changelog.

use super::{Table, Write};
use std::collections::BTreeMap;
use std::ops::Bound;

/// One state partition's pending writes by table and full key, each with the step (one
/// append of a round) that wrote it last (`None`: deleted).
#[derive(Debug, Default)]
pub struct Pending {
    entries: BTreeMap<(Table, String), Entry>,
}

/// The step that wrote a key last, and its value (`None`: deleted).
type Entry = (u64, Option<Vec<u8>>);

impl Pending {
    /// Step `step` wrote `writes` (its append is on its way).
    pub fn add(&mut self, step: u64, writes: &[Write]) {
        for w in writes {
            self.entries
                .insert((w.table, w.key.clone()), (step, w.value.clone()));
        }
    }

    /// Step `step`'s append was acknowledged and `writes` are in the store: its entries go,
    /// except those a later step wrote over.
    pub fn settle(&mut self, step: u64, writes: &[Write]) {
        for w in writes {
            let k = (w.table, w.key.clone());
            if self.entries.get(&k).is_some_and(|(s, _)| *s == step) {
                self.entries.remove(&k);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The pending value of a full key: `Some(None)` when a pending round deleted it.
    pub(super) fn get(&self, table: Table, key: &str) -> Option<Option<&[u8]>> {
        self.entries
            .get(&(table, key.to_string()))
            .map(|(_, v)| v.as_deref())
    }

    /// The pending entries of `table` with full keys in `[lo, hi)`, in key order.
    pub(super) fn range<'a>(
        &'a self,
        table: Table,
        lo: &str,
        hi: &Bound<String>,
    ) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        let end = match hi {
            Bound::Excluded(h) => Bound::Excluded((table, h.clone())),
            _ => Bound::Excluded((table, String::from(char::MAX))),
        };
        self.entries
            .range((Bound::Included((table, lo.to_string())), end))
            .map(|((_, k), (_, v))| (k.as_str(), v.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(k: &str, v: &str) -> Write {
        Write {
            table: Table::Instances,
            key: k.into(),
            value: Some(v.as_bytes().to_vec()),
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
