//! The differential renderer: a frame is the component tree's lines; only the rows that
//! changed are written, inside one synchronized-output block.
//!
//! **Inline mode** (the default, as pi): the lines are drawn in the normal screen below the
//! shell's prompt, so finished lines scroll into the terminal's own scrollback, where the
//! user scrolls and selects them like any output. Each frame compares the new lines with the
//! previous frame's, moves the cursor relatively to the first changed row and rewrites rows
//! from there (`\r`, erase line, the line), scrolling new rows in with `\r\n`; rows left over
//! when the content shrinks are erased. Unlike pi, nothing ever clears the scrollback:
//!
//! * a change above the visible rows (a tall dialog closing, a line edited after it scrolled
//!   away) rewrites only the rows still on the screen; what scrolled away stays as it was;
//! * a resize redraws the visible rows at the new size (from the top of the screen down,
//!   erasing the screen only, not the scrollback).
//!
//! **Alternate-screen mode** (opt-in, for terminals where inline drawing misbehaves): the
//! last rows of the content fill the screen, each changed row rewritten in place.
//!
//! A line wider than the terminal is cut to the width, never a failure; a line holding
//! escape sequences ends with an SGR reset so that colours never leak into the next row.

use std::io;

use super::terminal::Terminal;
use super::width::{RESET, truncate_to_width, visible_width};

/// Where a focused component wants the hardware cursor: an APC sequence (zero columns) it
/// writes into its line at the cursor's column. The renderer removes it and puts the
/// terminal's cursor there, where an input method shows its candidates.
pub const CURSOR_MARKER: &str = "\x1b_pi:c\x07";

const SYNC_BEGIN: &[u8] = b"\x1b[?2026h";
const SYNC_END: &[u8] = b"\x1b[?2026l";
const HIDE_CURSOR: &[u8] = b"\x1b[?25l";
const SHOW_CURSOR: &[u8] = b"\x1b[?25h";
const ERASE_LINE: &[u8] = b"\x1b[2K";
const ERASE_BELOW: &[u8] = b"\x1b[J";

/// How frames are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ScreenMode {
    /// In the normal screen, below the prompt; finished lines go to the scrollback.
    #[default]
    Inline,
    /// In the alternate screen, which the renderer owns whole.
    Alternate,
}

/// What one frame did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FrameStats {
    /// Bytes written to the terminal.
    pub bytes: usize,
    /// Rows rewritten.
    pub rows_written: usize,
    /// The visible rows were all redrawn (first frame, resize).
    pub redrawn: bool,
    /// Rows that changed above the visible ones and were left as they are in the scrollback.
    pub rows_above_viewport: usize,
}

/// The differential renderer. Give it each frame's lines with [`render`](Self::render).
///
/// ```
/// use pi_engine::tui::{Renderer, ScreenMode, VirtualTerminal};
///
/// let mut term = VirtualTerminal::new(20, 5);
/// let mut renderer = Renderer::new(ScreenMode::Inline);
/// renderer.render(vec!["hello".into(), "⠋ working".into()], &mut term).unwrap();
/// // Only the spinner's row changes: only it is written.
/// let stats = renderer.render(vec!["hello".into(), "⠙ working".into()], &mut term).unwrap();
/// assert_eq!(stats.rows_written, 1);
/// assert_eq!(term.screen_lines()[..2], ["hello", "⠙ working"]);
/// ```
#[derive(Debug)]
pub struct Renderer {
    mode: ScreenMode,
    prev: Vec<String>,
    size: Option<(usize, usize)>,
    /// Inline: terminal rows our output has used (the most lines ever drawn since the last
    /// resize redraw); the rows below the content that were erased count too.
    used: usize,
    /// Inline: the content row the terminal's cursor is on.
    cursor_row: usize,
    /// Alternate: the rows on the screen.
    screen: Vec<String>,
    out: Vec<u8>,
}

impl Renderer {
    /// A renderer that has drawn nothing yet.
    pub fn new(mode: ScreenMode) -> Self {
        Renderer {
            mode,
            prev: Vec::new(),
            size: None,
            used: 0,
            cursor_row: 0,
            screen: Vec::new(),
            out: Vec::new(),
        }
    }

    /// The mode.
    pub fn mode(&self) -> ScreenMode {
        self.mode
    }

    /// Forgets the previous frame: the next one is drawn whole (after the terminal was used
    /// by something else, such as an external editor).
    pub fn reset(&mut self) {
        self.size = None;
    }

    /// Draws `lines` on `terminal`, writing only what changed since the previous frame.
    ///
    /// # Errors
    ///
    /// The terminal's I/O error.
    pub fn render(
        &mut self,
        lines: Vec<String>,
        terminal: &mut dyn Terminal,
    ) -> io::Result<FrameStats> {
        let (cols, rows) = terminal.size();
        let (lines, cursor) = prepare(lines, cols);
        self.out.clear();
        self.out.extend_from_slice(SYNC_BEGIN);
        self.out.extend_from_slice(HIDE_CURSOR);
        let mut stats = match self.mode {
            ScreenMode::Inline => self.inline(&lines, cols, rows),
            ScreenMode::Alternate => self.alternate(&lines, cols, rows),
        };
        if let Some((row, col)) = cursor {
            self.place_cursor(row, col, rows, lines.len());
        }
        self.out.extend_from_slice(SYNC_END);
        self.size = Some((cols, rows));
        self.prev = lines;
        stats.bytes = self.out.len();
        terminal.write(&self.out)?;
        terminal.flush()?;
        Ok(stats)
    }

    fn inline(&mut self, lines: &[String], cols: usize, rows: usize) -> FrameStats {
        let mut stats = FrameStats::default();
        let resized = self.size.is_some_and(|s| s != (cols, rows));
        if self.size.is_none() {
            self.write_rows(lines, &mut stats);
            self.used = lines.len();
            self.cursor_row = lines.len().saturating_sub(1);
            stats.redrawn = true;
            return stats;
        }
        if resized || lines.len() <= self.used.saturating_sub(rows) {
            // A resize, or content that now ends above the screen: the visible rows are
            // redrawn from the top of the screen; the scrollback is not touched.
            self.redraw_visible(lines, rows, &mut stats);
            return stats;
        }
        let prev_len = self.prev.len();
        let prev = &self.prev;
        let first = prev
            .iter()
            .zip(lines)
            .position(|(a, b)| a != b)
            .unwrap_or(prev.len().min(lines.len()));
        if first == prev_len && first == lines.len() {
            return stats; // nothing changed
        }
        let last = if prev_len == lines.len() {
            // Same length: up to the last row that differs.
            prev.iter()
                .zip(lines)
                .rposition(|(a, b)| a != b)
                .unwrap_or(first)
        } else {
            lines.len().saturating_sub(1)
        };
        let top = self.used.saturating_sub(rows);
        stats.rows_above_viewport = top.saturating_sub(first);
        let start = if first >= top {
            first
        } else if prev_len == lines.len() {
            // Rows changed above the screen stay as they are in the scrollback; the first
            // visible row that changed is where writing starts.
            match (top..lines.len()).find(|&i| self.prev[i] != lines[i]) {
                Some(i) => i,
                None => return stats,
            }
        } else {
            top
        };
        if lines.is_empty() {
            self.move_to(start.min(self.used.saturating_sub(1)));
            self.out.push(b'\r');
            self.out.extend_from_slice(ERASE_BELOW);
            return stats;
        }
        if start < lines.len() {
            self.move_to(start);
            for (i, line) in lines[start..=last.max(start)].iter().enumerate() {
                if i > 0 {
                    self.out.extend_from_slice(b"\r\n");
                    self.cursor_row += 1;
                }
                self.out.push(b'\r');
                self.out.extend_from_slice(ERASE_LINE);
                self.out.extend_from_slice(line.as_bytes());
                stats.rows_written += 1;
            }
            self.used = self.used.max(self.cursor_row + 1);
        } else {
            // Only rows were removed: stand on the new last row.
            self.move_to(lines.len() - 1);
            let len = visible_width(&lines[lines.len() - 1]);
            self.out.push(b'\r');
            if len > 0 {
                self.out
                    .extend_from_slice(format!("\x1b[{len}C").as_bytes());
            }
        }
        if lines.len() < prev_len {
            // The rows the content no longer reaches.
            self.out.extend_from_slice(ERASE_BELOW);
        }
        stats
    }

    /// Redraws the last rows of `lines` from the top of the screen (erasing the screen, not
    /// the scrollback).
    fn redraw_visible(&mut self, lines: &[String], rows: usize, stats: &mut FrameStats) {
        self.out.extend_from_slice(b"\x1b[H");
        self.out.extend_from_slice(ERASE_BELOW);
        let from = lines.len().saturating_sub(rows);
        self.write_rows(&lines[from..], stats);
        self.used = lines.len();
        self.cursor_row = lines.len().saturating_sub(1);
        stats.redrawn = true;
    }

    /// Writes `lines` from the cursor's row down (the first frame, a redraw).
    fn write_rows(&mut self, lines: &[String], stats: &mut FrameStats) {
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                self.out.extend_from_slice(b"\r\n");
            }
            self.out.extend_from_slice(line.as_bytes());
            stats.rows_written += 1;
        }
    }

    /// Moves the cursor (relatively) to content row `row`, which is on the screen or the
    /// next new row.
    fn move_to(&mut self, row: usize) {
        use std::io::Write as _;
        if row < self.cursor_row {
            let _ = write!(self.out, "\x1b[{}A", self.cursor_row - row);
        } else if row > self.cursor_row {
            // Down over rows that exist; a new row at the bottom scrolls in with `\r\n`.
            let existing = self.used.saturating_sub(1).min(row);
            if existing > self.cursor_row {
                let _ = write!(self.out, "\x1b[{}B", existing - self.cursor_row);
            }
            for _ in existing.max(self.cursor_row)..row {
                self.out.extend_from_slice(b"\r\n");
            }
        }
        self.cursor_row = row;
        self.used = self.used.max(row + 1);
    }

    fn place_cursor(&mut self, row: usize, col: usize, rows: usize, len: usize) {
        use std::io::Write as _;
        match self.mode {
            ScreenMode::Inline => {
                let top = self.used.saturating_sub(rows);
                if row < top || row >= len {
                    return;
                }
                self.move_to(row);
                self.out.push(b'\r');
                if col > 0 {
                    let _ = write!(self.out, "\x1b[{col}C");
                }
            }
            ScreenMode::Alternate => {
                let from = len.saturating_sub(rows);
                if row < from {
                    return;
                }
                let _ = write!(self.out, "\x1b[{};{}H", row - from + 1, col + 1);
            }
        }
        self.out.extend_from_slice(SHOW_CURSOR);
    }

    fn alternate(&mut self, lines: &[String], cols: usize, rows: usize) -> FrameStats {
        use std::io::Write as _;
        let mut stats = FrameStats::default();
        let from = lines.len().saturating_sub(rows);
        let visible = &lines[from..];
        if self.size != Some((cols, rows)) {
            self.out.extend_from_slice(b"\x1b[H\x1b[2J");
            self.screen.clear();
            stats.redrawn = true;
        }
        for (i, line) in visible.iter().enumerate() {
            if self.screen.get(i) == Some(line) {
                continue;
            }
            let _ = write!(self.out, "\x1b[{};1H", i + 1);
            self.out.extend_from_slice(ERASE_LINE);
            self.out.extend_from_slice(line.as_bytes());
            stats.rows_written += 1;
        }
        for i in visible.len()..self.screen.len() {
            let _ = write!(self.out, "\x1b[{};1H", i + 1);
            self.out.extend_from_slice(ERASE_LINE);
        }
        self.screen = visible.to_vec();
        stats
    }
}

/// Cuts each line to `cols`, closes lines holding escapes with a reset, and takes out the
/// cursor marker (its row and column).
fn prepare(lines: Vec<String>, cols: usize) -> (Vec<String>, Option<(usize, usize)>) {
    let mut cursor = None;
    let lines = lines
        .into_iter()
        .enumerate()
        .map(|(row, mut line)| {
            // Most lines are plain text: no escape sequence, nothing to look for.
            let escapes = memchr::memchr(0x1b, line.as_bytes()).is_some();
            if !escapes {
                if line.len() > cols && visible_width(&line) > cols {
                    line = truncate_to_width(&line, cols, "");
                }
                return line;
            }
            if let Some(at) = line.find(CURSOR_MARKER) {
                if cursor.is_none() {
                    cursor = Some((row, visible_width(&line[..at]).min(cols.saturating_sub(1))));
                }
                line = line.replace(CURSOR_MARKER, "");
            }
            if visible_width(&line) > cols {
                line = truncate_to_width(&line, cols, "");
            }
            if line.contains('\x1b') && !line.ends_with(RESET) {
                line.push_str(RESET);
            }
            line
        })
        .collect();
    (lines, cursor)
}

#[cfg(test)]
mod tests {
    use super::super::terminal::VirtualTerminal;
    use super::*;

    fn frame(r: &mut Renderer, t: &mut VirtualTerminal, lines: &[&str]) -> FrameStats {
        r.render(lines.iter().map(|s| (*s).to_owned()).collect(), t)
            .unwrap()
    }

    fn numbered(n: usize, suffix: &str) -> Vec<String> {
        (0..n).map(|i| format!("line {i}{suffix}")).collect()
    }

    #[test]
    fn first_frame_then_only_changed_rows() {
        let mut t = VirtualTerminal::new(20, 5);
        let mut r = Renderer::new(ScreenMode::Inline);
        let s = frame(&mut r, &mut t, &["a", "b", "c"]);
        assert!(s.redrawn);
        assert_eq!(t.screen_lines(), ["a", "b", "c", "", ""]);
        let s = frame(&mut r, &mut t, &["a", "B", "c"]);
        assert_eq!(s.rows_written, 1);
        assert_eq!(t.screen_lines(), ["a", "B", "c", "", ""]);
        // Growing: new rows appended.
        let s = frame(&mut r, &mut t, &["a", "B", "c", "d"]);
        assert_eq!(s.rows_written, 1);
        assert_eq!(t.screen_lines(), ["a", "B", "c", "d", ""]);
        // Shrinking: rows erased.
        frame(&mut r, &mut t, &["a", "B"]);
        assert_eq!(t.screen_lines(), ["a", "B", "", "", ""]);
        // Nothing changed: nothing but the frame's bracket.
        let s = frame(&mut r, &mut t, &["a", "B"]);
        assert_eq!(s.rows_written, 0);
        assert!(s.bytes < 30, "{s:?}");
    }

    #[test]
    fn output_scrolls_into_the_scrollback_and_stays_there() {
        let mut t = VirtualTerminal::new(30, 5);
        let mut r = Renderer::new(ScreenMode::Inline);
        let mut lines = numbered(12, "");
        lines.push("⠋ spinner".into());
        r.render(lines.clone(), &mut t).unwrap();
        assert_eq!(
            t.screen_lines(),
            ["line 8", "line 9", "line 10", "line 11", "⠋ spinner"]
        );
        assert_eq!(t.scrollback_lines()[..3], ["line 0", "line 1", "line 2"]);
        // A change above the screen (line 2): only visible rows are written, the
        // scrollback keeps what it had, nothing is cleared.
        let mut changed = lines.clone();
        changed[2] = "line 2 edited".into();
        *changed.last_mut().unwrap() = "⠙ spinner".into();
        let s = r.render(changed, &mut t).unwrap();
        assert!(!s.redrawn);
        assert_eq!(s.rows_written, 1, "{s:?}");
        assert_eq!(t.scrollback_lines().len(), 8);
        assert_eq!(t.scrollback_lines()[2], "line 2");
        assert_eq!(t.screen_lines()[4], "⠙ spinner");
    }

    #[test]
    fn a_tall_dialog_closing_does_not_clear_the_scrollback() {
        let mut t = VirtualTerminal::new(30, 6);
        let mut r = Renderer::new(ScreenMode::Inline);
        let base = numbered(20, "");
        r.render(base.clone(), &mut t).unwrap();
        let before = t.scrollback_lines();
        // A dialog taller than the screen is inserted in the middle, then removed.
        let mut with_dialog = base[..10].to_vec();
        with_dialog.extend((0..10).map(|i| format!("dialog {i}")));
        with_dialog.extend(base[10..].iter().cloned());
        r.render(with_dialog, &mut t).unwrap();
        r.render(base.clone(), &mut t).unwrap();
        let after = t.scrollback_lines();
        assert!(after.len() >= before.len(), "scrollback lost lines");
        assert_eq!(after[..before.len()], before[..]);
        assert_eq!(t.screen_lines(), base[14..].to_vec());
    }

    #[test]
    fn resize_redraws_the_visible_rows_at_the_new_width() {
        let mut t = VirtualTerminal::new(20, 4);
        let mut r = Renderer::new(ScreenMode::Inline);
        r.render(numbered(10, " wide text"), &mut t).unwrap();
        t.resize(10, 4);
        // (The emulator cuts its scrollback to the new width itself; it does not reflow.)
        let scrollback = t.scrollback_lines();
        // The app re-renders for the new width: lines are cut by the renderer anyway.
        let s = r.render(numbered(10, " wide text"), &mut t).unwrap();
        assert!(s.redrawn);
        for line in t.screen_lines() {
            assert!(visible_width(&line) <= 10);
        }
        assert_eq!(t.screen_lines()[3], "line 9 wid");
        assert_eq!(t.scrollback_lines()[..scrollback.len()], scrollback[..]);
        // And diffs work again after the resize.
        let mut next = numbered(10, " wide text");
        next[9] = "changed".into();
        let s = r.render(next, &mut t).unwrap();
        assert_eq!(s.rows_written, 1);
        assert_eq!(t.screen_lines()[3], "changed");
    }

    #[test]
    fn wide_lines_are_cut_and_wide_characters_counted() {
        let mut t = VirtualTerminal::new(10, 3);
        let mut r = Renderer::new(ScreenMode::Inline);
        frame(
            &mut r,
            &mut t,
            &[
                "日本語のテキストです",
                "\x1b[31mred red red red\x1b[0m",
                "ok",
            ],
        );
        assert_eq!(t.screen_lines(), ["日本語のテ", "red red re", "ok"]);
        // The colour ended with its row.
        assert!(
            !t.screen()
                .cell(2, 0)
                .unwrap()
                .fgcolor()
                .eq(&vt100::Color::Idx(1))
        );
    }

    #[test]
    fn the_cursor_marker_places_the_hardware_cursor() {
        let mut t = VirtualTerminal::new(20, 5);
        let mut r = Renderer::new(ScreenMode::Inline);
        let line = format!("> ab{CURSOR_MARKER}c");
        r.render(vec!["top".into(), line, "footer".into()], &mut t)
            .unwrap();
        assert_eq!(t.cursor(), (1, 4));
        assert!(!t.cursor_hidden());
        assert_eq!(t.screen_lines()[1], "> abc");
        // The next frame still diffs from the right row.
        let line = format!("> abc{CURSOR_MARKER}");
        r.render(vec!["top".into(), line, "footer 2".into()], &mut t)
            .unwrap();
        assert_eq!(t.screen_lines()[..3], ["top", "> abc", "footer 2"]);
        assert_eq!(t.cursor(), (1, 5));
        r.render(
            vec!["top".into(), "> abc".into(), "footer 3".into()],
            &mut t,
        )
        .unwrap();
        assert!(t.cursor_hidden());
    }

    #[test]
    fn alternate_screen_rewrites_rows_in_place() {
        let mut t = VirtualTerminal::new(20, 3);
        let mut r = Renderer::new(ScreenMode::Alternate);
        r.render(numbered(5, ""), &mut t).unwrap();
        assert_eq!(t.screen_lines(), ["line 2", "line 3", "line 4"]);
        let mut next = numbered(5, "");
        next[4] = "last".into();
        let s = r.render(next, &mut t).unwrap();
        assert_eq!(s.rows_written, 1);
        assert_eq!(t.screen_lines(), ["line 2", "line 3", "last"]);
    }
}
