//! The typed entries of tables keyed by several parts: a deployed version a partition's
//! instances run on, a pending all-events start, and the head of an unpinned waits key. Each
//! names its table and its value's type ([`Entry`]); the keys are the parts joined as stores
//! have always held them (`store::key`).

use super::records::{Join, StoredVersion};
use crate::store::{key, Entry, Table};
use std::borrow::Cow;

/// The source of `workflow`'s version `version` (its content hash), kept with the instances
/// that run on it (docs/scale.md).
pub struct VersionOf<'a> {
    pub workflow: &'a str,
    pub version: &'a str,
}

impl Entry for VersionOf<'_> {
    const TABLE: Table = Table::Versions;
    type Value = StoredVersion;

    fn key(&self) -> Cow<'_, str> {
        Cow::Owned(key(&[self.workflow, self.version]))
    }
}

/// The events an all-events start of `workflow` has seen so far for correlation key `key`.
pub struct JoinOf<'a> {
    pub workflow: &'a str,
    pub key: &'a str,
}

impl Entry for JoinOf<'_> {
    const TABLE: Table = Table::Joins;
    type Value = Join;

    fn key(&self) -> Cow<'_, str> {
        Cow::Owned(key(&[self.workflow, self.key]))
    }
}

/// How many `waits` entries of `workflow`'s event `event` wait under the unpinned waits key
/// `wait_key` (`broker::unpinned`).
pub struct HeadOf<'a> {
    pub workflow: &'a str,
    pub event: &'a str,
    pub wait_key: &'a str,
}

impl Entry for HeadOf<'_> {
    const TABLE: Table = Table::Unpinned;
    type Value = u64;

    fn key(&self) -> Cow<'_, str> {
        Cow::Owned(key(&[self.workflow, self.event, self.wait_key]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SEP;

    #[test]
    fn keys_are_the_parts_joined_as_stores_hold_them() {
        let v = VersionOf {
            workflow: "order",
            version: "7dcf3b76202b",
        };
        assert_eq!(v.key(), format!("order{SEP}7dcf3b76202b"));
        assert_eq!(<VersionOf as Entry>::TABLE, Table::Versions);
        let j = JoinOf {
            workflow: "w",
            key: "k1",
        };
        assert_eq!(j.key(), format!("w{SEP}k1"));
        assert_eq!(<JoinOf as Entry>::TABLE, Table::Joins);
        let h = HeadOf {
            workflow: "w",
            event: "e",
            wait_key: "k",
        };
        assert_eq!(h.key(), format!("w{SEP}e{SEP}k"));
        assert_eq!(<HeadOf as Entry>::TABLE, Table::Unpinned);
    }
}
