use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

use super::*;
use crate::ApiProvider;
use crate::extensions::{Extension, ToolCallVerdict};
use crate::providers::faux::{FauxProvider, FauxResponse};
use crate::session::SessionManager;
use crate::tools::BuiltinTools;

/// The editor's end of the connection.
struct Client {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
}

impl Client {
    async fn send(&mut self, value: Value) {
        let mut line = value.to_string();
        line.push('\n');
        self.input.write_all(line.as_bytes()).await.unwrap();
    }

    async fn send_raw(&mut self, text: &str) {
        self.input.write_all(text.as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.output.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("the agent is still there");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Lines up to the response to request `id` (included).
    async fn until_response(&mut self, id: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = self.next().await;
            let done = line.get("method").is_none() && line["id"] == id;
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
}

/// An agent on the faux provider whose sessions have the built-in tools in `dir` and a
/// gate that asks before each call; the running mode's future and the editor's end.
fn agent(faux: &FauxProvider, dir: &Path) -> (tokio::task::JoinHandle<AcpExit>, Client) {
    let (faux, dir) = (faux.clone(), dir.to_owned());
    let factory = move |setup: Arc<AcpSessionSetup>| {
        let (faux, dir) = (faux.clone(), dir.clone());
        async move {
            let mut tools = BuiltinTools::new(&dir);
            if let Some(fs) = setup.file_system() {
                tools = tools.with_fs(fs);
            }
            let gate = Extension::new("gate", |pi| {
                pi.on_tool_call(|call, ctx| async move {
                    let ok = ctx
                        .ui()
                        .confirm(&format!("Allow {}?", call.tool_name), "it writes")
                        .await;
                    Ok((!ok).then(|| ToolCallVerdict::block("Blocked by user")))
                });
            });
            let stream = faux.clone();
            AgentSession::builder(SessionManager::in_memory(setup.cwd().to_string_lossy()))
                .default_model(faux.model())
                .stream_fn(move |m, c, o| stream.stream(m, c, o))
                .tools(tools.all())
                .extension(gate)
                .extension_ui_arc(setup.extension_ui())
                .build()
                .map_err(|e| AcpSetupError::Failed(e.to_string()))
        }
    };
    let (input, agent_in) = tokio::io::duplex(1 << 20);
    let (agent_out, output) = tokio::io::duplex(1 << 20);
    let running = tokio::spawn(run(factory, agent_in, agent_out, AcpOptions::new()));
    let client = Client {
        input,
        output: BufReader::new(output).lines(),
    };
    (running, client)
}

fn update_kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["method"] == "session/update")
        .map(|l| {
            l["params"]["update"]["sessionUpdate"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

async fn open(client: &mut Client, dir: &Path, fs: bool) -> String {
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs}}}}),
        )
        .await;
    let init = client.next().await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
            "params": {"cwd": dir, "mcpServers": []}}))
        .await;
    let created = client.next().await;
    created["result"]["sessionId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_prompt_streams_asks_writes_through_the_editor_and_ends_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "call-1",
        "write",
        json!({"path": "a.txt", "content": "hi\n"}),
    ));
    faux.push(FauxResponse::text("All done."));
    let (running, mut client) = agent(&faux, dir.path());
    let session = open(&mut client, dir.path(), true).await;
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
            "sessionId": session, "prompt": [
                {"type": "text", "text": "write "},
                {"type": "resource_link", "uri": "file:///x/b.txt", "name": "b.txt"}]}}),
        )
        .await;

    // The gate's question is about the pending call.
    let mut seen = Vec::new();
    let ask = loop {
        let line = client.next().await;
        if line["method"] == "session/request_permission" {
            break line;
        }
        seen.push(line);
    };
    assert_eq!(update_kinds(&seen), ["tool_call", "tool_call_update"]);
    let call = &seen[0]["params"]["update"];
    assert_eq!(call["toolCallId"], "call-1");
    assert!(
        call.get("status").is_none(),
        "pending, the default, is left out: {call}"
    );
    assert_eq!(call["content"][0]["type"], "diff");
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "call-1");
    assert_eq!(ask["params"]["toolCall"]["title"], "Allow write?");
    assert_eq!(ask["params"]["options"][0]["kind"], "allow_once");
    client
        .send(json!({"jsonrpc": "2.0", "id": ask["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}))
        .await;

    // The write goes through the editor.
    let write = loop {
        let line = client.next().await;
        if line["method"] == "fs/write_text_file" {
            break line;
        }
    };
    let path = dir.path().join("a.txt");
    assert_eq!(write["params"]["path"], path.to_str().unwrap());
    assert_eq!(write["params"]["content"], "hi\n");
    assert_eq!(write["params"]["sessionId"], session.as_str());
    client
        .send(json!({"jsonrpc": "2.0", "id": write["id"], "result": null}))
        .await;
    assert!(!path.exists(), "the editor wrote it, not the agent");

    let rest = client.until_response(2).await;
    assert_eq!(rest.last().unwrap()["result"]["stopReason"], "end_turn");
    let done = rest
        .iter()
        .find(|l| l["params"]["update"]["status"] == "completed")
        .unwrap();
    assert_eq!(done["params"]["update"]["content"][0]["type"], "diff");
    let text: String = rest
        .iter()
        .filter(|l| l["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|l| l["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "All done.");
    // The prompt as pi's input: the link as `@path`.
    let asked = faux.requests()[0].context.messages[0].clone();
    assert_eq!(
        serde_json::to_value(&asked).unwrap()["content"][0]["text"],
        "write @/x/b.txt"
    );

    drop(client);
    assert_eq!(running.await.unwrap().exit_code(), 0);
}

#[tokio::test]
async fn a_rejected_call_fails_and_a_cancel_ends_the_prompt_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (faux, mut handle) = FauxProvider::with_handle();
    faux.push(FauxResponse::tool_call(
        "call-1",
        "write",
        json!({"path": "a.txt", "content": "hi\n"}),
    ));
    faux.push(FauxResponse::text("Not written."));
    let (running, mut client) = agent(&faux, dir.path());
    let session = open(&mut client, dir.path(), false).await;
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
        )
        .await;
    let ask = loop {
        let line = client.next().await;
        if line["method"] == "session/request_permission" {
            break line;
        }
    };
    client
        .send(json!({"jsonrpc": "2.0", "id": ask["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}}))
        .await;
    let lines = client.until_response(2).await;
    let failed = lines
        .iter()
        .find(|l| l["params"]["update"]["status"] == "failed")
        .unwrap();
    assert!(failed.to_string().contains("Blocked by user"), "{failed}");
    assert!(!dir.path().join("a.txt").exists());
    assert_eq!(lines.last().unwrap()["result"]["stopReason"], "end_turn");

    // The next call streams until the editor cancels it.
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}}),
        )
        .await;
    let mut call = handle.next_call().await.unwrap().into_reply();
    call.start();
    call.text_delta("Start");
    loop {
        let line = client.next().await;
        if line["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
        )
        .await;
    let lines = client.until_response(3).await;
    assert_eq!(lines.last().unwrap()["result"]["stopReason"], "cancelled");
    drop(call);

    drop(client);
    assert_eq!(running.await.unwrap().exit_code(), 0);
}

#[tokio::test]
async fn bad_lines_unknown_methods_and_sessions_are_json_rpc_errors() {
    let dir = tempfile::tempdir().unwrap();
    let faux = FauxProvider::new();
    let (running, mut client) = agent(&faux, dir.path());
    client.send_raw("{not json\n").await;
    let parse = client.next().await;
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    client.send_raw("[1,2]\n\n").await;
    assert_eq!(client.next().await["error"]["code"], -32600);
    client
        .send(json!({"jsonrpc": "2.0", "id": "a", "method": "nope", "params": {}}))
        .await;
    let unknown = client.next().await;
    assert_eq!(
        (unknown["id"].clone(), unknown["error"]["code"].clone()),
        (json!("a"), json!(-32601))
    );
    client
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {"cwd": 3}}))
        .await;
    assert_eq!(client.next().await["error"]["code"], -32602);
    client
        .send(json!({"jsonrpc": "2.0", "id": 8, "method": "session/new",
            "params": {"cwd": "relative", "mcpServers": []}}))
        .await;
    assert_eq!(client.next().await["error"]["code"], -32602);
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 9, "method": "session/prompt",
            "params": {"sessionId": "gone", "prompt": []}}),
        )
        .await;
    let missing = client.next().await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    // A notification nobody knows is ignored; an answer to nothing too.
    client
        .send(json!({"jsonrpc": "2.0", "method": "x/y", "params": {}}))
        .await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        .await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 10, "method": "authenticate", "params": {"methodId": "api-key"}}))
        .await;
    assert_eq!(client.next().await["result"], json!({}));
    drop(client);
    assert_eq!(running.await.unwrap().exit_code(), 0);
}

#[tokio::test]
async fn a_loaded_session_replays_its_conversation_first() {
    let dir = tempfile::tempdir().unwrap();
    let faux = FauxProvider::new();
    let (faux2, dir2) = (faux.clone(), dir.path().to_owned());
    // The factory reopens a session that holds a finished exchange with a tool call.
    let factory = move |setup: Arc<AcpSessionSetup>| {
        let (faux, dir) = (faux2.clone(), dir2.clone());
        async move {
            assert_eq!(setup.session_to_load(), Some("s-1"));
            let stream = faux.clone();
            faux.push(FauxResponse::tool_call("c1", "ls", json!({"path": "."})));
            faux.push(FauxResponse::text("Here it is."));
            let session = AgentSession::builder(SessionManager::in_memory(dir.to_string_lossy()))
                .default_model(faux.model())
                .stream_fn(move |m, c, o| stream.stream(m, c, o))
                .tools(BuiltinTools::new(&dir).all())
                .build()
                .map_err(|e| AcpSetupError::Failed(e.to_string()))?;
            session.set_active_tools(&["ls".to_owned()]);
            session.prompt("list").await.unwrap().into_result().unwrap();
            Ok(session)
        }
    };
    let (input, agent_in) = tokio::io::duplex(1 << 20);
    let (agent_out, output) = tokio::io::duplex(1 << 20);
    let running = tokio::spawn(run(factory, agent_in, agent_out, AcpOptions::new()));
    let mut client = Client {
        input,
        output: BufReader::new(output).lines(),
    };
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/load",
            "params": {"sessionId": "s-1", "cwd": dir.path(), "mcpServers": []}}))
        .await;
    let lines = client.until_response(1).await;
    assert_eq!(
        update_kinds(&lines),
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(lines[1]["params"]["update"]["title"], "List .");
    assert_eq!(lines[2]["params"]["update"]["status"], "completed");
    assert!(lines.last().unwrap()["result"].is_object());
    drop(client);
    assert_eq!(running.await.unwrap().exit_code(), 0);
}

#[test]
fn prompts_become_pis_input() {
    let blocks: Vec<acp::ContentBlock> = serde_json::from_value(json!([
        {"type": "text", "text": "Look at"},
        {"type": "resource_link", "uri": "file:///src/main.rs", "name": "main.rs"},
        {"type": "text", "text": "and this:"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "A"}},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    ]))
    .unwrap();
    let PromptInput::Text { text, images } = prompt_input(&blocks) else {
        panic!()
    };
    assert_eq!(
        text,
        "Look at @/src/main.rs and this:\n<context ref=\"file:///a.txt\">\nA\n</context>"
    );
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].mime_type, "image/png");
}

#[test]
fn exit_codes() {
    let exit = |stopped, input: Option<Arc<std::io::Error>>, output| AcpExit {
        stopped,
        input,
        output,
    };
    assert_eq!(exit(None, None, Ok(())).exit_code(), 0);
    assert_eq!(exit(Some(143), None, Ok(())).exit_code(), 143);
    let failed = Some(Arc::new(std::io::Error::other("x")));
    assert_eq!(exit(None, failed, Ok(())).exit_code(), 1);
}
