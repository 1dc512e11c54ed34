//! Colours and text attributes, written as SGR escape sequences.

use std::borrow::Cow;

use super::width::RESET;

/// A terminal colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Color {
    /// One of the 16 basic colours (0–7 normal, 8–15 bright), as the terminal's theme draws
    /// them.
    Basic(u8),
    /// One of the 256 indexed colours.
    Indexed(u8),
    /// A 24-bit colour.
    Rgb(u8, u8, u8),
}

impl Color {
    /// Black (basic 0).
    pub const BLACK: Color = Color::Basic(0);
    /// Red (basic 1).
    pub const RED: Color = Color::Basic(1);
    /// Green (basic 2).
    pub const GREEN: Color = Color::Basic(2);
    /// Yellow (basic 3).
    pub const YELLOW: Color = Color::Basic(3);
    /// Blue (basic 4).
    pub const BLUE: Color = Color::Basic(4);
    /// Magenta (basic 5).
    pub const MAGENTA: Color = Color::Basic(5);
    /// Cyan (basic 6).
    pub const CYAN: Color = Color::Basic(6);
    /// White (basic 7).
    pub const WHITE: Color = Color::Basic(7);
    /// Bright black, the usual grey (basic 8).
    pub const GRAY: Color = Color::Basic(8);

    fn sgr(self, background: bool, out: &mut String) {
        use std::fmt::Write;
        let _ = match self {
            Color::Basic(n) if n < 8 => write!(out, "{}", if background { 40 } else { 30 } + n),
            Color::Basic(n) => write!(out, "{}", if background { 100 } else { 90 } + (n & 7)),
            Color::Indexed(n) => write!(out, "{};5;{n}", if background { 48 } else { 38 }),
            Color::Rgb(r, g, b) => {
                write!(out, "{};2;{r};{g};{b}", if background { 48 } else { 38 })
            }
        };
    }
}

/// A text style: colours and attributes. The default leaves the terminal's own.
///
/// ```
/// use pi_engine::tui::{Color, Style};
///
/// let warning = Style::new().fg(Color::YELLOW).bold();
/// assert_eq!(warning.paint("careful"), "\x1b[1;33mcareful\x1b[0m");
/// assert_eq!(Style::new().paint("plain"), "plain");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Style {
    fg: Option<Color>,
    bg: Option<Color>,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    inverse: bool,
    strikethrough: bool,
}

impl Style {
    /// The terminal's default style.
    pub const fn new() -> Self {
        Style {
            fg: None,
            bg: None,
            bold: false,
            dim: false,
            italic: false,
            underline: false,
            inverse: false,
            strikethrough: false,
        }
    }

    /// With a foreground colour.
    #[must_use]
    pub const fn fg(mut self, color: Color) -> Self {
        self.fg = Some(color);
        self
    }

    /// With a background colour.
    #[must_use]
    pub const fn bg(mut self, color: Color) -> Self {
        self.bg = Some(color);
        self
    }

    /// Bold.
    #[must_use]
    pub const fn bold(mut self) -> Self {
        self.bold = true;
        self
    }

    /// Dim (faint).
    #[must_use]
    pub const fn dim(mut self) -> Self {
        self.dim = true;
        self
    }

    /// Italic.
    #[must_use]
    pub const fn italic(mut self) -> Self {
        self.italic = true;
        self
    }

    /// Underlined.
    #[must_use]
    pub const fn underline(mut self) -> Self {
        self.underline = true;
        self
    }

    /// Foreground and background swapped.
    #[must_use]
    pub const fn inverse(mut self) -> Self {
        self.inverse = true;
        self
    }

    /// Struck through.
    #[must_use]
    pub const fn strikethrough(mut self) -> Self {
        self.strikethrough = true;
        self
    }

    /// True when the style changes nothing.
    pub fn is_plain(&self) -> bool {
        *self == Style::new()
    }

    /// The SGR sequence that turns the style on (empty for the plain style).
    pub fn prefix(&self) -> String {
        if self.is_plain() {
            return String::new();
        }
        let mut params = String::from("\x1b[");
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !first {
                out.push(';');
            }
            first = false;
        };
        for (on, code) in [
            (self.bold, "1"),
            (self.dim, "2"),
            (self.italic, "3"),
            (self.underline, "4"),
            (self.inverse, "7"),
            (self.strikethrough, "9"),
        ] {
            if on {
                sep(&mut params);
                params.push_str(code);
            }
        }
        if let Some(c) = self.fg {
            sep(&mut params);
            c.sgr(false, &mut params);
        }
        if let Some(c) = self.bg {
            sep(&mut params);
            c.sgr(true, &mut params);
        }
        params.push('m');
        params
    }

    /// `text` in this style, reset at its end. A reset inside `text` (a nested style's end)
    /// turns this style on again, so the whole text keeps it.
    pub fn paint<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.is_plain() || text.is_empty() {
            return Cow::Borrowed(text);
        }
        let prefix = self.prefix();
        let body = if text.contains(RESET) {
            Cow::Owned(text.replace(RESET, &format!("{RESET}{prefix}")))
        } else {
            Cow::Borrowed(text)
        };
        Cow::Owned(format!("{prefix}{body}{RESET}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences() {
        assert_eq!(
            Style::new().fg(Color::Rgb(1, 2, 3)).prefix(),
            "\x1b[38;2;1;2;3m"
        );
        assert_eq!(
            Style::new().bg(Color::Indexed(236)).dim().prefix(),
            "\x1b[2;48;5;236m"
        );
        assert_eq!(Style::new().fg(Color::GRAY).prefix(), "\x1b[90m");
        let outer = Style::new().bg(Color::BLUE);
        let inner = Style::new().bold().paint("b").into_owned();
        assert_eq!(
            outer.paint(&format!("a{inner}c")),
            "\x1b[44ma\x1b[1mb\x1b[0m\x1b[44mc\x1b[0m"
        );
    }
}
