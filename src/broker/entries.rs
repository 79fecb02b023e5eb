//! The typed entries of the tables keyed by one id: instances, function calls in flight,
//! timer ids and schedules. Each names its table and its value's type ([`Entry`]); the keys
//! are the ids themselves, as stores have always held them.

use super::records::{Call, InstanceRecord, ScheduleState};
use crate::store::{Entry, Table};
use std::borrow::Cow;

/// An entry kind keyed by one id, as it is: `by_id!(doc, Name, Table, Value)`.
macro_rules! by_id {
    ($(#[$doc:meta])* $name:ident, $table:ident, $value:ty) => {
        $(#[$doc])*
        pub struct $name<'a>(pub &'a str);

        impl Entry for $name<'_> {
            const TABLE: Table = Table::$table;
            type Value = $value;

            fn key(&self) -> Cow<'_, str> {
                Cow::Borrowed(self.0)
            }
        }
    };
}

by_id!(
    /// An instance, by its id (a root's or a child's).
    InstanceOf, Instances, InstanceRecord
);
by_id!(
    /// A function call in flight, by its idempotency key.
    CallOf, Calls, Call
);
by_id!(
    /// A timer, by its id: the value is its key in `Timers` (which sorts by due time).
    TimerIdOf, TimerIds, String
);
by_id!(
    /// A workflow's schedule, by the workflow id.
    ScheduleOf, Schedules, ScheduleState
);

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
