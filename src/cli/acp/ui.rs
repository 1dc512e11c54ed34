//! The extension UI of an ACP session: the approval dialogs of extensions (a permission
//! gate's `confirm`, a `select` of choices) become `session/request_permission` to the
//! editor, and a checklist widget (pi's plan-mode todos) becomes the session's plan.

use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol_schema::v1 as acp;
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::peer::Peer;
use crate::extensions::{ExtensionUi, NotifyKind};

/// The ACP session's [`ExtensionUi`].
pub(super) struct AcpUi {
    peer: Arc<Peer>,
    /// Set once the session exists (the UI is built before it).
    session: OnceLock<acp::SessionId>,
    /// The tool call being prepared (its approval is what an extension asks for then).
    current: Arc<Mutex<Option<acp::ToolCall>>>,
    /// Fired by `session/cancel`: open dialogs answer as cancelled.
    cancel: Mutex<CancellationToken>,
    asked: std::sync::atomic::AtomicU64,
}

impl AcpUi {
    pub(super) fn new(peer: Arc<Peer>, current: Arc<Mutex<Option<acp::ToolCall>>>) -> Self {
        AcpUi {
            peer,
            session: OnceLock::new(),
            current,
            cancel: Mutex::new(CancellationToken::new()),
            asked: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub(super) fn bind(&self, session: acp::SessionId) {
        let _ = self.session.set(session);
    }

    /// `session/cancel`: the dialogs open now answer as cancelled; later ones ask again.
    pub(super) fn cancel_dialogs(&self) {
        let mut token = self.cancel.lock().unwrap_or_else(|e| e.into_inner());
        token.cancel();
        *token = CancellationToken::new();
    }

    /// Asks the editor to pick one of `options` about the call being prepared (or, outside
    /// one, about a call made up for the question); `None` when cancelled.
    async fn ask(
        &self,
        title: &str,
        message: Option<&str>,
        options: Vec<acp::PermissionOption>,
    ) -> Option<String> {
        let session = self.session.get()?.clone();
        let subject = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut fields = acp::ToolCallUpdateFields::new().title(title.to_owned());
        if let Some(message) = message.filter(|m| !m.is_empty()) {
            fields = fields.content(vec![acp::ToolCallContent::Content(acp::Content::new(
                acp::ContentBlock::Text(acp::TextContent::new(message)),
            ))]);
        }
        let id = match subject {
            Some(call) => call.tool_call_id,
            None => {
                // A question outside a tool call: the client needs a call to hang it on.
                let n = self
                    .asked
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let id = acp::ToolCallId::new(format!("question-{n}"));
                self.peer.update(
                    &session,
                    acp::SessionUpdate::ToolCall(
                        acp::ToolCall::new(id.clone(), title).kind(acp::ToolKind::Other),
                    ),
                );
                id
            }
        };
        let request = acp::RequestPermissionRequest::new(
            session,
            acp::ToolCallUpdate::new(id, fields),
            options,
        );
        let cancel = self
            .cancel
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let answer = tokio::select! {
            answer = self.peer.request("session/request_permission", request) => answer,
            () = cancel.cancelled() => return None,
        };
        let response: acp::RequestPermissionResponse = match answer {
            Ok(value) => serde_json::from_value(value).ok()?,
            Err(e) => {
                tracing::warn!(error = %e.message, "ACP: a permission request failed");
                return None;
            }
        };
        match response.outcome {
            acp::RequestPermissionOutcome::Selected(selected) => {
                Some(selected.option_id.0.to_string())
            }
            _ => None,
        }
    }
}

fn option(id: &str, name: &str, kind: acp::PermissionOptionKind) -> acp::PermissionOption {
    acp::PermissionOption::new(id.to_owned(), name.to_owned(), kind)
}

/// The kind of a choice an extension offers, from its words ("Allow", "Block", "Yes, always").
fn choice_kind(text: &str) -> acp::PermissionOptionKind {
    let lower = text.to_lowercase();
    let word = |w: &str| lower.split(|c: char| !c.is_alphanumeric()).any(|x| x == w);
    let rejects = [
        "no", "never", "block", "deny", "reject", "cancel", "abort", "stop",
    ]
    .iter()
    .any(|w| word(w))
        || lower.contains("don't");
    match (rejects, word("always") || word("never")) {
        (true, true) => acp::PermissionOptionKind::RejectAlways,
        (true, false) => acp::PermissionOptionKind::RejectOnce,
        (false, true) => acp::PermissionOptionKind::AllowAlways,
        (false, false) => acp::PermissionOptionKind::AllowOnce,
    }
}

#[async_trait]
impl ExtensionUi for AcpUi {
    async fn select(&self, title: &str, options: &[String]) -> Option<String> {
        // Options are offered by index, so two choices with the same words stay apart.
        let offered: Vec<acp::PermissionOption> = options
            .iter()
            .enumerate()
            .map(|(i, o)| option(&i.to_string(), o, choice_kind(o)))
            .collect();
        let picked = self.ask(title, None, offered).await?;
        options.get(picked.parse::<usize>().ok()?).cloned()
    }

    async fn confirm(&self, title: &str, message: &str) -> bool {
        let offered = vec![
            option("allow", "Allow", acp::PermissionOptionKind::AllowOnce),
            option("reject", "Reject", acp::PermissionOptionKind::RejectOnce),
        ];
        self.ask(title, Some(message), offered).await.as_deref() == Some("allow")
    }

    /// ACP v1 has no free-text question: answered as cancelled.
    async fn input(&self, title: &str, _placeholder: Option<&str>) -> Option<String> {
        tracing::debug!(
            title,
            "ACP: input dialogs are not supported; answered as cancelled"
        );
        None
    }

    /// ACP v1 has no editor dialog: answered as cancelled.
    async fn editor(&self, title: &str, _prefill: Option<&str>) -> Option<String> {
        tracing::debug!(
            title,
            "ACP: editor dialogs are not supported; answered as cancelled"
        );
        None
    }

    fn notify(&self, message: &str, kind: Option<NotifyKind>) {
        tracing::info!(message, kind = ?kind, "extension notification");
    }

    fn set_widget(&self, _key: &str, lines: Option<&[String]>) {
        let Some(session) = self.session.get() else {
            return;
        };
        let entries = match lines {
            Some(lines) => match plan_entries(lines) {
                Some(entries) => entries,
                None => return,
            },
            // A checklist taken down: an empty plan.
            None => Vec::new(),
        };
        self.peer
            .update(session, acp::SessionUpdate::Plan(acp::Plan::new(entries)));
    }
}

/// A widget's lines as plan entries, when every line is a checklist item (`☐`/`[ ]`
/// pending, `☑`/`✓`/`[x]` done, `◐`/`[~]` in progress; terminal styling ignored).
fn plan_entries(lines: &[String]) -> Option<Vec<acp::PlanEntry>> {
    if lines.is_empty() {
        return None;
    }
    lines
        .iter()
        .map(|line| {
            let plain = strip_ansi(line);
            let text = plain.trim_start().trim_start_matches("- ");
            let markers: [(&str, acp::PlanEntryStatus); 7] = [
                ("☐", acp::PlanEntryStatus::Pending),
                ("[ ]", acp::PlanEntryStatus::Pending),
                ("☑", acp::PlanEntryStatus::Completed),
                ("✓", acp::PlanEntryStatus::Completed),
                ("[x]", acp::PlanEntryStatus::Completed),
                ("◐", acp::PlanEntryStatus::InProgress),
                ("[~]", acp::PlanEntryStatus::InProgress),
            ];
            markers.into_iter().find_map(|(marker, status)| {
                let rest = text.strip_prefix(marker)?.trim();
                Some(acp::PlanEntry::new(
                    rest.to_owned(),
                    acp::PlanEntryPriority::Medium,
                    status,
                ))
            })
        })
        .collect()
}

/// The text without terminal escape sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.clone().next() == Some('[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_get_kinds_from_their_words() {
        use acp::PermissionOptionKind as K;
        assert_eq!(choice_kind("Allow"), K::AllowOnce);
        assert_eq!(choice_kind("Yes, always"), K::AllowAlways);
        assert_eq!(choice_kind("Block"), K::RejectOnce);
        assert_eq!(choice_kind("No"), K::RejectOnce);
        assert_eq!(choice_kind("Never allow this"), K::RejectAlways);
        assert_eq!(choice_kind("Nothing to add"), K::AllowOnce);
    }

    #[test]
    fn checklists_become_plans_and_other_widgets_do_not() {
        let lines = vec![
            "\u{1b}[32m☑ \u{1b}[39m\u{1b}[9mRead the code\u{1b}[29m".to_owned(),
            "☐ Fix the bug".to_owned(),
            "[~] Test it".to_owned(),
        ];
        let plan = plan_entries(&lines).unwrap();
        let got: Vec<(String, acp::PlanEntryStatus)> = plan
            .iter()
            .map(|e| (e.content.clone(), e.status.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("Read the code".to_owned(), acp::PlanEntryStatus::Completed),
                ("Fix the bug".to_owned(), acp::PlanEntryStatus::Pending),
                ("Test it".to_owned(), acp::PlanEntryStatus::InProgress),
            ]
        );
        assert!(plan_entries(&["Loaded and ready.".to_owned()]).is_none());
        assert!(plan_entries(&[]).is_none());
    }
}
