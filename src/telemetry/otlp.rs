//! Spans over OTLP/HTTP (JSON encoding, which every OTLP collector takes at `/v1/traces`),
//! through the OpenTelemetry SDK's batch processor on its own thread. Only in builds with the
//! `otel` feature.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::{Layer, Registry};

pub(super) struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Starts exporting to `<base>/v1/traces` as service `name`; returns the layer that turns
    /// tracing spans into OpenTelemetry spans.
    pub(super) fn start(base: &str, name: &str) -> Result<(Self, Box<dyn Layer<Registry> + Send + Sync>), String> {
        let endpoint = format!("{}/v1/traces", base.trim().trim_end_matches('/'));
        // The exporter's blocking HTTP client must not be made (or dropped) on an async
        // runtime's thread: build it on a plain one.
        let built = std::thread::spawn(move || {
            SpanExporter::builder().with_http().with_protocol(Protocol::HttpJson).with_endpoint(endpoint).build()
        })
        .join()
        .map_err(|_| "the trace exporter could not be built".to_string())?
        .map_err(|e| format!("the trace exporter could not be built: {e}"))?;
        let resource = Resource::builder().with_service_name(name.to_string()).build();
        let provider = SdkTracerProvider::builder().with_batch_exporter(built).with_resource(resource).build();
        let tracer = provider.tracer("butler");
        let layer = tracing_opentelemetry::layer().with_tracer(tracer).boxed();
        Ok((Self { provider }, layer))
    }

    /// Sends what is left and stops the exporter (on a plain thread, as it blocks).
    pub(super) fn shutdown(self) {
        let provider = self.provider;
        let _ = std::thread::spawn(move || {
            if let Err(e) = provider.shutdown() {
                eprintln!("butler: the last traces could not be sent: {e}");
            }
        })
        .join();
    }
}
