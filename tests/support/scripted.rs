//! `mock_llm_server.py`'s scripted mode as [`Reply`]s: each reply thinks, says a line and
//! calls one tool, or (without a tool) gives the final answer.

use serde_json::{Value, json};

use super::{Reply, anthropic_sse};

pub const THINK: [&str; 2] = ["The user wants something. ", "I should call a tool first."];
pub const TEXT1: [&str; 2] = ["Let me check ", "that for you."];
pub const FINAL: [&str; 3] = [
    "Done. The tool ",
    "returned its output ",
    "and everything looks fine.",
];

/// One scripted Anthropic reply (`mock_llm_server.py`'s `anthropic_events`): thinking, text
/// and a tool call, or (without a tool) the final text. `n` numbers its ids.
pub fn anthropic_reply(n: usize, tool: Option<&(&str, Value)>) -> Reply {
    let mut events: Vec<Value> = vec![json!({"type": "message_start", "message": {
        "id": format!("msg_mock_{n}"), "type": "message", "role": "assistant",
        "model": "mock-claude", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 42, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 8, "output_tokens": 1}}})];
    let mut index = 0;
    let delta = |index: usize, delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
    if tool.is_some() {
        events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}));
        for t in THINK {
            events.push(delta(
                index,
                json!({"type": "thinking_delta", "thinking": t}),
            ));
        }
        events.push(delta(
            index,
            json!({"type": "signature_delta", "signature": "EqMockSignature=="}),
        ));
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    events.push(json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "text", "text": ""}}));
    events.push(json!({"type": "ping"}));
    let texts: &[&str] = if tool.is_some() { &TEXT1 } else { &FINAL };
    for t in texts {
        events.push(delta(index, json!({"type": "text_delta", "text": t})));
    }
    events.push(json!({"type": "content_block_stop", "index": index}));
    index += 1;
    let mut stop = "end_turn";
    if let Some((name, args)) = tool {
        let a = args.to_string();
        let half = a.len() / 2; // ASCII: a character boundary
        events.push(
            json!({"type": "content_block_start", "index": index, "content_block":
            {"type": "tool_use", "id": format!("toolu_mock_{n}"), "name": name, "input": {}}}),
        );
        for piece in ["", &a[..half], &a[half..]] {
            events.push(delta(
                index,
                json!({"type": "input_json_delta", "partial_json": piece}),
            ));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        stop = "tool_use";
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 17}}));
    events.push(json!({"type": "message_stop"}));
    let chunks: Vec<String> = events
        .iter()
        .map(|e| anthropic_sse(&[e.to_string().as_str()]))
        .collect();
    Reply::sse(&chunks)
}
