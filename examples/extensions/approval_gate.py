#!/usr/bin/env python3
"""The seed's approval gate as a process extension (protocol 1, stdlib only).

* `tool_call`: a `bash` command with `rm -rf` runs only after a person says "Yes"; without
  a UI it is blocked.
* the tool `risk_report`: which dangerous patterns a command holds, with a progress update
  per pattern.
* the command `/gate on|off|status`: turns the gate on or off (recorded in the session with
  `appendEntry`) and says so with a notification.
* the flag `--no-gate`: start with the gate off.

Run it from Rust with `ProcessExtension::spawn("approval-gate", "python3",
["examples/extensions/approval_gate.py"], ...)`; see examples/process_extension.rs.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the example

from pi_extension import Extension  # noqa: E402

PATTERNS = [
    ("rm -rf", re.compile(r"\brm\s+-[a-zA-Z]*r[a-zA-Z]*f|\brm\s+-[a-zA-Z]*f[a-zA-Z]*r")),
    ("sudo", re.compile(r"\bsudo\b")),
    ("chmod 777", re.compile(r"\bchmod\s+(-R\s+)?777\b")),
    ("write to a device", re.compile(r">\s*/dev/sd")),
    ("mkfs", re.compile(r"\bmkfs\b")),
]

ext = Extension()
state = {"enabled": True}

ext.flag("no-gate", type="boolean", default=False, description="Start with the approval gate off")


@ext.on("session_start")
def start(event, ctx):
    if ctx.get_flag("no-gate"):
        state["enabled"] = False
    print(f"approval gate: session {event['reason']}, gate {'on' if state['enabled'] else 'off'}",
          file=sys.stderr)


@ext.on("tool_call")
def gate(event, ctx):
    if not state["enabled"] or event["toolName"] != "bash":
        return None
    command = event["input"].get("command", "")
    if not PATTERNS[0][1].search(command):
        return None
    if not ctx.has_ui:
        return {"block": True, "reason": "Dangerous command blocked (no UI for confirmation)"}
    choice = ctx.select(f"⚠️ Dangerous command:\n\n  {command}\n\nAllow?", ["Yes", "No"])
    if choice != "Yes":
        return {"block": True, "reason": "Blocked by user"}
    return None


@ext.tool(
    "risk_report",
    "Say which dangerous patterns (rm -rf, sudo, chmod 777, …) a shell command holds",
    {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command line"}},
        "required": ["command"],
    },
    label="Risk report",
    prompt_snippet="Check a shell command for dangerous patterns",
)
def risk_report(params, ctx, update):
    command = params["command"]
    found = []
    for i, (name, pattern) in enumerate(PATTERNS, 1):
        if pattern.search(command):
            found.append(name)
        update(f"checked {i} of {len(PATTERNS)} patterns")
    text = f"dangerous: {', '.join(found)}" if found else "no dangerous pattern"
    return {"content": [{"type": "text", "text": text}], "details": {"patterns": found}}


def gate_completions(prefix):
    return [{"value": v, "label": v} for v in ("on", "off", "status") if v.startswith(prefix)]


@ext.command("gate", "Turn the approval gate on or off", completions=gate_completions)
def gate_command(args, ctx):
    args = args.strip()
    if args in ("on", "off"):
        state["enabled"] = args == "on"
        ctx.append_entry("approval-gate", {"enabled": state["enabled"]})
    ctx.notify(f"Approval gate is {'on' if state['enabled'] else 'off'}")


if __name__ == "__main__":
    ext.run()
