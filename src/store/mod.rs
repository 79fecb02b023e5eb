//! The embedded, durable store (redb, one file under `data_dir`). Every consumed batch is one
//! write transaction holding instance states, index changes, timers, the outbox and the Kafka
//! offsets ([`Txn`]); readers (the admin API) see committed snapshots without blocking it.
//!
//! Every table maps a string key to JSON bytes. Keys that must sort by time or sequence carry
//! zero-padded numbers, so a range scan returns them in order. See `tables` for the layout.

mod tables;

pub use tables::{key, num, Table, SEP};

use redb::{Database, ReadableTable, ReadableTableMetadata};
use serde::{de::DeserializeOwned, Serialize};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Db(Box<redb::Error>),
    #[error("store: corrupt record in {table} at {key:?}: {source}")]
    Corrupt {
        table: &'static str,
        key: String,
        source: serde_json::Error,
    },
    #[error("cannot create data directory {dir}: {source}")]
    Dir { dir: String, source: std::io::Error },
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Db(Box::new(e.into()))
            }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

pub type Result<T> = std::result::Result<T, StoreError>;

/// The database.
pub struct Store {
    db: Database,
}

impl Store {
    /// Opens (or creates) the store file, creating its directory and every table.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                dir: dir.display().to_string(),
                source,
            })?;
        }
        let db = Database::create(path)?;
        let tx = db.begin_write()?;
        for t in Table::ALL {
            tx.open_table(t.def())?;
        }
        tx.commit()?;
        Ok(Store { db })
    }

    pub fn write(&self) -> Result<Txn> {
        Ok(Txn {
            tx: self.db.begin_write()?,
        })
    }

    pub fn read(&self) -> Result<Snapshot> {
        Ok(Snapshot {
            tx: self.db.begin_read()?,
        })
    }
}

/// One write transaction; nothing is visible or durable until [`Txn::commit`].
pub struct Txn {
    tx: redb::WriteTransaction,
}

fn decode<T: DeserializeOwned>(table: Table, key: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt {
        table: table.name(),
        key: key.to_string(),
        source,
    })
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("store values serialize")
}

impl Txn {
    pub fn get<T: DeserializeOwned>(&self, table: Table, key: &str) -> Result<Option<T>> {
        let t = self.tx.open_table(table.def())?;
        let v = t.get(key)?;
        v.map(|g| decode(table, key, g.value())).transpose()
    }

    pub fn put<T: Serialize>(&self, table: Table, key: &str, value: &T) -> Result<()> {
        let mut t = self.tx.open_table(table.def())?;
        t.insert(key, encode(value).as_slice())?;
        Ok(())
    }

    /// Removes `key`; true if it was there.
    pub fn delete(&self, table: Table, key: &str) -> Result<bool> {
        let mut t = self.tx.open_table(table.def())?;
        let old = t.remove(key)?;
        Ok(old.is_some())
    }

    /// Entries whose key starts with `prefix`, in key order.
    pub fn prefix<T: DeserializeOwned>(
        &self,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, T)>> {
        let t = self.tx.open_table(table.def())?;
        scan(table, &t, prefix, None, usize::MAX)
    }

    /// Entries with keys in `[from, to)`, in key order, at most `limit`.
    pub fn range<T: DeserializeOwned>(
        &self,
        table: Table,
        from: &str,
        to: &str,
        limit: usize,
    ) -> Result<Vec<(String, T)>> {
        let t = self.tx.open_table(table.def())?;
        scan(table, &t, from, Some(to), limit)
    }

    /// The first entry of a table, by key.
    pub fn first<T: DeserializeOwned>(&self, table: Table) -> Result<Option<(String, T)>> {
        let t = self.tx.open_table(table.def())?;
        let first = t.first()?;
        first
            .map(|(k, v)| {
                let key = k.value().to_string();
                decode(table, &key, v.value()).map(|v| (key, v))
            })
            .transpose()
    }

    /// Adds `by` to a counter in the meta table and returns the new value.
    pub fn bump(&self, name: &str, by: i64) -> Result<i64> {
        let n = self.get::<i64>(Table::Meta, name)?.unwrap_or(0) + by;
        self.put(Table::Meta, name, &n)?;
        Ok(n)
    }

    pub fn commit(self) -> Result<()> {
        self.tx.commit()?;
        Ok(())
    }
}

/// A consistent read-only view of the last commit.
pub struct Snapshot {
    tx: redb::ReadTransaction,
}

impl Snapshot {
    pub fn get<T: DeserializeOwned>(&self, table: Table, key: &str) -> Result<Option<T>> {
        let t = self.tx.open_table(table.def())?;
        let v = t.get(key)?;
        v.map(|g| decode(table, key, g.value())).transpose()
    }

    pub fn prefix<T: DeserializeOwned>(
        &self,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, T)>> {
        let t = self.tx.open_table(table.def())?;
        scan(table, &t, prefix, None, usize::MAX)
    }

    pub fn len(&self, table: Table) -> Result<u64> {
        let t = self.tx.open_table(table.def())?;
        Ok(t.len()?)
    }

    pub fn is_empty(&self, table: Table) -> Result<bool> {
        Ok(self.len(table)? == 0)
    }
}

fn scan<T: DeserializeOwned>(
    table: Table,
    t: &impl ReadableTable<&'static str, &'static [u8]>,
    from: &str,
    to: Option<&str>,
    limit: usize,
) -> Result<Vec<(String, T)>> {
    let mut out = Vec::new();
    for entry in t.range(from..)? {
        let (k, v) = entry?;
        let key = k.value();
        let inside = match to {
            Some(end) => key < end,
            None => key.starts_with(from),
        };
        if !inside || out.len() >= limit {
            break;
        }
        out.push((key.to_string(), decode(table, key, v.value())?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_are_durable_and_aborts_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        {
            let store = Store::open(&path).unwrap();
            let tx = store.write().unwrap();
            tx.put(Table::Instances, "a", &1).unwrap();
            tx.put(Table::Instances, "a/b", &2).unwrap();
            tx.put(Table::Instances, "b", &3).unwrap();
            tx.commit().unwrap();
            let tx = store.write().unwrap();
            tx.put(Table::Instances, "c", &4).unwrap();
            drop(tx); // not committed
        }
        let store = Store::open(&path).unwrap();
        let tx = store.write().unwrap();
        assert_eq!(tx.get::<i32>(Table::Instances, "c").unwrap(), None);
        let a: Vec<(String, i32)> = tx.prefix(Table::Instances, "a").unwrap();
        assert_eq!(a, vec![("a".into(), 1), ("a/b".into(), 2)]);
        assert_eq!(tx.bump("n", 2).unwrap(), 2);
        assert_eq!(tx.bump("n", -1).unwrap(), 1);
    }
}
