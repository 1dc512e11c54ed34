//! Markdown rendered to terminal lines (pi's `Markdown`): CommonMark with tables,
//! strikethrough and task lists, parsed by `pulldown-cmark`, wrapped to the width.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::component::Component;
use super::style::{Color, Style};
use super::width::{RESET, expand_tabs, truncate_to_width, visible_width, wrap_text_with_ansi};

/// The styles a [`Markdown`] component paints with.
///
/// ```
/// use pi_engine::tui::{Color, MarkdownTheme, Style};
///
/// let theme = MarkdownTheme {
///     heading: Style::new().fg(Color::MAGENTA).bold(),
///     ..MarkdownTheme::default()
/// };
/// assert_ne!(theme.heading, MarkdownTheme::default().heading);
/// assert!(MarkdownTheme::plain().heading.is_plain());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkdownTheme {
    /// Level 1 headings.
    pub heading1: Style,
    /// Headings of the other levels.
    pub heading: Style,
    /// `**strong**` text.
    pub strong: Style,
    /// `*emphasised*` text.
    pub emphasis: Style,
    /// `~~struck~~` text.
    pub strikethrough: Style,
    /// `inline code`.
    pub code: Style,
    /// The lines of a code block.
    pub code_block: Style,
    /// The fences around a code block (with its language).
    pub code_block_border: Style,
    /// A link's text.
    pub link: Style,
    /// A link's URL, shown in parentheses after its text.
    pub link_url: Style,
    /// The `│ ` before each line of a block quote.
    pub quote_border: Style,
    /// The text of a block quote.
    pub quote: Style,
    /// A horizontal rule.
    pub hr: Style,
    /// List bullets and numbers.
    pub list_bullet: Style,
    /// A table's borders.
    pub table_border: Style,
    /// A table's header cells.
    pub table_header: Style,
}

impl Default for MarkdownTheme {
    fn default() -> Self {
        MarkdownTheme {
            heading1: Style::new().fg(Color::CYAN).bold().underline(),
            heading: Style::new().fg(Color::CYAN).bold(),
            strong: Style::new().bold(),
            emphasis: Style::new().italic(),
            strikethrough: Style::new().strikethrough(),
            code: Style::new().fg(Color::YELLOW),
            code_block: Style::new().fg(Color::GREEN),
            code_block_border: Style::new().fg(Color::GRAY),
            link: Style::new().fg(Color::BLUE).underline(),
            link_url: Style::new().fg(Color::GRAY),
            quote_border: Style::new().fg(Color::GRAY),
            quote: Style::new().italic(),
            hr: Style::new().fg(Color::GRAY),
            list_bullet: Style::new().fg(Color::CYAN),
            table_border: Style::new().fg(Color::GRAY),
            table_header: Style::new().bold(),
        }
    }
}

impl MarkdownTheme {
    /// A theme without any style: the structure only (for tests, or a dumb terminal).
    pub fn plain() -> Self {
        let p = Style::new();
        MarkdownTheme {
            heading1: p,
            heading: p,
            strong: p,
            emphasis: p,
            strikethrough: p,
            code: p,
            code_block: p,
            code_block_border: p,
            link: p,
            link_url: p,
            quote_border: p,
            quote: p,
            hr: p,
            list_bullet: p,
            table_border: p,
            table_header: p,
        }
    }
}

/// Markdown text rendered for the terminal: headings, paragraphs wrapped to the width,
/// emphasis, inline code, code blocks (cut, not wrapped, with their language), nested
/// lists with hanging indentation, block quotes, links, rules and tables sized to the
/// width. The rendering is cached by width and redone only when the width or the text
/// changes; [`append`](Markdown::append) streams text in.
///
/// ```
/// use pi_engine::tui::{Component, Markdown, MarkdownTheme};
///
/// let mut md = Markdown::new("# Title\n\nSome *text* and a\n\n- list\n- of items")
///     .with_theme(MarkdownTheme::plain());
/// assert_eq!(md.render(20), ["Title", "", "Some text and a", "- list", "- of items"]);
/// md.append("\n- more");
/// assert_eq!(md.render(20).last().map(String::as_str), Some("- more"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Markdown {
    text: String,
    theme: MarkdownTheme,
    hyperlinks: bool,
    /// The parsed blocks (independent of the width).
    blocks: Option<Vec<Block>>,
    /// The last rendering, by width.
    cache: Option<(usize, Vec<String>)>,
}

impl Markdown {
    /// Markdown `text` in the default theme.
    pub fn new(text: impl Into<String>) -> Self {
        Markdown {
            text: text.into(),
            ..Markdown::default()
        }
    }

    /// With a theme.
    #[must_use]
    pub fn with_theme(mut self, theme: MarkdownTheme) -> Self {
        self.set_theme(theme);
        self
    }

    /// Links as OSC 8 hyperlinks (the text only, clickable in terminals that support them)
    /// instead of the text followed by the URL in parentheses.
    #[must_use]
    pub fn with_hyperlinks(mut self, on: bool) -> Self {
        self.hyperlinks = on;
        self.invalidate();
        self
    }

    /// Replaces the theme.
    pub fn set_theme(&mut self, theme: MarkdownTheme) {
        self.theme = theme;
        self.invalidate();
    }

    /// Replaces the text.
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.text = text.into();
        self.invalidate();
    }

    /// Appends to the text (a streamed reply).
    pub fn append(&mut self, more: &str) {
        if more.is_empty() {
            return;
        }
        self.text.push_str(more);
        self.invalidate();
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl Component for Markdown {
    fn render(&mut self, width: usize) -> Vec<String> {
        if let Some((w, lines)) = &self.cache
            && *w == width
        {
            return lines.clone();
        }
        let blocks = match &self.blocks {
            Some(b) => b,
            None => self
                .blocks
                .insert(parse(&self.text, &self.theme, self.hyperlinks)),
        };
        let lines: Vec<String> = render_blocks(blocks, width.max(1), &self.theme)
            .into_iter()
            .map(|l| {
                if visible_width(&l) > width {
                    truncate_to_width(&l, width, "")
                } else {
                    l
                }
            })
            .collect();
        self.cache = Some((width, lines.clone()));
        lines
    }

    fn invalidate(&mut self) {
        self.blocks = None;
        self.cache = None;
    }
}

/// A block of the document, its inline text already styled.
#[derive(Debug, Clone)]
enum Block {
    /// A heading's text (with its `###` for levels 3 and more).
    Heading(String),
    /// A paragraph.
    Paragraph(String),
    /// The text of a tight list item (no blank line around it).
    Plain(String),
    /// A code block: its language and text.
    Code(String, String),
    /// A list: the number of its first item when ordered, its items.
    List(Option<u64>, Vec<Vec<Block>>),
    /// A block quote.
    Quote(Vec<Block>),
    /// A horizontal rule.
    Rule,
    /// A table: column alignments, header cells, rows.
    Table(Vec<Alignment>, Vec<String>, Vec<Vec<String>>),
}

/// A block container being built.
enum Frame {
    Root(Vec<Block>),
    Quote(Vec<Block>),
    List(Option<u64>, Vec<Vec<Block>>),
    Item(Vec<Block>),
}

impl Frame {
    fn blocks(&mut self) -> Option<&mut Vec<Block>> {
        match self {
            Frame::Root(b) | Frame::Quote(b) | Frame::Item(b) => Some(b),
            Frame::List(..) => None,
        }
    }
}

/// What the inline text being collected becomes.
#[derive(Clone, Copy, PartialEq)]
enum InlineKind {
    Paragraph,
    Heading,
    Cell,
}

/// A table being built.
struct TableBuild {
    aligns: Vec<Alignment>,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    row: Vec<String>,
}

/// Turns parser events into blocks.
struct Builder<'t> {
    theme: &'t MarkdownTheme,
    hyperlinks: bool,
    frames: Vec<Frame>,
    /// Styled inline text of the current paragraph, heading, cell or tight item.
    buf: String,
    /// The same text without styles (to compare a link's text with its URL).
    plain: String,
    kind: Option<InlineKind>,
    styles: Vec<Style>,
    /// Open links: URL, start in `buf`, start in `plain`.
    links: Vec<(String, usize, usize)>,
    code: Option<(String, String)>,
    table: Option<TableBuild>,
}

/// Control characters other than newlines and tabs removed (a stray escape sequence in the
/// text would break the layout), tabs expanded.
fn sanitize(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .filter(|&c| !c.is_control() || c == '\n' || c == '\t')
        .collect();
    expand_tabs(&cleaned).into_owned()
}

impl Builder<'_> {
    fn push_block(&mut self, block: Block) {
        // A list directly in a list cannot happen; anything else lands in the innermost
        // block container.
        for frame in self.frames.iter_mut().rev() {
            if let Some(blocks) = frame.blocks() {
                blocks.push(block);
                return;
            }
        }
    }

    fn push_style(&mut self, style: Style) {
        self.buf.push_str(&style.prefix());
        self.styles.push(style);
    }

    fn pop_style(&mut self) {
        if let Some(style) = self.styles.pop()
            && !style.is_plain()
        {
            self.buf.push_str(RESET);
            for s in &self.styles {
                self.buf.push_str(&s.prefix());
            }
        }
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
            return;
        }
        let text = sanitize(text);
        self.buf.push_str(&text);
        self.plain.push_str(&text);
    }

    fn take_inline(&mut self) -> String {
        // Styles left open (unbalanced events) end with the text.
        while !self.styles.is_empty() {
            self.pop_style();
        }
        self.links.clear();
        self.plain.clear();
        self.kind = None;
        let text = std::mem::take(&mut self.buf);
        text.trim_end_matches(['\n', ' ']).to_owned()
    }

    /// Ends the text of a tight list item before a block starts in it.
    fn flush_plain(&mut self) {
        if self.kind.is_none() && !self.buf.is_empty() {
            let text = self.take_inline();
            if !text.is_empty() {
                self.push_block(Block::Plain(text));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                self.flush_plain();
                self.kind = Some(InlineKind::Paragraph);
            }
            Tag::Heading { level, .. } => {
                self.flush_plain();
                self.kind = Some(InlineKind::Heading);
                let n = heading_number(level);
                self.push_style(if n == 1 {
                    self.theme.heading1
                } else {
                    self.theme.heading
                });
                if n >= 3 {
                    self.buf.push_str(&"#".repeat(n));
                    self.buf.push(' ');
                }
            }
            Tag::BlockQuote(_) => {
                self.flush_plain();
                self.frames.push(Frame::Quote(Vec::new()));
            }
            Tag::CodeBlock(kind) => {
                self.flush_plain();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((sanitize(&lang), String::new()));
            }
            Tag::List(start) => {
                self.flush_plain();
                self.frames.push(Frame::List(start, Vec::new()));
            }
            Tag::Item => self.frames.push(Frame::Item(Vec::new())),
            Tag::Table(aligns) => {
                self.flush_plain();
                self.table = Some(TableBuild {
                    aligns,
                    header: Vec::new(),
                    rows: Vec::new(),
                    row: Vec::new(),
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.row.clear();
                }
            }
            Tag::TableCell => self.kind = Some(InlineKind::Cell),
            Tag::Emphasis => self.push_style(self.theme.emphasis),
            Tag::Strong => self.push_style(self.theme.strong),
            Tag::Strikethrough => self.push_style(self.theme.strikethrough),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.links
                    .push((sanitize(&dest_url), self.buf.len(), self.plain.len()));
                self.push_style(self.theme.link);
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                let text = self.take_inline();
                self.push_block(Block::Paragraph(text));
            }
            TagEnd::Heading(_) => {
                let text = self.take_inline();
                self.push_block(Block::Heading(text));
            }
            TagEnd::BlockQuote(_) => {
                self.flush_plain();
                if let Some(Frame::Quote(blocks)) = self.frames.pop() {
                    self.push_block(Block::Quote(blocks));
                }
            }
            TagEnd::CodeBlock => {
                if let Some((lang, text)) = self.code.take() {
                    let text = text.strip_suffix('\n').unwrap_or(&text);
                    self.push_block(Block::Code(lang, sanitize(text)));
                }
            }
            TagEnd::Item => {
                self.flush_plain();
                if let Some(Frame::Item(blocks)) = self.frames.pop()
                    && let Some(Frame::List(_, items)) = self.frames.last_mut()
                {
                    items.push(blocks);
                }
            }
            TagEnd::List(_) => {
                self.flush_plain();
                if let Some(Frame::List(start, items)) = self.frames.pop() {
                    self.push_block(Block::List(start, items));
                }
            }
            TagEnd::TableCell => {
                let text = self.take_inline();
                if let Some(t) = &mut self.table {
                    t.row.push(text);
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.header = std::mem::take(&mut t.row);
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.push_block(Block::Table(t.aligns, t.header, t.rows));
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link | TagEnd::Image => {
                self.pop_style();
                if let Some((url, buf_start, plain_start)) = self.links.pop() {
                    let text = self.plain.get(plain_start..).unwrap_or("");
                    let bare = url.strip_prefix("mailto:").unwrap_or(&url);
                    if self.hyperlinks && !url.is_empty() {
                        self.buf
                            .insert_str(buf_start, &format!("\x1b]8;;{url}\x07"));
                        self.buf.push_str("\x1b]8;;\x07");
                    } else if text != url && text != bare && !url.is_empty() {
                        let shown = self.theme.link_url.paint(&format!(" ({url})")).into_owned();
                        self.buf.push_str(&shown);
                        for s in &self.styles {
                            self.buf.push_str(&s.prefix());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                self.push_style(self.theme.code);
                self.text(&t);
                self.pop_style();
            }
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.flush_plain();
                self.push_block(Block::Rule);
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            _ => {}
        }
    }
}

fn heading_number(level: HeadingLevel) -> usize {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Parses `text` to blocks.
fn parse(text: &str, theme: &MarkdownTheme, hyperlinks: bool) -> Vec<Block> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut b = Builder {
        theme,
        hyperlinks,
        frames: vec![Frame::Root(Vec::new())],
        buf: String::new(),
        plain: String::new(),
        kind: None,
        styles: Vec::new(),
        links: Vec::new(),
        code: None,
        table: None,
    };
    for event in Parser::new_ext(text, options) {
        b.event(event);
    }
    b.flush_plain();
    // Close what an unfinished (streamed) document left open.
    while b.frames.len() > 1 {
        match b.frames.pop() {
            Some(Frame::Quote(blocks)) => b.push_block(Block::Quote(blocks)),
            Some(Frame::List(start, items)) => b.push_block(Block::List(start, items)),
            Some(Frame::Item(blocks)) => {
                if let Some(Frame::List(_, items)) = b.frames.last_mut() {
                    items.push(blocks);
                }
            }
            _ => {}
        }
    }
    match b.frames.pop() {
        Some(Frame::Root(blocks)) => blocks,
        _ => Vec::new(),
    }
}

/// The lines of `blocks` at `width` (at least 1), a blank line between blocks except
/// around a tight item's text and between a paragraph and the list that follows it.
fn render_blocks(blocks: &[Block], width: usize, theme: &MarkdownTheme) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            let prev = &blocks[i - 1];
            let tight = matches!(prev, Block::Plain(_))
                || matches!(block, Block::Plain(_))
                || matches!((prev, block), (Block::Paragraph(_), Block::List(..)));
            if !tight {
                lines.push(String::new());
            }
        }
        render_block(block, width, theme, &mut lines);
    }
    lines
}

fn render_block(block: &Block, width: usize, theme: &MarkdownTheme, out: &mut Vec<String>) {
    match block {
        Block::Heading(text) | Block::Paragraph(text) | Block::Plain(text) => {
            if !text.is_empty() {
                out.extend(wrap_text_with_ansi(text, width));
            }
        }
        Block::Code(lang, text) => {
            let fence = |s: String| {
                theme
                    .code_block_border
                    .paint(&truncate_to_width(&s, width, ""))
                    .into_owned()
            };
            out.push(fence(format!("```{lang}")));
            for line in text.split('\n') {
                let line = truncate_to_width(&format!("  {line}"), width, "");
                out.push(theme.code_block.paint(line.trim_end()).into_owned());
            }
            out.push(fence("```".to_owned()));
        }
        Block::List(start, items) => {
            let loose = items
                .iter()
                .any(|item| item.iter().any(|b| matches!(b, Block::Paragraph(_))));
            for (i, item) in items.iter().enumerate() {
                if loose && i > 0 {
                    out.push(String::new());
                }
                let bullet = match start {
                    Some(n) => format!("{}. ", n.saturating_add(i as u64)),
                    None => "- ".to_owned(),
                };
                let bw = visible_width(&bullet);
                let inner = render_blocks(item, width.saturating_sub(bw).max(1), theme);
                let painted = theme.list_bullet.paint(&bullet).into_owned();
                if inner.is_empty() {
                    out.push(painted.trim_end().to_owned());
                }
                let pad = " ".repeat(bw);
                for (j, line) in inner.into_iter().enumerate() {
                    if j == 0 {
                        out.push(format!("{painted}{line}"));
                    } else if line.is_empty() {
                        out.push(line);
                    } else {
                        out.push(format!("{pad}{line}"));
                    }
                }
            }
        }
        Block::Quote(blocks) => {
            let border = theme.quote_border.paint("│ ").into_owned();
            for line in render_blocks(blocks, width.saturating_sub(2).max(1), theme) {
                if line.is_empty() {
                    out.push(theme.quote_border.paint("│").into_owned());
                } else {
                    out.push(format!("{border}{}", theme.quote.paint(&line)));
                }
            }
        }
        Block::Rule => out.push(theme.hr.paint(&"─".repeat(width.min(80))).into_owned()),
        Block::Table(aligns, header, rows) => render_table(aligns, header, rows, width, theme, out),
    }
}

/// A table with box-drawing borders, its columns shrunk (the widest first) to fit the
/// width and its cells wrapped; too narrow for one column each, its rows as wrapped text.
fn render_table(
    aligns: &[Alignment],
    header: &[String],
    rows: &[Vec<String>],
    width: usize,
    theme: &MarkdownTheme,
    out: &mut Vec<String>,
) {
    let cols = header
        .len()
        .max(rows.iter().map(Vec::len).max().unwrap_or(0));
    if cols == 0 {
        return;
    }
    let overhead = 3 * cols + 1;
    if width < overhead + cols {
        // Too narrow for borders: each row as `a | b | c`, wrapped.
        for (i, row) in std::iter::once(header)
            .chain(rows.iter().map(Vec::as_slice))
            .enumerate()
        {
            let joined = row.join(" | ");
            let joined = if i == 0 {
                theme.table_header.paint(&joined).into_owned()
            } else {
                joined
            };
            out.extend(wrap_text_with_ansi(&joined, width));
        }
        return;
    }
    let available = width - overhead;
    let cell = |row: &[String], c: usize| row.get(c).map_or("", String::as_str).to_owned();
    let mut widths: Vec<usize> = (0..cols)
        .map(|c| {
            std::iter::once(header)
                .chain(rows.iter().map(Vec::as_slice))
                .map(|row| visible_width(&cell(row, c)))
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    let mut total: usize = widths.iter().sum();
    while total > available {
        // `available >= cols`, so the widest column is wider than 1 here.
        let Some((widest, _)) = widths
            .iter()
            .enumerate()
            .max_by_key(|&(i, w)| (*w, usize::MAX - i))
        else {
            break;
        };
        widths[widest] -= 1;
        total -= 1;
    }
    let border = |l: &str, m: &str, r: &str| {
        let inner: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        let line = format!("{l}─{}─{r}", inner.join(&format!("─{m}─")));
        theme.table_border.paint(&line).into_owned()
    };
    let bar = theme.table_border.paint("│").into_owned();
    let row_lines = |row: &[String], style: Style, out: &mut Vec<String>| {
        let wrapped: Vec<Vec<String>> = (0..cols)
            .map(|c| wrap_text_with_ansi(&cell(row, c), widths[c]))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1).max(1);
        for i in 0..height {
            let mut line = bar.clone();
            for (c, lines) in wrapped.iter().enumerate() {
                let text = lines.get(i).map_or("", String::as_str);
                let text = truncate_to_width(text, widths[c], "");
                let gap = widths[c] - visible_width(&text);
                let (left, right) = match aligns.get(c) {
                    Some(Alignment::Right) => (gap, 0),
                    Some(Alignment::Center) => (gap / 2, gap - gap / 2),
                    _ => (0, gap),
                };
                let body = format!(
                    "{}{}{}",
                    " ".repeat(left),
                    style.paint(&text),
                    " ".repeat(right)
                );
                line.push(' ');
                line.push_str(&body);
                line.push(' ');
                line.push_str(&bar);
            }
            out.push(line);
        }
    };
    out.push(border("┌", "┬", "┐"));
    row_lines(header, theme.table_header, out);
    out.push(border("├", "┼", "┤"));
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(border("├", "┼", "┤"));
        }
        row_lines(row, Style::new(), out);
    }
    out.push(border("└", "┴", "┘"));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `s` without escape sequences.
    fn strip(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\x1b' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    for c in chars.by_ref() {
                        if c == '\x07' {
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn plain(md: &str, width: usize) -> Vec<String> {
        Markdown::new(md)
            .with_theme(MarkdownTheme::plain())
            .render(width)
    }

    fn stripped(md: &str, width: usize) -> Vec<String> {
        Markdown::new(md)
            .render(width)
            .iter()
            .map(|l| strip(l))
            .collect()
    }

    #[test]
    fn headings_and_paragraphs() {
        assert_eq!(
            plain(
                "# One\n\n## Two\n\n### Three\n\nthe quick brown fox jumps",
                10
            ),
            [
                "One",
                "",
                "Two",
                "",
                "### Three",
                "",
                "the quick",
                "brown fox",
                "jumps"
            ]
        );
        let lines = Markdown::new("# Big").render(20);
        assert_eq!(lines, ["\x1b[1;4;36mBig\x1b[0m"]);
    }

    #[test]
    fn inline_styles() {
        let lines = Markdown::new("a **b *c* d** ~~e~~ `f`").render(40);
        assert_eq!(strip(&lines[0]), "a b c d e f");
        assert!(
            lines[0].contains("\x1b[1mb \x1b[3mc\x1b[0m\x1b[1m d\x1b[0m"),
            "{lines:?}"
        );
        assert!(lines[0].contains("\x1b[9me\x1b[0m"));
        assert!(lines[0].contains("\x1b[33mf\x1b[0m"));
        // A style spanning a wrap is closed and reopened.
        let lines = Markdown::new("**bold words that wrap**").render(10);
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("\x1b[1m") && l.ends_with(RESET)),
            "{lines:?}"
        );
    }

    #[test]
    fn code_blocks() {
        assert_eq!(
            plain(
                "```rust\nfn main() {\n    let long_line = 1;\n}\n```\n\n    indented",
                16
            ),
            [
                "```rust",
                "  fn main() {",
                "      let long_l",
                "  }",
                "```",
                "",
                "```",
                "  indented",
                "```"
            ]
        );
        let lines = Markdown::new("```\nx\n```").render(10);
        assert_eq!(lines[1], "\x1b[32m  x\x1b[0m");
    }

    #[test]
    fn lists() {
        assert_eq!(
            plain(
                "Items:\n- one\n- two words here\n  - nested\n    1. deep\n\n1. three\n2. four",
                12
            ),
            [
                "Items:",
                "- one",
                "- two words",
                "  here",
                "  - nested",
                "    1. deep",
                "",
                "1. three",
                "2. four"
            ]
        );
        assert_eq!(plain("3. a\n4. b", 20), ["3. a", "4. b"]);
        assert_eq!(
            plain("- a\n\n- b\n\n  more", 20),
            ["- a", "", "- b", "", "  more"]
        );
        assert_eq!(
            plain("- [ ] todo\n- [x] done", 20),
            ["- [ ] todo", "- [x] done"]
        );
    }

    #[test]
    fn quotes_rules_links() {
        assert_eq!(
            plain("> quoted text here\n>\n> again", 10),
            ["│ quoted", "│ text", "│ here", "│", "│ again"]
        );
        assert_eq!(plain("a\n\n---\n\nb", 5), ["a", "", "─────", "", "b"]);
        assert_eq!(
            plain("[pi](https://pi.dev) <https://x.io>", 80),
            ["pi (https://pi.dev) https://x.io"]
        );
        assert_eq!(plain("[me@x.io](mailto:me@x.io)", 80), ["me@x.io"]);
        let lines = Markdown::new("[pi](https://pi.dev)")
            .with_theme(MarkdownTheme::plain())
            .with_hyperlinks(true)
            .render(80);
        assert_eq!(lines, ["\x1b]8;;https://pi.dev\x07pi\x1b]8;;\x07"]);
    }

    #[test]
    fn tables() {
        let md = "| a | bb |\n|---|--:|\n| 1 | 2 |\n| long cell | x |";
        assert_eq!(
            plain(md, 40),
            [
                "┌───────────┬────┐",
                "│ a         │ bb │",
                "├───────────┼────┤",
                "│ 1         │  2 │",
                "├───────────┼────┤",
                "│ long cell │  x │",
                "└───────────┴────┘",
            ]
        );
        // Shrunk: the wide column wraps.
        assert_eq!(
            plain(md, 13),
            [
                "┌──────┬────┐",
                "│ a    │ bb │",
                "├──────┼────┤",
                "│ 1    │  2 │",
                "├──────┼────┤",
                "│ long │  x │",
                "│ cell │    │",
                "└──────┴────┘",
            ]
        );
        // Too narrow for borders.
        assert_eq!(plain(md, 6), ["a | bb", "1 | 2", "long", "cell |", "x"]);
        let lines = stripped(md, 40);
        assert_eq!(lines[1], "│ a         │ bb │");
    }

    const RICH: &str = "# 标题 Heading with 🎉 emoji\n\nA paragraph with **bold**, *italic*, `code` and a \
        [link](https://example.com/a/very/long/url/that/goes/on/and/on/forever?query=1&more=2) \
        and 日本語のテキストがここにあります。 and 👍🏽👨‍👩‍👧 emoji.\n\n\
        > A quote with `code` and 中文字符 that wraps around.\n>\n> - a list in a quote\n\n\
        1. first\n2. second with a long line that wraps around the width\n   - nested 全角\n     \
        ```sh\n     echo 'code in a list with a long line'\n     ```\n\n\
        ```rust\nfn main() { println!(\"日本語 {}\", \"a very long line of code that never wraps\"); }\n```\n\n\
        ---\n\n\
        | Column | 中文 | Emoji 🎉 | A long header here |\n|:--|:-:|--:|---|\n\
        | https://example.com/long/url/in/a/cell | 全角文字 | 👍🏽 | text text text text |\n\
        | `x` | **y** | *z* | ~~w~~ |\n\nend\twith a tab";

    #[test]
    fn never_wider_than_the_width() {
        for theme in [MarkdownTheme::default(), MarkdownTheme::plain()] {
            for hyperlinks in [false, true] {
                let mut md = Markdown::new(RICH)
                    .with_theme(theme.clone())
                    .with_hyperlinks(hyperlinks);
                for w in 0..=80 {
                    let lines = md.render(w);
                    assert!(!lines.is_empty());
                    for line in &lines {
                        assert!(visible_width(line) <= w, "{line:?} at {w}");
                    }
                }
            }
        }
        let wide = stripped(RICH, 80);
        assert!(wide.iter().any(|l| l.starts_with("┌─")), "{wide:#?}");
        assert!(
            wide.iter()
                .any(|l| l.contains("(https://example.com/a/very"))
        );
    }

    #[test]
    fn caches_by_width_and_text() {
        let mut md = Markdown::new("hello world");
        let first = md.render(20);
        assert!(md.cache.is_some() && md.blocks.is_some());
        // A cached rendering is returned as is; a new width re-renders from the parsed blocks.
        md.cache = Some((20, vec!["cached".into()]));
        assert_eq!(md.render(20), ["cached"]);
        assert_eq!(md.render(5), ["hello", "world"]);
        assert_eq!(md.render(20), first);
        md.append(" again");
        assert_eq!(md.render(20), ["hello world again"]);
        md.set_text("new");
        assert_eq!(md.render(20), ["new"]);
        assert_eq!(md.text(), "new");
    }

    #[test]
    fn streaming_prefixes_render() {
        let mut md = Markdown::new("").with_theme(MarkdownTheme::plain());
        let mut last = Vec::new();
        for piece in RICH.split_inclusive(' ') {
            md.append(piece);
            last = md.render(30);
            assert!(last.iter().all(|l| visible_width(l) <= 30));
        }
        assert_eq!(last, plain(RICH, 30));
        // An unclosed fence renders as a code block so far.
        assert_eq!(plain("```py\nx = 1", 20), ["```py", "  x = 1", "```"]);
    }
}
