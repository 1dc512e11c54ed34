//! Text entry: [`Editor`] (pi's multi-line prompt editor: wrapping, history, kill ring,
//! undo, collapsed large pastes) and [`TextInput`] (pi's one-line `Input`, scrolled
//! horizontally so that the cursor stays visible).
//!
//! The cursor is a line and a byte offset that always sits on a grapheme boundary (or on the
//! edge of a paste marker, which moves and deletes as one unit). Key bindings are pi's
//! defaults (see `keybindings.js` in pi-tui).

use std::collections::BTreeMap;

use unicode_segmentation::UnicodeSegmentation;

use super::component::Component;
use super::keys::{Input, Key, KeyCode};
use super::renderer::CURSOR_MARKER;
use super::style::Style;
use super::width::{fit_to_width, truncate_to_width, visible_width};

/// Inverse video on, for the drawn cursor.
const INVERSE: &str = "\x1b[7m";
/// Inverse video off.
const INVERSE_OFF: &str = "\x1b[27m";
/// A paste with more lines than this is collapsed into a marker.
const PASTE_MAX_LINES: usize = 10;
/// A paste with more characters than this is collapsed into a marker.
const PASTE_MAX_CHARS: usize = 1000;
/// Entries kept in the history.
const HISTORY_MAX: usize = 100;
/// Snapshots kept on the undo stack.
const UNDO_MAX: usize = 1000;

/// pi's punctuation class for word motions.
fn is_punctuation(g: &str) -> bool {
    g.chars()
        .next()
        .is_some_and(|c| "(){}[]<>.,;:'\"!?+-=*/\\|&%^$#@~`".contains(c))
}

fn is_whitespace(g: &str) -> bool {
    g.chars().next().is_some_and(char::is_whitespace)
}

/// Line endings normalized to `\n`, tabs as four spaces (pi's `normalizeText`).
fn normalize(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace('\t', "    ")
}

/// Parses what follows `[paste #` in a marker: `N]`, `N +L lines]` or `N C chars]`.
/// Returns the id and the bytes consumed.
fn parse_marker_tail(rest: &str) -> Option<(u32, usize)> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let d = digits(rest);
    if d == 0 {
        return None;
    }
    let id = rest[..d].parse().ok()?;
    let after = &rest[d..];
    if after.starts_with(']') {
        return Some((id, d + 1));
    }
    let after = after.strip_prefix(' ')?;
    let (plus, body) = match after.strip_prefix('+') {
        Some(body) => (1, body),
        None => (0, after),
    };
    let n = digits(body);
    let suffix = if plus == 1 { " lines]" } else { " chars]" };
    (n > 0 && body[n..].starts_with(suffix)).then_some((id, d + 1 + plus + n + suffix.len()))
}

/// The paste markers in `text` whose id is in `pastes`: (start, end, id).
fn find_markers(text: &str, pastes: &BTreeMap<u32, String>) -> Vec<(usize, usize, u32)> {
    const OPEN: &str = "[paste #";
    let mut out = Vec::new();
    if pastes.is_empty() {
        return out;
    }
    let mut from = 0;
    while let Some(p) = text[from..].find(OPEN) {
        let start = from + p;
        let tail = start + OPEN.len();
        match parse_marker_tail(&text[tail..]) {
            Some((id, len)) if pastes.contains_key(&id) => {
                out.push((start, tail + len, id));
                from = tail + len;
            }
            _ => from = tail,
        }
    }
    out
}

/// `text` with each valid paste marker replaced by its paste.
fn expand_markers(text: &str, pastes: &BTreeMap<u32, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, id) in find_markers(text, pastes) {
        out.push_str(&text[last..start]);
        out.push_str(pastes.get(&id).map_or("", String::as_str));
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

/// The editing units of a line: grapheme clusters, and paste markers as one unit each.
/// Each is (byte offset, text).
fn segments<'a>(line: &'a str, pastes: &BTreeMap<u32, String>) -> Vec<(usize, &'a str)> {
    let markers = if line.contains("[paste #") {
        find_markers(line, pastes)
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    let mut m = 0;
    for (i, g) in line.grapheme_indices(true) {
        while m < markers.len() && markers[m].1 <= i {
            m += 1;
        }
        match markers.get(m) {
            Some(&(s, e, _)) if i >= s && i < e => {
                if i == s {
                    out.push((s, &line[s..e]));
                }
            }
            _ => out.push((i, g)),
        }
    }
    out
}

/// One row of a wrapped line: the byte range `start..end` of its logical line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chunk {
    start: usize,
    end: usize,
}

/// Wraps a line at whitespace to `max` columns, breaking words that do not fit
/// (pi's `wordWrapLine`). A unit wider than `max` gets a row of its own.
fn wrap_line(line: &str, max: usize, pastes: &BTreeMap<u32, String>) -> Vec<Chunk> {
    let max = max.max(1);
    if visible_width(line) <= max {
        return vec![Chunk {
            start: 0,
            end: line.len(),
        }];
    }
    let mut chunks = Vec::new();
    let mut chunk_start = 0;
    let mut current = 0;
    let mut opp: Option<(usize, usize)> = None;
    let segs = segments(line, pastes);
    for (n, &(i, g)) in segs.iter().enumerate() {
        let w = visible_width(g);
        let ws = is_whitespace(g);
        if current + w > max {
            match opp {
                Some((at, at_width)) if at > chunk_start && current - at_width + w <= max => {
                    chunks.push(Chunk {
                        start: chunk_start,
                        end: at,
                    });
                    chunk_start = at;
                    current -= at_width;
                }
                _ if chunk_start < i => {
                    chunks.push(Chunk {
                        start: chunk_start,
                        end: i,
                    });
                    chunk_start = i;
                    current = 0;
                }
                _ => {}
            }
            opp = None;
        }
        if w > max {
            if chunk_start < i {
                chunks.push(Chunk {
                    start: chunk_start,
                    end: i,
                });
            }
            chunks.push(Chunk {
                start: i,
                end: i + g.len(),
            });
            chunk_start = i + g.len();
            current = 0;
            opp = None;
            continue;
        }
        current += w;
        // A break is allowed after the last space before a word.
        if let Some(&(next, g)) = segs.get(n + 1)
            && ws
            && !is_whitespace(g)
        {
            opp = Some((next, current));
        }
    }
    if chunk_start < line.len() || chunks.is_empty() {
        chunks.push(Chunk {
            start: chunk_start,
            end: line.len(),
        });
    }
    chunks
}

/// The cursor drawn over `at` (a grapheme, or a space at the end of the text), with the
/// hardware cursor marker before it when focused.
fn draw_cursor(at: &str, focused: bool) -> String {
    let marker = if focused { CURSOR_MARKER } else { "" };
    format!("{marker}{INVERSE}{at}{INVERSE_OFF}")
}

/// What the last edit was, for undo coalescing, kill accumulation and yank-pop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LastAction {
    TypeWord,
    Kill,
    Yank,
}

/// The text and the cursor: what an undo step restores.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    lines: Vec<String>,
    line: usize,
    col: usize,
}

impl Default for State {
    fn default() -> Self {
        State {
            lines: vec![String::new()],
            line: 0,
            col: 0,
        }
    }
}

/// The editing engine shared by [`Editor`] and [`TextInput`].
#[derive(Debug, Clone, Default)]
struct Buffer {
    state: State,
    undo: Vec<State>,
    kill_ring: Vec<String>,
    last_action: Option<LastAction>,
    pastes: BTreeMap<u32, String>,
    paste_counter: u32,
    /// The visual column kept by vertical motions.
    preferred_col: Option<usize>,
}

impl Buffer {
    fn text(&self) -> String {
        self.state.lines.join("\n")
    }

    fn cur(&self) -> &str {
        self.state
            .lines
            .get(self.state.line)
            .map_or("", String::as_str)
    }

    fn cur_mut(&mut self) -> &mut String {
        if self.state.lines.is_empty() {
            self.state.lines.push(String::new());
        }
        self.state.line = self.state.line.min(self.state.lines.len() - 1);
        &mut self.state.lines[self.state.line]
    }

    fn set_col(&mut self, col: usize) {
        self.state.col = col;
        self.preferred_col = None;
    }

    fn push_undo(&mut self) {
        if self.undo.len() >= UNDO_MAX {
            self.undo.remove(0);
        }
        self.undo.push(self.state.clone());
    }

    fn undo(&mut self) -> bool {
        let Some(state) = self.undo.pop() else {
            return false;
        };
        self.state = state;
        self.last_action = None;
        self.preferred_col = None;
        true
    }

    /// Replaces the text, the cursor at its end.
    fn set_text_internal(&mut self, text: &str) {
        self.state.lines = text.split('\n').map(str::to_owned).collect();
        self.state.line = self.state.lines.len() - 1;
        let len = self.cur().len();
        self.set_col(len);
    }

    /// The start of the unit before the cursor.
    fn prev_boundary(&self) -> usize {
        let col = self.state.col;
        segments(self.cur(), &self.pastes)
            .iter()
            .rev()
            .find(|(i, _)| *i < col)
            .map_or(0, |(i, _)| *i)
    }

    /// The end of the unit at the cursor.
    fn next_boundary(&self) -> usize {
        let col = self.state.col;
        segments(self.cur(), &self.pastes)
            .iter()
            .find(|(i, g)| i + g.len() > col)
            .map_or(self.cur().len(), |(i, g)| i + g.len())
    }

    /// Types one character (or grapheme); word runs coalesce into one undo step, each
    /// space is its own (fish-style, as pi).
    fn insert_char(&mut self, text: &str) {
        if is_whitespace(text) || self.last_action != Some(LastAction::TypeWord) {
            self.push_undo();
        }
        self.last_action = Some(LastAction::TypeWord);
        let col = self.state.col;
        self.cur_mut().insert_str(col, text);
        self.set_col(col + text.len());
    }

    /// Inserts text that may hold newlines at the cursor (no undo step of its own).
    fn insert_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let col = self.state.col;
        let line = self.state.line;
        let mut parts = text.split('\n');
        let first = parts.next().unwrap_or("");
        let rest: Vec<&str> = parts.collect();
        let current = std::mem::take(self.cur_mut());
        let (before, after) = current.split_at(col);
        match rest.split_last() {
            None => {
                *self.cur_mut() = format!("{before}{first}{after}");
                self.set_col(col + first.len());
            }
            Some((last, middle)) => {
                let mut new_lines = vec![format!("{before}{first}")];
                new_lines.extend(middle.iter().map(|s| (*s).to_owned()));
                new_lines.push(format!("{last}{after}"));
                let n = new_lines.len();
                self.state.lines.splice(line..=line, new_lines);
                self.state.line = line + n - 1;
                self.set_col(last.len());
            }
        }
    }

    fn new_line(&mut self) {
        self.last_action = None;
        self.push_undo();
        let col = self.state.col;
        let after = self.cur_mut().split_off(col);
        self.state.lines.insert(self.state.line + 1, after);
        self.state.line += 1;
        self.set_col(0);
    }

    /// Joins the current line onto the previous one, the cursor at the joint.
    fn join_with_previous(&mut self) {
        let current = self.state.lines.remove(self.state.line);
        self.state.line -= 1;
        let len = self.cur().len();
        self.cur_mut().push_str(&current);
        self.set_col(len);
    }

    /// Joins the next line onto the current one.
    fn join_with_next(&mut self) {
        let next = self.state.lines.remove(self.state.line + 1);
        self.cur_mut().push_str(&next);
    }

    fn backspace(&mut self) {
        self.last_action = None;
        if self.state.col > 0 {
            self.push_undo();
            let from = self.prev_boundary();
            let col = self.state.col;
            self.cur_mut().replace_range(from..col, "");
            self.set_col(from);
        } else if self.state.line > 0 {
            self.push_undo();
            self.join_with_previous();
        }
    }

    fn delete_forward(&mut self) {
        self.last_action = None;
        if self.state.col < self.cur().len() {
            self.push_undo();
            let to = self.next_boundary();
            let col = self.state.col;
            self.cur_mut().replace_range(col..to, "");
        } else if self.state.line + 1 < self.state.lines.len() {
            self.push_undo();
            self.join_with_next();
        }
    }

    fn move_left(&mut self) {
        self.last_action = None;
        if self.state.col > 0 {
            let to = self.prev_boundary();
            self.set_col(to);
        } else if self.state.line > 0 {
            self.state.line -= 1;
            let len = self.cur().len();
            self.set_col(len);
        }
    }

    fn move_right(&mut self) {
        self.last_action = None;
        if self.state.col < self.cur().len() {
            let to = self.next_boundary();
            self.set_col(to);
        } else if self.state.line + 1 < self.state.lines.len() {
            self.state.line += 1;
            self.set_col(0);
        }
    }

    fn line_start(&mut self) {
        self.last_action = None;
        self.set_col(0);
    }

    fn line_end(&mut self) {
        self.last_action = None;
        let len = self.cur().len();
        self.set_col(len);
    }

    /// Where a word motion backwards lands: whitespace, then a punctuation run or a word run
    /// (a paste marker is one word).
    fn word_left_target(&self) -> usize {
        let col = self.state.col;
        let segs = segments(self.cur(), &self.pastes);
        let mut before: Vec<&str> = segs
            .iter()
            .filter(|(i, _)| *i < col)
            .map(|(_, g)| *g)
            .collect();
        let mut at = col;
        let is_marker = |g: &str| g.len() >= 10 && g.starts_with("[paste #");
        while let Some(g) = before.last().filter(|g| !is_marker(g) && is_whitespace(g)) {
            at -= g.len();
            before.pop();
        }
        if let Some(last) = before.last().copied() {
            if is_marker(last) {
                at -= last.len();
            } else {
                let punct = is_punctuation(last);
                while let Some(g) = before
                    .last()
                    .filter(|g| !is_marker(g) && !is_whitespace(g) && is_punctuation(g) == punct)
                {
                    at -= g.len();
                    before.pop();
                }
            }
        }
        at
    }

    fn word_right_target(&self) -> usize {
        let col = self.state.col;
        let segs = segments(self.cur(), &self.pastes);
        let mut after = segs
            .iter()
            .filter(|(i, _)| *i >= col)
            .map(|(_, g)| *g)
            .peekable();
        let mut at = col;
        let is_marker = |g: &str| g.len() >= 10 && g.starts_with("[paste #");
        while let Some(g) = after.next_if(|g| !is_marker(g) && is_whitespace(g)) {
            at += g.len();
        }
        if let Some(first) = after.peek().copied() {
            if is_marker(first) {
                at += first.len();
            } else {
                let punct = is_punctuation(first);
                while let Some(g) = after
                    .next_if(|g| !is_marker(g) && !is_whitespace(g) && is_punctuation(g) == punct)
                {
                    at += g.len();
                }
            }
        }
        at
    }

    fn word_left(&mut self) {
        self.last_action = None;
        if self.state.col == 0 {
            if self.state.line > 0 {
                self.state.line -= 1;
                let len = self.cur().len();
                self.set_col(len);
            }
            return;
        }
        let to = self.word_left_target();
        self.set_col(to);
    }

    fn word_right(&mut self) {
        self.last_action = None;
        if self.state.col >= self.cur().len() {
            if self.state.line + 1 < self.state.lines.len() {
                self.state.line += 1;
                self.set_col(0);
            }
            return;
        }
        let to = self.word_right_target();
        self.set_col(to);
    }

    /// Adds killed text to the ring, joined to the last kill when kills follow each other.
    fn kill(&mut self, text: &str, prepend: bool) {
        if !text.is_empty() {
            let accumulate = self.last_action == Some(LastAction::Kill);
            match self.kill_ring.last_mut() {
                Some(last) if accumulate => {
                    if prepend {
                        last.insert_str(0, text);
                    } else {
                        last.push_str(text);
                    }
                }
                _ => self.kill_ring.push(text.to_owned()),
            }
        }
        self.last_action = Some(LastAction::Kill);
    }

    fn kill_to_start(&mut self) {
        let col = self.state.col;
        if col > 0 {
            self.push_undo();
            let killed: String = self.cur_mut().drain(..col).collect();
            self.kill(&killed, true);
            self.set_col(0);
        } else if self.state.line > 0 {
            self.push_undo();
            self.kill("\n", true);
            self.join_with_previous();
        }
    }

    fn kill_to_end(&mut self) {
        let col = self.state.col;
        if col < self.cur().len() {
            self.push_undo();
            let killed = self.cur_mut().split_off(col);
            self.kill(&killed, false);
        } else if self.state.line + 1 < self.state.lines.len() {
            self.push_undo();
            self.kill("\n", false);
            self.join_with_next();
        }
    }

    fn delete_word_back(&mut self) {
        let col = self.state.col;
        if col == 0 {
            if self.state.line > 0 {
                self.push_undo();
                self.kill("\n", true);
                self.join_with_previous();
            }
            return;
        }
        self.push_undo();
        let from = self.word_left_target();
        let killed: String = self.cur_mut().drain(from..col).collect();
        self.kill(&killed, true);
        self.set_col(from);
    }

    fn delete_word_forward(&mut self) {
        let col = self.state.col;
        if col >= self.cur().len() {
            if self.state.line + 1 < self.state.lines.len() {
                self.push_undo();
                self.kill("\n", false);
                self.join_with_next();
            }
            return;
        }
        self.push_undo();
        let to = self.word_right_target();
        let killed: String = self.cur_mut().drain(col..to).collect();
        self.kill(&killed, false);
    }

    fn yank(&mut self) {
        let Some(text) = self.kill_ring.last().cloned() else {
            return;
        };
        self.push_undo();
        self.insert_text(&text);
        self.last_action = Some(LastAction::Yank);
    }

    /// Replaces the text just yanked with the previous kill.
    fn yank_pop(&mut self) {
        if self.last_action != Some(LastAction::Yank) || self.kill_ring.len() < 2 {
            return;
        }
        self.push_undo();
        let yanked = self.kill_ring.last().cloned().unwrap_or_default();
        // The cursor is at the end of the yanked text: remove it.
        let yank_lines: Vec<&str> = yanked.split('\n').collect();
        let start_line = self.state.line + 1 - yank_lines.len();
        let first_len = yank_lines.first().map_or(0, |s| s.len());
        let start_col = if yank_lines.len() == 1 {
            self.state.col - first_len
        } else {
            self.state.lines[start_line].len() - first_len
        };
        let after = self.cur()[self.state.col..].to_owned();
        let before = self.state.lines[start_line][..start_col].to_owned();
        self.state
            .lines
            .splice(start_line..=self.state.line, [format!("{before}{after}")]);
        self.state.line = start_line;
        self.set_col(start_col);
        self.kill_ring.rotate_right(1);
        let text = self.kill_ring.last().cloned().unwrap_or_default();
        self.insert_text(&text);
        self.last_action = Some(LastAction::Yank);
    }
}

/// What a key does in either component, after the component's own keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Undo,
    KillToEnd,
    KillToStart,
    DeleteWordBack,
    DeleteWordForward,
    Backspace,
    Delete,
    Yank,
    YankPop,
    LineStart,
    LineEnd,
    WordLeft,
    WordRight,
    Left,
    Right,
    Type(char),
}

impl Edit {
    /// pi's default bindings for single-line editing.
    fn from_key(key: &Key) -> Option<Edit> {
        let m = key.modifiers;
        if m.super_key {
            return None;
        }
        Some(match key.code {
            KeyCode::Char(c) if m.ctrl && !m.alt => match c.to_ascii_lowercase() {
                'z' | '-' | '_' => Edit::Undo,
                'k' => Edit::KillToEnd,
                'u' => Edit::KillToStart,
                'w' => Edit::DeleteWordBack,
                'd' => Edit::Delete,
                'y' => Edit::Yank,
                'a' => Edit::LineStart,
                'e' => Edit::LineEnd,
                'b' => Edit::Left,
                'f' => Edit::Right,
                _ => return None,
            },
            KeyCode::Char(c) if m.alt && !m.ctrl => match c {
                'b' => Edit::WordLeft,
                'f' => Edit::WordRight,
                'd' => Edit::DeleteWordForward,
                'y' => Edit::YankPop,
                _ => return None,
            },
            KeyCode::Char(c) if !m.ctrl && !m.alt && !c.is_control() => Edit::Type(c),
            KeyCode::Backspace if m.alt || m.ctrl => Edit::DeleteWordBack,
            KeyCode::Backspace => Edit::Backspace,
            KeyCode::Delete if m.alt => Edit::DeleteWordForward,
            KeyCode::Delete => Edit::Delete,
            KeyCode::Left if m.alt || m.ctrl => Edit::WordLeft,
            KeyCode::Right if m.alt || m.ctrl => Edit::WordRight,
            KeyCode::Left => Edit::Left,
            KeyCode::Right => Edit::Right,
            KeyCode::Home => Edit::LineStart,
            KeyCode::End => Edit::LineEnd,
            _ => return None,
        })
    }

    /// True for motions, which leave the text (and history browsing) alone.
    fn is_motion(self) -> bool {
        matches!(
            self,
            Edit::LineStart
                | Edit::LineEnd
                | Edit::WordLeft
                | Edit::WordRight
                | Edit::Left
                | Edit::Right
        )
    }

    fn apply(self, buf: &mut Buffer) {
        match self {
            Edit::Undo => {
                buf.undo();
            }
            Edit::KillToEnd => buf.kill_to_end(),
            Edit::KillToStart => buf.kill_to_start(),
            Edit::DeleteWordBack => buf.delete_word_back(),
            Edit::DeleteWordForward => buf.delete_word_forward(),
            Edit::Backspace => buf.backspace(),
            Edit::Delete => buf.delete_forward(),
            Edit::Yank => buf.yank(),
            Edit::YankPop => buf.yank_pop(),
            Edit::LineStart => buf.line_start(),
            Edit::LineEnd => buf.line_end(),
            Edit::WordLeft => buf.word_left(),
            Edit::WordRight => buf.word_right(),
            Edit::Left => buf.move_left(),
            Edit::Right => buf.move_right(),
            Edit::Type(c) => buf.insert_char(c.encode_utf8(&mut [0; 4])),
        }
    }
}

/// pi's multi-line prompt editor: the text wrapped to the width between two horizontal
/// rules, a drawn cursor (and the hardware cursor's marker when focused), pi's key bindings
/// (Enter submits, Shift+Enter, Alt+Enter, Ctrl+J or `\` then Enter insert a newline; Up and
/// Down at the first and last rows browse the history; Emacs kills and yanks; Ctrl+- or
/// Ctrl+Z undo), and large pastes collapsed into a marker such as `[paste #1 +42 lines]`
/// that is expanded again when the text is submitted.
///
/// ```
/// use pi_engine::tui::{Component, Editor, Input, Key, KeyCode};
///
/// let mut editor = Editor::new();
/// editor.set_focused(true);
/// for c in "hi".chars() {
///     editor.handle_input(&Input::Key(Key::char(c)));
/// }
/// let lines = editor.render(10);
/// assert_eq!(lines.len(), 3); // rule, text, rule
/// assert_eq!(lines[0], "─".repeat(10));
/// assert!(lines[1].starts_with("hi"));
/// editor.handle_input(&Input::Key(Key::plain(KeyCode::Enter)));
/// assert_eq!(editor.take_submitted().as_deref(), Some("hi"));
/// assert!(editor.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct Editor {
    buf: Buffer,
    focused: bool,
    border_style: Style,
    placeholder: Option<String>,
    /// Newest first.
    history: Vec<String>,
    /// The history entry shown, while browsing.
    history_index: Option<usize>,
    submitted: Option<String>,
    /// The wrapping width of the last render, for vertical motions.
    last_width: usize,
    scroll: usize,
    max_visible_lines: Option<usize>,
}

impl Default for Editor {
    fn default() -> Self {
        Editor::new()
    }
}

impl Editor {
    /// An empty editor.
    pub fn new() -> Self {
        Editor {
            buf: Buffer::default(),
            focused: false,
            border_style: Style::default(),
            placeholder: None,
            history: Vec::new(),
            history_index: None,
            submitted: None,
            last_width: 79,
            scroll: 0,
            max_visible_lines: None,
        }
    }

    /// The style of the horizontal rules above and below the text.
    #[must_use]
    pub fn with_border_style(mut self, style: Style) -> Self {
        self.border_style = style;
        self
    }

    /// Shows at most `lines` rows of text, scrolling to the cursor, with `↑ n more` and
    /// `↓ n more` in the rules (pi shows 30% of the terminal's rows, at least 5).
    #[must_use]
    pub fn with_max_visible_lines(mut self, lines: usize) -> Self {
        self.max_visible_lines = Some(lines.max(1));
        self
    }

    /// Dim text shown while the editor is empty.
    pub fn set_placeholder(&mut self, text: impl Into<String>) {
        self.placeholder = Some(text.into());
    }

    /// The text, paste markers as they are shown (see [`expanded_text`](Self::expanded_text)).
    pub fn text(&self) -> String {
        self.buf.text()
    }

    /// The text with paste markers replaced by the pastes.
    pub fn expanded_text(&self) -> String {
        expand_markers(&self.buf.text(), &self.buf.pastes)
    }

    /// Replaces the text (line endings normalized, tabs as four spaces), the cursor at its
    /// end; undoable.
    pub fn set_text(&mut self, text: &str) {
        let text = normalize(text);
        self.history_index = None;
        self.buf.last_action = None;
        if self.buf.text() != text {
            self.buf.push_undo();
        }
        self.buf.set_text_internal(&text);
    }

    /// True when there is no text at all.
    pub fn is_empty(&self) -> bool {
        self.buf.state.lines.len() == 1 && self.buf.state.lines[0].is_empty()
    }

    /// The cursor: its line and its column in grapheme clusters (a paste marker counts as
    /// one).
    pub fn cursor(&self) -> (usize, usize) {
        let col = self.buf.state.col;
        let n = segments(self.buf.cur(), &self.buf.pastes)
            .iter()
            .filter(|(i, _)| *i < col)
            .count();
        (self.buf.state.line, n)
    }

    /// The text submitted with Enter since the last call (trimmed, pastes expanded).
    pub fn take_submitted(&mut self) -> Option<String> {
        self.submitted.take()
    }

    /// Adds an entry to the history browsed with Up and Down (trimmed; empty entries and
    /// repeats of the newest are skipped; 100 are kept).
    pub fn add_to_history(&mut self, text: &str) {
        let text = text.trim();
        if text.is_empty() || self.history.first().is_some_and(|h| h == text) {
            return;
        }
        self.history.insert(0, text.to_owned());
        self.history.truncate(HISTORY_MAX);
    }

    fn submit(&mut self) {
        let text = self.expanded_text();
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.submitted = Some(text.to_owned());
        self.buf = Buffer {
            kill_ring: std::mem::take(&mut self.buf.kill_ring),
            ..Buffer::default()
        };
        self.history_index = None;
        self.scroll = 0;
    }

    fn paste(&mut self, text: &str) {
        self.history_index = None;
        self.buf.last_action = None;
        self.buf.push_undo();
        let mut text: String = normalize(text)
            .chars()
            .filter(|&c| c == '\n' || !c.is_control())
            .collect();
        // A pasted path gets a space after a word.
        if text.starts_with(['/', '~', '.'])
            && self.buf.cur()[..self.buf.state.col]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            text.insert(0, ' ');
        }
        let lines = text.split('\n').count();
        let chars = text.chars().count();
        if lines > PASTE_MAX_LINES || chars > PASTE_MAX_CHARS {
            self.buf.paste_counter += 1;
            let id = self.buf.paste_counter;
            let marker = if lines > PASTE_MAX_LINES {
                format!("[paste #{id} +{lines} lines]")
            } else {
                format!("[paste #{id} {chars} chars]")
            };
            self.buf.pastes.insert(id, text);
            self.buf.insert_text(&marker);
        } else {
            self.buf.insert_text(&text);
        }
    }

    /// The rows of the whole text at the wrapping width: (line, chunk).
    fn visual_lines(&self, width: usize) -> Vec<(usize, Chunk)> {
        self.buf
            .state
            .lines
            .iter()
            .enumerate()
            .flat_map(|(i, l)| {
                wrap_line(l, width, &self.buf.pastes)
                    .into_iter()
                    .map(move |c| (i, c))
            })
            .collect()
    }

    /// The row holding the cursor: the one it is inside, or the last of its line at the end.
    fn cursor_row(&self, rows: &[(usize, Chunk)]) -> usize {
        let (line, col) = (self.buf.state.line, self.buf.state.col);
        let mut found = 0;
        for (r, (l, c)) in rows.iter().enumerate() {
            if *l == line {
                found = r;
                if col < c.end {
                    break;
                }
            }
        }
        found
    }

    /// Moves the cursor `delta` rows, keeping its visual column; false at the edge.
    fn move_vertical(&mut self, delta: isize) -> bool {
        let rows = self.visual_lines(self.last_width);
        let row = self.cursor_row(&rows);
        let Some(target) = row.checked_add_signed(delta).filter(|t| *t < rows.len()) else {
            return false;
        };
        let (line, chunk) = rows[row];
        let text = &self.buf.state.lines[line];
        let col = self.buf.preferred_col.unwrap_or_else(|| {
            visible_width(&text[chunk.start..self.buf.state.col.max(chunk.start)])
        });
        let (tline, tchunk) = rows[target];
        let ttext = &self.buf.state.lines[tline];
        let last_of_line = rows.get(target + 1).is_none_or(|(l, _)| *l != tline);
        let mut at = tchunk.start;
        let mut used = 0;
        for (i, g) in segments(ttext, &self.buf.pastes) {
            if i < tchunk.start || i >= tchunk.end {
                continue;
            }
            let w = visible_width(g);
            if used + w > col || (!last_of_line && i + g.len() >= tchunk.end) {
                break;
            }
            used += w;
            at = i + g.len();
        }
        self.buf.state.line = tline;
        self.buf.state.col = at;
        self.buf.preferred_col = Some(col);
        self.buf.last_action = None;
        true
    }

    fn navigate_history(&mut self, up: bool) {
        self.buf.last_action = None;
        let next = match (self.history_index, up) {
            (None, true) => Some(0),
            (None, false) => return,
            (Some(i), true) => Some(i + 1),
            (Some(0), false) => None,
            (Some(i), false) => Some(i - 1),
        };
        if next.is_some_and(|n| n >= self.history.len()) {
            return;
        }
        if self.history_index.is_none() {
            self.buf.push_undo();
        }
        self.history_index = next;
        let text = next
            .and_then(|n| self.history.get(n).cloned())
            .unwrap_or_default();
        self.buf.set_text_internal(&text);
        self.scroll = 0;
    }

    fn handle_key(&mut self, key: &Key) -> bool {
        let m = key.modifiers;
        if m.super_key {
            return false;
        }
        match key.code {
            KeyCode::Enter if m.shift || m.alt => {
                self.history_index = None;
                self.buf.new_line();
            }
            KeyCode::Char('j' | 'J') if m.ctrl && !m.alt => {
                self.history_index = None;
                self.buf.new_line();
            }
            KeyCode::Enter if !m.ctrl => {
                self.history_index = None;
                if self.buf.cur()[..self.buf.state.col].ends_with('\\') {
                    self.buf.backspace();
                    self.buf.new_line();
                } else {
                    self.submit();
                }
            }
            KeyCode::Up if !m.ctrl && !m.alt => {
                let rows = self.visual_lines(self.last_width);
                let first = self.cursor_row(&rows) == 0;
                if self.is_empty() || (self.history_index.is_some() && first) {
                    self.navigate_history(true);
                } else if first {
                    self.buf.line_start();
                } else {
                    self.move_vertical(-1);
                }
            }
            KeyCode::Down if !m.ctrl && !m.alt => {
                let rows = self.visual_lines(self.last_width);
                let last = self.cursor_row(&rows) + 1 == rows.len();
                if self.history_index.is_some() && last {
                    self.navigate_history(false);
                } else if last {
                    self.buf.line_end();
                } else {
                    self.move_vertical(1);
                }
            }
            KeyCode::PageUp | KeyCode::PageDown => {
                let page = self.max_visible_lines.unwrap_or(5) as isize;
                let dir = if key.code == KeyCode::PageUp { -1 } else { 1 };
                for _ in 0..page {
                    if !self.move_vertical(dir) {
                        break;
                    }
                }
            }
            _ => {
                let Some(edit) = Edit::from_key(key) else {
                    return false;
                };
                if !edit.is_motion() {
                    self.history_index = None;
                }
                edit.apply(&mut self.buf);
            }
        }
        true
    }

    fn rule(&self, width: usize, indicator: Option<String>) -> String {
        let line = match indicator {
            Some(text) => {
                let text = truncate_to_width(&text, width, "");
                let rest = width - visible_width(&text);
                format!("{text}{}", "─".repeat(rest))
            }
            None => "─".repeat(width),
        };
        self.border_style.paint(&line).into_owned()
    }
}

impl Component for Editor {
    fn render(&mut self, width: usize) -> Vec<String> {
        // One column is kept for the cursor after the last character.
        let layout = width.saturating_sub(1).max(1);
        self.last_width = layout;
        let rows = self.visual_lines(layout);
        let cursor_row = self.cursor_row(&rows);
        let visible = self.max_visible_lines.unwrap_or(usize::MAX);
        if cursor_row < self.scroll {
            self.scroll = cursor_row;
        } else if cursor_row >= self.scroll.saturating_add(visible) {
            self.scroll = cursor_row + 1 - visible;
        }
        self.scroll = self.scroll.min(rows.len().saturating_sub(visible));
        let end = self.scroll.saturating_add(visible).min(rows.len());

        let mut out = Vec::with_capacity(end - self.scroll + 2);
        let above = (self.scroll > 0).then(|| format!("─── ↑ {} more ", self.scroll));
        out.push(self.rule(width, above));
        for (r, &(line, chunk)) in rows.iter().enumerate().take(end).skip(self.scroll) {
            let text = &self.buf.state.lines[line][chunk.start..chunk.end];
            let row = if r != cursor_row {
                text.to_owned()
            } else if self.is_empty() && self.placeholder.is_some() {
                let placeholder = self.placeholder.as_deref().unwrap_or("");
                let hint = truncate_to_width(placeholder, layout, "…");
                format!(
                    "{}{}",
                    draw_cursor(" ", self.focused),
                    Style::new().dim().paint(&hint)
                )
            } else {
                let at = self.buf.state.col.clamp(chunk.start, chunk.end) - chunk.start;
                let (before, after) = text.split_at(at);
                let under = after.graphemes(true).next().unwrap_or("");
                if under.is_empty() {
                    format!("{before}{}", draw_cursor(" ", self.focused))
                } else {
                    let rest = &after[under.len()..];
                    format!("{before}{}{rest}", draw_cursor(under, self.focused))
                }
            };
            out.push(fit_to_width(&row, width));
        }
        let below = rows.len() - end;
        let below = (below > 0).then(|| format!("─── ↓ {below} more "));
        out.push(self.rule(width, below));
        out
    }

    fn handle_input(&mut self, input: &Input) -> bool {
        match input {
            Input::Key(key) => self.handle_key(key),
            Input::Paste(text) => {
                self.paste(text);
                true
            }
        }
    }

    fn set_focused(&mut self, focused: bool) {
        self.focused = focused;
    }
}

/// pi's one-line input: a prompt (`> `) and the text, scrolled horizontally so that the
/// cursor stays visible; the editing keys of [`Editor`] without the multi-line ones. Enter
/// submits the text (kept in the input, as pi does), Escape cancels.
///
/// ```
/// use pi_engine::tui::{Component, Input, Key, KeyCode, TextInput, visible_width};
///
/// let mut input = TextInput::new();
/// input.set_focused(true);
/// input.handle_input(&Input::Paste("a rather long line of text".into()));
/// let line = &input.render(12)[0];
/// assert!(line.starts_with("> "));
/// assert_eq!(visible_width(line), 12);
/// input.handle_input(&Input::Key(Key::plain(KeyCode::Enter)));
/// assert_eq!(input.take_submitted().as_deref(), Some("a rather long line of text"));
/// ```
#[derive(Debug, Clone)]
pub struct TextInput {
    buf: Buffer,
    focused: bool,
    prompt: String,
    submitted: Option<String>,
    cancelled: bool,
    /// The first column shown.
    scroll: usize,
}

impl Default for TextInput {
    fn default() -> Self {
        TextInput::new()
    }
}

impl TextInput {
    /// An empty input with pi's prompt, `> `.
    pub fn new() -> Self {
        TextInput {
            buf: Buffer::default(),
            focused: false,
            prompt: "> ".to_owned(),
            submitted: None,
            cancelled: false,
            scroll: 0,
        }
    }

    /// Another prompt (it may be empty).
    #[must_use]
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// The text.
    pub fn value(&self) -> &str {
        self.buf.cur()
    }

    /// Replaces the text (newlines removed, tabs as four spaces), the cursor at its end.
    pub fn set_value(&mut self, text: &str) {
        let text = single_line(text);
        self.buf.last_action = None;
        if self.buf.cur() != text {
            self.buf.push_undo();
        }
        self.buf.set_text_internal(&text);
    }

    /// The cursor's column in grapheme clusters.
    pub fn cursor(&self) -> usize {
        self.buf.cur()[..self.buf.state.col].graphemes(true).count()
    }

    /// The text submitted with Enter since the last call.
    pub fn take_submitted(&mut self) -> Option<String> {
        self.submitted.take()
    }

    /// True once after Escape was pressed.
    pub fn take_cancelled(&mut self) -> bool {
        std::mem::take(&mut self.cancelled)
    }
}

/// Pasted or set text for one line: no line breaks, tabs as four spaces, no controls.
fn single_line(text: &str) -> String {
    text.replace(['\r', '\n'], "")
        .replace('\t', "    ")
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

impl Component for TextInput {
    fn render(&mut self, width: usize) -> Vec<String> {
        let prompt_width = visible_width(&self.prompt);
        if width <= prompt_width {
            return vec![truncate_to_width(&self.prompt, width, "")];
        }
        let available = width - prompt_width;
        let value = self.buf.cur();
        let col = self.buf.state.col;
        let cursor_col = visible_width(&value[..col]);
        let under = value[col..].graphemes(true).next().unwrap_or("");
        let under_width = visible_width(under).max(1);
        let total = visible_width(value);
        if total < available {
            self.scroll = 0;
        } else if cursor_col < self.scroll {
            self.scroll = cursor_col;
        } else if cursor_col + under_width > self.scroll + available {
            self.scroll = cursor_col + under_width - available;
        }
        // Keep the window full when text was deleted at its end.
        let content_end = total + usize::from(col == value.len());
        self.scroll = self
            .scroll
            .min(content_end.saturating_sub(available))
            .min(cursor_col);
        let (lo, hi) = (self.scroll, self.scroll + available);
        let mut line = self.prompt.clone();
        let mut at = 0;
        for (i, g) in value.grapheme_indices(true) {
            let w = visible_width(g);
            let (start, end) = (at, at + w);
            at = end;
            if i == col {
                line.push_str(&draw_cursor(g, self.focused));
            } else if start >= lo && end <= hi {
                line.push_str(g);
            } else if start < lo && end > lo {
                // A wide character cut by the left edge.
                line.push_str(&" ".repeat(end.min(hi) - lo));
            }
        }
        if col == value.len() {
            line.push_str(&draw_cursor(" ", self.focused));
        }
        vec![fit_to_width(&line, width)]
    }

    fn handle_input(&mut self, input: &Input) -> bool {
        match input {
            Input::Paste(text) => {
                self.buf.last_action = None;
                self.buf.push_undo();
                self.buf.insert_text(&single_line(text));
                true
            }
            Input::Key(key) if key.modifiers.super_key => false,
            Input::Key(key) => match key.code {
                KeyCode::Enter => {
                    self.submitted = Some(self.buf.cur().to_owned());
                    true
                }
                KeyCode::Esc => {
                    self.cancelled = true;
                    true
                }
                _ => match Edit::from_key(key) {
                    Some(edit) => {
                        edit.apply(&mut self.buf);
                        true
                    }
                    None => false,
                },
            },
        }
    }

    fn set_focused(&mut self, focused: bool) {
        self.focused = focused;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::Modifiers;

    fn key(code: KeyCode) -> Input {
        Input::Key(Key::plain(code))
    }

    fn with(code: KeyCode, modifiers: Modifiers) -> Input {
        Input::Key(Key::new(code, modifiers))
    }

    fn ctrl(c: char) -> Input {
        Input::Key(Key::ctrl(c))
    }

    fn alt(c: char) -> Input {
        Input::Key(Key::alt(c))
    }

    fn typed(editor: &mut impl Component, text: &str) {
        for c in text.chars() {
            assert!(editor.handle_input(&Input::Key(Key::char(c))));
        }
    }

    fn editor_with(text: &str) -> Editor {
        let mut e = Editor::new();
        e.set_text(text);
        e
    }

    /// The text with `|` at the cursor.
    fn shown(e: &Editor) -> String {
        let mut lines = e.buf.state.lines.clone();
        lines[e.buf.state.line].insert(e.buf.state.col, '|');
        lines.join("\n")
    }

    #[test]
    fn typing_moving_and_deleting() {
        let mut e = Editor::new();
        typed(&mut e, "héllo wörld");
        assert_eq!(e.text(), "héllo wörld");
        e.handle_input(&ctrl('a'));
        e.handle_input(&key(KeyCode::Right));
        e.handle_input(&key(KeyCode::Delete));
        assert_eq!(shown(&e), "h|llo wörld");
        e.handle_input(&key(KeyCode::Backspace));
        assert_eq!(shown(&e), "|llo wörld");
        e.handle_input(&key(KeyCode::Backspace));
        assert_eq!(shown(&e), "|llo wörld");
        e.handle_input(&ctrl('e'));
        assert_eq!(shown(&e), "llo wörld|");
        e.handle_input(&key(KeyCode::Home));
        e.handle_input(&ctrl('f'));
        e.handle_input(&ctrl('d'));
        assert_eq!(shown(&e), "l|o wörld");
        e.handle_input(&ctrl('b'));
        e.handle_input(&key(KeyCode::End));
        assert_eq!(e.cursor(), (0, 8));
        // Graphemes: an emoji with a skin tone and a combining accent move as one.
        let mut e = editor_with("a👍🏽e\u{301}");
        e.handle_input(&key(KeyCode::Left));
        assert_eq!(e.cursor(), (0, 2));
        e.handle_input(&key(KeyCode::Backspace));
        assert_eq!(e.text(), "ae\u{301}");
    }

    #[test]
    fn newlines_and_submit() {
        let mut e = Editor::new();
        typed(&mut e, "one");
        e.handle_input(&with(KeyCode::Enter, Modifiers::SHIFT));
        typed(&mut e, "two");
        e.handle_input(&ctrl('j'));
        typed(&mut e, "three\\");
        e.handle_input(&key(KeyCode::Enter));
        typed(&mut e, "four");
        e.handle_input(&with(KeyCode::Enter, Modifiers::ALT));
        assert_eq!(e.text(), "one\ntwo\nthree\nfour\n");
        // Backspace at a line's start joins it to the one before.
        e.handle_input(&key(KeyCode::Backspace));
        assert_eq!(shown(&e), "one\ntwo\nthree\nfour|");
        // Left and Right cross lines.
        e.handle_input(&key(KeyCode::Home));
        e.handle_input(&key(KeyCode::Left));
        assert_eq!(e.cursor(), (2, 5));
        e.handle_input(&key(KeyCode::Right));
        assert_eq!(e.cursor(), (3, 0));
        e.handle_input(&key(KeyCode::Enter));
        assert_eq!(e.take_submitted().as_deref(), Some("one\ntwo\nthree\nfour"));
        assert_eq!(e.take_submitted(), None);
        assert!(e.is_empty());
        // Whitespace alone is not submitted.
        typed(&mut e, "  ");
        e.handle_input(&key(KeyCode::Enter));
        assert_eq!(e.take_submitted(), None);
        assert_eq!(e.text(), "  ");
    }

    #[test]
    fn undo_coalesces_words() {
        let mut e = Editor::new();
        typed(&mut e, "hello world");
        e.handle_input(&ctrl('w'));
        assert_eq!(e.text(), "hello ");
        e.handle_input(&ctrl('-'));
        assert_eq!(e.text(), "hello world");
        e.handle_input(&ctrl('z'));
        assert_eq!(e.text(), "hello");
        e.handle_input(&ctrl('z'));
        assert_eq!(e.text(), "");
        assert!(!e.buf.undo());
        // A newline, a paste and set_text are steps of their own.
        typed(&mut e, "ab");
        e.handle_input(&with(KeyCode::Enter, Modifiers::SHIFT));
        e.handle_input(&Input::Paste("x\ny".into()));
        e.set_text("other");
        e.handle_input(&ctrl('z'));
        assert_eq!(e.text(), "ab\nx\ny");
        e.handle_input(&ctrl('z'));
        assert_eq!(e.text(), "ab\n");
        e.handle_input(&ctrl('z'));
        assert_eq!(shown(&e), "ab|");
    }

    #[test]
    fn kill_ring_accumulates_yanks_and_rotates() {
        let mut e = editor_with("alpha beta gamma");
        e.handle_input(&ctrl('w'));
        e.handle_input(&ctrl('w'));
        assert_eq!(e.text(), "alpha ");
        // Consecutive kills joined in one entry.
        e.handle_input(&ctrl('y'));
        assert_eq!(e.text(), "alpha beta gamma");
        e.handle_input(&ctrl('a'));
        e.handle_input(&ctrl('k'));
        assert_eq!(e.text(), "");
        e.handle_input(&ctrl('y'));
        assert_eq!(e.text(), "alpha beta gamma");
        assert_eq!(e.buf.kill_ring, ["beta gamma", "alpha beta gamma"]);
        // Alt+Y replaces the yank with the older kill, then cycles.
        e.handle_input(&alt('y'));
        assert_eq!(shown(&e), "beta gamma|");
        e.handle_input(&alt('y'));
        assert_eq!(shown(&e), "alpha beta gamma|");
        // Alt+Y only right after a yank.
        e.handle_input(&key(KeyCode::Left));
        e.handle_input(&alt('y'));
        assert_eq!(e.text(), "alpha beta gamma");
        // Ctrl+U kills backwards, over line starts, and a kill after it prepends.
        let mut e = editor_with("one\ntwo");
        e.handle_input(&ctrl('u'));
        e.handle_input(&ctrl('u'));
        e.handle_input(&ctrl('u'));
        assert_eq!(e.text(), "");
        assert_eq!(e.buf.kill_ring, ["one\ntwo"]);
        e.handle_input(&ctrl('y'));
        assert_eq!(shown(&e), "one\ntwo|");
        // A multi-line yank rotated away.
        let mut e = editor_with("!");
        e.buf.kill_ring = vec!["x".into(), "one\ntwo".into()];
        e.handle_input(&key(KeyCode::Left));
        e.handle_input(&ctrl('y'));
        assert_eq!(shown(&e), "one\ntwo|!");
        e.handle_input(&alt('y'));
        assert_eq!(shown(&e), "x|!");
        // Alt+D kills the word after; Alt+Backspace the word before.
        let mut e = editor_with("foo bar baz");
        e.handle_input(&ctrl('a'));
        e.handle_input(&alt('d'));
        assert_eq!(e.text(), " bar baz");
        e.handle_input(&ctrl('e'));
        e.handle_input(&with(KeyCode::Backspace, Modifiers::ALT));
        assert_eq!(e.text(), " bar ");
    }

    #[test]
    fn word_motions_over_punctuation_and_cjk() {
        let mut e = editor_with("foo.bar(baz)  日本語 テスト");
        let mut stops = Vec::new();
        e.handle_input(&ctrl('a'));
        for _ in 0..8 {
            e.handle_input(&with(KeyCode::Right, Modifiers::ALT));
            stops.push(e.cursor().1);
        }
        assert_eq!(stops, [3, 4, 7, 8, 11, 12, 17, 21]);
        let mut back = Vec::new();
        for _ in 0..8 {
            e.handle_input(&with(KeyCode::Left, Modifiers::CTRL));
            back.push(e.cursor().1);
        }
        assert_eq!(back, [18, 14, 11, 8, 7, 4, 3, 0]);
        e.handle_input(&alt('b'));
        assert_eq!(e.cursor(), (0, 0));
        e.handle_input(&alt('f'));
        assert_eq!(e.cursor(), (0, 3));
        // Word motions cross line ends.
        let mut e = editor_with("ab\ncd");
        e.handle_input(&ctrl('a'));
        e.handle_input(&alt('b'));
        assert_eq!(e.cursor(), (0, 2));
        e.handle_input(&alt('f'));
        assert_eq!(e.cursor(), (1, 0));
        // Ctrl+W at a line start joins the lines.
        e.handle_input(&ctrl('w'));
        assert_eq!(shown(&e), "ab|cd");
    }

    #[test]
    fn large_paste_collapses_and_expands_on_submit() {
        let mut e = Editor::new();
        typed(&mut e, "see ");
        let big: Vec<String> = (1..=42).map(|i| format!("line\t{i}")).collect();
        let big = big.join("\r\n");
        e.handle_input(&Input::Paste(big));
        assert_eq!(e.text(), "see [paste #1 +42 lines]");
        // The marker moves and deletes as one unit.
        e.handle_input(&key(KeyCode::Left));
        assert_eq!(e.cursor(), (0, 4));
        e.handle_input(&key(KeyCode::End));
        typed(&mut e, " ok");
        e.handle_input(&Input::Paste("x".repeat(1001)));
        assert_eq!(e.text(), "see [paste #1 +42 lines] ok[paste #2 1001 chars]");
        e.handle_input(&key(KeyCode::Backspace));
        assert_eq!(e.text(), "see [paste #1 +42 lines] ok");
        e.handle_input(&alt('b'));
        e.handle_input(&alt('b'));
        assert_eq!(e.cursor(), (0, 4));
        // Small pastes go in as they are, tabs as four spaces, line breaks kept.
        e.handle_input(&key(KeyCode::End));
        e.handle_input(&Input::Paste("\ta\r\nb\x07".into()));
        assert_eq!(e.text(), "see [paste #1 +42 lines] ok    a\nb");
        e.handle_input(&key(KeyCode::Enter));
        let expected: Vec<String> = (1..=42).map(|i| format!("line    {i}")).collect();
        let submitted = e.take_submitted().unwrap();
        assert_eq!(submitted, format!("see {} ok    a\nb", expected.join("\n")));
        // A path pasted after a word gets a space.
        typed(&mut e, "open");
        e.handle_input(&Input::Paste("/tmp/x".into()));
        assert_eq!(e.text(), "open /tmp/x");
        // Rendered widths hold the marker.
        e.handle_input(&Input::Paste("a\n".repeat(20)));
        for w in 1..40 {
            for line in e.render(w) {
                assert!(visible_width(&line) <= w, "{line:?} at {w}");
            }
        }
    }

    #[test]
    fn history_with_up_and_down() {
        let mut e = Editor::new();
        e.add_to_history("first");
        e.add_to_history("  second\nline  ");
        e.add_to_history("second\nline");
        e.add_to_history("   ");
        assert_eq!(e.history, ["second\nline", "first"]);
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(shown(&e), "second\nline|");
        // Up inside a multi-line entry moves up a line, then on to the older entry.
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(e.cursor(), (0, 4));
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(e.text(), "first");
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(e.text(), "first");
        e.handle_input(&key(KeyCode::Down));
        assert_eq!(e.text(), "second\nline");
        e.handle_input(&key(KeyCode::Down));
        e.handle_input(&key(KeyCode::Down));
        assert_eq!(e.text(), "");
        // Undo brings back what was there before browsing.
        typed(&mut e, "draft");
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(e.text(), "draft");
        assert_eq!(e.cursor(), (0, 0));
        e.set_text("");
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(e.text(), "second\nline");
        // Editing leaves history browsing.
        typed(&mut e, "!");
        e.handle_input(&key(KeyCode::Down));
        assert_eq!(shown(&e), "second\nline!|");
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(e.cursor(), (0, 5));
    }

    #[test]
    fn up_and_down_move_between_wrapped_rows() {
        let mut e = editor_with("aaaa bbbb cccc\nxy");
        e.render(11); // wraps at 10 columns
        assert_eq!(e.visual_lines(10).len(), 3);
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(e.cursor(), (0, 12)); // the row `cccc`, the column kept
        assert_eq!(shown(&e), "aaaa bbbb cc|cc\nxy");
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(shown(&e), "aa|aa bbbb cccc\nxy");
        e.handle_input(&key(KeyCode::Up));
        assert_eq!(shown(&e), "|aaaa bbbb cccc\nxy");
        e.handle_input(&key(KeyCode::Down));
        e.handle_input(&key(KeyCode::Down));
        e.handle_input(&key(KeyCode::Down));
        assert_eq!(shown(&e), "aaaa bbbb cccc\nxy|");
    }

    #[test]
    fn render_never_exceeds_width() {
        let mut e = editor_with(
            "日本語のテキストと emoji 👍🏽👨‍👩‍👧 mixed with long_words_without_spaces_anywhere\n\n\tindented",
        );
        e.set_focused(true);
        e.add_to_history("x");
        for w in 0..60 {
            for moves in 0..4 {
                for _ in 0..moves * 7 {
                    e.handle_input(&key(KeyCode::Left));
                }
                let lines = e.render(w);
                assert!(lines.len() >= 2);
                for line in &lines {
                    assert!(visible_width(line) <= w, "{line:?} at {w}");
                }
                if w >= 3 {
                    let marked = lines.iter().filter(|l| l.contains(CURSOR_MARKER)).count();
                    assert_eq!(marked, 1, "{lines:#?} at {w}");
                }
            }
            e.handle_input(&key(KeyCode::End));
        }
        let mut small = Editor::new().with_max_visible_lines(2);
        small.set_text("a\nb\nc\nd");
        for w in 0..30 {
            for line in small.render(w) {
                assert!(visible_width(&line) <= w, "{line:?} at {w}");
            }
        }
    }

    #[test]
    fn cursor_marker_position_and_rules() {
        let mut e = editor_with("ab\n日本");
        let lines = e.render(8);
        assert!(!lines.concat().contains(CURSOR_MARKER));
        e.set_focused(true);
        let lines = e.render(8);
        assert_eq!(lines[0], "────────");
        assert_eq!(lines[1], "ab      ");
        assert_eq!(lines[2], format!("日本{CURSOR_MARKER}\x1b[7m \x1b[27m   "));
        assert_eq!(lines[3], "────────");
        e.handle_input(&key(KeyCode::Left));
        let lines = e.render(8);
        assert_eq!(lines[2], format!("日{CURSOR_MARKER}\x1b[7m本\x1b[27m    "));
        // Scrolling shows how many rows are hidden.
        let mut e = Editor::new().with_max_visible_lines(2);
        e.set_text("1\n2\n3\n4");
        let lines = e.render(20);
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("─── ↑ 2 more ─"), "{lines:?}");
        assert!(lines[1].starts_with('3'));
        assert_eq!(lines[3], "─".repeat(20));
        let styled = Editor::new()
            .with_border_style(Style::new().dim())
            .render(4);
        assert!(styled[0].contains("────") && styled[0].starts_with('\x1b'));
        let mut p = Editor::new();
        p.set_placeholder("Type here");
        assert!(p.render(20)[1].contains("Type here"));
    }

    #[test]
    fn text_input_edits_scrolls_and_submits() {
        let mut i = TextInput::new();
        i.set_focused(true);
        typed(&mut i, "hello world");
        i.handle_input(&ctrl('w'));
        assert_eq!(i.value(), "hello ");
        i.handle_input(&ctrl('y'));
        i.handle_input(&ctrl('a'));
        i.handle_input(&alt('f'));
        assert_eq!(i.cursor(), 5);
        i.handle_input(&ctrl('k'));
        assert_eq!(i.value(), "hello");
        i.handle_input(&ctrl('z'));
        assert_eq!(i.value(), "hello world");
        i.handle_input(&Input::Paste("\tmulti\nline".into()));
        assert_eq!(i.value(), "hello    multiline world");
        assert!(!i.handle_input(&key(KeyCode::Up)));
        i.handle_input(&key(KeyCode::Enter));
        assert_eq!(
            i.take_submitted().as_deref(),
            Some("hello    multiline world")
        );
        assert_eq!(i.value(), "hello    multiline world");
        i.handle_input(&key(KeyCode::Esc));
        assert!(i.take_cancelled());
        assert!(!i.take_cancelled());
        i.set_value("日本語テキスト and emoji 👍🏽 end");
        for w in 0..40 {
            for pos in 0..30 {
                i.handle_input(&ctrl('e'));
                for _ in 0..pos {
                    i.handle_input(&key(KeyCode::Left));
                }
                let lines = i.render(w);
                assert_eq!(lines.len(), 1);
                assert!(visible_width(&lines[0]) <= w, "{:?} at {w}", lines[0]);
                if w >= 5 {
                    assert!(lines[0].contains(CURSOR_MARKER), "{:?} at {w}", lines[0]);
                }
            }
        }
        i.handle_input(&ctrl('a'));
        let line = &i.render(10)[0];
        assert_eq!(line, &format!("> {CURSOR_MARKER}\x1b[7m日\x1b[27m本語テ"));
        let mut plain = TextInput::new().with_prompt("");
        typed(&mut plain, "abc");
        assert_eq!(plain.render(5)[0], "abc\x1b[7m \x1b[27m ");
    }
}
