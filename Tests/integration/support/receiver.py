"""A real webhook receiver on 127.0.0.1 that records Standard Webhooks deliveries and checks their
signatures with the `standardwebhooks` package.

    with WebhookReceiver(secret="whsec_...") as receiver:
        receiver.respond_with(500, times=3, retry_after=1)   # then the default 200
        ...  # configure transferd's delegate with receiver.url and the same secret
        done = receiver.wait_for(lambda ds: [d for d in ds if d.json["type"] == "task.completed"])
        assert all(d.valid for d in receiver.deliveries)

Every POST (to any path; `url` ends in /webhook) is a `Delivery`. Answers come from the queue filled by
`respond_with()`, then 200 with an empty body. Other methods get 405.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from standardwebhooks import Webhook

from .origin import LoopbackHandler, LoopbackService

T = TypeVar("T")


@dataclass(eq=False)
class Delivery:
    """One POST the receiver got, and how it answered."""

    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    json: Any  # the parsed body, None when it is not JSON
    received_monotonic: float  # time.monotonic()
    received_wall: float  # time.time()
    valid: bool | None  # signature verified; None when the receiver has no secret
    error: str | None  # why verification failed
    status: int  # the status the receiver answered with

    @property
    def webhook_id(self) -> str | None:
        return self.headers.get("webhook-id")

    @property
    def webhook_timestamp(self) -> str | None:
        return self.headers.get("webhook-timestamp")

    @property
    def webhook_signature(self) -> str | None:
        return self.headers.get("webhook-signature")


@dataclass
class _Response:
    status: int
    times: int | None  # None: for every delivery from now on
    retry_after: str | None
    delay: float


class _ReceiverHandler(LoopbackHandler):
    """Records POSTs as deliveries and answers as the receiver's queue says."""

    def respond(self) -> None:
        if self.command != "POST":
            self.discard_body()
            self.send_body(405, headers=[("Allow", "POST")])
            return
        received = time.monotonic(), time.time()
        body = b"".join(self.iter_body())
        response = self.server.service._receive(self.path, self.headers, body, received)
        self.pause(response.delay)
        headers = [("Retry-After", response.retry_after)] if response.retry_after is not None else []
        self.send_body(response.status, headers=headers)


class WebhookReceiver(LoopbackService):
    """Webhook endpoint for the tests; see the module docstring."""

    handler_class = _ReceiverHandler
    DEFAULT = _Response(200, None, None, 0.0)

    def __init__(self, secret: str | None = None):
        """With a `secret` ("whsec_..."), every delivery's signature is verified."""
        super().__init__()
        self.secret = secret
        self._webhook = Webhook(secret) if secret else None
        self._changed = threading.Condition()
        self._deliveries: list[Delivery] = []
        self._responses: deque[_Response] = deque()

    @property
    def url(self) -> str:
        return self.base_url + "/webhook"

    @property
    def deliveries(self) -> list[Delivery]:
        with self._changed:
            return list(self._deliveries)

    def respond_with(self, status: int, times: int | None = 1, retry_after: float | str | None = None,
                     delay: float = 0.0) -> None:
        """Queue an answer for the next `times` deliveries (None: all from then on): `status`, a
        Retry-After header when given, after waiting `delay` seconds (the delivery is recorded
        before the wait)."""
        if times is not None and times < 1:
            raise ValueError("times must be at least 1, or None")
        retry = None if retry_after is None else str(retry_after)
        with self._changed:
            self._responses.append(_Response(status, times, retry, delay))

    def clear_responses(self) -> None:
        """Forget the queued answers: every delivery from now on gets the default 200."""
        with self._changed:
            self._responses.clear()

    def wait_for(self, predicate: Callable[[list[Delivery]], T], timeout: float = 10.0) -> T:
        """Wait until `predicate(deliveries)` is truthy and return its value; TimeoutError after
        `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (result := predicate(list(self._deliveries))):
                left = deadline - time.monotonic()
                if left <= 0:
                    summary = [(d.status, d.webhook_id, d.valid) for d in self._deliveries]
                    raise TimeoutError(f"no match after {timeout} s; deliveries (status, id, valid): {summary}")
                self._changed.wait(left)
            return result

    def _receive(self, path: str, headers, body: bytes, received: tuple[float, float]) -> _Response:
        """Record a delivery and pick its answer (called by the handler)."""
        lowered = {name.lower(): value for name, value in headers.items()}
        valid, error = self._verify(body, lowered)
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        with self._changed:
            response = self._next_response()
            self._deliveries.append(Delivery(path, lowered, body, document, *received, valid, error,
                                             response.status))
            self._changed.notify_all()
        return response

    def _next_response(self) -> _Response:
        if not self._responses:
            return self.DEFAULT
        response = self._responses[0]
        if response.times is not None:
            response.times -= 1
            if response.times <= 0:
                self._responses.popleft()
        return response

    def _verify(self, body: bytes, headers: dict[str, str]) -> tuple[bool | None, str | None]:
        if self._webhook is None:
            return None, None
        try:
            self._webhook.verify(body, headers, json_parse=False)
            return True, None
        except Exception as error:  # the library raises several types for malformed input
            return False, f"{type(error).__name__}: {error}"
