//! The faux provider: scripted model replies for tests, with no network.
//!
//! A [`FauxProvider`] answers each call with the next queued [`FauxResponse`], streamed in
//! chunks like a real model (text, thinking and tool-call argument deltas), with usage
//! estimated from the text (four characters a token) unless the script sets it. Queue whole
//! messages, failures before any output, messages that fail half-way, or functions of the
//! request. With a [`FauxHandle`] (tower-test style) a test instead receives each call, looks
//! at its context, and answers it event by event.
//!
//! ```
//! use pi_engine::providers::faux::{FauxProvider, FauxResponse};
//! use pi_engine::{ApiRegistry, Context, StreamOptions, UserMessage};
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::text("Hello from the faux model"));
//!
//! let registry = ApiRegistry::new();
//! registry.register(Arc::new(faux.clone()));
//! let ctx = Context::new().with_message(UserMessage::text("hi"));
//! let reply = registry.stream(&faux.model(), &ctx, &StreamOptions::new()).result().await;
//! assert_eq!(reply.text(), "Hello from the faux model");
//! assert_eq!(faux.requests()[0].context.messages.len(), 1);
//! # }
//! ```

mod handle;
mod provider;
mod response;
mod stream;

pub use handle::{FauxCall, FauxHandle, FauxReply};
pub use provider::{FauxProvider, FauxProviderBuilder};
pub use response::{Chunking, FauxRequest, FauxResponse};

/// The faux provider's default api name.
pub const FAUX_API: &str = "faux";
/// The faux provider's default provider name.
pub const FAUX_PROVIDER: &str = "faux";
/// The id of the default faux model.
pub const FAUX_MODEL_ID: &str = "faux-1";

/// The error text of a call made when no response is queued (pi's wording).
pub const NO_MORE_RESPONSES: &str = "No more faux responses queued";
