//! The `flowbroker` command line: `run` (the broker), `validate` and `graph` (workflow files),
//! and the client commands `start`, `instances`, `show`, `cancel` (the HTTP API, [`client`])
//! and `send` (a CloudEvent to Kafka).

pub mod client;
mod instances;
mod send;
mod validate;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "flowbroker",
    version,
    about = "A Kafka-native CloudEvents workflow broker"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub server: client::Server,
    /// How client commands print: a table for people or the API's JSON.
    #[arg(long, global = true, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// A Mermaid flowchart (GitHub and most Markdown viewers draw it).
    Mermaid,
    /// Graphviz DOT.
    Dot,
    /// An SVG drawing (laid out here, no Graphviz needed).
    Svg,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the broker: consume CloudEvents from Kafka (and HTTP), run workflows, produce
    /// events. Configuration: --config FILE and FLOWBROKER_* environment variables.
    Run {
        /// TOML configuration file (default: built-in defaults).
        #[arg(long, env = "FLOWBROKER_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Check workflow definitions (files or directories of *.json, *.yaml, *.yml).
    /// Exit status 0 when all are valid, 1 when any is not; problems go to stderr.
    Validate {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format of the problems.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Print a workflow's states and transitions as a Mermaid flowchart, DOT or SVG.
    Graph {
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
        format: GraphFormat,
    },
    /// Start an instance of a deployed workflow over the API; prints its id.
    Start {
        workflow: String,
        /// The input, a JSON object (default {}).
        #[arg(long)]
        data: Option<String>,
        /// A retried start with the same key returns the same instance.
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// List instances, newest partition first, as a table.
    Instances {
        /// Only this workflow's instances.
        #[arg(long)]
        workflow: Option<String>,
        /// Only instances with this status (RUNNING, WAITING, COMPLETED, FAILED, ...).
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Continue after this instance id (the `--after` a full page prints).
        #[arg(long)]
        after: Option<String>,
    },
    /// Show one instance: status, current state, data, output or error, and history.
    Show {
        id: String,
        /// Put back the payloads kept beside history entries.
        #[arg(long)]
        full: bool,
    },
    /// Cancel a running instance.
    Cancel { id: String },
    /// Publish a CloudEvent to the input topic (Kafka settings from --config and FLOWBROKER_*).
    Send {
        #[arg(long = "type")]
        event_type: String,
        #[arg(long)]
        source: String,
        /// The event id (default: a new UUID).
        #[arg(long)]
        id: Option<String>,
        #[arg(long)]
        subject: Option<String>,
        /// An extension attribute, name=value (repeat for more).
        #[arg(long = "attr")]
        attrs: Vec<String>,
        /// The data, JSON.
        #[arg(long)]
        data: Option<String>,
        /// The topic (default: the first of kafka.input_topics).
        #[arg(long)]
        topic: Option<String>,
        /// The record key (default: the event id).
        #[arg(long)]
        key: Option<String>,
        #[arg(long, env = "FLOWBROKER_CONFIG")]
        config: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let out = cli.output;
    let client = || client::Client::new(&cli.server).map_err(|e| e.to_string());
    let done = match cli.command {
        Command::Run { config } => return run_broker(config),
        Command::Validate { paths, format } => return validate::run(&paths, format),
        Command::Graph { file, format } => graph(&file, format),
        Command::Start {
            workflow,
            data,
            idempotency_key,
        } => client().and_then(|c| {
            instances::start(
                &c,
                out,
                &workflow,
                data.as_deref(),
                idempotency_key.as_deref(),
            )
        }),
        Command::Instances {
            workflow,
            status,
            limit,
            after,
        } => client().and_then(|c| {
            instances::list(
                &c,
                out,
                workflow.as_deref(),
                status.as_deref(),
                limit,
                after.as_deref(),
            )
        }),
        Command::Show { id, full } => client().and_then(|c| instances::show(&c, out, &id, full)),
        Command::Cancel { id } => client().and_then(|c| instances::cancel(&c, out, &id)),
        Command::Send {
            event_type,
            source,
            id,
            subject,
            attrs,
            data,
            topic,
            key,
            config,
        } => send::run(
            config.as_deref(),
            out,
            send::Send {
                event_type: &event_type,
                source: &source,
                id: id.as_deref(),
                subject: subject.as_deref(),
                attrs: &attrs,
                data: data.as_deref(),
                topic: topic.as_deref(),
                key: key.as_deref(),
            },
        ),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `graph FILE --format mermaid|dot|svg`.
fn graph(file: &std::path::Path, format: GraphFormat) -> Result<(), String> {
    let located = |invalid: crate::definition::Invalid| {
        invalid
            .diagnostics
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let def = crate::definition::Definition::load(file).map_err(located)?;
    let g = crate::graph::Graph::of_definition(&def);
    let marks = crate::graph::Marks::default();
    match format {
        GraphFormat::Mermaid => print!("{}", crate::graph::mermaid_of(&g)),
        GraphFormat::Dot => print!("{}", crate::graph::dot(&g, &marks)),
        GraphFormat::Svg => {
            print!(
                "{}",
                crate::graph::svg(&g, &marks).map_err(|e| e.to_string())?
            )
        }
    }
    Ok(())
}

fn run_broker(config: Option<PathBuf>) -> ExitCode {
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("FLOWBROKER_LOG").unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new("info,rdkafka=warn,fjall=warn,lsm_tree=warn")
        });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cfg = match crate::config::Config::load(config.as_deref(), std::env::vars()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for w in &cfg.warnings {
        tracing::warn!("{w}");
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(crate::server::serve(cfg)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
