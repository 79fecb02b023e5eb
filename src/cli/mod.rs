//! The `flowbroker` command line: `validate` and `graph`.

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
