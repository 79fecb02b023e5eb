//! The kinds of entries in the time-keyed tables ([`crate::store::Timed`]): timers by when
//! they are due, the expiry indexes of seen and buffered events, and finished instances by
//! when they finished. Each is read and written as a [`crate::store::At`] of its kind.

use super::records::TimerEntry;
use crate::store::{Table, Timed};

/// A durable timer, at its due time, naming its id (the id's own entry, `TimerIdOf`, holds
/// this entry's key).
pub enum Timer {}

impl Timed for Timer {
    const TABLE: Table = Table::Timers;
    type Value = TimerEntry;
}

/// The end of a seen event's dedupe window, naming its `SeenOf` key (`broker::dedupe`).
pub enum SeenExpiry {}

impl Timed for SeenExpiry {
    const TABLE: Table = Table::SeenExpiry;
    type Value = ();
}

/// When a buffered or held event expires, naming its `BufferedAt` key.
pub enum BufferExpiry {}

impl Timed for BufferExpiry {
    const TABLE: Table = Table::BufferExpiry;
    type Value = ();
}

/// When an instance finished, naming it (`broker::retention`).
pub enum Finished {}

impl Timed for Finished {
    const TABLE: Table = Table::Finished;
    type Value = ();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{at, At, Entry};
    use chrono::DateTime;

    #[test]
    fn each_kind_is_in_its_table_keyed_by_time_then_what_it_names() {
        let t = DateTime::from_timestamp_millis(1_700_000_000_123).unwrap();
        assert_eq!(At::<Timer>::new(t, "i/1/t").key(), at(t, "i/1/t"));
        assert_eq!(<At<Timer> as Entry>::TABLE, Table::Timers);
        assert_eq!(<At<SeenExpiry> as Entry>::TABLE, Table::SeenExpiry);
        assert_eq!(<At<BufferExpiry> as Entry>::TABLE, Table::BufferExpiry);
        assert_eq!(<At<Finished> as Entry>::TABLE, Table::Finished);
        for table in [
            Timer::TABLE,
            SeenExpiry::TABLE,
            BufferExpiry::TABLE,
            Finished::TABLE,
        ] {
            assert!(table.time_keyed(), "{table:?}");
        }
    }
}
