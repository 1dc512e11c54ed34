//! Cloudflare's two providers (Workers AI and AI Gateway): base URLs with `{VAR}`
//! placeholders filled from the environment, as pi's `resolveCloudflareBaseUrl` does.

use crate::llm::error::{Error, ErrorKind};
use crate::llm::model::Model;

/// True for `cloudflare-workers-ai` and `cloudflare-ai-gateway`.
pub(crate) fn is_cloudflare_provider(provider: &str) -> bool {
    provider == "cloudflare-workers-ai" || provider == "cloudflare-ai-gateway"
}

/// The model's base URL with each `{NAME}` (`[A-Z_][A-Z0-9_]*`) replaced by that
/// environment variable; an unset or empty one is a [`ErrorKind::Config`] error worded as
/// pi's: `CLOUDFLARE_ACCOUNT_ID is required for provider cloudflare-ai-gateway but is not set.`
pub(crate) fn resolve_base_url(model: &Model) -> Result<String, Error> {
    resolve_with(model, |name| std::env::var(name).ok())
}

fn resolve_with(model: &Model, env: impl Fn(&str) -> Option<String>) -> Result<String, Error> {
    let mut out = String::with_capacity(model.base_url.len());
    let mut rest = model.base_url.as_str();
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + len];
        let valid = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        out.push_str(&rest[..open]);
        if valid {
            let value = env(name).filter(|v| !v.is_empty()).ok_or_else(|| {
                Error::new(
                    ErrorKind::Config,
                    format!(
                        "{name} is required for provider {} but is not set.",
                        model.provider
                    ),
                )
            })?;
            out.push_str(&value);
            rest = &rest[open + len + 1..];
        } else {
            // Not a placeholder: keep the brace and look for the next one after it.
            out.push('{');
            rest = &rest[open + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_from_the_environment() {
        let model = Model::new(
            "m",
            "openai-completions",
            "cloudflare-ai-gateway",
            "https://gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/{GATEWAY_1}/compat/{lower}/{9X}",
        );
        let env = |name: &str| match name {
            "CLOUDFLARE_ACCOUNT_ID" => Some("acct".to_owned()),
            "GATEWAY_1" => Some("gw".to_owned()),
            _ => None,
        };
        assert_eq!(
            resolve_with(&model, env).unwrap(),
            "https://gateway.ai.cloudflare.com/v1/acct/gw/compat/{lower}/{9X}"
        );
        let err = resolve_with(&model, |_| Some(String::new())).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert_eq!(
            err.message(),
            "CLOUDFLARE_ACCOUNT_ID is required for provider cloudflare-ai-gateway but is not set."
        );
        let plain = Model::new("m", "x", "cloudflare-workers-ai", "https://x.test/{");
        assert_eq!(resolve_with(&plain, |_| None).unwrap(), "https://x.test/{");
        assert!(is_cloudflare_provider("cloudflare-workers-ai"));
        assert!(!is_cloudflare_provider("cloudflare"));
    }
}
