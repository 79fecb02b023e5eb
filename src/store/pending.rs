//! Writes of batches whose changelog append is not acknowledged yet. Rounds are pipelined
//! (docs/broker.md "Pipelined rounds"): the next round of a state partition reads through its
//! pending writes ([`crate::store::Store::scoped_over`]), and the store gets them only once
//! their append is acknowledged, so what is on disk never runs ahead of the changelog.
//!
//! A partition has few steps in flight at once (a round's appends, two rounds at most), and
//! each step's writes are already in key order (a transaction's writes are), so they are kept
//! as they are, shared with the step, not copied into a map: a read looks the key up in each
//! step, newest first, and a landed step is dropped whole.

use super::{Table, Write};
use smallvec::SmallVec;
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

/// One state partition's pending writes: each step in flight (one append of a round) with its
/// writes in key order, oldest first.
#[derive(Debug, Default)]
pub struct Pending {
    steps: VecDeque<(u64, Arc<Vec<Write>>)>,
}

/// Orders a write against a table and full key.
fn against(w: &Write, table: Table, key: &str) -> Ordering {
    (w.table, w.key.as_str()).cmp(&(table, key))
}

fn in_order(writes: &[Write]) -> bool {
    writes
        .windows(2)
        .all(|p| against(&p[0], p[1].table, &p[1].key) == Ordering::Less)
}

impl Pending {
    /// Step `step` wrote `writes` (its append is on its way). Steps settle in the order they
    /// are added (rounds land oldest first).
    pub fn add(&mut self, step: u64, writes: Arc<Vec<Write>>) {
        if writes.is_empty() {
            return;
        }
        let writes = if in_order(&writes) {
            writes
        } else {
            // (a transaction's writes are in key order; anything else is ordered here, the
            // last write of a key winning)
            let mut sorted: Vec<Write> = Vec::with_capacity(writes.len());
            for w in writes.iter().rev() {
                sorted.push(w.clone());
            }
            sorted.sort_by(|a, b| (a.table, a.key.as_str()).cmp(&(b.table, b.key.as_str())));
            sorted.dedup_by(|later, first| first.table == later.table && first.key == later.key);
            Arc::new(sorted)
        };
        self.steps.push_back((step, writes));
    }

    /// Step `step`'s append was acknowledged and its writes are in the store: they go (a later
    /// step's writes of the same keys stay). Steps land oldest first, so an older step still
    /// here was void (not stored): it goes too.
    pub fn settle(&mut self, step: u64) {
        while self.steps.front().is_some_and(|(s, _)| *s <= step) {
            self.steps.pop_front();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The pending value of a full key: `Some(None)` when a pending round deleted it.
    pub(super) fn get(&self, table: Table, key: &str) -> Option<Option<&[u8]>> {
        self.steps.iter().rev().find_map(|(_, w)| {
            w.binary_search_by(|x| against(x, table, key))
                .ok()
                .map(|i| w[i].value.as_deref())
        })
    }

    /// The pending entries of `table` with full keys in `[lo, hi)`, in key order, each as the
    /// newest step wrote it.
    pub(super) fn range<'a>(
        &'a self,
        table: Table,
        lo: &str,
        hi: &Bound<String>,
    ) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        // newest first, so that among equal keys the first head wins
        let heads: Heads<'a> = self
            .steps
            .iter()
            .rev()
            .map(|(_, w)| {
                let start = w.partition_point(|x| against(x, table, lo) == Ordering::Less);
                let end = w.partition_point(|x| match hi {
                    Bound::Excluded(h) => against(x, table, h) == Ordering::Less,
                    Bound::Included(h) => against(x, table, h) != Ordering::Greater,
                    Bound::Unbounded => x.table <= table,
                });
                &w[start..end.max(start)]
            })
            .filter(|s| !s.is_empty())
            .collect();
        Merged { heads }
    }
}

/// The runs a range merges: one per step in flight, rarely more than two.
type Heads<'a> = SmallVec<[&'a [Write]; 4]>;

/// The entries of several key-ordered runs of writes in key order, a key once: from the
/// first run that has it.
struct Merged<'a> {
    heads: Heads<'a>,
}

impl<'a> Iterator for Merged<'a> {
    type Item = (&'a str, Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        let first = self
            .heads
            .iter()
            .filter_map(|h| h.first())
            .min_by(|a, b| a.key.cmp(&b.key))?;
        for h in self.heads.iter_mut() {
            if h.first().is_some_and(|w| w.key == first.key) {
                *h = &h[1..];
            }
        }
        Some((first.key.as_str(), first.value.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn put(k: &str, v: &str) -> Write {
        Write {
            table: Table::Instances,
            key: k.into(),
            value: Some(Bytes::copy_from_slice(v.as_bytes())),
        }
    }

    fn del(k: &str) -> Write {
        Write {
            table: Table::Instances,
            key: k.into(),
            value: None,
        }
    }

    fn step(writes: Vec<Write>) -> Arc<Vec<Write>> {
        Arc::new(writes)
    }

    #[test]
    fn a_settled_round_leaves_what_later_rounds_wrote() {
        let mut p = Pending::default();
        p.add(1, step(vec![put("a", "1"), put("b", "1")]));
        p.add(2, step(vec![put("b", "2")]));
        assert_eq!(p.get(Table::Instances, "b"), Some(Some(&b"2"[..])));
        p.settle(1);
        assert_eq!(p.get(Table::Instances, "a"), None);
        assert_eq!(p.get(Table::Instances, "b"), Some(Some(&b"2"[..])));
        p.settle(2);
        assert!(p.is_empty());
        // an older step left unsettled (its batch void) goes with a later one
        p.add(3, step(vec![put("v", "3")]));
        p.add(4, step(vec![put("w", "4")]));
        p.add(5, step(vec![put("x", "5")]));
        p.settle(4);
        assert_eq!(p.get(Table::Instances, "v"), None);
        assert_eq!(p.get(Table::Instances, "x"), Some(Some(&b"5"[..])));
    }

    #[test]
    fn a_range_is_in_key_order_with_each_key_as_the_newest_step_wrote_it() {
        let mut p = Pending::default();
        let meta = Write {
            table: Table::Meta,
            key: "b".into(),
            value: None,
        };
        // (Instances sorts before Meta)
        p.add(
            1,
            step(vec![put("a", "1"), put("c", "1"), put("e", "1"), meta]),
        );
        p.add(2, step(vec![put("b", "2"), del("c"), put("d", "2")]));
        let all: Vec<_> = p
            .range(Table::Instances, "", &Bound::Unbounded)
            .map(|(k, v)| (k.to_string(), v.map(|v| v.to_vec())))
            .collect();
        let want = [
            ("a", Some("1")),
            ("b", Some("2")),
            ("c", None),
            ("d", Some("2")),
            ("e", Some("1")),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(|v| v.as_bytes().to_vec())))
            .collect();
        assert_eq!(all, want);
        let some: Vec<&str> = p
            .range(Table::Instances, "b", &Bound::Excluded("e".into()))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(some, ["b", "c", "d"]);
        let incl: Vec<&str> = p
            .range(Table::Instances, "b", &Bound::Included("e".into()))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(incl, ["b", "c", "d", "e"]);
        let meta: Vec<&str> = p
            .range(Table::Meta, "", &Bound::Unbounded)
            .map(|(k, _)| k)
            .collect();
        assert_eq!(meta, ["b"]);
        assert_eq!(p.range(Table::Timers, "", &Bound::Unbounded).count(), 0);
    }

    #[test]
    fn writes_out_of_order_are_ordered_the_last_write_of_a_key_winning() {
        let mut p = Pending::default();
        p.add(1, step(vec![put("b", "1"), put("a", "1"), put("b", "2")]));
        assert_eq!(p.get(Table::Instances, "b"), Some(Some(&b"2"[..])));
        assert_eq!(p.get(Table::Instances, "a"), Some(Some(&b"1"[..])));
        let keys: Vec<&str> = p
            .range(Table::Instances, "", &Bound::Unbounded)
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["a", "b"]);
    }
}
