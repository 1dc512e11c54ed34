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
