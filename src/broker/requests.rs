//! What the core's commands other than consumed records become: API requests (an event, a
//! start, a cancel, an input for an instance) as ticketed partition inputs, the producer's
//! reports as outbox entries to forget, and work topic records as partition inputs. Each is
//! placed in the round's [`Sinks`]; `Core::take` only dispatches to these.

use super::core::{direct_id, Core, Sinks};
use super::processor::PartInput;
use super::router::Routed;
use super::tickets::Ticket;
use super::{Acked, AdminError, Applied, Delivery, Reply, StartRequest, Started, Stat};
use crate::cluster::partition::PartitionId;
use crate::cluster::work::{Source, Work};
use crate::engine::{Event, Input};

impl Sinks<'_> {
    /// An input for partition `p`'s next step.
    pub fn push(&mut self, p: PartitionId, input: PartInput) {
        self.inputs.entry(p).or_default().push(input);
    }

    /// Work a request waits on: its ticket is answered once partition `p` applied it.
    fn ticketed(&mut self, p: PartitionId, ticket: Ticket, work: Work) {
        let t = self.tickets.len();
        self.tickets.push(ticket);
        self.push(
            p,
            PartInput::Work {
                work,
                ticket: Some(t),
                offset: None,
            },
        );
    }
}

impl Core {
    /// An event sent over HTTP: routed as a consumed one would be, answered with where it
    /// went once every partition it reached has applied it.
    pub(super) fn take_event(&mut self, event: Event, reply: Reply<Routed>, sinks: &mut Sinks<'_>) {
        let ing = super::ingest::event(&self.reg, self.parts, &self.cfg, event, Source::Http, None);
        sinks.stats.extend(ing.stats);
        let ticket = sinks.tickets.len();
        sinks.tickets.push(Ticket::Event {
            reply,
            routed: Routed::default(),
            failed: None,
        });
        for (p, work) in ing.work {
            sinks.push(
                p,
                PartInput::Work {
                    work,
                    ticket: Some(ticket),
                    offset: None,
                },
            );
        }
    }

    /// A direct start, refused here already when no owner would take it (so a start for
    /// another broker's partition is not answered 201 for a workflow that owner refuses).
    pub(super) fn take_start(
        &mut self,
        start: StartRequest,
        reply: Reply<Started>,
        sinks: &mut Sinks<'_>,
    ) {
        let StartRequest {
            workflow,
            input,
            key,
            trace,
            at,
        } = start;
        let refused = match self.reg.current(&workflow) {
            Some(_) if at.is_none() && super::registry::Registry::is_builtin(&workflow) => {
                Some(AdminError::Refused(format!(
                    "{workflow:?} is built in: start Amazon SWF executions with \
                     StartWorkflowExecution (docs/swf.md)"
                )))
            }
            None => Some(AdminError::NotFound(format!(
                "no workflow {workflow:?} is deployed (GET /v1/workflows lists them)"
            ))),
            Some(wf) => super::window::direct_refusal(wf).map(AdminError::Refused),
        };
        if let Some(e) = refused {
            let _ = reply.send(Err(e));
            return;
        }
        let id = at.unwrap_or_else(|| direct_id(self.parts, &workflow, key.as_deref()));
        let work = Work::Start {
            parent: None,
            id: id.to_string(),
            workflow,
            input,
            source: Source::Http,
            trace,
        };
        sinks.ticketed(id.partition(), Ticket::Start(reply, None), work);
    }

    /// A cancel request for instance `id`.
    pub(super) fn take_cancel(&mut self, id: String, reply: Reply<()>, sinks: &mut Sinks<'_>) {
        match self.parts.of_instance(&id) {
            Ok(p) => {
                let work = Work::Cancel {
                    id,
                    source: Source::Http,
                };
                sinks.ticketed(p, Ticket::Cancel(reply, None), work);
            }
            Err(_) => drop(reply.send(Err(no_instance(&id)))),
        }
    }

    /// An input for instance `id`, answered with the instance after it.
    pub(super) fn take_apply(
        &mut self,
        id: String,
        input: Input,
        reply: Reply<Applied>,
        sinks: &mut Sinks<'_>,
    ) {
        match self.parts.of_instance(&id) {
            Ok(p) => {
                let work = Work::Apply {
                    id,
                    input: Box::new(input),
                    source: Source::Http,
                };
                sinks.ticketed(p, Ticket::Apply(reply, None), work);
            }
            Err(_) => drop(reply.send(Err(no_instance(&id)))),
        }
    }

    /// The producer's reports: each outbox entry is forgotten, and a delivery counted when it
    /// is the first report on that entry since this process handed it over
    /// (docs/broker.md "Shutdown and restarts").
    pub(super) fn take_acked(&mut self, acked: Vec<Acked>, sinks: &mut Sinks<'_>) {
        for a in acked {
            let first = self.inflight.acked(&a.key);
            let counted = match a.delivery {
                Delivery::Delivered => first.then_some((a.topic, a.label)),
                Delivery::DeadLettered => {
                    sinks.stats.push(Stat::DeadLettered("undeliverable"));
                    None
                }
                Delivery::Dropped => {
                    sinks.stats.push(Stat::OutputDropped);
                    None
                }
            };
            sinks.push(a.key.partition, PartInput::Acked(a.key.seq, counted));
        }
    }

    /// Records of a work topic partition this broker owns, from its current read.
    pub(super) fn take_work(
        &mut self,
        partition: PartitionId,
        epoch: u64,
        records: Vec<(i64, Work)>,
        sinks: &mut Sinks<'_>,
    ) {
        if self.reading.get(&partition) != Some(&epoch) {
            // fetched by a read that ended (the partition was let go, maybe taken again
            // since): the current read, if any, delivers them again
            tracing::debug!(partition = %partition, records = records.len(),
                "work records of an earlier read dropped");
            return;
        }
        if let Some((last, _)) = records.last() {
            self.direct.read(partition, last + 1);
        }
        for (offset, work) in records {
            sinks.push(
                partition,
                PartInput::Work {
                    work,
                    ticket: None,
                    offset: Some(offset),
                },
            );
        }
    }
}

fn no_instance(id: &str) -> AdminError {
    AdminError::NotFound(format!("no instance {id:?}"))
}
