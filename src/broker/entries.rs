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
