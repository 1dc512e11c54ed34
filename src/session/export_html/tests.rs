use serde_json::{Value, json};

use super::*;
use crate::session::SessionManager;

fn header() -> SessionHeader {
    SessionHeader::new(
        "0197a000-0000-7000-8000-000000000001",
        "2026-01-01T00:00:00.000Z",
        "/home/me/project",
    )
}

fn entry(v: Value) -> SessionEntry {
    serde_json::from_value(v).unwrap()
}

fn msg(id: &str, parent: Option<&str>, message: Value) -> SessionEntry {
    entry(json!({
        "type": "message", "id": id, "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z", "message": message,
    }))
}

fn user(id: &str, parent: Option<&str>, text: &str) -> SessionEntry {
    msg(
        id,
        parent,
        json!({"role": "user", "content": text, "timestamp": 1}),
    )
}

fn assistant(id: &str, parent: Option<&str>, content: Value, cost: f64) -> SessionEntry {
    msg(
        id,
        parent,
        json!({
            "role": "assistant", "content": content, "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": {"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0,
                      "totalTokens": 1500,
                      "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0,
                               "cacheWrite": 0.0, "total": cost}},
            "stopReason": "stop", "timestamp": 2,
        }),
    )
}

fn tool_result(
    id: &str,
    parent: &str,
    call: &str,
    name: &str,
    text: &str,
    details: Value,
) -> SessionEntry {
    msg(
        id,
        Some(parent),
        json!({
            "role": "toolResult", "toolCallId": call, "toolName": name,
            "content": [{"type": "text", "text": text}], "details": details,
            "isError": false, "timestamp": 3,
        }),
    )
}

fn page(entries: &[SessionEntry], leaf: Option<&str>) -> String {
    render_html(&header(), entries, leaf, &HtmlOptions::new())
}

/// The `<article>` of entry `id`, up to its end.
fn article<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"e-{id}\" data-id="))
        .unwrap_or_else(|| panic!("no article for {id}"));
    let start = html[..start].rfind("<article").unwrap();
    let end = start + html[start..].find("</article>").unwrap();
    &html[start..end]
}

/// Whether entry `id`'s article is on the path shown (its classes).
fn on_path(html: &str, id: &str) -> bool {
    let a = article(html, id);
    let class = &a[a.find("class=\"").unwrap() + 7..];
    let class = &class[..class.find('"').unwrap()];
    match (class.contains(" on-path"), class.contains(" off-path")) {
        (true, false) => true,
        (false, true) => false,
        _ => panic!("{class}"),
    }
}

/// Every value of attribute `attr` (`src`, `href`) of the page's tags. A literal `<` in the
/// page starts a tag (session text has its own escaped), up to the next `>` (attribute
/// values have theirs escaped).
fn attribute_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let needle = format!(" {attr}=\"");
    let mut values = Vec::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        let tag_end = open + rest[open..].find('>').unwrap();
        let tag = &rest[open..tag_end];
        // The page's own style and script hold no tags.
        for (i, _) in tag.match_indices(&needle) {
            let v = &tag[i + needle.len()..];
            values.push(&v[..v.find('"').unwrap()]);
        }
        rest = &rest[tag_end..];
        if tag.starts_with("<style") {
            rest = &rest[rest.find("</style>").unwrap()..];
        } else if tag.starts_with("<script") {
            rest = &rest[rest.find("</script>").unwrap()..];
        }
    }
    values
}

#[test]
fn script_in_user_text_and_tool_output_is_escaped() {
    let entries = [
        user(
            "u1",
            None,
            "Look: <script>alert('user')</script> & <img src=x onerror=y>",
        ),
        assistant(
            "a1",
            Some("u1"),
            json!([{"type": "toolCall", "id": "call_1", "name": "bash",
                    "arguments": {"command": "echo '<script>alert(1)</script>'"}}]),
            0.0,
        ),
        tool_result(
            "r1",
            "a1",
            "call_1",
            "bash",
            "<script>alert(\"tool\")</script>",
            Value::Null,
        ),
    ];
    let html = page(&entries, None);
    // The page's only script is its own, at the end.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(html.contains("&lt;script&gt;alert(&#39;user&#39;)&lt;/script&gt;"));
    assert!(html.contains("&lt;img src=x onerror=y&gt;"));
    assert!(html.contains("$ echo &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39;"));
    assert!(html.contains("&lt;script&gt;alert(&quot;tool&quot;)&lt;/script&gt;"));
    assert!(!html.contains("onerror=y>"));
}

#[test]
fn raw_html_in_markdown_is_shown_as_text_and_links_are_not_followed() {
    let text = "# Title\n\n<div onclick=\"x()\">block html</div>\n\nInline <b>bold</b> and **strong**, \
                a [link](https://example.com/a?b=1) and ![pic](http://example.com/p.png) \
                and <https://auto.example>.\n\n```rust\nfn main() {}\n```\n";
    let entries = [
        user("u1", None, "hi"),
        assistant(
            "a1",
            Some("u1"),
            json!([{"type": "text", "text": text}]),
            0.0,
        ),
    ];
    let html = page(&entries, None);
    let a = article(&html, "a1");
    assert!(a.contains("<h1>Title</h1>"), "{a}");
    assert!(
        a.contains("<pre class=\"md-html\">&lt;div onclick=\"x()\"&gt;block html&lt;/div&gt;"),
        "{a}"
    );
    assert!(
        a.contains("Inline &lt;b&gt;bold&lt;/b&gt; and <strong>strong</strong>"),
        "{a}"
    );
    assert!(
        a.contains("<span class=\"md-link\" title=\"https://example.com/a?b=1\">link</span>"),
        "{a}"
    );
    assert!(
        a.contains("[image: pic] <span class=\"md-url\">&lt;http://example.com/p.png&gt;</span>"),
        "{a}"
    );
    assert!(
        a.contains(
            "<span class=\"md-link\" title=\"https://auto.example\">https://auto.example</span>."
        ),
        "{a}"
    );
    assert!(
        a.contains("<pre><code class=\"language-rust\">fn main() {}"),
        "{a}"
    );
    assert!(!a.contains("<div onclick"), "{a}");
    assert!(!a.contains("<b>"), "{a}");
}

#[test]
fn no_attribute_points_off_the_page() {
    let entries = [
        user(
            "u1",
            None,
            "See https://example.com and [x](javascript:alert(1)) ![i](https://t.example/i.png)",
        ),
        msg(
            "u2",
            Some("u1"),
            json!({"role": "user", "timestamp": 1, "content": [
            {"type": "text", "text": "an image"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "image", "mimeType": "text/html\" onload=\"x", "data": "AAAA"}]}),
        ),
        assistant(
            "a1",
            Some("u2"),
            json!([{"type": "text", "text": "<a href=\"https://evil.example\">x</a> <img src=\"http://evil.example/x.png\">"}]),
            0.0,
        ),
    ];
    let html = page(&entries, None);
    for value in attribute_values(&html, "href") {
        assert!(value.starts_with('#'), "href off the page: {value}");
    }
    for value in attribute_values(&html, "src") {
        assert!(
            value.starts_with("data:image/"),
            "src off the page: {value}"
        );
    }
    assert_eq!(
        attribute_values(&html, "src"),
        ["data:image/png;base64,iVBORw0KGgo="]
    );
    assert!(!html.contains(" action=") && !html.contains("url("));

    // Without session text, the page names no address at all.
    let empty = render_html(&header(), &[], None, &HtmlOptions::new());
    assert!(!empty.contains("http:") && !empty.contains("https:"));
    assert!(empty.contains("content=\"default-src 'none'; img-src data:;"));
}

#[test]
fn every_branch_is_in_the_page_and_only_the_active_path_is_shown() {
    let entries = [
        user("u1", None, "root question"),
        assistant(
            "a1",
            Some("u1"),
            json!([{"type": "text", "text": "first answer"}]),
            0.0,
        ),
        user("u2", Some("a1"), "abandoned branch"),
        assistant(
            "a2",
            Some("u2"),
            json!([{"type": "text", "text": "abandoned answer"}]),
            0.0,
        ),
        user("u3", Some("a1"), "active branch"),
        assistant(
            "a3",
            Some("u3"),
            json!([{"type": "text", "text": "active answer"}]),
            0.0,
        ),
    ];
    let html = page(&entries, Some("a3"));
    for id in ["u1", "a1", "u3", "a3"] {
        assert!(on_path(&html, id), "{id}");
    }
    for id in ["u2", "a2"] {
        assert!(!on_path(&html, id), "{id}");
    }
    assert!(article(&html, "a2").contains("abandoned answer"));
    // Tree order: a branch's entries follow its parent (u2's subtree before u3's).
    let order: Vec<usize> = ["u1", "a1", "u2", "a2", "u3", "a3"]
        .iter()
        .map(|id| html.find(&format!("id=\"e-{id}\" data-id")).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    // The tree panel: every node, the branch point's children indented, the leaf marked.
    assert!(html.contains("<li class=\"node k-user off-path\" style=\"--d:1\"><a href=\"#e-u2\" data-id=\"u2\" data-parent=\"a1\">"), "{html}");
    assert!(
        html.contains(
            "<li class=\"node k-assistant on-path leaf\" style=\"--d:1\"><a href=\"#e-a3\""
        )
    );

    // Another leaf shows the other branch.
    let html = page(&entries, Some("a2"));
    assert!(on_path(&html, "a2"));
    assert!(!on_path(&html, "a3"));
    // No leaf: the last entry's path.
    let html = page(&entries, None);
    assert!(on_path(&html, "a3"));
}

#[test]
fn the_edit_diff_is_a_diff_with_added_and_removed_lines() {
    let entries = [
        user("u1", None, "fix it"),
        assistant(
            "a1",
            Some("u1"),
            json!([{"type": "toolCall", "id": "c1", "name": "edit",
                    "arguments": {"path": "/home/me/project/src/main.rs",
                                  "edits": [{"oldText": "println!(\"hello\");", "newText": "println!(\"bye\");"}]}}]),
            0.0,
        ),
        tool_result(
            "r1",
            "a1",
            "c1",
            "edit",
            "Successfully replaced 1 block(s) in src/main.rs.",
            json!({"diff": " 1 fn main() {\n-2     println!(\"hello\");\n+2     println!(\"bye\");\n 3 }", "firstChangedLine": 2}),
        ),
    ];
    let html = page(&entries, None);
    let a = article(&html, "a1");
    assert!(a.contains("<span class=\"tool-name\">edit</span> <span class=\"tool-path\">~/project/src/main.rs</span>"), "{a}");
    assert!(
        a.contains(
            "<div class=\"diff-line diff-removed\">-2     println!(&quot;hello&quot;);</div>"
        ),
        "{a}"
    );
    assert!(
        a.contains("<div class=\"diff-line diff-added\">+2     println!(&quot;bye&quot;);</div>"),
        "{a}"
    );
    assert!(
        a.contains("<div class=\"diff-line diff-context\"> 1 fn main() {</div>"),
        "{a}"
    );
    assert!(a.contains("tool tool-ok"));
    // The result entry is folded into its call; its tree node links to the call.
    assert!(article(&html, "r1").contains(" merged\""));
    assert!(html.contains("<a href=\"#e-a1-c0\" data-id=\"r1\" data-parent=\"a1\">[edit: ~/project/src/main.rs]</a>"), "{html}");

    // Without a result, the arguments are shown as a diff.
    let html = page(&entries[..2], None);
    let a = article(&html, "a1");
    assert!(
        a.contains("diff-line diff-removed\">-println!(&quot;hello&quot;);"),
        "{a}"
    );
    assert!(
        a.contains("diff-line diff-added\">+println!(&quot;bye&quot;);"),
        "{a}"
    );
    assert!(
        a.contains("tool tool-pending") && a.contains("No result."),
        "{a}"
    );
}

#[test]
fn summaries_changes_and_extension_entries_are_shown() {
    let entries = [
        user("u1", None, "hi"),
        entry(
            json!({"type": "compaction", "id": "c1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
            "summary": "## Goal\nThe **compaction** summary.", "firstKeptEntryId": "u1", "tokensBefore": 123456,
            "details": {"readFiles": ["a.rs"], "modifiedFiles": ["b.rs"]}}),
        ),
        entry(
            json!({"type": "branch_summary", "id": "b1", "parentId": "c1", "timestamp": "t",
            "fromId": "x9", "summary": "The branch tried <things>."}),
        ),
        entry(
            json!({"type": "model_change", "id": "m1", "parentId": "b1", "timestamp": "t",
            "provider": "openai", "modelId": "gpt-5-mini"}),
        ),
        entry(
            json!({"type": "thinking_level_change", "id": "t1", "parentId": "m1", "timestamp": "t",
            "thinkingLevel": "high"}),
        ),
        entry(
            json!({"type": "custom_message", "id": "cm", "parentId": "t1", "timestamp": "t",
            "customType": "reminder", "content": "Remember *this*.", "display": true}),
        ),
        entry(
            json!({"type": "custom", "id": "cs", "parentId": "cm", "timestamp": "t",
            "customType": "my-ext", "data": {"count": 42}}),
        ),
        entry(
            json!({"type": "label", "id": "l1", "parentId": "cs", "timestamp": "t",
            "targetId": "u1", "label": "start"}),
        ),
        entry(
            json!({"type": "session_info", "id": "s1", "parentId": "l1", "timestamp": "t", "name": "My <work>"}),
        ),
        msg(
            "x1",
            Some("s1"),
            json!({"role": "bashExecution", "command": "ls -la", "output": "total 0",
            "exitCode": 2, "cancelled": false, "truncated": false, "timestamp": 5}),
        ),
        entry(
            json!({"type": "future_kind", "id": "f1", "parentId": "x1", "timestamp": "t", "payload": [1, 2]}),
        ),
    ];
    let html = page(&entries, None);
    let c = article(&html, "c1");
    assert!(c.contains("Compacted from 123,456 tokens"), "{c}");
    assert!(
        c.contains("<h2>Goal</h2>") && c.contains("The <strong>compaction</strong> summary."),
        "{c}"
    );
    assert!(c.contains("<code>a.rs</code>") && c.contains("<code>b.rs</code>"));
    assert!(article(&html, "b1").contains("The branch tried &lt;things&gt;."));
    assert!(article(&html, "m1").contains("Switched to model <b>openai/gpt-5-mini</b>"));
    assert!(article(&html, "t1").contains("Thinking level set to <b>high</b>"));
    let cm = article(&html, "cm");
    assert!(
        cm.contains("[reminder]") && cm.contains("Remember <em>this</em>."),
        "{cm}"
    );
    assert!(article(&html, "cs").contains("&quot;count&quot;: 42"));
    assert!(article(&html, "u1").contains("<span class=\"label\">start</span>"));
    assert!(html.contains("<title>My &lt;work&gt;</title>"));
    let x = article(&html, "x1");
    assert!(
        x.contains("$ ls -la") && x.contains("total 0") && x.contains("(exit 2)"),
        "{x}"
    );
    let f = article(&html, "f1");
    assert!(
        f.contains("Entry of type &quot;future_kind&quot;") && f.contains("&quot;payload&quot;"),
        "{f}"
    );
}

#[test]
fn costs_per_message_and_in_total() {
    let entries = [
        user("u1", None, "q"),
        assistant(
            "a1",
            Some("u1"),
            json!([{"type": "text", "text": "one"}]),
            0.0125,
        ),
        user("u2", Some("a1"), "q2"),
        assistant(
            "a2",
            Some("u2"),
            json!([{"type": "text", "text": "two"}]),
            0.02,
        ),
        // Another branch: counted in the total, not on the path.
        user("u3", Some("a1"), "q3"),
        assistant(
            "a3",
            Some("u3"),
            json!([{"type": "text", "text": "three"}]),
            0.5,
        ),
    ];
    let html = page(&entries, Some("a2"));
    assert!(article(&html, "a1").contains("<span class=\"cost\">$0.0125</span>"));
    assert!(article(&html, "a2").contains("<span class=\"cost\">$0.0200</span>"));
    assert!(
        html.contains(
            "<span class=\"cost-total\">$0.5325 in all ($0.0325 on the path shown)</span>"
        ),
        "{html}"
    );
    assert!(html.contains("↑3.6k ↓900"), "{html}");
    assert!(html.contains("3 user, 3 assistant"));

    let html = page(&entries[..4], None);
    assert!(html.contains("<span class=\"cost-total\">$0.0325</span>"));
}

#[test]
fn system_prompt_and_tools_are_collapsed_sections() {
    let options = HtmlOptions::new()
        .with_system_prompt("You are <careful>.\nLine two.")
        .with_tools([crate::Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string", "description": "Where"},
                   "limit": {"type": "number"}}, "required": ["path"]}),
        )]);
    let html = render_html(&header(), &[], None, &options);
    assert!(html.contains("<details class=\"system-prompt\"><summary>System prompt (2 lines)</summary><pre>You are &lt;careful&gt;.\nLine two.</pre></details>"));
    assert!(html.contains("<summary>Tools (1)</summary>"));
    assert!(html.contains("<code>path</code> <span class=\"param-type\">string</span> <span class=\"param-req\">required</span>"));
    assert!(html.contains("<code>limit</code> <span class=\"param-type\">number</span> <span class=\"param-opt\">optional</span>"));
}

#[test]
fn an_empty_session_renders() {
    let html = page(&[], None);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("This session has no entries yet."));
    assert!(html.ends_with("</html>\n"));
}

#[test]
fn cycles_orphans_and_long_chains_render() {
    // A cycle (no root above it) and an orphan.
    let entries = [
        user("a", Some("b"), "in a cycle"),
        user("b", Some("a"), "also in the cycle"),
        user("o", Some("missing"), "an orphan"),
    ];
    let html = page(&entries, Some("b"));
    for id in ["a", "b", "o"] {
        let _ = article(&html, id);
    }
    // A chain of 100 000 entries: no recursion, linear time.
    let n = 100_000;
    let mut entries = Vec::with_capacity(n);
    entries.push(user("n0", None, "first"));
    for i in 1..n {
        entries.push(user(&format!("n{i}"), Some(&format!("n{}", i - 1)), "next"));
    }
    let start = std::time::Instant::now();
    let html = page(&entries, None);
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    assert!(on_path(&html, "n99999"));
    assert_eq!(html.matches("<article ").count(), n);
}

#[test]
fn a_corrupt_line_and_a_misshapen_entry_do_not_fail_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("2026-01-01T00-00-00-000Z_abc.jsonl");
    let lines = [
        r#"{"type":"session","version":3,"id":"0197a000-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"still here","timestamp":1}}"#,
        r#"{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","mess"#,
        r#"{"type":"message","id":"bad","parentId":"u1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","content":"not a list"}}"#,
        r#"{"type":"model_change","id":"big","parentId":"bad","timestamp":"t","provider":"p","modelId":"m","n":1e999}"#,
        r#"{"type":"new_kind","id":"nk","parentId":"big","timestamp":"t","x":"<y>"}"#,
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("out.html");
    let written = export_session_file(&input, Some(&out)).unwrap();
    assert_eq!(written, out);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("still here"));
    let bad = article(&html, "bad");
    assert!(
        bad.contains("Entry of type &quot;message&quot;") && bad.contains("not a list"),
        "{bad}"
    );
    assert!(article(&html, "nk").contains("&quot;&lt;y&gt;&quot;"));
    let _ = article(&html, "big");
    assert!(on_path(&html, "nk"));
}

#[test]
fn export_errors_are_pis() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.jsonl");
    let e = export_session_file(&missing, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("File not found: {}", missing.display())
    );
    let not_session = dir.path().join("x.jsonl");
    std::fs::write(&not_session, "{\"hello\":1}\n").unwrap();
    let e = export_session_file(&not_session, Some(&dir.path().join("o.html"))).unwrap_err();
    assert!(matches!(e, ExportError::Session(_)), "{e}");
    assert!(!dir.path().join("o.html").exists());
    assert_eq!(
        ExportError::InMemory.to_string(),
        "Cannot export in-memory session to HTML"
    );
    assert_eq!(
        ExportError::NothingToExport.to_string(),
        "Nothing to export yet - start a conversation first"
    );
}

#[test]
fn default_output_names_are_pis() {
    assert_eq!(
        default_output_path(Path::new("/a/b/s.jsonl")),
        Path::new("pi-session-s.html")
    );
    assert_eq!(
        default_output_path(Path::new("notes.json")),
        Path::new("pi-session-notes.json.html")
    );
}

#[test]
fn render_session_reads_a_manager() {
    let mut sm = SessionManager::in_memory("/p");
    let first = sm
        .append_message(crate::UserMessage::text("first"))
        .unwrap();
    sm.append_message(crate::UserMessage::text("old branch"))
        .unwrap();
    sm.branch(&first).unwrap();
    sm.append_message(crate::UserMessage::text("new branch"))
        .unwrap();
    let html = render_session(&sm, &HtmlOptions::new()).unwrap();
    assert!(html.contains("old branch") && html.contains("new branch"));
    let leaf = sm.leaf_id().unwrap().to_owned();
    assert!(on_path(&html, &leaf));
}
