//! [`Tui`]: a root component, overlays above it with the focus, and frames coalesced to one
//! per [`FRAME_INTERVAL`], drawn by the [`Renderer`] on a [`Terminal`].

use std::io;
use std::time::Duration;

use tokio::time::Instant;

use super::component::Component;
use super::keys::Input;
use super::renderer::{FrameStats, Renderer, ScreenMode};
use super::terminal::Terminal;
use super::width::{fit_to_width, slice_columns, visible_width};

/// The shortest time between two frames (pi's 16 ms): changes in between are drawn together.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(16);

/// Where an overlay sits on the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Anchor {
    /// Centred.
    #[default]
    Center,
    /// At the bottom, centred horizontally.
    Bottom,
    /// At the top, centred horizontally.
    Top,
}

/// How an overlay is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OverlayOptions {
    /// Its width in columns (at most the terminal's, less the margins).
    pub width: usize,
    /// The most rows it takes; longer content is cut.
    pub max_height: Option<usize>,
    /// Where it sits.
    pub anchor: Anchor,
    /// Columns and rows kept free around it.
    pub margin: usize,
}

impl Default for OverlayOptions {
    fn default() -> Self {
        OverlayOptions {
            width: 60,
            max_height: None,
            anchor: Anchor::Center,
            margin: 1,
        }
    }
}

impl OverlayOptions {
    /// An overlay `width` columns wide, centred.
    pub fn new(width: usize) -> Self {
        OverlayOptions {
            width,
            ..OverlayOptions::default()
        }
    }

    /// With an anchor.
    #[must_use]
    pub fn with_anchor(mut self, anchor: Anchor) -> Self {
        self.anchor = anchor;
        self
    }

    /// With a height limit.
    #[must_use]
    pub fn with_max_height(mut self, rows: usize) -> Self {
        self.max_height = Some(rows);
        self
    }
}

/// A shown overlay's handle, to hide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OverlayId(u64);

struct Overlay {
    id: OverlayId,
    component: Box<dyn Component>,
    options: OverlayOptions,
}

/// The terminal UI: a root component (the transcript, the editor, the footer), overlays
/// drawn above it, input routed to the top overlay or else the root, and frames drawn at
/// most once per [`FRAME_INTERVAL`].
///
/// ```
/// use pi_engine::tui::{Container, ScreenMode, Text, Tui, VirtualTerminal};
///
/// let mut root = Container::new();
/// root.push(Text::new("hello"));
/// let mut tui = Tui::new(VirtualTerminal::new(20, 4), root, ScreenMode::Inline);
/// tui.render_now().unwrap();
/// assert_eq!(tui.terminal().screen_lines()[0], "hello");
/// ```
pub struct Tui<T: Terminal, R: Component> {
    terminal: T,
    root: R,
    renderer: Renderer,
    overlays: Vec<Overlay>,
    next_id: u64,
    dirty: bool,
    last_frame: Option<Instant>,
}

impl<T: Terminal, R: Component> std::fmt::Debug for Tui<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tui")
            .field("renderer", &self.renderer)
            .field("overlays", &self.overlays.len())
            .field("dirty", &self.dirty)
            .finish()
    }
}

impl<T: Terminal, R: Component> Tui<T, R> {
    /// A UI drawing `root` on `terminal`.
    pub fn new(terminal: T, root: R, mode: ScreenMode) -> Self {
        Tui {
            terminal,
            root,
            renderer: Renderer::new(mode),
            overlays: Vec::new(),
            next_id: 0,
            dirty: true,
            last_frame: None,
        }
    }

    /// The root component.
    pub fn root(&mut self) -> &mut R {
        &mut self.root
    }

    /// The terminal.
    pub fn terminal(&mut self) -> &mut T {
        &mut self.terminal
    }

    /// Asks for a frame (drawn by [`render_if_due`](Self::render_if_due)).
    pub fn request_render(&mut self) {
        self.dirty = true;
    }

    /// Forgets what is on the screen: the next frame is drawn whole.
    pub fn force_full_render(&mut self) {
        self.renderer.reset();
        self.dirty = true;
    }

    /// When the next frame may be drawn, if one was asked for.
    pub fn next_frame_at(&self) -> Option<Instant> {
        if !self.dirty {
            return None;
        }
        Some(
            self.last_frame
                .map_or_else(Instant::now, |last| last + FRAME_INTERVAL),
        )
    }

    /// Draws a frame if one was asked for and [`FRAME_INTERVAL`] has passed since the last.
    ///
    /// # Errors
    ///
    /// The terminal's I/O error.
    pub fn render_if_due(&mut self) -> io::Result<Option<FrameStats>> {
        match self.next_frame_at() {
            Some(at) if at <= Instant::now() => self.render_now().map(Some),
            _ => Ok(None),
        }
    }

    /// Draws a frame now.
    ///
    /// # Errors
    ///
    /// The terminal's I/O error.
    pub fn render_now(&mut self) -> io::Result<FrameStats> {
        let (cols, rows) = self.terminal.size();
        let mut lines = self.root.render(cols);
        self.composite(&mut lines, cols, rows);
        let stats = self.renderer.render(lines, &mut self.terminal)?;
        self.dirty = false;
        self.last_frame = Some(Instant::now());
        Ok(stats)
    }

    /// Routes input to the top overlay, or else the root; `true` when it was used.
    pub fn handle_input(&mut self, input: &Input) -> bool {
        self.dirty = true;
        match self.overlays.last_mut() {
            Some(top) => top.component.handle_input(input),
            None => self.root.handle_input(input),
        }
    }

    /// Shows `component` above everything, with the focus.
    pub fn show_overlay(
        &mut self,
        component: impl Component + 'static,
        options: OverlayOptions,
    ) -> OverlayId {
        if let Some(top) = self.overlays.last_mut() {
            top.component.set_focused(false);
        } else {
            self.root.set_focused(false);
        }
        let id = OverlayId(self.next_id);
        self.next_id += 1;
        let mut component: Box<dyn Component> = Box::new(component);
        component.set_focused(true);
        self.overlays.push(Overlay {
            id,
            component,
            options,
        });
        self.dirty = true;
        id
    }

    /// Hides an overlay; the focus returns to the one below, or the root.
    pub fn hide_overlay(&mut self, id: OverlayId) -> Option<Box<dyn Component>> {
        let at = self.overlays.iter().position(|o| o.id == id)?;
        let overlay = self.overlays.remove(at);
        match self.overlays.last_mut() {
            Some(top) => top.component.set_focused(true),
            None => self.root.set_focused(true),
        }
        self.dirty = true;
        Some(overlay.component)
    }

    /// True while an overlay is shown.
    pub fn has_overlay(&self) -> bool {
        !self.overlays.is_empty()
    }

    /// Draws the overlays over the visible part of `lines`.
    fn composite(&mut self, lines: &mut Vec<String>, cols: usize, rows: usize) {
        for overlay in &mut self.overlays {
            let o = overlay.options;
            let width = o.width.min(cols.saturating_sub(2 * o.margin)).max(1);
            let mut content = overlay.component.render(width);
            let max = o
                .max_height
                .unwrap_or(usize::MAX)
                .min(rows.saturating_sub(2 * o.margin).max(1));
            content.truncate(max);
            // The screen is the last `rows` rows; grow the content so the overlay fits.
            let visible = lines.len().min(rows);
            if visible < content.len() + 2 * o.margin && lines.len() < rows {
                let need = (content.len() + 2 * o.margin).min(rows);
                lines.resize(need.max(lines.len()), String::new());
            }
            let screen_top = lines.len().saturating_sub(rows);
            let screen_rows = lines.len() - screen_top;
            let row = match o.anchor {
                Anchor::Top => o.margin,
                Anchor::Center => screen_rows.saturating_sub(content.len()) / 2,
                Anchor::Bottom => screen_rows.saturating_sub(content.len() + o.margin),
            };
            let col = cols.saturating_sub(width) / 2;
            for (i, over) in content.iter().enumerate() {
                let Some(base) = lines.get_mut(screen_top + row + i) else {
                    break;
                };
                let left = slice_columns(base, 0, col);
                let right_width = cols.saturating_sub(col + width);
                let right = if visible_width(base) > col + width {
                    slice_columns(base, col + width, right_width)
                } else {
                    String::new()
                };
                let middle = fit_to_width(over, width);
                *base = format!("{left}\x1b[0m{middle}\x1b[0m{right}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::component::{Border, Container, Panel, Text};
    use super::super::terminal::VirtualTerminal;
    use super::*;

    #[test]
    fn overlays_take_the_focus_and_composite() {
        let mut root = Container::new();
        for i in 0..8 {
            root.push(Text::new(format!("row {i} of the transcript")));
        }
        let mut tui = Tui::new(VirtualTerminal::new(30, 6), root, ScreenMode::Inline);
        tui.render_now().unwrap();
        let mut dialog = Panel::new().with_border(Border::Plain);
        dialog.push(Text::new("Sure?"));
        let id = tui.show_overlay(dialog, OverlayOptions::new(12));
        tui.render_now().unwrap();
        let screen = tui.terminal().screen_lines();
        assert!(screen.iter().any(|l| l.contains("│Sure?")), "{screen:#?}");
        assert!(screen.iter().any(|l| l.starts_with("row ")));
        for l in &screen {
            assert!(visible_width(l) <= 30);
        }
        tui.hide_overlay(id);
        tui.render_now().unwrap();
        let screen = tui.terminal().screen_lines();
        assert!(screen.iter().all(|l| !l.contains("Sure?")), "{screen:#?}");
    }

    #[tokio::test(start_paused = true)]
    async fn frames_are_coalesced() {
        let mut tui = Tui::new(
            VirtualTerminal::new(20, 4),
            Text::new("x"),
            ScreenMode::Inline,
        );
        assert!(tui.render_if_due().unwrap().is_some());
        tui.request_render();
        assert!(
            tui.render_if_due().unwrap().is_none(),
            "within 16 ms of the last frame"
        );
        tokio::time::advance(FRAME_INTERVAL).await;
        assert!(tui.render_if_due().unwrap().is_some());
        assert!(tui.render_if_due().unwrap().is_none(), "nothing asked for");
    }
}
