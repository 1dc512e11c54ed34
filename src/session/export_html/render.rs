//! The page itself: one `String`, written front to back (every piece pushed once, so the
//! output is linear in the session), session text always through [`esc`] or [`markdown`].

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};
use serde_json::{Map, Value};

use super::HtmlOptions;
use crate::agent::AgentMessage;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, StopReason, ToolCall, ToolResultMessage,
    UserContent,
};
use crate::session::entry::{SessionEntry, SessionHeader};

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("script.js");

/// No loads at all but `data:` images; inline style and script only.
const CSP: &str = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; \
                   script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// The longest line of the tree panel, in characters.
const PREVIEW_CHARS: usize = 100;

/// The deepest indentation of the tree panel (deeper branches are drawn at this depth).
const MAX_INDENT: usize = 24;

// ----- escaping --------------------------------------------------------------------------------

/// Pushes `s` HTML-escaped (text and attribute values alike).
pub(super) fn esc(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    esc(&mut out, s);
    out
}

/// Pushes `text` rendered as CommonMark (tables, strikethrough, task lists). HTML in it is
/// shown as text; a link is its text with the address beside it, not followed; an image is
/// its description and address, not loaded.
pub(super) fn markdown(out: &mut String, text: &str) {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // The addresses of the links being rendered (links nest in images' descriptions); `None`
    // for an autolink, whose text is its address.
    let mut links: Vec<Option<CowStr<'_>>> = Vec::new();
    let events = Parser::new_ext(text, options).map(move |event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::HtmlBlock) => Event::Html(CowStr::Borrowed("<pre class=\"md-html\">")),
        Event::End(TagEnd::HtmlBlock) => Event::Html(CowStr::Borrowed("</pre>\n")),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            ..
        }) => {
            let open = format!("<span class=\"md-link\" title=\"{}\">", escaped(&dest_url));
            let auto = matches!(link_type, LinkType::Autolink | LinkType::Email);
            links.push((!auto).then_some(dest_url));
            Event::Html(open.into())
        }
        Event::End(TagEnd::Link) => match links.pop().flatten() {
            Some(url) => Event::Html(
                format!(
                    "</span> <span class=\"md-url\">&lt;{}&gt;</span>",
                    escaped(&url)
                )
                .into(),
            ),
            None => Event::Html(CowStr::Borrowed("</span>")),
        },
        Event::Start(Tag::Image { dest_url, .. }) => {
            let open = format!(
                "<span class=\"md-image\" title=\"{}\">[image: ",
                escaped(&dest_url)
            );
            links.push(Some(dest_url));
            Event::Html(open.into())
        }
        Event::End(TagEnd::Image) => {
            let url = links.pop().flatten().unwrap_or(CowStr::Borrowed(""));
            Event::Html(
                format!(
                    "] <span class=\"md-url\">&lt;{}&gt;</span></span>",
                    escaped(&url)
                )
                .into(),
            )
        }
        other => other,
    });
    pulldown_cmark::html::push_html(out, events);
}

// ----- small formats ---------------------------------------------------------------------------

/// `text` on one line (newlines and tabs as spaces, leading space dropped), at most
/// [`PREVIEW_CHARS`] characters, an ellipsis when cut.
fn preview(text: &str) -> String {
    let mut out = String::new();
    for (n, c) in text.trim_start().chars().enumerate() {
        if n == PREVIEW_CHARS {
            out.push('…');
            return out;
        }
        out.push(if c.is_whitespace() { ' ' } else { c });
    }
    out.truncate(out.trim_end().len());
    out
}

/// pi's token counts: `950`, `1.2k`, `45k`, `1.3M`.
fn tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 10_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else if n < 1_000_000 {
        format!("{}k", (n as f64 / 1000.0).round() as u64)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// A dollar amount.
fn dollars(x: f64) -> String {
    format!("${x:.4}")
}

/// Groups of three digits: `12,345`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An entry's ISO timestamp as `2026-01-01 12:00:00` (UTC), or as written when it is not
/// ISO.
fn when(ts: &str) -> String {
    match ts.get(..19) {
        Some(head) if head.len() == 19 && head.as_bytes().get(10) == Some(&b'T') => {
            let mut s = head.replacen('T', " ", 1);
            if ts.ends_with('Z') {
                s.push_str(" UTC");
            }
            s
        }
        _ => ts.to_owned(),
    }
}

/// The cost of a reply: its `total`, or the sum of its parts when the total is missing.
fn cost_of(m: &AssistantMessage) -> f64 {
    let c = &m.usage.cost;
    if c.total != 0.0 {
        c.total
    } else {
        c.input + c.output + c.cache_read + c.cache_write
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

fn str_arg<'a>(args: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
}

/// `~/…` for a path under a home directory, as pi shortens them.
fn short_path(p: &str) -> String {
    for home in ["/home/", "/Users/"] {
        if let Some(rest) = p.strip_prefix(home)
            && let Some(slash) = rest.find('/')
        {
            return format!("~{}", &rest[slash..]);
        }
    }
    p.to_owned()
}

/// The text blocks of user content, joined by newlines.
fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(s) => s.clone(),
        UserContent::Blocks(blocks) => {
            let mut out = String::new();
            for t in blocks.iter().filter_map(Content::as_text) {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(t);
            }
            out
        }
    }
}

/// The text blocks of a result, joined by newlines.
fn result_text(content: &[Content]) -> String {
    let mut out = String::new();
    for t in content.iter().filter_map(Content::as_text) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(t);
    }
    out
}

/// pi's skill invocation: `<skill name="…" location="…">\n…\n</skill>` and, after a blank
/// line, what the user said.
struct Skill<'a> {
    name: &'a str,
    location: &'a str,
    body: &'a str,
    rest: Option<&'a str>,
}

fn skill_block(text: &str) -> Option<Skill<'_>> {
    let rest = text.strip_prefix("<skill name=\"")?;
    let (name, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(" location=\"")?;
    let (location, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(">\n")?;
    let end = rest.find("\n</skill>")?;
    let body = &rest[..end];
    let after = &rest[end + "\n</skill>".len()..];
    let rest = if after.is_empty() {
        None
    } else {
        Some(after.strip_prefix("\n\n")?.trim()).filter(|r| !r.is_empty())
    };
    (!name.is_empty() && !location.is_empty()).then_some(Skill {
        name,
        location,
        body,
        rest,
    })
}

// ----- the page --------------------------------------------------------------------------------

/// Totals over a set of entries.
#[derive(Default)]
struct Stats {
    user: usize,
    assistant: usize,
    tool_results: usize,
    custom: usize,
    compactions: usize,
    branch_summaries: usize,
    tool_calls: usize,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
}

impl Stats {
    fn add(&mut self, entry: &SessionEntry) {
        match entry {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(_) => self.user += 1,
                AgentMessage::Assistant(a) => {
                    self.assistant += 1;
                    self.tool_calls += a.tool_calls().count();
                    self.input += a.usage.input;
                    self.output += a.usage.output;
                    self.cache_read += a.usage.cache_read;
                    self.cache_write += a.usage.cache_write;
                    self.cost += cost_of(a);
                }
                AgentMessage::ToolResult(_) => self.tool_results += 1,
                AgentMessage::Custom(_) => self.custom += 1,
            },
            SessionEntry::CustomMessage(_) => self.custom += 1,
            SessionEntry::Compaction(_) => self.compactions += 1,
            SessionEntry::BranchSummary(_) => self.branch_summaries += 1,
            _ => {}
        }
    }

    fn messages(&self) -> String {
        let parts: Vec<String> = [
            (self.user, "user"),
            (self.assistant, "assistant"),
            (self.tool_results, "tool results"),
            (self.custom, "custom"),
            (self.compactions, "compactions"),
            (self.branch_summaries, "branch summaries"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            "0".to_owned()
        } else {
            parts.join(", ")
        }
    }

    fn tokens(&self) -> String {
        let parts: Vec<String> = [
            (self.input, "↑"),
            (self.output, "↓"),
            (self.cache_read, "R"),
            (self.cache_write, "W"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, p)| format!("{p}{}", tokens(*n)))
        .collect();
        if parts.is_empty() {
            "0".to_owned()
        } else {
            parts.join(" ")
        }
    }
}

/// One rendering: the page being written and what was worked out about the entries.
struct Page<'a> {
    out: String,
    entries: &'a [SessionEntry],
    /// Each entry's parent, as an index.
    parent: Vec<Option<usize>>,
    /// Entries on the active path.
    on_path: Vec<bool>,
    /// The leaf shown.
    leaf: Option<usize>,
    /// (assistant entry, tool call id) → the result entry.
    results: HashMap<(usize, &'a str), usize>,
    /// Result entry → (assistant entry, index of the call in its content): results shown
    /// with their call.
    merged: HashMap<usize, (usize, usize)>,
    /// The current label of each labelled entry id.
    labels: HashMap<&'a str, &'a str>,
}

pub(super) fn render(
    header: &SessionHeader,
    entries: &[SessionEntry],
    leaf_id: Option<&str>,
    options: &HtmlOptions,
) -> String {
    let n = entries.len();
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(n);
    for (i, e) in entries.iter().enumerate() {
        by_id.insert(e.id(), i);
    }
    let parent: Vec<Option<usize>> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            e.parent_id()
                .and_then(|p| by_id.get(p).copied())
                .filter(|&p| p != i)
        })
        .collect();
    let (order, depth) = tree_order(&parent);

    let leaf = match leaf_id.and_then(|id| by_id.get(id).copied()) {
        Some(l) => Some(l),
        None => n.checked_sub(1),
    };
    let mut on_path = vec![false; n];
    let mut cursor = leaf;
    while let Some(i) = cursor {
        if on_path[i] {
            break; // a cycle
        }
        on_path[i] = true;
        cursor = parent[i];
    }

    // Tool results belong to the assistant message they follow (through earlier results of
    // the same turn). In tree order, a parent's owner is known before its child's.
    let mut owner: Vec<Option<usize>> = vec![None; n];
    let mut results = HashMap::new();
    for &i in &order {
        if let Some(AgentMessage::ToolResult(r)) = entries[i].as_message() {
            let o = parent[i].and_then(|p| match entries[p].as_message() {
                Some(AgentMessage::ToolResult(_)) => owner[p],
                Some(AgentMessage::Assistant(_)) => Some(p),
                _ => None,
            });
            owner[i] = o;
            if let Some(o) = o {
                results.entry((o, r.tool_call_id.as_str())).or_insert(i);
            }
        }
    }
    let mut merged = HashMap::new();
    for (a, e) in entries.iter().enumerate() {
        if let Some(AgentMessage::Assistant(m)) = e.as_message() {
            for (k, block) in m.content.iter().enumerate() {
                if let AssistantContent::ToolCall(call) = block
                    && let Some(&r) = results.get(&(a, call.id.as_str()))
                {
                    merged.entry(r).or_insert((a, k));
                }
            }
        }
    }
    let mut labels = HashMap::new();
    let mut name: Option<&str> = None;
    for e in entries {
        match e {
            SessionEntry::Label(l) => match l.label.as_deref() {
                Some(label) if !label.trim().is_empty() => {
                    labels.insert(l.target_id.as_str(), label);
                }
                _ => {
                    labels.remove(l.target_id.as_str());
                }
            },
            SessionEntry::SessionInfo(s) => {
                name = s.name.as_deref().map(str::trim).filter(|s| !s.is_empty());
            }
            _ => {}
        }
    }

    // Roughly: the text of the entries, escaped, twice for the tree's previews.
    let mut page = Page {
        out: String::with_capacity(STYLE.len() + SCRIPT.len() + 4096 + n * 512),
        entries,
        parent,
        on_path,
        leaf,
        results,
        merged,
        labels,
    };
    page.document(header, name, &order, &depth, options);
    page.out
}

/// The entries in tree order (depth first, children in file order; parents before their
/// children) and each one's indentation in the tree panel: one more below a node with
/// several children. Entries in a cycle of parent links (no root above them) come last, the
/// cycle cut where it was entered. Iterative: a chain of any length takes no stack.
fn tree_order(parent: &[Option<usize>]) -> (Vec<usize>, Vec<usize>) {
    let n = parent.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(i),
            None => roots.push(i),
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut depth = vec![0usize; n];
    let mut seen = vec![false; n];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut starts = roots.into_iter().chain(0..n);
    while let Some((i, d)) = stack
        .pop()
        .or_else(|| starts.find(|&s| !seen[s]).map(|s| (s, 0)))
    {
        if seen[i] {
            continue;
        }
        seen[i] = true;
        depth[i] = d;
        order.push(i);
        let kids = &children[i];
        let d = if kids.len() > 1 { d + 1 } else { d };
        for &c in kids.iter().rev() {
            if !seen[c] {
                stack.push((c, d));
            }
        }
    }
    (order, depth)
}

impl Page<'_> {
    fn push(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn text(&mut self, s: &str) {
        esc(&mut self.out, s);
    }

    fn md(&mut self, s: &str) {
        markdown(&mut self.out, s);
    }

    fn document(
        &mut self,
        header: &SessionHeader,
        name: Option<&str>,
        order: &[usize],
        depth: &[usize],
        options: &HtmlOptions,
    ) {
        let title = match (&options.title, name) {
            (Some(t), _) => t.clone(),
            (None, Some(n)) => n.to_owned(),
            (None, None) => format!("Session {}", header.id),
        };
        self.push("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        self.push("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        let _ = writeln!(
            self.out,
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
        );
        self.push("<meta name=\"referrer\" content=\"no-referrer\">\n");
        let _ = writeln!(
            self.out,
            "<meta name=\"generator\" content=\"pi-engine {}\">",
            env!("CARGO_PKG_VERSION")
        );
        self.push("<title>");
        self.text(&title);
        self.push("</title>\n<style>\n");
        self.push(STYLE);
        self.push("</style>\n</head>\n<body>\n");

        self.header(header, &title, options);
        self.push("<div class=\"layout\">\n");
        self.tree(order, depth);
        self.push("<main id=\"transcript\" aria-label=\"Transcript\">\n");
        if self.entries.is_empty() {
            self.push("<p class=\"empty\">This session has no entries yet.</p>\n");
        }
        for &i in order {
            self.entry(i);
        }
        self.push("</main>\n</div>\n<script>\n");
        self.push(SCRIPT);
        self.push("</script>\n</body>\n</html>\n");
    }

    fn header(&mut self, header: &SessionHeader, title: &str, options: &HtmlOptions) {
        let mut all = Stats::default();
        let mut path = Stats::default();
        let mut models: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for (i, e) in self.entries.iter().enumerate() {
            all.add(e);
            if self.on_path[i] {
                path.add(e);
            }
            if let Some(AgentMessage::Assistant(a)) = e.as_message() {
                let m = format!("{}/{}", a.provider, a.model);
                if seen.insert(m.clone()) {
                    models.push(m);
                }
            }
        }
        self.push("<header class=\"top\">\n<h1>");
        self.text(title);
        self.push("</h1>\n<dl class=\"info\">\n");
        let item = |page: &mut Page<'_>, label: &str, value: &str, class: &str| {
            let _ = write!(page.out, "<div class=\"{class}\"><dt>{label}</dt><dd>");
            page.text(value);
            page.push("</dd></div>\n");
        };
        item(self, "Session", &header.id, "i-id");
        item(self, "Date", &when(&header.timestamp), "i-date");
        item(self, "Directory", &header.cwd, "i-cwd");
        if let Some(p) = &header.parent_session {
            item(self, "Forked from", p, "i-parent");
        }
        let models = if models.is_empty() {
            "none".to_owned()
        } else {
            models.join(", ")
        };
        item(self, "Models", &models, "i-models");
        item(self, "Messages", &all.messages(), "i-messages");
        item(self, "Tool calls", &all.tool_calls.to_string(), "i-tools");
        item(self, "Tokens", &all.tokens(), "i-tokens");
        let cost = if (all.cost - path.cost).abs() > 1e-12 {
            format!(
                "{} in all ({} on the path shown)",
                dollars(all.cost),
                dollars(path.cost)
            )
        } else {
            dollars(all.cost)
        };
        self.push("<div class=\"i-cost\"><dt>Cost</dt><dd><span class=\"cost-total\">");
        self.text(&cost);
        self.push("</span></dd></div>\n</dl>\n");

        self.push("<div class=\"controls\">\n");
        self.push("<label><input type=\"checkbox\" id=\"opt-all\"> Show all branches</label>\n");
        self.push("<label><input type=\"checkbox\" id=\"opt-thinking\"> Hide thinking</label>\n");
        self.push("<label><input type=\"checkbox\" id=\"opt-tools\"> Hide tool output</label>\n");
        self.push(
            "<button type=\"button\" id=\"to-leaf\" class=\"js-only\">Back to the active path</button>\n",
        );
        self.push("</div>\n");

        if let Some(prompt) = options.system_prompt.as_deref().filter(|p| !p.is_empty()) {
            let lines = prompt.lines().count();
            let _ = write!(
                self.out,
                "<details class=\"system-prompt\"><summary>System prompt ({lines} lines)</summary><pre>"
            );
            self.text(prompt);
            self.push("</pre></details>\n");
        }
        if !options.tools.is_empty() {
            let _ = write!(
                self.out,
                "<details class=\"tool-defs\"><summary>Tools ({})</summary>\n<dl>\n",
                options.tools.len()
            );
            for tool in &options.tools {
                self.push("<dt><code>");
                self.text(&tool.name);
                self.push("</code></dt>\n<dd><div class=\"tool-desc\">");
                self.text(&tool.description);
                self.push("</div>\n");
                self.tool_params(&tool.parameters);
                self.push("</dd>\n");
            }
            self.push("</dl>\n</details>\n");
        }
        self.push("</header>\n");
    }

    fn tool_params(&mut self, schema: &Value) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        if props.is_empty() {
            return;
        }
        let required: HashSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        self.push("<ul class=\"params\">\n");
        for (name, prop) in props {
            self.push("<li><code>");
            self.text(name);
            self.push("</code> <span class=\"param-type\">");
            let ty = match prop.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(other @ Value::Array(_)) => other.to_string(),
                _ => "any".to_owned(),
            };
            self.text(&ty);
            self.push("</span> ");
            self.push(if required.contains(name.as_str()) {
                "<span class=\"param-req\">required</span>"
            } else {
                "<span class=\"param-opt\">optional</span>"
            });
            if let Some(d) = prop.get("description").and_then(Value::as_str) {
                self.push("<div class=\"param-desc\">");
                self.text(d);
                self.push("</div>");
            }
            self.push("</li>\n");
        }
        self.push("</ul>\n");
    }

    // ----- the tree panel ----------------------------------------------------------------------

    fn tree(&mut self, order: &[usize], depth: &[usize]) {
        let _ = write!(
            self.out,
            "<nav id=\"tree\" aria-label=\"Session tree\">\n<h2>Tree <span class=\"count\">{} entries</span></h2>\n<ol class=\"tree\">\n",
            self.entries.len()
        );
        for &i in order {
            let e = &self.entries[i];
            let mut class = String::from("node ");
            class.push_str(kind_class(e));
            class.push_str(if self.on_path[i] {
                " on-path"
            } else {
                " off-path"
            });
            if Some(i) == self.leaf {
                class.push_str(" leaf");
            }
            let _ = write!(
                self.out,
                "<li class=\"{class}\" style=\"--d:{}\"><a href=\"#",
                depth[i].min(MAX_INDENT)
            );
            match self.merged.get(&i) {
                Some(&(a, k)) => {
                    self.push("e-");
                    self.text(self.entries[a].id());
                    let _ = write!(self.out, "-c{k}");
                }
                None => {
                    self.push("e-");
                    self.text(e.id());
                }
            }
            self.push("\"");
            self.tree_attributes(i);
            self.push(">");
            self.label(i, "", " ");
            self.node_text(i);
            self.push("</a></li>\n");
        }
        self.push("</ol>\n</nav>\n");
    }

    /// ` data-id="…" data-parent="…"` of entry `i`: what the script walks the tree by.
    fn tree_attributes(&mut self, i: usize) {
        let entries = self.entries;
        self.push(" data-id=\"");
        self.text(entries[i].id());
        self.push("\"");
        if let Some(p) = self.parent[i] {
            self.push(" data-parent=\"");
            self.text(entries[p].id());
            self.push("\"");
        }
    }

    /// Entry `i`'s label, if it has one, as a `label` span between `before` and `after`.
    fn label(&mut self, i: usize, before: &str, after: &str) {
        let entries = self.entries;
        if let Some(label) = self.labels.get(entries[i].id()).copied() {
            self.push(before);
            self.push("<span class=\"label\">");
            self.text(label);
            self.push("</span>");
            self.push(after);
        }
    }

    /// The one line of entry `i` in the tree panel.
    fn node_text(&mut self, i: usize) {
        let entries = self.entries;
        let (role, text) = match &entries[i] {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(u) => ("user:", preview(&user_text(&u.content))),
                AgentMessage::Assistant(a) => {
                    let text = preview(&a.text());
                    let text = if !text.is_empty() {
                        text
                    } else if a.stop_reason == StopReason::Aborted {
                        "(aborted)".to_owned()
                    } else if let Some(err) = &a.error_message {
                        preview(err)
                    } else {
                        let names: Vec<&str> = a.tool_calls().map(|c| c.name.as_str()).collect();
                        if names.is_empty() {
                            "(no text)".to_owned()
                        } else {
                            format!("(calls {})", names.join(", "))
                        }
                    };
                    ("assistant:", text)
                }
                AgentMessage::ToolResult(r) => {
                    let call =
                        self.merged
                            .get(&i)
                            .and_then(|&(a, k)| match entries[a].as_message() {
                                Some(AgentMessage::Assistant(m)) => match m.content.get(k) {
                                    Some(AssistantContent::ToolCall(c)) => Some(c),
                                    _ => None,
                                },
                                _ => None,
                            });
                    let summary = call.map(call_summary).unwrap_or_default();
                    let text = if summary.is_empty() {
                        format!("[{}]", r.tool_name)
                    } else {
                        format!("[{}: {}]", r.tool_name, preview(&summary))
                    };
                    ("", text)
                }
                AgentMessage::Custom(c) if c.role() == "bashExecution" => {
                    let cmd = c.get("command").and_then(Value::as_str).unwrap_or("");
                    ("[bash]:", preview(cmd))
                }
                AgentMessage::Custom(c) => ("", format!("[{}]", c.role())),
            },
            SessionEntry::ThinkingLevelChange(t) => {
                ("", format!("[thinking: {}]", t.thinking_level.as_str()))
            }
            SessionEntry::ModelChange(m) => ("", format!("[model: {}]", m.model_id)),
            SessionEntry::Compaction(c) => (
                "",
                format!("[compaction: {} tokens]", tokens(c.tokens_before)),
            ),
            SessionEntry::BranchSummary(b) => ("[branch summary]:", preview(&b.summary)),
            SessionEntry::Custom(c) => ("", format!("[state: {}]", c.custom_type)),
            SessionEntry::CustomMessage(c) => {
                let role = format!("[{}]:", c.custom_type);
                self.push("<span class=\"role\">");
                self.text(&role);
                self.push("</span> ");
                let text = preview(&user_text(&c.content));
                self.text(&text);
                return;
            }
            SessionEntry::Label(l) => (
                "",
                match &l.label {
                    Some(label) => format!("[label: {label}]"),
                    None => "[label cleared]".to_owned(),
                },
            ),
            SessionEntry::SessionInfo(s) => {
                ("", format!("[name: {}]", s.name.as_deref().unwrap_or("")))
            }
            other => ("", format!("[{}]", other.type_name())),
        };
        if !role.is_empty() {
            self.push("<span class=\"role\">");
            self.push(role);
            self.push("</span> ");
        }
        self.text(&text);
    }

    // ----- the transcript ----------------------------------------------------------------------

    /// Opens the article of entry `i` and writes its heading; `role` is its visible name.
    fn open(&mut self, i: usize, extra_class: &str, role: &str) {
        let e = &self.entries[i];
        let _ = write!(
            self.out,
            "<article class=\"entry {}{}{}\" id=\"e-",
            kind_class(e),
            if self.on_path[i] {
                " on-path"
            } else {
                " off-path"
            },
            extra_class
        );
        self.text(e.id());
        self.push("\"");
        self.tree_attributes(i);
        self.push(">\n<div class=\"entry-head\"><span class=\"role\">");
        self.text(role);
        self.push("</span>");
        self.label(i, " ", "");
        self.push(" <span class=\"off-badge\">other branch</span>");
        let ts = e.timestamp();
        if !ts.is_empty() {
            self.push(" <time datetime=\"");
            self.text(ts);
            self.push("\">");
            self.text(&when(ts));
            self.push("</time>");
        }
        self.push(" <a class=\"anchor\" href=\"#e-");
        self.text(e.id());
        self.push("\" title=\"Link to this entry\">#");
        self.text(e.id());
        self.push("</a></div>\n");
    }

    fn close(&mut self) {
        self.push("</article>\n");
    }

    fn entry(&mut self, i: usize) {
        let entries = self.entries;
        match &entries[i] {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(u) => {
                    self.open(i, "", "User");
                    self.user_content(&u.content);
                    self.close();
                }
                AgentMessage::Assistant(a) => self.assistant(i, a),
                AgentMessage::ToolResult(r) => {
                    if self.merged.contains_key(&i) {
                        // Shown with its call; the article keeps the tree's shape.
                        self.open(i, " merged", "Tool result");
                        self.close();
                    } else {
                        self.open(i, "", "Tool result");
                        self.push("<section class=\"tool\"><div class=\"tool-head\"><span class=\"tool-name\">");
                        self.text(&r.tool_name);
                        self.push("</span> <span class=\"muted\">(its call is not in this session)</span></div>\n");
                        self.tool_result(r, false);
                        self.push("</section>\n");
                        self.close();
                    }
                }
                AgentMessage::Custom(c) if c.role() == "bashExecution" => {
                    self.open(i, "", "Shell");
                    self.bash_execution(c.fields());
                    self.close();
                }
                AgentMessage::Custom(c) => {
                    self.open(i, "", c.role());
                    self.generic(&c.to_value());
                    self.close();
                }
            },
            SessionEntry::ThinkingLevelChange(t) => {
                self.open(i, " event", "Thinking level");
                self.push("<div class=\"event-text\">Thinking level set to <b>");
                self.text(t.thinking_level.as_str());
                self.push("</b></div>\n");
                self.close();
            }
            SessionEntry::ModelChange(m) => {
                self.open(i, " event", "Model");
                self.push("<div class=\"event-text\">Switched to model <b>");
                self.text(&m.provider);
                self.push("/");
                self.text(&m.model_id);
                self.push("</b></div>\n");
                self.close();
            }
            SessionEntry::Compaction(c) => {
                self.open(i, "", "Compaction");
                let _ = write!(
                    self.out,
                    "<details class=\"summary\" open><summary>Compacted from {} tokens",
                    grouped(c.tokens_before)
                );
                if c.from_hook == Some(true) {
                    self.push(" (by an extension)");
                }
                self.push("</summary>\n<div class=\"md\">");
                self.md(&c.summary);
                self.push("</div>\n");
                self.file_lists(c.details.as_ref());
                self.push("</details>\n");
                self.close();
            }
            SessionEntry::BranchSummary(b) => {
                self.open(i, "", "Branch summary");
                self.push("<div class=\"summary\"><div class=\"muted\">Summary of the branch that ended at ");
                self.text(&b.from_id);
                self.push("</div>\n<div class=\"md\">");
                self.md(&b.summary);
                self.push("</div>\n");
                self.file_lists(b.details.as_ref());
                self.push("</div>\n");
                self.close();
            }
            SessionEntry::CustomMessage(c) => {
                let role = format!("[{}]", c.custom_type);
                self.open(i, if c.display { "" } else { " not-displayed" }, &role);
                if !c.display {
                    self.push("<div class=\"muted\">Sent to the model, not shown in pi's interface.</div>\n");
                }
                self.user_content(&c.content);
                if let Some(details) = &c.details {
                    self.push("<details class=\"json\"><summary>Details</summary><pre>");
                    self.text(&pretty(details));
                    self.push("</pre></details>\n");
                }
                self.close();
            }
            SessionEntry::Custom(c) => {
                self.open(i, " event", "Extension state");
                self.push("<details class=\"json\"><summary>");
                self.text(&c.custom_type);
                self.push("</summary><pre>");
                let data = c.data.clone().unwrap_or(Value::Null);
                self.text(&pretty(&data));
                self.push("</pre></details>\n");
                self.close();
            }
            SessionEntry::Label(l) => {
                self.open(i, " event", "Label");
                self.push("<div class=\"event-text\">");
                match &l.label {
                    Some(label) => {
                        self.push("Labelled ");
                        self.target_link(&l.target_id);
                        self.push(" <b>");
                        self.text(label);
                        self.push("</b>");
                    }
                    None => {
                        self.push("Cleared the label of ");
                        self.target_link(&l.target_id);
                    }
                }
                self.push("</div>\n");
                self.close();
            }
            SessionEntry::SessionInfo(s) => {
                self.open(i, " event", "Session name");
                self.push("<div class=\"event-text\">");
                match s.name.as_deref().filter(|n| !n.trim().is_empty()) {
                    Some(name) => {
                        self.push("Named the session <b>");
                        self.text(name);
                        self.push("</b>");
                    }
                    None => self.push("Cleared the session's name"),
                }
                self.push("</div>\n");
                self.close();
            }
            other => {
                let role = format!("Entry of type \"{}\"", other.type_name());
                self.open(i, " unknown", &role);
                let value = serde_json::to_value(other).unwrap_or(Value::Null);
                if let Some(err) = value.get("error").and_then(Value::as_str) {
                    self.push("<div class=\"error-text\">");
                    self.text(err);
                    self.push("</div>\n");
                }
                self.generic(&value);
                self.close();
            }
        }
    }

    fn target_link(&mut self, id: &str) {
        self.push("<a href=\"#e-");
        self.text(id);
        self.push("\">");
        self.text(id);
        self.push("</a>");
    }

    /// An object shown as its JSON.
    fn generic(&mut self, value: &Value) {
        self.push("<details class=\"json\" open><summary>JSON</summary><pre>");
        self.text(&pretty(value));
        self.push("</pre></details>\n");
    }

    /// pi's `{readFiles, modifiedFiles}`.
    fn file_lists(&mut self, details: Option<&Value>) {
        let Some(details) = details else { return };
        for (key, what) in [("readFiles", "Read"), ("modifiedFiles", "Modified")] {
            let Some(files) = details.get(key).and_then(Value::as_array) else {
                continue;
            };
            let files: Vec<&str> = files.iter().filter_map(Value::as_str).collect();
            if files.is_empty() {
                continue;
            }
            let _ = write!(
                self.out,
                "<div class=\"files\"><span class=\"muted\">{what}:</span> "
            );
            for (k, f) in files.iter().enumerate() {
                if k > 0 {
                    self.push(", ");
                }
                self.push("<code>");
                self.text(f);
                self.push("</code>");
            }
            self.push("</div>\n");
        }
    }

    fn image(&mut self, mime: &str, data: &str, class: &str) {
        // Only an image type makes a `data:` URL; anything else is named, not loaded.
        let ok = mime.starts_with("image/")
            && mime[6..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
        if !ok {
            self.push("<div class=\"muted\">[attachment of type ");
            self.text(mime);
            self.push("]</div>\n");
            return;
        }
        let _ = write!(
            self.out,
            "<img class=\"{class}\" alt=\"image\" src=\"data:{mime};base64,"
        );
        self.text(data);
        self.push("\">");
    }

    fn user_content(&mut self, content: &UserContent) {
        match content {
            UserContent::Text(t) => self.user_text(t),
            UserContent::Blocks(blocks) => {
                let images: Vec<_> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        Content::Image(img) => Some(img),
                        _ => None,
                    })
                    .collect();
                if !images.is_empty() {
                    self.push("<div class=\"images\">");
                    for img in images {
                        self.image(&img.mime_type, &img.data, "msg-image");
                    }
                    self.push("</div>\n");
                }
                let text = user_text(content);
                if !text.trim().is_empty() {
                    self.user_text(&text);
                }
                for b in blocks {
                    if let Content::Unknown(raw) = b {
                        self.generic(&Value::Object(raw.clone()));
                    }
                }
            }
        }
    }

    fn user_text(&mut self, text: &str) {
        if let Some(skill) = skill_block(text) {
            self.push("<details class=\"skill\"><summary>Skill <b>");
            self.text(skill.name);
            self.push("</b> <span class=\"muted\">");
            self.text(skill.location);
            self.push("</span></summary>\n<div class=\"md\">");
            self.md(skill.body);
            self.push("</div></details>\n");
            if let Some(rest) = skill.rest {
                self.push("<div class=\"md\">");
                self.md(rest);
                self.push("</div>\n");
            }
            return;
        }
        self.push("<div class=\"md\">");
        self.md(text);
        self.push("</div>\n");
    }

    fn assistant(&mut self, i: usize, a: &AssistantMessage) {
        self.open(i, "", "Assistant");
        self.push("<div class=\"meta\"><span class=\"model\">");
        self.text(&a.provider);
        self.push("/");
        self.text(&a.model);
        self.push("</span>");
        let u = &a.usage;
        if u.input + u.output + u.cache_read + u.cache_write > 0 {
            self.push(" <span class=\"usage\">");
            let mut parts = Vec::new();
            for (n, p) in [
                (u.input, "↑"),
                (u.output, "↓"),
                (u.cache_read, "R"),
                (u.cache_write, "W"),
            ] {
                if n > 0 {
                    parts.push(format!("{p}{}", tokens(n)));
                }
            }
            self.text(&parts.join(" "));
            self.push("</span>");
        }
        let _ = writeln!(
            self.out,
            " <span class=\"cost\">{}</span></div>",
            escaped(&dollars(cost_of(a)))
        );
        for (k, block) in a.content.iter().enumerate() {
            match block {
                AssistantContent::Text(t) => {
                    if !t.text.trim().is_empty() {
                        self.push("<div class=\"md\">");
                        self.md(&t.text);
                        self.push("</div>\n");
                    }
                }
                AssistantContent::Thinking(t) => {
                    if t.is_redacted() {
                        self.push("<div class=\"thinking muted\">Thinking (redacted by the provider)</div>\n");
                    } else if !t.thinking.trim().is_empty() {
                        self.push("<details class=\"thinking\" open><summary>Thinking</summary><div class=\"thinking-text\">");
                        self.text(&t.thinking);
                        self.push("</div></details>\n");
                    }
                }
                AssistantContent::ToolCall(call) => self.tool_call(i, k, call),
                AssistantContent::Unknown(raw) => self.generic(&Value::Object(raw.clone())),
            }
        }
        match a.stop_reason {
            StopReason::Aborted => {
                self.push("<div class=\"error-text\">Aborted");
                if let Some(e) = &a.error_message {
                    self.push(": ");
                    self.text(e);
                }
                self.push("</div>\n");
            }
            StopReason::Error => {
                self.push("<div class=\"error-text\">Error: ");
                self.text(a.error_message.as_deref().unwrap_or("Unknown error"));
                self.push("</div>\n");
            }
            StopReason::Length => {
                self.push("<div class=\"muted\">(stopped at the output token limit)</div>\n");
            }
            _ => {}
        }
        self.close();
    }

    fn tool_call(&mut self, a: usize, k: usize, call: &ToolCall) {
        let entries = self.entries;
        let result = self
            .results
            .get(&(a, call.id.as_str()))
            .filter(|r| self.merged.get(r) == Some(&(a, k)))
            .and_then(|&r| match entries[r].as_message() {
                Some(AgentMessage::ToolResult(m)) => Some(m),
                _ => None,
            });
        let status = match result {
            None => "pending",
            Some(r) if r.is_error => "error",
            Some(_) => "ok",
        };
        let _ = write!(self.out, "<section class=\"tool tool-{status}\" id=\"e-");
        self.text(entries[a].id());
        let _ = write!(
            self.out,
            "-c{k}\">\n<div class=\"tool-head\"><span class=\"tool-name\">"
        );
        self.text(&call.name);
        self.push("</span>");
        let args = &call.arguments;
        let path = str_arg(args, &["path", "file_path"]);
        let known = match call.name.as_str() {
            "bash" => match str_arg(args, &["command"]) {
                Some(cmd) => {
                    self.push("</div>\n<pre class=\"command\">$ ");
                    self.text(cmd);
                    self.push("</pre>\n");
                    true
                }
                None => false,
            },
            "read" => match path {
                Some(p) => {
                    self.push(" <span class=\"tool-path\">");
                    self.text(&short_path(p));
                    let offset = args.get("offset").and_then(Value::as_u64);
                    let limit = args.get("limit").and_then(Value::as_u64);
                    if offset.is_some() || limit.is_some() {
                        let start = offset.unwrap_or(1);
                        let _ = write!(self.out, ":{start}");
                        if let Some(l) = limit {
                            let _ = write!(self.out, "-{}", (start + l).saturating_sub(1));
                        }
                    }
                    self.push("</span></div>\n");
                    true
                }
                None => false,
            },
            "write" => match (path, str_arg(args, &["content"])) {
                (Some(p), Some(content)) => {
                    self.push(" <span class=\"tool-path\">");
                    self.text(&short_path(p));
                    let _ = write!(
                        self.out,
                        "</span> <span class=\"muted\">({} lines)</span></div>\n<pre class=\"code\">",
                        content.lines().count()
                    );
                    self.text(content);
                    self.push("</pre>\n");
                    true
                }
                _ => false,
            },
            "edit" => match path {
                Some(p) => {
                    self.push(" <span class=\"tool-path\">");
                    self.text(&short_path(p));
                    self.push("</span></div>\n");
                    let diff = result
                        .and_then(|r| r.details.as_ref())
                        .and_then(|d| d.get("diff"))
                        .and_then(Value::as_str);
                    match diff {
                        Some(diff) => self.diff(diff),
                        None => self.edit_args(args),
                    }
                    true
                }
                None => false,
            },
            "ls" | "find" | "grep" => {
                let pattern = str_arg(args, &["pattern"]);
                if pattern.is_none() && call.name != "ls" {
                    false
                } else {
                    if let Some(p) = pattern {
                        self.push(" <code class=\"tool-pattern\">");
                        self.text(p);
                        self.push("</code> in");
                    }
                    self.push(" <span class=\"tool-path\">");
                    self.text(&short_path(path.unwrap_or(".")));
                    self.push("</span></div>\n");
                    self.args_rest(args, &["pattern", "path"]);
                    true
                }
            }
            _ => false,
        };
        if !known {
            self.push("</div>\n<pre class=\"args\">");
            self.text(&pretty(&Value::Object(args.clone())));
            self.push("</pre>\n");
        }
        match result {
            Some(r) => {
                let edit_diff = call.name == "edit"
                    && !r.is_error
                    && r.details
                        .as_ref()
                        .and_then(|d| d.get("diff"))
                        .is_some_and(Value::is_string);
                self.tool_result(r, edit_diff);
            }
            None => self.push("<div class=\"muted\">No result.</div>\n"),
        }
        self.push("</section>\n");
    }

    /// The arguments besides `shown`, if any, as JSON.
    fn args_rest(&mut self, args: &Map<String, Value>, shown: &[&str]) {
        let rest: Map<String, Value> = args
            .iter()
            .filter(|(k, _)| !shown.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !rest.is_empty() {
            self.push("<pre class=\"args\">");
            self.text(&pretty(&Value::Object(rest)));
            self.push("</pre>\n");
        }
    }

    /// An edit's arguments as a diff of old and new text (no result diff to show).
    fn edit_args(&mut self, args: &Map<String, Value>) {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        if let Some(edits) = args.get("edits").and_then(Value::as_array) {
            for e in edits {
                if let (Some(o), Some(n)) = (
                    e.get("oldText").and_then(Value::as_str),
                    e.get("newText").and_then(Value::as_str),
                ) {
                    pairs.push((o, n));
                }
            }
        }
        if let (Some(o), Some(n)) = (
            str_arg(args, &["oldText", "old_string"]),
            str_arg(args, &["newText", "new_string"]),
        ) {
            pairs.push((o, n));
        }
        if pairs.is_empty() {
            self.push("<pre class=\"args\">");
            self.text(&pretty(&Value::Object(args.clone())));
            self.push("</pre>\n");
            return;
        }
        self.push("<div class=\"diff\">");
        for (k, (old, new)) in pairs.into_iter().enumerate() {
            if k > 0 {
                self.push("<div class=\"diff-line diff-context\">…</div>");
            }
            for line in old.split('\n') {
                self.push("<div class=\"diff-line diff-removed\">-");
                self.text(line);
                self.push("</div>");
            }
            for line in new.split('\n') {
                self.push("<div class=\"diff-line diff-added\">+");
                self.text(line);
                self.push("</div>");
            }
        }
        self.push("</div>\n");
    }

    /// pi's edit diff (`details.diff`): `+`, `-` and ` ` lines with line numbers.
    fn diff(&mut self, diff: &str) {
        self.push("<div class=\"diff\">");
        for line in diff.split('\n') {
            let class = if line.starts_with('+') {
                "diff-added"
            } else if line.starts_with('-') {
                "diff-removed"
            } else {
                "diff-context"
            };
            let _ = write!(self.out, "<div class=\"diff-line {class}\">");
            self.text(line);
            self.push("</div>");
        }
        self.push("</div>\n");
    }

    /// A tool's result; `diff_shown` when the edit diff already says it all (the text is then
    /// left out).
    fn tool_result(&mut self, r: &ToolResultMessage, diff_shown: bool) {
        let images: Vec<_> = r
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Image(img) => Some(img),
                _ => None,
            })
            .collect();
        if !images.is_empty() {
            self.push("<div class=\"images\">");
            for img in images {
                self.image(&img.mime_type, &img.data, "tool-image");
            }
            self.push("</div>\n");
        }
        if !diff_shown {
            let text = result_text(&r.content);
            let text = text.trim_end();
            if !text.is_empty() {
                let _ = write!(
                    self.out,
                    "<pre class=\"tool-output{}\">",
                    if r.is_error { " error-text" } else { "" }
                );
                self.text(text);
                self.push("</pre>\n");
            } else if r.is_error {
                self.push("<div class=\"error-text\">The tool failed.</div>\n");
            }
        }
        for c in &r.content {
            if let Content::Unknown(raw) = c {
                self.generic(&Value::Object(raw.clone()));
            }
        }
    }

    /// pi's `bashExecution` message: a command a person ran (`!cmd`).
    fn bash_execution(&mut self, fields: &Map<String, Value>) {
        let command = fields.get("command").and_then(Value::as_str).unwrap_or("");
        let output = fields.get("output").and_then(Value::as_str).unwrap_or("");
        let cancelled = fields.get("cancelled").and_then(Value::as_bool) == Some(true);
        let exit = fields.get("exitCode").and_then(Value::as_i64);
        let failed = cancelled || exit.is_some_and(|c| c != 0);
        let _ = write!(
            self.out,
            "<section class=\"tool {}\"><pre class=\"command\">$ ",
            if failed { "tool-error" } else { "tool-ok" }
        );
        self.text(command);
        self.push("</pre>\n");
        let output = output.trim_end();
        if !output.is_empty() {
            self.push("<pre class=\"tool-output\">");
            self.text(output);
            self.push("</pre>\n");
        }
        if cancelled {
            self.push("<div class=\"error-text\">(cancelled)</div>\n");
        } else if let Some(code) = exit.filter(|&c| c != 0) {
            let _ = writeln!(self.out, "<div class=\"error-text\">(exit {code})</div>");
        }
        if fields.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
            self.push("<div class=\"muted\">(not sent to the model)</div>\n");
        }
        self.push("</section>\n");
    }
}

/// A one-line summary of a call's arguments, for the tree panel.
fn call_summary(call: &ToolCall) -> String {
    let args = &call.arguments;
    match call.name.as_str() {
        "bash" => str_arg(args, &["command"]).unwrap_or("").to_owned(),
        "read" | "write" | "edit" | "ls" => {
            short_path(str_arg(args, &["path", "file_path"]).unwrap_or("."))
        }
        "grep" | "find" => format!(
            "{} in {}",
            str_arg(args, &["pattern"]).unwrap_or(""),
            short_path(str_arg(args, &["path"]).unwrap_or("."))
        ),
        _ => Value::Object(args.clone()).to_string(),
    }
}

/// The CSS class of an entry's kind.
fn kind_class(e: &SessionEntry) -> &'static str {
    match e {
        SessionEntry::Message(m) => match &m.message {
            AgentMessage::User(_) => "k-user",
            AgentMessage::Assistant(_) => "k-assistant",
            AgentMessage::ToolResult(_) => "k-tool",
            AgentMessage::Custom(c) if c.role() == "bashExecution" => "k-bash",
            AgentMessage::Custom(_) => "k-custom-role",
        },
        SessionEntry::ThinkingLevelChange(_) => "k-thinking-level",
        SessionEntry::ModelChange(_) => "k-model",
        SessionEntry::Compaction(_) => "k-compaction",
        SessionEntry::BranchSummary(_) => "k-branch-summary",
        SessionEntry::Custom(_) => "k-state",
        SessionEntry::CustomMessage(_) => "k-custom",
        SessionEntry::Label(_) => "k-label",
        SessionEntry::SessionInfo(_) => "k-name",
        _ => "k-unknown",
    }
}
