//! Writing summaries with a model: compaction summaries (pi's `generateSummary`,
//! `compact`) and the request they send.

use std::fmt;

use futures::StreamExt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::prepare::CompactionPreparation;
use super::prompts::{
    SPLIT_TURN_SEPARATOR, SUMMARIZATION_PROMPT, SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT, UPDATE_SUMMARIZATION_PROMPT,
};
use super::serialize::serialize_conversation;
use crate::agent::{AgentMessage, StreamFn};
use crate::llm::error::{Error, ErrorKind};
use crate::llm::message::{AssistantMessage, Content, Context, StopReason, UserMessage};
use crate::llm::model::Model;
use crate::llm::options::StreamOptions;
use crate::llm::thinking::ThinkingLevel;
use crate::session::convert_to_llm;

/// How summaries are requested: the model, the function that streams its replies, the
/// options of each request (API key, headers, cancellation, retries) and the reasoning level
/// (used only with a reasoning model).
///
/// ```
/// use pi_engine::session::compaction::Summarizer;
/// use pi_engine::providers::faux::FauxProvider;
/// use pi_engine::{ApiProvider, ThinkingLevel};
///
/// let faux = FauxProvider::new();
/// let model = faux.model();
/// let summarizer = Summarizer::new(model)
///     .with_stream_fn(move |m, c, o| faux.stream(m, c, o))
///     .with_thinking_level(ThinkingLevel::High);
/// # let _ = summarizer;
/// ```
#[derive(Clone)]
#[must_use]
pub struct Summarizer {
    model: Model,
    stream: Option<Arc<dyn StreamFn>>,
    options: StreamOptions,
    thinking_level: ThinkingLevel,
}

impl fmt::Debug for Summarizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Summarizer")
            .field("model", &self.model.id)
            .field("options", &self.options)
            .field("thinking_level", &self.thinking_level)
            .finish_non_exhaustive()
    }
}

impl Summarizer {
    /// Summaries by `model`, through the global registry's
    /// [`stream_simple`](crate::stream_simple), without reasoning.
    pub fn new(model: Model) -> Self {
        Summarizer {
            model,
            stream: None,
            options: StreamOptions::new(),
            thinking_level: ThinkingLevel::Off,
        }
    }

    /// Streams replies with `f` instead of the global registry.
    pub fn with_stream_fn(
        self,
        f: impl Fn(&Model, &Context, &StreamOptions) -> crate::llm::AssistantMessageEventStream
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.with_stream_fn_arc(Arc::new(f))
    }

    /// Streams replies with a shared stream function.
    pub fn with_stream_fn_arc(mut self, f: Arc<dyn StreamFn>) -> Self {
        self.stream = Some(f);
        self
    }

    /// The options of every request (`maxTokens` and `reasoning` are set per request).
    pub fn with_options(mut self, options: StreamOptions) -> Self {
        self.options = options;
        self
    }

    /// The reasoning level of requests to a reasoning model.
    pub fn with_thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = level;
        self
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// One request: `prompt` as the only user message under pi's summarization system
    /// prompt.
    pub(crate) async fn complete(
        &self,
        prompt: String,
        max_tokens: u64,
        reasoning: bool,
    ) -> AssistantMessage {
        let context = Context::new()
            .with_system_prompt(SUMMARIZATION_SYSTEM_PROMPT)
            .with_message(UserMessage::blocks(vec![Content::text(prompt)]));
        let mut options = self.options.clone();
        options.max_tokens = Some(max_tokens);
        options.reasoning =
            (reasoning && self.model.reasoning && self.thinking_level != ThinkingLevel::Off)
                .then_some(self.thinking_level);
        let mut stream = match &self.stream {
            Some(f) => f.stream(&self.model, &context, &options),
            None => crate::providers::stream_simple(&self.model, &context, &options),
        };
        // A stream that does not watch the token itself still stops when it is cancelled.
        let cancelled = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let mut cancelled = std::pin::pin!(cancelled);
        loop {
            tokio::select! {
                biased;
                event = stream.next() => {
                    if event.is_none() {
                        break;
                    }
                }
                () = &mut cancelled => {
                    return stream
                        .partial()
                        .clone()
                        .with_error(Error::new(ErrorKind::Aborted, "Request was aborted"));
                }
            }
        }
        stream.result().await
    }
}

/// The text blocks of a reply, joined by line breaks.
pub(crate) fn reply_text(reply: &AssistantMessage) -> String {
    reply
        .content
        .iter()
        .filter_map(|c| match c {
            crate::AssistantContent::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The error of a failed summary request, `what` naming it as pi does.
fn failure(reply: &AssistantMessage, what: &str) -> Option<Error> {
    match reply.stop_reason {
        StopReason::Aborted => Some(Error::new(ErrorKind::Aborted, "Compaction cancelled")),
        StopReason::Error => {
            let cause = reply.error_message.as_deref().unwrap_or("Unknown error");
            let kind = reply.error().map_or(ErrorKind::Provider, |e| e.kind());
            Some(Error::new(kind, format!("{what} failed: {cause}")))
        }
        _ => None,
    }
}

/// The user message of a summary request: the conversation in `<conversation>` tags, the
/// previous summary in `<previous-summary>` tags, then the instructions.
pub(crate) fn summary_prompt(
    messages: &[AgentMessage],
    custom_instructions: Option<&str>,
    previous_summary: Option<&str>,
) -> String {
    let mut instructions = if previous_summary.is_some() {
        UPDATE_SUMMARIZATION_PROMPT.to_owned()
    } else {
        SUMMARIZATION_PROMPT.to_owned()
    };
    if let Some(custom) = custom_instructions.filter(|c| !c.is_empty()) {
        instructions = format!("{instructions}\n\nAdditional focus: {custom}");
    }
    let conversation = serialize_conversation(&convert_to_llm(messages));
    let mut prompt = format!("<conversation>\n{conversation}\n</conversation>\n\n");
    if let Some(previous) = previous_summary {
        prompt.push_str(&format!(
            "<previous-summary>\n{previous}\n</previous-summary>\n\n"
        ));
    }
    prompt.push_str(&instructions);
    prompt
}

/// Summarizes `messages` for a compaction (pi's `generateSummary`): at most
/// `0.8 × reserve_tokens` output tokens; with a previous summary, pi's update prompt merges
/// the new messages into it; custom instructions are added as "Additional focus".
///
/// # Errors
///
/// "Summarization failed: …" when the request fails; kind [`ErrorKind::Aborted`] when it
/// was cancelled.
///
/// # Cancel safety
///
/// Dropping the future drops the request; nothing else happens.
pub async fn generate_summary(
    messages: &[AgentMessage],
    summarizer: &Summarizer,
    reserve_tokens: u64,
    custom_instructions: Option<&str>,
    previous_summary: Option<&str>,
) -> Result<String, Error> {
    let max_tokens = reserve_tokens * 4 / 5;
    let prompt = summary_prompt(messages, custom_instructions, previous_summary);
    let reply = summarizer.complete(prompt, max_tokens, true).await;
    match failure(&reply, "Summarization") {
        Some(e) => Err(e),
        None => Ok(reply_text(&reply)),
    }
}

/// Summarizes the first part of a split turn (at most `0.5 × reserve_tokens` tokens).
async fn generate_turn_prefix_summary(
    messages: &[AgentMessage],
    summarizer: &Summarizer,
    reserve_tokens: u64,
) -> Result<String, Error> {
    let conversation = serialize_conversation(&convert_to_llm(messages));
    let prompt = format!(
        "<conversation>\n{conversation}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}"
    );
    let reply = summarizer.complete(prompt, reserve_tokens / 2, true).await;
    match failure(&reply, "Turn prefix summarization") {
        Some(e) => Err(e),
        None => Ok(reply_text(&reply)),
    }
}

/// What a compaction produced (pi's `CompactionResult`): the entry's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompactionResult {
    /// The summary, file lists appended.
    pub summary: String,
    /// The first entry kept.
    pub first_kept_entry_id: String,
    /// The estimated context size before compaction.
    pub tokens_before: u64,
    /// `{"readFiles": […], "modifiedFiles": […]}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl CompactionResult {
    /// A compaction with `summary` that keeps the entries from `first_kept_entry_id` on
    /// (what an extension's `session_before_compact` handler may provide instead of the
    /// model's summary).
    pub fn new(
        summary: impl Into<String>,
        first_kept_entry_id: impl Into<String>,
        tokens_before: u64,
    ) -> Self {
        CompactionResult {
            summary: summary.into(),
            first_kept_entry_id: first_kept_entry_id.into(),
            tokens_before,
            details: None,
        }
    }

    /// Sets the details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// Writes the summary of a prepared compaction (pi's `compact`): the history and, for a
/// split turn, the turn's first part are summarized concurrently and joined; the file lists
/// are appended and stored in `details`.
///
/// # Errors
///
/// As [`generate_summary`].
///
/// # Cancel safety
///
/// Dropping the future drops the requests; nothing else happens.
pub async fn compact(
    preparation: &CompactionPreparation,
    summarizer: &Summarizer,
    custom_instructions: Option<&str>,
) -> Result<CompactionResult, Error> {
    let p = preparation;
    let reserve = p.settings.reserve_tokens;
    let history = || {
        generate_summary(
            &p.messages_to_summarize,
            summarizer,
            reserve,
            custom_instructions,
            p.previous_summary.as_deref(),
        )
    };
    let mut summary = if p.is_split_turn && !p.turn_prefix_messages.is_empty() {
        let history = async {
            if p.messages_to_summarize.is_empty() {
                Ok("No prior history.".to_owned())
            } else {
                history().await
            }
        };
        let prefix = generate_turn_prefix_summary(&p.turn_prefix_messages, summarizer, reserve);
        let (history, prefix) = futures::join!(history, prefix);
        format!("{}{SPLIT_TURN_SEPARATOR}{}", history?, prefix?)
    } else {
        history().await?
    };
    let lists = p.file_ops.file_lists();
    summary.push_str(&lists.to_summary_text());
    Ok(CompactionResult {
        summary,
        first_kept_entry_id: p.first_kept_entry_id.clone(),
        tokens_before: p.tokens_before,
        details: Some(lists.to_details()),
    })
}
