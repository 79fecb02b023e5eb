//! A librdkafka producer whose delivery reports are served by a thread of its own that sleeps
//! while none come, and the acknowledgement of a record the sender waits for ([`Acks`]).
//!
//! rdkafka's `ThreadedProducer` (and `FutureProducer`, built on it) polls in 100 ms windows,
//! and `BaseProducer::poll` asks librdkafka for at most the window's remaining whole
//! milliseconds: once less than one is left it polls without waiting, over and over, until the
//! window ends. That is about 1% of a core per producer, idle or busy; a broker runs one per
//! changelog producer besides the outbox, work and snapshot producers (eight with the
//! default 12 partitions, 29 with 64), and an idle broker spent 7.7% of a core, 1.3% with
//! this (docs/performance.md). Here a window is [`WINDOW`] long, so the same tail costs a
//! thousandth of the time.

use rdkafka::error::{KafkaError as RdError, KafkaResult, RDKafkaErrorCode};
use rdkafka::message::ToBytes;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, ProducerContext};
use rdkafka::{ClientConfig, ClientContext, Message};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
// not tokio's: the core waits for acknowledgements with `block_on` inside its runtime, where a
// tokio channel counts against the task's cooperative budget and, once that is spent, answers
// `Pending` with a wake-up that only comes when the task yields, which a blocked thread never
// does
use futures::channel::oneshot;

/// How long the polling thread waits for a report in one call. Dropping the producer lets the
/// thread end after the current window; it then drops the client (which purges and flushes
/// what is left, as rdkafka's own producers do).
pub const WINDOW: Duration = Duration::from_secs(1);

/// A producer polled on a thread of its own (cheap to clone: every clone is the same client).
pub struct Polled<C: ProducerContext + 'static> {
    shared: Arc<Shared<C>>,
}

impl<C: ProducerContext + 'static> Clone for Polled<C> {
    fn clone(&self) -> Self {
        Polled {
            shared: self.shared.clone(),
        }
    }
}

struct Shared<C: ProducerContext + 'static> {
    producer: Arc<BaseProducer<C>>,
    stop: Arc<AtomicBool>,
}

impl<C: ProducerContext + 'static> Drop for Shared<C> {
    fn drop(&mut self) {
        // the thread is not joined: that would hold the caller for up to a window
        self.stop.store(true, Ordering::Release);
    }
}

impl<C: ProducerContext + 'static> Polled<C> {
    /// Creates the client and starts its polling thread, named `name` (at most 15 bytes show).
    pub fn create(config: &ClientConfig, context: C, name: &str) -> KafkaResult<Self> {
        let producer: Arc<BaseProducer<C>> = Arc::new(config.create_with_context(context)?);
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (producer.clone(), stop.clone());
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                while !s.load(Ordering::Acquire) {
                    p.poll(WINDOW);
                }
            })
            .map_err(|e| RdError::ClientCreation(format!("polling thread: {e}")))?;
        Ok(Polled {
            shared: Arc::new(Shared { producer, stop }),
        })
    }
}

impl<C: ProducerContext + 'static> Deref for Polled<C> {
    type Target = BaseProducer<C>;

    fn deref(&self) -> &BaseProducer<C> {
        &self.shared.producer
    }
}

/// Hands each record's acknowledgement (its offset) to the oneshot it carries.
pub struct Acks;

/// Where a record's acknowledgement goes.
pub type AckSender = oneshot::Sender<Result<i64, RdError>>;

impl ClientContext for Acks {}

impl ProducerContext for Acks {
    type DeliveryOpaque = Box<AckSender>;

    fn delivery(&self, result: &DeliveryResult<'_>, tx: Box<AckSender>) {
        acknowledge(result, *tx);
    }
}

/// Hands a delivery report to the one waiting for it: the record's offset, or why it was not
/// delivered (every producer's waited-for records: [`Acks`], and `super::sender`'s).
pub fn acknowledge(result: &DeliveryResult<'_>, tx: AckSender) {
    // the waiter gone: nothing to tell
    let _ = tx.send(
        result
            .as_ref()
            .map(|m| m.offset())
            .map_err(|(e, _)| e.clone()),
    );
}

/// A record queued with [`Polled::queue`]: its offset once Kafka has acknowledged it.
pub struct Acked(oneshot::Receiver<Result<i64, RdError>>);

impl Acked {
    /// Blocks the thread until Kafka acknowledges the record (librdkafka retries for as long as
    /// its `message.timeout.ms` allows); the reason as text when it did not.
    pub fn wait(self) -> Result<i64, String> {
        futures::executor::block_on(self.done())
    }

    /// Kafka's acknowledgement, awaited.
    pub async fn done(self) -> Result<i64, String> {
        match self.0.await {
            Ok(Ok(offset)) => Ok(offset),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the producer went away".into()),
        }
    }
}

impl Polled<Acks> {
    /// Queues a record to `topic` (built further by `build`: key, payload, partition), waiting
    /// while librdkafka's queue is full; any other refusal (a record over the size limit, ...)
    /// is the error, as text.
    pub fn queue<'a, K, P>(
        &self,
        topic: &'a str,
        build: impl FnOnce(BaseRecord<'a, K, P, Box<AckSender>>) -> BaseRecord<'a, K, P, Box<AckSender>>,
    ) -> Result<Acked, String>
    where
        K: ToBytes + ?Sized + 'a,
        P: ToBytes + ?Sized + 'a,
    {
        let (tx, rx) = oneshot::channel();
        let mut record = build(BaseRecord::with_opaque_to(topic, Box::new(tx)));
        loop {
            match self.send(record) {
                Ok(()) => return Ok(Acked(rx)),
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    std::thread::sleep(Duration::from_millis(5));
                    record = r;
                }
                Err((e, r)) => {
                    let size = r.payload.map_or(0, |p| p.to_bytes().len());
                    return Err(format!("{e} (a record of {size} bytes)"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Whether a thread of this process is named `name`.
    fn running(name: &str) -> bool {
        std::fs::read_dir("/proc/self/task")
            .expect("/proc")
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .any(|comm| comm.trim_end() == name)
    }

    /// Waits up to `secs` for `f` to hold.
    fn wait(secs: u64, f: impl Fn() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        f()
    }

    /// A client that cannot reach a broker: librdkafka only retries connecting.
    fn unreachable() -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", "127.0.0.1:9")
            .set("message.timeout.ms", "200");
        c
    }

    #[test]
    fn the_polling_thread_ends_once_its_producer_is_dropped() {
        let p = Polled::create(&unreachable(), Acks, "poll-end-test").expect("client");
        // the thread names itself once it runs
        assert!(wait(10, || running("poll-end-test")), "no polling thread");
        drop(p);
        assert!(
            wait(10, || !running("poll-end-test")),
            "the polling thread outlived its producer"
        );
    }

    #[test]
    fn an_acknowledgement_is_waited_for_inside_a_runtime_whose_budget_is_spent() {
        // the core waits for its appends synchronously inside its runtime's `block_on`; a
        // channel that counts against tokio's cooperative budget would answer `Pending` once
        // the loop had spent it, and leave the thread parked for good
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            let got = rt.block_on(async {
                for _ in 0..1000 {
                    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                    let _ = tx.send(());
                    let _ = futures::FutureExt::now_or_never(rx);
                }
                let (tx, rx) = oneshot::channel();
                let _ = tx.send(Ok(7));
                Acked(rx).wait()
            });
            let _ = done.send(got);
        });
        let got = result
            .recv_timeout(Duration::from_secs(10))
            .expect("the wait never returned");
        assert_eq!(got, Ok(7));
    }

    #[test]
    fn a_record_that_is_not_delivered_reports_why_to_its_waiter() {
        let p = Polled::create(&unreachable(), Acks, "poll-ack-test").expect("client");
        let acked = p
            .queue::<[u8], [u8]>("t", |r| r.payload(b"x".as_slice()).key(b"k".as_slice()))
            .expect("queued");
        // on a thread of its own, so that a report that never comes fails the test
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(acked.wait());
        });
        let why = result
            .recv_timeout(Duration::from_secs(10))
            .expect("no report came")
            .expect_err("nothing can acknowledge it");
        assert!(why.contains("timed out"), "{why}");
    }
}
