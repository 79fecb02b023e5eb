//! Applying one work record on its state partition (docs/scale.md): a copy of a record whose
//! source position was applied already is dropped; then an event is correlated, an instance
//! started or cancelled, a delivery or index changes from another partition taken, or an input
//! record dead-lettered.

use super::batch::{Batch, Result};
use super::index::Entry;
use super::produced::Produced;
use super::records::OutRecord;
use super::router::Routed;
use super::{AdminError, Stat};
use crate::cluster::work::{IndexEntry, Source, Work};
use crate::engine::{EngineError, Event, Input};

/// What applying a work record came to, for whoever waits on it (an HTTP request in
/// single-node loopback, a test).
#[derive(Debug)]
pub enum Outcome {
    Routed(Routed),
    Started(std::result::Result<String, AdminError>),
    Cancelled(std::result::Result<(), AdminError>),
    Applied(std::result::Result<super::Applied, AdminError>),
    /// A copy of a record already applied (same source position).
    Duplicate,
    Done,
}

impl Batch<'_, '_> {
    /// True when a record from this source position was applied already; remembers the
    /// position otherwise. Positions of one source only grow (docs/scale.md).
    pub fn already_applied(&mut self, source: &Source) -> Result<bool> {
        let Some(pos) = source.position() else {
            return Ok(false);
        };
        if let Some(done) = self.tx.read(&pos.slot)? {
            if pos.at <= done {
                tracing::debug!(partition = %self.p, slot = %pos.slot, at = ?pos.at, applied = ?done,
                    "copy of an applied record dropped");
                self.fx.stats.push(Stat::Duplicate);
                return Ok(true);
            }
        }
        self.tx.write(&pos.slot, &pos.at)?;
        Ok(false)
    }

    /// Applies one work record of this partition.
    pub fn apply_work(&mut self, work: Work) -> Result<Outcome> {
        if self.already_applied(work.source())? {
            return Ok(Outcome::Duplicate);
        }
        Ok(match work {
            Work::Event {
                event,
                only,
                sole,
                returned,
                source,
            } => {
                Outcome::Routed(self.correlate(event, only.as_deref(), sole, returned, &source)?)
            }
            Work::Start {
                id,
                workflow,
                input,
                trace,
                parent,
                ..
            } => {
                let started =
                    self.start_direct(&id, &workflow, input, trace.and_then(|t| t.upstream()))?;
                if let (Err(e), Some(parent)) = (&started, parent) {
                    // a child of another partition's instance: its parent learns it
                    let error = crate::engine::ErrorInfo::new("ChildStartRefused", e.to_string());
                    self.send_input(
                        &parent,
                        Input::ChildFailed {
                            id: id.clone(),
                            error,
                        },
                    )?;
                }
                Outcome::Started(started)
            }
            Work::SwfToRun {
                key,
                run_id,
                call,
                from,
                failed,
                ..
            } => {
                self.call_run(&key, run_id.as_deref(), *call, &from, *failed)?;
                Outcome::Done
            }
            Work::SwfStart {
                event,
                attrs,
                source,
            } => {
                self.swf_start_here(&event, attrs, &source)?;
                Outcome::Done
            }
            Work::Cancel { id, .. } => {
                let result = match self.apply_now(&id, Input::Cancel)? {
                    Ok(()) => Ok(()),
                    Err(EngineError::NotStarted(_)) => {
                        Err(AdminError::NotFound(format!("no instance {id:?}")))
                    }
                    Err(e) => Err(AdminError::Refused(e.to_string())),
                };
                self.drain()?;
                Outcome::Cancelled(result)
            }
            Work::Apply { id, input, .. } => {
                let result = match self.apply_now(&id, *input)? {
                    Ok(()) => {
                        self.drain()?;
                        match self.load(&id)? {
                            Some(rec) => Ok(Ok(Box::new(rec))),
                            None => Err(AdminError::NotFound(format!("no instance {id:?}"))),
                        }
                    }
                    Err(EngineError::NotStarted(_)) => {
                        Err(AdminError::NotFound(format!("no instance {id:?}")))
                    }
                    Err(e) => Ok(Err(e)),
                };
                Outcome::Applied(result)
            }
            Work::Deliver {
                instance,
                event,
                unpinned,
                source,
            } => {
                self.take_delivery(&instance, event, unpinned, &source)?;
                Outcome::Done
            }
            Work::Index { changes, .. } => {
                for c in changes {
                    let entry = match c.entry {
                        IndexEntry::Waits => Entry::from_waits_key(&c.key),
                        IndexEntry::Active => {
                            let mut parts = c.key.split(crate::store::SEP);
                            match (parts.next(), parts.next(), parts.next()) {
                                (Some(w), Some(e), Some(k)) => Some(Entry {
                                    workflow: w.into(),
                                    event: e.into(),
                                    key: k.into(),
                                    instance: c.instance.clone(),
                                }),
                                _ => None,
                            }
                        }
                    };
                    match entry {
                        Some(e) => self.index_here(c.entry, &e, c.present)?,
                        None => tracing::warn!(key = %c.key, "unreadable index change ignored"),
                    }
                }
                self.drain()?;
                Outcome::Done
            }
            Work::DeadLetter {
                key,
                payload,
                headers,
                kind,
                reason,
                source,
            } => {
                self.dead_letter(key, payload, headers, &kind, &reason, &source)?;
                Outcome::Done
            }
        })
    }

    /// An event whose key (or `workflowinstanceid`) this partition owns.
    fn correlate(
        &mut self,
        event: Event,
        only: Option<&str>,
        sole: bool,
        returned: bool,
        source: &Source,
    ) -> Result<Routed> {
        match source {
            Source::Input { .. } => self
                .fx
                .stats
                .push(Stat::Consumed("kafka", event.event_type.clone())),
            Source::Http => self
                .fx
                .stats
                .push(Stat::Consumed("http", event.event_type.clone())),
            Source::Partition { .. } => {} // handed back: counted when it came in
        }
        if only.is_none() && self.seen_before(&event)? {
            return Ok(Routed::duplicate());
        }
        let copy = (sole && self.cfg.kafka.dlq_unmatched && matches!(source, Source::Input { .. }))
            .then(|| serde_json::to_vec(&event).unwrap_or_default());
        let ty = event.event_type.clone();
        let r = self.route(event, only, returned)?;
        if sole && !r.matched() {
            self.fx.stats.push(Stat::Unmatched(ty));
            if let Some(payload) = copy {
                // the key's partition found nothing for it (an unknown `workflowinstanceid`, a
                // start outside its interval): a structured copy is dead-lettered
                let reason = r
                    .rejected
                    .clone()
                    .unwrap_or_else(|| "no workflow or instance matches this event".into());
                self.dead_letter(None, Some(payload), vec![], "unmatched", &reason, source)?;
            }
        }
        Ok(r)
    }

    /// A direct start with the id the API chose; starting the same id again answers the same.
    fn start_direct(
        &mut self,
        id: &str,
        workflow: &str,
        input: serde_json::Value,
        upstream: Option<crate::trace::Upstream>,
    ) -> Result<std::result::Result<String, AdminError>> {
        let Some(wf) = self.reg.current(workflow).cloned() else {
            return Ok(Err(AdminError::NotFound(format!(
                "no workflow {workflow:?} is deployed (GET /v1/workflows lists them)"
            ))));
        };
        if let Some(why) = self.direct_refused(&wf) {
            return Ok(Err(AdminError::Refused(why)));
        }
        let r = self.create(id, &wf, input, vec![], None, upstream)?;
        self.drain()?;
        Ok(match r {
            Ok(_) => Ok(id.to_string()),
            Err(e @ EngineError::Swf(crate::engine::swf::SwfError::AlreadyStarted(_))) => {
                Err(AdminError::Refused(e.to_string()))
            }
            Err(e) => Err(AdminError::Invalid(e.to_string())),
        })
    }

    /// An event another partition's index sent to one of this partition's instances. It is
    /// applied; or, for a match as an instance with nothing pinned that no longer takes it,
    /// handed back to the key's partition to route without it; or buffered for the instance.
    fn take_delivery(
        &mut self,
        instance: &str,
        event: Event,
        unpinned: bool,
        source: &Source,
    ) -> Result<()> {
        if unpinned {
            let input = Input::Event {
                event: event.clone(),
            };
            if self.apply_now(instance, input)?.is_ok() {
                return self.drain();
            }
            let (Some(rec), Source::Partition { partition, .. }) = (self.load(instance)?, source)
            else {
                return Ok(());
            };
            let only = Some(rec.instance.workflow_id.clone());
            self.fx.stats.push(Stat::Refused);
            return self.send(*partition, |source| Work::Event {
                event,
                only,
                sole: false,
                returned: true,
                source,
            });
        }
        let mut r = Routed::default();
        self.route_to_instance(instance, event, &mut r)?;
        if let Some(why) = r.rejected {
            tracing::debug!(instance, why = %why, "delivered event not taken");
            self.fx.stats.push(Stat::BufferDropped);
        }
        self.drain()
    }

    /// Copies an input record to the dead-letter topic with the reason and its origin.
    pub(super) fn dead_letter(
        &mut self,
        key: Option<Vec<u8>>,
        payload: Option<Vec<u8>>,
        mut headers: Vec<(String, Vec<u8>)>,
        kind: &str,
        reason: &str,
        source: &Source,
    ) -> Result<()> {
        headers.push(("flowbroker-dlq-reason".into(), reason.as_bytes().to_vec()));
        headers.push(("flowbroker-dlq-kind".into(), kind.as_bytes().to_vec()));
        if let Source::Input {
            topic,
            partition,
            offset,
        } = source
        {
            headers.push(("flowbroker-dlq-topic".into(), topic.clone().into_bytes()));
            headers.push((
                "flowbroker-dlq-partition".into(),
                partition.to_string().into_bytes(),
            ));
            headers.push((
                "flowbroker-dlq-offset".into(),
                offset.to_string().into_bytes(),
            ));
        }
        let label: &'static str = match kind {
            "not_cloudevent" => "not_cloudevent",
            "bad_data" => "bad_data",
            "bad_attribute" => "bad_attribute",
            "too_large" => "too_large",
            _ => "unmatched",
        };
        self.fx.stats.push(Stat::DeadLettered(label));
        let topic = &self.cfg.kafka.dlq_topic;
        let rec = Produced::raw(topic, key.as_deref(), payload.as_deref(), &headers);
        self.outbox(OutRecord::Kafka(rec))
    }
}
