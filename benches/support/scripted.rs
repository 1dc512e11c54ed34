//! The scripted model of the loop benchmarks: reply number `n` is text and one call of a
//! no-op tool, until the last, which is text only. No HTTP, no parsing: what is measured is
//! the loop around it.

use pi_engine::llm::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, Model,
    PartialMessage, StopReason, ToolCall, Usage,
};
use serde_json::json;

/// Reply number `n`: text and a `noop` call, or (after `turns` calls) a final text.
pub(crate) fn reply(model: &Model, n: usize, turns: usize) -> AssistantMessageEventStream {
    use AssistantMessageEvent as E;
    let base = AssistantMessage::new(&model.api, &model.provider, &model.id);
    let mut message = base.clone();
    message.usage = Usage::new(100, 20, 0, 0);
    let deltas: &[&str] = if n <= turns {
        &["Calling", " the", " tool."]
    } else {
        &["All", " done."]
    };
    let text = deltas.concat();
    let mut events = vec![E::Start, E::TextStart { content_index: 0 }];
    events.extend(deltas.iter().map(|d| E::TextDelta {
        content_index: 0,
        delta: (*d).to_owned(),
    }));
    events.push(E::TextEnd {
        content_index: 0,
        content: text.clone(),
    });
    message.content.push(AssistantContent::text(text));
    if n <= turns {
        let call = ToolCall::new(format!("call_{n}"), "noop", json!({ "i": n }));
        events.push(E::ToolcallStart {
            content_index: 1,
            id: call.id.clone(),
            tool_name: call.name.clone(),
        });
        events.push(E::ToolcallDelta {
            content_index: 1,
            delta: format!(r#"{{"i":{n}}}"#),
        });
        events.push(E::ToolcallEnd {
            content_index: 1,
            tool_call: call.clone(),
        });
        message.content.push(AssistantContent::ToolCall(call));
        message.stop_reason = StopReason::ToolUse;
    }
    events.push(E::Done {
        reason: message.stop_reason.clone(),
        message: Box::new(message),
    });
    AssistantMessageEventStream::from_stream(
        PartialMessage::new(base),
        futures::stream::iter(events),
    )
}
