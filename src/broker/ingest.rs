//! The ingress: what becomes of an input before any state is read. A consumed record (or an
//! HTTP event) becomes one work record per state partition that owns one of its keys (or its
//! `workflowinstanceid` instance), carrying its source position; a record that is not a usable
//! CloudEvent, or an event that matches no workflow at all, is dead-lettered (through a
//! partition's outbox, so it is copied once) and counted.

use super::index;
use super::registry::Registry;
use super::{Record, Stat};
use crate::cloudevent::DecodeError;
use crate::cluster::partition::{PartitionId, Partitions};
use crate::cluster::work::{Source, Work};
use crate::config::Config;
use crate::engine::Event;

/// The work an input turns into, and what to count about it now.
#[derive(Debug, Default)]
pub struct Ingested {
    pub work: Vec<(PartitionId, Work)>,
    pub stats: Vec<Stat>,
}

/// The partitions that own the event: its `workflowinstanceid` instance's, or its task
/// token's instance's, else the partition of its key for every matching workflow definition
/// and, for a start event, of its start key.
pub fn targets(reg: &Registry, parts: Partitions, event: &Event) -> Vec<PartitionId> {
    if let Some(p) = super::swf_events::target(parts, event) {
        return vec![p];
    }
    if let Some(id) = event.attribute("workflowinstanceid") {
        return parts.of_instance(&id).ok().into_iter().collect();
    }
    let addressed = super::addressed::targets(reg, parts, event);
    if addressed.is_some() && super::answers::is_answer(event) {
        return addressed.unwrap_or_default();
    }
    let mut out: Vec<PartitionId> = reg
        .matching(&event.source, &event.event_type)
        .iter()
        .filter_map(|m| {
            let ed = m.def.workflow.event(&m.event)?;
            let k = index::event_key(ed, event)?;
            Some(parts.of_key(&m.workflow, &k))
        })
        .collect();
    out.extend(addressed.into_iter().flatten());
    out.sort();
    out.dedup();
    out
}

/// The partition whose outbox dead-letters records of an input partition (one per input
/// partition, so their copies keep the input's order).
fn dead_letter_partition(parts: Partitions, topic: &str, partition: i32) -> PartitionId {
    parts.of_key("", &format!("{topic}/{partition}"))
}

/// An event from `source` as work records.
pub fn event(
    reg: &Registry,
    parts: Partitions,
    cfg: &Config,
    event: Event,
    source: Source,
    raw: Option<&Record>,
) -> Ingested {
    let mut out = Ingested::default();
    let ts = targets(reg, parts, &event);
    if ts.is_empty() {
        let label = match source {
            Source::Http => "http",
            _ => "kafka",
        };
        out.stats
            .push(Stat::Consumed(label, event.event_type.clone()));
        out.stats.push(Stat::Unmatched(event.event_type.clone()));
        if let (true, Some(r)) = (cfg.kafka.dlq_unmatched, raw) {
            let reason = match event.attribute("workflowinstanceid") {
                Some(id) => format!("no instance {id:?} (workflowinstanceid)"),
                None => "no workflow or instance matches this event".into(),
            };
            out.work.push(dead_letter(parts, r, "unmatched", reason));
        }
        return out;
    }
    let sole = ts.len() == 1;
    let work = |event, source| Work::Event {
        event,
        only: None,
        returned: false,
        sole,
        source,
    };
    if let Some((&last, rest)) = ts.split_last() {
        for &p in rest {
            out.work.push((p, work(event.clone(), source.clone())));
        }
        out.work.push((last, work(event, source)));
    }
    out
}

/// A consumed Kafka record as work records.
pub fn record(reg: &Registry, parts: Partitions, cfg: &Config, mut r: Record) -> Ingested {
    let source = Source::Input {
        topic: r.topic.clone(),
        partition: r.partition,
        offset: r.offset,
    };
    // the event moves into the work; the rest of the record is only read for a dead-letter
    // copy, which never looks at the event
    let taken = std::mem::replace(&mut r.event, Err(DecodeError::NotCloudEvent(String::new())));
    let e = match taken {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(topic = %r.topic, partition = r.partition, offset = r.offset,
                error = %e, "record is not a usable CloudEvent; sent to the dead-letter topic");
            return Ingested {
                work: vec![dead_letter(parts, &r, e.kind(), e.to_string())],
                stats: vec![],
            };
        }
    };
    event(reg, parts, cfg, e, source, Some(&r))
}

fn dead_letter(parts: Partitions, r: &Record, kind: &str, reason: String) -> (PartitionId, Work) {
    (
        dead_letter_partition(parts, &r.topic, r.partition),
        Work::DeadLetter {
            key: r.key.clone(),
            payload: r.payload.clone(),
            headers: r.headers.clone(),
            kind: kind.to_string(),
            reason,
            source: Source::Input {
                topic: r.topic.clone(),
                partition: r.partition,
                offset: r.offset,
            },
        },
    )
}
