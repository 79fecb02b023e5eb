//! The embedded, durable store (fjall, a directory under `data_dir`; chosen over redb by the
//! benchmark in `benches/store.rs`, see docs/store.md). Every consumed batch is one write
//! transaction holding instance states, index changes, timers, the outbox and the Kafka
//! offsets ([`Txn`]), fsynced at commit; readers (the admin API) see committed snapshots
//! without blocking it.
//!
//! Every table maps a string key to JSON bytes. Keys that must sort by time or sequence carry
//! zero-padded numbers, so a range scan returns them in order. See `tables` for the layout.

mod tables;

pub use tables::{at, key, num, split_at, Table, SEP};

use fjall::{PersistMode, TxKeyspace, TxPartitionHandle};
use serde::{de::DeserializeOwned, Serialize};
use std::cell::RefCell;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Db(Box<fjall::Error>),
    #[error("store: corrupt record in {table} at {key:?}: {source}")]
    Corrupt {
        table: &'static str,
        key: String,
        source: serde_json::Error,
    },
    #[error("cannot create data directory {dir}: {source}")]
    Dir { dir: String, source: std::io::Error },
}

impl From<fjall::Error> for StoreError {
    fn from(e: fjall::Error) -> Self {
        StoreError::Db(Box::new(e))
    }
}

impl From<fjall::LsmError> for StoreError {
    fn from(e: fjall::LsmError) -> Self {
        StoreError::Db(Box::new(e.into()))
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// The database: one fjall keyspace (a directory), one partition per [`Table`].
pub struct Store {
    ks: TxKeyspace,
    parts: Vec<TxPartitionHandle>,
}

impl Store {
    /// Opens (or creates) the store directory and every table.
    pub fn open(path: &Path) -> Result<Store> {
        std::fs::create_dir_all(path).map_err(|source| StoreError::Dir {
            dir: path.display().to_string(),
            source,
        })?;
        // Durability is ours to decide: every commit is fsynced before it returns.
        let ks = fjall::Config::new(path)
            .manual_journal_persist(true)
            .open_transactional()?;
        let parts = Table::ALL
            .iter()
            .map(|t| ks.open_partition(t.name(), Default::default()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Store { ks, parts })
    }

    pub fn write(&self) -> Result<Txn<'_>> {
        Ok(Txn {
            store: self,
            tx: RefCell::new(Some(self.ks.write_tx())),
        })
    }

    pub fn read(&self) -> Result<Snapshot<'_>> {
        Ok(Snapshot {
            store: self,
            tx: self.ks.read_tx(),
        })
    }

    fn part(&self, t: Table) -> &TxPartitionHandle {
        &self.parts[t as usize]
    }
}

/// One write transaction; nothing is visible or durable until [`Txn::commit`]. Dropping it
/// without committing discards it. There is one writer at a time.
pub struct Txn<'s> {
    store: &'s Store,
    tx: RefCell<Option<fjall::WriteTransaction<'s>>>,
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

fn collect<T: DeserializeOwned>(
    table: Table,
    iter: impl Iterator<Item = fjall::Result<fjall::KvPair>>,
    stop: impl Fn(&str) -> bool,
    limit: usize,
) -> Result<Vec<(String, T)>> {
    let mut out = Vec::new();
    for kv in iter {
        let (k, v) = kv?;
        let key = String::from_utf8_lossy(&k).to_string();
        if stop(&key) || out.len() >= limit {
            break;
        }
        let value = decode(table, &key, &v)?;
        out.push((key, value));
    }
    Ok(out)
}

impl Txn<'_> {
    fn with<R>(&self, f: impl FnOnce(&mut fjall::WriteTransaction<'_>) -> R) -> R {
        let mut guard = self.tx.borrow_mut();
        f(guard.as_mut().expect("transaction is open until commit"))
    }

    pub fn get<T: DeserializeOwned>(&self, table: Table, key: &str) -> Result<Option<T>> {
        let part = self.store.part(table);
        let v = self.with(|tx| tx.get(part, key))?;
        v.map(|b| decode(table, key, &b)).transpose()
    }

    pub fn put<T: Serialize>(&self, table: Table, key: &str, value: &T) -> Result<()> {
        let part = self.store.part(table);
        self.with(|tx| tx.insert(part, key, encode(value)));
        Ok(())
    }

    /// Removes `key`; true if it was there.
    pub fn delete(&self, table: Table, key: &str) -> Result<bool> {
        let part = self.store.part(table);
        let old = self.with(|tx| tx.take(part, key))?;
        Ok(old.is_some())
    }

    /// Entries whose key starts with `prefix`, in key order.
    pub fn prefix<T: DeserializeOwned>(
        &self,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, T)>> {
        let part = self.store.part(table);
        self.with(|tx| collect(table, tx.prefix(part, prefix), |_| false, usize::MAX))
    }

    /// Entries with keys in `[from, to)`, in key order, at most `limit`.
    pub fn range<T: DeserializeOwned>(
        &self,
        table: Table,
        from: &str,
        to: &str,
        limit: usize,
    ) -> Result<Vec<(String, T)>> {
        let part = self.store.part(table);
        let (from, to) = (from.to_string(), to.to_string());
        self.with(|tx| collect(table, tx.range(part, from..to), |_| false, limit))
    }

    /// Removes and returns (oldest first, at most `limit`) the entries of a time-keyed table
    /// (see [`at`]) due at or before `until`, as (the key's rest, value).
    pub fn take_due<T: DeserializeOwned>(
        &self,
        table: Table,
        until: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<Vec<(String, T)>> {
        let end = num(until.timestamp_millis().max(0) as u64 + 1);
        let due: Vec<(String, T)> = self.range(table, "", &end, limit)?;
        let mut out = Vec::with_capacity(due.len());
        for (k, v) in due {
            self.delete(table, &k)?;
            let rest = k.split_once(SEP).map(|(_, r)| r).unwrap_or_default();
            out.push((rest.to_string(), v));
        }
        Ok(out)
    }

    /// The first entry of a table, by key.
    pub fn first<T: DeserializeOwned>(&self, table: Table) -> Result<Option<(String, T)>> {
        let part = self.store.part(table);
        let kv = self.with(|tx| tx.first_key_value(part))?;
        kv.map(|(k, v)| {
            let key = String::from_utf8_lossy(&k).to_string();
            decode(table, &key, &v).map(|v| (key, v))
        })
        .transpose()
    }

    /// Adds `by` to a counter in the meta table and returns the new value.
    pub fn bump(&self, name: &str, by: i64) -> Result<i64> {
        let n = self.get::<i64>(Table::Meta, name)?.unwrap_or(0) + by;
        self.put(Table::Meta, name, &n)?;
        Ok(n)
    }

    /// Commits and fsyncs: when this returns, the batch survives a crash.
    pub fn commit(self) -> Result<()> {
        self.commit_with(true)
    }

    /// Commits without waiting for the disk: for changes that may be lost in a crash without
    /// harm (they are redone), such as forgetting acknowledged outbox entries. The next
    /// fsynced commit makes them durable too.
    pub fn commit_lazy(self) -> Result<()> {
        self.commit_with(false)
    }

    fn commit_with(self, sync: bool) -> Result<()> {
        let tx = self.tx.borrow_mut().take().expect("commit once");
        tx.commit()?;
        if sync {
            self.store.ks.persist(PersistMode::SyncAll)?;
        }
        Ok(())
    }
}

/// A consistent read-only view of the last commit.
pub struct Snapshot<'s> {
    store: &'s Store,
    tx: fjall::ReadTransaction,
}

impl Snapshot<'_> {
    pub fn get<T: DeserializeOwned>(&self, table: Table, key: &str) -> Result<Option<T>> {
        let v = self.tx.get(self.store.part(table), key)?;
        v.map(|b| decode(table, key, &b)).transpose()
    }

    pub fn prefix<T: DeserializeOwned>(
        &self,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, T)>> {
        collect(
            table,
            self.tx.prefix(self.store.part(table), prefix),
            |_| false,
            usize::MAX,
        )
    }

    /// The first entry of a table, by key.
    pub fn first<T: DeserializeOwned>(&self, table: Table) -> Result<Option<(String, T)>> {
        let kv = self.tx.first_key_value(self.store.part(table))?;
        kv.map(|(k, v)| {
            let key = String::from_utf8_lossy(&k).to_string();
            decode(table, &key, &v).map(|v| (key, v))
        })
        .transpose()
    }

    /// Entries in a table (counts them: keep it to small tables).
    pub fn len(&self, table: Table) -> Result<u64> {
        Ok(self.tx.len(self.store.part(table))? as u64)
    }

    pub fn is_empty(&self, table: Table) -> Result<bool> {
        Ok(self.tx.is_empty(self.store.part(table))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_are_durable_and_aborts_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
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
