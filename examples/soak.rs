//! A soak: many concurrent agents with tools against a misbehaving model server, for a fixed
//! time. Not a test (CI does not run it): `scripts/soak.sh` builds it in release and runs it.
//!
//! ```text
//! cargo run --release --example soak -- --agents 1000 --duration 600
//! SOAK_AGENTS=1000 SOAK_DURATION_SECS=60 cargo run --release --example soak
//! ```
//!
//! The server is in this process, on 127.0.0.1, and speaks the anthropic-messages wire format
//! (`POST /v1/messages`, SSE). A first request of a run is answered with a tool call, a
//! request that carries the tool result with a final text. Each request independently is
//! faulty: 10% of streams are cut (the connection is reset mid-stream), 10% carry a malformed
//! event, 10% are answered 429 with `Retry-After: 1`, 5% stall after the first event (until
//! the client's 2 s idle timeout gives up). Each agent runs prompt after prompt until the
//! time is up; a run in flight then finishes (every one is bounded: idle timeout, retries),
//! and the process stops by itself at the latest `--drain` seconds (default 120) later.
//!
//! It prints the throughput, the resident memory over time (sampled from /proc/self/status;
//! peak = VmHWM), and checks that every run ended with exactly one `agent_end`; the exit
//! status is 1 when one did not, or a run was still going when the time ran out.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_engine::agent::{Agent, AgentEvent, AgentToolResult, ToolContext, ToolError, TypedTool};
use pi_engine::llm::{Model, RetryPolicy, StopReason, StreamOptions};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ----- settings ----------------------------------------------------------------------------

struct Settings {
    agents: usize,
    duration: Duration,
    drain: Duration,
    idle_timeout: Duration,
}

fn settings() -> Settings {
    let mut agents = env_u64("SOAK_AGENTS").unwrap_or(1000) as usize;
    let mut duration = env_u64("SOAK_DURATION_SECS").unwrap_or(600);
    let mut drain = env_u64("SOAK_DRAIN_SECS").unwrap_or(120);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_else(|| usage(&format!("{arg} needs a number")))
        };
        match arg.as_str() {
            "--agents" => agents = value() as usize,
            "--duration" => duration = value(),
            "--drain" => drain = value(),
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    Settings {
        agents: agents.max(1),
        duration: Duration::from_secs(duration),
        drain: Duration::from_secs(drain),
        idle_timeout: Duration::from_secs(2),
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.parse().ok()
}

fn usage(problem: &str) -> ! {
    if !problem.is_empty() {
        eprintln!("soak: {problem}");
    }
    eprintln!(
        "usage: soak [--agents N (1000)] [--duration SECS (600)] [--drain SECS (120)]\n\
         (or SOAK_AGENTS, SOAK_DURATION_SECS, SOAK_DRAIN_SECS)"
    );
    std::process::exit(2)
}

// ----- the fault server ----------------------------------------------------------------------

/// What the server did, by kind of answer.
#[derive(Default)]
struct ServerStats {
    requests: AtomicUsize,
    ok: AtomicUsize,
    cut: AtomicUsize,
    malformed: AtomicUsize,
    rate_limited: AtomicUsize,
    stalled: AtomicUsize,
    connections: AtomicUsize,
}

/// A small, fast random number generator (splitmix64); one shared state is enough here.
struct Rng(AtomicU64);

impl Rng {
    fn next(&self) -> u64 {
        let mut z = self
            .0
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn percent(&self) -> u64 {
        self.next() % 100
    }
}

#[derive(Clone, Copy)]
enum Fault {
    None,
    Cut,
    Malformed,
    RateLimited,
    Stall,
}

async fn serve(listener: TcpListener, stats: Arc<ServerStats>, rng: Arc<Rng>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        stats.connections.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(connection(socket, stats.clone(), rng.clone()));
    }
}

/// Serves the requests of one (keep-alive) connection.
async fn connection(mut socket: TcpStream, stats: Arc<ServerStats>, rng: Arc<Rng>) {
    let _ = socket.set_nodelay(true);
    let mut buf = Vec::new();
    while let Some(body) = read_request(&mut socket, &mut buf).await {
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let fault = match rng.percent() {
            0..10 => Fault::Cut,
            10..20 => Fault::Malformed,
            20..30 => Fault::RateLimited,
            30..35 => Fault::Stall,
            _ => Fault::None,
        };
        let counter = match fault {
            Fault::None => &stats.ok,
            Fault::Cut => &stats.cut,
            Fault::Malformed => &stats.malformed,
            Fault::RateLimited => &stats.rate_limited,
            Fault::Stall => &stats.stalled,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let answers_tool = contains(&body, br#""type":"tool_result""#);
        let keep_open = answer(&mut socket, fault, answers_tool, rng.next()).await;
        if !keep_open {
            return;
        }
    }
}

/// Writes one answer; false when the connection is to be closed.
async fn answer(socket: &mut TcpStream, fault: Fault, answers_tool: bool, seed: u64) -> bool {
    if let Fault::RateLimited = fault {
        let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited: slow down"}}"#;
        let head = format!(
            "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
             content-length: {}\r\nconnection: keep-alive\r\n\r\n{body}",
            body.len()
        );
        return socket.write_all(head.as_bytes()).await.is_ok();
    }
    let events = if answers_tool {
        final_text_events(seed)
    } else {
        tool_call_events(seed)
    };
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
                transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let n = events.len();
    for (i, event) in events.iter().enumerate() {
        match fault {
            Fault::Cut if i == n / 2 => {
                // A reset mid-stream: the body never ends.
                #[allow(deprecated)] // a zero linger does not block
                let _ = socket.set_linger(Some(Duration::ZERO));
                return false;
            }
            Fault::Stall if i == 1 => {
                // Nothing more until the client gives up (its idle timeout), at most 30 s.
                let mut byte = [0u8; 1];
                let _ = tokio::time::timeout(Duration::from_secs(30), socket.read(&mut byte)).await;
                return false;
            }
            Fault::Malformed if i == n / 2 => {
                let bad = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\n\n";
                if socket.write_all(&chunk(bad.as_bytes())).await.is_err() {
                    return false;
                }
            }
            _ => {}
        }
        if socket.write_all(&chunk(event.as_bytes())).await.is_err() {
            return false;
        }
    }
    socket.write_all(b"0\r\n\r\n").await.is_ok()
}

fn sse(kind: &str, data: &str) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

fn message_start(seed: u64) -> String {
    sse(
        "message_start",
        &format!(
            r#"{{"type":"message_start","message":{{"id":"msg_{seed:x}","type":"message","role":"assistant","model":"soak-model","content":[],"stop_reason":null,"usage":{{"input_tokens":{},"output_tokens":1}}}}}}"#,
            100 + seed % 900
        ),
    )
}

/// A reply that calls the `lookup` tool once or twice (in parallel).
fn tool_call_events(seed: u64) -> Vec<String> {
    let calls = 1 + (seed % 2) as usize;
    let mut events = vec![message_start(seed)];
    for i in 0..calls {
        events.push(sse(
            "content_block_start",
            &format!(
                r#"{{"type":"content_block_start","index":{i},"content_block":{{"type":"tool_use","id":"toolu_{seed:x}_{i}","name":"lookup","input":{{}}}}}}"#
            ),
        ));
        // The arguments {"query": "item <i>"}, in three fragments.
        for part in [r#"{\"query\""#, r#": \"item "#, &format!(r#"{i}\"}}"#)] {
            events.push(sse(
                "content_block_delta",
                &format!(
                    r#"{{"type":"content_block_delta","index":{i},"delta":{{"type":"input_json_delta","partial_json":"{part}"}}}}"#
                ),
            ));
        }
        events.push(sse(
            "content_block_stop",
            &format!(r#"{{"type":"content_block_stop","index":{i}}}"#),
        ));
    }
    events.push(sse(
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":25}}"#,
    ));
    events.push(sse("message_stop", r#"{"type":"message_stop"}"#));
    events
}

/// The final text after the tool results.
fn final_text_events(seed: u64) -> Vec<String> {
    let mut events = vec![
        message_start(seed),
        sse(
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
    ];
    for word in [
        "The ", "lookup ", "found ", "what ", "you ", "asked ", "for.",
    ] {
        events.push(sse(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{word}"}}}}"#
            ),
        ));
    }
    events.push(sse(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    ));
    events.push(sse(
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#,
    ));
    events.push(sse("message_stop", r#"{"type":"message_stop"}"#));
    events
}

fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Reads one request (head and `content-length` body); its body, or `None` at the end of the
/// connection.
async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut tmp = [0u8; 16384];
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let start = head_end + 4;
    while buf.len() < start + len {
        let mut tmp = [0u8; 16384];
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = buf[start..start + len].to_vec();
    buf.drain(..start + len);
    Some(body)
}

// ----- the agents ----------------------------------------------------------------------------

/// Arguments of `lookup`.
#[derive(Deserialize, JsonSchema)]
struct LookupArgs {
    /// What to look up.
    query: String,
}

fn lookup_tool() -> TypedTool<
    LookupArgs,
    impl Fn(
        LookupArgs,
        ToolContext,
    ) -> futures::future::BoxFuture<'static, Result<AgentToolResult, ToolError>>
    + Send
    + Sync
    + 'static,
> {
    TypedTool::new(
        "lookup",
        "Looks something up",
        |args: LookupArgs, cx: ToolContext| {
            let wait = Duration::from_millis(1 + (args.query.len() as u64 * 7) % 20);
            Box::pin(async move {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {
                        Ok(AgentToolResult::text(format!("Found: {} (a soak result)", args.query)))
                    }
                    () = cx.cancel.cancelled() => Err("Operation aborted".into()),
                }
            }) as futures::future::BoxFuture<'static, _>
        },
    )
}

/// What the runs came to.
#[derive(Default)]
struct RunStats {
    runs: AtomicUsize,
    one_agent_end: AtomicUsize,
    tool_calls: AtomicUsize,
    /// Outcome of each run: "stop", or the error kind of the failed reply.
    outcomes: Mutex<BTreeMap<String, usize>>,
    /// Runs without exactly one `agent_end`, or whose prompt was refused.
    bad: Mutex<Vec<String>>,
}

async fn worker(
    id: usize,
    model: Model,
    options: StreamOptions,
    stop_at: Instant,
    stats: Arc<RunStats>,
) {
    let mut n = 0u64;
    while Instant::now() < stop_at {
        n += 1;
        let agent = Agent::builder(model.clone())
            .system_prompt("You are a soak-test agent. Use the lookup tool.")
            .options(options.clone())
            .tool(lookup_tool())
            .build();
        let ends = Arc::new(AtomicUsize::new(0));
        let tools = Arc::new(AtomicUsize::new(0));
        let (e, t) = (ends.clone(), tools.clone());
        agent.subscribe(move |event, _| match event {
            AgentEvent::AgentEnd { .. } => {
                e.fetch_add(1, Ordering::Relaxed);
            }
            AgentEvent::ToolExecutionEnd { .. } => {
                t.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        });
        let prompted = agent.prompt(format!("Look up item {id}-{n}")).await;
        stats.runs.fetch_add(1, Ordering::Relaxed);
        stats
            .tool_calls
            .fetch_add(tools.load(Ordering::Relaxed), Ordering::Relaxed);
        let ended = ends.load(Ordering::Relaxed);
        if prompted.is_err() || ended != 1 {
            stats.bad.lock().unwrap().push(format!(
                "agent {id} run {n}: {ended} agent_end, prompt {prompted:?}"
            ));
        } else {
            stats.one_agent_end.fetch_add(1, Ordering::Relaxed);
        }
        let outcome = agent
            .messages()
            .iter()
            .rev()
            .find_map(|m| m.as_assistant().cloned())
            .map_or_else(
                || "no reply".to_owned(),
                |m| match m.stop_reason {
                    StopReason::Stop => "stop".to_owned(),
                    _ => m.error().map_or_else(
                        || format!("{:?}", m.stop_reason),
                        |e| format!("error {:?}", e.kind()),
                    ),
                },
            );
        *stats.outcomes.lock().unwrap().entry(outcome).or_default() += 1;
    }
}

// ----- memory --------------------------------------------------------------------------------

/// (VmRSS, VmHWM) of this process in KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

// ----- main ----------------------------------------------------------------------------------

#[tokio::main]
async fn main() {
    let s = settings();
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1");
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = Arc::new(ServerStats::default());
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    tokio::spawn(serve(
        listener,
        server.clone(),
        Arc::new(Rng(AtomicU64::new(seed))),
    ));

    let model = Model::new("soak-model", "anthropic-messages", "anthropic", &url);
    let options = StreamOptions::new()
        .with_api_key("sk-ant-soak-not-a-key")
        .with_idle_timeout(s.idle_timeout)
        .with_retry(RetryPolicy::default());
    let stats = Arc::new(RunStats::default());
    let started = Instant::now();
    let stop_at = started + s.duration;
    println!(
        "soak: {} agents for {} s against {url} (anthropic-messages; per request 10% cut, \
         10% malformed, 10% 429 Retry-After 1 s, 5% stalled; idle timeout {} s)",
        s.agents,
        s.duration.as_secs(),
        s.idle_timeout.as_secs()
    );
    let (rss0, _) = memory_kib();
    let mut workers = tokio::task::JoinSet::new();
    for id in 0..s.agents {
        workers.spawn(worker(
            id,
            model.clone(),
            options.clone(),
            stop_at,
            stats.clone(),
        ));
    }

    // Progress and memory samples, every 10 s (and the RSS every second for the peak).
    let mut samples: Vec<(u64, u64)> = Vec::new(); // (second, VmRSS KiB)
    let hard_stop = stop_at + s.drain;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_report = 0;
    loop {
        tokio::select! {
            joined = workers.join_next() => {
                if joined.is_none() {
                    break;
                }
            }
            _ = tick.tick() => {
                let secs = started.elapsed().as_secs();
                let (rss, _) = memory_kib();
                samples.push((secs, rss));
                if secs >= last_report + 10 {
                    last_report = secs - secs % 10;
                    println!(
                        "  {secs:>4} s: {} runs, {} requests, RSS {:.1} MiB",
                        stats.runs.load(Ordering::Relaxed),
                        server.requests.load(Ordering::Relaxed),
                        mib(rss)
                    );
                }
                if Instant::now() >= hard_stop {
                    break;
                }
            }
        }
    }
    let still_running = workers.len();
    workers.abort_all();
    let elapsed = started.elapsed();
    let (rss_end, hwm) = memory_kib();

    let runs = stats.runs.load(Ordering::Relaxed);
    let one = stats.one_agent_end.load(Ordering::Relaxed);
    let secs = s.duration.as_secs_f64().max(1e-9);
    let requests = server.requests.load(Ordering::Relaxed);
    println!("\n== soak figures ==");
    println!(
        "agents {}, duration {} s (wall {:.1} s including the drain)",
        s.agents,
        s.duration.as_secs(),
        elapsed.as_secs_f64()
    );
    println!(
        "runs: {runs} ({:.1}/s); tool calls: {} ({:.1}/s); model requests: {requests} ({:.1}/s) over {} connections",
        runs as f64 / secs,
        stats.tool_calls.load(Ordering::Relaxed),
        stats.tool_calls.load(Ordering::Relaxed) as f64 / secs,
        requests as f64 / secs,
        server.connections.load(Ordering::Relaxed),
    );
    println!(
        "server answers: ok {}, cut {}, malformed {}, 429 {}, stalled {}",
        server.ok.load(Ordering::Relaxed),
        server.cut.load(Ordering::Relaxed),
        server.malformed.load(Ordering::Relaxed),
        server.rate_limited.load(Ordering::Relaxed),
        server.stalled.load(Ordering::Relaxed),
    );
    let outcomes = stats.outcomes.lock().unwrap();
    let outcomes: Vec<String> = outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
    println!("run outcomes: {}", outcomes.join(", "));
    println!("runs with exactly one agent_end: {one} of {runs}");
    println!("runs still going at the hard stop: {still_running}");
    // Flatness: the RSS at each quarter of the run (after the first 10% as warm-up).
    let at = |frac: f64| {
        let t = (s.duration.as_secs_f64() * frac) as u64;
        samples
            .iter()
            .find(|(secs, _)| *secs >= t)
            .or(samples.last())
            .map_or(0, |(_, r)| *r)
    };
    let steady: Vec<u64> = samples
        .iter()
        .filter(|(t, _)| *t as f64 >= s.duration.as_secs_f64() * 0.1 && *t <= s.duration.as_secs())
        .map(|(_, r)| *r)
        .collect();
    println!(
        "RSS MiB: start {:.1}; at 10%/25%/50%/75%/100% of the time {:.1}/{:.1}/{:.1}/{:.1}/{:.1}; \
         steady-state min {:.1} max {:.1}; end {:.1}; peak (VmHWM) {:.1}",
        mib(rss0),
        mib(at(0.10)),
        mib(at(0.25)),
        mib(at(0.50)),
        mib(at(0.75)),
        mib(at(1.0)),
        mib(steady.iter().copied().min().unwrap_or(0)),
        mib(steady.iter().copied().max().unwrap_or(0)),
        mib(rss_end),
        mib(hwm),
    );
    let bad = stats.bad.lock().unwrap();
    for b in bad.iter().take(20) {
        println!("BAD: {b}");
    }
    if !bad.is_empty() || still_running > 0 || one != runs {
        println!("soak: FAILED");
        std::process::exit(1);
    }
    println!("soak: ok");
}
