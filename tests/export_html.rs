//! The HTML export (`pi_engine::session::export_html`) of a session written through the
//! session layer, and the page in a real browser: headless Chromium loads it from a file (no
//! network), runs its script, and the transcript's texts are in the DOM; a link to an entry
//! of another branch shows that branch; a screenshot is a non-empty PNG. The browser test
//! needs `/usr/bin/chromium` (`apt-get install -y chromium`), so a plain `cargo test` lists
//! it as ignored. Every browser run is killed after 60 s.
#![cfg(feature = "export-html")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_engine::session::SessionOptions;
use pi_engine::session::export_html::{HtmlOptions, export_session_file, render_session};
use pi_engine::{AssistantContent, AssistantMessage, Content, ToolResultMessage, UserMessage};
use serde_json::json;

const CHROMIUM: &str = "/usr/bin/chromium";
const BROWSER_LIMIT: Duration = Duration::from_secs(60);

/// A session file with a user message, an assistant reply in markdown with a tool call, its
/// result, a final reply, and an abandoned branch. Returns the file and the abandoned
/// branch's entry id.
fn sample_session(dir: &Path) -> (PathBuf, String) {
    let mut sm = SessionOptions::new()
        .with_session_dir(dir)
        .create("/home/me/project");
    let question = sm
        .append_message(UserMessage::text("Please list the <files> here"))
        .unwrap();
    let abandoned = sm
        .append_message(
            AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
                .with_content(vec![AssistantContent::text("An abandoned reply")]),
        )
        .unwrap();
    sm.branch(&question).unwrap();
    sm.append_message(
        AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5").with_content(
            vec![
                AssistantContent::thinking("The user wants a listing."),
                AssistantContent::text("Sure, *listing* with `ls`:"),
                AssistantContent::tool_call("call_1", "bash", json!({"command": "ls -1"})),
            ],
        ),
    )
    .unwrap();
    sm.append_message(ToolResultMessage::new(
        "call_1",
        "bash",
        vec![Content::text("Cargo.toml\nsrc-dir-listed")],
        false,
    ))
    .unwrap();
    sm.append_message(
        AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5").with_content(
            vec![AssistantContent::text(
                "There are **two** entries:\n\n| name |\n|---|\n| Cargo.toml |",
            )],
        ),
    )
    .unwrap();
    (sm.session_file().unwrap().to_owned(), abandoned)
}

#[test]
fn a_session_file_exports_to_one_page() {
    let dir = tempfile::tempdir().unwrap();
    let (file, abandoned) = sample_session(dir.path());
    let out = dir.path().join("page.html");
    assert_eq!(export_session_file(&file, Some(&out)).unwrap(), out);
    let html = std::fs::read_to_string(&out).unwrap();
    for text in [
        "Please list the &lt;files&gt; here",
        "Sure, <em>listing</em> with <code>ls</code>:",
        "The user wants a listing.",
        "$ ls -1",
        "Cargo.toml\nsrc-dir-listed",
        "There are <strong>two</strong> entries:",
        "An abandoned reply",
    ] {
        assert!(html.contains(text), "{text}");
    }
    assert!(html.contains(&format!("id=\"e-{abandoned}\"")));
    // The same page as rendering the manager.
    let sm = SessionOptions::new().read_only().open(&file).unwrap();
    assert_eq!(render_session(&sm, &HtmlOptions::new()).unwrap(), html);
}

/// Runs Chromium headless with `args` (then the page's URL), its stdout to a file; killed
/// after [`BROWSER_LIMIT`]. Returns stdout.
fn chromium(profile: &Path, args: &[&str], url: &str) -> String {
    let out_path = profile.with_extension("stdout");
    let err_path = profile.with_extension("stderr");
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("chromium starts (apt-get install -y chromium)");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > BROWSER_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish in {BROWSER_LIMIT:?}; stderr: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "chromium failed ({status}): {}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    std::fs::read_to_string(&out_path).unwrap()
}

#[test]
#[ignore = "needs chromium"]
fn chromium_shows_the_transcript_and_the_script_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (file, abandoned) = sample_session(dir.path());
    let page = dir.path().join("page.html");
    export_session_file(&file, Some(&page)).unwrap();
    let url = format!("file://{}", page.display());

    let dom = chromium(&dir.path().join("profile-1"), &["--dump-dom"], &url);
    // The script ran (it marks the document) and the transcript is in the DOM.
    assert!(dom.contains("<html lang=\"en\" class=\"js\">"), "{dom}");
    for text in [
        "Please list the &lt;files&gt; here",
        "<em>listing</em>",
        "The user wants a listing.",
        "$ ls -1",
        "src-dir-listed",
        "<strong>two</strong>",
        "<td>Cargo.toml</td>",
        "An abandoned reply",
    ] {
        assert!(dom.contains(text), "{text} not in the DOM");
    }
    let article = |dom: &str, id: &str| -> String {
        let at = dom.find(&format!("id=\"e-{id}\"")).unwrap();
        let start = dom[..at].rfind("<article").unwrap();
        dom[start..at].to_owned()
    };
    assert!(article(&dom, &abandoned).contains("off-path"));

    // A link to the abandoned entry: the script shows its branch.
    let dom = chromium(
        &dir.path().join("profile-2"),
        &["--dump-dom"],
        &format!("{url}#e-{abandoned}"),
    );
    let opening = article(&dom, &abandoned);
    assert!(
        opening.contains("on-path") && !opening.contains("off-path"),
        "{opening}"
    );

    // A screenshot.
    let png = dir.path().join("shot.png");
    chromium(
        &dir.path().join("profile-3"),
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,900",
        ],
        &url,
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.len() > 1000, "{} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
}
