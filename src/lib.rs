//! flowbroker: a Kafka-native CloudEvents workflow broker for the Serverless Workflow language
//! (August 2020 draft), the Amazon States Language, Lambda durable functions and Amazon SWF
//! deciders.
//!
//! # Layout
//!
//! The language and the pure engine in the middle; every piece of I/O at the edge.
//! No file imports from another that imports back from it, directly or through others
//! (`tests/architecture.rs` reads each file with `syn` and checks the paths it names; a
//! parent module's file, which declares what its children share, is left out), except the
//! Serverless Workflow interpreter's steps in [`engine`], which call each other.
//!
//! Language (text -> a runnable definition):
//! - [`load`]: JSON/YAML text -> [`model`], each event/function/state read on its own so every
//!   problem is reported; unknown fields become warnings. Syntax errors carry line and column.
//! - [`model`]: the definition as data (workflow, functions, events, the nine state types,
//!   start/end/transitions, actions, filters, onError, retry).
//! - [`validate`]: semantic checks (references, durations, cron, expressions, exits), each a
//!   [`diag::Diagnostic`] with file, JSON path and fix; compiles every expression once.
//! - [`definition`]: a deployable definition; its [`definition::Body`] is the one boundary
//!   between the core and the languages: a validated [`model::Workflow`] (expressions compiled
//!   once), an ASL machine (`*.asl.json`) or a durable function (`*.durable.yaml`).
//! - [`family`]: what sub-workflows inherit from the workflows that run them (function and
//!   event definitions), at validation and at run time.
//! - [`expr`]: `{{ JsonPath }}` expressions, interpolation, truthiness (glue over jsonpath-rust).
//! - [`time`]: ISO 8601 durations and intervals, cron, IANA zones (glue over iso8601-duration,
//!   croner, chrono-tz); `Written`, a definition's time value parsed once, when it is read;
//!   `stamp`, timestamps of stored records written in chrono's serde form without `fmt`.
//! - [`diag`]: located diagnostics and "did you mean" suggestions.
//! - [`asl`]: Amazon States Language, the second language: machines read and validated with
//!   located errors, paths, data processing, Choice Rules, intrinsic functions, variables and
//!   JSONata states (docs/asl.md); run by [`engine::asl`].
//! - [`durable`]: Lambda durable functions, the third language: `*.durable.yaml` read with
//!   located errors, the durable execution API's data as AWS spells it ([`durable::wire`]),
//!   the ARNs, checkpoint tokens and callback ids the broker mints ([`durable::arn`]); run by
//!   [`engine::durable`].
//! - [`swf`]: Amazon SWF's decider model, the fourth language: domains and registered types
//!   ([`swf::registry`]), history events, decisions, task lists and task tokens as SWF spells
//!   them; run by [`engine::swf`].
//! - [`trace`]: W3C trace context carried from an instance's start to everything it does;
//!   finished spans as plain data ([`trace::span`]).
//!
//! Engine (pure, no I/O, no clock):
//! - [`engine`]: `engine::apply(definition, instance, input, now)` -> next instance +
//!   [`engine::Action`]s (produce, invoke, arm/cancel timer, start/cancel child,
//!   complete/terminate/fail). Inputs and instances are serde data, so runs can be stored and
//!   replayed. [`engine::asl`] is the ASL interpreter behind the same types, and
//!   [`engine::durable`] keeps a durable function's operations (checkpoints, waits, retries,
//!   callbacks, chained invokes, invocations) behind them too, and [`engine::swf`] an SWF
//!   execution's history, its one-at-a-time decision tasks, activity tasks, timers and
//!   timeouts (a domain's registry is an instance as well).
//!
//! Broker (the running service, `flowbroker run`):
//! - [`server`]: builds everything from [`config::Config`] and wires the tasks.
//! - [`broker`]: the core. Commands (records, HTTP events, admin requests, function results,
//!   outbox acks, file changes, partitions assigned and revoked) -> one [`store`] transaction
//!   per owned state partition per round, applied by that partition's processor
//!   ([`broker::processor`]; a step's partitions at once, on the processor threads) ->
//!   changelog -> effects after commit. Rounds are pipelined: the
//!   next is built while the changelog acknowledges the last, which lands (is stored, lets
//!   its effects out) once it has; landed outbox entries wait in memory for Kafka and reach
//!   the store only if not acknowledged soon (`broker::young`). Inside: the ingress (input records for owned partitions
//!   applied without the work topic, a backlog held behind each run's first forward until it
//!   is read back), correlation router and index, messages between partitions, registry of
//!   deployed versions, cron schedules and interval windows.
//! - [`store`]: the embedded store (fjall): tables of records in MessagePack (`store::codec`;
//!   JSON before layout 5, still read; the outbox's Kafka records in postcard,
//!   [`broker::produced`]), one transaction per batch,
//!   optionally scoped to one state partition and reading through the pending writes of
//!   rounds in flight; a transaction's writes are its changelog batch; a partition's keys
//!   exported as of one moment (snapshots); tables merged to drop deleted keys' tombstones;
//!   the records of waiting instances kept in memory as stored (`store::resident`).
//! - [`cluster`]: scale-out (docs/scale.md): state partitions and ids that carry them, work
//!   topic records with their source positions, changelog batches and fences (binary records,
//!   format 1 JSON still read), snapshots of a partition (binary chunks, formats 1 to 3
//!   JSON still read, and manifests), the directory of which broker owns which partition and
//!   where its latest snapshot is, a broker's lasting node id (resuming after a
//!   restart) and which partitions it keeps standby copies of.
//! - [`kafka`]: the input consumer (input records in batches, in the `kafka.group_id` group;
//!   their offsets committed one at a time, at most once per interval: `kafka::commits`),
//!   the state partition group (`kafka::membership`: which state partitions this broker
//!   owns, balanced apart from the inputs), the work reader, the producer (outbox -> Kafka,
//!   acks back to the core; its client, `kafka::sender`, hands delivery reports over without a
//!   future per record; every producer is polled by `kafka::polled`, whose thread sleeps while
//!   no report comes), the changelog log ([`cluster::Log`]; its appends through a few producers, a state
//!   partition always the same one), the owners topic (claims and snapshot manifests
//!   published and read), the snapshot writer ([`kafka::snapshots`]), resuming after a
//!   restart (`kafka::resume`), standby copies (`kafka::standby`, started from a snapshot
//!   where the changelog was trimmed), reading a partition's range in order (the changelog,
//!   a snapshot's chunks: `kafka::scan`), the definitions topic, the topics a broker needs and their creation
//!   (`kafka::topics`);
//!   [`cloudevent`] converts SDK events.
//! - [`http`]: CloudEvents HTTP ingress, admin API (requests about another broker's
//!   partitions are forwarded to it), workflow definitions and graphs, the web console
//!   (`/ui/`, assets built in), health, Prometheus [`metrics`]; bearer-token access (header or
//!   the console's cookie) and body limits in front of all of it; the AWS durable execution
//!   API at AWS's paths (`http::lambda`, SigV4 checked by [`http::sigv4`]); Amazon SWF's
//!   JSON API on `POST /` ([`http::swf`], long polls on the task board `broker::board`).
//! - [`invoke`]: function calls over HTTP with idempotency keys (each attempt timed as a span);
//!   a durable function's invocations are calls too (Lambda's `X-Amz-Function-Error` read).
//! - [`otel`]: OTLP span export (OpenTelemetry SDK), on only when `OTEL_EXPORTER_OTLP_*` asks.
//! - [`fifo`]: a map whose oldest put leaves first, the bookkeeping of the two caches of
//!   instance records (`store::resident`, `broker::hot`).
//! - [`watch`]: the workflow directory, polled (a change acted on once it has held, nothing
//!   unreadable undeployed; `watch::list` finds the files); [`rollout`]:
//!   what this broker deploys from its directory and the definitions topic, so every broker
//!   deploys the same files ([`kafka::definitions`] reads and publishes the topic).
//! - [`cli`]: the `flowbroker` command (`run`, `validate`, `graph`, and the client commands
//!   `start`, `instances`, `show`, `cancel`, `send`); [`graph`]: a workflow as a graph, drawn
//!   as Mermaid, DOT or SVG.

/// mimalloc instead of the system allocator: the hot path allocates many small, short-lived
/// values (JSON data, keys, records), and glibc's malloc/free were a fifth of the core thread's
/// profile (docs/performance.md). Declared here so the binary, tests and benches all use it.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod asl;
pub mod broker;
pub mod cli;
pub mod cloudevent;
pub mod cluster;
pub mod config;
pub mod definition;
pub mod diag;
pub mod durable;
pub mod engine;
pub mod expr;
pub mod family;
pub mod fifo;
pub mod graph;
pub mod http;
pub mod invoke;
pub mod kafka;
pub mod load;
pub mod metrics;
pub mod model;
pub mod otel;
pub mod rollout;
pub mod server;
pub mod store;
pub mod swf;
pub mod time;
pub mod trace;
pub mod validate;
pub mod watch;
