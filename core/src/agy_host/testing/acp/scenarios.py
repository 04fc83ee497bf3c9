"""Built-in scenarios of the fake ACP agent, by name.

They reproduce the original project's fake-server scenarios (same texts and
timings, so ported tests keep their expectations) plus the shapes the real
agy ACP server was recorded sending (the ``question`` flow of
``anyagent-rs-antigravity/acp-04-question.jsonl``, the duplicate-id
``tool-diff`` supersede quirk). Each is plain data in the scenario file
format, so ``extends: "<name>"`` in a file, or ``--set``, adjusts any of them.
"""

from __future__ import annotations

from typing import Any

_TICK_FOREVER: dict[str, Any] = {"repeat": {"steps": [{"sleep": 0.15}, {"chunk": "tick"}]}}

_TOOL_DIFF_PENDING: dict[str, Any] = {
    "toolCallId": "33eb71a04aae4d4c9b85081f20ab5169",
    "title": "Run create_file?",
    "kind": "edit",
    "status": "pending",
    "content": [{"newText": "hello\n", "path": "/w/probe.txt", "_meta": {"kind": "add"}, "type": "diff"}],
    "locations": [{"path": "/w/probe.txt"}],
    "rawInput": {"file_path": "/w/probe.txt"},
}

_QUESTION_TOOL: dict[str, Any] = {
    "toolCallId": "interaction_d316f47f",
    "title": "Do you prefer red or blue?",
    "status": "pending",
    "rawInput": {},
}


#: Commands as claude-agent-acp advertises them (``input`` null or ``{hint}``).
_COMMANDS: list[dict[str, Any]] = [
    {
        "name": "compact",
        "description": "Clear conversation history but keep a summary in context",
        "input": {"hint": "optional custom summarization instructions"},
    },
    {"name": "review", "description": "Review a pull request", "input": None},
    {"name": "model", "description": "Set the AI model", "input": {"hint": "model name"}},
]


def _plan(*statuses: str) -> dict[str, Any]:
    steps = [("Read the failing test", "high"), ("Fix the parser", "high"), ("Run the test suite", "medium")]
    return {"plan": [{"content": c, "priority": p, "status": st} for (c, p), st in zip(steps, statuses, strict=True)]}


#: claude-agent-acp 0.48's Edit of one line of ``/w/src/app.ts`` (its Edit
#: tool's ``old_string``/``new_string``: a fragment, no final newline).
_CLAUDE_EDIT = "toolu_01EditAppTs"
_CLAUDE_FRAGMENT: dict[str, Any] = {
    "type": "diff",
    "path": "/w/src/app.ts",
    "oldText": "const value = 1;",
    "newText": "const value = 2;",
}
_CLAUDE_INPUT = {"file_path": "/w/src/app.ts", "old_string": "const value = 1;", "new_string": "const value = 2;"}
#: The Gemini CLI 0.61's permission options.
_GEMINI_OPTIONS: list[dict[str, Any]] = [
    {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
]


def _gemini_asked(call_id: str, title: str, kind: str, end: dict[str, Any]) -> dict[str, Any]:
    """A Gemini CLI call that asks first: no ``tool_call``, the request, then (allowed) its end."""
    call = {"toolCallId": call_id, "status": "pending", "title": title, "content": [], "locations": [], "kind": kind}
    end = {"toolCallId": call_id, "kind": kind, **end}
    return {
        "permission": {
            "tool_call": call,
            "options": _GEMINI_OPTIONS,
            "branches": {"allow": [{"tool_call_update": end}]},
        }
    }


def _answered(text: str) -> list[dict[str, Any]]:
    return [
        {
            "tool_call_update": {
                "toolCallId": "interaction_d316f47f",
                "status": "completed",
                "rawOutput": "Response received",
            }
        },
        {"chunk": text},
    ]


BUILTIN: dict[str, dict[str, Any]] = {
    "happy": {
        "description": 'chunks "HE", "LLO" 20 ms apart, then end_turn',
        "prompt": [{"chunk": "HE"}, {"sleep": 0.02}, {"chunk": "LLO"}, {"stop": "end_turn"}],
    },
    "echo": {
        "description": "answers with the text blocks of the prompt, verbatim",
        "prompt": [{"echo": True}, {"stop": "end_turn"}],
    },
    "permission": {
        "description": 'asks session/request_permission (id 0, allow/deny); allow -> "PER","MIS"; deny -> "DENIED"',
        "prompt": [
            {
                "permission": {
                    "branches": {
                        "allow": [{"chunk": "PER"}, {"chunk": "MIS"}],
                        "reject": [{"chunk": "DENIED"}],
                        "cancelled": [{"chunk": "NO ANSWER"}],
                        "error": [{"chunk": "NO ANSWER"}],
                    }
                }
            },
            {"stop": "end_turn"},
        ],
    },
    "question": {
        "description": "agy's ask_question: interaction_ tool_call + permission whose options are the answers",
        "prompt": [
            {"tool_call": _QUESTION_TOOL},
            {
                "permission": {
                    "tool_call": _QUESTION_TOOL,
                    "options": [
                        {"optionId": "1", "name": "Red", "kind": "allow_once"},
                        {"optionId": "2", "name": "Blue", "kind": "allow_once"},
                    ],
                    "branches": {
                        "1": _answered("Red"),
                        "2": _answered("Blue"),
                        "*": [
                            {
                                "tool_call_update": {
                                    "toolCallId": "interaction_d316f47f",
                                    "status": "failed",
                                    "rawOutput": "No response",
                                }
                            },
                            {"chunk": "No answer"},
                        ],
                    },
                }
            },
            {"stop": "end_turn"},
        ],
    },
    "cancel-unsupported": {
        "description": 'like RC01: chunk "C1", then "tick" every 150 ms forever; session/cancel -> -32601',
        "cancel": "unsupported",
        "prompt": [{"chunk": "C1"}, _TICK_FOREVER],
    },
    "cancel-graceful": {
        "description": 'chunk "C1", then "tick" every 150 ms until session/cancel ends it with stopReason cancelled',
        "cancel": "graceful",
        "prompt": [{"chunk": "C1"}, _TICK_FOREVER],
    },
    "slow": {
        "description": "the prompt never produces output nor completes (a cancel still ends it if graceful)",
        "prompt": [{"hang": True}],
    },
    "load-replay": {
        "description": 'session/load replays "OLD USER" / "OLD REPLY FULL TEXT" first; prompt "LIVE-1","LIVE-2"',
        "load": "replay",
        "prompt": [{"chunk": "LIVE-1"}, {"chunk": "LIVE-2"}, {"stop": "end_turn"}],
    },
    "auth-required": {
        "description": 'session/new -> -32000 "Authentication required" with data.message; authenticate unlocks it',
        "auth_required": True,
        "auth_methods": [
            {"id": "oauth-personal", "name": "Log in with Google", "description": "Log in with your Google account"}
        ],
    },
    "load-fails": {
        "description": 'session/load -> -32000 "unknown session"',
        "load": "fails",
    },
    "park": {
        "description": 'chunk "P1", 2.5 s pause, "P2", end_turn (scale the pause with sleep_scale)',
        "prompt": [{"chunk": "P1"}, {"sleep": 2.5}, {"chunk": "P2"}, {"stop": "end_turn"}],
    },
    "tool-diff": {
        "description": "pending tool_call with a diff, in_progress, completed under a different id, DONE",
        "prompt": [
            {"tool_call": _TOOL_DIFF_PENDING},
            {"tool_call_update": {"toolCallId": "33eb71a04aae4d4c9b85081f20ab5169", "status": "in_progress"}},
            {"tool_call_update": {"toolCallId": "<session>:7", "status": "completed", "rawOutput": "Create probe.txt"}},
            {"chunk": "DONE"},
            {"stop": "end_turn"},
        ],
    },
    "claude-edit": {
        "description": "claude-agent-acp's Edit: a card titled 'Edit', retitled 'Edit src/app.ts', its diff the "
        "edited line without a final newline; permission; completed, then the hunk; EDITED (denied: DENIED)",
        "prompt": [
            {
                "tool_call": {
                    "toolCallId": _CLAUDE_EDIT,
                    "title": "Edit",
                    "kind": "edit",
                    "status": "pending",
                    "content": [],
                    "locations": [],
                    "_meta": {"claudeCode": {"toolName": "Edit"}},
                }
            },
            {
                "tool_call_update": {
                    "toolCallId": _CLAUDE_EDIT,
                    "title": "Edit src/app.ts",
                    "locations": [{"path": "/w/src/app.ts"}],
                }
            },
            {
                "tool_call_update": {
                    "toolCallId": _CLAUDE_EDIT,
                    "content": [_CLAUDE_FRAGMENT],
                    "rawInput": _CLAUDE_INPUT,
                }
            },
            {
                "permission": {
                    "tool_call": {
                        "toolCallId": _CLAUDE_EDIT,
                        "title": "Edit src/app.ts",
                        "content": [_CLAUDE_FRAGMENT],
                        "rawInput": _CLAUDE_INPUT,
                    },
                    "options": [
                        {"optionId": "allow_always", "name": "Always Allow", "kind": "allow_always"},
                        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                    ],
                    "branches": {
                        "allow": [
                            {
                                "tool_call_update": {
                                    "toolCallId": _CLAUDE_EDIT,
                                    "status": "completed",
                                    "rawOutput": "The file /w/src/app.ts has been updated successfully.",
                                }
                            },
                            {
                                "tool_call_update": {
                                    "toolCallId": _CLAUDE_EDIT,
                                    "content": [
                                        {
                                            "type": "diff",
                                            "path": "/w/src/app.ts",
                                            "oldText": "line 1\nconst value = 1;\nline 3",
                                            "newText": "line 1\nconst value = 2;\nline 3",
                                        }
                                    ],
                                    "locations": [{"path": "/w/src/app.ts", "line": 1}],
                                }
                            },
                            {"chunk": "EDITED"},
                        ],
                        "*": [
                            {
                                "tool_call_update": {
                                    "toolCallId": _CLAUDE_EDIT,
                                    "status": "failed",
                                    "content": [
                                        {"type": "content", "content": {"type": "text", "text": "User refused."}}
                                    ],
                                }
                            },
                            {"chunk": "DENIED"},
                        ],
                    },
                }
            },
            {"stop": "end_turn"},
        ],
    },
    "gemini-tools": {
        "description": "the Gemini CLI 0.61's tool calls: a read it does not ask about (tool_call, then its end); "
        "two it asks about first, with no tool_call (the request's title names them; the failed one's end "
        "has none); DONE",
        "prompt": [
            {
                "tool_call": {
                    "toolCallId": "read_file__read_file_1_0",
                    "status": "in_progress",
                    "title": "a.txt",
                    "content": [],
                    "locations": [{"path": "/w/a.txt"}],
                    "kind": "read",
                }
            },
            {
                "tool_call_update": {
                    "toolCallId": "read_file__read_file_1_0",
                    "status": "completed",
                    "title": "a.txt",
                    "content": [],
                    "locations": [{"path": "/w/a.txt"}],
                    "kind": "read",
                }
            },
            _gemini_asked(
                "write_todos__write_todos_2_0",
                "Set 1 todo(s)",
                "other",
                {"status": "completed", "title": "Set 1 todo(s)", "content": [], "locations": []},
            ),
            _gemini_asked(
                "run_shell_command__run_shell_command_3_0",
                "make build",
                "execute",
                {
                    "status": "failed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "spawn make ENOENT"}}],
                },
            ),
            {"chunk": "DONE"},
            {"stop": "end_turn"},
        ],
    },
    "crash-mid-turn": {
        "description": 'chunk "PARTIAL", a stderr line, then exit 3 without answering the prompt',
        "prompt": [{"chunk": "PARTIAL"}, {"crash": {"code": 3, "stderr": "fake: crashing mid-turn"}}],
    },
    "hang-initialize": {
        "description": "never answers initialize",
        "initialize": "hang",
    },
    "exit-before-initialize": {
        "description": "exits 1 with a stderr line when initialize arrives, without answering",
        "initialize": "exit",
        "exit_code": 1,
    },
    "usage": {
        "description": "usage_update (used/size/cost) during the turn and usage in the prompt response",
        "prompt": [
            {"chunk": "U"},
            {"usage": {"used": 1234, "size": 200000, "cost": {"amount": 0.0123, "currency": "USD"}}},
            {
                "prompt_usage": {
                    "inputTokens": 1000,
                    "outputTokens": 234,
                    "cachedReadTokens": 500,
                    "cachedWriteTokens": 100,
                    "totalTokens": 1834,
                }
            },
            {"stop": "end_turn"},
        ],
    },
    "plan": {
        "description": "available_commands_update with the session/new answer (as Claude and the Gemini CLI do), "
        "then a plan sent and updated twice while it answers 'Done: ' and the prompt's text",
        "session_updates": [{"sessionUpdate": "available_commands_update", "availableCommands": _COMMANDS}],
        "prompt": [
            _plan("in_progress", "pending", "pending"),
            {"chunk": "Reading. "},
            _plan("completed", "in_progress", "pending"),
            {"chunk": "Fixed. "},
            _plan("completed", "completed", "completed"),
            {"echo": "Done: "},
            {"stop": "end_turn"},
        ],
    },
    "flood": {
        "description": "flood_count (default 1000) agent_message_chunk notifications of flood_text, then end_turn",
        "prompt": [{"flood": True}, {"stop": "end_turn"}],
    },
    "prompt-error": {
        "description": "session/prompt answers a JSON-RPC error (-32603 with data)",
        "prompt": [
            {"chunk": "E"},
            {"error": {"code": -32603, "message": "Internal error", "data": {"details": "fake failure"}}},
        ],
    },
    "slash": {
        "description": "a prompt whose first block starts with /context, /compact or /review runs it as a "
        "command ('ran /NAME: ' and the prompt's text, as claude-agent-acp and codex-acp do); "
        "any other prompt is echoed",
        "slash_commands": {
            name: [{"echo": f"ran /{name}: "}, {"stop": "end_turn"}] for name in ("context", "compact", "review")
        },
        "prompt": [{"echo": True}, {"stop": "end_turn"}],
    },
}

__all__ = ["BUILTIN"]
