"""MemoryCallLog: a CallLog keeping model-call records in a list."""

from __future__ import annotations

import threading

from agent.models import LLMCallRecord


class MemoryCallLog:
    """Records model calls in memory; ids count up from 1."""

    def __init__(self) -> None:
        self.records: list[LLMCallRecord] = []
        self._lock = threading.Lock()

    def record_llm_call(self, record: LLMCallRecord) -> int:
        """Append a record; returns its id."""
        with self._lock:
            self.records.append(record)
            return len(self.records)

    @property
    def errors(self) -> list[LLMCallRecord]:
        """The records of failed or refused calls."""
        return [r for r in self.records if r.error is not None]
