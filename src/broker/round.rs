//! Building a round: the inputs of partitions owned elsewhere leave through the work topic,
//! each owned partition's inputs go to its processor (`broker::processor`) in steps (a step's
//! messages between partitions are applied in the next one; a step's processors run at once,
//! `broker::pool`), and each step's batches are sent to the changelog at once, also of
//! partitions with appends still on their way. The round then waits in flight
//! (`broker::flight`) until Kafka has its appends.

use super::core::{direct_work, input_of, Core, SWEEP_EVERY_SECS};
use super::error::CoreError;
use super::flight::{Finish, Step};
use super::hot::Hot;
use super::processor::{Applied, PartInput, Processor};
use super::records::InstanceRecord;
use super::tickets::{self, Ticket};
use crate::cluster::changelog::Entry;
use crate::cluster::partition::PartitionId;
use crate::cluster::work::Work;
use crate::store::{Pending, Scope, StoreError, Write};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::sync::Arc;

impl Core {
    /// Moves the inputs of partitions owned elsewhere into `forward`: they go through the
    /// work topic, and their owner applies them (on one process everything is owned).
    /// `positions` says which request's work is where in `forward`.
    pub(super) fn forward_elsewhere(
        &mut self,
        inputs: &mut BTreeMap<PartitionId, Vec<PartInput>>,
        finish: &mut Finish,
        forward: &mut Vec<(PartitionId, Work)>,
        positions: &mut Vec<(usize, usize)>,
    ) {
        let elsewhere: Vec<PartitionId> = inputs
            .keys()
            .filter(|p| !self.owned.contains(p))
            .copied()
            .collect();
        for p in elsewhere {
            for i in inputs.remove(&p).unwrap_or_default() {
                if let PartInput::Work { work, ticket, .. } = i {
                    if let Some(t) = ticket.and_then(|t| finish.tickets.get_mut(t)) {
                        if let Ticket::Apply(..) = t {
                            tickets::moved(t, p); // its caller asks the owner (the API relays)
                            continue;
                        }
                        tickets::forwarded(t, p, &work);
                        if let Some(i) = ticket {
                            positions.push((i, forward.len()));
                        }
                    }
                    self.direct.forwarding(input_of(&work).as_ref(), p);
                    forward.push((p, work));
                }
            }
        }
    }

    /// Applies every owned partition's inputs, in steps until no messages between
    /// partitions are left: the first step also takes the partitions with due timers, and the
    /// periodic sweep when it is due. With a changelog each step's batches are sent to it and
    /// read through while on their way; without one each step lands at once.
    pub(super) fn steps(
        &mut self,
        mut inputs: BTreeMap<PartitionId, Vec<PartInput>>,
        finish: &mut Finish,
        now: DateTime<Utc>,
        acks_only: bool,
    ) -> Result<(Vec<Step>, Vec<crate::cluster::Appending>), CoreError> {
        let sweep = now >= self.last_sweep + chrono::Duration::seconds(SWEEP_EVERY_SECS);
        if sweep {
            self.last_sweep = now;
        }
        let mut steps: Vec<Step> = Vec::new();
        let mut landed: Vec<crate::cluster::Appending> = Vec::new();
        let mut first = true;
        loop {
            // partitions with inputs, and (in the first step) those with due timers or a sweep
            let mut todo: Vec<PartitionId> = inputs.keys().copied().collect();
            if first {
                for p in self.owned.clone() {
                    let due = self.first_timer(p)?.is_some_and(|t| t <= now);
                    if (due || sweep) && !todo.contains(&p) {
                        todo.push(p);
                    }
                }
            }
            if todo.is_empty() {
                break;
            }
            todo.sort();
            self.rounds += 1;
            let mut step = Step {
                seq: self.rounds,
                changed: Vec::new(),
                effects: Vec::new(),
                direct: BTreeMap::new(),
                asked: BTreeMap::new(),
                fences: BTreeMap::new(),
                sent: (std::time::Instant::now(), self.clock.now()),
                lazy: acks_only,
            };
            let mut jobs = Vec::with_capacity(todo.len());
            for p in todo {
                let batch = inputs.remove(&p).unwrap_or_default();
                if !self.owned.contains(&p) {
                    continue;
                }
                let asked: Vec<usize> = batch
                    .iter()
                    .filter_map(|i| match i {
                        PartInput::Work {
                            ticket: Some(t), ..
                        } => Some(*t),
                        _ => None,
                    })
                    .collect();
                step.asked.insert(p, asked);
                // input records applied directly, kept until their batch is in the
                // changelog: a batch void by a newer fence sends them to the new owner
                if self.log.is_some() {
                    let direct: Vec<Work> = batch.iter().filter_map(direct_work).cloned().collect();
                    if !direct.is_empty() {
                        step.direct.insert(p, direct);
                    }
                    step.fences
                        .insert(p, self.fences.get(&p).copied().unwrap_or(-1));
                }
                jobs.push(self.job(p, batch));
            }
            self.apply_jobs(&mut jobs, now, first && sweep);
            // each partition's writes, wrapped to be shared with the pending reads only once
            // the changelog entry has been built from them
            let mut changed: Vec<(PartitionId, Vec<Write>)> = Vec::with_capacity(jobs.len());
            for job in jobs {
                let applied = job.applied.expect("every job was applied")?;
                let p = job.p;
                self.loopback.extend(applied.acks);
                for (topic, ty) in applied.produced {
                    self.metrics
                        .produced
                        .with_label_values(&[&topic, &ty])
                        .inc();
                }
                for (t, outcome) in applied.settled {
                    if let Some(t) = finish.tickets.get_mut(t) {
                        tickets::settle(t, outcome);
                    }
                }
                if !applied.rest.is_empty() {
                    inputs.insert(p, applied.rest);
                }
                if !applied.writes.is_empty() {
                    changed.push((p, applied.writes));
                }
                step.effects.push((p, applied.effects));
            }
            match self.log.is_some() {
                // the changelog takes each partition's batch first; the next step (and the
                // next round) reads its writes while they are on their way, and its append
                // follows without waiting for this one (docs/broker.md "Pipelined rounds")
                true => {
                    // (nothing in a step lands a round, so every batch's partition is still
                    // held under the fence it was built with; a later change of owner makes
                    // the batch void when it lands: `landing`)
                    let entries: Vec<(PartitionId, Entry)> = changed
                        .into_iter()
                        .map(|(p, writes)| {
                            let fence = step.fences.get(&p).copied().unwrap_or(-1);
                            (p, Entry::Batch { fence, writes })
                        })
                        .collect();
                    step.sent = (std::time::Instant::now(), self.clock.now());
                    let log = self.log.as_mut().expect("a changelog");
                    let appending = log.send(&entries)?;
                    let (sent, took) = (step.sent.0, self.metrics.append_seconds.clone());
                    landed.push(Box::pin(async move {
                        let appended = appending.await;
                        took.observe(sent.elapsed().as_secs_f64());
                        appended
                    }));
                    for (p, e) in entries {
                        if let Entry::Batch { writes, .. } = e {
                            // (shared with the step, which lands them)
                            let writes = Arc::new(writes);
                            self.pending
                                .entry(p)
                                .or_default()
                                .add(step.seq, writes.clone());
                            step.changed.push((p, writes));
                        }
                    }
                    steps.push(step);
                }
                false => {
                    step.changed = changed.into_iter().map(|(p, w)| (p, Arc::new(w))).collect();
                    self.land_step(
                        step,
                        Ok(Vec::new()),
                        &Default::default(),
                        finish,
                        &mut inputs,
                    )?;
                    for (p, i) in std::mem::take(&mut self.loopback) {
                        inputs.entry(p).or_default().push(i);
                    }
                }
            }
            first = false;
        }
        Ok((steps, landed))
    }

    /// Appends `forward` to the work topic before any request that sent work there is
    /// answered, and tells the start requests among them where their work is.
    pub(super) fn send_forward(
        &mut self,
        forward: Vec<(PartitionId, Work)>,
        positions: Vec<(usize, usize)>,
        finish: &mut Finish,
    ) -> Result<(), CoreError> {
        if !forward.is_empty() {
            match self.log.as_mut() {
                Some(log) => {
                    let at = log.forward(forward)?;
                    for &(p, offset) in &at {
                        self.direct.forwarded(p, offset);
                    }
                    for (t, i) in positions {
                        if let (Some(Ticket::Start(_, Some(Ok(s)))), Some(pos)) =
                            (finish.tickets.get_mut(t), at.get(i))
                        {
                            s.position = Some(*pos);
                        }
                    }
                }
                None => tracing::warn!(
                    records = forward.len(),
                    "work for partitions nobody owns dropped (no Kafka attached)"
                ),
            }
        }
        Ok(())
    }

    /// Partition `p`'s batch for its processor, with the partition's state taken out of the
    /// core while it runs: the writes of its rounds in flight and its decoded instances.
    fn job(&mut self, p: PartitionId, inputs: Vec<PartInput>) -> Job {
        Job {
            p,
            inputs,
            pending: self.pending.remove(&p).unwrap_or_default(),
            hot: {
                let mut hot = self.hot.remove(&p).unwrap_or_default();
                hot.share(self.owned.len());
                hot
            },
            fence: self.fences.get(&p).copied().unwrap_or(0),
            applied: None,
        }
    }

    /// One step's transactions: each partition's processor applies its inputs, due timers
    /// and sweeps (`broker::processor`), the partitions at once on the processor threads
    /// (`broker::pool`). Each job's state goes back to the core; nothing is committed here.
    fn apply_jobs(&mut self, jobs: &mut [Job], now: DateTime<Utc>, sweep: bool) {
        let (store, reg, cfg) = (&*self.store, &self.reg, &*self.cfg);
        let (parts, spans) = (self.parts, self.out.spans.is_some());
        let on = self.pool.run(jobs, |job| {
            let inputs = std::mem::take(&mut job.inputs);
            let applied = Processor {
                p: job.p,
                parts,
                store,
                pending: &job.pending,
                reg,
                cfg,
                fence: job.fence,
                spans,
                hot: &mut job.hot,
            }
            .apply(inputs, now, sweep);
            job.applied = Some(applied);
        });
        let on = if on { "pool" } else { "core" };
        let batches = &self.metrics.processor_batches;
        batches.with_label_values(&[on]).inc_by(jobs.len() as u64);
        let failed = jobs.iter().any(|j| matches!(j.applied, Some(Err(_))));
        for job in jobs {
            if failed {
                // the step is void: no processor's takes of due entries reach the store (the
                // error stops the core; this keeps the bounds true should it not)
                self.store.forget_due(Scope::Partition(job.p.0));
            }
            let pending = std::mem::take(&mut job.pending);
            if !pending.is_empty() {
                self.pending.insert(job.p, pending);
            }
            let hot = std::mem::replace(&mut job.hot, Hot::new(0));
            self.hot.insert(job.p, hot);
        }
    }
}

/// One partition's batch on its way through a processor.
struct Job {
    p: PartitionId,
    inputs: Vec<PartInput>,
    pending: Pending,
    hot: Hot<InstanceRecord>,
    fence: i64,
    applied: Option<Result<Applied, StoreError>>,
}
