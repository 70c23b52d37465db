"""Loopback HTTP server speaking OpenAI chat completions (JSON and SSE), scripted by tests."""

from __future__ import annotations

import contextlib
import html
import itertools
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Messages = list[dict[str, Any]]
Content = str | Callable[[Messages], str]


@dataclass(frozen=True, slots=True)
class Reply:
    """A normal completion; ``content`` may be a function of the request's messages.

    ``model`` is the name the response reports (None echoes the requested one), as OpenAI
    answers a request for "gpt-4o-mini" with a dated snapshot name. ``with_usage`` False sends
    no usage block: in a stream, none even when the request asks for one (as a server that
    ignores ``stream_options`` does).
    """

    content: Content
    finish_reason: str = "stop"
    with_usage: bool = True
    model: str | None = None
    # Streamed replies: the pause before each SSE event (a realistic token rate is ~20-50 ms).
    token_delay_s: float = 0.0
    # When the request asks for ``logprobs``: P("yes") at each yes/no token of the reply (its
    # top_logprobs list both words), every other token certain. None sends no logprobs.
    p_yes: float | None = None


@dataclass(frozen=True, slots=True)
class HttpError:
    """An HTTP error status with an OpenAI-style JSON error body (``message``, ``type`` and
    ``code``), or with ``raw`` as a plain-text body, as a proxy in front of the endpoint
    answers."""

    status: int = 500
    message: str = "internal server error"
    code: str | None = None
    type: str = "server_error"
    raw: str | None = None


@dataclass(frozen=True, slots=True)
class Delay:
    """Sleep (past the client's timeout, typically) and then behave like ``then``."""

    seconds: float
    then: Behaviour = field(default_factory=lambda: Reply("late"))


@dataclass(frozen=True, slots=True)
class MalformedJson:
    """A 200 response whose body is not valid JSON."""

    body: str = '{"id": "cmpl-broken", "choices": [{"message": '


@dataclass(frozen=True, slots=True)
class EmptyChoices:
    """A well-formed completion with an empty ``choices`` list."""


@dataclass(frozen=True, slots=True)
class RawStream:
    """A 200 SSE response whose events carry these JSON texts as written, then ``[DONE]``."""

    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StreamCut:
    """Send the first ``after_chars`` characters of the answer, then drop the connection."""

    content: Content
    after_chars: int = 20


Behaviour = Reply | HttpError | Delay | MalformedJson | EmptyChoices | StreamCut | RawStream


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received (headers lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> Messages:
        messages: Messages = self.body.get("messages", [])
        return messages


_EVIDENCE = re.compile(r'<evidence\b[^>]*?\bid="([^"]*)"[^>]*>\s*(.*?)\s*</evidence>', re.S)


def evidence_blocks(messages: Messages) -> list[tuple[str, str]]:
    """The ``(semantic_id, text)`` of every ``<evidence>`` block in the messages, unescaped."""
    found: list[tuple[str, str]] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            found.extend(
                (html.unescape(sid), html.unescape(text))
                for sid, text in _EVIDENCE.findall(content)
            )
    return found


def cite_first_evidence(messages: Messages) -> str:
    """An honest model: quote the first evidence block and cite it."""
    blocks = evidence_blocks(messages)
    if not blocks:
        return "I cannot answer based on the provided documents."
    semantic_id, text = blocks[0]
    return f"{text.rstrip(' .')} [{semantic_id}]."


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Without this every small response waits for a delayed ACK (~40 ms per call).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean; the server records requests instead."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body: dict[str, Any] = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        owner = self.server.owner
        owner._record(
            RecordedRequest(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
        )
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": "not found", "type": "invalid_request"}})
            return
        # OSError: the client gave up (timeout) and closed the socket; nothing to tell it.
        with contextlib.suppress(OSError):
            self._behave(owner._next_behaviour(), body)

    def _behave(self, behaviour: Behaviour, body: dict[str, Any]) -> None:
        owner = self.server.owner
        messages: Messages = body.get("messages", [])
        stream = bool(body.get("stream"))
        model = str(body.get("model", "fake-model"))
        match behaviour:
            case Delay(seconds=seconds, then=then):
                if owner._stopping.wait(seconds):
                    return
                self._behave(then, body)
            case HttpError(status=status, raw=str() as raw):
                self._send_raw(status, "text/plain", raw.encode())
            case HttpError(status=status, message=message, code=code, type=kind):
                error = {"message": message, "type": kind, "code": code}
                self._send_json(status, {"error": error})
            case MalformedJson(body=text):
                self._send_raw(200, "application/json", text.encode())
            case EmptyChoices():
                self._send_json(200, _completion(model, None, "stop", messages, usage=False))
            case RawStream(chunks=chunks):
                self._stream_raw([f"data: {chunk}\n\n".encode() for chunk in chunks])
            case StreamCut(content=content, after_chars=after):
                text = _render(content, messages)[:after]
                if stream:
                    self._stream(model, text, finish_reason=None, cut=True)
                else:
                    payload = json.dumps(_completion(model, text, "stop", messages)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.close_connection = True
            case Reply(
                content=content,
                finish_reason=finish,
                with_usage=with_usage,
                model=reported,
                token_delay_s=delay,
                p_yes=p_yes,
            ):
                text = _render(content, messages)
                model = reported or model
                if stream:
                    # Like OpenAI: usage in a stream only when the request asks for it.
                    options = body.get("stream_options")
                    asked = isinstance(options, dict) and bool(options.get("include_usage"))
                    usage = _usage(messages, text) if asked and with_usage else None
                    self._stream(
                        model, text, finish_reason=finish, cut=False, delay=delay, usage=usage
                    )
                else:
                    completion = _completion(model, text, finish, messages, usage=with_usage)
                    if p_yes is not None and body.get("logprobs"):
                        completion["choices"][0]["logprobs"] = {"content": _logprobs(text, p_yes)}
                    self._send_json(200, completion)

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(status, "application/json", json.dumps(payload).encode())

    def _send_raw(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(
        self,
        model: str,
        text: str,
        *,
        finish_reason: str | None,
        cut: bool,
        delay: float = 0.0,
        usage: dict[str, int] | None = None,
    ) -> None:
        events = _stream_events(model, text, finish_reason, asked_usage=usage is not None)
        # OpenAI sends the usage chunk right after the one with the finish reason: no pause.
        tail = [_event(model, [], usage=usage)] if usage and finish_reason else []
        self._stream_raw(events, cut=cut, delay=delay, tail=tail)

    def _stream_raw(
        self,
        events: Iterable[bytes],
        *,
        cut: bool = False,
        delay: float = 0.0,
        tail: Iterable[bytes] = (),
    ) -> None:
        """``events`` with ``delay`` before each, then ``tail`` at once."""
        owner = self.server.owner
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        log = StreamLog(time.monotonic())
        owner._streams.append(log)
        paced = itertools.chain(((e, delay) for e in events), ((e, 0.0) for e in tail))
        for event, pause in paced:
            if pause and owner._stopping.wait(pause):
                return
            self._write_chunk(event)  # raises OSError once the client has gone away
            log.events += 1
            log.last_write = time.monotonic()
        log.completed = True
        if cut:
            # Drop the socket without the terminating zero-length chunk: a truncated body.
            self.close_connection = True
            return
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _logprobs(text: str, p_yes: float) -> list[dict[str, Any]]:
    """Token log-probabilities in the OpenAI layout: yes/no tokens uncertain, the rest certain."""
    entries = []
    odds = {"yes": math.log(max(p_yes, 1e-12)), "no": math.log(max(1.0 - p_yes, 1e-12))}
    for token in re.findall(r"\w+|\s+|[^\w\s]", text):
        word = token.lower()
        if word in odds:
            top = [{"token": w, "logprob": lp, "bytes": None} for w, lp in odds.items()]
            entries.append(
                {"token": token, "logprob": odds[word], "bytes": None, "top_logprobs": top}
            )
        else:
            entries.append({"token": token, "logprob": 0.0, "bytes": None, "top_logprobs": []})
    return entries


def _render(content: Content, messages: Messages) -> str:
    return content(messages) if callable(content) else content


def _words(messages: Messages) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)


def _completion(
    model: str, text: str | None, finish_reason: str, messages: Messages, *, usage: bool = True
) -> dict[str, Any]:
    choices = (
        []
        if text is None
        else [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ]
    )
    payload: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }
    if usage:
        payload["usage"] = _usage(messages, text or "")
    return payload


def _usage(messages: Messages, text: str) -> dict[str, int]:
    """Token counts, one token a word."""
    prompt, completion = _words(messages), len(text.split())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _stream_events(
    model: str, text: str, finish_reason: str | None, *, asked_usage: bool = False
) -> Iterator[bytes]:
    """OpenAI's chunks up to the finish reason; when the request asked for usage, each has a
    null ``usage`` (one more chunk, with no choices, then reports it: ``_Handler._stream``)."""
    extra: dict[str, Any] = {"usage": None} if asked_usage else {}
    pieces = re.findall(r"\S+\s*|\s+", text)
    for index, piece in enumerate(pieces):
        delta: dict[str, str] = {"content": piece}
        if index == 0:
            delta["role"] = "assistant"
        yield _event(model, [{"index": 0, "delta": delta, "finish_reason": None}], **extra)
    if finish_reason is not None:
        yield _event(model, [{"index": 0, "delta": {}, "finish_reason": finish_reason}], **extra)


def _event(model: str, choices: list[dict[str, Any]], **fields: Any) -> bytes:
    chunk = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        **fields,
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


@dataclass(slots=True)
class StreamLog:
    """One streamed reply as the server sent it: when, how many events, whether all of them."""

    started: float
    events: int = 0
    last_write: float = 0.0
    completed: bool = False


class FakeOpenAIServer:
    """``POST /v1/chat/completions`` on 127.0.0.1 (port 0) in a background thread.

    Behaviours are consumed in order; the last one repeats. Use as a context manager::

        with FakeOpenAIServer(Reply("Answer [IPC_420_0].")) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k")
    """

    def __init__(self, *behaviours: Behaviour) -> None:
        self._lock = threading.Lock()
        self._behaviours: list[Behaviour] = list(behaviours) or [Reply("")]
        self._served = itertools.count()
        self._requests: list[RecordedRequest] = []
        self._streams: list[StreamLog] = []
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def script(self, *behaviours: Behaviour) -> None:
        """Replace the behaviours; the next request gets the first one."""
        if not behaviours:
            raise ValueError("script() needs at least one behaviour")
        with self._lock:
            self._behaviours = list(behaviours)
            self._served = itertools.count()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def streams(self) -> list[StreamLog]:
        """What each streamed reply sent so far, oldest first."""
        with self._lock:
            return list(self._streams)

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give an OpenAI client (ends in ``/v1``)."""
        if self._httpd is None:
            raise RuntimeError("server is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        """Bind to a free loopback port and serve in a daemon thread."""
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            # A short poll interval keeps shutdown (and so each test's teardown) fast.
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and wake any handler that is sleeping in a ``Delay``."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_behaviour(self) -> Behaviour:
        with self._lock:
            index = next(self._served)
            return self._behaviours[min(index, len(self._behaviours) - 1)]
