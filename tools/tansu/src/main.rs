//! The tansu command line (`tansu broker ...`) with the sqlite and slatedb storage engines.

use tansu_broker::{TracingFormat, otel};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _guard = otel::init(TracingFormat::Text)?;
    let code = tansu_cli::Cli::main().await?;
    eprintln!("tansu: {code}");
    Ok(())
}
