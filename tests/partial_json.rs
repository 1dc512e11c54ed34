//! Streamed tool-call arguments: the incremental partial-JSON parser against pi.
//!
//! `tests/fixtures/pi/partial-json/golden.json` holds what pi-ai 0.73.1's `parseStreamingJson`
//! returned for every prefix of a set of tricky inputs (`gen.mjs` beside it regenerates it).
//! Our parser, fed the same text in fragments, must give the same object after each one; the
//! inputs where we differ on purpose are listed in `tests/conformance/deviations.json`, and
//! each has its own test below saying exactly how.

use pi_engine::json::{PartialJsonParser, parse_streaming_json};
use serde_json::{Map, Value};

#[derive(Debug)]
struct Case {
    name: String,
    input: String,
    deviation: Option<String>,
    /// (prefix length in characters, pi's result, flagged as holding a lone surrogate)
    steps: Vec<(usize, Value, bool)>,
}

impl Case {
    /// pi's result for the first `chars` characters.
    fn expected(&self, chars: usize) -> (&Value, bool) {
        let step = self
            .steps
            .iter()
            .rev()
            .find(|(n, _, _)| *n <= chars)
            .expect("golden starts at 0");
        (&step.1, step.2)
    }

    /// Byte offset of every character boundary (0 and the end included).
    fn boundaries(&self) -> Vec<usize> {
        let mut b: Vec<usize> = self.input.char_indices().map(|(i, _)| i).collect();
        b.push(self.input.len());
        b
    }

    /// Feeds the input cut at `cuts` (byte offsets at character boundaries, increasing,
    /// ending at the input length) and calls `check(chars so far, ours)` after each push.
    fn stream(&self, cuts: &[usize], mut check: impl FnMut(usize, &Value)) -> Value {
        let mut parser = PartialJsonParser::new();
        let mut target = Map::new();
        let mut from = 0;
        for &to in cuts {
            parser.push(&self.input[from..to], &mut target);
            from = to;
            let chars = self.input[..to].chars().count();
            let ours = Value::Object(target.clone());
            // The one-shot parse of the same prefix agrees with the incremental one.
            assert_eq!(
                ours,
                Value::Object(parse_streaming_json(&self.input[..to])),
                "{}: one-shot vs incremental after {:?}",
                self.name,
                &self.input[..to]
            );
            check(chars, &ours);
        }
        assert_eq!(parser.buffer(), self.input);
        Value::Object(target)
    }

    fn char_by_char(&self) -> Vec<usize> {
        self.boundaries()[1..].to_vec()
    }
}

fn golden() -> Vec<Case> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pi/partial-json/golden.json"
    ))
    .unwrap();
    let raw: Vec<Value> = serde_json::from_str(&text).unwrap();
    raw.into_iter()
        .map(|c| Case {
            name: c["name"].as_str().unwrap().to_owned(),
            input: c["input"].as_str().unwrap().to_owned(),
            deviation: c["deviation"].as_str().map(str::to_owned),
            steps: c["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    (
                        s[0].as_u64().unwrap() as usize,
                        s[1].clone(),
                        s.get(2).is_some(),
                    )
                })
                .collect(),
        })
        .collect()
}

fn case(name: &str) -> Case {
    golden().into_iter().find(|c| c.name == name).unwrap()
}

/// Equal as pi sees JSON: numbers by value (pi's are doubles), object keys in the same order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy))
        }
        _ => a == b,
    }
}

/// `ours` holds at least what `pi` shows: every member pi has, with a string of pi's a
/// prefix of ours.
fn covers(ours: &Value, pi: &Value) -> bool {
    covers_with(ours, pi, false)
}

/// As [`covers`]; with `any_number`, an unfinished number may show another value.
fn covers_with(ours: &Value, pi: &Value, any_number: bool) -> bool {
    match (ours, pi) {
        (Value::String(o), Value::String(p)) => o.starts_with(p.as_str()),
        (Value::Number(_), Value::Number(_)) if any_number => true,
        (Value::Array(o), Value::Array(p)) => {
            p.len() <= o.len() && o.iter().zip(p).all(|(o, p)| covers_with(o, p, any_number))
        }
        (Value::Object(o), Value::Object(p)) => p
            .iter()
            .all(|(k, pv)| o.get(k).is_some_and(|ov| covers_with(ov, pv, any_number))),
        _ => same(ours, pi),
    }
}

/// Pseudo-random numbers for fragment sizes and generated documents (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Random cuts at character boundaries of `text`, fragments of 1 to `max` bytes.
    fn cuts(&mut self, text: &str, max: usize) -> Vec<usize> {
        let mut cuts = Vec::new();
        let mut at = 0;
        while at < text.len() {
            at = (at + 1 + self.below(max)).min(text.len());
            while !text.is_char_boundary(at) {
                at += 1;
            }
            cuts.push(at);
        }
        cuts
    }
}

#[test]
fn every_prefix_matches_pi() {
    let cases: Vec<Case> = golden()
        .into_iter()
        .filter(|c| c.deviation.is_none())
        .collect();
    assert_eq!(cases.len(), 13);
    for case in &cases {
        let end = case.stream(&case.char_by_char(), |chars, ours| {
            let (pi, _) = case.expected(chars);
            assert!(
                same(ours, pi),
                "{}: after {:?}\n ours {ours}\n pi   {pi}",
                case.name,
                case.input.chars().take(chars).collect::<String>()
            );
        });
        let (last, _) = case.expected(usize::MAX);
        assert!(same(&end, last), "{}", case.name);
    }
}

#[test]
fn random_fragmentation_matches_pi_at_every_cut() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    for case in golden().iter().filter(|c| c.deviation.is_none()) {
        for max in [2, 3, 8, 17, 64] {
            let cuts = rng.cuts(&case.input, max);
            case.stream(&cuts, |chars, ours| {
                assert!(same(ours, case.expected(chars).0), "{}", case.name);
            });
        }
    }
}

#[test]
fn deviations_are_listed_with_a_reason() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/conformance/deviations.json"
    ))
    .unwrap();
    let listed: Map<String, Value> = serde_json::from_str(&text).unwrap();
    for case in golden() {
        if let Some(d) = case.deviation {
            assert!(
                listed
                    .get(&d)
                    .and_then(Value::as_str)
                    .is_some_and(|why| !why.is_empty()),
                "{d} is not in deviations.json"
            );
        }
    }
}

/// Checks a deviation case: ours equals pi except at some prefixes, where `differs` says how
/// ours and pi's results relate. Returns how many prefixes differed.
fn deviation(name: &str, mut differs: impl FnMut(usize, &Value, &Value, bool)) -> usize {
    let case = case(name);
    let mut count = 0;
    case.stream(&case.char_by_char(), |chars, ours| {
        let (pi, lone) = case.expected(chars);
        if !same(ours, pi) || lone {
            count += 1;
            differs(chars, ours, pi, lone);
        }
    });
    count
}

#[test]
fn deviation_lone_surrogate() {
    // pi shows a lone high surrogate while `\ud83d\ude00` is split; a Rust string cannot
    // hold one, so ours waits for the pair.
    let n = deviation("surrogate-pair", |_, ours, pi, lone| {
        assert!(lone);
        assert_eq!(ours["e"], "a");
        assert_eq!(pi["e"], "a\u{fffd}");
    });
    assert!(n > 0);
}

#[test]
fn deviation_raw_control_chars() {
    // While a string holding a raw newline streams, pi drops it; ours shows it as pi's
    // repair reads it once the text is complete.
    let n = deviation("raw-control-chars", |_, ours, pi, _| {
        assert!(covers(ours, pi), "ours {ours} pi {pi}");
        assert!(pi.get("content").is_none());
        let content = ours["content"].as_str().unwrap();
        assert!("line1\nline2\n\tindented".starts_with(content));
    });
    assert!(n > 0);
    let c = case("raw-control-chars");
    assert_eq!(
        Value::Object(parse_streaming_json(&c.input)),
        *c.expected(usize::MAX).0
    );
}

#[test]
fn deviation_invalid_escapes() {
    let n = deviation("invalid-escapes", |_, ours, pi, _| {
        assert!(covers(ours, pi), "ours {ours} pi {pi}");
        let path = ours["path"].as_str().unwrap();
        assert!("C:\\Users\\me\u{c}ile.txt".starts_with(path));
    });
    assert!(n > 0);
    let c = case("invalid-escapes");
    assert_eq!(
        Value::Object(parse_streaming_json(&c.input)),
        *c.expected(usize::MAX).0
    );
}

#[test]
fn deviation_bad_unicode_escape() {
    // `\u12G` is not an escape; pi drops the key even from the complete text, ours keeps
    // the characters.
    let n = deviation("bad-unicode-escape", |_, ours, pi, _| {
        assert!(covers(ours, pi), "ours {ours} pi {pi}");
    });
    assert!(n > 0);
    let c = case("bad-unicode-escape");
    assert_eq!(
        Value::Object(parse_streaming_json(&c.input)),
        serde_json::json!({"bad": "x\\u12G", "ok": 1})
    );
}

#[test]
fn deviation_empty_array_with_space() {
    // partial-json misreads `[ ]` and loses what follows until the text is complete.
    let n = deviation("empty-array-with-space", |_, ours, pi, _| {
        assert!(covers(ours, pi), "ours {ours} pi {pi}");
    });
    assert!(n > 0);
}

#[test]
fn deviation_top_level_not_object() {
    // pi keeps an array as the "arguments"; a ToolCall's arguments are an object.
    let n = deviation("top-level-array", |_, ours, pi, _| {
        assert_eq!(*ours, serde_json::json!({}));
        assert!(pi.is_array());
    });
    assert!(n > 0);
}

/// A random JSON document with the shapes tool arguments have.
fn random_value(rng: &mut Rng, depth: usize) -> Value {
    let kind = if depth == 0 {
        rng.below(4)
    } else {
        rng.below(7)
    };
    match kind {
        0 => {
            const PIECES: [&str; 12] = [
                "a", " ", "é", "中文", "😀", "\"", "\\", "\n", "\t", "\u{1}", "/", "\u{2028}",
            ];
            (0..rng.below(12))
                .map(|_| PIECES[rng.below(PIECES.len())])
                .collect::<String>()
                .into()
        }
        1 => match rng.below(4) {
            0 => Value::from(rng.next() as i64 >> rng.below(64)),
            1 => Value::from((rng.next() % 1_000_000) as f64 / 1000.0 - 500.0),
            2 => Value::from(rng.next() as f64 * 1e-300),
            _ => Value::from(rng.next()),
        },
        2 => Value::Bool(rng.below(2) == 0),
        3 => Value::Null,
        4 | 5 => {
            let mut m = Map::new();
            for _ in 0..rng.below(5) {
                let key = format!("k{}{}", rng.below(20), ["", "é", "\"", "\\n"][rng.below(4)]);
                m.insert(key, random_value(rng, depth - 1));
            }
            Value::Object(m)
        }
        _ => Value::Array(
            (0..rng.below(5))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
        ),
    }
}

#[test]
fn random_documents_in_random_fragments_end_equal_to_serde_json() {
    let mut rng = Rng(0x0dd_ba11_cafe_f00d);
    for round in 0..400 {
        let mut doc = Map::new();
        for i in 0..1 + rng.below(5) {
            doc.insert(format!("arg{i}"), random_value(&mut rng, 4));
        }
        let doc = Value::Object(doc);
        let text = if round % 2 == 0 {
            serde_json::to_string(&doc).unwrap()
        } else {
            serde_json::to_string_pretty(&doc).unwrap()
        };
        let mut parser = PartialJsonParser::new();
        let mut target = Map::new();
        let mut from = 0;
        let max = 1 + rng.below(24);
        for to in rng.cuts(&text, max) {
            parser.push(&text[from..to], &mut target);
            from = to;
            // What is shown is always a prefix of the final document.
            assert!(
                covers_with(&doc, &Value::Object(target.clone()), true),
                "{text}\nafter {:?}: {target:?}",
                &text[..to]
            );
        }
        assert_eq!(Value::Object(target.clone()), doc, "{text}");
        // Same key order as serde_json's.
        assert_eq!(
            serde_json::to_string(&target).unwrap(),
            serde_json::to_string(&doc).unwrap()
        );
    }
}
