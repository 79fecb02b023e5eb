//! Resuming after a restart (docs/scale.md "Restart"), without waiting for the consumer group:
//! a rejoining member gets nothing before its old membership times out and a join completes
//! (about 18 s at the default session timeout on tansu; static membership still takes 8 s
//! there). Once the owners topic is read to where it ended at start, the state partitions this
//! node claimed last go to the core ([`Cmd::Resume`]) unless the state partitions' group has
//! assigned some already, and the input topic partitions the input group gave it last are
//! read outside the group from the group's committed offsets, until the input group assigns
//! this broker its inputs (none included). Records read twice (here, then again from the same
//! committed offset by whoever the group gives the partition) are dropped by their source
//! position where they are applied.

use super::consumer::{create_outside, run as consume};
use crate::broker::shared::{Assigned, Shared};
use crate::broker::Cmd;
use crate::cluster::directory::held_last;
use crate::cluster::node::{Inputs, NodeId};
use crate::config::Config;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How long a take-over waits for the owners topic to be read to its end at start.
const DIRECTORY_WAIT: Duration = Duration::from_secs(15);
/// The inputs are read outside the group at most this long (the group normally assigns long
/// before).
const OUTSIDE_AT_MOST: Duration = Duration::from_secs(300);

/// What resuming needs from the rest of the broker. Inputs are read outside the group only
/// when the core resumed some state partition: when other brokers took them over, this
/// node's membership had ended in both groups (they share the session timeout), so the input
/// group has moved its inputs too.
pub struct Resume {
    pub cfg: Arc<Config>,
    pub node: NodeId,
    /// The input partitions the group gave this node last.
    pub inputs: Inputs,
    pub shared: Arc<Shared>,
    pub control: mpsc::UnboundedSender<Cmd>,
    pub core: mpsc::Sender<Cmd>,
    /// What the two groups have assigned this broker (state partitions: whether to resume;
    /// the input group's answer: when to stop reading inputs outside it).
    pub assigned: Assigned,
    pub metrics: Arc<crate::metrics::Metrics>,
    pub intake: watch::Receiver<bool>,
    pub definitions: Option<Arc<super::definitions::Caught>>,
}

impl Resume {
    /// Resumes what this node held last, then reads its inputs outside the group until the
    /// input group assigns this broker its inputs.
    pub async fn run(mut self) {
        let shared = self.shared.clone();
        let ready =
            tokio::task::spawn_blocking(move || shared.directory_ready.wait(DIRECTORY_WAIT))
                .await
                .unwrap_or(false);
        if *self.assigned.state.borrow() > 0 {
            return;
        }
        if !ready {
            tracing::warn!(
                "the owners topic was not read to its end in time: not resuming; \
                waiting for the group"
            );
            return;
        }
        let held = match self.shared.directory.read() {
            Ok(d) => held_last(&d, &self.node),
            Err(_) => return,
        };
        if held.is_empty() {
            // other brokers took over what this node held: the group moved on, and so did
            // its inputs
            return;
        }
        tracing::info!(node = %self.node, state_partitions = ?held,
            "resuming the state partitions this node held last");
        let (done, resumed) = tokio::sync::oneshot::channel();
        let _ = self.control.send(Cmd::Resume(held, done));
        // inputs only when the core took something back (not when the group came first or
        // every partition was written to since)
        if resumed.await.map_or(true, |r| r.is_empty()) {
            return;
        }
        let k = &self.cfg.kafka;
        let inputs = Inputs(
            self.inputs
                .0
                .into_iter()
                .filter(|i| k.input_topics.contains(&i.topic))
                .collect(),
        );
        // the input group decided already: its consumer reads whatever it assigned here
        if inputs.0.is_empty() || self.assigned.inputs.borrow().is_some() {
            return;
        }
        let consumer = match create_outside(
            k,
            self.control.clone(),
            self.metrics.clone(),
            self.intake.clone(),
            &inputs,
        ) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the inputs outside the group; waiting \
                    for the group");
                return;
            }
        };
        tracing::info!(
            partitions = inputs.0.len(),
            "reading the input partitions this node had last until the group assigns"
        );
        let assigned = self.assigned.inputs_decided();
        tokio::select! {
            _ = consume(consumer, self.core, k.batch_size, k.max_input_bytes, self.intake,
                self.definitions) => {}
            _ = assigned => tracing::info!("the input group assigned this broker its \
                partitions; inputs are read in the group again"),
            _ = tokio::time::sleep(OUTSIDE_AT_MOST) => tracing::warn!(
                "the group assigned nothing for {OUTSIDE_AT_MOST:?}; stopped reading inputs \
                 outside it"),
        }
    }
}
