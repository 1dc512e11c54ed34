//! Message renderers as data: what an extension says a front end should show for its
//! messages (pi's `registerMessageRenderer`, which returns a TUI component; here the lines).

/// How a message is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MessageRenderOptions {
    /// Whether the person expanded it.
    pub expanded: bool,
}

impl MessageRenderOptions {
    /// Collapsed.
    pub fn new() -> Self {
        MessageRenderOptions::default()
    }

    /// Expanded.
    #[must_use]
    pub fn expanded(mut self) -> Self {
        self.expanded = true;
        self
    }
}

/// What a renderer returns: the lines to show (they may hold ANSI styles; a front end clips
/// them to its width).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RenderedMessage {
    /// The lines.
    pub lines: Vec<String>,
}

impl RenderedMessage {
    /// `lines` as they are.
    pub fn lines(lines: impl IntoIterator<Item = impl Into<String>>) -> Self {
        RenderedMessage {
            lines: lines.into_iter().map(Into::into).collect(),
        }
    }

    /// One text, split at its line breaks.
    pub fn text(text: &str) -> Self {
        RenderedMessage::lines(text.lines())
    }
}
