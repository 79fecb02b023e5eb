//! The `flowbroker` command line: `run`, `validate` and `graph`.

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
    /// Print a Mermaid flowchart of a workflow's states and transitions.
    Graph { file: PathBuf },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Run { config } => run_broker(config),
        Command::Validate { paths, format } => validate::run(&paths, format),
        Command::Graph { file } => match crate::definition::Definition::load(&file) {
            Ok(def) => {
                print!("{}", crate::graph::mermaid(&def.workflow));
                ExitCode::SUCCESS
            }
            Err(invalid) => {
                for d in &invalid.diagnostics {
                    eprintln!("{d}");
                }
                ExitCode::FAILURE
            }
        },
    }
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
