//! Effects stored inside a batch's transaction: the outbox, durable timers, buffered events,
//! lifecycle events (built by `broker::lifecycle`), the status gauge, and where a function call
//! goes.

use super::batch::{Batch, Result};
use super::compound::{ActiveOf, BufferedAt};
use super::counters::Counter;
use super::entries::TimerIdOf;
use super::lifecycle::{self, Lifecycle};
use super::produced::Produced;
use super::records::{Buffered, InstanceRecord, OutRecord, TimerEntry};
use super::timed::{BufferExpiry, Timer};
use super::{OutboxKey, Stat};
use crate::cluster::work::Work;
use crate::engine::{Event, Status};
use crate::store::{At, Table};
use chrono::{DateTime, Utc};
use serde_json::Value;

impl Batch<'_, '_> {
    /// Keeps the instances-by-status gauge in the store.
    pub(super) fn count_status(&self, old: Option<Status>, new: Status) -> Result<()> {
        if let Some(o) = old {
            Counter::Status(o).bump(self.tx, -1)?;
        }
        Counter::Status(new).bump(self.tx, 1)?;
        Ok(())
    }

    /// The URL of a function: the config's `[functions]` entry for the function name, else
    /// for its resource, else the resource itself when it is a plain http(s) URL. A resource
    /// with a `#fragment` names an operation in an API document (OpenAPI style, as in the
    /// spec's examples); it needs a `[functions]` entry.
    pub(super) fn resolve(&self, function: &str, resource: &str) -> Option<String> {
        if let Some(url) = self
            .cfg
            .functions
            .get(function)
            .or_else(|| self.cfg.functions.get(resource))
        {
            return Some(url.clone());
        }
        let http = resource.starts_with("http://") || resource.starts_with("https://");
        (http && !resource.contains('#')).then(|| resource.to_string())
    }

    /// Keeps an event for an instance that does not wait for it yet.
    pub fn buffer(&mut self, instance: &str, event: Event, ttl: chrono::Duration) -> Result<()> {
        let seq = Counter::BufferSeq.bump(self.tx, 1)?;
        let b = Buffered {
            event,
            expires: self.now + ttl,
        };
        self.put_buffered(&BufferedAt::for_instance(instance, seq as u64), &b)?;
        self.fx.stats.push(Stat::Buffered);
        Ok(())
    }

    /// Holds an event for a key no instance has yet ([`BufferedAt::held`]);
    /// [`Batch::adopt_held`] hands it over when an instance takes the key.
    pub fn hold(&mut self, active: &ActiveOf, event: Event, ttl: chrono::Duration) -> Result<()> {
        let seq = Counter::BufferSeq.bump(self.tx, 1)?;
        let b = Buffered {
            event,
            expires: self.now + ttl,
        };
        self.put_buffered(&BufferedAt::held(active, seq as u64), &b)?;
        self.fx.stats.push(Stat::Held);
        Ok(())
    }

    /// Moves events held for `active` to `instance`'s buffer, oldest first.
    pub(super) fn adopt_held(&mut self, active: &ActiveOf, instance: &str) -> Result<()> {
        if !self.may_have_buffered()? {
            return Ok(());
        }
        let held = self
            .tx
            .scan::<BufferedAt>(&BufferedAt::held_prefix(active))?;
        for (k, b) in held {
            self.delete_buffered(&BufferedAt::found(k), &b)?;
            if self.is_here(instance) {
                let seq = Counter::BufferSeq.bump(self.tx, 1)?;
                self.put_buffered(&BufferedAt::for_instance(instance, seq as u64), &b)?;
            } else if let Ok(to) = self.parts.of_instance(instance) {
                // the instance lives on another partition: it applies or buffers the event
                self.send(to, |source| Work::Deliver {
                    instance: instance.to_string(),
                    event: b.event,
                    unpinned: false,
                    source,
                })?;
            }
        }
        Ok(())
    }

    /// Stores a buffered event with its expiry index entry.
    fn put_buffered(&mut self, k: &BufferedAt, b: &Buffered) -> Result<()> {
        self.tx.write(k, b)?;
        Counter::Buffered.bump(self.tx, 1)?;
        self.added.buffered += 1;
        self.tx
            .write(&At::<BufferExpiry>::new(b.expires, k.as_str()), &())
    }

    /// Whether the partition may have buffered or held events: its count of them
    /// (`put_buffered` and `delete_buffered` keep it exact) is not zero. A zero count
    /// spares the scans of `Buffer` that most inputs would otherwise make and find nothing.
    pub(super) fn may_have_buffered(&self) -> Result<bool> {
        Ok(Counter::Buffered.value(self.tx)? != 0)
    }

    /// Removes a buffered event and its expiry index entry. `b` was just read under `k`, so
    /// the entry is there: removed without looking again.
    pub(super) fn delete_buffered(&mut self, k: &BufferedAt, b: &Buffered) -> Result<()> {
        self.tx.unset(k);
        Counter::Buffered.bump(self.tx, -1)?;
        // (an entry kept beside the event: removed unread, that table keeps no bloom filters)
        self.tx
            .unset(&At::<BufferExpiry>::new(b.expires, k.as_str()));
        Ok(())
    }

    pub fn outbox(&mut self, rec: OutRecord) -> Result<()> {
        let seq = self.next_outbox_seq()?;
        self.put_outbox(seq, rec)
    }

    /// Puts CloudEvent `event` into the outbox as the record Kafka gets
    /// (`broker::produced`); one the CloudEvents SDK refuses goes to the dead-letter topic
    /// instead, with the reason (`flowbroker-dlq-kind: unencodable`).
    pub(super) fn outbox_event(&mut self, topic: &str, key: &str, event: &Event) -> Result<()> {
        let mode = self.cfg.kafka.output_mode;
        let rec = Produced::event(mode, topic, key, event).unwrap_or_else(|why| {
            tracing::error!(topic, r#type = %event.event_type, error = %why,
                "an event that cannot be encoded as a CloudEvent; sent to the dead-letter topic instead");
            self.fx.stats.push(Stat::DeadLettered("undeliverable"));
            let dlq = &self.cfg.kafka.dlq_topic;
            Produced::unencodable(dlq, topic, &event.event_type, &why)
        });
        self.outbox(OutRecord::Kafka(rec))
    }

    /// The next outbox sequence number of this partition (never reused).
    pub(super) fn next_outbox_seq(&mut self) -> Result<u64> {
        Ok(Counter::OutboxSeq.bump(self.tx, 1)? as u64)
    }

    pub(super) fn put_outbox(&mut self, seq: u64, rec: OutRecord) -> Result<()> {
        self.tx
            .put_bytes(Table::Outbox, &OutboxKey::stored(seq), rec.encode())?;
        self.fx.outbox.push((seq, rec));
        Ok(())
    }

    /// Arms (or re-arms) a durable timer.
    pub fn arm(&mut self, id: &str, due: DateTime<Utc>, entry: &TimerEntry) -> Result<()> {
        self.disarm(id)?;
        let timer = At::<Timer>::new(due, id);
        self.tx.write(&timer, entry)?;
        self.tx.write(&TimerIdOf(id), &timer.into_key())?;
        Ok(())
    }

    pub fn disarm(&mut self, id: &str) -> Result<()> {
        if let Some(k) = self.tx.read(&TimerIdOf(id))? {
            // the entry its id points to: removed unread (`Timers` keeps no bloom filters)
            self.tx.unset(&At::<Timer>::stored(k));
            self.tx.unset(&TimerIdOf(id)); // just read
        }
        Ok(())
    }

    /// Emits the `started` lifecycle event of an instance, with the input it started with.
    pub(super) fn started(&mut self, rec: &InstanceRecord, input: Value) -> Result<()> {
        self.lifecycle(rec, Lifecycle::Started, Some(("input", input)))
    }

    /// Emits a lifecycle event of `rec`, stamped with its trace, into the outbox.
    pub(super) fn lifecycle(
        &mut self,
        rec: &InstanceRecord,
        what: Lifecycle,
        extra: Option<(&'static str, Value)>,
    ) -> Result<()> {
        let mut event = lifecycle::event(&self.cfg.event_source, self.now, rec, what, extra);
        if let Some(t) = &rec.trace {
            t.stamp(&mut event);
        }
        let cfg = self.cfg;
        let topic = cfg.kafka.lifecycle_topic.as_str();
        if self.spans {
            self.sent_span(rec, &event, topic, true);
        }
        self.outbox_event(topic, &rec.instance.id, &event)
    }
}
