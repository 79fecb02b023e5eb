//! Typed entries of the time-keyed tables ([`Table::time_keyed`]: timers, the expiry indexes,
//! finished instances). A kind ([`Timed`]) names its table and its value's type; an entry
//! ([`At`]) is a time and what it names, keyed as [`at`] has always written them, so typing
//! changes no layout. Those tables are drained oldest first ([`Txn::take_due_of`]).

use super::{at, Entry, Result, Table, Txn};
use chrono::{DateTime, Utc};
use serde::{de::DeserializeOwned, Serialize};
use std::borrow::Cow;
use std::marker::PhantomData;

/// A kind of entry in a time-keyed table.
pub trait Timed {
    /// Its table; one [`Table::time_keyed`].
    const TABLE: Table;
    /// What an entry holds.
    type Value: Serialize + DeserializeOwned;
}

/// An entry of kind `T`: due (or made) at a time, naming something (a timer's id, a seen
/// event's key, an instance).
pub struct At<T> {
    key: String,
    kind: PhantomData<fn() -> T>,
}

impl<T: Timed> At<T> {
    /// The entry at `when` naming `what`.
    pub fn new(when: DateTime<Utc>, what: &str) -> Self {
        At::stored(at(when, what))
    }

    /// An entry by its key as the store holds it (another entry pointing at it kept it).
    pub fn stored(key: String) -> Self {
        At {
            key,
            kind: PhantomData,
        }
    }

    /// The key as the store holds it.
    pub fn into_key(self) -> String {
        self.key
    }
}

impl<T: Timed> Entry for At<T> {
    const TABLE: Table = T::TABLE;
    type Value = T::Value;

    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.key)
    }
}

impl Txn<'_> {
    /// Removes and returns (oldest first, at most `limit`) the entries of kind `T` due at or
    /// before `until`, as (what each names, its value) ([`Txn::take_due`]).
    pub fn take_due_of<T: Timed>(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<(String, T::Value)>> {
        self.take_due(T::TABLE, until, limit)
    }

    /// The oldest entry of kind `T` in this transaction's scope, as (its key, its value)
    /// ([`Txn::first`]).
    pub fn first_of<T: Timed>(&self) -> Result<Option<(String, T::Value)>> {
        self.first(T::TABLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{split_at, Scope, Store};

    enum Alarm {}
    impl Timed for Alarm {
        const TABLE: Table = Table::Timers;
        type Value = i64;
    }

    fn t(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    #[test]
    fn entries_are_keyed_as_at_keys_them_and_taken_oldest_first() {
        let e = At::<Alarm>::new(t(1_500), "a1");
        assert_eq!(e.key(), at(t(1_500), "a1"));
        assert_eq!(<At<Alarm> as Entry>::TABLE, Table::Timers);
        assert_eq!(split_at(&e.key()), Some((t(1_500), "a1")));

        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        tx.write(&At::<Alarm>::new(t(30), "c"), &3).unwrap();
        tx.write(&At::<Alarm>::new(t(10), "a"), &1).unwrap();
        tx.write(&At::<Alarm>::new(t(20), "b"), &2).unwrap();
        // the untyped table holds the same bytes under the same keys
        assert_eq!(
            tx.get::<i64>(Table::Timers, &at(t(20), "b")).unwrap(),
            Some(2)
        );
        let (k, v) = tx.first_of::<Alarm>().unwrap().unwrap();
        assert_eq!((split_at(&k), v), (Some((t(10), "a")), 1));
        let stored = At::<Alarm>::stored(k);
        assert_eq!(tx.read(&stored).unwrap(), Some(1));
        assert_eq!(stored.into_key(), at(t(10), "a"));
        assert_eq!(
            tx.take_due_of::<Alarm>(t(25), 10).unwrap(),
            [("a".to_string(), 1), ("b".to_string(), 2)]
        );
        assert_eq!(tx.read(&At::<Alarm>::new(t(10), "a")).unwrap(), None);
        assert_eq!(tx.read(&At::<Alarm>::new(t(30), "c")).unwrap(), Some(3));
    }
}
