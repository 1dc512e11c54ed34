//! The built-in coding tools, in-process (feature `tools`).
//!
//! * `edit`: one line changed in the middle of a 1 MB and a 10 MB file, through
//!   [`EditTool`] (read, match, the uniqueness check in the fuzzy-normalized text, pi's
//!   line-numbered diff, write), ASCII only and with a non-ASCII character on every line
//!   (which the fuzzy normalization takes its slower path for). Editing is linear when the
//!   time per byte (criterion's throughput) stays flat: 10x the file, about 10x the time.
//! * `grep` / `find`: a generated tree of 2,000 small source-like files (a `.gitignore`d
//!   folder and hidden files included): a rare word, a common word with `limit: 100`, and
//!   `*.toml`. The whole-process comparison with pi's tools, `rg` and `fd` on 50,000 files is
//!   the perf harness's (`tool-grep`, `tool-grep-common`, `tool-find`; README, Performance).
//!
//! `cargo bench --bench tools` (a few seconds a benchmark; `-- --quick` is quicker still)

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_engine::CancellationToken;
use pi_engine::agent::{AgentTool, ToolUpdates};
use pi_engine::tools::{EditTool, FindTool, GrepTool};
use serde_json::{Map, Value, json};

const SIZES: [(usize, &str); 2] = [(1 << 20, "1MB"), (10 << 20, "10MB")];

/// A source-like file of about `size` bytes of `line`s, whose middle line is `marker`.
fn source_file(size: usize, line: &str, marker: &str) -> String {
    let lines = size / line.len();
    let mut text = String::with_capacity(size + 64);
    for i in 0..lines {
        if i == lines / 2 {
            text.push_str(marker);
            text.push('\n');
        } else {
            text.push_str(line);
        }
    }
    text
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

/// Runs one tool call to success; returns the length of its text.
fn run(rt: &tokio::runtime::Runtime, tool: &dyn AgentTool, call: &Map<String, Value>) -> usize {
    let result = rt
        .block_on(tool.execute(
            "call_1",
            call.clone(),
            CancellationToken::new(),
            ToolUpdates::disconnected(),
        ))
        .expect("the tool call succeeds");
    result.text_content().len()
}

fn edit(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tool = EditTool::new(dir.path());
    let mut group = c.benchmark_group("edit");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let kinds = [
        (
            "one-line",
            "    let value = parser.next_token(&mut buffer)?; // state: ok\n",
        ),
        (
            "one-line-non-ascii",
            "    let value = parser.next_token(&mut buffer)?; // état: ok\n",
        ),
    ];
    for (kind, line) in kinds {
        for (size, name) in SIZES {
            let file = format!("{kind}-{name}.rs");
            let text = source_file(size, line, "// marker 0");
            std::fs::write(dir.path().join(&file), text).expect("write");
            // The calls flip the marker line back and forth: each finds its `oldText` once.
            let flips = [
                args(
                    json!({"path": file, "edits": [{"oldText": "// marker 0", "newText": "// marker 1"}]}),
                ),
                args(
                    json!({"path": file, "edits": [{"oldText": "// marker 1", "newText": "// marker 0"}]}),
                ),
            ];
            let mut turn = 0;
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_function(format!("{kind}/{name}"), |b| {
                b.iter(|| {
                    let call = &flips[turn];
                    turn ^= 1;
                    black_box(run(rt, &tool, call))
                })
            });
        }
    }
    group.finish();
}

/// 2,000 files of about 2 KB in nested folders, as the perf harness's `gen_tree.py` makes
/// them: a `.gitignore` hiding `target/`, hidden files, a rare word in 1 file of 1,000.
fn tree(root: &Path, files: usize) {
    const WORDS: [&str; 20] = [
        "let", "fn", "return", "match", "impl", "struct", "value", "self", "async", "await",
        "result", "error", "config", "buffer", "stream", "index", "parser", "token", "handle",
        "state",
    ];
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").expect("write");
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as usize
    };
    for i in 0..files {
        let dir = if i % 997 == 0 {
            root.join(format!("target/build{}", i % 7))
        } else {
            root.join(format!("crate{:02}/mod{:02}", i % 20, (i / 20) % 10))
        };
        std::fs::create_dir_all(&dir).expect("mkdir");
        let ext = [".rs", ".rs", ".rs", ".md", ".toml", ".py"][i % 6];
        let name = format!("{}{i}{ext}", if i % 500 == 0 { ".hidden_" } else { "file" });
        let mut text = String::with_capacity(2200);
        for j in 0..40 {
            text.push_str("   ");
            for _ in 0..4 + next() % 7 {
                text.push(' ');
                text.push_str(WORDS[next() % WORDS.len()]);
            }
            if i % 1000 == 7 && j == 20 {
                text.push_str(" zebra_marker_9f");
            }
            text.push_str(";\n");
        }
        std::fs::write(dir.join(name), text).expect("write");
    }
}

fn search(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    const FILES: usize = 2000;
    let dir = tempfile::tempdir().expect("a temp dir");
    tree(dir.path(), FILES);
    let grep = GrepTool::new(dir.path());
    let find = FindTool::new(dir.path());
    let mut group = c.benchmark_group("search-2k-files");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(FILES as u64));
    let rare = args(json!({"pattern": "zebra_marker_9f"}));
    group.bench_function("grep/rare-word", |b| {
        b.iter(|| black_box(run(rt, &grep, &rare)))
    });
    let common = args(json!({"pattern": "parser", "limit": 100}));
    group.bench_function("grep/common-word-limit-100", |b| {
        b.iter(|| black_box(run(rt, &grep, &common)))
    });
    let toml = args(json!({"pattern": "*.toml"}));
    group.bench_function("find/toml", |b| b.iter(|| black_box(run(rt, &find, &toml))));
    group.finish();
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    edit(c, &rt);
    search(c, &rt);
}

criterion_group!(benches, bench);
criterion_main!(benches);
