//! Amazon Bedrock's Converse stream (`bedrock-converse-stream`,
//! `POST {endpoint}/model/{modelId}/converse-stream`), as pi-ai 0.73.1 speaks it through the
//! AWS SDK: the same request body (key order included), the same events from the same
//! frames (cargo feature `bedrock`).
//!
//! **Where the request goes.** A model whose base URL is a standard runtime endpoint
//! (`https://bedrock-runtime.<region>.amazonaws.com`, the catalog's) is sent to the
//! configured region's endpoint when a region or a profile is configured, else to its own;
//! any other base URL (a VPC endpoint, a proxy, a local mock) is used as it is. The region
//! is the `region` option, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the profile's
//! `region`, else the endpoint's, else `us-east-1`.
//!
//! **Credentials**, first found wins:
//!
//! | source | how |
//! |---|---|
//! | the `bearerToken` option, `AWS_BEARER_TOKEN_BEDROCK`, or a call's API key | `Authorization: Bearer` (a Bedrock API key) |
//! | `AWS_BEDROCK_SKIP_AUTH=1` | signed with dummy keys, for proxies that do not check |
//! | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` (no profile named) | Signature V4 |
//! | the profile (`profile` option, `AWS_PROFILE`, else `default`) in `~/.aws/credentials` / `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`) with static keys | Signature V4 |
//!
//! Profiles using IAM Identity Center (SSO), `role_arn`, `credential_process` or web
//! identity, container credentials and instance metadata are an [`ErrorKind::Auth`] error
//! that says so (export keys first: `aws configure export-credentials --format env`).
//! Requests are signed by the AWS SDK's own signer (`aws-sigv4`), again for each retry.
//!
//! **Options**, from [`StreamOptions`] and, by pi's names, [`StreamOptions::extra`]:
//!
//! | option | effect |
//! |---|---|
//! | `max_tokens`, `temperature` | `inferenceConfig` |
//! | `reasoning`, `thinking_budgets` | Claude's thinking in `additionalModelRequestFields`: adaptive with an effort (Opus 4.6/4.7, Sonnet 4.6), else a token budget (with the `interleaved-thinking` beta unless `interleavedThinking: false`); other model families: nothing |
//! | `thinkingDisplay` | `summarized` (default) or `omitted`; never sent to GovCloud |
//! | `cache_retention` | cache points after the system prompt and the last user message (Claude 4.x, 3.7 Sonnet, 3.5 Haiku; `AWS_BEDROCK_FORCE_CACHE=1` for others); `long` adds `ttl: 1h` |
//! | `tool_choice` / `toolChoice` | `auto`, `any` (required), a named tool; `none` sends no tools |
//! | `requestMetadata` | `requestMetadata` |
//! | `region`, `profile`, `bearerToken` | as above |
//!
//! **The stream** is decoded frame by frame (CRC-checked, split anywhere; see
//! [`eventstream`]). Exceptions inside it are typed errors worded as pi words them
//! (`Throttling error: …` is [`RateLimited`](ErrorKind::RateLimited) and retried by the
//! agent; `Validation error: …` is not; an overflow message is
//! [`ContextOverflow`](ErrorKind::ContextOverflow)). Where ours differs from pi-ai: a
//! stream that ends before `messageStop` is an error (pi reports success), and a
//! `guardrail_intervened` or `content_filtered` stop is a
//! [`Refused`](ErrorKind::Refused) error that names it (pi: "An unknown error occurred").
//!
//! ```no_run
//! use pi_engine::{Context, StreamOptions, UserMessage, llm::get_model};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // Credentials from the environment or ~/.aws; AWS_REGION picks the endpoint.
//! let model = get_model("amazon-bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0").unwrap();
//! let context = Context::new().with_message(UserMessage::text("Why is the sky blue?"));
//! let reply = pi_engine::complete(&model, &context, &StreamOptions::new()).await;
//! println!("{}", reply.text());
//! # }
//! ```

mod auth;
mod decode;
pub mod eventstream;
mod request;

use std::sync::Arc;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::{Model, api};
use crate::llm::options::StreamOptions;
use crate::providers::ApiProvider;
use crate::providers::http::{HttpRequest, stream_http};

pub(crate) use decode::BedrockDecoder;

/// What `encodeURIComponent` leaves as it is: the model id in the path (`:` and `/` of an
/// ARN escaped).
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// The Bedrock Converse stream provider. Registered for `bedrock-converse-stream` when the
/// `bedrock` feature is on.
#[derive(Debug, Clone, Copy, Default)]
pub struct BedrockProvider;

impl BedrockProvider {
    /// The provider.
    pub fn new() -> Self {
        BedrockProvider
    }
}

fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<HttpRequest, Error> {
    let env = auth::process_env;
    let (credentials, profile_region) = auth::resolve(options, &env)?;
    let target = auth::target(model, options, &env, profile_region.as_deref());
    let region = auth::configured_region(options, &env);
    let body = request::build_body(model, context, options, region.as_deref())?;
    let url = format!(
        "{}/model/{}/converse-stream",
        target.endpoint,
        utf8_percent_encode(&model.id, PATH_SEGMENT)
    );
    if reqwest::Url::parse(&url).is_err() {
        return Err(Error::new(
            ErrorKind::Config,
            format!("Invalid Bedrock endpoint: {}", target.endpoint),
        ));
    }
    let request = HttpRequest::post_json(url, body);
    Ok(match credentials {
        auth::Auth::Bearer(token) => request.header("authorization", format!("Bearer {token}")),
        auth::Auth::Sign(keys) => {
            let mut request = request.secret(keys.secret_access_key.clone());
            if let Some(token) = &keys.session_token {
                request = request.secret(token.clone());
            }
            request.signed_by(Arc::new(auth::SigV4 {
                keys,
                region: target.region,
            }))
        }
    })
}

impl ApiProvider for BedrockProvider {
    fn api(&self) -> &str {
        api::BEDROCK_CONVERSE_STREAM
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let request = build_request(model, context, options);
        stream_http(model, options, request, BedrockDecoder::new(model))
    }
}
