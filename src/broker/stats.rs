//! What a round counts: each [`Stat`] is a metric to add once the batch that made it true has
//! committed, and [`count`] adds them to the broker's [`Metrics`].

use super::registry::Registry;
use crate::metrics::Metrics;

/// A metric to count once the batch that made it true has committed.
#[derive(Debug, Clone, PartialEq)]
pub enum Stat {
    Consumed(&'static str, String),
    DeadLettered(&'static str),
    Unmatched(String),
    Duplicate,
    /// An event whose source and id were seen within the dedupe window.
    DuplicateEvent(String),
    Buffered,
    /// Held for a key no instance has yet.
    Held,
    BufferDelivered,
    BufferExpired,
    BufferDropped,
    JoinExpired,
    Transitions(u64),
    /// A waiting instance found through the index did not take the event.
    Refused,
    /// An outbox record Kafka refused for good, and its dead-letter copy too.
    OutputDropped,
    StartRejected(String),
    /// A cron tick started an instance `lag` seconds after it was due.
    Tick {
        workflow: String,
        lag: f64,
        catch_up: bool,
    },
    TicksSkipped(String, u64),
    /// An input record routed to a state partition: `direct` (owned here, applied without the
    /// work topic) or `work_topic`.
    Routed(&'static str),
}

/// Adds `stats` to the metrics (consumed event types labelled through `reg`, so untrusted
/// input cannot grow the label set).
pub fn count(m: &Metrics, reg: &Registry, stats: Vec<Stat>) {
    for s in stats {
        match s {
            Stat::Consumed(src, ty) => {
                let ty = reg.type_label(ty);
                m.consumed.with_label_values(&[src, &ty]).inc()
            }
            Stat::DeadLettered(reason) => m.dead_lettered.with_label_values(&[reason]).inc(),
            Stat::Unmatched(ty) => {
                let ty = reg.type_label(ty);
                m.unmatched.with_label_values(&[&ty]).inc()
            }
            Stat::Duplicate => m.duplicates.inc(),
            Stat::DuplicateEvent(ty) => {
                let ty = reg.type_label(ty);
                m.duplicate_events.with_label_values(&[&ty]).inc()
            }
            Stat::Buffered => m.buffered.with_label_values(&["buffered"]).inc(),
            Stat::Held => m.buffered.with_label_values(&["held"]).inc(),
            Stat::BufferDelivered => m.buffered.with_label_values(&["delivered"]).inc(),
            Stat::BufferExpired => m.buffered.with_label_values(&["expired"]).inc(),
            Stat::BufferDropped => m.buffered.with_label_values(&["dropped"]).inc(),
            Stat::JoinExpired => m.joins_expired.inc(),
            Stat::Transitions(n) => m.transitions.inc_by(n),
            Stat::Refused => m.refused.inc(),
            Stat::OutputDropped => m.output_dropped.inc(),
            Stat::StartRejected(wf) => m.starts_rejected.with_label_values(&[&wf]).inc(),
            Stat::Tick {
                workflow,
                lag,
                catch_up,
            } => {
                m.schedule_lag.with_label_values(&[&workflow]).observe(lag);
                let outcome = if catch_up { "catch_up" } else { "fired" };
                m.schedule_ticks
                    .with_label_values(&[&workflow, outcome])
                    .inc();
            }
            Stat::TicksSkipped(workflow, n) => m
                .schedule_ticks
                .with_label_values(&[&workflow, "skipped"])
                .inc_by(n),
            Stat::Routed(path) => m.routed.with_label_values(&[path]).inc(),
        }
    }
}
