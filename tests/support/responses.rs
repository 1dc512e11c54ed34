//! OpenAI Responses streams for the local servers.

/// Frames Responses events as SSE text, each under its own `type` as the event name, as
/// OpenAI sends them.
pub fn responses_sse(events: &[&str]) -> String {
    events
        .iter()
        .map(|data| {
            let kind = serde_json::from_str::<serde_json::Value>(data)
                .ok()
                .and_then(|v| v["type"].as_str().map(str::to_owned));
            match kind {
                Some(kind) => format!("event: {kind}\ndata: {data}\n\n"),
                None => format!("data: {data}\n\n"),
            }
        })
        .collect()
}

/// A complete text reply: one message item streaming `deltas`, then `response.completed`
/// with the given usage.
pub fn responses_text_reply(deltas: &[&str], input: u64, cached: u64, output: u64) -> String {
    let text: String = deltas.concat();
    let text = serde_json::to_string(&text).unwrap();
    let mut events = vec![
        r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}"#.to_owned(),
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}"#.to_owned(),
        r#"{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}"#.to_owned(),
    ];
    for d in deltas {
        events.push(format!(
            r#"{{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":{}}}"#,
            serde_json::to_string(d).unwrap()
        ));
    }
    events.push(format!(
        r#"{{"type":"response.output_item.done","output_index":0,"item":{{"id":"msg_1","type":"message","role":"assistant","content":[{{"type":"output_text","text":{text}}}]}}}}"#
    ));
    events.push(format!(
        r#"{{"type":"response.completed","response":{{"id":"resp_1","status":"completed","usage":{{"input_tokens":{},"input_tokens_details":{{"cached_tokens":{cached}}},"output_tokens":{output},"total_tokens":{}}}}}}}"#,
        input + cached,
        input + cached + output
    ));
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    responses_sse(&refs)
}

/// An event or final message (as JSON) the way the conformance runner compares it: no
/// timestamp, only whether there is an error message (each SDK words it its own way), and
/// without the `id` and `toolName` that our `toolcall_start` carries beyond pi's.
pub fn comparable(mut value: serde_json::Value) -> serde_json::Value {
    for key in ["message", "error"] {
        if let Some(message) = value
            .get_mut(key)
            .and_then(serde_json::Value::as_object_mut)
        {
            message.remove("timestamp");
            if let Some(text) = message.get_mut("errorMessage") {
                *text = serde_json::Value::Bool(true);
            }
        }
    }
    if value["type"] == "toolcall_start"
        && let Some(event) = value.as_object_mut()
    {
        event.remove("id");
        event.remove("toolName");
    }
    value
}

/// A `*.pi-ai-events.jsonl` file, each line through [`comparable`].
pub fn comparable_lines(path: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| comparable(serde_json::from_str(l).unwrap()))
        .collect()
}

/// Our events and final message, each through [`comparable`].
pub fn comparable_run(
    events: &[pi_engine::AssistantMessageEvent],
    message: pi_engine::AssistantMessage,
) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = events
        .iter()
        .map(|e| comparable(serde_json::to_value(e).unwrap()))
        .collect();
    out.push(comparable(serde_json::json!({
        "type": "__final_message__",
        "message": pi_engine::Message::from(message),
    })));
    out
}
