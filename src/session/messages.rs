//! The session layer's own message roles and what the model sees of them.
//!
//! pi's coding agent adds four roles to the agent's messages. Here they are typed custom
//! messages of the agent layer ([`CustomMessageType`]), so an agent can carry them in its
//! history, and [`convert_to_llm`] turns a history into the LLM messages pi would send —
//! with exactly pi's texts:
//!
//! | role | what the model sees |
//! |---|---|
//! | `bashExecution` ([`BashExecutionMessage`]) | a user text ``Ran `cmd` `` + the fenced output; nothing when `excludeFromContext` |
//! | `custom` ([`ExtensionMessage`]) | a user message with the same content |
//! | `compactionSummary` ([`CompactionSummaryMessage`]) | the summary wrapped in [`COMPACTION_SUMMARY_PREFIX`] / [`COMPACTION_SUMMARY_SUFFIX`] |
//! | `branchSummary` ([`BranchSummaryMessage`]) | the summary wrapped in [`BRANCH_SUMMARY_PREFIX`] / [`BRANCH_SUMMARY_SUFFIX`] |
//!
//! ```
//! use pi_engine::agent::AgentMessage;
//! use pi_engine::session::{convert_to_llm, BashExecutionMessage};
//! use pi_engine::llm::{Message, UserContent};
//!
//! let bash = BashExecutionMessage::new("ls", "a.txt", Some(0));
//! let history = vec![AgentMessage::custom(&bash).unwrap()];
//! let llm = convert_to_llm(&history);
//! let Message::User(user) = &llm[0] else { unreachable!() };
//! assert_eq!(user.content.text(), "Ran `ls`\n```\na.txt\n```");
//! ```

use serde::{Deserialize, Serialize};

use crate::agent::{AgentMessage, CustomMessage, CustomMessageType};
use crate::llm::message::{Content, Extra, Message, UserContent, UserMessage, now_millis};

/// Opens the text a compaction summary is sent as.
pub const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// Closes the text a compaction summary is sent as.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Opens the text a branch summary is sent as.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// Closes the text a branch summary is sent as. Unlike the compaction suffix it has no line
/// break before `</summary>`: that is pi's text, kept so prompts are identical.
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// A shell command the user ran (pi's `!cmd`; `!!cmd` sets `exclude_from_context`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BashExecutionMessage {
    /// The command line.
    pub command: String,
    /// Its output (possibly truncated).
    pub output: String,
    /// The exit code; `None` when it did not exit normally.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// True when the user cancelled it.
    #[serde(default)]
    pub cancelled: bool,
    /// True when `output` was truncated.
    #[serde(default)]
    pub truncated: bool,
    /// Where the full output was saved, when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// True to keep it out of the model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl BashExecutionMessage {
    /// A command that ran, stamped now.
    pub fn new(
        command: impl Into<String>,
        output: impl Into<String>,
        exit_code: Option<i64>,
    ) -> Self {
        BashExecutionMessage {
            command: command.into(),
            output: output.into(),
            exit_code,
            cancelled: false,
            truncated: false,
            full_output_path: None,
            exclude_from_context: None,
            timestamp: now_millis(),
            extra: Extra::new(),
        }
    }

    /// The text the model sees (pi's `bashExecutionToText`). The output is not trimmed.
    pub fn to_text(&self) -> String {
        let mut text = format!("Ran `{}`\n", self.command);
        if self.output.is_empty() {
            text.push_str("(no output)");
        } else {
            text.push_str("```\n");
            text.push_str(&self.output);
            text.push_str("\n```");
        }
        if self.cancelled {
            text.push_str("\n\n(command cancelled)");
        } else if let Some(code) = self.exit_code.filter(|c| *c != 0) {
            text.push_str(&format!("\n\nCommand exited with code {code}"));
        }
        if self.truncated
            && let Some(path) = &self.full_output_path
        {
            text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
        }
        text
    }
}

impl CustomMessageType for BashExecutionMessage {
    const ROLE: &'static str = "bashExecution";
}

/// A message an extension adds to the conversation (pi's role `custom`); the model sees its
/// content as a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExtensionMessage {
    /// The extension's identifier.
    pub custom_type: String,
    /// What the model sees.
    pub content: UserContent,
    /// Whether a UI shows it.
    #[serde(default)]
    pub display: bool,
    /// Application data, not sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ExtensionMessage {
    /// A message of extension `custom_type`, stamped now.
    pub fn new(
        custom_type: impl Into<String>,
        content: impl Into<UserContent>,
        display: bool,
    ) -> Self {
        ExtensionMessage {
            custom_type: custom_type.into(),
            content: content.into(),
            display,
            details: None,
            timestamp: now_millis(),
            extra: Extra::new(),
        }
    }
}

impl CustomMessageType for ExtensionMessage {
    const ROLE: &'static str = "custom";
}

/// The summary that replaced compacted history, as the context shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompactionSummaryMessage {
    /// The summary.
    pub summary: String,
    /// Estimated context tokens before compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl CompactionSummaryMessage {
    /// A summary, stamped `timestamp`.
    pub fn new(summary: impl Into<String>, tokens_before: u64, timestamp: i64) -> Self {
        CompactionSummaryMessage {
            summary: summary.into(),
            tokens_before,
            timestamp,
            extra: Extra::new(),
        }
    }
}

impl CustomMessageType for CompactionSummaryMessage {
    const ROLE: &'static str = "compactionSummary";
}

/// The summary of a branch the conversation came back from, as the context shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BranchSummaryMessage {
    /// The summary.
    pub summary: String,
    /// The leaf of the abandoned branch, or `"root"`.
    pub from_id: String,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl BranchSummaryMessage {
    /// A summary, stamped `timestamp`.
    pub fn new(summary: impl Into<String>, from_id: impl Into<String>, timestamp: i64) -> Self {
        BranchSummaryMessage {
            summary: summary.into(),
            from_id: from_id.into(),
            timestamp,
            extra: Extra::new(),
        }
    }
}

impl CustomMessageType for BranchSummaryMessage {
    const ROLE: &'static str = "branchSummary";
}

fn user_text(text: String, timestamp: i64) -> Message {
    Message::User(UserMessage::blocks(vec![Content::text(text)]).with_timestamp(timestamp))
}

fn typed<T: CustomMessageType>(custom: &CustomMessage) -> Option<T> {
    match serde_json::from_value(serde_json::Value::Object(custom.fields().clone())) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(role = custom.role(), error = %e, "malformed session message left out of the LLM context");
            None
        }
    }
}

/// What the model sees of one message (pi's `convertToLlm` for one element): the LLM roles
/// unchanged, the session roles as user messages, `None` for a `bashExecution` excluded from
/// context and for custom roles the session layer does not know.
pub fn to_llm(message: &AgentMessage) -> Option<Message> {
    let custom = match message {
        AgentMessage::Custom(c) => c,
        other => return other.to_message(),
    };
    let timestamp = custom.timestamp().unwrap_or(0);
    match custom.role() {
        BashExecutionMessage::ROLE => {
            let bash: BashExecutionMessage = typed(custom)?;
            if bash.exclude_from_context == Some(true) {
                return None;
            }
            Some(user_text(bash.to_text(), timestamp))
        }
        ExtensionMessage::ROLE => {
            let ext: ExtensionMessage = typed(custom)?;
            let blocks = match ext.content {
                UserContent::Text(s) => vec![Content::text(s)],
                UserContent::Blocks(b) => b,
            };
            Some(Message::User(
                UserMessage::blocks(blocks).with_timestamp(timestamp),
            ))
        }
        BranchSummaryMessage::ROLE => {
            let b: BranchSummaryMessage = typed(custom)?;
            Some(user_text(
                format!(
                    "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                    b.summary
                ),
                timestamp,
            ))
        }
        CompactionSummaryMessage::ROLE => {
            let c: CompactionSummaryMessage = typed(custom)?;
            Some(user_text(
                format!(
                    "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
                    c.summary
                ),
                timestamp,
            ))
        }
        _ => None,
    }
}

/// Turns an agent history into the messages sent to the model, as pi's coding agent does
/// (`convertToLlm`): see the [session layer docs](crate::session#messages) for each role.
pub fn convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages.iter().filter_map(to_llm).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_of(m: &Message) -> String {
        let Message::User(u) = m else {
            panic!("not a user message")
        };
        u.content.text()
    }

    #[test]
    fn bash_texts_match_pi() {
        let mut b = BashExecutionMessage::new("ls", "", Some(0));
        assert_eq!(b.to_text(), "Ran `ls`\n(no output)");
        b.output = "x\n".into();
        b.exit_code = Some(2);
        assert_eq!(
            b.to_text(),
            "Ran `ls`\n```\nx\n\n```\n\nCommand exited with code 2"
        );
        b.cancelled = true;
        b.truncated = true;
        b.full_output_path = Some("/tmp/o".into());
        assert_eq!(
            b.to_text(),
            "Ran `ls`\n```\nx\n\n```\n\n(command cancelled)\n\n[Output truncated. Full output: /tmp/o]"
        );
        b.exclude_from_context = Some(true);
        assert!(to_llm(&AgentMessage::custom(&b).unwrap()).is_none());
    }

    #[test]
    fn summaries_and_custom() {
        let c = AgentMessage::custom(&CompactionSummaryMessage::new("S", 5, 7)).unwrap();
        let m = to_llm(&c).unwrap();
        assert_eq!(m.timestamp(), 7);
        assert_eq!(
            text_of(&m),
            format!("{COMPACTION_SUMMARY_PREFIX}S\n</summary>")
        );
        let b = AgentMessage::custom(&BranchSummaryMessage::new("B", "root", 1)).unwrap();
        assert!(text_of(&to_llm(&b).unwrap()).ends_with("B</summary>"));
        let e = AgentMessage::custom(&ExtensionMessage::new("x", "hello", false)).unwrap();
        let Message::User(u) = to_llm(&e).unwrap() else {
            panic!()
        };
        assert_eq!(
            serde_json::to_value(&u.content).unwrap(),
            json!([{"type":"text","text":"hello"}])
        );
        let unknown: AgentMessage =
            serde_json::from_value(json!({"role":"note","timestamp":1})).unwrap();
        assert!(to_llm(&unknown).is_none());
        let user: AgentMessage =
            serde_json::from_value(json!({"role":"user","content":"hi","timestamp":1})).unwrap();
        assert_eq!(convert_to_llm(&[user, unknown]).len(), 1);
    }
}
