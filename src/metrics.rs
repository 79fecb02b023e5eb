//! Prometheus metrics (`GET /metrics`). Counters are counted after the store commit that made
//! them true, so a failed commit never counts twice. Instances by status is a gauge kept in
//! the store (exact across restarts) and read at scrape time.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

pub struct Metrics {
    pub registry: Registry,
    pub consumed: IntCounterVec,
    pub produced: IntCounterVec,
    pub dead_lettered: IntCounterVec,
    pub unmatched: IntCounterVec,
    pub duplicates: IntCounter,
    pub duplicate_events: IntCounterVec,
    pub buffered: IntCounterVec,
    pub joins_expired: IntCounter,
    pub transitions: IntCounter,
    pub refused: IntCounter,
    pub output_dropped: IntCounter,
    pub starts_rejected: IntCounterVec,
    pub function_seconds: HistogramVec,
    pub commit_seconds: HistogramVec,
    /// From a changelog append sent to its round landed (acknowledged by Kafka and taken up
    /// by the core); a round may append more than once.
    pub landing_seconds: prometheus::Histogram,
    /// From a changelog append sent until the core saw Kafka acknowledge every record of it
    /// (Kafka's share of `landing_seconds`, plus any step the core was applying when the
    /// acknowledgement came, since the core reads it between steps).
    pub append_seconds: prometheus::Histogram,
    /// Landings late enough to look at the changelog again before their effects leave
    /// (`broker::handoff::Recheck`): `ends` per late step with effects, `records` per
    /// partition whose records after the batch had to be read back.
    pub landing_rechecks: IntCounterVec,
    /// Inputs (records, requests, call results, acknowledgements) taken per round.
    pub round_inputs: prometheus::Histogram,
    /// Per batch of input records: how long intake held it for the definitions topic's sync
    /// (`kafka::definitions::Caught`).
    pub definitions_wait: prometheus::Histogram,
    pub processor_batches: IntCounterVec,
    pub schedule_lag: HistogramVec,
    pub schedule_ticks: IntCounterVec,
    pub consumer_lag: IntGaugeVec,
    /// Input offset commits to the group (`kafka::commits`), by outcome (`ok`, `failed`).
    pub input_commits: IntCounterVec,
    /// Input records routed to their state partitions, by path (`direct`, `work_topic`).
    pub routed: IntCounterVec,
    /// 1 while the consumer reaches a Kafka broker, 0 while it reaches none (`GET /health`).
    pub kafka_up: prometheus::IntGauge,
    /// Input records held behind their run's first forward (`broker::held`).
    pub input_held: prometheus::IntGauge,
    /// 1 while intake is paused by backpressure (`kafka.max_in_flight`).
    pub intake_paused: prometheus::IntGauge,
    /// Instance records an input found kept decoded (`hit`) or decoded from the store (`miss`).
    pub instance_cache: IntCounterVec,
}

fn gauge(r: &Registry, name: &str, help: &str) -> prometheus::IntGauge {
    let g = prometheus::IntGauge::new(name, help).expect("valid metric");
    r.register(Box::new(g.clone())).expect("unique metric");
    g
}

fn counter(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    r.register(Box::new(c.clone())).expect("unique metric");
    c
}

fn histogram(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: Vec<f64>,
) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), labels)
        .expect("valid metric");
    r.register(Box::new(h.clone())).expect("unique metric");
    h
}

fn plain(r: &Registry, name: &str, help: &str, buckets: Vec<f64>) -> prometheus::Histogram {
    let h = prometheus::Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
        .expect("valid metric");
    r.register(Box::new(h.clone())).expect("unique metric");
    h
}

impl Metrics {
    pub fn new() -> Metrics {
        let r = Registry::new();
        let one = |name: &str, help: &str| {
            let c = IntCounter::new(name, help).expect("valid metric");
            r.register(Box::new(c.clone())).expect("unique metric");
            c
        };
        let fast = vec![
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ];
        Metrics {
            consumed: counter(&r, "flowbroker_events_consumed_total", "CloudEvents consumed, by source (kafka or http) and type.", &["source", "type"]),
            produced: counter(&r, "flowbroker_events_produced_total", "Records acknowledged by Kafka, by topic and event type.", &["topic", "type"]),
            dead_lettered: counter(&r, "flowbroker_events_dead_lettered_total", "Records sent to the dead-letter topic, by reason.", &["reason"]),
            unmatched: counter(&r, "flowbroker_events_unmatched_total", "Events that matched no workflow or instance, by type.", &["type"]),
            duplicate_events: counter(&r, "flowbroker_events_duplicate_total", "Events dropped because their source and id were consumed within the dedupe window, by type.", &["type"]),
            duplicates: one("flowbroker_records_duplicate_total", "Kafka records skipped because their offset was already applied."),
            buffered: counter(&r, "flowbroker_buffered_events_total", "Early events: buffered for an instance, held for a key with no instance yet, delivered later, expired, or dropped with their finished instance.", &["outcome"]),
            joins_expired: one("flowbroker_pending_starts_expired_total", "All-events starts dropped because the gap timeout passed."),
            transitions: one("flowbroker_transitions_total", "States entered."),
            output_dropped: one("flowbroker_outbox_dropped_total", "Outbox records Kafka refused for good whose dead-letter copy it refused too (each logged with the reason)."),
            refused: one("flowbroker_correlation_refused_total", "Waiting instances the correlation index named for an event that then did not take it (the index is exact, so this stays near zero)."),
            starts_rejected: counter(&r, "flowbroker_starts_rejected_total", "Start events rejected outside the schedule interval, by workflow.", &["workflow"]),
            function_seconds: histogram(&r, "flowbroker_function_duration_seconds", "Function call latency, by function and outcome.", &["function", "outcome"], fast.clone()),
            commit_seconds: histogram(&r, "flowbroker_store_commit_seconds", "Store transaction commit latency.", &[], fast.clone()),
            landing_seconds: plain(&r, "flowbroker_round_landing_seconds", "Per changelog append (one record per partition a round changed; a large round appends more than once): from its records sent to the changelog topic until its round landed, that is, Kafka acknowledged them and the core took the round up (after the round it was building meanwhile).", fast.clone()),
            append_seconds: plain(&r, "flowbroker_changelog_append_seconds", "Per changelog append: from its records sent to the changelog topic until the core saw Kafka acknowledge all of them (Kafka's share of flowbroker_round_landing_seconds; read between the core's steps, so a step being applied when the acknowledgement came adds to it).", fast.clone()),
            landing_rechecks: counter(&r, "flowbroker_landing_rechecks_total", "Changelog appends with effects that landed more than a second after they were sent (a broker stopped or starved meanwhile), so the core asked for the changelog's ends before letting their effects out (read=ends, once per such append), and partitions whose records after the batch were not all this broker's own acknowledged appends, so they were read back to look for another broker's fence (read=records).", &["read"]),
            round_inputs: plain(&r, "flowbroker_round_inputs", "Inputs taken per round that took any (records, requests, call results, produce acknowledgements).", vec![1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0]),
            definitions_wait: plain(&r, "flowbroker_intake_definitions_wait_seconds", "Per batch of input records (input topics and the work topic): how long intake held it until every definition published on the definitions topic before it arrived was deployed here (one offsets request to Kafka, shared by the batches waiting), before it went to the core.", fast.clone()),
            schedule_lag: histogram(&r, "flowbroker_schedule_lag_seconds", "Cron firing lag: commit time minus tick time.", &["workflow"], fast),
            input_commits: counter(&r, "flowbroker_input_offset_commits_total", "Input offset commits to the consumer group (one at a time, at most one per kafka.commit_interval_ms), by outcome: ok or failed (the next one carries the offsets again; stored positions decide what is applied).", &["outcome"]),
            routed: counter(&r, "flowbroker_input_records_routed_total", "Input records routed to a state partition, by path: direct (the partition is owned by this broker and applied the record without the work topic) or work_topic.", &["path"]),
            schedule_ticks: counter(&r, "flowbroker_schedule_ticks_total", "Cron ticks by outcome: fired, catch_up (fired late after downtime) or skipped (by the catch-up policy).", &["workflow", "outcome"]),
            consumer_lag: {
                let g = IntGaugeVec::new(
                    Opts::new("flowbroker_kafka_consumer_lag", "Records not yet consumed, by input topic and partition (librdkafka statistics, every 5 s)."),
                    &["topic", "partition"],
                )
                .expect("valid metric");
                r.register(Box::new(g.clone())).expect("unique metric");
                g
            },
            kafka_up: gauge(
                &r,
                "flowbroker_kafka_up",
                "1 while the consumer is connected to a Kafka broker, 0 while it reaches none (librdkafka statistics every 5 s; 0 at once on 'all brokers down').",
            ),
            input_held: gauge(
                &r,
                "flowbroker_input_records_held",
                "Input records for state partitions owned here held behind their run's first forward through the work topic, until the partition reads it back (then applied directly).",
            ),
            intake_paused: gauge(
                &r,
                "flowbroker_intake_paused",
                "1 while the core asks the consumers to pause (kafka.max_in_flight records and calls are out and not heard back about); 0 otherwise.",
            ),
            processor_batches: counter(&r, "flowbroker_processor_batches_total", "State partition batches applied by their processors, by where: pool (at once with the other partitions of their step, on the processor threads) or core (alone in their step, or no pool: cluster.processor_threads = 1, the default on 2 cores or fewer, or a pool that could not start).", &["on"]),
            instance_cache: counter(&r, "flowbroker_instance_cache_total", "Instance records loaded to apply an input, by outcome: hit (kept decoded since the instance's last write, which the store still holds) or miss (decoded from the store).", &["outcome"]),
            registry: r,
        }
    }

    /// The text exposition, followed by the store-kept gauges.
    pub fn render(&self, extra: &str) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding");
        let mut s = String::from_utf8(buf).unwrap_or_default();
        s.push_str(extra);
        s
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}
