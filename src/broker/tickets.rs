//! Requests waiting on a round (HTTP events, starts, cancels, durable checkpoints): what each
//! partition answered for them, and the answer once the round has landed.

use super::apply::Outcome;
use super::router::Routed;
use super::{AdminError, Reply};
use crate::cluster::partition::PartitionId;
use crate::cluster::work::Work;

/// A request waiting for the partitions its work went to.
pub(super) enum Ticket {
    Event {
        reply: Reply<Routed>,
        routed: Routed,
        /// Set when the partition applying it was lost mid-round.
        failed: Option<AdminError>,
    },
    Start(
        Reply<super::Started>,
        Option<Result<super::Started, AdminError>>,
    ),
    Cancel(Reply<()>, Option<Result<(), AdminError>>),
    Apply(
        Reply<super::Applied>,
        Option<Result<super::Applied, AdminError>>,
    ),
}

/// Records what a partition answered for a request.
pub(super) fn settle(t: &mut Ticket, outcome: Outcome) {
    match (t, outcome) {
        (Ticket::Event { routed, .. }, Outcome::Routed(r)) => {
            routed.delivered.extend(r.delivered);
            routed.buffered.extend(r.buffered);
            routed.started.extend(r.started);
            routed.joined.extend(r.joined);
            routed.held.extend(r.held);
            routed.forwarded.extend(r.forwarded);
            if r.rejected.is_some() {
                routed.rejected = r.rejected;
            }
        }
        (Ticket::Start(_, slot), Outcome::Started(r)) => {
            *slot = Some(r.map(|id| super::Started { id, position: None }))
        }
        (Ticket::Cancel(_, slot), Outcome::Cancelled(r)) => *slot = Some(r),
        (Ticket::Apply(_, slot), Outcome::Applied(r)) => *slot = Some(r),
        _ => {}
    }
}

/// Fails a request whose partition turned out to be owned by another broker (a newer fence):
/// its work was not applied here, the client retries.
pub(super) fn moved(t: &mut Ticket, p: PartitionId) {
    let why = || {
        AdminError::Moved(format!(
            "state partition {p} moved to another broker while this request was applied; retry"
        ))
    };
    match t {
        Ticket::Event { failed, .. } => *failed = Some(why()),
        Ticket::Start(_, slot) => *slot = Some(Err(why())),
        Ticket::Cancel(_, slot) => *slot = Some(Err(why())),
        Ticket::Apply(_, slot) => *slot = Some(Err(why())),
    }
}

/// Answers a request whose work went to a partition another broker owns: it is in Kafka
/// (forwarded, and acknowledged, before the reply leaves) and that broker applies it.
pub(super) fn forwarded(t: &mut Ticket, p: PartitionId, work: &Work) {
    match (t, work) {
        (Ticket::Event { routed, .. }, _) => routed.forwarded.push(p.0),
        (Ticket::Start(_, slot), Work::Start { id, .. }) => {
            *slot = Some(Ok(super::Started {
                id: id.clone(),
                position: None,
            }))
        }
        (Ticket::Cancel(_, slot), _) => *slot = Some(Ok(())),
        _ => {}
    }
}

/// Sends every request its answer (the round that applied its work has landed).
pub(super) fn answer(tickets: Vec<Ticket>) {
    for t in tickets {
        match t {
            Ticket::Event {
                reply,
                routed,
                failed,
            } => {
                let _ = reply.send(failed.map_or(Ok(routed), Err));
            }
            Ticket::Start(reply, r) => {
                let _ = reply.send(r.unwrap_or_else(|| {
                    Err(AdminError::Internal("the start was not applied".into()))
                }));
            }
            Ticket::Cancel(reply, r) => {
                let _ = reply.send(r.unwrap_or_else(|| {
                    Err(AdminError::Internal("the cancel was not applied".into()))
                }));
            }
            Ticket::Apply(reply, r) => {
                let _ = reply.send(r.unwrap_or_else(|| {
                    Err(AdminError::Internal("the input was not applied".into()))
                }));
            }
        }
    }
}
