//! The component model: anything that renders to lines for a width, and the basic
//! components (containers, text, truncated text, spacers, panels with padding and borders).

use super::keys::Input;
use super::style::Style;
use super::width::{
    RESET, expand_tabs, fit_to_width, truncate_to_width, visible_width, wrap_text_with_ansi,
};

/// A piece of the screen. `render` returns the component's lines for a width: each one a
/// terminal row that may hold ANSI escape sequences and takes at most `width` columns (the
/// renderer clips a longer one rather than failing, see
/// [`Renderer`](super::Renderer)).
///
/// ```
/// use pi_engine::tui::{Component, Input};
///
/// /// A counter drawn as `n: 3`.
/// struct Counter(u32);
///
/// impl Component for Counter {
///     fn render(&mut self, _width: usize) -> Vec<String> {
///         vec![format!("n: {}", self.0)]
///     }
///     fn handle_input(&mut self, input: &Input) -> bool {
///         matches!(input, Input::Key(k) if k.is_char('+')) && { self.0 += 1; true }
///     }
/// }
///
/// let mut c = Counter(0);
/// c.handle_input(&Input::Key(pi_engine::tui::Key::char('+')));
/// assert_eq!(c.render(80), ["n: 1"]);
/// ```
pub trait Component: Send {
    /// The lines of the component at `width` columns.
    fn render(&mut self, width: usize) -> Vec<String>;

    /// Handles input while the component has the focus; `true` when it used it.
    fn handle_input(&mut self, _input: &Input) -> bool {
        false
    }

    /// Drops what the component cached of its rendering (after a theme change).
    fn invalidate(&mut self) {}

    /// Tells the component whether it has the focus (a focused editor shows its cursor).
    fn set_focused(&mut self, _focused: bool) {}
}

impl<C: Component + ?Sized> Component for Box<C> {
    fn render(&mut self, width: usize) -> Vec<String> {
        (**self).render(width)
    }
    fn handle_input(&mut self, input: &Input) -> bool {
        (**self).handle_input(input)
    }
    fn invalidate(&mut self) {
        (**self).invalidate();
    }
    fn set_focused(&mut self, focused: bool) {
        (**self).set_focused(focused);
    }
}

/// Children rendered one below the other.
#[derive(Default)]
pub struct Container {
    children: Vec<Box<dyn Component>>,
}

impl std::fmt::Debug for Container {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Container")
            .field("children", &self.children.len())
            .finish()
    }
}

impl Container {
    /// An empty container.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a child.
    pub fn push(&mut self, child: impl Component + 'static) {
        self.children.push(Box::new(child));
    }

    /// Appends a boxed child.
    pub fn push_boxed(&mut self, child: Box<dyn Component>) {
        self.children.push(child);
    }

    /// Removes and returns the child at `index`.
    pub fn remove(&mut self, index: usize) -> Option<Box<dyn Component>> {
        (index < self.children.len()).then(|| self.children.remove(index))
    }

    /// Removes every child.
    pub fn clear(&mut self) {
        self.children.clear();
    }

    /// How many children there are.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// True without children.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// The child at `index`.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut Box<dyn Component>> {
        self.children.get_mut(index)
    }
}

impl Component for Container {
    fn render(&mut self, width: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for child in &mut self.children {
            lines.extend(child.render(width));
        }
        lines
    }

    fn invalidate(&mut self) {
        self.children.iter_mut().for_each(|c| c.invalidate());
    }
}

/// Text wrapped to the width (at spaces, inside long words), with an optional style.
#[derive(Debug, Clone, Default)]
pub struct Text {
    text: String,
    style: Style,
    /// The last rendering, by width.
    cache: Option<(usize, Vec<String>)>,
}

impl Text {
    /// Text in the terminal's default style.
    pub fn new(text: impl Into<String>) -> Self {
        Text {
            text: text.into(),
            ..Text::default()
        }
    }

    /// Text in `style`.
    pub fn styled(text: impl Into<String>, style: Style) -> Self {
        Text {
            text: text.into(),
            style,
            cache: None,
        }
    }

    /// Replaces the text.
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.text = text.into();
        self.cache = None;
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl Component for Text {
    fn render(&mut self, width: usize) -> Vec<String> {
        if let Some((w, lines)) = &self.cache
            && *w == width
        {
            return lines.clone();
        }
        let text = expand_tabs(&self.text);
        let lines: Vec<String> = wrap_text_with_ansi(&text, width)
            .into_iter()
            .map(|l| self.style.paint(&l).into_owned())
            .collect();
        self.cache = Some((width, lines.clone()));
        lines
    }

    fn invalidate(&mut self) {
        self.cache = None;
    }
}

/// One line of text, cut with `…` when it is wider than the width.
#[derive(Debug, Clone, Default)]
pub struct TruncatedText {
    text: String,
    style: Style,
}

impl TruncatedText {
    /// A line in the default style.
    pub fn new(text: impl Into<String>) -> Self {
        TruncatedText {
            text: text.into(),
            style: Style::default(),
        }
    }

    /// A line in `style`.
    pub fn styled(text: impl Into<String>, style: Style) -> Self {
        TruncatedText {
            text: text.into(),
            style,
        }
    }

    /// Replaces the text.
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.text = text.into();
    }
}

impl Component for TruncatedText {
    fn render(&mut self, width: usize) -> Vec<String> {
        let first = self.text.lines().next().unwrap_or("");
        let line = truncate_to_width(&expand_tabs(first), width, "…");
        vec![self.style.paint(&line).into_owned()]
    }
}

/// Empty lines.
#[derive(Debug, Clone, Copy)]
pub struct Spacer(pub usize);

impl Component for Spacer {
    fn render(&mut self, _width: usize) -> Vec<String> {
        vec![String::new(); self.0]
    }
}

/// How a [`Panel`] draws its border.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Border {
    /// No border.
    #[default]
    None,
    /// `┌─┐│└┘`.
    Plain,
    /// `╭─╮│╰╯`.
    Rounded,
}

impl Border {
    fn chars(self) -> Option<[char; 6]> {
        match self {
            Border::None => None,
            Border::Plain => Some(['┌', '─', '┐', '│', '└', '┘']),
            Border::Rounded => Some(['╭', '─', '╮', '│', '╰', '╯']),
        }
    }
}

/// A box around children (pi's `Box`): padding, an optional border with a title, a
/// background style filling its whole width.
///
/// ```
/// use pi_engine::tui::{Border, Component, Panel, Text};
///
/// let mut panel = Panel::new().with_border(Border::Rounded).with_padding(1, 0);
/// panel.push(Text::new("hi"));
/// assert_eq!(panel.render(8), ["╭──────╮", "│ hi   │", "╰──────╯"]);
/// ```
#[derive(Debug, Default)]
pub struct Panel {
    children: Container,
    padding_x: usize,
    padding_y: usize,
    border: Border,
    border_style: Style,
    background: Style,
    title: Option<String>,
}

impl Panel {
    /// An empty panel without padding or border.
    pub fn new() -> Self {
        Self::default()
    }

    /// Columns of padding left and right, rows above and below.
    #[must_use]
    pub fn with_padding(mut self, x: usize, y: usize) -> Self {
        self.padding_x = x;
        self.padding_y = y;
        self
    }

    /// The border.
    #[must_use]
    pub fn with_border(mut self, border: Border) -> Self {
        self.border = border;
        self
    }

    /// The border's style.
    #[must_use]
    pub fn with_border_style(mut self, style: Style) -> Self {
        self.border_style = style;
        self
    }

    /// A style for the whole panel (its background fills every row).
    #[must_use]
    pub fn with_background(mut self, style: Style) -> Self {
        self.background = style;
        self
    }

    /// A title in the top border.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Appends a child.
    pub fn push(&mut self, child: impl Component + 'static) {
        self.children.push(child);
    }

    /// The children.
    pub fn children(&mut self) -> &mut Container {
        &mut self.children
    }
}

impl Component for Panel {
    fn render(&mut self, width: usize) -> Vec<String> {
        let borders = self.border.chars();
        let frame = if borders.is_some() { 2 } else { 0 };
        let inner = width.saturating_sub(frame + 2 * self.padding_x);
        let content_width = width.saturating_sub(frame);
        let mut body: Vec<String> = Vec::new();
        let blank = " ".repeat(content_width);
        body.extend(std::iter::repeat_n(blank.clone(), self.padding_y));
        let pad = " ".repeat(self.padding_x);
        for line in self.children.render(inner.max(1)) {
            let fitted = fit_to_width(&line, inner);
            // A child's colours end inside the panel, not in its padding.
            let fitted = if line.contains('\x1b') {
                format!("{fitted}{RESET}")
            } else {
                fitted
            };
            body.push(format!("{pad}{fitted}{pad}"));
        }
        body.extend(std::iter::repeat_n(blank, self.padding_y));
        let body: Vec<String> = body
            .into_iter()
            .map(|l| {
                self.background
                    .paint(&fit_to_width(&l, content_width))
                    .into_owned()
            })
            .collect();
        let Some([tl, h, tr, v, bl, br]) = borders else {
            return body;
        };
        if width < 2 {
            return body
                .into_iter()
                .map(|l| truncate_to_width(&l, width, ""))
                .collect();
        }
        let span = width - 2;
        let top = match &self.title {
            Some(title) => {
                let title = truncate_to_width(&format!(" {title} "), span, "…");
                let rest = span - visible_width(&title);
                format!("{tl}{title}{}{tr}", h.to_string().repeat(rest))
            }
            None => format!("{tl}{}{tr}", h.to_string().repeat(span)),
        };
        let side = self.border_style.paint(&v.to_string()).into_owned();
        let mut out = vec![self.border_style.paint(&top).into_owned()];
        out.extend(body.into_iter().map(|l| format!("{side}{l}{side}")));
        let bottom = format!("{bl}{}{br}", h.to_string().repeat(span));
        out.push(self.border_style.paint(&bottom).into_owned());
        out
    }

    fn invalidate(&mut self) {
        self.children.invalidate();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_wraps_and_never_exceeds() {
        let mut t = Text::new("日本語 and\tsome long words here");
        for w in 1..30 {
            for line in t.render(w) {
                assert!(visible_width(&line) <= w, "{line:?} at {w}");
            }
        }
    }

    #[test]
    fn panel_lines_are_exactly_the_width() {
        let mut p = Panel::new()
            .with_border(Border::Plain)
            .with_padding(2, 1)
            .with_title("a very long title indeed");
        p.push(Text::new("\x1b[31mred 中文 text\x1b[0m that wraps"));
        for w in [0, 1, 2, 3, 5, 10, 40] {
            for line in p.render(w) {
                assert!(visible_width(&line) <= w, "{line:?} at {w}");
            }
        }
        let lines = p.render(20);
        assert!(lines.iter().all(|l| visible_width(l) == 20), "{lines:#?}");
        assert!(lines[0].starts_with("┌ a very long"));
    }

    #[test]
    fn truncated_text_and_spacer() {
        assert_eq!(TruncatedText::new("hello world").render(6), ["hello…"]);
        assert_eq!(Spacer(2).render(5), ["", ""]);
        let mut c = Container::new();
        c.push(Text::new("a"));
        c.push(Spacer(1));
        c.push(Text::new("b"));
        assert_eq!(c.render(5), ["a", "", "b"]);
    }
}
