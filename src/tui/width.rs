//! Display widths of terminal lines: how many columns a string takes once ANSI escape
//! sequences are skipped, and cutting, padding and wrapping by columns, never by bytes.
//!
//! A column count is per grapheme cluster (what the terminal draws as one character): wide
//! East Asian characters and emoji take two columns, combining marks and zero-width joiners
//! none, an emoji presentation sequence (`U+FE0F`) or a ZWJ sequence two. Escape sequences
//! (SGR colours, OSC 8 hyperlinks, the cursor marker) take none and are kept whole when a
//! line is cut. A tab counts as [`TAB_WIDTH`] columns; components expand tabs before they
//! render (see [`expand_tabs`]).

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Columns of a tab (pi renders a tab as three spaces).
pub const TAB_WIDTH: usize = 3;

/// The SGR sequence that resets every attribute.
pub const RESET: &str = "\x1b[0m";

/// One piece of a line: an escape sequence, or a grapheme cluster and its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// An escape sequence (zero columns).
    Escape(&'a str),
    /// A grapheme cluster and the columns it takes.
    Grapheme(&'a str, usize),
}

/// The length of the escape sequence at the start of `s` (which starts with `ESC`).
fn escape_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    match bytes.get(1) {
        // CSI: parameters and intermediates, then one final byte in 0x40..=0x7e.
        Some(b'[') => bytes[2..]
            .iter()
            .position(|b| (0x40..=0x7e).contains(b))
            .map_or(bytes.len(), |i| i + 3),
        // OSC, APC, DCS, PM, SOS: up to BEL or ST (`ESC \`).
        Some(b']' | b'_' | b'P' | b'^' | b'X') => {
            let mut i = 2;
            while i < bytes.len() {
                match bytes[i] {
                    0x07 => return i + 1,
                    0x1b if bytes.get(i + 1) == Some(&b'\\') => return i + 2,
                    _ => i += 1,
                }
            }
            bytes.len()
        }
        // A two-byte sequence (`ESC 7`, `ESC M`, …), or a lone ESC at the end.
        Some(_) => s[1..].chars().next().map_or(1, |c| 1 + c.len_utf8()),
        None => 1,
    }
}

/// The columns of one grapheme cluster.
pub(crate) fn grapheme_width(g: &str) -> usize {
    if g == "\t" {
        return TAB_WIDTH;
    }
    let mut chars = g.chars();
    let Some(first) = chars.next() else {
        return 0;
    };
    if first.is_control() {
        return 0;
    }
    // An emoji presentation or ZWJ sequence is drawn as one wide glyph.
    if g.len() > first.len_utf8() && g.chars().any(|c| c == '\u{fe0f}' || c == '\u{200d}') {
        return 2;
    }
    // The cluster's base decides; its combining marks take no column.
    UnicodeWidthStr::width(&g[..first.len_utf8()]).min(2)
}

/// Splits `s` into escape sequences and grapheme clusters with their widths.
pub(crate) fn pieces(s: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = s;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.as_bytes()[0] == 0x1b {
            let n = escape_len(rest).min(rest.len());
            // A sequence cut inside a multi-byte character ends before it.
            let n = (n..=rest.len())
                .find(|&i| rest.is_char_boundary(i))
                .unwrap_or(rest.len());
            let (escape, tail) = rest.split_at(n);
            rest = tail;
            return Some(Piece::Escape(escape));
        }
        let end = rest.find('\x1b').unwrap_or(rest.len());
        let text = &rest[..end];
        let g = text.graphemes(true).next().unwrap_or(text);
        rest = &rest[g.len()..];
        Some(Piece::Grapheme(g, grapheme_width(g)))
    })
}

/// The columns `s` takes on a terminal (escape sequences skipped).
///
/// ```
/// use pi_engine::tui::visible_width;
///
/// assert_eq!(visible_width("\x1b[1mbold\x1b[0m"), 4);
/// assert_eq!(visible_width("日本"), 4);
/// assert_eq!(visible_width("e\u{301}"), 1); // e + combining acute
/// assert_eq!(visible_width("👍🏽"), 2);
/// ```
pub fn visible_width(s: &str) -> usize {
    // Plain ASCII without escapes or tabs: one column a byte.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return s.len();
    }
    pieces(s)
        .map(|p| match p {
            Piece::Escape(_) => 0,
            Piece::Grapheme(_, w) => w,
        })
        .sum()
}

/// Replaces each tab with [`TAB_WIDTH`] spaces.
pub fn expand_tabs(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\t') {
        s.replace('\t', &" ".repeat(TAB_WIDTH)).into()
    } else {
        s.into()
    }
}

/// True when `escape` is an SGR sequence (`ESC [ … m`).
fn is_sgr(escape: &str) -> bool {
    escape.starts_with("\x1b[") && escape.ends_with('m')
}

/// Tracks the SGR state of a line so that a cut line can be closed and its continuation
/// reopened with the same colours.
#[derive(Debug, Default, Clone)]
pub(crate) struct SgrState {
    active: Vec<String>,
}

impl SgrState {
    pub(crate) fn apply(&mut self, escape: &str) {
        if !is_sgr(escape) {
            return;
        }
        let params = &escape[2..escape.len() - 1];
        if params.is_empty() || params == "0" {
            self.active.clear();
        } else {
            self.active.push(escape.to_owned());
        }
    }

    pub(crate) fn is_active(&self) -> bool {
        !self.active.is_empty()
    }

    /// The sequences that restore the state at the start of a new line.
    pub(crate) fn prefix(&self) -> String {
        self.active.concat()
    }
}

/// `s` cut to at most `width` columns; when it had to be cut, the last columns are
/// `ellipsis` (itself cut if the width is smaller). Escape sequences are kept (an SGR state
/// left open is reset at the end), a wide character that would straddle the limit is left
/// out.
///
/// ```
/// use pi_engine::tui::{truncate_to_width, visible_width};
///
/// assert_eq!(truncate_to_width("hello world", 8, "…"), "hello w…");
/// assert_eq!(truncate_to_width("short", 8, "…"), "short");
/// let cut = truncate_to_width("\x1b[31m日本語テキスト\x1b[0m", 7, "…");
/// assert!(visible_width(&cut) <= 7);
/// ```
pub fn truncate_to_width(s: &str, width: usize, ellipsis: &str) -> String {
    if visible_width(s) <= width {
        return s.to_owned();
    }
    let ellipsis_width = visible_width(ellipsis);
    let (ellipsis, budget) = if ellipsis_width > width {
        ("", width)
    } else {
        (ellipsis, width - ellipsis_width)
    };
    let mut out = String::with_capacity(s.len().min(width * 4 + 16));
    let mut used = 0;
    let mut sgr = SgrState::default();
    for piece in pieces(s) {
        match piece {
            Piece::Escape(e) => {
                sgr.apply(e);
                out.push_str(e);
            }
            Piece::Grapheme(g, w) => {
                if used + w > budget {
                    break;
                }
                used += w;
                out.push_str(g);
            }
        }
    }
    out.push_str(ellipsis);
    if sgr.is_active() {
        out.push_str(RESET);
    }
    out
}

/// `s` padded with spaces to exactly `width` columns, or cut to it (no ellipsis).
pub fn fit_to_width(s: &str, width: usize) -> String {
    let w = visible_width(s);
    if w > width {
        let cut = truncate_to_width(s, width, "");
        let cw = visible_width(&cut);
        return cut + &" ".repeat(width - cw);
    }
    let mut out = String::with_capacity(s.len() + width - w);
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', width - w));
    out
}

/// The columns `start..start + len` of `s`: the escape sequences before and inside them are
/// kept (so the slice has the colours it had in the line), a wide character cut by either
/// edge becomes spaces. For compositing an overlay over a line.
pub(crate) fn slice_columns(s: &str, start: usize, len: usize) -> String {
    let end = start + len;
    let mut out = String::new();
    let mut col = 0;
    for piece in pieces(s) {
        match piece {
            Piece::Escape(e) => {
                if col < end {
                    out.push_str(e);
                }
            }
            Piece::Grapheme(g, w) => {
                let next = col + w;
                if next <= start || col >= end {
                    // Outside.
                } else if col >= start && next <= end {
                    out.push_str(g);
                } else {
                    // Straddles an edge: the columns inside become spaces.
                    let inside = next.min(end) - col.max(start);
                    out.extend(std::iter::repeat_n(' ', inside));
                }
                col = next;
                if col >= end {
                    // Keep escapes right at the end only if they reset (handled by caller).
                }
            }
        }
    }
    let got = visible_width(&out);
    if got < len {
        out.extend(std::iter::repeat_n(' ', len - got));
    }
    out
}

/// Wraps `text` to lines of at most `width` columns, at spaces where it can, inside words
/// where a word is longer than a line. Existing newlines end lines. Colours carry over: a
/// line that ends inside an SGR state is reset, and the next line reopens it.
///
/// ```
/// use pi_engine::tui::wrap_text_with_ansi;
///
/// let lines = wrap_text_with_ansi("the quick brown fox jumps", 10);
/// assert_eq!(lines, ["the quick", "brown fox", "jumps"]);
/// ```
pub fn wrap_text_with_ansi(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut sgr = SgrState::default();
    for source in text.split('\n') {
        wrap_line(source, width, &mut sgr, &mut lines);
    }
    lines
}

/// Places words on lines for [`wrap_line`].
struct Wrapper<'o> {
    width: usize,
    line: String,
    line_width: usize,
    /// The line was started by wrapping (its leading spaces are dropped).
    wrapped: bool,
    state: SgrState,
    out: &'o mut Vec<String>,
}

impl Wrapper<'_> {
    fn push(&mut self, piece: Piece<'_>) {
        match piece {
            Piece::Escape(e) => {
                self.state.apply(e);
                self.line.push_str(e);
            }
            Piece::Grapheme(g, w) => {
                self.line.push_str(g);
                self.line_width += w;
            }
        }
    }

    fn spaces(&mut self, n: usize) {
        if self.wrapped && self.line_width == 0 {
            return;
        }
        let n = n.min(self.width - self.line_width);
        self.line.extend(std::iter::repeat_n(' ', n));
        self.line_width += n;
    }

    fn flush(&mut self) {
        let trimmed = self.line.trim_end_matches(' ').len();
        self.line.truncate(trimmed);
        if self.state.is_active() {
            self.line.push_str(RESET);
        }
        self.out
            .push(std::mem::replace(&mut self.line, self.state.prefix()));
        self.line_width = 0;
        self.wrapped = true;
    }

    /// Places a word (graphemes and escapes) of `width` columns after `spaces` spaces.
    fn place(&mut self, word: &[Piece<'_>], width: usize, spaces: usize) {
        let fresh = self.wrapped && self.line_width == 0;
        let gap = if fresh { 0 } else { spaces };
        if self.line_width + gap + width <= self.width {
            self.spaces(spaces);
            word.iter().for_each(|p| self.push(*p));
            return;
        }
        if width <= self.width {
            self.flush();
            word.iter().for_each(|p| self.push(*p));
            return;
        }
        // Longer than a line: cut between graphemes.
        self.spaces(spaces);
        for piece in word {
            if let Piece::Grapheme(_, w) = piece {
                if *w > self.width {
                    continue; // wider than the whole line: cannot be shown
                }
                if self.line_width + w > self.width {
                    self.flush();
                }
            }
            self.push(*piece);
        }
    }

    fn finish(mut self) -> SgrState {
        let trimmed = self.line.trim_end_matches(' ').len();
        self.line.truncate(trimmed);
        if self.state.is_active() {
            self.line.push_str(RESET);
        }
        self.out.push(self.line);
        self.state
    }
}

/// Wraps one source line (no newline) into `out`.
fn wrap_line(source: &str, width: usize, sgr: &mut SgrState, out: &mut Vec<String>) {
    let mut wrapper = Wrapper {
        width,
        line: sgr.prefix(),
        line_width: 0,
        wrapped: false,
        state: sgr.clone(),
        out,
    };
    let mut word: Vec<Piece<'_>> = Vec::new();
    let mut word_width = 0;
    let mut spaces = 0;
    for piece in pieces(source) {
        match piece {
            Piece::Grapheme(" ", _) => {
                if !word.is_empty() {
                    wrapper.place(&word, word_width, spaces);
                    word.clear();
                    word_width = 0;
                    spaces = 0;
                }
                spaces += 1;
            }
            Piece::Escape(_) => word.push(piece),
            Piece::Grapheme(_, w) => {
                word.push(piece);
                word_width += w;
            }
        }
    }
    if !word.is_empty() {
        wrapper.place(&word, word_width, spaces);
    }
    *sgr = wrapper.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths() {
        assert_eq!(visible_width(""), 0);
        assert_eq!(visible_width("abc"), 3);
        assert_eq!(visible_width("\x1b[38;2;1;2;3mx\x1b[0m"), 1);
        assert_eq!(visible_width("\x1b]8;;https://a.b\x07link\x1b]8;;\x07"), 4);
        assert_eq!(visible_width("\x1b_pi:c\x07|"), 1);
        assert_eq!(visible_width("中文"), 4);
        assert_eq!(visible_width("👨‍👩‍👧"), 2);
        assert_eq!(visible_width("❤️"), 2);
        assert_eq!(visible_width("a\tb"), 2 + TAB_WIDTH);
        assert_eq!(visible_width("\x1b"), 0);
    }

    #[test]
    fn truncation_never_exceeds_the_width() {
        let samples = [
            "plain text that is long",
            "\x1b[1;31m红色的文字很长很长\x1b[0m tail",
            "emoji 👍🏽👍🏽👍🏽 and more",
            "e\u{301}e\u{301}e\u{301}e\u{301}",
        ];
        for s in samples {
            for w in 0..20 {
                let t = truncate_to_width(s, w, "…");
                assert!(visible_width(&t) <= w, "{s:?} at {w}: {t:?}");
            }
        }
        assert_eq!(
            truncate_to_width("\x1b[31mhello\x1b[0m", 3, "…"),
            "\x1b[31mhe…\x1b[0m"
        );
        assert_eq!(truncate_to_width("中文字", 3, ""), "中");
    }

    #[test]
    fn fitting_and_slicing() {
        assert_eq!(fit_to_width("ab", 4), "ab  ");
        assert_eq!(fit_to_width("abcdef", 4), "abcd");
        assert_eq!(fit_to_width("中文字", 5), "中文 ");
        assert_eq!(slice_columns("abcdef", 2, 3), "cde");
        assert_eq!(slice_columns("a中b", 2, 2), " b");
        assert_eq!(slice_columns("\x1b[31mabc", 1, 1), "\x1b[31mb");
        assert_eq!(slice_columns("ab", 1, 3), "b  ");
    }

    #[test]
    fn wrapping() {
        assert_eq!(wrap_text_with_ansi("", 10), [""]);
        assert_eq!(wrap_text_with_ansi("a\nb", 10), ["a", "b"]);
        assert_eq!(wrap_text_with_ansi("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap_text_with_ansi("aa bb cc", 5), ["aa bb", "cc"]);
        let colored = wrap_text_with_ansi("\x1b[31mred words here\x1b[0m", 9);
        assert_eq!(colored, ["\x1b[31mred words\x1b[0m", "\x1b[31mhere\x1b[0m"]);
        for w in 1..12 {
            for line in wrap_text_with_ansi("日本語のテキスト and words 👍🏽 mixed", w)
            {
                assert!(visible_width(&line) <= w, "{line:?} at {w}");
            }
        }
    }
}
