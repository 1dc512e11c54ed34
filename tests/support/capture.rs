//! A `tracing` subscriber that keeps every event logged on this thread as one line,
//! `LEVEL target field=value …` (no subscriber crate needed). Included with
//! `#[path = "support/capture.rs"] mod capture;` by the tests that check what is logged.

use std::sync::{Arc, Mutex};

/// Collects the events logged while it is the thread's default subscriber.
pub(crate) struct Capture {
    logged: Arc<Mutex<Vec<String>>>,
}

impl Capture {
    /// The subscriber, and the lines it collects.
    pub(crate) fn new() -> (Self, Arc<Mutex<Vec<String>>>) {
        let logged = Arc::new(Mutex::new(Vec::new()));
        (
            Capture {
                logged: logged.clone(),
            },
            logged,
        )
    }
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let meta = event.metadata();
        let mut fields = Fields(format!("{} {} ", meta.level(), meta.target()));
        event.record(&mut fields);
        self.logged.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
