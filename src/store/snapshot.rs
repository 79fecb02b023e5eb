//! A consistent read-only view of the store ([`Snapshot`]), for readers beside the core
//! (the admin API, exports).

use super::{collect, decode, prefix_end, readers, scope_prefix, Result, Scope, Store, Table, SEP};
use serde::de::DeserializeOwned;
use std::ops::Bound;

/// A consistent read-only view of the last commit.
pub struct Snapshot<'s> {
    store: &'s Store,
    snaps: Vec<fjall::Snapshot>,
    _reading: readers::Reading,
}

impl<'s> Snapshot<'s> {
    /// A view made of one fjall snapshot per table, counted in `reading` until dropped.
    pub(super) fn new(
        store: &'s Store,
        snaps: Vec<fjall::Snapshot>,
        reading: readers::Reading,
    ) -> Snapshot<'s> {
        Snapshot {
            store,
            snaps,
            _reading: reading,
        }
    }

    fn snap(&self, table: Table) -> &fjall::Snapshot {
        &self.snaps[table as usize]
    }

    pub fn get<T: DeserializeOwned>(&self, table: Table, key: &str) -> Result<Option<T>> {
        self.store.lookups.add(table, 1);
        let v = self.snap(table).get(key)?;
        v.map(|b| decode(table, key, &b)).transpose()
    }

    pub fn prefix<T: DeserializeOwned>(
        &self,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, T)>> {
        collect(
            table,
            self.snap(table).prefix(prefix),
            |_| false,
            usize::MAX,
        )
    }

    /// The first entry of a table, by key.
    pub fn first<T: DeserializeOwned>(&self, table: Table) -> Result<Option<(String, T)>> {
        let kv = self.snap(table).first_key_value()?;
        kv.map(|(k, v)| {
            let key = String::from_utf8_lossy(&k).to_string();
            decode(table, &key, &v).map(|v| (key, v))
        })
        .transpose()
    }

    /// Entries in a table (counts them: keep it to small tables).
    pub fn len(&self, table: Table) -> Result<u64> {
        Ok(self.snap(table).len()? as u64)
    }

    pub fn is_empty(&self, table: Table) -> Result<bool> {
        Ok(self.snap(table).is_empty()?)
    }

    /// Entries of one scope in a table (counts keys without decoding: keep it to small
    /// tables).
    pub fn len_in(&self, scope: Scope, table: Table) -> Result<u64> {
        let mut n = 0;
        for kv in self.snap(table).prefix(scope_prefix(scope)) {
            kv?;
            n += 1;
        }
        Ok(n)
    }

    /// The store this snapshot reads (for callers that need a fresh view).
    pub fn store(&self) -> &Store {
        self.store
    }

    /// A key of one scope.
    pub fn get_in<T: DeserializeOwned>(
        &self,
        scope: Scope,
        table: Table,
        key: &str,
    ) -> Result<Option<T>> {
        self.get(table, &format!("{}{key}", scope_prefix(scope)))
    }

    /// Entries of one scope whose key starts with `prefix`, keys without the scope prefix.
    pub fn prefix_in<T: DeserializeOwned>(
        &self,
        scope: Scope,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, T)>> {
        let sp = scope_prefix(scope);
        let mut out = self.prefix::<T>(table, &format!("{sp}{prefix}"))?;
        for (k, _) in out.iter_mut() {
            k.drain(..sp.len());
        }
        Ok(out)
    }

    /// A page of one scope's entries in key order: those after key `after` (without the scope
    /// prefix; `None`: from the first) that `keep` accepts, at most `limit` of them. Entries
    /// are read and decoded one at a time and the scan stops at the page's end, so a page
    /// costs what it skips and holds, not the table's size.
    pub fn page_in<T: DeserializeOwned>(
        &self,
        scope: Scope,
        table: Table,
        after: Option<&str>,
        limit: usize,
        mut keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<(String, T)>> {
        let sp = scope_prefix(scope);
        let start = match after {
            Some(a) => Bound::Excluded(format!("{sp}{a}")),
            None => Bound::Included(sp.clone()),
        };
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        for kv in self.snap(table).range((start, prefix_end(&sp))) {
            let (k, v) = kv?;
            let key = String::from_utf8_lossy(&k).to_string();
            let value: T = decode(table, &key, &v)?;
            if keep(&value) {
                out.push((key[sp.len()..].to_string(), value));
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Every entry of a table with the state partition it belongs to (`None`: the node's).
    pub fn partitioned<T: DeserializeOwned>(
        &self,
        table: Table,
    ) -> Result<Vec<(Option<u16>, String, T)>> {
        Ok(self
            .prefix::<T>(table, "")?
            .into_iter()
            .map(|(k, v)| match split_scope(&k) {
                Some((p, rest)) => (Some(p), rest.to_string(), v),
                None => (None, k, v),
            })
            .collect())
    }
}

/// `pNNNN SEP rest` -> (NNNN, rest).
fn split_scope(k: &str) -> Option<(u16, &str)> {
    let (head, rest) = k.split_once(SEP)?;
    let digits = head.strip_prefix('p').filter(|d| d.len() == 4)?;
    Some((digits.parse().ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::*;

    #[test]
    fn a_page_starts_after_its_cursor_and_stays_in_its_scope() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for (p, keys) in [
            (1u16, ["a", "b", "c", "d", "e"]),
            (2, ["a", "b", "c", "d", "e"]),
        ] {
            let tx = store.scoped(Scope::Partition(p));
            for (i, k) in keys.iter().enumerate() {
                tx.put(Table::Instances, k, &(i as i32 + 10 * p as i32))
                    .unwrap();
            }
            tx.commit().unwrap();
        }
        let snap = store.read().unwrap();
        let page = |after: Option<&str>, limit| {
            snap.page_in::<i32>(Scope::Partition(1), Table::Instances, after, limit, |v| {
                v % 2 == 0
            })
            .unwrap()
        };
        assert_eq!(page(None, 2), vec![("a".into(), 10), ("c".into(), 12)]);
        assert_eq!(page(Some("c"), 2), vec![("e".into(), 14)]);
        assert_eq!(page(Some("e"), 2), vec![]);
        assert_eq!(page(None, 0), vec![]);
    }
}
