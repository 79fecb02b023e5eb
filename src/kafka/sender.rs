//! The broker's producer client: one librdkafka producer, polled on a thread of its own
//! ([`super::polled`]), for the outbox ([`super::producer`]) and the few records that are sent
//! one at a time (partition claims, published workflow files).
//!
//! Delivery reports are not futures. An outbox record carries a [`Pending`] through librdkafka;
//! its report goes, as it comes, into a channel the outbox loop drains in batches. A record
//! sent one at a time carries the sender of a oneshot its caller awaits ([`Sender::send`]).
//! Before, every outbox record was a future of its own in a `FuturesUnordered`, with a oneshot
//! per record and a wake of its task per report: the outbox loop's share of the broker's CPU
//! under a backlog halved without them (docs/performance.md).

use super::polled::{acknowledge, AckSender, Polled};
use super::{client_config, KafkaError};
use crate::broker::OutboxKey;
use crate::config::KafkaConfig;
use rdkafka::error::KafkaError as RdError;
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::ClientContext;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// An outbox record on its way: what its delivery report needs besides the record.
#[derive(Debug)]
pub struct Pending {
    pub key: OutboxKey,
    /// The event type (or record kind), for the metric labels.
    pub label: String,
    /// The partition it was sent to by name (a work record), `None`: by its key.
    pub partition: Option<i32>,
    /// A message between state partitions (its acknowledgement counts under topic `work`).
    pub work: bool,
}

/// What a record's delivery report goes to.
pub enum Ticket {
    /// An outbox record: its report goes to the outbox loop.
    Outbox(Pending),
    /// A record sent one at a time: its sender awaits the report.
    Wait(AckSender),
}

/// The delivery report of an outbox record.
#[derive(Debug)]
pub struct Report {
    pub pending: Pending,
    /// The topic it was written to.
    pub topic: String,
    /// `Err`: the error, and the record as Kafka had it (to send again or dead-letter).
    pub result: Result<(), (RdError, OwnedMessage)>,
}

/// Hands each delivery report to whoever waits for it.
pub struct Reports {
    outbox: mpsc::UnboundedSender<Report>,
}

impl ClientContext for Reports {}

impl ProducerContext for Reports {
    type DeliveryOpaque = Box<Ticket>;

    fn delivery(&self, result: &DeliveryResult<'_>, ticket: Box<Ticket>) {
        match *ticket {
            Ticket::Wait(tx) => acknowledge(result, tx),
            Ticket::Outbox(pending) => {
                let (topic, result) = match result {
                    Ok(m) => (m.topic().to_string(), Ok(())),
                    Err((e, m)) => (m.topic().to_string(), Err((e.clone(), m.detach()))),
                };
                // the outbox loop gone: the broker is stopping
                let _ = self.outbox.send(Report {
                    pending,
                    topic,
                    result,
                });
            }
        }
    }
}

/// A record as [`Sender::send`] takes it, without a delivery ticket.
pub type Record<'a> = BaseRecord<'a, [u8], [u8], ()>;

/// A record with its delivery ticket.
pub type Ticketed<'a> = BaseRecord<'a, [u8], [u8], Box<Ticket>>;

/// `r` with `ticket` for its delivery report.
pub fn ticketed(r: Record<'_>, ticket: Ticket) -> Ticketed<'_> {
    BaseRecord {
        topic: r.topic,
        partition: r.partition,
        payload: r.payload,
        key: r.key,
        timestamp: r.timestamp,
        headers: r.headers,
        delivery_opaque: Box::new(ticket),
    }
}

/// The broker's producer client (cheap to clone: every clone is the same client).
#[derive(Clone)]
pub struct Sender {
    producer: Polled<Reports>,
}

impl Sender {
    /// The client, and the channel the outbox records' delivery reports come out of.
    pub fn create(
        cfg: &KafkaConfig,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Report>), KafkaError> {
        let (outbox, reports) = mpsc::unbounded_channel();
        let c = client_config(
            cfg,
            &[
                ("enable.idempotence", "true".into()),
                ("linger.ms", "5".into()),
                // librdkafka retries a record for as long as Kafka is away, in order: a
                // record that timed out and was sent again could be overtaken by a later
                // record of its key that was already queued (docs/broker.md "Topics and
                // records")
                ("message.timeout.ms", "0".into()),
                // kafka.max_in_flight bounds what the core hands over; librdkafka's queue
                // must take all of it, or records wait for room (`QueueFull`, out of order)
                (
                    "queue.buffering.max.messages",
                    (cfg.max_in_flight + 1000).max(100_000).to_string(),
                ),
            ],
        );
        let producer = Polled::create(&c, Reports { outbox }, "poll outbox")
            .map_err(KafkaError::client(cfg, "producer"))?;
        Ok((Sender { producer }, reports))
    }

    /// Queues a record whose report goes where its ticket says; a record librdkafka does not
    /// take is given back with the reason.
    #[allow(clippy::result_large_err)] // the record given back, as librdkafka's own API
    pub fn enqueue<'a>(&self, r: Ticketed<'a>) -> Result<(), (RdError, Ticketed<'a>)> {
        self.producer.send(r)
    }

    /// Sends one record and waits until Kafka acknowledges it (librdkafka retries for as long
    /// as Kafka is away); while librdkafka's queue is full, tries again every 100 ms for up
    /// to `queue_timeout`.
    pub async fn send(&self, r: Record<'_>, queue_timeout: Duration) -> Result<(), RdError> {
        let (tx, rx) = futures::channel::oneshot::channel();
        let mut r = ticketed(r, Ticket::Wait(tx));
        let start = Instant::now();
        loop {
            match self.producer.send(r) {
                Ok(()) => break,
                Err((e, back)) if queue_full(&e) && start.elapsed() < queue_timeout => {
                    r = back;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err((e, _)) => return Err(e),
            }
        }
        rx.await.unwrap_or(Err(RdError::Canceled)).map(|_offset| ())
    }

    /// Waits up to `timeout` for what is queued to be acknowledged.
    pub fn flush(&self, timeout: Duration) -> Result<(), RdError> {
        self.producer.flush(timeout)
    }
}

/// librdkafka's queue had no room for the record.
pub fn queue_full(e: &RdError) -> bool {
    e.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::QueueFull)
}
