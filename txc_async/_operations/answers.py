"""The decoders of the generated declarations: each reads its answer into the model of its
group (``txc_async._models_generated``), whose module is imported the first time an answer of
that group is read, so that importing the package builds none of them."""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

from .._answers.results import AnswerDecoder

__all__ = ["GeneratedAnswer", "NoAnswer"]

T = TypeVar("T")

_MODELS = "txc_async._models_generated."


def _same(value: T) -> T:
    return value


class GeneratedAnswer:
    """Decodes the success answer of operation ``operation`` into ``WIRE[operation]`` of the
    model module of ``group``; ``write`` and ``secret_answer`` as for
    [`AnswerDecoder`][txc_async._answers.results.AnswerDecoder]."""

    __slots__ = ("_decoder", "group", "operation", "secret_answer", "write")

    def __init__(
        self, group: str, operation: str, *, write: bool, secret_answer: bool = False
    ) -> None:
        self.group = group
        self.operation = operation
        self.write = write
        self.secret_answer = secret_answer
        self._decoder: AnswerDecoder[Any, Any] | None = None

    @property
    def wire_type(self) -> Any:
        """The answer's type (importing its group's models)."""
        module = importlib.import_module(_MODELS + self.group)
        return module.WIRE[self.operation]

    def __call__(self, body: bytes) -> Any:
        """The answer ``body`` read into its model."""
        decoder = self._decoder
        if decoder is None:
            decoder = self._decoder = AnswerDecoder(
                self.wire_type, _same, write=self.write, secret_answer=self.secret_answer
            )
        return decoder(body)


class NoAnswer:
    """The decoder of an operation whose success answer has no body: the result is None (an
    empty body, or any JSON the service may add later; an error body is still read as the
    error it is, since the result is empty)."""

    __slots__ = ("write",)

    def __init__(self, *, write: bool) -> None:
        self.write = write

    def __call__(self, body: bytes) -> None:
        """Nothing to read: the operation succeeded (its status said so)."""
        return None
