//! The typed entries of tables keyed by several parts: a deployed version a partition's
//! instances run on, a pending all-events start, and the head of an unpinned waits key. Each
//! names its table and its value's type ([`Entry`]); the keys are the parts joined as stores
//! have always held them (`store::key`).

use super::records::{Join, StoredVersion};
use crate::store::{key, Entry, Table};
use std::borrow::Cow;

/// An entry kind keyed by the parts it names, joined with `store::key` in that order once,
/// when it is made (`Name::new(part, ..)`), however often it is then read and written:
/// `by_parts!(doc, Name, Table, Value, part, ..)`.
macro_rules! by_parts {
    ($(#[$doc:meta])* $name:ident, $table:ident, $value:ty, $($part:ident),+) => {
        $(#[$doc])*
        pub struct $name {
            key: String,
        }

        impl $name {
            pub fn new($($part: &str),+) -> Self {
                $name {
                    key: key(&[$($part),+]),
                }
            }
        }

        impl Entry for $name {
            const TABLE: Table = Table::$table;
            type Value = $value;

            fn key(&self) -> Cow<'_, str> {
                Cow::Borrowed(&self.key)
            }
        }
    };
}

by_parts!(
    /// The source of `workflow`'s version `version` (its content hash), kept with the
    /// instances that run on it (docs/scale.md).
    VersionOf, Versions, StoredVersion, workflow, version
);
by_parts!(
    /// The events an all-events start of `workflow` has seen so far for correlation key
    /// `key`.
    JoinOf, Joins, Join, workflow, key
);
by_parts!(
    /// How many `waits` entries of `workflow`'s event `event` wait under the unpinned waits
    /// key `wait_key` (`broker::unpinned`).
    HeadOf, Unpinned, u64, workflow, event, wait_key
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SEP;

    #[test]
    fn keys_are_the_parts_joined_as_stores_hold_them() {
        let v = VersionOf::new("order", "7dcf3b76202b");
        assert_eq!(v.key(), format!("order{SEP}7dcf3b76202b"));
        assert_eq!(<VersionOf as Entry>::TABLE, Table::Versions);
        let j = JoinOf::new("w", "k1");
        assert_eq!(j.key(), format!("w{SEP}k1"));
        assert_eq!(<JoinOf as Entry>::TABLE, Table::Joins);
        let h = HeadOf::new("w", "e", "k");
        assert_eq!(h.key(), format!("w{SEP}e{SEP}k"));
        assert_eq!(<HeadOf as Entry>::TABLE, Table::Unpinned);
    }
}
