//! Where a Bedrock call goes and how it proves who it is: the region, the endpoint, and the
//! credentials (a bearer API key, or AWS keys signed with Signature V4), resolved as pi-ai
//! and the AWS SDK's default chain resolve them, for the sources this crate supports.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::model::Model;
use crate::llm::options::StreamOptions;

/// Reads environment variables; a function so tests can give their own.
pub(super) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, empty values counted as unset.
pub(super) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// AWS access keys.
#[derive(Clone)]
pub(super) struct AwsKeys {
    pub(super) access_key_id: String,
    pub(super) secret_access_key: String,
    pub(super) session_token: Option<String>,
}

impl fmt::Debug for AwsKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsKeys")
            .field("access_key_id", &"[redacted]")
            .field("secret_access_key", &"[redacted]")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "[redacted]"),
            )
            .finish()
    }
}

/// How a request authenticates.
#[derive(Debug, Clone)]
pub(super) enum Auth {
    /// `Authorization: Bearer <key>` (a Bedrock API key).
    Bearer(String),
    /// Signature V4 with these keys.
    Sign(AwsKeys),
}

/// pi's region: the `region` option, else `AWS_REGION`, else `AWS_DEFAULT_REGION`.
pub(super) fn configured_region(options: &StreamOptions, env: Env<'_>) -> Option<String> {
    options
        .extra
        .get("region")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
}

/// The profile the shared files are read for: the `profile` option, else `AWS_PROFILE`.
fn configured_profile(options: &StreamOptions, env: Env<'_>) -> Option<String> {
    options
        .extra
        .get("profile")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .or_else(|| env("AWS_PROFILE"))
}

/// The region of a standard Bedrock runtime endpoint (`bedrock-runtime[-fips].<region>.
/// amazonaws.com[.cn]`).
fn standard_endpoint_region(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?.to_lowercase();
    let rest = host
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| host.strip_prefix("bedrock-runtime."))?;
    let region = rest
        .strip_suffix(".amazonaws.com")
        .or_else(|| rest.strip_suffix(".amazonaws.com.cn"))?;
    (!region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
    .then(|| region.to_owned())
}

/// Where the request goes and the region it is signed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// `scheme://host[:port][/path]`, without a trailing `/`.
    pub(super) endpoint: String,
    pub(super) region: String,
}

/// pi's endpoint rule: a custom base URL (a VPC endpoint, a proxy) is always used; a
/// standard runtime endpoint only when neither a region nor a profile is configured (so
/// `AWS_REGION` moves a catalog model off its default `us-east-1`). The region is the
/// configured one, else the endpoint's, else the profile's, else `us-east-1`.
pub(super) fn target(
    model: &Model,
    options: &StreamOptions,
    env: Env<'_>,
    profile_region: Option<&str>,
) -> Target {
    let configured = configured_region(options, env);
    let has_profile = configured_profile(options, env).is_some();
    let base = model.base_url.trim().trim_end_matches('/');
    let endpoint_region = standard_endpoint_region(base);
    let explicit =
        !base.is_empty() && (endpoint_region.is_none() || (configured.is_none() && !has_profile));
    let region = configured
        .or_else(|| endpoint_region.clone().filter(|_| explicit))
        .or_else(|| profile_region.map(str::to_owned))
        .unwrap_or_else(|| "us-east-1".to_owned());
    let endpoint = if explicit {
        base.to_owned()
    } else {
        let suffix = if region.starts_with("cn-") {
            "amazonaws.com.cn"
        } else {
            "amazonaws.com"
        };
        format!("https://bedrock-runtime.{region}.{suffix}")
    };
    Target { endpoint, region }
}

/// One profile of the shared files, as `key = value` pairs.
type Profile = HashMap<String, String>;

/// Parses an INI file of the AWS shape; `config` names sections `[profile x]` (and
/// `[default]`), `credentials` names them `[x]`.
fn parse_ini(text: &str, config: bool) -> HashMap<String, Profile> {
    let mut out: HashMap<String, Profile> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let section = section.trim();
            let name = if config {
                match section.strip_prefix("profile") {
                    Some(rest) if rest.starts_with(char::is_whitespace) => Some(rest.trim()),
                    _ if section == "default" => Some("default"),
                    _ => None,
                }
            } else {
                Some(section)
            };
            current = name.map(str::to_owned);
            if let Some(name) = &current {
                out.entry(name.clone()).or_default();
            }
            continue;
        }
        // Continuation lines (nested settings such as `s3 =`) are skipped.
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let (Some(name), Some((key, value))) = (&current, line.split_once('=')) else {
            continue;
        };
        let value = value.trim();
        if let Some(profile) = out.get_mut(name) {
            profile.insert(key.trim().to_lowercase(), value.to_owned());
        }
    }
    out
}

fn home_file(env: Env<'_>, var: &str, default: &str) -> Option<PathBuf> {
    if let Some(path) = env(var) {
        return Some(PathBuf::from(path));
    }
    let home = env("HOME").or_else(|| env("USERPROFILE"))?;
    Some(Path::new(&home).join(".aws").join(default))
}

/// The named profile from both shared files (credentials win over config for keys).
pub(super) fn load_profile(name: &str, env: Env<'_>) -> Option<Profile> {
    let read = |var: &str, default: &str, config: bool| {
        home_file(env, var, default)
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| parse_ini(&text, config))
            .and_then(|mut all| all.remove(name))
    };
    let config = read("AWS_CONFIG_FILE", "config", true);
    let credentials = read("AWS_SHARED_CREDENTIALS_FILE", "credentials", false);
    match (config, credentials) {
        (None, None) => None,
        (config, credentials) => {
            let mut profile = config.unwrap_or_default();
            profile.extend(credentials.unwrap_or_default());
            Some(profile)
        }
    }
}

fn unsupported(what: &str) -> Error {
    Error::new(
        ErrorKind::Auth,
        format!(
            "{what} is not supported by pi-engine's Bedrock provider; use static keys \
             (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY[/AWS_SESSION_TOKEN], or a profile with \
             aws_access_key_id), a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK), or export \
             temporary keys first (`aws configure export-credentials --format env`)"
        ),
    )
}

/// The credentials of the profile `name`, or the typed error for the sources not supported.
fn profile_keys(name: &str, profile: &Profile) -> Result<AwsKeys, Error> {
    let get = |k: &str| profile.get(k).filter(|v| !v.is_empty()).cloned();
    if let (Some(id), Some(secret)) = (get("aws_access_key_id"), get("aws_secret_access_key")) {
        return Ok(AwsKeys {
            access_key_id: id,
            secret_access_key: secret,
            session_token: get("aws_session_token"),
        });
    }
    let source = if get("sso_session").is_some() || get("sso_start_url").is_some() {
        "IAM Identity Center (SSO)"
    } else if get("role_arn").is_some() {
        "Assuming a role (role_arn)"
    } else if get("credential_process").is_some() {
        "credential_process"
    } else if get("web_identity_token_file").is_some() {
        "Web identity federation"
    } else if get("login_session").is_some() {
        "Console login credentials"
    } else {
        return Err(Error::new(
            ErrorKind::Auth,
            format!("The AWS profile '{name}' has no aws_access_key_id and aws_secret_access_key"),
        ));
    };
    Err(unsupported(&format!("{source} (AWS profile '{name}')")))
}

/// The call's authentication and its profile's region, resolved as pi and the AWS SDK do:
///
/// 1. a bearer key: the `bearerToken` option, else `AWS_BEARER_TOKEN_BEDROCK`, else an API
///    key given to the call (not the `<authenticated>` marker), unless
///    `AWS_BEDROCK_SKIP_AUTH=1`;
/// 2. `AWS_BEDROCK_SKIP_AUTH=1`: dummy keys (for proxies that do not check);
/// 3. `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`), when no profile
///    is named;
/// 4. the profile (`profile` option, `AWS_PROFILE`, else `default`) of the shared files;
/// 5. web identity and container credentials: a typed "not supported" error; nothing at
///    all: "No AWS credentials".
pub(super) fn resolve(
    options: &StreamOptions,
    env: Env<'_>,
) -> Result<(Auth, Option<String>), Error> {
    let profile_name = configured_profile(options, env);
    let profile = load_profile(profile_name.as_deref().unwrap_or("default"), env);
    let profile_region = profile
        .as_ref()
        .and_then(|p| p.get("region"))
        .filter(|r| !r.is_empty())
        .cloned();
    let skip = env("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1");
    let bearer = options
        .extra
        .get("bearerToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .or_else(|| env("AWS_BEARER_TOKEN_BEDROCK"))
        .or_else(|| {
            options
                .api_key
                .as_ref()
                .map(|k| k.expose().to_owned())
                .filter(|k| !k.is_empty() && k != crate::llm::env_keys::AMBIENT_CREDENTIALS)
        });
    if let Some(token) = bearer.filter(|_| !skip) {
        return Ok((Auth::Bearer(token), profile_region));
    }
    if skip {
        let keys = AwsKeys {
            access_key_id: "dummy-access-key".into(),
            secret_access_key: "dummy-secret-key".into(),
            session_token: None,
        };
        return Ok((Auth::Sign(keys), profile_region));
    }
    if profile_name.is_none()
        && let (Some(id), Some(secret)) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"))
    {
        let keys = AwsKeys {
            access_key_id: id,
            secret_access_key: secret,
            session_token: env("AWS_SESSION_TOKEN"),
        };
        return Ok((Auth::Sign(keys), profile_region));
    }
    if let Some(profile) = &profile {
        let name = profile_name.as_deref().unwrap_or("default");
        return profile_keys(name, profile).map(|keys| (Auth::Sign(keys), profile_region));
    }
    if let Some(name) = &profile_name {
        return Err(Error::new(
            ErrorKind::Auth,
            format!("The AWS profile '{name}' is in neither ~/.aws/config nor ~/.aws/credentials"),
        ));
    }
    if env("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() {
        return Err(unsupported(
            "Web identity federation (AWS_WEB_IDENTITY_TOKEN_FILE)",
        ));
    }
    if env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        || env("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
    {
        return Err(unsupported(
            "Container credentials (AWS_CONTAINER_CREDENTIALS_*)",
        ));
    }
    Err(Error::new(
        ErrorKind::Auth,
        "No AWS credentials: set AWS_BEARER_TOKEN_BEDROCK, AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (instance metadata credentials are not supported)",
    ))
}

/// Signs requests with Signature V4 (service `bedrock`), by the AWS SDK's signer.
pub(super) struct SigV4 {
    pub(super) keys: AwsKeys,
    pub(super) region: String,
}

impl fmt::Debug for SigV4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigV4")
            .field("keys", &self.keys)
            .field("region", &self.region)
            .finish()
    }
}

impl crate::providers::http::RequestSigner for SigV4 {
    fn sign(
        &self,
        url: &reqwest::Url,
        headers: &[(&str, &str)],
        body: &[u8],
        now: SystemTime,
    ) -> Result<Vec<(String, String)>, Error> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        use aws_sigv4::sign::v4;
        let credentials = aws_credential_types::Credentials::new(
            &self.keys.access_key_id,
            &self.keys.secret_access_key,
            self.keys.session_token.clone(),
            None,
            "pi-engine",
        );
        let identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("bedrock")
            .time(now)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| Error::new(ErrorKind::Config, format!("SigV4: {e}")))?
            .into();
        let request = SignableRequest::new(
            "POST",
            url.as_str(),
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| Error::new(ErrorKind::Config, format!("SigV4: {e}")))?;
        let (instructions, _) = sign(request, &params)
            .map_err(|e| Error::new(ErrorKind::Config, format!("SigV4: {e}")))?
            .into_parts();
        let (headers, _) = instructions.into_parts();
        Ok(headers
            .into_iter()
            .map(|h| (h.name().to_owned(), h.value().to_owned()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn model(base: &str) -> Model {
        Model::new(
            "anthropic.claude-x",
            "bedrock-converse-stream",
            "amazon-bedrock",
            base,
        )
    }

    #[test]
    fn endpoint_and_region_rules() {
        let none = env_of(&[]);
        let std = model("https://bedrock-runtime.us-west-2.amazonaws.com");
        let t = target(&std, &StreamOptions::new(), &none, None);
        assert_eq!(
            t.endpoint,
            "https://bedrock-runtime.us-west-2.amazonaws.com"
        );
        assert_eq!(t.region, "us-west-2");
        // A configured region moves a standard endpoint.
        let eu = env_of(&[("AWS_REGION", "eu-central-1")]);
        let t = target(&std, &StreamOptions::new(), &eu, None);
        assert_eq!(
            t.endpoint,
            "https://bedrock-runtime.eu-central-1.amazonaws.com"
        );
        // A custom endpoint is kept, signed for the configured region.
        let proxy = model("http://127.0.0.1:9000/");
        let t = target(&proxy, &StreamOptions::new(), &eu, None);
        assert_eq!(
            t,
            Target {
                endpoint: "http://127.0.0.1:9000".into(),
                region: "eu-central-1".into()
            }
        );
        // A profile's region, and China's domain.
        let profile = env_of(&[("AWS_PROFILE", "work")]);
        let t = target(&std, &StreamOptions::new(), &profile, Some("cn-north-1"));
        assert_eq!(
            t.endpoint,
            "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
        );
        assert_eq!(
            standard_endpoint_region("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com")
                .as_deref(),
            Some("us-gov-west-1")
        );
    }

    #[test]
    fn credential_sources() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(&creds, "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n\n[work]\naws_access_key_id=AKIDWORK\naws_secret_access_key=s2\naws_session_token = t2\n").unwrap();
        std::fs::write(&config, "[default]\nregion = eu-west-1\n[profile sso]\nsso_session = corp\n[profile role]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = default\n[profile proc]\ncredential_process = /bin/creds\n").unwrap();
        let creds = creds.to_str().unwrap().to_owned();
        let config = config.to_str().unwrap().to_owned();
        let env = |extra: Vec<(&'static str, String)>| {
            let creds = creds.clone();
            let config = config.clone();
            move |name: &str| -> Option<String> {
                match name {
                    "AWS_SHARED_CREDENTIALS_FILE" => Some(creds.clone()),
                    "AWS_CONFIG_FILE" => Some(config.clone()),
                    _ => extra
                        .iter()
                        .find(|(k, _)| *k == name)
                        .map(|(_, v)| v.clone()),
                }
            }
        };
        let o = StreamOptions::new();
        let (auth, region) = resolve(&o, &env(vec![])).unwrap();
        assert!(matches!(auth, Auth::Sign(k) if k.access_key_id == "AKIDDEFAULT"));
        assert_eq!(region.as_deref(), Some("eu-west-1"));
        let (auth, _) = resolve(
            &o,
            &env(vec![
                ("AWS_ACCESS_KEY_ID", "AKIDENV".into()),
                ("AWS_SECRET_ACCESS_KEY", "s".into()),
            ]),
        )
        .unwrap();
        assert!(matches!(auth, Auth::Sign(k) if k.access_key_id == "AKIDENV"));
        // A named profile wins over the environment's keys.
        let (auth, _) = resolve(
            &o,
            &env(vec![
                ("AWS_PROFILE", "work".into()),
                ("AWS_ACCESS_KEY_ID", "AKIDENV".into()),
                ("AWS_SECRET_ACCESS_KEY", "s".into()),
            ]),
        )
        .unwrap();
        assert!(
            matches!(auth, Auth::Sign(k) if k.access_key_id == "AKIDWORK" && k.session_token.as_deref() == Some("t2"))
        );
        let (auth, _) =
            resolve(&o, &env(vec![("AWS_BEARER_TOKEN_BEDROCK", "tok".into())])).unwrap();
        assert!(matches!(auth, Auth::Bearer(t) if t == "tok"));
        for (profile, what) in [
            ("sso", "SSO"),
            ("role", "role_arn"),
            ("proc", "credential_process"),
        ] {
            let error = resolve(&o, &env(vec![("AWS_PROFILE", profile.into())])).unwrap_err();
            assert!(
                error.is_auth() && error.to_string().contains(what),
                "{error}"
            );
        }
        let error = resolve(&o, &env(vec![("AWS_PROFILE", "nope".into())])).unwrap_err();
        assert!(error.to_string().contains("'nope'"));
        let bare = |name: &str| match name {
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI" => Some("/v2/creds".to_owned()),
            "HOME" => Some("/nonexistent".to_owned()),
            _ => None,
        };
        let error = resolve(&o, &bare).unwrap_err();
        assert!(
            error.to_string().contains("Container credentials"),
            "{error}"
        );
        // Keys never show in Debug.
        let keys = AwsKeys {
            access_key_id: "AKIDSECRET".into(),
            secret_access_key: "shh".into(),
            session_token: Some("tok".into()),
        };
        let shown = format!("{:?}", Auth::Sign(keys));
        assert!(
            !shown.contains("AKIDSECRET") && !shown.contains("shh") && !shown.contains("tok\"")
        );
    }

    #[test]
    fn sigv4_matches_the_aws_test_suite() {
        use crate::providers::http::RequestSigner;
        // The AWS SigV4 test suite's credentials and date. The expected signature was
        // computed apart, by the spec's HMAC chain in Python (hashlib/hmac), over the
        // double-encoded path `/model/a%253A0/converse-stream`.
        let signer = SigV4 {
            keys: AwsKeys {
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
                session_token: None,
            },
            region: "us-east-1".into(),
        };
        let url = reqwest::Url::parse(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/a%3A0/converse-stream",
        )
        .unwrap();
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_440_938_160); // 2015-08-30T12:36:00Z
        let headers = signer
            .sign(&url, &[("content-type", "application/json")], b"{}", now)
            .unwrap();
        let get = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("x-amz-date"), Some("20150830T123600Z"));
        let auth = get("authorization").unwrap();
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature="), "{auth}");
        assert!(
            auth.ends_with(
                "Signature=260f9f4059322f69af45a44f87359d2ddd53df87913c591d614069b85cd83fc0"
            ),
            "{auth}"
        );
    }
}
