//! Inputs from outside that are not plain events: Kafka records (routed, or dead-lettered
//! with their origin) and direct starts from the admin API.

use super::batch::Batch;
use super::records::OutRecord;
use super::{AdminError, Record, Stat};
use crate::store::StoreError;
use serde_json::Value;

/// Where a record came from, kept for the dead-letter copy.
struct Origin {
    topic: String,
    partition: i32,
    offset: i64,
    key: Option<Vec<u8>>,
    payload: Option<Vec<u8>>,
    headers: Vec<(String, Vec<u8>)>,
}

/// One Kafka record: route its event, or dead-letter it.
pub(super) fn consume(b: &mut Batch<'_, '_>, r: Record) -> Result<(), StoreError> {
    let Record {
        topic,
        partition,
        offset,
        event,
        key,
        payload,
        headers,
    } = r;
    let origin = Origin {
        topic,
        partition,
        offset,
        key,
        payload,
        headers,
    };
    match event {
        Ok(event) => {
            b.fx.stats
                .push(Stat::Consumed("kafka", event.event_type.clone()));
            if b.seen_before(&event)? {
                return Ok(());
            }
            let routed = b.route(event)?;
            if !routed.matched() && b.cfg.kafka.dlq_unmatched {
                let reason = routed
                    .rejected
                    .unwrap_or_else(|| "no workflow or instance matches this event".into());
                dead_letter(b, origin, "unmatched", &reason)?;
            }
        }
        Err(e) => {
            tracing::warn!(topic = %origin.topic, partition = origin.partition,
                offset = origin.offset, error = %e,
                "record is not a usable CloudEvent; sent to the dead-letter topic");
            dead_letter(b, origin, e.kind(), &e.to_string())?;
        }
    }
    Ok(())
}

/// Copies a record to the dead-letter topic with the reason and its origin in headers.
fn dead_letter(
    b: &mut Batch<'_, '_>,
    o: Origin,
    kind: &'static str,
    reason: &str,
) -> Result<(), StoreError> {
    let mut headers = o.headers;
    headers.push(("flowbroker-dlq-reason".into(), reason.as_bytes().to_vec()));
    headers.push(("flowbroker-dlq-kind".into(), kind.as_bytes().to_vec()));
    headers.push(("flowbroker-dlq-topic".into(), o.topic.into_bytes()));
    headers.push((
        "flowbroker-dlq-partition".into(),
        o.partition.to_string().into_bytes(),
    ));
    headers.push((
        "flowbroker-dlq-offset".into(),
        o.offset.to_string().into_bytes(),
    ));
    b.fx.stats.push(Stat::DeadLettered(kind));
    let topic = b.cfg.kafka.dlq_topic.clone();
    b.outbox(OutRecord::Raw {
        topic,
        key: o.key,
        payload: o.payload,
        headers,
    })
}

/// A direct start from the admin API.
pub(super) fn start(
    b: &mut Batch<'_, '_>,
    workflow: &str,
    input: Value,
) -> Result<Result<String, AdminError>, StoreError> {
    let Some(wf) = b.reg.current(workflow).cloned() else {
        return Ok(Err(AdminError::NotFound(format!(
            "no workflow {workflow:?} is deployed (GET /v1/workflows lists them)"
        ))));
    };
    if let Some(why) = b.direct_refused(&wf) {
        return Ok(Err(AdminError::Refused(why)));
    }
    let id = uuid::Uuid::new_v4().to_string();
    let r = b.create(&id, &wf, input, vec![], None)?;
    b.drain()?;
    Ok(match r {
        Ok(_) => Ok(id),
        Err(e) => Err(AdminError::Invalid(e.to_string())),
    })
}
