//! Rounds in flight (docs/broker.md "Pipelined rounds"). A round's batches are sent to the
//! changelog and the next round is built on top of them (it reads their writes through
//! `store::Pending`) while Kafka acknowledges. Rounds land in the order they were built,
//! each once every append of it is acknowledged: checked against newer fences, written to
//! the store, and only then are its effects let out, its requests answered and its input
//! offsets committed (`broker::landing`). Nothing leaves before the changelog has it, as
//! without pipelining. This file holds what a round in flight is; landing it is `landing`'s.

use super::batch::Effects;
use super::tickets::Ticket;
use super::Stat;
use crate::cluster::partition::PartitionId;
use crate::cluster::work::Work;
use crate::cluster::LogError;
use crate::store::Write;
use chrono::{DateTime, Utc};
use futures::future::MaybeDone;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// What one append acknowledged: the offset each partition's record got.
pub(super) type Appended = Result<Vec<(PartitionId, i64)>, LogError>;

/// One append of a round: the batches of the partitions it changed, and what they let out.
pub(super) struct Step {
    /// The step's number: its pending writes carry it.
    pub seq: u64,
    /// Each partition's writes, shared with its pending writes while the append is on its
    /// way.
    pub changed: Vec<(PartitionId, Arc<Vec<Write>>)>,
    pub effects: Vec<(PartitionId, Effects)>,
    /// Input records applied directly, per partition: sent to the partition's new owner if
    /// the batch turns out void.
    pub direct: BTreeMap<PartitionId, Vec<Work>>,
    /// The requests (tickets) each partition's batch answers.
    pub asked: BTreeMap<PartitionId, Vec<usize>>,
    /// Each partition's fence when its batch was built: a batch built under a fence that is
    /// no longer the partition's (lost, or let go and taken again since) is void.
    pub fences: BTreeMap<PartitionId, i64>,
    /// When the append was sent (monotonic, and the broker's clock).
    pub sent: (std::time::Instant, DateTime<Utc>),
    /// Only Kafka acknowledgements: the store need not wait for the disk.
    pub lazy: bool,
}

/// What a round answers once it has landed.
pub(super) struct Finish {
    pub tickets: Vec<Ticket>,
    pub offsets: BTreeMap<(String, i32), i64>,
    pub stats: Vec<Stat>,
    pub now: DateTime<Utc>,
}

/// A round whose appends are on their way.
pub(super) struct Flight {
    pub steps: Vec<Step>,
    pub finish: Finish,
    /// Every step's append, in order.
    pub landed: Landing,
}

/// The appends of a round's steps, in order: it resolves to what each acknowledged once all
/// have been, and tells, without waiting, the offsets those acknowledged so far got.
pub(super) struct Landing(Vec<MaybeDone<crate::cluster::Appending>>);

impl Landing {
    pub fn new(appends: Vec<crate::cluster::Appending>) -> Self {
        Landing(appends.into_iter().map(MaybeDone::Future).collect())
    }

    /// The changelog offsets of `p` that this round's appends acknowledged so far. Polls the
    /// appends not acknowledged yet, without waiting (a poll with a waker that wakes nobody:
    /// the core awaits only the oldest round's landing, and polls it again with its own waker
    /// before it waits, `Core::run`). A landing already taken has none left.
    pub fn acked_so_far(&mut self, p: PartitionId) -> impl Iterator<Item = i64> + '_ {
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        for a in self.0.iter_mut() {
            if matches!(a, MaybeDone::Future(_)) {
                let _ = Pin::new(a).poll(&mut cx);
            }
        }
        self.0.iter_mut().flat_map(move |a| {
            let got = Pin::new(a).output_mut().and_then(|r| r.as_ref().ok());
            got.into_iter()
                .flatten()
                .filter(move |(q, _)| *q == p)
                .map(|(_, o)| *o)
        })
    }
}

impl Future for Landing {
    type Output = Vec<Appended>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Vec<Appended>> {
        let mut all = true;
        for a in self.0.iter_mut() {
            all &= Pin::new(a).poll(cx).is_ready();
        }
        if !all {
            return Poll::Pending;
        }
        let taken = self.0.iter_mut().map(|a| Pin::new(a).take_output());
        Poll::Ready(taken.map(|a| a.expect("a landing is taken once")).collect())
    }
}

impl Flight {
    /// True when a step of this round applied input records on `p` directly.
    pub fn holds_direct(&self, p: PartitionId) -> bool {
        self.steps.iter().any(|s| s.direct.contains_key(&p))
    }
}
