//! The extension UI over RPC: each [`ExtensionUi`] call is an `extension_ui_request` line;
//! a dialog waits for the `extension_ui_response` line with its id.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::response::truthy;
use crate::agent_session::JsonLinesWriter;
use crate::extensions::{DialogOptions, ExtensionUi, NotifyKind};

/// Requests written before [`run`](super::run) connects the UI are kept until then, up to
/// this many (a session used before the mode starts has no one to answer it anyway).
const MAX_EARLY_REQUESTS: usize = 1024;

/// pi's extension UI in RPC mode ([`ExtensionUi`]): every call becomes an
/// `extension_ui_request` line on the mode's output, and the dialogs (`select`, `confirm`,
/// `input`, `editor`) wait for the client's `extension_ui_response` with the same `id`
/// (`{"value": …}`, `{"confirmed": …}` or `{"cancelled": true}`).
///
/// Build the session with it, and give its channel to the mode:
///
/// ```
/// use pi_engine::agent_session::AgentSession;
/// use pi_engine::cli::rpc::{RpcOptions, RpcUi};
/// use pi_engine::session::SessionManager;
///
/// let (ui, channel) = RpcUi::new();
/// let builder = AgentSession::builder(SessionManager::in_memory("/project")).extension_ui_arc(ui);
/// let options = RpcOptions::new().with_ui(channel);
/// # let _ = (builder, options);
/// ```
///
/// * Dialogs: `{"type":"extension_ui_request","id":<uuid>,"method":"select","title",
///   "options"}`, `confirm` (`title`, `message`), `input` (`title`, `placeholder`), `editor`
///   (`title`, `prefill`). Answered with `value` (or, for `confirm`, `confirmed`), or
///   `cancelled` (`select`/`input`/`editor`: `None`, `confirm`: `false`). A dialog waits as
///   long as the client does — only the extension's own timeout
///   ([`Ui::select_with_timeout`](crate::extensions::Ui::select_with_timeout)) ends it, as in
///   pi — until the input ends: then every open dialog, and every later one, is answered
///   as cancelled, so the mode can shut down.
/// * Fire and forget: `notify` (`message`, `notifyType` unless the extension gave no kind),
///   `setStatus` (`statusKey`, `statusText`, absent to clear), `setWidget` (`widgetKey`,
///   `widgetLines`, absent to clear), `setTitle` (`title`), `set_editor_text` (`text`).
/// * `has_ui` is true; `editor_text` is `""` (pi: the client keeps the editor's state).
pub struct RpcUi {
    link: Arc<Link>,
}

/// The mode's side of an [`RpcUi`]: what [`run`](super::run) connects to its output and
/// feeds with the client's `extension_ui_response` lines. Give it to
/// [`RpcOptions::with_ui`](super::RpcOptions::with_ui).
pub struct RpcUiChannel {
    pub(crate) link: Arc<Link>,
}

impl fmt::Debug for RpcUi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcUi")
            .field("open_dialogs", &self.link.state().pending.len())
            .finish()
    }
}

impl fmt::Debug for RpcUiChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcUiChannel")
            .field("open_dialogs", &self.link.state().pending.len())
            .finish()
    }
}

impl RpcUi {
    /// A UI and the channel [`run`](super::run) drives it with.
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> (Arc<RpcUi>, RpcUiChannel) {
        let link = Arc::new(Link::default());
        let ui = Arc::new(RpcUi { link: link.clone() });
        (ui, RpcUiChannel { link })
    }
}

/// Where the requests go.
enum Sink {
    /// Not connected yet: kept.
    Early(Vec<Value>),
    /// The mode's output.
    Connected(Arc<JsonLinesWriter>),
    /// The mode has ended: dropped.
    Closed,
}

struct LinkState {
    sink: Sink,
    /// Open dialogs by request id.
    pending: HashMap<String, oneshot::Sender<Value>>,
    /// The input has ended: no answer can come.
    input_closed: bool,
}

/// What the UI and the mode share.
pub(crate) struct Link {
    state: Mutex<LinkState>,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            state: Mutex::new(LinkState {
                sink: Sink::Early(Vec::new()),
                pending: HashMap::new(),
                input_closed: false,
            }),
        }
    }
}

impl Link {
    fn state(&self) -> MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `{"type":"extension_ui_request","id",…fields}`.
    fn write(st: &mut LinkState, id: &str, fields: Map<String, Value>) {
        let mut request = Map::new();
        request.insert("type".into(), "extension_ui_request".into());
        request.insert("id".into(), id.into());
        request.extend(fields);
        let request = Value::Object(request);
        match &mut st.sink {
            Sink::Early(queue) if queue.len() < MAX_EARLY_REQUESTS => queue.push(request),
            Sink::Early(_) => {
                tracing::warn!("extension UI request dropped: the RPC mode has not started")
            }
            Sink::Connected(out) => {
                // A failed write is kept by the writer and reported when the mode ends.
                let _ = out.write_value(&request);
            }
            Sink::Closed => tracing::debug!("extension UI request after the RPC mode ended"),
        }
    }

    fn fire(&self, fields: Value) {
        let Value::Object(fields) = fields else {
            return;
        };
        let id = uuid::Uuid::new_v4().to_string();
        Self::write(&mut self.state(), &id, fields);
    }

    /// Asks, and waits for the answer (`None`: no answer will come).
    async fn ask(self: &Arc<Self>, fields: Value) -> Option<Value> {
        let Value::Object(fields) = fields else {
            return None;
        };
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.state();
            if st.input_closed || matches!(st.sink, Sink::Closed) {
                return None;
            }
            st.pending.insert(id.clone(), tx);
            Self::write(&mut st, &id, fields);
        }
        // Withdrawn when the dialog's future is dropped (the extension's timeout, an
        // aborted handler): a late answer is then ignored, as pi ignores it.
        let _withdraw = Withdraw {
            link: self.clone(),
            id,
        };
        rx.await.ok()
    }

    /// Connects the output: requests kept so far are written first.
    pub(crate) fn connect(&self, out: Arc<JsonLinesWriter>) {
        let mut st = self.state();
        if let Sink::Early(queue) = &mut st.sink {
            for request in queue.drain(..) {
                let _ = out.write_value(&request);
            }
        }
        st.sink = Sink::Connected(out);
    }

    /// An `extension_ui_response` arrived: the dialog with its id gets it (unknown ids are
    /// ignored, as pi ignores them).
    pub(crate) fn resolve(&self, response: Value) {
        let Some(id) = response.get("id").and_then(Value::as_str) else {
            return;
        };
        let waiting = self.state().pending.remove(id);
        if let Some(tx) = waiting {
            let _ = tx.send(response);
        }
    }

    /// The input ended: open dialogs are answered as cancelled, and later ones at once.
    pub(crate) fn close_input(&self) {
        let mut st = self.state();
        st.input_closed = true;
        st.pending.clear();
    }

    /// The mode ended: later requests are dropped.
    pub(crate) fn disconnect(&self) {
        let mut st = self.state();
        st.input_closed = true;
        st.pending.clear();
        st.sink = Sink::Closed;
    }
}

/// pi's `timeout` field of a dialog request (milliseconds), when the extension set one.
fn with_timeout(fields: &mut Value, dialog: DialogOptions) {
    if let Some(t) = dialog.timeout {
        fields["timeout"] = u64::try_from(t.as_millis()).unwrap_or(u64::MAX).into();
    }
}

/// Removes a dialog that no longer waits.
struct Withdraw {
    link: Arc<Link>,
    id: String,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.link.state().pending.remove(&self.id);
    }
}

/// pi's reading of a `select`/`input`/`editor` answer: cancelled (truthy) → none; else its
/// `value`.
fn value_of(response: Option<Value>) -> Option<String> {
    let mut r = response?;
    if r.get("cancelled").is_some_and(truthy) {
        return None;
    }
    match r.get_mut("value").map(Value::take) {
        Some(Value::String(s)) => Some(s),
        None | Some(Value::Null) => None,
        // pi hands any JSON value through; an extension here gets text.
        Some(other) => Some(other.to_string()),
    }
}

/// pi's reading of a `confirm` answer: cancelled → false; else `confirmed`.
fn confirmed(response: Option<Value>) -> bool {
    let Some(r) = response else {
        return false;
    };
    if r.get("cancelled").is_some_and(truthy) {
        return false;
    }
    r.get("confirmed").is_some_and(truthy)
}

#[async_trait]
impl ExtensionUi for RpcUi {
    fn has_ui(&self) -> bool {
        true
    }

    async fn select(&self, title: &str, options: &[String]) -> Option<String> {
        self.select_with(title, options, DialogOptions::new()).await
    }

    async fn confirm(&self, title: &str, message: &str) -> bool {
        self.confirm_with(title, message, DialogOptions::new())
            .await
    }

    async fn input(&self, title: &str, placeholder: Option<&str>) -> Option<String> {
        self.input_with(title, placeholder, DialogOptions::new())
            .await
    }

    async fn select_with(
        &self,
        title: &str,
        options: &[String],
        dialog: DialogOptions,
    ) -> Option<String> {
        let mut fields = json!({"method": "select", "title": title, "options": options});
        with_timeout(&mut fields, dialog);
        value_of(self.link.ask(fields).await)
    }

    async fn confirm_with(&self, title: &str, message: &str, dialog: DialogOptions) -> bool {
        let mut fields = json!({"method": "confirm", "title": title, "message": message});
        with_timeout(&mut fields, dialog);
        confirmed(self.link.ask(fields).await)
    }

    async fn input_with(
        &self,
        title: &str,
        placeholder: Option<&str>,
        dialog: DialogOptions,
    ) -> Option<String> {
        let mut fields = json!({"method": "input", "title": title});
        if let Some(p) = placeholder {
            fields["placeholder"] = p.into();
        }
        with_timeout(&mut fields, dialog);
        value_of(self.link.ask(fields).await)
    }

    async fn editor(&self, title: &str, prefill: Option<&str>) -> Option<String> {
        let mut fields = json!({"method": "editor", "title": title});
        if let Some(p) = prefill {
            fields["prefill"] = p.into();
        }
        value_of(self.link.ask(fields).await)
    }

    fn notify(&self, message: &str, kind: Option<NotifyKind>) {
        let mut fields = json!({"method": "notify", "message": message});
        if let Some(kind) = kind {
            fields["notifyType"] = kind.as_str().into();
        }
        self.link.fire(fields);
    }

    fn set_status(&self, key: &str, text: Option<&str>) {
        let mut fields = json!({"method": "setStatus", "statusKey": key});
        if let Some(text) = text {
            fields["statusText"] = text.into();
        }
        self.link.fire(fields);
    }

    fn set_widget(&self, key: &str, lines: Option<&[String]>) {
        let mut fields = json!({"method": "setWidget", "widgetKey": key});
        if let Some(lines) = lines {
            fields["widgetLines"] = lines.into();
        }
        self.link.fire(fields);
    }

    fn set_title(&self, title: &str) {
        self.link
            .fire(json!({"method": "setTitle", "title": title}));
    }

    fn set_editor_text(&self, text: &str) {
        self.link
            .fire(json!({"method": "set_editor_text", "text": text}));
    }

    fn editor_text(&self) -> String {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn connected() -> (
        Arc<RpcUi>,
        RpcUiChannel,
        tokio::io::DuplexStream,
        Arc<JsonLinesWriter>,
    ) {
        let (ui, channel) = RpcUi::new();
        let (sink, read) = tokio::io::duplex(1 << 16);
        let out = Arc::new(JsonLinesWriter::new(sink));
        channel.link.connect(out.clone());
        (ui, channel, read, out)
    }

    async fn read_lines(
        read: &mut tokio::io::DuplexStream,
        out: &JsonLinesWriter,
        n: usize,
    ) -> Vec<Value> {
        use tokio::io::AsyncBufReadExt;
        out.flush().await.unwrap();
        let mut reader = tokio::io::BufReader::new(read);
        let mut lines = Vec::new();
        for _ in 0..n {
            let mut line = String::new();
            reader.read_line(&mut line).await.unwrap();
            lines.push(serde_json::from_str(&line).unwrap());
        }
        lines
    }

    #[tokio::test]
    async fn fire_and_forget_shapes() {
        let (ui, _channel, mut read, out) = connected();
        ui.notify("hi", None);
        ui.notify("careful", Some(NotifyKind::Warning));
        ui.set_status("k", Some("busy"));
        ui.set_status("k", None);
        ui.set_widget("w", Some(&["a".to_owned(), "b".to_owned()]));
        ui.set_widget("w", None);
        ui.set_title("pi");
        ui.set_editor_text("draft");
        let mut lines = read_lines(&mut read, &out, 8).await;
        for l in &mut lines {
            assert_eq!(l["type"], "extension_ui_request");
            let id = l.as_object_mut().unwrap().shift_remove("id").unwrap();
            assert_eq!(id.as_str().unwrap().len(), 36);
            l.as_object_mut().unwrap().shift_remove("type");
        }
        assert_eq!(
            lines,
            [
                json!({"method": "notify", "message": "hi"}),
                json!({"method": "notify", "message": "careful", "notifyType": "warning"}),
                json!({"method": "setStatus", "statusKey": "k", "statusText": "busy"}),
                json!({"method": "setStatus", "statusKey": "k"}),
                json!({"method": "setWidget", "widgetKey": "w", "widgetLines": ["a", "b"]}),
                json!({"method": "setWidget", "widgetKey": "w"}),
                json!({"method": "setTitle", "title": "pi"}),
                json!({"method": "set_editor_text", "text": "draft"}),
            ]
        );
        assert!(ui.has_ui());
        assert_eq!(ui.editor_text(), "");
    }

    #[tokio::test]
    async fn dialogs_wait_for_their_answer() {
        let (ui, channel, mut read, out) = connected();
        let asking = {
            let ui = ui.clone();
            tokio::spawn(async move {
                let choice = ui.select("Allow?", &["Yes".into(), "No".into()]).await;
                let ok = ui.confirm("Sure?", "Really").await;
                let text = ui.input("Name", Some("ada")).await;
                let edited = ui.editor("Edit", None).await;
                (choice, ok, text, edited)
            })
        };
        let mut answers = [
            json!({"value": "Yes"}),
            json!({"confirmed": true}),
            json!({"cancelled": true, "value": "ignored"}),
            json!({"value": "new text"}),
        ]
        .into_iter();
        let mut requests = Vec::new();
        for _ in 0..4 {
            let request = read_lines(&mut read, &out, 1).await.remove(0);
            let mut answer = answers.next().unwrap();
            answer["type"] = "extension_ui_response".into();
            answer["id"] = request["id"].clone();
            // An answer to an unknown id changes nothing.
            channel
                .link
                .resolve(json!({"type": "extension_ui_response", "id": "nope", "value": "x"}));
            channel.link.resolve(answer);
            requests.push(request);
        }
        let (choice, ok, text, edited) = asking.await.unwrap();
        assert_eq!(choice.as_deref(), Some("Yes"));
        assert!(ok);
        assert_eq!(text, None);
        assert_eq!(edited.as_deref(), Some("new text"));
        assert_eq!(requests[0]["options"], json!(["Yes", "No"]));
        assert_eq!(requests[1]["message"], "Really");
        assert_eq!(requests[2]["placeholder"], "ada");
        assert!(requests[3].get("prefill").is_none());
        assert_eq!(
            requests[0].as_object().unwrap().keys().collect::<Vec<_>>(),
            ["type", "id", "method", "title", "options"]
        );
        assert!(channel.link.state().pending.is_empty());
    }

    #[tokio::test]
    async fn a_timed_out_dialog_is_withdrawn_and_the_end_of_input_cancels() {
        let (ui, channel, _read, _out) = connected();
        let r = tokio::time::timeout(Duration::from_millis(10), ui.confirm("t", "m")).await;
        assert!(r.is_err());
        assert!(channel.link.state().pending.is_empty());

        let waiting = {
            let ui = ui.clone();
            tokio::spawn(async move { ui.select("s", &[]).await })
        };
        while channel.link.state().pending.is_empty() {
            tokio::task::yield_now().await;
        }
        channel.link.close_input();
        assert_eq!(waiting.await.unwrap(), None);
        // Later dialogs answer at once.
        assert!(!ui.confirm("again", "m").await);
        assert_eq!(ui.input("again", None).await, None);
    }

    #[tokio::test]
    async fn requests_before_the_mode_starts_are_kept() {
        let (ui, channel) = RpcUi::new();
        ui.notify("early", Some(NotifyKind::Info));
        let (sink, mut read) = tokio::io::duplex(1 << 16);
        let out = Arc::new(JsonLinesWriter::new(sink));
        channel.link.connect(out.clone());
        ui.set_title("later");
        let lines = read_lines(&mut read, &out, 2).await;
        assert_eq!(lines[0]["message"], "early");
        assert_eq!(lines[1]["title"], "later");
        channel.link.disconnect();
        ui.notify("dropped", None);
        assert_eq!(ui.select("gone", &[]).await, None);
    }

    #[test]
    fn answers_read_as_pi_reads_them() {
        assert_eq!(value_of(Some(json!({"value": "a"}))).as_deref(), Some("a"));
        assert_eq!(
            value_of(Some(json!({"cancelled": false, "value": "a"}))).as_deref(),
            Some("a")
        );
        assert_eq!(
            value_of(Some(json!({"cancelled": true, "value": "a"}))),
            None
        );
        assert_eq!(value_of(Some(json!({}))), None);
        assert_eq!(value_of(Some(json!({"value": 3}))).as_deref(), Some("3"));
        assert_eq!(value_of(None), None);
        assert!(confirmed(Some(json!({"confirmed": true}))));
        assert!(!confirmed(Some(json!({"confirmed": false}))));
        assert!(!confirmed(Some(
            json!({"cancelled": true, "confirmed": true})
        )));
        assert!(!confirmed(Some(json!({"value": "yes"}))));
        assert!(!confirmed(None));
    }
}
