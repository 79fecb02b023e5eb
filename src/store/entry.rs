//! Typed entries: a key type names its table and the type of its value, so an entry is read
//! and written as what it is, never under another table nor decoded as another type (the
//! `offsets` and `meta` tables each hold values of several types, one per kind of key).
//!
//! The bytes are those the string keys and untyped values wrote before: typing changes no
//! layout.

use super::{encode, Result, Scope, Snapshot, Table, Txn, Write};
use serde::{de::DeserializeOwned, Serialize};
use std::borrow::Cow;

/// A kind of key: its table, its value's type and its key within a scope. The kind does not
/// carry its scope: a partition's entries are read and written through that partition's
/// transaction, a node's (checkpoints, the node id) through a node-wide one or
/// [`Entry::node_write`].
pub trait Entry {
    /// The table its entries live in.
    const TABLE: Table;
    /// What an entry holds.
    type Value: Serialize + DeserializeOwned;

    /// The key, without the scope's prefix.
    fn key(&self) -> Cow<'_, str>;

    /// A write of `value` under this key in the node's scope (a record kept outside every
    /// partition's, such as a changelog checkpoint), as a store batch takes it.
    fn node_write(&self, value: &Self::Value) -> Write {
        Write {
            table: Self::TABLE,
            key: self.key().into_owned(),
            value: Some(encode(value).into()),
        }
    }
}

/// `impl Entry` for a kind that holds its whole key in a `key: String` field, built once when
/// the entry is made: `owned_key_entry!(Name, Table, Value)`.
macro_rules! owned_key_entry {
    ($name:ident, $table:ident, $value:ty) => {
        impl $crate::store::Entry for $name {
            const TABLE: $crate::store::Table = $crate::store::Table::$table;
            type Value = $value;

            fn key(&self) -> ::std::borrow::Cow<'_, str> {
                ::std::borrow::Cow::Borrowed(&self.key)
            }
        }
    };
}
pub(crate) use owned_key_entry;

impl Txn<'_> {
    /// The value of `entry` (this transaction's, then the rounds in flight, then the store).
    pub fn read<E: Entry>(&self, entry: &E) -> Result<Option<E::Value>> {
        self.get(E::TABLE, &entry.key())
    }

    /// Stores `value` under `entry`.
    pub fn write<E: Entry>(&self, entry: &E, value: &E::Value) -> Result<()> {
        self.put(E::TABLE, &entry.key(), value)
    }

    /// Removes `entry`; true if it was there.
    pub fn erase<E: Entry>(&self, entry: &E) -> Result<bool> {
        self.delete(E::TABLE, &entry.key())
    }

    /// Removes `entry` without looking whether it is there ([`Txn::remove`]).
    pub fn unset<E: Entry>(&self, entry: &E) {
        self.remove(E::TABLE, &entry.key())
    }

    /// Whether `entry` is there (its value is not decoded).
    pub fn holds<E: Entry>(&self, entry: &E) -> Result<bool> {
        self.contains(E::TABLE, &entry.key())
    }

    /// The stored bytes of `entry`, handed to `f` undecoded (see [`Txn::get_raw`]).
    pub fn read_raw<E: Entry, R>(
        &self,
        entry: &E,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.get_raw(E::TABLE, &entry.key(), f)
    }

    /// Decodes bytes [`Txn::read_raw`] handed out.
    pub fn decode_entry<E: Entry>(entry: &E, bytes: &[u8]) -> Result<E::Value> {
        Txn::decode(E::TABLE, &entry.key(), bytes)
    }

    /// Stores `bytes`, which must be what [`Txn::encode`] made of an `E::Value` (or of a value
    /// that encodes as one), or its JSON text, without serializing it again (debug builds check that they decode, as [`Txn::put_encoded`]).
    pub fn write_encoded<E: Entry>(&self, entry: &E, bytes: Vec<u8>) -> Result<()> {
        self.put_encoded(E::TABLE, &entry.key(), bytes)
    }

    /// Keeps `entry`'s value in memory once this transaction's write of it is stored
    /// ([`Txn::keep_resident`]).
    pub fn keep<E: Entry>(&self, entry: &E) {
        self.keep_resident(E::TABLE, &entry.key())
    }

    /// Stops keeping `entry`'s value in memory ([`Txn::forget_resident`]).
    pub fn forget<E: Entry>(&self, entry: &E) {
        self.forget_resident(E::TABLE, &entry.key())
    }

    /// Every entry of kind `E` whose key starts with `prefix`, in key order, as (full key
    /// without the scope's prefix, value) ([`Txn::prefix`]).
    pub fn scan<E: Entry>(&self, prefix: &str) -> Result<Vec<(String, E::Value)>> {
        self.prefix(E::TABLE, prefix)
    }

    /// Removes every entry of kind `E` under `prefix`: the keys one scan finds, each removed
    /// without looking it up again ([`Txn::remove`]).
    pub fn clear_of<E: Entry>(&self, prefix: &str) -> Result<()> {
        for k in self.keys(E::TABLE, prefix)? {
            self.remove(E::TABLE, &k);
        }
        Ok(())
    }

    /// Adds `by` to a counter entry (absent counts as 0); returns the new value.
    pub fn add<E: Entry<Value = i64>>(&self, entry: &E, by: i64) -> Result<i64> {
        let n = self.read(entry)?.unwrap_or(0) + by;
        self.write(entry, &n)?;
        Ok(n)
    }
}

impl Snapshot<'_> {
    /// The value of `entry` in `scope`.
    pub fn read_in<E: Entry>(&self, scope: Scope, entry: &E) -> Result<Option<E::Value>> {
        self.get_in(scope, E::TABLE, &entry.key())
    }

    /// Every entry of kind `E` in `scope` whose key starts with `prefix`, in key order, as
    /// (key without the scope's prefix, value).
    pub fn scan_in<E: Entry>(&self, scope: Scope, prefix: &str) -> Result<Vec<(String, E::Value)>> {
        self.prefix_in(scope, E::TABLE, prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// A flag and a counter in the same table, as `meta` holds them.
    struct Flag;
    impl Entry for Flag {
        const TABLE: Table = Table::Meta;
        type Value = bool;
        fn key(&self) -> Cow<'_, str> {
            Cow::Borrowed("flag")
        }
    }
    struct Count(&'static str);
    impl Entry for Count {
        const TABLE: Table = Table::Meta;
        type Value = i64;
        fn key(&self) -> Cow<'_, str> {
            Cow::Borrowed(self.0)
        }
    }

    #[test]
    fn entries_are_written_as_the_untyped_calls_wrote_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.scoped(Scope::Partition(3));
        assert!(!tx.holds(&Flag).unwrap());
        tx.write(&Flag, &true).unwrap();
        assert_eq!(tx.add(&Count("n"), 2).unwrap(), 2);
        assert_eq!(tx.add(&Count("n"), 5).unwrap(), 7);
        tx.commit().unwrap();

        let tx = store.scoped(Scope::Partition(3));
        assert_eq!(tx.get::<bool>(Table::Meta, "flag").unwrap(), Some(true));
        assert_eq!(tx.get::<i64>(Table::Meta, "n").unwrap(), Some(7));
        assert!(tx.erase(&Count("n")).unwrap());
        assert!(!tx.erase(&Count("n")).unwrap());
        assert_eq!(tx.read(&Count("n")).unwrap(), None);
        drop(tx);

        // another scope does not see them; a snapshot reads them in theirs
        assert_eq!(store.scoped(Scope::Partition(4)).read(&Flag).unwrap(), None);
        let snap = store.read().unwrap();
        assert_eq!(
            snap.read_in(Scope::Partition(3), &Flag).unwrap(),
            Some(true)
        );
        assert_eq!(snap.read_in(Scope::Node, &Flag).unwrap(), None);

        // a node write lands outside every partition's scope
        store.apply(&[Count("m").node_write(&9)], true).unwrap();
        assert_eq!(store.write().unwrap().read(&Count("m")).unwrap(), Some(9));
        assert_eq!(
            store.scoped(Scope::Partition(3)).read(&Count("m")).unwrap(),
            None
        );
    }
}
