//! [`ExtensionUi`]: what a front end offers extensions — dialogs, notifications, status,
//! widgets — and [`NoUi`], the answer of a mode without one.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::deadline::UiClock;

/// The kind of a notification (pi's `"info" | "warning" | "error"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum NotifyKind {
    /// Information.
    #[default]
    Info,
    /// A warning.
    Warning,
    /// An error.
    Error,
}

impl NotifyKind {
    /// pi's name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyKind::Info => "info",
            NotifyKind::Warning => "warning",
            NotifyKind::Error => "error",
        }
    }
}

/// How a dialog is asked (pi's `ExtensionUIDialogOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DialogOptions {
    /// How long the extension waits for the answer; a front end may show it (pi's RPC mode
    /// sends it as `timeout`, in milliseconds). The extension's side enforces it.
    pub timeout: Option<Duration>,
}

impl DialogOptions {
    /// No timeout.
    pub fn new() -> Self {
        DialogOptions::default()
    }

    /// Sets the timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// What a front end offers extensions (pi's `ExtensionUIContext`): dialogs that wait for a
/// person, and displays that do not. A terminal UI, an RPC mode (which turns each call into
/// an `extension_ui_request` line) or a test's script implements it.
///
/// Dialogs return `None` (or `false`) when the person cancels. The time a dialog waits
/// does not count against the deadline of the handler that asked; an extension that wants
/// one passes a timeout (see [`Ui::select_with_timeout`]).
///
/// Every method but the dialogs has a default that does nothing, so an implementation
/// only writes what its front end shows.
#[async_trait]
pub trait ExtensionUi: Send + Sync + 'static {
    /// Whether a person is there to answer (pi's `ctx.hasUI`). Default: true.
    fn has_ui(&self) -> bool {
        true
    }

    /// Asks to choose one of `options`; `None` when cancelled.
    async fn select(&self, title: &str, options: &[String]) -> Option<String>;

    /// Asks yes or no; `false` when cancelled.
    async fn confirm(&self, title: &str, message: &str) -> bool;

    /// Asks for a line of text; `None` when cancelled.
    async fn input(&self, title: &str, placeholder: Option<&str>) -> Option<String>;

    /// Asks for a longer text, starting from `prefill`; `None` when cancelled.
    async fn editor(&self, title: &str, prefill: Option<&str>) -> Option<String>;

    /// [`select`](Self::select) with the dialog's options (its timeout, which the caller
    /// enforces); a front end that shows them overrides it. Default: `select`.
    async fn select_with(
        &self,
        title: &str,
        options: &[String],
        _dialog: DialogOptions,
    ) -> Option<String> {
        self.select(title, options).await
    }

    /// [`confirm`](Self::confirm) with the dialog's options. Default: `confirm`.
    async fn confirm_with(&self, title: &str, message: &str, _dialog: DialogOptions) -> bool {
        self.confirm(title, message).await
    }

    /// [`input`](Self::input) with the dialog's options. Default: `input`.
    async fn input_with(
        &self,
        title: &str,
        placeholder: Option<&str>,
        _dialog: DialogOptions,
    ) -> Option<String> {
        self.input(title, placeholder).await
    }

    /// Shows a notification; `kind` is `None` when the extension gave none (pi's
    /// `notify(message)`, which its RPC mode sends without `notifyType`; show it as
    /// information).
    fn notify(&self, _message: &str, _kind: Option<NotifyKind>) {}

    /// Sets (or with `None` clears) the status text under `key`.
    fn set_status(&self, _key: &str, _text: Option<&str>) {}

    /// Sets (or with `None` removes) the widget under `key`: lines shown near the editor.
    fn set_widget(&self, _key: &str, _lines: Option<&[String]>) {}

    /// Sets the window or terminal title.
    fn set_title(&self, _title: &str) {}

    /// Replaces the text in the input editor.
    fn set_editor_text(&self, _text: &str) {}

    /// The text in the input editor. Default: empty.
    fn editor_text(&self) -> String {
        String::new()
    }
}

/// The UI of a mode without one (pi's print and JSON modes): `has_ui` is false, dialogs
/// answer at once as cancelled (`select`, `input`, `editor`: `None`; `confirm`: `false`),
/// and every call is logged (`tracing`, target `pi_engine::extensions`, level debug) so it
/// is not lost silently.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoUi;

#[async_trait]
impl ExtensionUi for NoUi {
    fn has_ui(&self) -> bool {
        false
    }
    async fn select(&self, title: &str, _options: &[String]) -> Option<String> {
        tracing::debug!(target: "pi_engine::extensions", title, "select without a UI");
        None
    }
    async fn confirm(&self, title: &str, _message: &str) -> bool {
        tracing::debug!(target: "pi_engine::extensions", title, "confirm without a UI");
        false
    }
    async fn input(&self, title: &str, _placeholder: Option<&str>) -> Option<String> {
        tracing::debug!(target: "pi_engine::extensions", title, "input without a UI");
        None
    }
    async fn editor(&self, title: &str, _prefill: Option<&str>) -> Option<String> {
        tracing::debug!(target: "pi_engine::extensions", title, "editor without a UI");
        None
    }
    fn notify(&self, message: &str, kind: Option<NotifyKind>) {
        let kind = kind.map_or("", NotifyKind::as_str);
        tracing::debug!(target: "pi_engine::extensions", message, kind, "notify without a UI");
    }
}

/// The UI as a handler sees it ([`ExtensionContext::ui`](super::ExtensionContext::ui)):
/// the front end's [`ExtensionUi`], with the handler's deadline stopped while a dialog
/// waits.
#[derive(Clone)]
pub struct Ui {
    pub(crate) ui: Arc<dyn ExtensionUi>,
    pub(crate) clock: Arc<UiClock>,
}

impl std::fmt::Debug for Ui {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ui")
            .field("has_ui", &self.ui.has_ui())
            .finish_non_exhaustive()
    }
}

impl Ui {
    /// Whether a person is there to answer.
    pub fn has_ui(&self) -> bool {
        self.ui.has_ui()
    }

    /// Asks to choose one of `options`; `None` when cancelled.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future withdraws the question (the front end's future is dropped).
    pub async fn select(&self, title: &str, options: &[&str]) -> Option<String> {
        let options: Vec<String> = options.iter().map(|o| (*o).to_owned()).collect();
        let _asking = self.clock.pause();
        self.ui.select(title, &options).await
    }

    /// As [`select`](Self::select), answering `None` when no choice came within `timeout`
    /// (pi's `timeout` option).
    pub async fn select_with_timeout(
        &self,
        title: &str,
        options: &[&str],
        timeout: Duration,
    ) -> Option<String> {
        let options: Vec<String> = options.iter().map(|o| (*o).to_owned()).collect();
        let dialog = DialogOptions::new().with_timeout(timeout);
        let asked = async {
            let _asking = self.clock.pause();
            self.ui.select_with(title, &options, dialog).await
        };
        tokio::time::timeout(timeout, asked).await.ok().flatten()
    }

    /// Asks yes or no; `false` when cancelled.
    ///
    /// # Cancel safety
    ///
    /// As [`select`](Self::select).
    pub async fn confirm(&self, title: &str, message: &str) -> bool {
        let _asking = self.clock.pause();
        self.ui.confirm(title, message).await
    }

    /// As [`confirm`](Self::confirm), answering `false` when no answer came within
    /// `timeout`.
    pub async fn confirm_with_timeout(
        &self,
        title: &str,
        message: &str,
        timeout: Duration,
    ) -> bool {
        let dialog = DialogOptions::new().with_timeout(timeout);
        let asked = async {
            let _asking = self.clock.pause();
            self.ui.confirm_with(title, message, dialog).await
        };
        tokio::time::timeout(timeout, asked).await.unwrap_or(false)
    }

    /// As [`input`](Self::input), answering `None` when no text came within `timeout`.
    pub async fn input_with_timeout(
        &self,
        title: &str,
        placeholder: Option<&str>,
        timeout: Duration,
    ) -> Option<String> {
        let dialog = DialogOptions::new().with_timeout(timeout);
        let asked = async {
            let _asking = self.clock.pause();
            self.ui.input_with(title, placeholder, dialog).await
        };
        tokio::time::timeout(timeout, asked).await.ok().flatten()
    }

    /// Asks for a line of text; `None` when cancelled.
    ///
    /// # Cancel safety
    ///
    /// As [`select`](Self::select).
    pub async fn input(&self, title: &str, placeholder: Option<&str>) -> Option<String> {
        let _asking = self.clock.pause();
        self.ui.input(title, placeholder).await
    }

    /// Asks for a longer text; `None` when cancelled.
    ///
    /// # Cancel safety
    ///
    /// As [`select`](Self::select).
    pub async fn editor(&self, title: &str, prefill: Option<&str>) -> Option<String> {
        let _asking = self.clock.pause();
        self.ui.editor(title, prefill).await
    }

    /// Shows a notification: `ui.notify("Saved", NotifyKind::Info)`, or without a kind
    /// (pi's `notify(message)`): `ui.notify("Saved", None)`.
    pub fn notify(&self, message: &str, kind: impl Into<Option<NotifyKind>>) {
        self.ui.notify(message, kind.into());
    }

    /// Sets (or clears) a status text.
    pub fn set_status(&self, key: &str, text: Option<&str>) {
        self.ui.set_status(key, text);
    }

    /// Sets (or removes) a widget.
    pub fn set_widget(&self, key: &str, lines: Option<&[String]>) {
        self.ui.set_widget(key, lines);
    }

    /// Sets the title.
    pub fn set_title(&self, title: &str) {
        self.ui.set_title(title);
    }

    /// Replaces the editor's text.
    pub fn set_editor_text(&self, text: &str) {
        self.ui.set_editor_text(text);
    }

    /// The editor's text.
    pub fn editor_text(&self) -> String {
        self.ui.editor_text()
    }
}
