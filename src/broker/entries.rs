//! The typed entries of the tables keyed by one id: instances, function calls in flight,
//! timer ids and schedules. Each names its table and its value's type ([`Entry`]); the keys
//! are the ids themselves, as stores have always held them.

use super::records::{Call, InstanceRecord, ScheduleState};
use crate::store::{Entry, Table};
use std::borrow::Cow;

/// An instance, by its id (a root's or a child's).
pub struct InstanceOf<'a>(pub &'a str);

impl Entry for InstanceOf<'_> {
    const TABLE: Table = Table::Instances;
    type Value = InstanceRecord;

    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0)
    }
}

/// A function call in flight, by its idempotency key.
pub struct CallOf<'a>(pub &'a str);

impl Entry for CallOf<'_> {
    const TABLE: Table = Table::Calls;
    type Value = Call;

    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0)
    }
}

/// A timer, by its id: the value is its key in `Timers` (which sorts by due time).
pub struct TimerIdOf<'a>(pub &'a str);

impl Entry for TimerIdOf<'_> {
    const TABLE: Table = Table::TimerIds;
    type Value = String;

    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0)
    }
}

/// A workflow's schedule, by the workflow id.
pub struct ScheduleOf<'a>(pub &'a str);

impl Entry for ScheduleOf<'_> {
    const TABLE: Table = Table::Schedules;
    type Value = ScheduleState;

    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_ids_in_the_tables_stores_hold() {
        let id = "p3-4f0c2b9e-4b8e-5c1f-9d3a-0e6f7a8b9c0d/2/1";
        assert_eq!(InstanceOf(id).key(), id);
        assert_eq!(<InstanceOf as Entry>::TABLE, Table::Instances);
        assert_eq!(CallOf("k/1").key(), "k/1");
        assert_eq!(<CallOf as Entry>::TABLE, Table::Calls);
        assert_eq!(TimerIdOf("t").key(), "t");
        assert_eq!(<TimerIdOf as Entry>::TABLE, Table::TimerIds);
        assert_eq!(ScheduleOf("wf").key(), "wf");
        assert_eq!(<ScheduleOf as Entry>::TABLE, Table::Schedules);
    }
}
