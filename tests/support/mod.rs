//! A scripted HTTP/1.1 server on 127.0.0.1 that misbehaves on purpose: error statuses, HTML
//! pages, streams cut short, stalls, resets. It runs on the test's own runtime, so paused
//! Tokio time (`#[tokio::test(start_paused = true)]`) governs its delays too.
#![allow(dead_code, unreachable_pub)] // Each test binary uses part of it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub mod pi;
pub mod responses;
pub mod scripted;

/// One step of a scripted reply.
#[derive(Debug, Clone)]
pub enum Step {
    /// Write these bytes (flushed right away).
    Write(Vec<u8>),
    /// Wait (in Tokio time).
    Sleep(Duration),
    /// Close the connection abruptly (a reset for the client: no end of body).
    Close,
    /// Never write again, keep the connection open.
    Hang,
}

/// A scripted reply to one request. The server closes the connection after it (with
/// `connection: close`) unless [`keep_alive`](Reply::keep_alive) is set: under paused time,
/// a pooled connection can race Tokio's auto-advance, a fresh one does not.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status line and headers, without the blank line.
    head: Option<String>,
    /// The body, written after the head.
    steps: Vec<Step>,
    keep_alive: bool,
}

impl Reply {
    /// A complete response with `Content-Length`.
    pub fn status(code: u16, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut head = format!("HTTP/1.1 {code} {}\r\n", reason(code));
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\n", body.len()));
        Reply {
            head: Some(head),
            steps: vec![Step::Write(body.as_bytes().to_vec())],
            keep_alive: false,
        }
    }

    /// A `200 text/event-stream` response in chunked encoding, each chunk written on its own,
    /// then the end of the body.
    pub fn sse<S: AsRef<str>>(chunks: &[S]) -> Reply {
        Reply::sse_open(chunks).then(Step::Write(b"0\r\n\r\n".to_vec()))
    }

    /// Like [`sse`](Self::sse) but without the end of the body: add what happens next.
    pub fn sse_open<S: AsRef<str>>(chunks: &[S]) -> Reply {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nrequest-id: req_stream\r\n";
        Reply {
            head: Some(head.to_owned()),
            steps: chunks
                .iter()
                .map(|c| Step::Write(chunk(c.as_ref().as_bytes())))
                .collect(),
            keep_alive: false,
        }
    }

    /// A response head with exactly `headers` (no `content-length` added) and no body yet:
    /// add the body with [`then`](Self::then) (with `transfer-encoding: chunked`, write
    /// [`chunk`]s and `0\r\n\r\n`).
    pub fn head(code: u16, headers: &[(&str, &str)]) -> Reply {
        let mut head = format!("HTTP/1.1 {code} {}\r\n", reason(code));
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        Reply {
            head: Some(head),
            steps: Vec::new(),
            keep_alive: false,
        }
    }

    /// Like [`sse`](Self::sse), each chunk given as bytes (to split a UTF-8 character).
    pub fn sse_bytes(chunks: &[Vec<u8>]) -> Reply {
        let mut reply = Reply::sse_open::<&str>(&[]);
        for c in chunks {
            reply = reply.then(Step::Write(chunk(c)));
        }
        reply.then(Step::Write(b"0\r\n\r\n".to_vec()))
    }

    /// Keeps the connection open for the next request.
    pub fn keep_alive(mut self) -> Reply {
        self.keep_alive = true;
        self
    }

    /// Only the head of a streaming response, then nothing.
    pub fn head_then_hang() -> Reply {
        Reply::sse_open::<&str>(&[]).then(Step::Hang)
    }

    /// No response at all.
    pub fn hang() -> Reply {
        Reply {
            head: None,
            steps: vec![Step::Hang],
            keep_alive: false,
        }
    }

    /// Appends a step.
    pub fn then(mut self, step: Step) -> Reply {
        self.steps.push(step);
        self
    }
}

/// One chunk of chunked transfer encoding.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// Connections whose client went away while the server was writing or hanging.
    client_closed: usize,
    /// Connections accepted.
    connections: usize,
}

/// The server. Dropping it stops accepting (open connections end with the runtime).
pub struct MockServer {
    url: String,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Starts a server answering requests with `replies`, in order (a request beyond them
    /// gets a 500).
    pub async fn start(replies: Vec<Reply>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Mutex::new(Shared {
            replies: replies.into(),
            ..Shared::default()
        }));
        let s = shared.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                s.lock().unwrap().connections += 1;
                tokio::spawn(serve(socket, s.clone()));
            }
        });
        MockServer { url, shared, task }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// How many connections were accepted.
    pub fn connections(&self) -> usize {
        self.shared.lock().unwrap().connections
    }

    /// How many connections the client closed while the server was still sending or hanging.
    pub fn client_closed(&self) -> usize {
        self.shared.lock().unwrap().client_closed
    }
}

async fn serve(mut socket: TcpStream, shared: Arc<Mutex<Shared>>) {
    let mut buf = Vec::new();
    loop {
        let Some(request) = read_request(&mut socket, &mut buf).await else {
            return;
        };
        let reply = {
            let mut s = shared.lock().unwrap();
            s.requests.push(request);
            s.replies
                .pop_front()
                .unwrap_or_else(|| Reply::status(500, &[], "no reply scripted"))
        };
        let keep_alive = reply.keep_alive;
        if let Some(head) = reply.head {
            let connection = if keep_alive { "keep-alive" } else { "close" };
            let head = format!("{head}connection: {connection}\r\n\r\n");
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
        }
        for step in reply.steps {
            match step {
                Step::Write(bytes) => {
                    if socket.write_all(&bytes).await.is_err() || socket.flush().await.is_err() {
                        shared.lock().unwrap().client_closed += 1;
                        return;
                    }
                }
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Close => {
                    // Reset rather than an orderly shutdown: the body never ends. (A zero
                    // linger does not block on drop; the deprecation is about other values.)
                    #[allow(deprecated)]
                    let _ = socket.set_linger(Some(Duration::ZERO));
                    return;
                }
                Step::Hang => {
                    // Wait until the client goes away (a read of 0 bytes or an error).
                    let mut byte = [0u8; 1];
                    let _ = socket.read(&mut byte).await;
                    shared.lock().unwrap().client_closed += 1;
                    return;
                }
            }
        }
        if !keep_alive {
            let _ = socket.shutdown().await;
            return;
        }
    }
}

async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        let mut tmp = [0u8; 8192];
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let len = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buf.len() < body_start + len {
        let mut tmp = [0u8; 8192];
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = buf[body_start..body_start + len].to_vec();
    buf.drain(..body_start + len);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        307 => "Temporary Redirect",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Frames Anthropic events (`(type, data)`) as SSE text.
pub fn anthropic_sse(events: &[&str]) -> String {
    events
        .iter()
        .map(|data| {
            let kind = serde_json::from_str::<serde_json::Value>(data)
                .ok()
                .and_then(|v| v["type"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "message".to_owned());
            format!("event: {kind}\ndata: {data}\n\n")
        })
        .collect()
}

/// Runs the ignored test `test` of the current test binary in a child process with `env` set
/// (what only a new process can have, such as keys in its environment), and requires that it
/// ran and passed.
pub fn run_ignored_in_child<K, V>(test: &str, env: impl IntoIterator<Item = (K, V)>)
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
