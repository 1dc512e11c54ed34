"""A small, stdlib-only helper for pi-engine process extensions (protocol 1).

The protocol is in docs/extension-protocol.md: JSON lines on stdin and stdout. This helper
registers what an extension declares, answers the host's requests by calling the handlers,
and turns the handlers' calls (ctx.select, ctx.notify, ctx.append_entry, ...) into `call`
messages, waiting for each reply. It is single-threaded: while it waits for a reply it keeps
answering the host's other requests (the protocol asks for that), so a handler may be
entered again from inside one of its own calls.

    from pi_extension import Extension

    ext = Extension()

    @ext.on("tool_call")
    def gate(event, ctx):
        if "rm -rf" in event["input"].get("command", ""):
            return {"block": True, "reason": "no"}

    ext.run()

Print to stderr, never to stdout: stdout carries the protocol (the helper points
`sys.stdout` at stderr, so a stray `print` lands in the host's log rather than breaking the
connection).
"""

import json
import sys

PROTOCOL = 1

# The protocol's own stdout; `print` goes to stderr from here on.
_OUT = sys.stdout
sys.stdout = sys.stderr


class HostError(Exception):
    """The host answered a call with an error."""


class Context:
    """pi's `ctx` for one request: what the host said about the session, and the calls."""

    def __init__(self, ext, request_id, snapshot):
        self._ext = ext
        self.request_id = request_id
        snapshot = snapshot or {}
        self.has_ui = bool(snapshot.get("hasUI", False))
        self.cwd = snapshot.get("cwd")
        self.is_idle = bool(snapshot.get("isIdle", True))

    @property
    def cancelled(self):
        """True once the host sent `cancel` for this request."""
        return self.request_id in self._ext._cancelled

    def call(self, method, **params):
        """Calls `method` on the host and returns its result (raises HostError)."""
        params = {k: v for k, v in params.items() if v is not None}
        return self._ext._call(method, params, self.request_id)

    # The UI.
    def select(self, title, options, timeout=None):
        return self.call("ui.select", title=title, options=list(options), timeout=timeout)

    def confirm(self, title, message="", timeout=None):
        return bool(self.call("ui.confirm", title=title, message=message, timeout=timeout))

    def input(self, title, placeholder=None, timeout=None):
        return self.call("ui.input", title=title, placeholder=placeholder, timeout=timeout)

    def editor(self, title, prefill=None):
        return self.call("ui.editor", title=title, prefill=prefill)

    def notify(self, message, type="info"):
        self.call("ui.notify", message=message, type=type)

    def set_status(self, key, text=None):
        self.call("ui.setStatus", key=key, text=text)

    def set_widget(self, key, lines=None):
        self.call("ui.setWidget", key=key, lines=lines)

    def set_title(self, title):
        self.call("ui.setTitle", title=title)

    # Messages and the session.
    def send_message(self, custom_type, content, display=True, details=None,
                     trigger_turn=False, deliver_as=None):
        message = {"customType": custom_type, "content": content, "display": display}
        if details is not None:
            message["details"] = details
        options = {"triggerTurn": trigger_turn}
        if deliver_as:
            options["deliverAs"] = deliver_as
        self.call("sendMessage", message=message, options=options)

    def send_user_message(self, content, deliver_as=None):
        options = {"deliverAs": deliver_as} if deliver_as else None
        self.call("sendUserMessage", content=content, options=options)

    def append_entry(self, custom_type, data=None):
        return self.call("appendEntry", customType=custom_type, data=data)

    def set_session_name(self, name):
        self.call("setSessionName", name=name)

    def set_label(self, entry_id, label=None):
        self.call("setLabel", entryId=entry_id, label=label)

    def exec(self, command, args=(), cwd=None, timeout=None):
        options = {k: v for k, v in (("cwd", cwd), ("timeout", timeout)) if v is not None}
        return self.call("exec", command=command, args=list(args), options=options)

    def get_state(self):
        return self.call("getState")

    def get_flag(self, name):
        return self.call("getFlag", name=name)


class Extension:
    """What an extension registers, and the loop that serves the host."""

    def __init__(self):
        self._events = {}
        self._tools = {}
        self._commands = {}
        self._flags = []
        self._shortcuts = {}
        self._next_call = 0
        self._replies = {}
        self._cancelled = set()
        self.host = {}

    # ----- registration -------------------------------------------------------------

    def on(self, event):
        """Decorates `handler(event, ctx)`: its return value is the event's result."""
        def register(handler):
            self._events.setdefault(event, []).append(handler)
            return handler
        return register

    def tool(self, name, description, parameters, label=None, prompt_snippet=None,
             prompt_guidelines=None, execution_mode=None):
        """Decorates `run(params, ctx, update)`: returns a string or an AgentToolResult
        dict; `update(text_or_dict)` reports progress; an exception is the error result."""
        spec = {"name": name, "description": description, "parameters": parameters}
        for key, value in (("label", label), ("promptSnippet", prompt_snippet),
                           ("promptGuidelines", prompt_guidelines),
                           ("executionMode", execution_mode)):
            if value is not None:
                spec[key] = value

        def register(run):
            self._tools[name] = (spec, run)
            return run
        return register

    def command(self, name, description="", completions=None):
        """Decorates `run(args, ctx)`; `completions(prefix)` returns suggestions."""
        def register(run):
            self._commands[name] = (description, run, completions)
            return run
        return register

    def flag(self, name, type="boolean", default=None, description=None):
        flag = {"name": name, "type": type}
        if default is not None:
            flag["default"] = default
        if description:
            flag["description"] = description
        self._flags.append(flag)

    def shortcut(self, key, description=None):
        """Decorates `run(ctx)`."""
        def register(run):
            self._shortcuts[key] = (description, run)
            return run
        return register

    # ----- the loop -----------------------------------------------------------------

    def run(self):
        """Registers, then serves the host until it closes stdin."""
        self._write({
            "type": "register",
            "protocol": PROTOCOL,
            "events": list(self._events),
            "tools": [spec for spec, _ in self._tools.values()],
            "commands": [{"name": n, "description": d, "completions": c is not None}
                         for n, (d, _, c) in self._commands.items()],
            "flags": self._flags,
            "shortcuts": [{"shortcut": k, "description": d}
                          for k, (d, _) in self._shortcuts.items()],
        })
        while True:
            message = self._read()
            if message is None:
                return
            self._handle(message)

    def _write(self, message):
        _OUT.write(json.dumps(message, separators=(",", ":")) + "\n")
        _OUT.flush()

    def _read(self):
        """The next message, or None when the host closed stdin."""
        while True:
            line = sys.stdin.buffer.readline()
            if not line:
                return None
            if line.strip():
                return json.loads(line)

    def _call(self, method, params, parent):
        self._next_call += 1
        call_id = self._next_call
        self._write({"type": "call", "id": call_id, "parent": parent,
                     "method": method, "params": params})
        # Serve the host's other requests until the reply comes.
        while call_id not in self._replies:
            message = self._read()
            if message is None:
                sys.exit(0)
            self._handle(message)
        reply = self._replies.pop(call_id)
        if "error" in reply:
            raise HostError(reply["error"])
        return reply.get("result")

    def _answer(self, request_id, run):
        try:
            result = run()
        except Exception as e:  # the handler's failure is the host's extension_error
            self._write({"type": "error", "id": request_id, "error": str(e) or repr(e)})
        else:
            self._write({"type": "result", "id": request_id, "result": result})
        finally:
            self._cancelled.discard(request_id)

    def _handle(self, message):
        kind = message.get("type")
        rid = message.get("id")
        if kind == "reply":
            self._replies[rid] = message
        elif kind == "cancel":
            self._cancelled.add(rid)
        elif kind == "hello":
            self.host = message
        elif kind == "event":
            event = message["event"]
            ctx = Context(self, rid, message.get("ctx"))

            def run():
                result = None
                for handler in self._events.get(event["type"], []):
                    result = handler(event, ctx)
                    if result is not None:
                        break
                return result
            self._answer(rid, run)
        elif kind == "tool":
            ctx = Context(self, rid, message.get("ctx"))

            def update(partial):
                if isinstance(partial, str):
                    partial = {"content": [{"type": "text", "text": partial}]}
                self._write({"type": "update", "id": rid, "partialResult": partial})

            def run():
                _, run_tool = self._tools[message["toolName"]]
                result = run_tool(message["params"], ctx, update)
                if isinstance(result, str):
                    result = {"content": [{"type": "text", "text": result}]}
                return result
            self._answer(rid, run)
        elif kind == "command":
            ctx = Context(self, rid, message.get("ctx"))
            self._answer(rid, lambda: self._commands[message["name"]][1](message.get("args", ""), ctx))
        elif kind == "complete":
            self._answer(rid, lambda: self._commands[message["name"]][2](message.get("prefix", "")))
        elif kind == "shortcut":
            ctx = Context(self, rid, message.get("ctx"))
            self._answer(rid, lambda: self._shortcuts[message["shortcut"]][1](ctx))
        else:
            print(f"pi_extension: ignoring a message of type {kind!r}", file=sys.stderr)
