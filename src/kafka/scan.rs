//! Reading a range of one partition in order, waiting out a broker restart or a dropped
//! connection: the changelog read through a fence or at restore (`kafka::log`), and a
//! snapshot's chunks, read at a take-over or into a standby copy (`kafka::standby`).

use crate::cluster::partition::PartitionId;
use crate::cluster::snapshot::{decode_chunk, Manifest, SnapshotError};
use crate::cluster::LogError;
use crate::store::Write;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::time::{Duration, Instant};

/// How long reading a range may take before the reader gives up.
const READ_DEADLINE: Duration = Duration::from_secs(120);

/// What [`scan`] hands each record to: its offset and payload.
pub(super) type Each<'a> = dyn FnMut(i64, &[u8]) -> Result<(), LogError> + 'a;

/// Reads offsets `from..=through` of one partition of `topic` in order with `reader` (assigned
/// for the read, unassigned after), handing each record's offset and payload to `each`. A
/// broker restart or a dropped connection is waited out up to [`READ_DEADLINE`]; records
/// deleted from `from` on are an error.
pub(super) fn scan(
    reader: &BaseConsumer,
    topic: &str,
    partition: PartitionId,
    (from, through): (i64, i64),
    fail: &dyn Fn(String) -> LogError,
    each: &mut Each<'_>,
) -> Result<(), LogError> {
    if from > through {
        return Ok(());
    }
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition.kafka(), Offset::Offset(from))
        .map_err(|e| fail(e.to_string()))?;
    reader.assign(&tpl).map_err(|e| fail(e.to_string()))?;
    let r = scan_assigned(reader, partition, (from, through), fail, each);
    let _ = reader.unassign();
    r
}

fn scan_assigned(
    reader: &BaseConsumer,
    partition: PartitionId,
    (from, through): (i64, i64),
    fail: &dyn Fn(String) -> LogError,
    each: &mut Each<'_>,
) -> Result<(), LogError> {
    let deadline = Instant::now() + READ_DEADLINE;
    let mut last = from - 1;
    while last < through {
        if Instant::now() > deadline {
            return Err(fail(format!(
                    "could not read offsets {from}..={through} within {READ_DEADLINE:?} (read up to {last})"
                )));
        }
        let Some(m) = reader.poll(Duration::from_millis(500)) else {
            continue;
        };
        let m = match m {
            Ok(m) => m,
            Err(rdkafka::error::KafkaError::MessageConsumption(
                rdkafka::types::RDKafkaErrorCode::AutoOffsetReset,
            )) => {
                // a reader that may not jump (`auto.offset.reset = error`): `from` is gone
                return Err(fail(format!(
                    "the records from offset {from} were deleted; a newer snapshot replaced them"
                )));
            }
            Err(e) => {
                tracing::warn!(partition = %partition, error = %e,
                        "reading failed; retrying until the read deadline");
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        if last < from && m.offset() > from {
            return Err(fail(format!(
                "the records from offset {from} were deleted (the partition starts at {}); \
                     a newer snapshot replaced them: take the partition over again",
                m.offset()
            )));
        }
        last = m.offset();
        if last < from || last > through {
            continue;
        }
        each(last, m.payload().unwrap_or_default())?;
    }
    Ok(())
}

/// Reads the chunks of the snapshot `m` from `topic` with `reader`, handing each chunk's
/// writes to `apply` in order.
pub(super) fn read_snapshot(
    reader: &BaseConsumer,
    topic: &str,
    m: &Manifest,
    apply: &mut dyn FnMut(Vec<Write>) -> Result<(), LogError>,
) -> Result<(), LogError> {
    let partition = m.partition;
    let fail = |why: String| LogError::Snapshot { partition, why };
    scan(
        reader,
        topic,
        partition,
        (m.first, m.last),
        &fail,
        &mut |offset, payload| {
            match decode_chunk(offset, m.next, payload) {
                Ok(writes) => apply(writes),
                // chunks of another snapshot written in between (a former owner's)
                Err(SnapshotError::Foreign { .. }) => Ok(()),
                Err(e) => Err(fail(e.to_string())),
            }
        },
    )
}
