use std::process::ExitCode;

use clap::Parser;
use kratix::cli::controller::LogFormat;
use kratix::cli::run::{run, Error};
use kratix::cli::{Cli, Command};
use statestores::error_chain::ErrorChain;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args_os().nth(1).as_deref() == Some(kratix::cli::completion::COMPLETE.as_ref()) {
        let words: Vec<String> = std::env::args_os()
            .skip(2)
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        return kratix::cli::completion::complete(&words).await;
    }
    let cli = Cli::parse();
    let json = match &cli.command {
        Command::Controller(args) => args.log_format == LogFormat::Json,
        Command::Serve { log_format, .. } => *log_format == LogFormat::Json,
        _ => false,
    };
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KRATIX_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr);
    if json {
        // A line logged inside spans (a reconcile's: the object and why it was queued) carries
        // them: the innermost as `span`, all of them, outermost first, as `spans`, so that the
        // reconcile's fields are there even under a span of its own (a state store's write).
        logs.json()
            .with_current_span(true)
            .with_span_list(true)
            .init();
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
