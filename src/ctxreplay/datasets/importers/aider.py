"""Aider chat histories (``.aider.chat.history.md``): Markdown, one file holding many sessions.

What Aider writes (``aider/io.py`` ``InputOutput``, every write through ``append_chat_history``):

* ``\\n# aider chat started at YYYY-MM-DD HH:MM:SS\\n\\n`` when the CLI starts (local time): it
  opens a **session block**, which runs to the next such header;
* ``user_input``: the user's words, every line as ``#### <line>`` ending in two spaces (a Markdown
  line break), after a blank line; the lines of one multi-line input are adjacent, two inputs are
  not; an empty input is ``#### <blank>``; slash commands (``/add``, ``/run``, ``/ask …``) are
  written the same way, and so is an answer a confirm group gave for the user (``#### Add file to
  the chat? (Y)es/(N)o/(A)ll… [Yes]: all``);
* ``ai_output``: the model's reply as it streamed, stripped, between blank lines, with its file
  edits (whole-file fences, ``<<<<<<< SEARCH`` / ``=======`` / ``>>>>>>> REPLACE`` blocks) and its
  reasoning between ``<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>`` tags
  (``aider/reasoning_tags.py``);
* ``tool_output`` / ``tool_error`` / ``tool_warning`` / confirm prompts: ``> <line>`` ending in two
  spaces, the CLI's notices: announcements (``Aider v0.86.2``, ``Model: X with whole edit
  format``, ``Main model:`` / ``Editor model:`` / ``Weak model:``, ``Git repo:``, ``Repo-map:``),
  ``Tokens: 1.8k sent, 653 received. Cost: …``, ``Applied edit to x.py``, ``Commit …``, errors and
  tracebacks, ``^C again to exit``, ``Add file to the chat? … [Yes]: y``. A notice holding line
  breaks (``/run`` output in older Aider) is written with ``> `` on its first line only and the
  two spaces on its last; its lines follow an input or a notice with no blank line between,
  which is how they are told from a reply: a reply always follows a blank line.

Files are read line by line (memory follows the largest block), as UTF-8 (a byte-order mark
skipped; bytes that are not UTF-8 reject their block) or UTF-16/32 when a byte-order mark or NUL
bytes say so, with ``\n`` or ``\r\n`` line ends.

Aider's own reader of these files (``aider/utils.py`` ``split_chat_history_markdown``) takes
``#### `` lines as the user, ``> `` lines as tool output and the rest as the assistant. This
importer does the same, and is strict where the format allows: when the block's ``####``/``>``
lines end in the two spaces Aider writes, a ``#### `` or ``> `` line without them is the reply's
own Markdown (a heading, a quote); a file whose trailing spaces were stripped is read leniently.

**What the model saw** (the rule): the user's words are user messages; a reply is an assistant
message (reasoning as a ``reasoning`` part, the rest, edit blocks included, as text: that is what
the model wrote); ``/ask``, ``/code``, ``/architect``, ``/context`` with a question send the
question, so it is the user message. Other commands and the CLI's notices never reach the model:
they are not messages, they are counted in session metadata (model, edit format, versions, files
added and edited, commits, errors, commands). Recorded output the user let into the chat (older
Aider logs ``/run`` output after ``Add the output to the chat? y``; lint errors before ``Attempt to
fix lint errors? y``) is a user message flagged ``command_output``. ``Tokens: X sent, [W cache
write,] [H cache hit,] Y received.`` is the usage of the reply before it (as Aider printed it:
counts of thousands rounded, ``1.8k`` = 1,800).

What the log does not hold, and this importer does not invent: Aider's system prompt, repo map and
the files it sends with every request; the messages it sends itself (``I added these files to the
chat``, lint and test output in recent versions, ``/run`` output, the architect's plan handed to
the editor, the ``/undo`` note): a reply that answers no logged user message is flagged
``unlogged_input``. Aider condenses old turns into a summary when the history grows (``ChatSummary``)
without writing it to this file, so no compaction can be recorded. A reply after a ``^C`` notice
is the part that streamed before the user interrupted (flag ``turn_aborted``). There are no tool
calls in Aider's logs, so none are made.

``/clear`` and ``/reset`` empty the model's context: the block is cut there, each part with a
user message and a reply is a session (``source_session_id`` ``<start time>#<part>`` from the
second on). **Accounting unit**: the session block (the lines from a header to the next), plus the
lines before the first header when they hold anything. A block yields its sessions, or one reject
with its exact bytes: ``empty_session`` when no part holds both a user message and a model reply
(the calls failed, the user quit), ``malformed`` for a file with no header and no conversation.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from ..messages import Message, Part, Session, Usage
from ..rejects import RecordError, Reject, clip
from ..validate import FLAG_TURN_ABORTED
from .base import Importer, importers
from .openai_chat import file_digest
from .records import Record
from .sniffing import decode_bytes

FLAG_UNLOGGED_INPUT = "unlogged_input"
FLAG_COMMAND_OUTPUT = "command_output"

HEADER = "# aider chat started at"
#: the header as Aider writes it (``strftime("%Y-%m-%d %H:%M:%S")``), for detection
_HEADER_SNIFF = re.compile(r"# aider chat started at \d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?\s*$")
_REASONING = re.compile(r"<(thinking-content-[0-9a-f]{32})>(.*?)(?:</\1>|\Z)", re.S)
_CLOSE_ONLY = re.compile(r"\A(.*?)</thinking-content-[0-9a-f]{32}>", re.S)
_NUM = r"[\d.,]+k?"
_TOKENS = re.compile(
    rf"Tokens: (?P<sent>{_NUM}) sent(?:, (?P<write>{_NUM}) cache write)?"
    rf"(?:, (?P<hit>{_NUM}) cache hit)?, (?P<received>{_NUM}) received\."
    r"(?:\s*Cost: \$(?P<cost>\d+(?:\.\d+)?) (?:message|request), "
    r"\$(?P<total>\d+(?:\.\d+)?) session\.)?"
)
_MODEL = re.compile(
    r"(?P<role>Model|Models|Main model|Editor model):\s+(?P<name>\S+)\s+(?:with|using)\s+"
    r"(?P<format>\S+)\s+edit format(?:.*?,\s*weak model\s+(?P<weak>\S+))?"
)
_WEAK = re.compile(r"Weak model:\s+(?P<name>\S+)")
_VERSION = re.compile(r"Aider v(?P<v>\S+)$")
_REPO = re.compile(r"Git repo: (?P<repo>.+?)(?: with (?P<n>[\d,]+) files)?$")
_REPO_MAP = re.compile(r"Repo-map: using (?P<n>\d+) tokens")
_ADDED = re.compile(r"Added (?P<f>.+) to the chat\.?$")
_OUTPUT_ADDED = re.compile(r"Added \d+ lines? of output to the chat\.")
_APPLIED = re.compile(r"Applied edit to (?P<f>.+)$")
_COMMIT = re.compile(r"Commit [0-9a-f]{7,40}\b")
_CWD = re.compile(r"Cur working dir: (?P<d>.+)$")
_GIT_DIR = re.compile(r"Git working dir: (?P<d>.+)$")
_LAUNCH = re.compile(r"\S*\baider(?:\.exe)?(?:\s|$)")
_INTERRUPT = re.compile(r"\^C (?:again to exit|KeyboardInterrupt)")
_ERROR = re.compile(r"(?:litellm\.)?\w*(?:Error|Exception)\b:?|Traceback \(most recent call")
#: a confirm prompt with its answer: ``Question? (Y)es/(N)o… [Default]: answer``, or as older
#: Aider wrote it, ``Question? answer``
_CONFIRM = re.compile(r"(?P<q>.*?)\s*\(Y\)es/\(N\)o[^\[]*\[[^\]]*\]:\s*(?P<a>\S*)\s*$", re.S)
_CONFIRM_OLD = re.compile(r"(?P<q>.*\?)\s+(?P<a>y|n|yes|no)\s*$", re.I)
#: questions whose yes adds logged output to the chat: after (``/run`` in older Aider) or before
_OUTPUT_AFTER = re.compile(r"Add (?:the|command|[\d.]+k tokens of command) output to the chat\?")
_OUTPUT_BEFORE = re.compile(r"(?:Attempt to fix (?:lint|test) errors|Fix lint errors in .*)\?")
_ADD_FILES = re.compile(r"Add (?:file|these files) to the chat\?")
#: commands whose argument is sent to the model as the user's message
_CHAT_COMMANDS = frozenset({"ask", "code", "architect", "context"})
_RESETS = frozenset({"clear", "reset"})
#: the most file names kept in one metadata list
_MAX_NAMES = 50


def _count(text: str | None) -> int | None:
    """A token count as Aider prints it: ``653``, ``1,234``, ``1.8k``, ``11k`` (None: absent or
    not a number)."""
    if text is None:
        return None
    text = text.replace(",", "")
    try:
        return round(float(text[:-1]) * 1000) if text.endswith("k") else int(float(text))
    except (ValueError, OverflowError):
        return None


@dataclass
class _Block:
    """A session block: its lines (text, no line ending) and exact bytes."""

    index: int
    line: int
    header: str | None
    lines: list[str] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    #: a header follows this block (so the file is a chat history even if this block is not)
    followed: bool = False


@dataclass
class _Part:
    """One stretch of a block between context resets (``/clear``): the messages and counters."""

    messages: list[Message] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    commands: Counter[str] = field(default_factory=Counter)
    totals: Counter[str] = field(default_factory=Counter)
    files_added: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    first_error: str | None = None


#: settings a part carries on to the part after a ``/clear`` (the CLI did not restart)
_SETTINGS = (
    "aider_version", "model", "edit_format", "weak_model", "editor_model", "command_line",
    "git_repo", "repo_files", "repo_map_tokens", "cwd", "git_root",
)  # fmt: skip


class _Reader:
    """Turns one block's lines into parts (the state machine of the module docstring)."""

    def __init__(self, block: _Block) -> None:
        self.block = block
        self.parts = [_Part()]
        lines = block.lines[1:] if block.header is not None else block.lines
        self.first = block.line + (1 if block.header is not None else 0)
        self.lines = lines
        self.strict = any(self._prefixed(line) and line.endswith("  ") for line in lines)
        self.pending_input = False  # a visible user message since the last reply
        self.interrupted = False  # a ^C notice since the last user message or reply
        #: the current run's notices no rule explained, with their lines
        self.run: list[tuple[str, int]] = []
        #: output the user let into the chat (after a yes), with its lines
        self.capture: list[tuple[str, int]] | None = None

    @property
    def part(self) -> _Part:
        return self.parts[-1]

    @staticmethod
    def _prefixed(line: str) -> bool:
        return (line.startswith("####") and line[4:5] in ("", " ")) or (
            line.startswith(">") and line[1:2] in ("", " ")
        )

    def _kind(self, line: str) -> str:
        if self._prefixed(line) and (not self.strict or line.endswith("  ")):
            return "user" if line.startswith("####") else "notice"
        return "blank" if not line.strip() else "other"

    def _content(self, line: str, prefix: int) -> str:
        if line.endswith("  "):
            line = line[:-2]
        return line[prefix:]

    def read(self) -> list[_Part]:
        user: list[str] = []
        user_at = 0
        reply: list[str] = []
        reply_at = 0
        notice: list[str] | None = None  # the notice being read (continuation lines join it)
        notice_at = 0
        prev = "blank"  # the kind of the line before
        for i, line in enumerate(self.lines):
            at = self.first + i
            kind = self._kind(line)
            if kind == "other" and prev in ("user", "notice"):
                # Aider writes a reply after a blank line: a line right after an input or a
                # notice is a notice (the first line of one that breaks lines, or more of it)
                if line.startswith(">") and line[1:2] in ("", " "):
                    kind = "notice"
                elif notice is not None:
                    notice.append(line)
                    continue
                else:
                    kind, line = "notice", f"> {line}"
            if notice is not None and kind != "notice":
                self._notice("\n".join(notice), notice_at)
                notice = None
            if kind != "user" and user:
                self._user("\n".join(user), user_at)
                user = []
            if kind in ("user", "notice") and reply:
                self._reply(reply, reply_at)
                reply = []
            if kind == "user":
                if not user:
                    user_at = at
                user.append(self._content(line, 5))
            elif kind == "notice":
                if notice is not None:
                    self._notice("\n".join(notice), notice_at)
                notice, notice_at = [self._content(line, 2)], at
            elif kind == "other":
                if not reply:
                    reply_at = at
                reply.append(line)
            elif reply:  # a blank line inside a reply (one outside ends an input)
                reply.append(line)
            prev = kind
        if notice is not None:
            self._notice("\n".join(notice), notice_at)
        if user:
            self._user("\n".join(user), user_at)
        if reply:
            self._reply(reply, reply_at)
        self._end_run()
        return self.parts

    # --- what each kind of line does -----------------------------------------------------------

    def _end_run(self) -> None:
        """A run of notices ended: output captured after a yes becomes the user's message."""
        if self.capture:
            self._output(self.capture)
        self.capture = None
        self.run = []

    def _output(self, lines: list[tuple[str, int]]) -> None:
        """Logged output the model was given: a user message (``command_output``)."""
        text = "\n".join(t for t, _ in lines)
        self._message("user", [Part.text(text)], lines[0][1], (FLAG_COMMAND_OUTPUT,))

    def _message(
        self, role: str, parts: list[Part], at: int | None, flags: tuple[str, ...] = ()
    ) -> None:
        self.part.messages.append(
            Message(
                role=role, parts=tuple(parts), flags=flags, source_path=f"line {at}" if at else None
            )
        )
        if role == "user":
            self.pending_input = True

    def _user(self, text: str, at: int) -> None:
        stripped = text.strip()
        if "\n" not in stripped and _CONFIRM.match(stripped):
            # a confirm group answering for the user: part of the prompts around it
            self.part.counts["prompt_answers"] += 1
            return
        self._end_run()
        self.interrupted = False
        if stripped in ("", "<blank>"):
            self.part.counts["blank_inputs"] += 1  # Aider sends nothing
            return
        if stripped[0] in "/!":
            first, _, more = stripped.partition("\n")
            word, _, arg = first.partition(" ")
            rest = f"{arg}\n{more}" if more else arg
            name = "run" if word.startswith("!") else word[1:].lower()
            self.part.commands[name or "/"] += 1
            if name in _CHAT_COMMANDS and rest.strip():
                self._message("user", [Part.text(rest.strip())], at)
            elif name in _RESETS:
                self._reset()
            return
        self._message("user", [Part.text(text.strip("\n"))], at)

    def _reset(self) -> None:
        """``/clear``, ``/reset``: the model's context starts again (a new part)."""
        old = self.part
        new = _Part(meta={k: old.meta[k] for k in _SETTINGS if k in old.meta})
        new.models = list(old.models[-1:])
        self.parts.append(new)
        self.pending_input = False

    def _reply(self, lines: list[str], at: int) -> None:
        self._end_run()
        text = "\n".join(lines).strip()
        parts = _reply_parts(text)
        if not parts:
            return
        flags: list[str] = []
        if self.interrupted:
            flags.append(FLAG_TURN_ABORTED)
            self.part.counts["interrupted"] += 1
        if not self.pending_input:
            flags.append(FLAG_UNLOGGED_INPUT)
            self.part.counts["unlogged_inputs"] += 1
        self.part.counts["search_replace_blocks"] += sum(
            1 for line in lines if line.strip() == "<<<<<<< SEARCH"
        )
        self._message("assistant", parts, at, tuple(flags))
        self.pending_input = False
        self.interrupted = False

    def _notice(self, text: str, at: int) -> None:
        part = self.part
        part.counts["notices"] += 1
        first = text.split("\n", 1)[0].strip()
        meta = part.meta
        if self.capture is not None and not _OUTPUT_ADDED.match(first):
            self.capture.append((text, at))  # the command's output, whatever it says
            return
        if m := _TOKENS.match(first):
            self._usage(m)
        elif m := _CONFIRM.match(first) or _CONFIRM_OLD.match(first):
            self._confirm(m.group("q"), m.group("a").lower())
        elif m := _MODEL.match(first):
            role = m.group("role")
            key = "editor_model" if role == "Editor model" else "model"
            meta[key] = m.group("name")
            if key == "model":
                meta["edit_format"] = m.group("format")
                if m.group("name") not in part.models:
                    part.models.append(m.group("name"))
            else:
                meta["editor_edit_format"] = m.group("format")
            if m.group("weak"):
                meta["weak_model"] = m.group("weak").rstrip(",")
        elif m := _WEAK.match(first):
            meta["weak_model"] = m.group("name")
        elif m := _VERSION.match(first):
            meta["aider_version"] = m.group("v")
        elif m := _REPO.match(first):
            meta["git_repo"] = m.group("repo")
            if m.group("n"):
                meta["repo_files"] = int(m.group("n").replace(",", ""))
        elif m := _REPO_MAP.match(first):
            meta["repo_map_tokens"] = int(m.group("n"))
        elif m := _APPLIED.match(first):
            _keep(part.edited, m.group("f"))
        elif _OUTPUT_ADDED.match(first):
            pass
        elif m := _ADDED.match(first):
            _keep(part.files_added, m.group("f"))
        elif _COMMIT.match(first):
            part.counts["commits"] += 1
        elif m := _CWD.match(first):
            meta["cwd"] = m.group("d")
        elif m := _GIT_DIR.match(first):
            meta["git_root"] = m.group("d")
        elif _INTERRUPT.match(first):
            self.interrupted = True
        elif first == "Restored previous conversation history.":
            meta["restored_history"] = True
        elif first.startswith("You can use /undo") or not first:
            pass
        elif _LAUNCH.match(first) and "command_line" not in meta and not part.messages:
            meta["command_line"] = clip(first, 500)
        else:
            if _ERROR.match(first):
                part.counts["errors"] += 1
                part.first_error = part.first_error or clip(first, 300)
            self.run.append((text, at))

    def _confirm(self, question: str, answer: str) -> None:
        yes = answer[:1] in ("y", "a")
        self.part.counts["prompt_answers"] += 1
        if _OUTPUT_AFTER.search(question):
            self.capture = [] if yes else None
        elif _OUTPUT_BEFORE.search(question):
            if yes and self.run:
                self._output(self.run)
        elif _ADD_FILES.search(question) and yes:
            for name, _at in self.run:
                _keep(self.part.files_added, name.strip())
        self.run = []  # the lines before a question were its subject

    def _usage(self, m: re.Match[str]) -> None:
        part = self.part
        sent, received = _count(m.group("sent")), _count(m.group("received"))
        hit, write = _count(m.group("hit")), _count(m.group("write"))
        if sent is None or received is None:
            return  # not numbers: a notice like any other
        part.totals["sent"] += sent
        part.totals["received"] += received
        part.totals["cache_hit"] += hit or 0
        part.totals["cache_write"] += write or 0
        part.counts["requests"] += 1
        if m.group("total"):
            part.meta["cost_usd"] = float(m.group("total"))
        last = part.messages[-1] if part.messages else None
        if last is not None and last.role == "assistant" and last.usage is None:
            usage = Usage(prompt_tokens=sent, cached_tokens=hit, completion_tokens=received)
            part.messages[-1] = replace(last, usage=usage)
        else:
            part.counts["usage_unattached"] += 1


def _keep(names: list[str], name: str) -> None:
    if name and name not in names and len(names) < _MAX_NAMES:
        names.append(name)


def _reply_parts(text: str) -> list[Part]:
    """A reply's parts in order: reasoning between Aider's thinking tags, the rest as text."""
    parts: list[Part] = []
    pos = 0
    closed = _CLOSE_ONLY.match(text)
    if closed and "<thinking-content-" not in closed.group(1):  # the opening tag was lost
        parts.append(Part("reasoning", content=closed.group(1).strip()))
        pos = closed.end()
    for m in _REASONING.finditer(text, pos):
        before = text[pos : m.start()].strip()
        if before:
            parts.append(Part.text(before))
        parts.append(Part("reasoning", content=m.group(2).strip()))
        pos = m.end()
    rest = text[pos:].strip()
    if rest:
        parts.append(Part.text(rest))
    return [p for p in parts if p.type == "text" or p.content]


def _metadata(block: _Block, part: _Part, index: int, total: int) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if block.header is not None:
        meta["started_at"] = block.header
    meta["line"] = block.line
    meta.update(part.meta)
    if len(part.models) > 1:
        meta["models"] = list(part.models)
    if part.totals["sent"] or part.totals["received"]:
        meta["token_totals"] = {k: v for k, v in part.totals.items() if v}
    for key in ("requests", "notices", "prompt_answers", "blank_inputs", "commits", "errors",
                "search_replace_blocks", "unlogged_inputs", "interrupted", "usage_unattached"):  # fmt: skip
        if part.counts[key]:
            meta[key] = part.counts[key]
    if part.commands:
        meta["commands"] = dict(sorted(part.commands.items()))
    if part.files_added:
        meta["files_added"] = list(part.files_added)
    if part.edited:
        meta["edited_files"] = list(part.edited)
    if total > 1:
        meta["cleared"] = {"part": index + 1, "parts": total}
    return meta


#: detection: the text starts with a session header, and has aider's tool-output lines
STRUCTURED_SCORE = 0.95
#: the text starts with a session header
HEADER_SCORE = 0.9
#: a session header after something else was written (outside a code fence)
LATE_HEADER_SCORE = 0.6


@importers.register("aider")
class AiderImporter(Importer):
    """Aider's ``.aider.chat.history.md``: each ``# aider chat started at`` block is a session."""

    suffixes = (".md",)

    def sniff(self, path: Path, head: bytes) -> float:
        text = decode_bytes(head)
        stripped = text.lstrip("\ufeff \t\r\n")
        if not stripped or stripped[0] in "{[":
            return 0.0
        lines = [line.rstrip("\r") for line in stripped.split("\n")]
        if _HEADER_SNIFF.match(lines[0]):
            structured = any(_Reader._prefixed(line) and line.endswith("  ") for line in lines)
            return STRUCTURED_SCORE if structured else HEADER_SCORE
        fenced = False
        for line in lines:
            if line.lstrip().startswith(("```", "~~~")):
                fenced = not fenced
            elif not fenced and _HEADER_SNIFF.match(line):
                return LATE_HEADER_SCORE
        return 0.0

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._digest = file_digest(path)
        found = False
        try:
            with path.open("rb") as f:
                head = f.read(4)
                f.seek(0)
                lines = _wide_lines(f.read()) if _is_wide(head) else _utf8_lines(f)
                for block in _blocks(lines):
                    found = True
                    self.tally.seen += 1
                    yield from self._block(path, block)
        except OSError as e:
            self.tally.seen += 1
            yield Reject(str(path), "unreadable_file", str(e), b"", self.name)
            return
        if not found:
            self.tally.seen += 1
            try:
                data = path.read_bytes()
            except OSError:
                data = b""
            detail = f"the file is empty ({len(data)} bytes)"
            yield Reject(str(path), "empty_file", detail, data, self.name)

    def _block(self, path: Path, block: _Block) -> Iterator[Session | Reject]:
        sid = block.header if block.header is not None else "preamble"
        record = Record(block.index, {"session_id": sid}, b"".join(block.raw), block.line)
        yield from self.guarded(path, record, lambda: self._sessions(path, block))

    def _sessions(self, path: Path, block: _Block) -> list[Session]:
        parts = _Reader(block).read()
        kept = [
            (i, p)
            for i, p in enumerate(parts)
            if any(m.role == "user" for m in p.messages)
            and any(m.role == "assistant" for m in p.messages)
        ]
        if not kept:
            raise RecordError(*_why_empty(block, parts), "$")
        base = block.header if block.header is not None else f"{path.name}:preamble"
        sessions = []
        for i, p in kept:
            sid = base if i == 0 else f"{base}#{i + 1}"
            sessions.append(
                Session(
                    source_format=self.name,
                    source_session_id=sid,
                    messages=p.messages,
                    key=f"{self._digest}:{block.index}:{i}",
                    source_location=str(path),
                    source_record=block.index,
                    workload="aider",
                    metadata=_metadata(block, p, i, len(parts)),
                )
            )
        return sessions


def _why_empty(block: _Block, parts: list[_Part]) -> tuple[str, str]:
    users = sum(1 for p in parts for m in p.messages if m.role == "user")
    replies = sum(1 for p in parts for m in p.messages if m.role == "assistant")
    notices = sum(p.counts["notices"] for p in parts)
    if block.header is None and not block.followed and not users:
        return "malformed", (
            f"not an Aider chat history: no '{HEADER}' header and no '#### ' user line"
        )
    where = "the lines before the first header" if block.header is None else "the session"
    missing = "no user message" if not users else "no model reply"
    detail = f"{where} holds {missing} ({users} user, {replies} assistant messages, "
    detail += f"{notices} CLI notices"
    errors = sum(p.counts["errors"] for p in parts)
    first = next((p.first_error for p in parts if p.first_error), None)
    if errors:
        detail += f", {errors} error{'s' if errors != 1 else ''}; the first: {first}"
    return "empty_session", detail + ")"


_WIDE_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def _is_wide(head: bytes) -> bool:
    """A UTF-16/32 file (byte-order mark, or the NUL bytes of ASCII in those encodings), as
    ``sniffing.decode_bytes`` reads it."""
    if head.startswith(tuple(bom for bom, _ in _WIDE_BOMS)):
        return True
    return len(head) >= 4 and (
        bool(head[0] and not head[1] and not head[3] and head[2])
        or bool(not head[0] and head[1] and not head[2] and head[3])
    )


def _utf8_lines(f: BinaryIO) -> Iterator[tuple[bytes, str]]:
    """The lines of a UTF-8 file as read (bytes that are not UTF-8 kept as surrogates, and so
    rejected with their block)."""
    for raw in f:
        yield raw, raw.decode("utf-8", "surrogateescape")


def _wide_lines(data: bytes) -> Iterator[tuple[bytes, str]]:
    """The lines of a UTF-16/32 file, each with its exact bytes (the encoding is fixed-width, so
    a line's text encodes back to them)."""
    found = next(((b, c) for b, c in _WIDE_BOMS if data.startswith(b)), None)
    bom, codec = found or (b"", "utf-16-le" if data[0] and not data[1] else "utf-16-be")
    width = 4 if "32" in codec else 2
    cut = len(data) - (len(data) - len(bom)) % width
    try:
        text = data[len(bom) : cut].decode(codec, "surrogatepass")
    except UnicodeDecodeError:  # not text in that encoding: read it as bytes
        yield from _utf8_lines(io.BytesIO(data))
        return
    pieces = text.split("\n")
    for i, piece in enumerate(pieces):
        line = piece if i == len(pieces) - 1 else piece + "\n"
        if not line:
            continue
        raw = line.encode(codec, "surrogatepass")
        if i == 0:
            raw = bom + raw
        if i == len(pieces) - 1:
            raw += data[cut:]
        yield raw, line


def _blocks(lines: Iterable[tuple[bytes, str]]) -> Iterator[_Block]:
    """The file's session blocks, line by line (memory follows the largest block); the lines
    before the first header are a block when they hold anything."""
    block = _Block(0, 1, None)
    index = 0
    for number, (raw, text) in enumerate(lines, 1):
        line = text[1:] if number == 1 and text.startswith("\ufeff") else text
        line = line.rstrip("\n").rstrip("\r")
        if line.startswith(HEADER):
            if block.header is not None or any(s.strip() for s in block.lines):
                block.followed = True
                yield block
                index += 1
            block = _Block(index, number, line[len(HEADER) :].strip())
        block.lines.append(line)
        block.raw.append(raw)
    if block.header is not None or any(s.strip() for s in block.lines):
        yield block
