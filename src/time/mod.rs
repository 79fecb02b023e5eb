//! Time values of the language: ISO 8601 durations, repeating intervals (`R5/PT1M`), time
//! intervals (start/end, start/duration, duration/end, duration), cron expressions and IANA
//! time zones. Thin glue over `iso8601-duration`, `croner`, `chrono` and `chrono-tz`; and
//! timestamps written fast in chrono's serde form ([`stamp`]).

mod cron;
mod duration;
mod interval;
pub mod stamp;
mod written;

pub use cron::{CronError, CronSchedule};
pub use duration::{Duration, DurationError};
pub use interval::{IntervalError, RepeatingInterval, TimeInterval};
pub use written::{FromText, Written};

/// Parses an IANA time zone name such as `Europe/Berlin`.
pub fn parse_timezone(name: &str) -> Result<chrono_tz::Tz, String> {
    name.parse::<chrono_tz::Tz>().map_err(|_| {
        format!("{name:?} is not an IANA time zone name; use a name such as \"Europe/Berlin\" or \"UTC\"")
    })
}

/// `t` without its sub-millisecond part: the precision of the AWS wire form (epoch seconds
/// with three decimals) that durable executions store their operations' timestamps in, so
/// that a record read back equals the record written (`broker::hot` relies on it).
pub fn whole_millis(t: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}
