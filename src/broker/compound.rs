//! The typed entries of tables keyed by several parts: a deployed version a partition's
//! instances run on, a pending all-events start, an instance waiting under a waits key and
//! the head of an unpinned one, the
//! active instance of a correlation key and the marks of the instances it replaced, the
//! events buffered for an instance or held for a key, and the events seen lately. Each names its table and its value's
//! type ([`Entry`]); the keys are the parts joined as stores have always held them
//! (`store::key`, `store::num`).

use super::records::{Buffered, Join, StoredVersion};
use crate::store::{key, numbered, owned_key_entry, prefix_of, SEP};
use crate::time::stamp::Stamp;

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

            /// The full key, taken without a copy (a remote index change carries it).
            pub fn into_key(self) -> String {
                self.key
            }
        }

        owned_key_entry!($name, $table, $value);
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

by_parts!(
    /// The active instance of `workflow`'s keyed event `event` for correlation key `key`
    /// (`broker::active`); the value is the instance's id.
    ActiveOf, Active, String, workflow, event, key
);
by_parts!(
    /// The mark a put of `active` left on `instance`, the instance it replaced there
    /// (`broker::active`).
    SupersededOf, Superseded, (), active, instance
);

by_parts!(
    /// An instance that waits for `workflow`'s event `event` under waits key `wait_key`
    /// (`broker::index`).
    WaitsOf, Waits, (), workflow, event, wait_key, instance
);

impl WaitsOf {
    /// The prefix of every entry that waits under `wait_key` for `workflow`'s event `event`.
    pub fn prefix(workflow: &str, event: &str, wait_key: &str) -> String {
        // an empty last part: the three and a `SEP` after them, in one string (every event
        // looks its waiting instances up so)
        key(&[workflow, event, wait_key, ""])
    }
}

impl ActiveOf {
    /// The mark for `instance` replaced under this key.
    pub fn superseded(&self, instance: &str) -> SupersededOf {
        SupersededOf::new(&self.key, instance)
    }
}

by_parts!(
    /// An event seen within the dedupe window (`broker::dedupe`), by its `source` and `id`;
    /// the value is when its window ends.
    SeenOf, Seen, Stamp, source, id
);

impl SeenOf {
    /// An entry by its key as its expiry index named it.
    pub fn stored(key: String) -> Self {
        SeenOf { key }
    }

    pub fn as_str(&self) -> &str {
        &self.key
    }
}

/// An event in `buffer`: buffered for an instance that does not wait for it yet
/// (`instance SEP seq`), or held for a correlation key no instance has yet (`@`, the key's
/// [`ActiveOf`] key, `SEP seq`). `seq` (the partition's `buffer.seq` counter) keeps them in
/// arrival order under their prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferedAt {
    key: String,
}

impl BufferedAt {
    /// The `seq`th event buffered for `instance`.
    pub fn for_instance(instance: &str, seq: u64) -> Self {
        BufferedAt {
            key: numbered(BufferedAt::instance_prefix(instance), seq),
        }
    }

    /// The `seq`th event held for the key `active` names.
    pub fn held(active: &ActiveOf, seq: u64) -> Self {
        BufferedAt {
            key: numbered(BufferedAt::held_prefix(active), seq),
        }
    }

    /// An entry's key as the table or its expiry index gave it back.
    pub fn found(key: String) -> Self {
        BufferedAt { key }
    }

    /// The prefix of every event buffered for `instance`.
    pub fn instance_prefix(instance: &str) -> String {
        prefix_of(instance)
    }

    /// The prefix of every event held for the key `active` names.
    pub fn held_prefix(active: &ActiveOf) -> String {
        let mut k = String::with_capacity(active.key.len() + 22);
        k.push('@');
        k.push_str(&active.key);
        k.push(SEP);
        k
    }

    /// What it waits for: the instance, or `@` and the correlation key (the key without its
    /// sequence number).
    pub fn waiting_for(&self) -> &str {
        self.key
            .rsplit_once(SEP)
            .map(|(w, _)| w)
            .unwrap_or_default()
    }

    pub fn as_str(&self) -> &str {
        &self.key
    }
}

owned_key_entry!(BufferedAt, Buffer, Buffered);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{num, Entry, Table};

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
        let a = ActiveOf::new("w", "e", "k1");
        assert_eq!(a.key(), format!("w{SEP}e{SEP}k1"));
        assert_eq!(<ActiveOf as Entry>::TABLE, Table::Active);
        let m = a.superseded("p1-i");
        assert_eq!(m.key(), format!("w{SEP}e{SEP}k1{SEP}p1-i"));
        assert_eq!(<SupersededOf as Entry>::TABLE, Table::Superseded);
        let w = WaitsOf::new("w", "e", "k1", "p1-i");
        assert_eq!(w.key(), format!("w{SEP}e{SEP}k1{SEP}p1-i"));
        assert_eq!(
            WaitsOf::prefix("w", "e", "k1"),
            format!("w{SEP}e{SEP}k1{SEP}")
        );
        assert!(w.key().starts_with(&WaitsOf::prefix("w", "e", "k1")));
        assert!(!WaitsOf::new("w", "e", "k10", "p1-i")
            .key()
            .starts_with(&WaitsOf::prefix("w", "e", "k1")));
        assert_eq!(<WaitsOf as Entry>::TABLE, Table::Waits);
        assert_eq!(w.into_key(), format!("w{SEP}e{SEP}k1{SEP}p1-i"));
        let s = SeenOf::new("/src", "e1");
        assert_eq!(s.key(), format!("/src{SEP}e1"));
        assert_eq!(SeenOf::stored(s.as_str().to_string()).key(), s.key());
        assert_eq!(<SeenOf as Entry>::TABLE, Table::Seen);
    }

    #[test]
    fn buffered_events_are_keyed_by_what_they_wait_for_then_arrival() {
        let b = BufferedAt::for_instance("p1-i", 7);
        assert_eq!(b.key(), format!("p1-i{SEP}{}", num(7)));
        assert!(b.as_str().starts_with(&BufferedAt::instance_prefix("p1-i")));
        assert_eq!(b.waiting_for(), "p1-i");
        let a = ActiveOf::new("w", "e", "k1");
        let h = BufferedAt::held(&a, 12);
        assert_eq!(h.key(), format!("@w{SEP}e{SEP}k1{SEP}{}", num(12)));
        assert!(h.as_str().starts_with(&BufferedAt::held_prefix(&a)));
        assert_eq!(h.waiting_for(), format!("@w{SEP}e{SEP}k1"));
        assert_eq!(BufferedAt::found(h.as_str().to_string()), h);
        assert_eq!(<BufferedAt as Entry>::TABLE, Table::Buffer);
        // arrival order is key order under a prefix
        assert!(
            BufferedAt::for_instance("i", 9).as_str() < BufferedAt::for_instance("i", 10).as_str()
        );
    }
}
