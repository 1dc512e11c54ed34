//! Google Vertex AI (`google-vertex`): the Gemini request and stream of
//! [`google`](super::google), on Vertex's endpoints and credentials, as pi-ai 0.73.1 uses
//! them through `@google/genai`.
//!
//! # Credentials
//!
//! * **API key** (Vertex "express mode"): `options.api_key`, else `GOOGLE_CLOUD_API_KEY`,
//!   sent as `x-goog-api-key` to
//!   `https://aiplatform.googleapis.com/v1/publishers/google/models/{model}:streamGenerateContent?alt=sse`.
//!   The markers `gcp-vertex-credentials` and `<…>` (such as
//!   [`AMBIENT_CREDENTIALS`](crate::llm::AMBIENT_CREDENTIALS), which
//!   [`env_api_key`](crate::llm::env_api_key) returns when Application Default Credentials are
//!   configured) are not keys: they select the project mode below, as in pi.
//! * **Project mode** (what pi does with Application Default Credentials):
//!   `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent?alt=sse`
//!   (`aiplatform.googleapis.com` for `global`, `aiplatform.{us,eu}.rep.googleapis.com` for
//!   the multi-regions), with the project from the `project` option or
//!   `GOOGLE_CLOUD_PROJECT` / `GCLOUD_PROJECT`, and the location from the `location` option
//!   or `GOOGLE_CLOUD_LOCATION`. This crate does not mint OAuth tokens from ADC files (that
//!   needs Google's auth library); the caller supplies the bearer token:
//!   - the `accessToken` option (e.g. the output of `gcloud auth print-access-token`), or
//!   - the API key itself when it is an OAuth access token (`ya29.…`) or reads
//!     `Bearer <token>`: the form to use with an agent's key callback, since these tokens
//!     expire after an hour, or
//!   - an `authorization` header in the model's or the options' headers.
//!
//!   Without one, the call ends with an [`ErrorKind::Auth`] error saying so.
//!
//! A model `baseUrl` without a `{location}` placeholder replaces the endpoint (with `/v1`
//! added unless the URL has a version segment), as in pi.
//!
//! Options, in [`StreamOptions::extra`]: `toolChoice` and `thinking` as for
//! [`google`](super::google), `project`, `location` and `accessToken`. Unlike pi,
//! [`stream_simple`](crate::stream_simple) keeps the last three.
//!
//! ```no_run
//! use pi_engine::{Context, StreamOptions, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = pi_engine::get_model("google-vertex", "gemini-2.5-flash").unwrap();
//! let context = Context::new().with_message(UserMessage::text("Hello"));
//! let token = std::env::var("VERTEX_TOKEN").unwrap_or_default(); // gcloud auth print-access-token
//! let options = StreamOptions::new()
//!     .with_extra("project", "my-project".into())
//!     .with_extra("location", "us-central1".into())
//!     .with_extra("accessToken", token.into());
//! let reply = pi_engine::complete(&model, &context, &options).await;
//! println!("{}", reply.text());
//! # }
//! ```

use super::google::request::{Flavour, build_body_with};
use super::google::stream::GoogleDecoder;
use crate::llm::error::{Error, ErrorKind};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::{Model, api};
use crate::llm::options::{GoogleVertexOptions, StreamOptions};
use crate::providers::ApiProvider;
use crate::providers::http::{HttpRequest, stream_http};

/// pi's marker for "use Application Default Credentials" in place of a key.
const CREDENTIALS_MARKER: &str = "gcp-vertex-credentials";
/// The api version pi asks `@google/genai` for.
const API_VERSION: &str = "v1";
/// The options this provider reads beyond the shared Google ones (kept by `stream_simple`).
const VERTEX_OPTIONS: [&str; 3] = ["project", "location", "accessToken"];

/// The Vertex AI provider. Registered for `google-vertex` by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct VertexProvider;

impl VertexProvider {
    /// The provider.
    pub fn new() -> Self {
        VertexProvider
    }
}

impl ApiProvider for VertexProvider {
    fn api(&self) -> &str {
        api::GOOGLE_VERTEX
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let request = build_request(model, context, options);
        stream_http(model, options, request, GoogleDecoder::new(model))
    }

    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let mut mapped = crate::llm::to_provider_options(model, options);
        for key in VERTEX_OPTIONS {
            if let Some(value) = options.extra.get(key) {
                mapped.extra.insert(key.to_owned(), value.clone());
            }
        }
        self.stream(model, context, &mapped)
    }
}

/// How a request authenticates.
#[derive(Debug, PartialEq, Eq)]
enum Auth {
    /// A Vertex API key (express mode).
    ApiKey(String),
    /// An OAuth access token, in project mode.
    Bearer(String),
    /// The caller's own `authorization` header, in project mode.
    CallerHeader,
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `options.api_key`, else `GOOGLE_CLOUD_API_KEY`; `None` for pi's credential markers.
fn configured_key(options: &StreamOptions, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let key = options
        .api_key
        .as_ref()
        .map(|k| k.expose().trim().to_owned())
        .filter(|k| !k.is_empty())
        .or_else(|| env("GOOGLE_CLOUD_API_KEY"))?;
    let placeholder = key.len() > 2
        && key.starts_with('<')
        && key.ends_with('>')
        && !key[1..key.len() - 1].contains('>');
    (key != CREDENTIALS_MARKER && !placeholder).then_some(key)
}

fn resolve_auth(
    model: &Model,
    options: &StreamOptions,
    opts: &GoogleVertexOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Auth, Error> {
    if let Some(token) = opts
        .access_token
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        return Ok(Auth::Bearer(token.to_owned()));
    }
    if let Some(key) = configured_key(options, env) {
        if let Some(token) = key.strip_prefix("Bearer ") {
            return Ok(Auth::Bearer(token.trim().to_owned()));
        }
        if key.starts_with("ya29.") {
            return Ok(Auth::Bearer(key));
        }
        return Ok(Auth::ApiKey(key));
    }
    let has_header = model
        .headers
        .iter()
        .chain(options.headers.iter())
        .flatten()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    if has_header {
        return Ok(Auth::CallerHeader);
    }
    Err(Error::new(
        ErrorKind::Auth,
        "Vertex AI needs credentials: an API key (GOOGLE_CLOUD_API_KEY), or for Application \
         Default Credentials an OAuth access token (e.g. from `gcloud auth print-access-token`) \
         as the `accessToken` option or as the API key",
    ))
}

fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<HttpRequest, Error> {
    build_request_with(model, context, options, &env_var)
}

fn build_request_with(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<HttpRequest, Error> {
    let opts: GoogleVertexOptions = options.api_options()?;
    let auth = resolve_auth(model, options, &opts, env)?;
    let body = build_body_with(
        model,
        context,
        options,
        Flavour::Vertex,
        opts.thinking.as_ref(),
    )?;
    let model_path = model_path(&model.id)?;
    let url = match &auth {
        Auth::ApiKey(_) => match custom_base_url(model) {
            Some(base) => with_base(base, &model_path),
            None => format!("https://aiplatform.googleapis.com/{API_VERSION}/{model_path}"),
        },
        Auth::Bearer(_) | Auth::CallerHeader => {
            let project = opts
                .project
                .filter(|p| !p.is_empty())
                .or_else(|| env("GOOGLE_CLOUD_PROJECT"))
                .or_else(|| env("GCLOUD_PROJECT"))
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Config,
                        "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.",
                    )
                })?;
            let location = opts
                .location
                .filter(|l| !l.is_empty())
                .or_else(|| env("GOOGLE_CLOUD_LOCATION"))
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Config,
                        "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options.",
                    )
                })?;
            match custom_base_url(model) {
                Some(base) => with_base(base, &model_path),
                None => project_url(&project, &location, &model_path),
            }
        }
    };
    let url = format!("{url}:streamGenerateContent?alt=sse");
    let request = HttpRequest::post_serialized(url, &body)?;
    Ok(match auth {
        Auth::ApiKey(key) => request.header("x-goog-api-key", key),
        Auth::Bearer(token) => request.header("authorization", format!("Bearer {token}")),
        Auth::CallerHeader => request,
    })
}

/// The model's resource name on Vertex: `publishers/google/models/<id>` (`a/b` →
/// `publishers/a/models/b`), or the id when it already is a resource name.
fn model_path(id: &str) -> Result<String, Error> {
    super::google::check_model_id(id)?;
    if id.starts_with("publishers/") || id.starts_with("projects/") || id.starts_with("models/") {
        return Ok(id.to_owned());
    }
    Ok(match id.split_once('/') {
        Some((publisher, rest)) => {
            let model = rest.split('/').next().unwrap_or(rest);
            format!("publishers/{publisher}/models/{model}")
        }
        None => format!("publishers/google/models/{id}"),
    })
}

/// The model's base URL, unless empty or the catalog's `{location}` template.
fn custom_base_url(model: &Model) -> Option<&str> {
    let base = model.base_url.trim();
    (!base.is_empty() && !base.contains("{location}")).then_some(base)
}

/// `<base>[/v1]/<model path>`: the version is added unless the base URL has one.
fn with_base(base: &str, model_path: &str) -> String {
    let base = base.strip_suffix('/').unwrap_or(base);
    if has_version_segment(base) {
        format!("{base}/{model_path}")
    } else {
        format!("{base}/{API_VERSION}/{model_path}")
    }
}

/// A path segment like `v1`, `v1beta`, `v1beta1`.
fn has_version_segment(url: &str) -> bool {
    let path = match reqwest::Url::parse(url) {
        Ok(parsed) => parsed.path().to_owned(),
        Err(_) => url.to_owned(),
    };
    path.split('/').any(|segment| {
        let Some(rest) = segment.strip_prefix('v') else {
            return false;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        let rest = &rest[digits..];
        rest.is_empty()
            || rest
                .strip_prefix("beta")
                .is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The regional (or global, or multi-regional) endpoint for a project.
fn project_url(project: &str, location: &str, model_path: &str) -> String {
    let host = match location {
        "global" => "https://aiplatform.googleapis.com".to_owned(),
        "us" | "eu" => format!("https://aiplatform.{location}.rep.googleapis.com"),
        other => format!("https://{other}-aiplatform.googleapis.com"),
    };
    if model_path.starts_with("projects/") {
        format!("{host}/{API_VERSION}/{model_path}")
    } else {
        format!("{host}/{API_VERSION}/projects/{project}/locations/{location}/{model_path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::UserMessage;

    fn vertex(id: &str, base: &str) -> Model {
        Model::new(id, api::GOOGLE_VERTEX, "google-vertex", base)
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn encode(
        model: &Model,
        options: &StreamOptions,
        vars: &[(&str, &str)],
    ) -> Result<(String, Vec<(String, String)>), Error> {
        let ctx = Context::new().with_message(UserMessage::text("hi"));
        let request = build_request_with(model, &ctx, options, &env(vars))?;
        let (url, headers) = request.parts();
        Ok((url.to_owned(), headers.to_vec()))
    }

    const CATALOG: &str = "https://{location}-aiplatform.googleapis.com";

    #[test]
    fn api_key_uses_express_mode() {
        let m = vertex("gemini-2.5-flash", CATALOG);
        let (url, headers) =
            encode(&m, &StreamOptions::new().with_api_key(" v-key "), &[]).unwrap();
        assert_eq!(
            url,
            "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            headers,
            vec![("x-goog-api-key".to_owned(), "v-key".to_owned())]
        );
        // From the environment; project and location do not matter then.
        let vars = [
            ("GOOGLE_CLOUD_API_KEY", "env-key"),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        ];
        let (url, headers) = encode(&m, &StreamOptions::new(), &vars).unwrap();
        assert!(url.starts_with("https://aiplatform.googleapis.com/v1/publishers/"));
        assert_eq!(headers[0].1, "env-key");
    }

    #[test]
    fn project_mode_with_a_bearer_token() {
        let m = vertex("gemini-2.5-pro", CATALOG);
        let vars = [
            ("GOOGLE_CLOUD_PROJECT", "proj"),
            ("GOOGLE_CLOUD_LOCATION", "europe-west4"),
        ];
        let with_token = StreamOptions::new()
            .with_api_key(crate::llm::AMBIENT_CREDENTIALS)
            .with_extra("accessToken", "tok-1".into());
        let (url, headers) = encode(&m, &with_token, &vars).unwrap();
        assert_eq!(
            url,
            "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            headers,
            vec![("authorization".to_owned(), "Bearer tok-1".to_owned())]
        );

        // The token as the key (an agent's key callback), with options over the environment.
        let opts = StreamOptions::new()
            .with_api_key("ya29.a0Af")
            .with_extra("project", "other".into())
            .with_extra("location", "global".into());
        let (url, headers) = encode(&m, &opts, &vars).unwrap();
        assert!(url.starts_with(
            "https://aiplatform.googleapis.com/v1/projects/other/locations/global/publishers/google/models/"
        ));
        assert_eq!(headers[0].1, "Bearer ya29.a0Af");
        let opts = StreamOptions::new()
            .with_api_key("Bearer opaque")
            .with_extra("location", "us".into());
        let (url, headers) = encode(&m, &opts, &vars).unwrap();
        assert!(url.starts_with(
            "https://aiplatform.us.rep.googleapis.com/v1/projects/proj/locations/us/"
        ));
        assert_eq!(headers[0].1, "Bearer opaque");

        // The caller's own authorization header.
        let opts = StreamOptions::new().with_header("Authorization", "Bearer mine");
        let (_, headers) = encode(&m, &opts, &vars).unwrap();
        assert!(headers.is_empty());
    }

    #[test]
    fn missing_credentials_project_or_location_are_errors() {
        let m = vertex("gemini-2.5-pro", CATALOG);
        for key in ["", "gcp-vertex-credentials", "<authenticated>"] {
            let opts = StreamOptions::new().with_api_key(key);
            let err = encode(&m, &opts, &[("GOOGLE_CLOUD_PROJECT", "p")]).unwrap_err();
            assert!(err.is_auth(), "{key}: {err:?}");
            assert!(err.message().contains("accessToken"));
        }
        let token = StreamOptions::new().with_extra("accessToken", "t".into());
        let err = encode(&m, &token, &[("GOOGLE_CLOUD_LOCATION", "l")]).unwrap_err();
        assert_eq!(
            err.message(),
            "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options."
        );
        let err = encode(&m, &token, &[("GCLOUD_PROJECT", "p")]).unwrap_err();
        assert_eq!(
            err.message(),
            "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options."
        );
        let bad = StreamOptions::new().with_extra("project", 5.into());
        assert_eq!(encode(&m, &bad, &[]).unwrap_err().kind(), ErrorKind::Config);
    }

    #[test]
    fn custom_base_urls_and_model_paths() {
        let key = StreamOptions::new().with_api_key("k");
        let (url, _) = encode(&vertex("gemini-x", "http://127.0.0.1:9/"), &key, &[]).unwrap();
        assert_eq!(
            url,
            "http://127.0.0.1:9/v1/publishers/google/models/gemini-x:streamGenerateContent?alt=sse"
        );
        let (url, _) = encode(
            &vertex("gemini-x", "http://127.0.0.1:9/vertex/v1beta1"),
            &key,
            &[],
        )
        .unwrap();
        assert_eq!(
            url,
            "http://127.0.0.1:9/vertex/v1beta1/publishers/google/models/gemini-x:streamGenerateContent?alt=sse"
        );
        let token = StreamOptions::new()
            .with_extra("accessToken", "t".into())
            .with_extra("project", "p".into())
            .with_extra("location", "l".into());
        let (url, _) = encode(&vertex("gemini-x", "http://127.0.0.1:9"), &token, &[]).unwrap();
        assert_eq!(
            url,
            "http://127.0.0.1:9/v1/publishers/google/models/gemini-x:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            model_path("anthropic/claude-x/y").unwrap(),
            "publishers/anthropic/models/claude-x"
        );
        assert_eq!(
            model_path("projects/p/locations/l/endpoints/e").unwrap(),
            "projects/p/locations/l/endpoints/e"
        );
        let (url, _) = encode(
            &vertex("projects/p/locations/l/endpoints/e", CATALOG),
            &token,
            &[],
        )
        .unwrap();
        assert_eq!(
            url,
            "https://l-aiplatform.googleapis.com/v1/projects/p/locations/l/endpoints/e:streamGenerateContent?alt=sse"
        );
        assert!(
            has_version_segment("https://x/v1") && has_version_segment("https://x/a/v2beta3/b")
        );
        assert!(
            !has_version_segment("https://x/vertex")
                && !has_version_segment("https://v1.example/x")
        );
    }
}
