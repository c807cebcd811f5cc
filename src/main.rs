use std::process::ExitCode;

use clap::Parser;
use kratix::cli::controller::LogFormat;
use kratix::cli::run::{run, Error};
use kratix::cli::{Cli, Command};
use statestores::error_chain::ErrorChain;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let json =
        matches!(&cli.command, Command::Controller(args) if args.log_format == LogFormat::Json);
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KRATIX_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr);
    if json {
        logs.json().init();
    } else {
        // Colours only for a person at a terminal, not in log files.
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    // `diff` exits as `kubectl diff` does: 1 for differences, 2 for errors.
    let failure = match &cli.command {
        Command::Diff { .. } => ExitCode::from(2),
        _ => ExitCode::FAILURE,
    };
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Differences) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {}", ErrorChain(&err));
            failure
        }
    }
}
