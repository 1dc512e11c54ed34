//! Where frames go: a [`Terminal`] is a size and a byte sink. [`ProcessTerminal`] is the
//! process's own terminal (raw mode, bracketed paste, the Kitty keyboard protocol where
//! supported, restored on drop); [`VirtualTerminal`] is an in-memory terminal emulator with
//! a scrollback buffer (the `vt100` crate), for tests of what the screen shows.

use std::io::{self, Write};

/// A terminal the [`Renderer`](super::Renderer) draws on.
pub trait Terminal: Send {
    /// Columns and rows.
    fn size(&self) -> (usize, usize);

    /// Writes bytes (buffered until [`flush`](Self::flush)).
    ///
    /// # Errors
    ///
    /// The terminal's I/O error.
    fn write(&mut self, bytes: &[u8]) -> io::Result<()>;

    /// Sends what was written.
    ///
    /// # Errors
    ///
    /// The terminal's I/O error.
    fn flush(&mut self) -> io::Result<()>;
}

/// The process's terminal: stdout in raw mode, with bracketed paste and (where the terminal
/// takes it) the Kitty keyboard protocol, so that modified keys such as Shift+Enter arrive.
/// Dropping it restores the terminal.
#[derive(Debug)]
pub struct ProcessTerminal {
    out: io::BufWriter<io::Stdout>,
    keyboard_enhanced: bool,
    alternate: bool,
    active: bool,
}

impl ProcessTerminal {
    /// Puts the terminal in raw mode and turns on bracketed paste (and the alternate screen
    /// when `alternate`).
    ///
    /// # Errors
    ///
    /// When stdout is not a terminal or raw mode cannot be set.
    pub fn start(alternate: bool) -> io::Result<Self> {
        use crossterm::event::{
            EnableBracketedPaste, KeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
        };
        crossterm::terminal::enable_raw_mode()?;
        let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout());
        crossterm::execute!(out, EnableBracketedPaste)?;
        if alternate {
            crossterm::execute!(out, crossterm::terminal::EnterAlternateScreen)?;
        }
        let keyboard_enhanced =
            crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false);
        if keyboard_enhanced {
            crossterm::execute!(
                out,
                PushKeyboardEnhancementFlags(
                    KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES
                        | KeyboardEnhancementFlags::REPORT_ALTERNATE_KEYS
                )
            )?;
        }
        Ok(ProcessTerminal {
            out,
            keyboard_enhanced,
            alternate,
            active: true,
        })
    }

    /// Restores the terminal (also done on drop).
    ///
    /// # Errors
    ///
    /// The terminal's I/O error.
    pub fn stop(&mut self) -> io::Result<()> {
        if !std::mem::take(&mut self.active) {
            return Ok(());
        }
        use crossterm::event::{DisableBracketedPaste, PopKeyboardEnhancementFlags};
        if self.keyboard_enhanced {
            crossterm::execute!(self.out, PopKeyboardEnhancementFlags)?;
        }
        crossterm::execute!(self.out, DisableBracketedPaste, crossterm::cursor::Show)?;
        if self.alternate {
            crossterm::execute!(self.out, crossterm::terminal::LeaveAlternateScreen)?;
        }
        self.out.flush()?;
        crossterm::terminal::disable_raw_mode()
    }
}

impl Drop for ProcessTerminal {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl Terminal for ProcessTerminal {
    fn size(&self) -> (usize, usize) {
        crossterm::terminal::size()
            .map(|(c, r)| (usize::from(c.max(1)), usize::from(r.max(1))))
            .unwrap_or((80, 24))
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// An in-memory terminal emulator (the `vt100` crate) with a scrollback buffer: what a real
/// terminal would show, for tests.
///
/// ```
/// use pi_engine::tui::{Terminal, VirtualTerminal};
///
/// let mut term = VirtualTerminal::new(20, 3);
/// term.write(b"one\r\ntwo\r\nthree\r\nfour").unwrap();
/// assert_eq!(term.screen_lines(), ["two", "three", "four"]);
/// assert_eq!(term.scrollback_lines(), ["one"]);
/// ```
pub struct VirtualTerminal {
    parser: vt100::Parser,
    written: usize,
}

impl std::fmt::Debug for VirtualTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (rows, cols) = self.parser.screen().size();
        f.debug_struct("VirtualTerminal")
            .field("cols", &cols)
            .field("rows", &rows)
            .field("written", &self.written)
            .finish()
    }
}

impl VirtualTerminal {
    /// A terminal of `cols` × `rows` keeping 10,000 lines of scrollback.
    pub fn new(cols: usize, rows: usize) -> Self {
        VirtualTerminal {
            parser: vt100::Parser::new(clamp(rows), clamp(cols), 10_000),
            written: 0,
        }
    }

    /// Resizes the terminal (as a window resize does).
    pub fn resize(&mut self, cols: usize, rows: usize) {
        self.parser.screen_mut().set_size(clamp(rows), clamp(cols));
    }

    /// The visible rows, trailing spaces trimmed.
    pub fn screen_lines(&self) -> Vec<String> {
        let screen = self.parser.screen();
        let (_, cols) = screen.size();
        screen
            .rows(0, cols)
            .map(|r| r.trim_end().to_owned())
            .collect()
    }

    /// The rows that scrolled off the top, oldest first, trailing spaces trimmed.
    pub fn scrollback_lines(&mut self) -> Vec<String> {
        let (rows, cols) = self.parser.screen().size();
        let mut out = Vec::new();
        // vt100 shows scrollback by offsetting the screen; read it page by page.
        self.parser.screen_mut().set_scrollback(usize::MAX);
        let total = self.parser.screen().scrollback();
        let mut offset = total;
        while offset > 0 {
            self.parser.screen_mut().set_scrollback(offset);
            let take = offset.min(usize::from(rows));
            let page: Vec<String> = self
                .parser
                .screen()
                .rows(0, cols)
                .take(take)
                .map(|r| r.trim_end().to_owned())
                .collect();
            out.extend(page);
            offset -= take;
        }
        self.parser.screen_mut().set_scrollback(0);
        out
    }

    /// Scrollback and screen together, as a user scrolling up would read them.
    pub fn all_lines(&mut self) -> Vec<String> {
        let mut lines = self.scrollback_lines();
        lines.extend(self.screen_lines());
        lines
    }

    /// The cursor's (row, column) on the screen.
    pub fn cursor(&self) -> (usize, usize) {
        let (r, c) = self.parser.screen().cursor_position();
        (usize::from(r), usize::from(c))
    }

    /// Whether the cursor is hidden.
    pub fn cursor_hidden(&self) -> bool {
        self.parser.screen().hide_cursor()
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> usize {
        self.written
    }

    /// The emulator's screen, for checks of colours and attributes.
    pub fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }
}

fn clamp(n: usize) -> u16 {
    u16::try_from(n.max(1)).unwrap_or(u16::MAX)
}

impl Terminal for VirtualTerminal {
    fn size(&self) -> (usize, usize) {
        let (rows, cols) = self.parser.screen().size();
        (usize::from(cols), usize::from(rows))
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.written += bytes.len();
        self.parser.process(bytes);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
