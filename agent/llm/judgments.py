"""The judgment cache of one run: the same yes/no question about the same content asked once."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Answer:
    """A judged question: yes, no, or None when the model gave neither (the caller defaults)."""

    verdict: bool | None


class JudgmentCache:
    """Answers by question: model, system prompt, user prompt and a content version.

    The prompt already shows what was judged; the version (a file's hash) keeps an answer from
    outliving a change the prompt does not show (a summary of a file whose body changed).
    """

    def __init__(self) -> None:
        self._answers: dict[str, Answer] = {}
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(question: tuple[str, ...]) -> str:
        """A digest of the question's parts."""
        digest = hashlib.sha256()
        for part in question:
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()

    def get(self, question: tuple[str, ...]) -> Answer | None:
        """The answer given before, or None (counted as a hit or a miss)."""
        found = self._answers.get(self.key(question))
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, question: tuple[str, ...], answer: Answer) -> None:
        """Remember the answer to `question`."""
        self._answers[self.key(question)] = answer

    def __len__(self) -> int:
        return len(self._answers)
