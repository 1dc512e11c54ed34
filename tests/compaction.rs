//! Compaction against pi 0.73.1 itself: `tests/fixtures/pi/compaction-golden.json` holds what
//! pi's own compaction code (run by `scripts/gen-compaction-golden.mjs`) answers on the pi
//! author's real sessions — token estimates, cut points and preparations at 56 leaves × 4
//! budgets, the exact summarization requests of `compact()` and `generateBranchSummary()`,
//! and the summaries they return — and these tests require the same answers here.
//!
//! With node and pi's npm package (`scripts/install-pi-npm.sh`; an ignored test that `.ci/run`
//! runs), the golden is also regenerated live and must be current.

#[path = "support/pi_npm.rs"]
mod pi_npm;

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_engine::agent::AgentMessage;
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::compaction::{
    BranchSummaryOptions, CompactionSettings, SUMMARIZATION_SYSTEM_PROMPT, Summarizer,
    collect_entries_for_branch_summary, compact, estimate_context_tokens, estimate_tokens,
    find_cut_point, generate_branch_summary, path_context, prepare_branch_entries,
    prepare_compaction, serialize_conversation,
};
use pi_engine::session::{SessionEntry, SessionManager, SessionOptions, convert_to_llm};
use pi_engine::{ApiProvider, Message, Model, ThinkingLevel, llm::ModelCost};
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn golden() -> Value {
    let text = std::fs::read_to_string(root().join("tests/fixtures/pi/compaction-golden.json"))
        .expect("golden file");
    serde_json::from_str(&text).unwrap()
}

fn open(file: &str) -> SessionManager {
    SessionOptions::new()
        .read_only()
        .open(root().join("tests/fixtures/pi").join(file))
        .unwrap()
}

/// FNV-1a (32 bits) of the UTF-8 bytes, as the generator hashes.
fn fnv(text: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

fn utf16_len(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

/// Compares a text with the generator's `{len, fnv, head, tail}`.
fn assert_text(ours: &str, pis: &Value, what: &str) {
    if pis.is_null() {
        panic!("{what}: pi has no text, ours is {} chars", ours.len());
    }
    let same = utf16_len(ours) == pis["len"].as_u64().unwrap() && fnv(ours) == pis["fnv"];
    if !same {
        let head: String = ours.chars().take(120).collect();
        let tail: String = {
            let chars: Vec<char> = ours.chars().collect();
            chars[chars.len().saturating_sub(120)..].iter().collect()
        };
        panic!(
            "{what}: ours has {} chars ({}), pi's {} ({})\nours head: {head:?}\npi's head:  {}\nours tail: {tail:?}\npi's tail:  {}",
            utf16_len(ours),
            fnv(ours),
            pis["len"],
            pis["fnv"],
            pis["head"],
            pis["tail"]
        );
    }
}

fn serialized(messages: &[AgentMessage]) -> String {
    serialize_conversation(&convert_to_llm(messages))
}

fn sorted(set: &std::collections::BTreeSet<String>) -> Value {
    json!(set.iter().collect::<Vec<_>>())
}

fn boundary_start(path: &[SessionEntry]) -> usize {
    let Some(prev) = path
        .iter()
        .rposition(|e| matches!(e, SessionEntry::Compaction(_)))
    else {
        return 0;
    };
    let SessionEntry::Compaction(c) = &path[prev] else {
        unreachable!()
    };
    path.iter()
        .position(|e| e.id() == c.first_kept_entry_id)
        .unwrap_or(prev + 1)
}

#[test]
fn cut_points_and_preparations_match_pi() {
    let golden = golden();
    let mut checked = 0;
    for session in golden["sessions"].as_array().unwrap() {
        let file = session["file"].as_str().unwrap();
        let mut sm = open(file);
        assert_eq!(
            sm.entry_count() as u64,
            session["entries"].as_u64().unwrap()
        );
        for leaf in session["leaves"].as_array().unwrap() {
            let id = leaf["leaf"].as_str().unwrap();
            let at = format!("{file} at {id}");
            let path = sm.branch_path(Some(id)).unwrap();
            assert_eq!(
                path.len() as u64,
                leaf["pathLength"].as_u64().unwrap(),
                "{at}"
            );
            let context = path_context(&path);
            assert_eq!(
                context.len() as u64,
                leaf["contextMessages"].as_u64().unwrap(),
                "{at}: context"
            );
            sm.branch(id).unwrap();
            assert_eq!(
                context,
                sm.build_session_context().unwrap().messages,
                "{at}: path_context is the session's context"
            );
            let estimate = serde_json::to_value(estimate_context_tokens(&context)).unwrap();
            assert_eq!(estimate, leaf["estimate"], "{at}: estimateContextTokens");
            let message_tokens: u64 = path
                .iter()
                .filter_map(SessionEntry::as_message)
                .map(estimate_tokens)
                .sum();
            assert_eq!(
                message_tokens,
                leaf["messageTokens"].as_u64().unwrap(),
                "{at}: estimateTokens"
            );
            for case in leaf["cases"].as_array().unwrap() {
                let keep = case["keepRecentTokens"].as_u64().unwrap();
                let at = format!("{at}, keepRecentTokens {keep}");
                let start = boundary_start(&path);
                assert_eq!(
                    start as u64,
                    case["boundaryStart"].as_u64().unwrap(),
                    "{at}"
                );
                let cut = find_cut_point(&path, start, path.len(), keep);
                assert_eq!(
                    serde_json::to_value(cut).unwrap(),
                    case["cutPoint"],
                    "{at}: cut point"
                );

                let mut settings = CompactionSettings::default();
                settings.keep_recent_tokens = keep;
                let prep = prepare_compaction(&path, &settings);
                let pis = &case["preparation"];
                let Some(prep) = prep else {
                    assert!(pis.is_null(), "{at}: pi prepares a compaction, we do not");
                    continue;
                };
                assert_eq!(prep.first_kept_entry_id, pis["firstKeptEntryId"], "{at}");
                assert_eq!(prep.is_split_turn, pis["isSplitTurn"], "{at}");
                assert_eq!(
                    prep.tokens_before, pis["tokensBefore"],
                    "{at}: tokensBefore"
                );
                match &prep.previous_summary {
                    Some(s) => assert_text(s, &pis["previousSummary"], &at),
                    None => assert!(pis["previousSummary"].is_null(), "{at}"),
                }
                assert_eq!(
                    prep.messages_to_summarize.len() as u64,
                    pis["messagesToSummarize"],
                    "{at}"
                );
                assert_eq!(
                    prep.turn_prefix_messages.len() as u64,
                    pis["turnPrefixMessages"],
                    "{at}"
                );
                assert_text(
                    &serialized(&prep.messages_to_summarize),
                    &pis["summarizeText"],
                    &format!("{at}: summarized"),
                );
                assert_text(
                    &serialized(&prep.turn_prefix_messages),
                    &pis["turnPrefixText"],
                    &format!("{at}: turn prefix"),
                );
                let ops = json!({
                    "read": sorted(&prep.file_ops.read),
                    "written": sorted(&prep.file_ops.written),
                    "edited": sorted(&prep.file_ops.edited),
                });
                assert_eq!(ops, pis["fileOps"], "{at}: file operations");
                checked += 1;
            }
        }
    }
    assert!(checked > 150, "only {checked} preparations compared");
}

/// The default leaf of the 2.4 MB session, at pi's default settings: the cut point pi
/// chooses, spelled out.
#[test]
fn the_pi_authors_session_is_cut_where_pi_cuts_it() {
    let sm = open("before-compaction.migrated-v3-by-pi-0.73.1.jsonl");
    let path = sm.branch_path(None).unwrap();
    let prep = prepare_compaction(&path, &CompactionSettings::default()).unwrap();
    assert_eq!(prep.first_kept_entry_id, "030861ed");
    assert!(prep.is_split_turn);
    assert_eq!(prep.tokens_before, 180_820);
    assert_eq!(
        (
            prep.messages_to_summarize.len(),
            prep.turn_prefix_messages.len()
        ),
        (383, 7)
    );
    assert_eq!(
        prep.previous_summary
            .as_ref()
            .map(|s| s.encode_utf16().count()),
        Some(3649)
    );
}

fn faux_models() -> FauxProvider {
    let model = |id: &str, reasoning: bool, window: u64, max: u64| {
        Model::new(id, "faux", "faux", "http://localhost:0")
            .with_reasoning(reasoning)
            .with_cost(ModelCost::default())
            .with_context_window(window)
            .with_max_tokens(max)
    };
    let faux = FauxProvider::builder()
        .model(model("plain", false, 128_000, 16_384))
        .model(model("thinker", true, 200_000, 32_000))
        .model(model("small", false, 30_000, 4096))
        .build();
    // pi's generator answers the turn prefix request with "PREFIX SUMMARY", any other with
    // "SUMMARY <call number>".
    for _ in 0..2 {
        faux.push(FauxResponse::respond(|request| {
            let Some(Message::User(user)) = request.context.messages.first() else {
                return FauxResponse::error("no prompt");
            };
            if user.content.text().contains("This is the PREFIX of a turn") {
                FauxResponse::text("PREFIX SUMMARY")
            } else {
                FauxResponse::text(format!("SUMMARY {}", request.index + 1))
            }
        }));
    }
    faux
}

fn summarizer(faux: &FauxProvider, model: &str, level: ThinkingLevel) -> Summarizer {
    let f = faux.clone();
    Summarizer::new(faux.get_model(model).unwrap())
        .with_stream_fn(move |m, c, o| f.stream(m, c, o))
        .with_thinking_level(level)
}

/// The requests the faux provider received, sorted like the generator sorts them.
fn check_requests(faux: &FauxProvider, pis: &Value, what: &str) {
    let mut ours: Vec<_> = faux.requests();
    let prompt = |r: &pi_engine::providers::faux::FauxRequest| match &r.context.messages[0] {
        Message::User(u) => u.content.text(),
        _ => panic!("{what}: not a user prompt"),
    };
    ours.sort_by_key(|r| prompt(r).encode_utf16().take(120).collect::<Vec<_>>());
    let pis = pis.as_array().unwrap();
    assert_eq!(ours.len(), pis.len(), "{what}: requests");
    for (r, p) in ours.iter().zip(pis) {
        assert_eq!(
            r.context.system_prompt.as_deref(),
            Some(SUMMARIZATION_SYSTEM_PROMPT)
        );
        assert_eq!(p["systemPrompt"], SUMMARIZATION_SYSTEM_PROMPT, "{what}");
        assert_eq!(r.context.messages.len() as u64, p["messages"], "{what}");
        assert_text(&prompt(r), &p["prompt"], &format!("{what}: prompt"));
        assert_eq!(
            json!(r.options.max_tokens),
            p["maxTokens"],
            "{what}: maxTokens"
        );
        assert_eq!(
            json!(r.options.reasoning),
            p["reasoning"],
            "{what}: reasoning"
        );
    }
}

#[tokio::test]
async fn summaries_send_pis_requests_and_give_pis_results() {
    let golden = golden();
    let sm = open("before-compaction.migrated-v3-by-pi-0.73.1.jsonl");
    for case in golden["compactions"].as_array().unwrap() {
        let leaf = case["leaf"].as_str().unwrap();
        let keep = case["keepRecentTokens"].as_u64().unwrap();
        let what = format!("compaction at {leaf}, keep {keep}, {}", case["model"]);
        let mut settings = CompactionSettings::default();
        settings.keep_recent_tokens = keep;
        let prep = prepare_compaction(&sm.branch_path(Some(leaf)).unwrap(), &settings).unwrap();
        let faux = faux_models();
        let level: ThinkingLevel = case["thinkingLevel"].as_str().unwrap().parse().unwrap();
        let s = summarizer(&faux, case["model"].as_str().unwrap(), level);
        let result = compact(&prep, &s, case["customInstructions"].as_str())
            .await
            .unwrap();
        check_requests(&faux, &case["requests"], &what);
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            case["result"],
            "{what}: result"
        );
    }
}

#[tokio::test]
async fn branch_summaries_match_pi() {
    let golden = golden();
    for case in golden["branches"].as_array().unwrap() {
        let sm = open(case["file"].as_str().unwrap());
        let (from, to) = (case["from"].as_str().unwrap(), case["to"].as_str().unwrap());
        let what = format!("branch {from} -> {to}");
        let collected = collect_entries_for_branch_summary(&sm, Some(from), to).unwrap();
        assert_eq!(
            json!(collected.common_ancestor_id),
            case["commonAncestorId"],
            "{what}"
        );
        let ids: Vec<&str> = collected.entries.iter().map(SessionEntry::id).collect();
        assert_eq!(json!(ids), case["entries"], "{what}: entries");
        for p in case["prepared"].as_array().unwrap() {
            let budget = p["budget"].as_u64().unwrap();
            let prepared = prepare_branch_entries(&collected.entries, budget);
            let at = format!("{what}, budget {budget}");
            assert_eq!(prepared.messages.len() as u64, p["messages"], "{at}");
            assert_eq!(prepared.total_tokens, p["totalTokens"], "{at}");
            assert_text(&serialized(&prepared.messages), &p["text"], &at);
            let ops = json!({
                "read": sorted(&prepared.file_ops.read),
                "written": sorted(&prepared.file_ops.written),
                "edited": sorted(&prepared.file_ops.edited),
            });
            assert_eq!(ops, p["fileOps"], "{at}");
        }
        for s in case["summaries"].as_array().unwrap() {
            let faux = faux_models();
            let model = s["model"].as_str().unwrap();
            let mut options = BranchSummaryOptions::new();
            options.custom_instructions = s["customInstructions"].as_str().map(str::to_owned);
            options.replace_instructions = s["replaceInstructions"].as_bool().unwrap_or(false);
            let summary = generate_branch_summary(
                &collected.entries,
                &summarizer(&faux, model, ThinkingLevel::Off),
                &options,
            )
            .await
            .unwrap();
            let at = format!("{what}, {model}");
            check_requests(&faux, &s["requests"], &at);
            let result = &s["result"];
            assert_eq!(summary.summary, result["summary"], "{at}");
            if let Some(read) = result.get("readFiles") {
                assert_eq!(json!(summary.files.read_files), *read, "{at}");
                assert_eq!(
                    json!(summary.files.modified_files),
                    result["modifiedFiles"],
                    "{at}"
                );
            } else {
                assert!(
                    summary.files.read_files.is_empty() && summary.files.modified_files.is_empty()
                );
            }
        }
    }
}

#[test]
fn prompts_are_pis() {
    let golden = golden();
    use pi_engine::session::compaction::*;
    for (name, ours) in [
        ("summarization-system", SUMMARIZATION_SYSTEM_PROMPT),
        ("summarization", SUMMARIZATION_PROMPT),
        ("update-summarization", UPDATE_SUMMARIZATION_PROMPT),
        (
            "turn-prefix-summarization",
            TURN_PREFIX_SUMMARIZATION_PROMPT,
        ),
        ("branch-summary", BRANCH_SUMMARY_PROMPT),
        ("branch-summary-preamble", BRANCH_SUMMARY_PREAMBLE),
    ] {
        assert_eq!(ours, golden["prompts"][name], "{name}");
    }
    assert!(
        SUMMARIZATION_PROMPT.starts_with("The messages above are a conversation to summarize.")
    );
    assert!(UPDATE_SUMMARIZATION_PROMPT.contains("<previous-summary>"));
    assert!(BRANCH_SUMMARY_PREAMBLE.ends_with("exploration:\n\n"));
}

/// Runs pi's compaction code now and requires the golden to be what it answers.
#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn golden_is_what_pi_answers_now() {
    let modules = pi_npm::require("@mariozechner/pi-coding-agent");
    let npm = modules.parent().expect("node_modules has a parent");
    let out = Command::new("node")
        .arg(root().join("scripts/gen-compaction-golden.mjs"))
        .arg("--check")
        .env("PI_NPM", npm)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each deliberate difference of the compaction and agent-session code is listed in
/// `tests/conformance/deviations.json`, naming a test that exists.
#[test]
fn deviations_name_existing_tests() {
    let text = std::fs::read_to_string(root().join("tests/conformance/deviations.json")).unwrap();
    let deviations: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for (key, why) in &deviations {
        if !(key.starts_with("compaction/") || key.starts_with("agent-session/")) {
            continue;
        }
        let why = why.as_str().unwrap();
        let tests = why
            .split("Test: ")
            .nth(1)
            .or_else(|| why.split("Tests: ").nth(1));
        let tests = tests.unwrap_or_else(|| panic!("{key} names no test"));
        for name in tests
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| w.contains('_') && w.len() > 12)
            .filter(|w| !tests.contains(&format!("{w}.rs")) && !tests.contains(&format!("{w}::")))
        {
            let found = ["tests/agent_session.rs", "tests/compaction.rs"]
                .iter()
                .map(|f| root().join(f))
                .chain(walk(&root().join("src")))
                .any(|f| {
                    std::fs::read_to_string(&f).is_ok_and(|s| s.contains(&format!("fn {name}(")))
                });
            assert!(found, "{key}: no test named {name}");
            checked += 1;
        }
    }
    assert!(checked >= 9, "{checked}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}
