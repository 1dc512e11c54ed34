//! Tool calls the shared conformance suite does not cover (`tests/tools/extra-cases.json`: zero
//! offsets and limits, BOM and CRLF files, invalid UTF-8, a GIF, a directory read, `edits` as
//! a JSON string, ls's sort order with mixed case, bash's tail notice, …), each run through pi's
//! own tool on node and through ours in an `Agent`, on identical trees: the content, `isError`,
//! `details` and the files left behind must be equal.
#![cfg(feature = "tools")]

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use pi_engine::agent::Agent;
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::tools::BuiltinTools;
use serde_json::{Value, json};

fn lay_out(root: &Path, case: &Value) {
    for d in case["dirs"].as_array().into_iter().flatten() {
        std::fs::create_dir_all(root.join(d.as_str().unwrap())).unwrap();
    }
    for (rel, spec) in case["files"].as_object().into_iter().flatten() {
        let bytes = match spec {
            Value::String(s) => s.clone().into_bytes(),
            spec if spec.get("b64").is_some() => base64::engine::general_purpose::STANDARD
                .decode(spec["b64"].as_str().unwrap())
                .unwrap(),
            spec if spec["gen"] == "lines" => {
                let prefix = spec["prefix"].as_str().unwrap_or("line ");
                (1..=spec["n"].as_u64().unwrap())
                    .map(|i| format!("{prefix}{i}\n"))
                    .collect::<String>()
                    .into_bytes()
            }
            spec if spec["gen"] == "repeat" => spec["text"]
                .as_str()
                .unwrap()
                .repeat(spec["n"].as_u64().unwrap() as usize)
                .into_bytes(),
            other => panic!("bad file spec {other}"),
        };
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// Every file of the tree, path -> contents (lossy UTF-8).
fn snapshot(root: &Path) -> Value {
    fn walk(dir: &Path, root: &Path, out: &mut serde_json::Map<String, Value>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(
                    rel,
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into(),
                );
            }
        }
    }
    let mut out = serde_json::Map::new();
    walk(root, root, &mut out);
    Value::Object(out)
}

/// The tree's path as `$CWD`, a bash log's path as `$LOG`, image data as its presence.
fn normalize(value: Value, root: &Path) -> Value {
    let real = std::fs::canonicalize(root).unwrap();
    let log = regex::Regex::new(r"/[^\s\]]*pi-bash-[^\s\]]*\.log").unwrap();
    match value {
        Value::String(s) => {
            let s = s.replace(&*real.to_string_lossy(), "$CWD");
            let s = s.replace(&*root.to_string_lossy(), "$CWD");
            Value::String(log.replace_all(&s, "$$LOG").into_owned())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(|v| normalize(v, root)).collect()),
        Value::Object(mut m) => {
            if m.get("type") == Some(&json!("image")) {
                let has = m
                    .get("data")
                    .and_then(Value::as_str)
                    .is_some_and(|d| !d.is_empty());
                m.insert("data".into(), json!(has));
            }
            Value::Object(
                m.into_iter()
                    .map(|(k, v)| (k, normalize(v, root)))
                    .collect(),
            )
        }
        other => other,
    }
}

fn pi_call(case: &Value, root: &Path) -> Value {
    let req = root.with_extension("request.json");
    let body = json!({"tool": case["tool"], "cwd": root, "args": case["args"]});
    std::fs::write(&req, body.to_string()).unwrap();
    let out = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pi-tool.mjs"))
        .arg(&req)
        .current_dir(root)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "pi's tool: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

async fn our_call(case: &Value, root: &Path) -> Value {
    let name = case["tool"].as_str().unwrap();
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "call_1",
        name,
        case["args"].clone(),
    ));
    faux.push(FauxResponse::text("done"));
    let tool = BuiltinTools::new(root).by_name(name).unwrap();
    let agent = Agent::builder(faux.model())
        .tools(vec![tool])
        .provider(faux)
        .build();
    let _ = agent.prompt("go").await.unwrap();
    let r = agent
        .messages()
        .iter()
        .find_map(|m| m.as_tool_result().cloned())
        .unwrap();
    // pi's agent loop gives a failed call `details: {}`; a tool that throws has none.
    let details = match r.details {
        Some(Value::Object(m)) if m.is_empty() && r.is_error => Value::Null,
        other => other.unwrap_or(Value::Null),
    };
    json!({"content": r.content, "details": details, "isError": r.is_error})
}

#[tokio::test]
#[ignore = "needs node and pi's npm packages (bash scripts/install-pi-npm.sh)"]
async fn extra_cases_match_pis_own_tools() {
    let cases: Vec<Value> = serde_json::from_str(include_str!("tools/extra-cases.json")).unwrap();
    let mut failed = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let base = tempfile::tempdir().unwrap();
        let (pi_root, our_root) = (base.path().join("pi"), base.path().join("ours"));
        for root in [&pi_root, &our_root] {
            std::fs::create_dir(root).unwrap();
            lay_out(root, case);
        }
        let mut want = normalize(pi_call(case, &pi_root), &pi_root);
        let mut got = normalize(our_call(case, &our_root).await, &our_root);
        want["files"] = snapshot(&pi_root);
        got["files"] = snapshot(&our_root);
        if want != got {
            failed.push(format!("{name}:\n  pi:   {want}\n  ours: {got}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} differ:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}
