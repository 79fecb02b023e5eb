//! State partition membership: a consumer of its own, in a group of its own
//! (`{kafka.group_id}.state`), subscribed to the work topic alone, so the group assigns state
//! partitions apart from the input topics and its assignor balances them by themselves (with
//! `cooperative-sticky`, an assignor that counts every subscribed partition together would
//! otherwise give a joining broker input partitions and no state partition). It reads nothing:
//! its partitions are paused at once and read by the work reader from the offsets their state
//! records; what it is for is the rebalance callbacks, which tell the core which state
//! partitions it gained or lost.

use super::consumer::{group_settings, PREFETCH};
use super::{client_config, KafkaError};
use crate::broker::Cmd;
use crate::cluster::node::NodeId;
use crate::cluster::partition::PartitionId;
use crate::config::KafkaConfig;
use rdkafka::consumer::{Consumer, ConsumerContext, Rebalance, StreamConsumer};
use rdkafka::{ClientContext, TopicPartitionList};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How long a revocation waits for the core to stop writing the revoked partitions.
const REVOKE_WAIT: Duration = Duration::from_secs(30);

/// The group that assigns state partitions, beside the input topics' `group_id`.
fn group(cfg: &KafkaConfig) -> String {
    format!("{}.state", cfg.group_id)
}

/// Tells the core what the group gave and took, and how many state partitions are assigned.
pub struct Ctx {
    assigned: watch::Sender<usize>,
    control: mpsc::UnboundedSender<Cmd>,
}

fn partitions(tpl: &TopicPartitionList) -> Vec<PartitionId> {
    tpl.elements()
        .iter()
        .filter_map(|e| u16::try_from(e.partition()).ok().map(PartitionId))
        .collect()
}

impl ClientContext for Ctx {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        // "all brokers down" is the input consumer's to report (it sets the gauge)
        if error.rdkafka_error_code() != Some(rdkafka::types::RDKafkaErrorCode::AllBrokersDown) {
            tracing::error!(error = %error, reason, "librdkafka error (state partition group)");
        }
    }
}

impl ConsumerContext for Ctx {
    /// A revocation waits here, before librdkafka lets go of the partitions (and so before
    /// the group can give them to anyone else), until the core has stopped writing them.
    fn pre_rebalance(&self, _: &rdkafka::consumer::BaseConsumer<Self>, r: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = r {
            let lost = partitions(tpl);
            tracing::info!(state_partitions = ?lost, "state partitions revoked");
            let (done, stopped) = std::sync::mpsc::sync_channel(1);
            if self.control.send(Cmd::Revoked(lost, Some(done))).is_ok()
                && stopped.recv_timeout(REVOKE_WAIT).is_err()
            {
                tracing::warn!("the core did not release its partitions within {REVOKE_WAIT:?}");
            }
        }
    }

    fn post_rebalance(&self, c: &rdkafka::consumer::BaseConsumer<Self>, r: &Rebalance<'_>) {
        match r {
            Rebalance::Assign(tpl) => {
                // `tpl` is what this rebalance added (cooperative: only the partitions that
                // changed hands; eager: everything); `all` is what this member has now
                let all = c.assignment().unwrap_or_else(|_| (*tpl).clone());
                // the group only says who owns a state partition; the work reader reads it
                // from the offset its restored state records
                if let Err(e) = c.pause(tpl) {
                    tracing::warn!(error = %e, "could not pause the work partitions in the state group's consumer");
                }
                let (added, owned) = (partitions(tpl), partitions(&all));
                tracing::info!(state_partitions = ?added, now = ?owned, "state partitions assigned");
                let _ = self.control.send(Cmd::Assignment(owned));
                let _ = self.control.send(Cmd::Assigned(added));
                let _ = self.assigned.send(all.count());
            }
            Rebalance::Revoke(_) => {
                // the core let go of them in `pre_rebalance`; cooperative: what was not
                // revoked stays (eager: nothing)
                let _ = self
                    .assigned
                    .send(c.assignment().map(|a| a.count()).unwrap_or(0));
            }
            Rebalance::Error(e) => tracing::warn!(error = %e, "state group rebalance error"),
        }
    }
}

pub type StateConsumer = StreamConsumer<Ctx>;

/// Joins the state partition group; the receiver counts the state partitions assigned now.
pub fn create(
    cfg: &KafkaConfig,
    node: &NodeId,
    work_topic: &str,
    control: mpsc::UnboundedSender<Cmd>,
) -> Result<(Arc<StateConsumer>, watch::Receiver<usize>), KafkaError> {
    let client = KafkaError::client(cfg, "state partition consumer");
    let (assigned, rx) = watch::channel(0);
    // it reads nothing, but anything fetched before the pause lands is bounded as elsewhere
    let settings: Vec<_> = group_settings(cfg, group(cfg), Some(node))
        .into_iter()
        .chain(PREFETCH.iter().map(|(k, v)| (*k, v.to_string())))
        .collect();
    let consumer: StateConsumer = client_config(cfg, &settings)
        .create_with_context(Ctx { assigned, control })
        .map_err(client)?;
    consumer.subscribe(&[work_topic]).map_err(client)?;
    Ok((Arc::new(consumer), rx))
}

/// Serves the group (rebalances happen while the consumer is polled) until the process ends.
/// Its partitions are paused, so a record seen here was fetched before the pause took effect:
/// the work reader reads it.
pub async fn run(consumer: Arc<StateConsumer>) {
    loop {
        if let Err(e) = consumer.recv().await {
            tracing::warn!(error = %e, "state partition group consume error");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
