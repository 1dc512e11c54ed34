//! Provider quirks that several wire apis share: GitHub Copilot's routing headers and the
//! `{VAR}` placeholders of Cloudflare base URLs.

use crate::error::{Error, ErrorKind};
use crate::message::{Content, Message, UserContent};
use crate::model::Model;

/// GitHub Copilot's routing headers (pi's `buildCopilotDynamicHeaders`): `X-Initiator` is
/// `agent` when the last message is not the user's, `Openai-Intent` is fixed, and
/// `Copilot-Vision-Request` is set when a user message or tool result holds an image.
pub(crate) fn copilot_headers(messages: &[Message]) -> Vec<(&'static str, &'static str)> {
    let initiator = match messages.last() {
        Some(m) if m.role() != "user" => "agent",
        _ => "user",
    };
    let mut headers = vec![
        ("X-Initiator", initiator),
        ("Openai-Intent", "conversation-edits"),
    ];
    if has_vision_input(messages) {
        headers.push(("Copilot-Vision-Request", "true"));
    }
    headers
}

fn has_vision_input(messages: &[Message]) -> bool {
    messages.iter().any(|m| match m {
        Message::User(u) => {
            matches!(&u.content, UserContent::Blocks(b) if b.iter().any(|c| matches!(c, Content::Image(_))))
        }
        Message::ToolResult(r) => r.content.iter().any(|c| matches!(c, Content::Image(_))),
        Message::Assistant(_) => false,
    })
}

/// True for the providers whose base URL may hold `{VAR}` placeholders.
pub(crate) fn is_cloudflare(provider: &str) -> bool {
    provider == "cloudflare-workers-ai" || provider == "cloudflare-ai-gateway"
}

/// The model's base URL with `{VAR}` placeholders (upper case, digits, `_`) replaced from the
/// environment (pi's `resolveCloudflareBaseUrl`); an unset variable is a
/// [`ErrorKind::Config`] error naming it.
pub(crate) fn resolve_env_placeholders(model: &Model) -> Result<String, Error> {
    resolve_placeholders_with(model, &|name| std::env::var(name).ok())
}

fn resolve_placeholders_with(
    model: &Model,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<String, Error> {
    let mut out = String::new();
    let mut rest = model.base_url.as_str();
    // pi's `/\{([A-Z_][A-Z0-9_]*)\}/g`.
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let len = after
            .bytes()
            .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
            .count();
        let valid = len > 0
            && !after.as_bytes()[0].is_ascii_digit()
            && after.as_bytes().get(len) == Some(&b'}');
        if !valid {
            out.push('{');
            rest = after;
            continue;
        }
        let name = &after[..len];
        let value = var(name).filter(|v| !v.is_empty()).ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "{name} is required for provider {} but is not set.",
                    model.provider
                ),
            )
        })?;
        out.push_str(&value);
        rest = &after[len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, ToolResultMessage, UserMessage};

    #[test]
    fn copilot_initiator_and_vision() {
        let user: Message = UserMessage::text("hi").into();
        assert_eq!(
            copilot_headers(std::slice::from_ref(&user)),
            vec![
                ("X-Initiator", "user"),
                ("Openai-Intent", "conversation-edits")
            ]
        );
        let result: Message = ToolResultMessage::new(
            "t",
            "read",
            vec![Content::image("AAAA", "image/png")],
            false,
        )
        .into();
        let assistant: Message = AssistantMessage::new("a", "p", "m").into();
        let headers = copilot_headers(&[user, assistant, result]);
        assert_eq!(headers[0], ("X-Initiator", "agent"));
        assert_eq!(headers[2], ("Copilot-Vision-Request", "true"));
    }

    #[test]
    fn placeholders_from_the_environment() {
        let model = Model::new(
            "m",
            "openai-responses",
            "cloudflare-ai-gateway",
            "https://gw.example/v1/{ACCOUNT_1}/{GATEWAY}/openai/{lower}/{9X}/{a{GATEWAY}",
        );
        let env = |name: &str| match name {
            "ACCOUNT_1" => Some("acc".to_owned()),
            "GATEWAY" => Some("gw".to_owned()),
            _ => None,
        };
        assert_eq!(
            resolve_placeholders_with(&model, &env).unwrap(),
            "https://gw.example/v1/acc/gw/openai/{lower}/{9X}/{agw"
        );
        let err = resolve_placeholders_with(&model, &|_| None).unwrap_err();
        assert_eq!(
            err.message(),
            "ACCOUNT_1 is required for provider cloudflare-ai-gateway but is not set."
        );
    }
}
