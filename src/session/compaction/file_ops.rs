//! The files a conversation read and changed, from its `read`, `write` and `edit` tool calls;
//! summaries carry them forward so the model still knows which files it has touched.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::AgentMessage;
use crate::llm::message::AssistantContent;

/// Paths seen in `read`, `write` and `edit` tool calls (pi's `FileOperations`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileOperations {
    /// Paths read.
    pub read: BTreeSet<String>,
    /// Paths written.
    pub written: BTreeSet<String>,
    /// Paths edited.
    pub edited: BTreeSet<String>,
}

/// The file lists a summary records (the `details` of a compaction or branch summary entry).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FileLists {
    /// Files read and not modified, sorted.
    pub read_files: Vec<String>,
    /// Files written or edited, sorted.
    pub modified_files: Vec<String>,
}

impl FileOperations {
    /// No operations.
    pub fn new() -> Self {
        FileOperations::default()
    }

    /// Adds the paths of `message`'s tool calls, if it is an assistant message (pi's
    /// `extractFileOpsFromMessage`).
    pub fn add_message(&mut self, message: &AgentMessage) {
        let AgentMessage::Assistant(a) = message else {
            return;
        };
        for block in &a.content {
            let AssistantContent::ToolCall(call) = block else {
                continue;
            };
            let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
                continue;
            };
            if path.is_empty() {
                continue;
            }
            let set = match call.name.as_str() {
                "read" => &mut self.read,
                "write" => &mut self.written,
                "edit" => &mut self.edited,
                _ => continue,
            };
            set.insert(path.to_owned());
        }
    }

    /// Adds the lists a previous summary recorded in its `details` (read files as read,
    /// modified files as edited), when `details` has pi's shape.
    pub fn add_details(&mut self, details: Option<&Value>) {
        let Some(details) = details else { return };
        let strings = |key: &str| -> Vec<String> {
            details
                .get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        self.read.extend(strings("readFiles"));
        self.edited.extend(strings("modifiedFiles"));
    }

    /// Read-only files and modified files, each sorted (pi's `computeFileLists`).
    pub fn file_lists(&self) -> FileLists {
        let modified: BTreeSet<&String> = self.edited.iter().chain(&self.written).collect();
        FileLists {
            read_files: self
                .read
                .iter()
                .filter(|f| !modified.contains(f))
                .cloned()
                .collect(),
            modified_files: modified.into_iter().cloned().collect(),
        }
    }
}

impl FileLists {
    /// The text appended to a summary (pi's `formatFileOperations`): `<read-files>` and
    /// `<modified-files>` sections, or nothing when both lists are empty.
    ///
    /// ```
    /// use pi_engine::session::compaction::FileOperations;
    /// use pi_engine::{AssistantContent, AssistantMessage};
    /// use serde_json::json;
    ///
    /// let mut ops = FileOperations::new();
    /// ops.add_message(&AssistantMessage::new("a", "p", "m").with_content(vec![
    ///     AssistantContent::tool_call("1", "read", json!({"path": "src/lib.rs"})),
    ///     AssistantContent::tool_call("2", "edit", json!({"path": "src/main.rs"})),
    /// ]).into());
    /// assert_eq!(
    ///     ops.file_lists().to_summary_text(),
    ///     "\n\n<read-files>\nsrc/lib.rs\n</read-files>\n\n<modified-files>\nsrc/main.rs\n</modified-files>"
    /// );
    /// ```
    pub fn to_summary_text(&self) -> String {
        let mut sections = Vec::new();
        if !self.read_files.is_empty() {
            sections.push(format!(
                "<read-files>\n{}\n</read-files>",
                self.read_files.join("\n")
            ));
        }
        if !self.modified_files.is_empty() {
            sections.push(format!(
                "<modified-files>\n{}\n</modified-files>",
                self.modified_files.join("\n")
            ));
        }
        if sections.is_empty() {
            String::new()
        } else {
            format!("\n\n{}", sections.join("\n\n"))
        }
    }

    /// As the `details` JSON of an entry: `{"readFiles": […], "modifiedFiles": […]}`.
    pub fn to_details(&self) -> Value {
        serde_json::json!({"readFiles": self.read_files, "modifiedFiles": self.modified_files})
    }
}
