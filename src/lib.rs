//! flowbroker: a Kafka-native CloudEvents workflow broker for the Serverless Workflow language
//! (August 2020 draft).
//!
//! # Layout
//!
//! Text flows top to bottom; the engine sits in the middle and never does I/O.
//!
//! - [`load`]: JSON/YAML text -> [`model`], each event/function/state read on its own so every
//!   problem is reported; unknown fields become warnings. Syntax errors carry line and column.
//! - [`model`]: the definition as data (workflow, functions, events, the nine state types,
//!   start/end/transitions, actions, filters, onError, retry).
//! - [`validate`]: semantic checks (references, durations, cron, expressions, exits), each a
//!   [`diag::Diagnostic`] with file, JSON path and fix; compiles every expression once.
//! - [`definition`]: a validated [`model::Workflow`] plus its compiled expressions, ready to run.
//! - [`expr`]: `{{ JsonPath }}` expressions, interpolation, truthiness (glue over jsonpath-rust).
//! - [`time`]: ISO 8601 durations and intervals, cron, IANA zones (glue over iso8601-duration,
//!   croner, chrono-tz).
//! - [`engine`]: the pure state machine. `engine::apply(definition, instance, input, now)` ->
//!   next instance + [`engine::Action`]s (produce, invoke, arm/cancel timer, start/cancel child,
//!   complete/terminate/fail). Inputs and instances are serde data, so runs can be stored and
//!   replayed.
//! - [`graph`]: Mermaid flowcharts of a definition.
//! - [`cli`]: the `flowbroker` command (`validate`, `graph`).
//! - [`diag`]: located diagnostics and "did you mean" suggestions.

pub mod broker;
pub mod cli;
pub mod cloudevent;
pub mod config;
pub mod definition;
pub mod diag;
pub mod engine;
pub mod expr;
pub mod graph;
pub mod http;
pub mod invoke;
pub mod kafka;
pub mod load;
pub mod metrics;
pub mod model;
pub mod server;
pub mod store;
pub mod time;
pub mod validate;
pub mod watch;
