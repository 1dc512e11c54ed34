//! The terminal UI (cargo feature `tui`): pi's component model and differential renderer,
//! without pi's flicker.
//!
//! * [`Component`]: anything that renders to lines for a width and may take input.
//!   [`Container`], [`Text`], [`TruncatedText`], [`Spacer`] and [`Panel`] (pi's `Box`) are
//!   here; widths count display columns ([`visible_width`]: wide characters, emoji,
//!   combining marks, escape sequences), and a line never exceeds its width.
//! * [`Renderer`]: draws a frame's lines, rewriting only the rows that changed, inside
//!   synchronized output; inline in the normal screen (finished lines stay in the terminal's
//!   own scrollback, which it never clears) or, opt-in, in the alternate screen.
//! * [`Tui`]: a root component, overlays with the focus, frames coalesced to one per 16 ms.
//! * [`Terminal`]: [`ProcessTerminal`] (raw mode, bracketed paste, the Kitty keyboard
//!   protocol) and [`VirtualTerminal`] (an emulator with scrollback, for tests).
//!
//! ```
//! use pi_engine::tui::{Border, Panel, ScreenMode, Text, Tui, VirtualTerminal};
//!
//! let mut panel = Panel::new().with_border(Border::Rounded).with_padding(1, 0);
//! panel.push(Text::new("Hello from a panel"));
//! let mut tui = Tui::new(VirtualTerminal::new(24, 5), panel, ScreenMode::Inline);
//! tui.render_now()?;
//! assert_eq!(tui.terminal().screen_lines()[1], "│ Hello from a panel   │");
//! # Ok::<(), std::io::Error>(())
//! ```

mod component;
mod editor;
mod keys;
mod loader;
mod markdown;
mod renderer;
mod screen;
mod select;
mod style;
mod terminal;
mod width;

pub use component::{Border, Component, Container, Panel, Spacer, Text, TruncatedText};
pub use editor::{Editor, TextInput};
pub use keys::{Input, Key, KeyCode, Modifiers};
pub use loader::Loader;
pub use markdown::{Markdown, MarkdownTheme};
pub use renderer::{CURSOR_MARKER, FrameStats, Renderer, ScreenMode};
pub use screen::{Anchor, FRAME_INTERVAL, OverlayId, OverlayOptions, Tui};
pub use select::{SelectItem, SelectList};
pub use style::{Color, Style};
pub use terminal::{ProcessTerminal, Terminal, VirtualTerminal};
pub use width::{
    RESET, TAB_WIDTH, expand_tabs, fit_to_width, truncate_to_width, visible_width,
    wrap_text_with_ansi,
};
