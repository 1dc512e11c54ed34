//! A scripted reply streamed as a model would: chunked deltas, paced, with usage estimated
//! from the text.

use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::Stream;
use serde_json::Map;
use tokio_util::sync::CancellationToken;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, StopReason, ThinkingContent,
    Usage, UserContent,
};
use crate::llm::options::StreamOptions;
use crate::providers::faux::Chunking;

/// Cuts text into deltas.
#[derive(Debug, Clone)]
pub(super) struct Chunker {
    chunking: Chunking,
    rng: u64,
}

impl Chunker {
    pub(super) fn new(chunking: Chunking, stream_index: u64) -> Self {
        let seed = match chunking {
            Chunking::Tokens { seed, .. } => seed,
            _ => 0,
        };
        Chunker {
            chunking,
            rng: (seed ^ stream_index.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1,
        }
    }

    /// Size in characters of the next chunk.
    fn next_chars(&mut self) -> usize {
        match self.chunking {
            Chunking::Chars(n) => n.max(1),
            Chunking::Whole => usize::MAX,
            Chunking::Tokens { min, max, .. } => {
                let (min, max) = (min.max(1), max.max(min.max(1)));
                // xorshift64: deterministic and dependency-free.
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                let span = (max - min + 1) as u64;
                (min + (self.rng % span) as usize) * 4
            }
        }
    }

    /// Byte length of the next chunk of `text` (never splits a character; at least one
    /// character when `text` is not empty).
    fn next_len(&mut self, text: &str) -> usize {
        let chars = self.next_chars();
        if chars >= text.len() {
            return text.len();
        }
        text.char_indices()
            .nth(chars)
            .map(|(i, _)| i)
            .unwrap_or(text.len())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Nothing sent yet.
    Begin,
    /// Block `index` is next to start.
    BlockStart(usize),
    /// Streaming block `index` from byte `offset` of its delta text.
    Deltas(usize, usize),
    /// Block `index` sent all its deltas.
    BlockEnd(usize),
    /// All blocks sent; the terminal event is next.
    Finish,
    /// Ended.
    Ended,
}

/// Streams a scripted message: one event per poll, checking cancellation before each.
pub(super) struct FauxStream {
    pub(super) message: AssistantMessage,
    pub(super) cancel: CancellationToken,
    pub(super) chunker: Chunker,
    pub(super) tps: Option<f64>,
    pub(super) sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    pub(super) phase: Phase,
    /// The serialized arguments of the tool call being streamed.
    pub(super) args_text: Option<String>,
}

impl FauxStream {
    /// Prepares the delta text of block `index` (tool arguments are serialized once).
    fn begin_block(&mut self, index: usize) {
        self.args_text = match &self.message.content[index] {
            AssistantContent::ToolCall(c) => {
                Some(serde_json::to_string(&c.arguments).unwrap_or_else(|_| "{}".into()))
            }
            _ => None,
        };
    }

    /// The message as streamed so far, marked aborted.
    fn aborted(&mut self) -> AssistantMessageEvent {
        let (done_blocks, partial) = match self.phase {
            Phase::Begin | Phase::BlockStart(_) | Phase::Finish | Phase::Ended => {
                let n = match self.phase {
                    Phase::BlockStart(i) => i,
                    Phase::Begin => 0,
                    _ => self.message.content.len(),
                };
                (n, None)
            }
            Phase::Deltas(i, off) => (i, Some((i, off))),
            Phase::BlockEnd(i) => (i, Some((i, usize::MAX))),
        };
        let mut content: Vec<AssistantContent> = self.message.content[..done_blocks].to_vec();
        if let Some((i, off)) = partial {
            content.push(match &self.message.content[i] {
                AssistantContent::Text(t) => {
                    AssistantContent::text(t.text[..off.min(t.text.len())].to_owned())
                }
                AssistantContent::Thinking(t) => AssistantContent::Thinking(ThinkingContent::new(
                    t.thinking[..off.min(t.thinking.len())].to_owned(),
                )),
                AssistantContent::ToolCall(c) => {
                    let mut call = c.clone();
                    if off != usize::MAX {
                        call.arguments = Map::new();
                    }
                    AssistantContent::ToolCall(call)
                }
                block @ AssistantContent::Unknown(_) => block.clone(),
            });
        }
        let mut message = std::mem::replace(&mut self.message, AssistantMessage::new("", "", ""));
        message.content = content;
        message.set_error(Error::new(ErrorKind::Aborted, "Request was aborted"));
        self.phase = Phase::Ended;
        AssistantMessageEvent::Error {
            reason: StopReason::Aborted,
            error: Box::new(message),
        }
    }

    fn finish(&mut self) -> AssistantMessageEvent {
        self.phase = Phase::Ended;
        let mut message = std::mem::replace(&mut self.message, AssistantMessage::new("", "", ""));
        match &message.stop_reason {
            StopReason::Error | StopReason::Aborted => {
                let text = message
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "Faux error".to_owned());
                let error = if message.stop_reason == StopReason::Aborted {
                    Error::new(ErrorKind::Aborted, text)
                } else {
                    Error::from_message(text)
                };
                message.set_error(error);
                AssistantMessageEvent::Error {
                    reason: message.stop_reason.clone(),
                    error: Box::new(message),
                }
            }
            _ => AssistantMessageEvent::Done {
                reason: message.stop_reason.clone(),
                message: Box::new(message),
            },
        }
    }

    fn step(&mut self) -> AssistantMessageEvent {
        use AssistantMessageEvent as E;
        match self.phase {
            Phase::Begin => {
                self.phase = if self.message.content.is_empty() {
                    Phase::Finish
                } else {
                    Phase::BlockStart(0)
                };
                E::Start
            }
            Phase::BlockStart(i) => {
                self.phase = Phase::Deltas(i, 0);
                self.begin_block(i);
                match &self.message.content[i] {
                    AssistantContent::Text(_) => E::TextStart { content_index: i },
                    AssistantContent::Thinking(_) => E::ThinkingStart { content_index: i },
                    AssistantContent::ToolCall(c) => E::ToolcallStart {
                        content_index: i,
                        id: c.id.clone(),
                        tool_name: c.name.clone(),
                    },
                    AssistantContent::Unknown(_) => {
                        unreachable!("drop_unknown_blocks removed it before streaming")
                    }
                }
            }
            Phase::Deltas(i, off) => {
                let text: &str = match (&self.message.content[i], &self.args_text) {
                    (AssistantContent::Text(t), _) => &t.text,
                    (AssistantContent::Thinking(t), _) => &t.thinking,
                    (AssistantContent::ToolCall(_), Some(args)) => args,
                    (AssistantContent::ToolCall(_), None) => "{}",
                    (AssistantContent::Unknown(_), _) => "",
                };
                let rest = &text[off..];
                let len = self.chunker.next_len(rest);
                let delta = rest[..len].to_owned();
                let end = off + len;
                let finished = end >= text.len();
                self.phase = if finished {
                    Phase::BlockEnd(i)
                } else {
                    Phase::Deltas(i, end)
                };
                match &self.message.content[i] {
                    AssistantContent::Text(_) => E::TextDelta {
                        content_index: i,
                        delta,
                    },
                    AssistantContent::Thinking(_) => E::ThinkingDelta {
                        content_index: i,
                        delta,
                    },
                    AssistantContent::ToolCall(_) => E::ToolcallDelta {
                        content_index: i,
                        delta,
                    },
                    AssistantContent::Unknown(_) => {
                        unreachable!("drop_unknown_blocks removed it before streaming")
                    }
                }
            }
            Phase::BlockEnd(i) => {
                self.phase = if i + 1 < self.message.content.len() {
                    Phase::BlockStart(i + 1)
                } else {
                    Phase::Finish
                };
                match &self.message.content[i] {
                    AssistantContent::Text(t) => E::TextEnd {
                        content_index: i,
                        content: t.text.clone(),
                    },
                    AssistantContent::Thinking(t) => E::ThinkingEnd {
                        content_index: i,
                        content: t.thinking.clone(),
                    },
                    AssistantContent::ToolCall(c) => E::ToolcallEnd {
                        content_index: i,
                        tool_call: c.clone(),
                    },
                    AssistantContent::Unknown(_) => {
                        unreachable!("drop_unknown_blocks removed it before streaming")
                    }
                }
            }
            Phase::Finish => self.finish(),
            Phase::Ended => unreachable!("step is not called after the end"),
        }
    }

    /// The pacing delay before the event the current phase produces next.
    fn pace(&self) -> Option<Duration> {
        let tps = self.tps?;
        match self.phase {
            Phase::Deltas(..) => Some(Duration::from_secs_f64(1.0 / tps)),
            _ => None,
        }
    }
}

impl Stream for FauxStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.phase == Phase::Ended {
            return Poll::Ready(None);
        }
        // pi checks the signal before every event, including the first.
        if this.cancel.is_cancelled() {
            this.sleep = None;
            return Poll::Ready(Some(this.aborted()));
        }
        if this.sleep.is_none()
            && let Some(delay) = this.pace()
        {
            this.sleep = Some(Box::pin(tokio::time::sleep(delay)));
        }
        if let Some(sleep) = &mut this.sleep {
            if sleep.as_mut().poll(cx).is_pending() {
                // Wake on cancellation too, so an abort is not delayed by pacing.
                let cancelled = {
                    let fut = this.cancel.cancelled();
                    futures::pin_mut!(fut);
                    fut.poll(cx).is_ready()
                };
                if cancelled {
                    this.sleep = None;
                    return Poll::Ready(Some(this.aborted()));
                }
                return Poll::Pending;
            }
            this.sleep = None;
        }
        Poll::Ready(Some(this.step()))
    }
}

/// pi's usage estimate: four characters a token over a text rendering of the prompt and the
/// reply, with cache reads and writes simulated per session id by common prefix.
pub(super) fn estimate_usage(
    message: &AssistantMessage,
    context: &Context,
    options: &StreamOptions,
    cache: &mut HashMap<String, String>,
) -> Usage {
    let prompt = serialize_context(context);
    let prompt_tokens = estimate_tokens(&prompt);
    let output = estimate_tokens(&assistant_text(&message.content));
    let (mut input, mut cache_read, mut cache_write) = (prompt_tokens, 0, 0);
    if let Some(session) = &options.session_id
        && options.cache_retention != Some(crate::llm::options::CacheRetention::None)
    {
        if let Some(previous) = cache.get(session) {
            let common = common_prefix_chars(previous, &prompt);
            let split = prompt
                .char_indices()
                .nth(common)
                .map(|(i, _)| i)
                .unwrap_or(prompt.len());
            cache_read = estimate_tokens(&prompt[..split]);
            cache_write = estimate_tokens(&prompt[split..]);
            input = prompt_tokens.saturating_sub(cache_read);
        } else {
            cache_write = prompt_tokens;
        }
        cache.insert(session.clone(), prompt);
    }
    Usage::new(input, output, cache_read, cache_write)
}

fn estimate_tokens(text: &str) -> u64 {
    (text.encode_utf16().count() as u64).div_ceil(4)
}

fn common_prefix_chars(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

fn content_text(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(t.text.clone()),
            Content::Image(i) => Some(format!("[image:{}:{}]", i.mime_type, i.data.len())),
            Content::Unknown(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assistant_text(content: &[AssistantContent]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::Text(t) => Some(t.text.clone()),
            AssistantContent::Thinking(t) => Some(t.thinking.clone()),
            AssistantContent::ToolCall(c) => Some(format!(
                "{}:{}",
                c.name,
                serde_json::to_string(&c.arguments).unwrap_or_default()
            )),
            AssistantContent::Unknown(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn serialize_context(context: &Context) -> String {
    let mut parts = Vec::new();
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        parts.push(format!("system:{system}"));
    }
    for message in &context.messages {
        let text = match message {
            Message::User(u) => match &u.content {
                UserContent::Text(s) => s.clone(),
                UserContent::Blocks(b) => content_text(b),
            },
            Message::Assistant(a) => assistant_text(&a.content),
            Message::ToolResult(r) => {
                let mut lines = vec![r.tool_name.clone()];
                lines.extend(
                    r.content
                        .iter()
                        .map(|c| content_text(std::slice::from_ref(c))),
                );
                lines.join("\n")
            }
        };
        parts.push(format!("{}:{text}", message.role()));
    }
    if let Some(tools) = context.tools.as_ref().filter(|t| !t.is_empty()) {
        parts.push(format!(
            "tools:{}",
            serde_json::to_string(tools).unwrap_or_default()
        ));
    }
    parts.join("\n\n")
}
