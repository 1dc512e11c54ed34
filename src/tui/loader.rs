//! A spinner with a message (pi's `Loader`), one line; its owner calls
//! [`tick`](Loader::tick) on a timer (pi's interval is [`Loader::INTERVAL`]).

use std::time::Duration;

use super::component::Component;
use super::style::{Color, Style};
use super::width::truncate_to_width;

/// The braille frames pi's loader turns through.
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// A spinner and a message on one line: `⠋ Working...`, cut with `…` to the width.
///
/// ```
/// use pi_engine::tui::{Component, Loader, Style};
///
/// let mut loader = Loader::new("Working...").with_styles(Style::new(), Style::new());
/// assert_eq!(loader.render(40), ["⠋ Working..."]);
/// loader.tick();
/// loader.set_message("Almost");
/// assert_eq!(loader.render(40), ["⠙ Almost"]);
/// assert_eq!(loader.render(5), ["⠙ Al…"]);
/// ```
#[derive(Debug, Clone)]
pub struct Loader {
    message: String,
    frames: Vec<String>,
    frame: usize,
    spinner_style: Style,
    message_style: Style,
}

impl Default for Loader {
    fn default() -> Self {
        Loader::new("Loading...")
    }
}

impl Loader {
    /// How often pi advances its spinner.
    pub const INTERVAL: Duration = Duration::from_millis(80);

    /// A loader showing `message`, the spinner in cyan and the message dimmed.
    pub fn new(message: impl Into<String>) -> Self {
        Loader {
            message: message.into(),
            frames: FRAMES.iter().map(|f| (*f).to_owned()).collect(),
            frame: 0,
            spinner_style: Style::new().fg(Color::CYAN),
            message_style: Style::new().fg(Color::GRAY),
        }
    }

    /// With the spinner's and the message's styles.
    #[must_use]
    pub fn with_styles(mut self, spinner: Style, message: Style) -> Self {
        self.spinner_style = spinner;
        self.message_style = message;
        self
    }

    /// With other frames (none, or an empty one, for the message alone); restarts at the
    /// first.
    #[must_use]
    pub fn with_frames<S: Into<String>>(mut self, frames: impl IntoIterator<Item = S>) -> Self {
        self.frames = frames.into_iter().map(Into::into).collect();
        self.frame = 0;
        self
    }

    /// Replaces the message.
    pub fn set_message(&mut self, message: impl Into<String>) {
        self.message = message.into();
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Advances the spinner one frame (after the last, the first again).
    pub fn tick(&mut self) {
        if !self.frames.is_empty() {
            self.frame = (self.frame + 1) % self.frames.len();
        }
    }

    /// The frame shown now (empty without frames).
    pub fn frame(&self) -> &str {
        self.frames.get(self.frame).map_or("", String::as_str)
    }
}

impl Component for Loader {
    fn render(&mut self, width: usize) -> Vec<String> {
        let message: String = self
            .message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let frame = self.frame();
        let line = if frame.is_empty() {
            self.message_style.paint(&message).into_owned()
        } else {
            format!(
                "{} {}",
                self.spinner_style.paint(frame),
                self.message_style.paint(&message)
            )
        };
        vec![truncate_to_width(&line, width, "…")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::visible_width;

    #[test]
    fn loader_frames_cycle() {
        let mut l = Loader::new("go").with_styles(Style::new(), Style::new());
        let mut seen = Vec::new();
        for _ in 0..FRAMES.len() {
            seen.push(l.render(10)[0].clone());
            l.tick();
        }
        let expected: Vec<String> = FRAMES.iter().map(|f| format!("{f} go")).collect();
        assert_eq!(seen, expected);
        assert_eq!(l.frame(), "⠋", "wraps to the first frame");
    }

    #[test]
    fn loader_styles_message_and_width() {
        let mut l = Loader::new("Thinking 中文 hard\n");
        assert_eq!(
            l.render(80),
            ["\x1b[36m⠋\x1b[0m \x1b[90mThinking 中文 hard \x1b[0m"]
        );
        for w in 0..30 {
            let lines = l.render(w);
            assert_eq!(lines.len(), 1);
            assert!(visible_width(&lines[0]) <= w, "{lines:?} at {w}");
        }
        l.set_message("x");
        assert_eq!(l.message(), "x");
        let mut bare = Loader::new("plain").with_frames(Vec::<String>::new());
        bare.tick();
        assert_eq!(bare.render(10), ["\x1b[90mplain\x1b[0m"]);
        let mut custom = Loader::new("a")
            .with_frames(["-", "+"])
            .with_styles(Style::new(), Style::new());
        custom.tick();
        assert_eq!(custom.render(10), ["+ a"]);
    }
}
