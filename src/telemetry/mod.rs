//! Logs and traces of the process: the one tracing subscriber, writing lines for people or one
//! JSON object per line (`[log] format`), and, in a build with the `otel` feature, exporting
//! every span over OTLP/HTTP (`[log] otlp_endpoint`): the span of an event's job, its turn, and
//! the model and tool calls inside it, each carrying the event id.
//!
//! Set up once by the binary; the returned [`Telemetry`] flushes the traces when dropped. Must
//! never log a secret (spans carry ids and names, never message text or keys).

mod config;
#[cfg(feature = "otel")]
mod otlp;

pub use config::check_config;

use crate::config::{LogConfig, LogFormat};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// The default filter when `RUST_LOG` is unset.
const DEFAULT_FILTER: &str = "info,sqlx=warn,hyper=warn";

/// Keeps the trace exporter alive; dropping it sends what is left.
#[derive(Default)]
pub struct Telemetry {
    #[cfg(feature = "otel")]
    traces: Option<otlp::Traces>,
}

/// Where log lines go.
pub enum Sink {
    /// Standard error; `colour` for a terminal.
    Stderr { colour: bool },
    /// A file (the terminal chat keeps stderr for the conversation).
    File(std::fs::File),
}

/// Installs the subscriber for `cfg` writing to `sink`. A second call (tests) changes nothing.
pub fn init(cfg: &LogConfig, sink: Sink) -> Telemetry {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let fmt = tracing_subscriber::fmt::layer();
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match (cfg.format, sink) {
        (LogFormat::Json, Sink::Stderr { .. }) => {
            fmt.json().with_current_span(true).with_span_list(true).with_writer(std::io::stderr).boxed()
        }
        (LogFormat::Json, Sink::File(f)) => {
            fmt.json().with_current_span(true).with_span_list(true).with_writer(std::sync::Mutex::new(f)).boxed()
        }
        (LogFormat::Text, Sink::Stderr { colour }) => fmt.with_ansi(colour).with_writer(std::io::stderr).boxed(),
        (LogFormat::Text, Sink::File(f)) => fmt.with_ansi(false).with_writer(std::sync::Mutex::new(f)).boxed(),
    };
    let telemetry = Telemetry::default();
    #[cfg(feature = "otel")]
    let (telemetry, traces) = match cfg.otlp_endpoint.as_deref().map(|url| otlp::Traces::start(url, &cfg.service_name))
    {
        Some(Ok((traces, layer))) => (Telemetry { traces: Some(traces) }, Some(layer)),
        Some(Err(e)) => {
            eprintln!("butler: traces are off: {e}");
            (telemetry, None)
        }
        None => (telemetry, None),
    };
    #[cfg(not(feature = "otel"))]
    let traces: Option<Box<dyn Layer<Registry> + Send + Sync>> = None;
    let _ = tracing_subscriber::registry().with(lines.and_then(traces).with_filter(filter)).try_init();
    telemetry
}

impl Telemetry {
    /// Sends the traces not sent yet (also done on drop).
    pub fn flush(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(t) = self.traces.take() {
            t.shutdown();
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.flush();
    }
}
