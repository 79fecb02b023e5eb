use clap::Parser;

fn main() -> std::process::ExitCode {
    flowbroker::cli::run(flowbroker::cli::Cli::parse())
}
