//! A list to choose from (pi's `SelectList`): a filter, keyboard navigation, a scrolling
//! window of rows and a `(3/20)` position line.

use super::component::Component;
use super::keys::{Input, KeyCode};
use super::style::{Color, Style};
use super::width::{truncate_to_width, visible_width};

/// The widest the label column grows before descriptions (pi's default).
const MAX_LABEL_COLUMN: usize = 32;
/// Columns between a label and its description.
const GAP: usize = 2;
/// A description narrower than this is left out.
const MIN_DESCRIPTION: usize = 10;

/// One choice of a [`SelectList`]: a label and an optional description shown beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectItem {
    /// What the row shows (and the filter matches).
    pub label: String,
    /// Shown after the label when the width allows.
    pub description: Option<String>,
}

impl SelectItem {
    /// An item without description.
    pub fn new(label: impl Into<String>) -> Self {
        SelectItem {
            label: label.into(),
            description: None,
        }
    }

    /// With a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

impl<S: Into<String>> From<S> for SelectItem {
    fn from(label: S) -> Self {
        SelectItem::new(label)
    }
}

/// A list of items to choose from. A filter keeps the items whose label contains it
/// (ignoring case; prefixes first), then those holding its characters in order (fuzzy).
/// Up and Down move (wrapping around), PageUp/PageDown by a page, Home and End to the
/// ends; Enter chooses ([`take_selected`](SelectList::take_selected)), Escape or Ctrl+C
/// cancels ([`is_cancelled`](SelectList::is_cancelled)). At most `max_visible` rows show,
/// scrolling with the selection, with a `(3/20)` line when some are hidden.
///
/// ```
/// use pi_engine::tui::{Component, Input, Key, KeyCode, SelectItem, SelectList};
///
/// let items = ["alpha", "beta", "gamma"].map(SelectItem::new);
/// let mut list = SelectList::new(items, 5).with_styles(Default::default(), Default::default());
/// list.set_filter("A");
/// assert_eq!(list.render(20), ["→ alpha", "  beta", "  gamma"]);
/// list.handle_input(&Input::Key(Key::plain(KeyCode::Down)));
/// list.handle_input(&Input::Key(Key::plain(KeyCode::Enter)));
/// assert_eq!(list.take_selected(), Some(1));
/// assert_eq!(list.take_selected(), None);
/// ```
#[derive(Debug, Clone)]
pub struct SelectList {
    items: Vec<SelectItem>,
    /// Indices into `items` of the items the filter keeps, best first.
    filtered: Vec<usize>,
    filter: String,
    /// Position in `filtered`.
    cursor: usize,
    max_visible: usize,
    chosen: Option<usize>,
    cancelled: bool,
    selected_style: Style,
    description_style: Style,
    dim_style: Style,
}

impl SelectList {
    /// A list of `items` showing at most `max_visible` rows (at least one).
    pub fn new(items: impl IntoIterator<Item = SelectItem>, max_visible: usize) -> Self {
        let items: Vec<SelectItem> = items.into_iter().collect();
        SelectList {
            filtered: (0..items.len()).collect(),
            items,
            filter: String::new(),
            cursor: 0,
            max_visible: max_visible.max(1),
            chosen: None,
            cancelled: false,
            selected_style: Style::new().fg(Color::CYAN).bold(),
            description_style: Style::new().fg(Color::GRAY),
            dim_style: Style::new().fg(Color::GRAY),
        }
    }

    /// With the style of the selected row and of descriptions (the position line and the
    /// "no match" line take the description's).
    #[must_use]
    pub fn with_styles(mut self, selected: Style, description: Style) -> Self {
        self.selected_style = selected;
        self.description_style = description;
        self.dim_style = description;
        self
    }

    /// The items.
    pub fn items(&self) -> &[SelectItem] {
        &self.items
    }

    /// Replaces the items (the filter stays, the selection goes back to the first).
    pub fn set_items(&mut self, items: impl IntoIterator<Item = SelectItem>) {
        self.items = items.into_iter().collect();
        let filter = std::mem::take(&mut self.filter);
        self.set_filter(&filter);
    }

    /// Keeps the items matching `filter` (all when it is empty); selects the first.
    pub fn set_filter(&mut self, filter: &str) {
        self.filter = filter.to_owned();
        let needle = filter.to_lowercase();
        let mut ranked: Vec<(u8, usize)> = self
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match_rank(&item.label.to_lowercase(), &needle).map(|r| (r, i)))
            .collect();
        ranked.sort_by_key(|&(rank, i)| (rank, i));
        self.filtered = ranked.into_iter().map(|(_, i)| i).collect();
        self.cursor = 0;
    }

    /// The filter.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// How many items the filter keeps.
    pub fn visible_count(&self) -> usize {
        self.filtered.len()
    }

    /// The index in the items of the highlighted one (none when nothing matches).
    pub fn selected_index(&self) -> Option<usize> {
        self.filtered.get(self.cursor).copied()
    }

    /// Highlights the item at `index` in the items, if the filter keeps it.
    pub fn set_selected_index(&mut self, index: usize) {
        if let Some(pos) = self.filtered.iter().position(|&i| i == index) {
            self.cursor = pos;
        }
    }

    /// The item chosen with Enter (its index in the items), once.
    pub fn take_selected(&mut self) -> Option<usize> {
        self.chosen.take()
    }

    /// True once Escape (or Ctrl+C) cancelled the list.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    fn move_to(&mut self, pos: usize) {
        self.cursor = pos.min(self.filtered.len().saturating_sub(1));
    }

    /// The first of the rows shown.
    fn window_start(&self) -> usize {
        let len = self.filtered.len();
        self.cursor
            .saturating_sub(self.max_visible / 2)
            .min(len.saturating_sub(self.max_visible))
    }

    fn render_row(
        &self,
        item: &SelectItem,
        selected: bool,
        label_column: usize,
        width: usize,
    ) -> String {
        let prefix = if selected { "→ " } else { "  " };
        let label = single_line(&item.label);
        let description = item
            .description
            .as_deref()
            .map(single_line)
            .filter(|d| !d.is_empty());
        let room = width.saturating_sub(2);
        if let Some(description) = description
            && width > 40
        {
            let column = label_column.min(room.saturating_sub(4)).max(1);
            let label = truncate_to_width(&label, column.saturating_sub(GAP).max(1), "…");
            let spacing = " ".repeat(column.saturating_sub(visible_width(&label)).max(1));
            let rest = width.saturating_sub(2 + visible_width(&label) + spacing.len());
            if rest > MIN_DESCRIPTION {
                let description = truncate_to_width(&description, rest, "…");
                return if selected {
                    self.selected_style
                        .paint(&format!("{prefix}{label}{spacing}{description}"))
                        .into_owned()
                } else {
                    let tail = self
                        .description_style
                        .paint(&format!("{spacing}{description}"))
                        .into_owned();
                    format!("{prefix}{label}{tail}")
                };
            }
        }
        let line = truncate_to_width(&format!("{prefix}{label}"), width, "…");
        if selected {
            self.selected_style.paint(&line).into_owned()
        } else {
            line
        }
    }
}

/// How well `label` matches `needle` (both lower case): 0 a prefix, 1 a substring, 2 its
/// characters in order; none when it does not.
fn match_rank(label: &str, needle: &str) -> Option<u8> {
    if label.starts_with(needle) {
        return Some(0);
    }
    if label.contains(needle) {
        return Some(1);
    }
    let mut chars = label.chars();
    needle
        .chars()
        .all(|n| chars.by_ref().any(|c| c == n))
        .then_some(2)
}

/// `s` on one line: line breaks become spaces, other control characters go.
fn single_line(s: &str) -> String {
    let joined: String = s
        .trim()
        .chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect();
    joined
}

impl Component for SelectList {
    fn render(&mut self, width: usize) -> Vec<String> {
        if self.filtered.is_empty() {
            let line = truncate_to_width("  No matches", width, "");
            return vec![self.dim_style.paint(&line).into_owned()];
        }
        let label_column = self
            .filtered
            .iter()
            .map(|&i| visible_width(&single_line(&self.items[i].label)) + GAP)
            .max()
            .unwrap_or(0)
            .min(MAX_LABEL_COLUMN);
        let start = self.window_start();
        let end = (start + self.max_visible).min(self.filtered.len());
        let mut lines: Vec<String> = (start..end)
            .map(|pos| {
                let item = &self.items[self.filtered[pos]];
                self.render_row(item, pos == self.cursor, label_column, width)
            })
            .collect();
        if start > 0 || end < self.filtered.len() {
            let info = format!("  ({}/{})", self.cursor + 1, self.filtered.len());
            let info = truncate_to_width(&info, width, "");
            lines.push(self.dim_style.paint(&info).into_owned());
        }
        lines
            .into_iter()
            .map(|l| {
                if visible_width(&l) > width {
                    truncate_to_width(&l, width, "")
                } else {
                    l
                }
            })
            .collect()
    }

    fn handle_input(&mut self, input: &Input) -> bool {
        let Input::Key(key) = input else {
            return false;
        };
        if key.modifiers.ctrl && key.code == KeyCode::Char('c') {
            self.cancelled = true;
            return true;
        }
        if key.modifiers.ctrl || key.modifiers.alt || key.modifiers.super_key {
            return false;
        }
        let len = self.filtered.len();
        let page = self.max_visible;
        match key.code {
            KeyCode::Up if len > 0 => {
                self.cursor = if self.cursor == 0 {
                    len - 1
                } else {
                    self.cursor - 1
                }
            }
            KeyCode::Down if len > 0 => self.cursor = (self.cursor + 1) % len,
            KeyCode::PageUp => self.move_to(self.cursor.saturating_sub(page)),
            KeyCode::PageDown => self.move_to(self.cursor.saturating_add(page)),
            KeyCode::Home => self.move_to(0),
            KeyCode::End => self.move_to(len.saturating_sub(1)),
            KeyCode::Enter => self.chosen = self.selected_index(),
            KeyCode::Esc => self.cancelled = true,
            KeyCode::Up | KeyCode::Down => {}
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::Key;

    fn key(code: KeyCode) -> Input {
        Input::Key(Key::plain(code))
    }

    fn list(n: usize, visible: usize) -> SelectList {
        SelectList::new(
            (1..=n).map(|i| SelectItem::new(format!("item {i}"))),
            visible,
        )
        .with_styles(Style::new(), Style::new())
    }

    #[test]
    fn select_scrolls_with_position_line() {
        let mut l = list(20, 3);
        assert_eq!(
            l.render(20),
            ["→ item 1", "  item 2", "  item 3", "  (1/20)"]
        );
        for _ in 0..4 {
            l.handle_input(&key(KeyCode::Down));
        }
        assert_eq!(
            l.render(20),
            ["  item 4", "→ item 5", "  item 6", "  (5/20)"]
        );
        l.handle_input(&key(KeyCode::End));
        assert_eq!(
            l.render(20),
            ["  item 18", "  item 19", "→ item 20", "  (20/20)"]
        );
        l.handle_input(&key(KeyCode::Down));
        assert_eq!(l.selected_index(), Some(0), "wraps to the top");
        l.handle_input(&key(KeyCode::Up));
        assert_eq!(l.selected_index(), Some(19), "wraps to the bottom");
        l.handle_input(&key(KeyCode::PageUp));
        assert_eq!(l.selected_index(), Some(16));
        l.handle_input(&key(KeyCode::PageDown));
        l.handle_input(&key(KeyCode::PageDown));
        assert_eq!(l.selected_index(), Some(19), "clamped");
        l.handle_input(&key(KeyCode::Home));
        assert_eq!(l.selected_index(), Some(0));
        assert!(!l.handle_input(&key(KeyCode::Char('x'))));
        // Without hidden rows, no position line.
        assert_eq!(list(2, 5).render(20), ["→ item 1", "  item 2"]);
    }

    #[test]
    fn select_enter_and_escape() {
        let mut l = list(5, 5);
        l.handle_input(&key(KeyCode::Down));
        l.handle_input(&key(KeyCode::Down));
        assert!(l.take_selected().is_none());
        l.handle_input(&key(KeyCode::Enter));
        assert_eq!(l.take_selected(), Some(2));
        assert!(!l.is_cancelled());
        l.handle_input(&key(KeyCode::Esc));
        assert!(l.is_cancelled());
        let mut l = list(5, 5);
        l.handle_input(&Input::Key(Key::ctrl('c')));
        assert!(l.is_cancelled());
    }

    #[test]
    fn select_filters() {
        let items = [
            "Model", "mode", "commit", "Compact", "help", "demo", "macro",
        ]
        .map(SelectItem::new);
        let mut l = SelectList::new(items, 10).with_styles(Style::new(), Style::new());
        l.set_filter("MO");
        // Prefixes first, then substrings, then fuzzy matches.
        assert_eq!(l.render(20), ["→ Model", "  mode", "  demo", "  macro"]);
        l.set_filter("cmt");
        assert_eq!(l.render(20), ["→ commit", "  Compact"]);
        l.set_filter("cpt");
        assert_eq!(l.render(20), ["→ Compact"]);
        l.handle_input(&key(KeyCode::Enter));
        assert_eq!(l.take_selected(), Some(3), "an index into all the items");
        l.set_filter("zzz");
        assert_eq!(l.render(20), ["  No matches"]);
        assert_eq!(l.selected_index(), None);
        l.handle_input(&key(KeyCode::Down));
        l.handle_input(&key(KeyCode::Enter));
        assert_eq!(l.take_selected(), None);
        l.set_filter("");
        assert_eq!(l.visible_count(), 7);
        l.set_selected_index(4);
        assert_eq!(l.selected_index(), Some(4));
    }

    #[test]
    fn select_descriptions_and_widths() {
        let items = [
            SelectItem::new("model").with_description("Choose the model 中文 for the session"),
            SelectItem::new("a-very-long-command-name-that-goes-on")
                .with_description("Line\nbreaks"),
            SelectItem::new("日本語のコマンド"),
        ];
        let mut l = SelectList::new(items, 2);
        let plain: Vec<String> = SelectList::new(l.items().to_vec(), 2)
            .with_styles(Style::new(), Style::new())
            .render(60);
        assert_eq!(
            plain,
            [
                "→ model                           Choose the model 中文 for…",
                "  a-very-long-command-name-that…  Line breaks",
                "  (1/3)"
            ]
        );
        for w in 0..80 {
            for line in l.render(w) {
                assert!(visible_width(&line) <= w, "{line:?} at {w}");
            }
        }
        l.handle_input(&key(KeyCode::End));
        assert!(l.render(60)[1].starts_with("\x1b[1;36m→ 日本語"));
    }
}
