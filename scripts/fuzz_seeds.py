#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets (fuzz/corpus/<target>/) from recorded streams.

Run once from the repository root when the fixtures change:
    python3 scripts/fuzz_seeds.py [path/to/shared/conformance/fixtures]
Sources and licences: fuzz/corpus/SOURCES.md. Seeds that choose a chunking start with two
bytes (see `Chunking` in src/fuzz_targets.rs): 0x03 (chunks of 1-8 bytes) and a seed byte,
whose low bit picks Codex's reading for the Responses target.
"""
import hashlib, json, os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "conformance", "fixtures")
LOCAL = os.path.join(ROOT, "tests", "fixtures")
OUT = os.path.join(ROOT, "fuzz", "corpus")
MAX = 12 * 1024  # larger recordings slow every execution down; they add little coverage


def put(target, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def frame(path, api):
    raw = open(path, "rb").read()
    if raw.lstrip().startswith((b"event:", b"data:")):
        return raw
    out = []
    for line in raw.decode().splitlines():
        line = line.strip()
        if not line:
            continue
        typ = ""
        if api in ("anthropic", "responses"):
            try:
                typ = json.loads(line).get("type", "")
            except Exception:
                pass
        sep = "\r\n\r\n" if api == "gemini" else "\n\n"
        out.append(("event: %s\n" % typ if typ else "") + "data: " + line + sep)
    if api == "chat":
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def streams(dirs, api):
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith((".chunks.txt", ".sse")) or (api == "anthropic" and f.endswith("_response.txt")):
                body = frame(os.path.join(d, f), api)
                if len(body) <= MAX:
                    yield f, body


TARGETS = {
    "decoder_anthropic": ("anthropic", [f"{SHARED}/anthropic/vercel-ai", f"{SHARED}/anthropic/anthropic-sdk-python", f"{LOCAL}/anthropic"]),
    "decoder_openai_completions": ("chat", [f"{SHARED}/openai-chat/vercel-ai", f"{SHARED}/openai-chat/openai-python", f"{SHARED}/openai-compatible/vercel-ai", f"{LOCAL}/openai"]),
    "decoder_openai_responses": ("responses", [f"{SHARED}/openai-responses/vercel-ai", f"{LOCAL}/openai-responses/pi-extra"]),
    "decoder_google": ("gemini", [f"{SHARED}/gemini/vercel-ai", f"{LOCAL}/gemini"]),
}

for target, (api, dirs) in TARGETS.items():
    for i, (name, body) in enumerate(streams(dirs, api)):
        seed = (i * 2) & 0xFE  # even: the SDK's reading
        put(target, bytes([3, seed]) + body)
        if target == "decoder_anthropic" or target == "decoder_google":
            put("sse", bytes([5, seed]) + body)
    if target == "decoder_openai_responses":
        for i, (name, body) in enumerate(streams([f"{LOCAL}/openai-codex-responses"], api)):
            put(target, bytes([3, (i * 2) | 1]) + body)  # odd: Codex's reading
            put("sse", bytes([0, i]) + body)

# SSE framing edge cases.
for body in [b"data: a\r\ndata: b\r\rdata:c\n\n", b"event: x\n\n:ping\n\nid: 1\nretry: 5\ndata\n\n", b"data: unterminated", b"\r\n\r\n\r", b"event:\ndata:  two spaces\r\n"]:
    put("sse", bytes([0, 0]) + body)

# Partial JSON: the argument texts of pi's golden, and the validation golden's arguments.
for case in json.load(open(f"{LOCAL}/pi/partial-json/golden.json")):
    put("partial_json", bytes([2, 7]) + case["input"].encode())
validation = json.load(open(f"{LOCAL}/pi/validation/golden.json"))
for case in validation:
    put("partial_json", bytes([4, 1]) + json.dumps(case.get("arguments", {})).encode())
    put("tool_args", (json.dumps(case.get("schema", case.get("tools", {}))) + "\n" + json.dumps(case.get("arguments", {}))).encode())

# Sessions: pi's files (v3), a v2 file, the start of a v1 file, cut at a line.
sessions = [f"{LOCAL}/pi/pi-session-anthropic-messages.jsonl", f"{LOCAL}/pi/pi-session-openai-responses.jsonl",
            f"{LOCAL}/pi/pi-session-REAL-smollm2-135m-llama-cpp-python.jsonl", f"{LOCAL}/pi/session-golden/synthetic-tree.jsonl",
            f"{LOCAL}/pi/session-golden/synthetic-v2-hookmessage.jsonl"]
for s in sessions:
    put("session_file", open(s, "rb").read()[:MAX])
for s in [f"{LOCAL}/pi/large-session.jsonl", f"{LOCAL}/pi/before-compaction.jsonl"]:
    raw = open(s, "rb").read()
    cut = raw.rfind(b"\n", 0, 6000)
    put("session_file", raw[: cut + 1])
    put("session_file", raw[: cut - 40])  # a torn last line
for s in sessions[:2]:
    for line in open(s, "rb").read().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "message" and entry["message"].get("role") == "user":
            content = entry["message"]["content"]
            put("session_roundtrip", (content if isinstance(content, str) else content[0].get("text", "x")).encode())
            break
put("session_roundtrip", b'{"path": "a.txt", "n": [1, 2.5, -0.0, 1e300, {"deep": [[[]]]}], "s": "\\u0000\\ud83d\\ude00"}')
put("session_roundtrip", "caf\u00e9 \u2028 \r\n line".encode())
