//! The `offsets` table's entries: how far each source of a partition's inputs was applied.
//! A source slot (an input topic partition, or a partition sending messages) keeps the last
//! position applied, `(0, offset)` or `(fence, seq)` (docs/scale.md); the work topic keeps
//! the next offset to read. Each is an [`Entry`], so the two value types cannot be mixed up.

use crate::cluster::work::SourceSlot;
use crate::store::{Entry, Table};
use std::borrow::Cow;

impl Entry for SourceSlot {
    const TABLE: Table = Table::Offsets;
    type Value = (i64, i64);

    /// `in:topic:partition` or `part:partition` (what the slot displays as), built without
    /// `fmt` (it is read, and written, for every input).
    fn key(&self) -> Cow<'_, str> {
        let mut k = String::with_capacity(32);
        match self {
            SourceSlot::Input { topic, partition } => {
                k.push_str("in:");
                k.push_str(topic);
                k.push(':');
                push_int(&mut k, i64::from(*partition));
            }
            SourceSlot::Partition(p) => {
                k.push_str("part:");
                push_int(&mut k, i64::from(p.0));
            }
        }
        Cow::Owned(k)
    }
}

/// The next work topic offset a partition reads.
pub struct WorkOffset;

impl Entry for WorkOffset {
    const TABLE: Table = Table::Offsets;
    type Value = i64;

    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed("work")
    }
}

/// Appends `n` in decimal, as `Display` writes it.
fn push_int(k: &mut String, n: i64) {
    if n < 0 {
        k.push('-');
    }
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut m = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    k.push_str(std::str::from_utf8(&digits[i..]).expect("ASCII digits"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::partition::PartitionId;

    #[test]
    fn keys_are_what_existing_stores_hold() {
        // stores written before the entries were typed keyed slots by their `Display`
        let mut slots = vec![SourceSlot::Partition(PartitionId(0))];
        for p in [0, 7, 10, 4095, u16::MAX] {
            slots.push(SourceSlot::Partition(PartitionId(p)));
        }
        for p in [0, 1, 9, 10, 99, 100, 12345, i32::MAX, -1, i32::MIN] {
            slots.push(SourceSlot::Input {
                topic: "flowbroker.in".into(),
                partition: p,
            });
        }
        for s in &slots {
            assert_eq!(s.key(), s.to_string());
        }
        assert_eq!(WorkOffset.key(), "work");
        let keys: std::collections::BTreeSet<_> = slots.iter().map(|s| s.key()).collect();
        assert!(
            !keys.contains("work"),
            "no slot shares the work offset's key"
        );
    }
}
