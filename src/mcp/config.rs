//! The configuration of MCP servers, in the `mcpServers` shape that Claude Desktop, Claude
//! Code, Cursor and most MCP clients read: one object per server, keyed by its name, with
//! either a command to run (stdio) or a URL (streamable HTTP).
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] },
//!     "search": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer …" },
//!                 "timeout": 120000 }
//!   }
//! }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::McpError;

/// The servers of an `mcpServers` object, by name (in name order).
///
/// Deserializes from the object inside `mcpServers` (the bare map); [`from_json`](Self::from_json)
/// also accepts the whole `{"mcpServers": {…}}` document and reports a bad entry without
/// losing the others.
///
/// ```
/// use pi_engine::mcp::{McpServers, McpTransport};
/// use serde_json::json;
///
/// let (servers, errors) = McpServers::from_json(&json!({"mcpServers": {
///     "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
///     "remote": {"url": "http://localhost:3001/mcp", "timeout": 5000},
///     "broken": {"args": ["no command"]}
/// }}));
/// assert_eq!(servers.len(), 2);
/// assert!(matches!(servers.get("everything").unwrap().transport, McpTransport::Stdio { .. }));
/// assert_eq!(servers.get("remote").unwrap().timeout.unwrap().as_millis(), 5000);
/// assert_eq!(errors[0].server(), "broken");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct McpServers {
    /// The servers, by name.
    pub servers: BTreeMap<String, McpServerConfig>,
}

impl McpServers {
    /// No servers.
    pub fn new() -> Self {
        McpServers::default()
    }

    /// Adds (or replaces) the server `name`.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, config: McpServerConfig) -> Self {
        self.servers.insert(name.into(), config);
        self
    }

    /// Reads `{"mcpServers": {…}}` or the bare `{…}` map inside it. Each entry is read on its
    /// own: one that is not a valid server is returned among the errors, the others are kept.
    /// A value that is not an object (or whose `mcpServers` is not) is one error named `""`.
    pub fn from_json(value: &Value) -> (McpServers, Vec<McpServerError>) {
        let map = match value.get("mcpServers") {
            Some(inner) => inner,
            None => value,
        };
        let mut servers = McpServers::new();
        let mut errors = Vec::new();
        let Some(map) = map.as_object() else {
            errors.push(McpServerError::new(
                "",
                McpError::config("`mcpServers` must be an object of servers by name"),
            ));
            return (servers, errors);
        };
        for (name, entry) in map {
            match McpServerConfig::deserialize(entry) {
                Ok(config) => {
                    servers.servers.insert(name.clone(), config);
                }
                Err(e) => errors.push(McpServerError::new(
                    name,
                    McpError::config(format!("invalid MCP server configuration: {e}")),
                )),
            }
        }
        (servers, errors)
    }

    /// The server `name`.
    pub fn get(&self, name: &str) -> Option<&McpServerConfig> {
        self.servers.get(name)
    }

    /// The number of servers.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// True when there are no servers.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

/// A server that could not be configured or started, and why (see
/// [`McpManager::errors`](super::McpManager::errors)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerError {
    server: String,
    error: McpError,
}

impl McpServerError {
    pub(crate) fn new(server: impl Into<String>, error: McpError) -> Self {
        McpServerError {
            server: server.into(),
            error,
        }
    }

    /// The server's name (as configured).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// What went wrong.
    pub fn error(&self) -> &McpError {
        &self.error
    }
}

impl fmt::Display for McpServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MCP server \"{}\": {}", self.server, self.error)
    }
}

impl std::error::Error for McpServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout (its stderr goes to the log).
    Stdio {
        /// The program (looked up on `PATH`).
        command: String,
        /// Its arguments.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// Environment variables set for it, on top of this process's environment.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        /// Its working directory; default: the manager's working directory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// A server over MCP's streamable HTTP transport.
    Http {
        /// The endpoint, e.g. `http://localhost:3001/mcp`.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

/// One server of an `mcpServers` object.
///
/// The JSON fields: `command`, `args`, `env`, `cwd` for a stdio server, or `url` and
/// `headers` for a streamable-HTTP one (an optional `type` — `stdio`, `http`,
/// `streamable-http` — must agree; `sse`, the older HTTP transport, is refused); and for
/// both `timeout` (milliseconds per tool call, default 60 s), `startupTimeout` (milliseconds
/// to connect and list tools, default 30 s) and `enabled` (default `true`; `"disabled": true`
/// is read too).
///
/// ```
/// use std::time::Duration;
/// use pi_engine::mcp::McpServerConfig;
///
/// let config = McpServerConfig::stdio("node", ["server.js"]).with_timeout(Duration::from_secs(5));
/// let json = serde_json::to_value(&config).unwrap();
/// assert_eq!(json, serde_json::json!({"command": "node", "args": ["server.js"], "timeout": 5000}));
/// let back: McpServerConfig = serde_json::from_value(json).unwrap();
/// assert_eq!(back, config);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct McpServerConfig {
    /// How to reach it.
    #[serde(flatten)]
    pub transport: McpTransport,
    /// The deadline of one tool call (`timeout`, in ms); `None`: the manager's default (60 s).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "millis_opt")]
    pub timeout: Option<Duration>,
    /// The deadline to connect and list the tools (`startupTimeout`, in ms); `None`: the
    /// manager's default (30 s).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "millis_opt")]
    pub startup_timeout: Option<Duration>,
    /// `false`: the server is configured but not started.
    #[serde(skip_serializing_if = "is_true")]
    pub enabled: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

impl McpServerConfig {
    /// A stdio server: `command` with `args`.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        McpServerConfig::new(McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        })
    }

    /// A streamable-HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        McpServerConfig::new(McpTransport::Http {
            url: url.into(),
            headers: BTreeMap::new(),
        })
    }

    /// A server reached by `transport`, enabled, with the default deadlines.
    pub fn new(transport: McpTransport) -> Self {
        McpServerConfig {
            transport,
            timeout: None,
            startup_timeout: None,
            enabled: true,
        }
    }

    /// Sets an environment variable of a stdio server (ignored for HTTP).
    #[must_use]
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory of a stdio server (ignored for HTTP).
    #[must_use]
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Sets a header of an HTTP server (ignored for stdio).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sets the deadline of one tool call.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the deadline to connect and list the tools.
    #[must_use]
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
        self
    }

    /// Enables or disables the server.
    #[must_use]
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }
}

/// The JSON as written, before it is checked (`command` xor `url`, a known `type`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConfig {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default, with = "millis_opt")]
    timeout: Option<Duration>,
    #[serde(default, with = "millis_opt")]
    startup_timeout: Option<Duration>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    disabled: Option<bool>,
}

impl<'de> Deserialize<'de> for McpServerConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = RawConfig::deserialize(d)?;
        let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
        let transport = match (raw.command, raw.url, kind.as_deref()) {
            (Some(_), Some(_), _) => {
                return Err(D::Error::custom(
                    "a server has either `command` (stdio) or `url` (HTTP), not both",
                ));
            }
            (_, _, Some("sse")) => {
                return Err(D::Error::custom(
                    "the SSE transport is not supported; use the server's streamable HTTP endpoint",
                ));
            }
            (Some(command), None, None | Some("stdio")) if !command.is_empty() => {
                McpTransport::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                    cwd: raw.cwd,
                }
            }
            (None, Some(url), None | Some("http" | "streamable-http" | "streamablehttp"))
                if !url.is_empty() =>
            {
                McpTransport::Http {
                    url,
                    headers: raw.headers,
                }
            }
            (None, None, _) => {
                return Err(D::Error::custom(
                    "a server needs `command` (stdio) or `url` (streamable HTTP)",
                ));
            }
            (_, _, Some(other)) => {
                return Err(D::Error::custom(format!(
                    "`type` \"{other}\" does not match the server's `command` or `url`"
                )));
            }
            _ => return Err(D::Error::custom("empty `command` or `url`")),
        };
        let enabled = raw.enabled.unwrap_or(true) && !raw.disabled.unwrap_or(false);
        Ok(McpServerConfig {
            transport,
            timeout: raw.timeout,
            startup_timeout: raw.startup_timeout,
            enabled,
        })
    }
}

/// An optional duration as whole milliseconds.
mod millis_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let ms = Option::<f64>::deserialize(d)?;
        match ms {
            None => Ok(None),
            Some(ms) if ms.is_finite() && ms > 0.0 => {
                Ok(Some(Duration::from_millis(ms.min(u64::MAX as f64) as u64)))
            }
            Some(_) => Err(serde::de::Error::custom(
                "a timeout is a positive number of milliseconds",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_usual_shapes() {
        let (servers, errors) = McpServers::from_json(&json!({"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "cwd": "/tmp"},
            "web": {"type": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer t"},
                    "timeout": 1500, "startupTimeout": 2000},
            "off": {"command": "x", "enabled": false},
            "off2": {"command": "x", "disabled": true},
        }}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(servers.len(), 4);
        let fs = servers.get("fs").unwrap();
        assert_eq!(
            fs.transport,
            McpTransport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "x".into()],
                env: BTreeMap::from([("A".into(), "1".into())]),
                cwd: Some("/tmp".into()),
            }
        );
        assert!(fs.enabled);
        let web = servers.get("web").unwrap();
        assert!(matches!(&web.transport, McpTransport::Http { url, headers }
            if url == "http://h/mcp" && headers["Authorization"] == "Bearer t"));
        assert_eq!(web.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(web.startup_timeout, Some(Duration::from_secs(2)));
        assert!(!servers.get("off").unwrap().enabled);
        assert!(!servers.get("off2").unwrap().enabled);
        // The bare map reads the same.
        let (bare, _) = McpServers::from_json(&json!({"fs": {"command": "npx"}}));
        assert_eq!(bare.len(), 1);
    }

    #[test]
    fn reports_bad_entries_and_keeps_the_rest() {
        let (servers, errors) = McpServers::from_json(&json!({
            "ok": {"command": "a"},
            "both": {"command": "a", "url": "http://x"},
            "none": {"args": []},
            "sse": {"type": "sse", "url": "http://x/sse"},
            "mismatch": {"type": "stdio", "url": "http://x"},
            "neg": {"command": "a", "timeout": -5},
        }));
        assert_eq!(servers.len(), 1);
        let names: Vec<_> = errors.iter().map(McpServerError::server).collect();
        assert_eq!(names, ["both", "none", "sse", "mismatch", "neg"]);
        assert!(errors[2].to_string().contains("SSE"), "{}", errors[2]);
        assert!(errors[0].error().is_config());
        let (_, errors) = McpServers::from_json(&json!([1]));
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn round_trips() {
        let config = McpServerConfig::http("http://h/mcp")
            .with_header("X-Key", "k")
            .with_startup_timeout(Duration::from_secs(3))
            .with_enabled(false);
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(
            json,
            json!({"url": "http://h/mcp", "headers": {"X-Key": "k"}, "startupTimeout": 3000, "enabled": false})
        );
        assert_eq!(
            serde_json::from_value::<McpServerConfig>(json).unwrap(),
            config
        );
        let servers = McpServers::new().with("a", McpServerConfig::stdio("x", ["y"]));
        let back: McpServers =
            serde_json::from_value(serde_json::to_value(&servers).unwrap()).unwrap();
        assert_eq!(back, servers);
    }
}
