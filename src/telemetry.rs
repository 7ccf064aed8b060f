//! Logging: tracing to stderr, as text for people or JSON for log pipelines.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Installs the global subscriber; `RUST_LOG` overrides the default level (info).
pub fn init(format: LogFormat) {
    init_at(format, "info");
}

/// Logging at `default` level unless RUST_LOG says otherwise (the demo keeps the terminal for its own
/// story and logs warnings only).
pub fn init_at(format: LogFormat, default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
