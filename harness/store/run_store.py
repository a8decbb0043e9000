"""The results store: one run folder per run.

``results/<run-id>/``
  ``run.json``       metadata: engines (versions, options), tokenizer, limits, machine,
                     Python, git commit, command line, the run's configuration
  ``records.jsonl``  the source of truth: one line per finished (schema, engine) job,
                     appended and flushed (and fsynced) as each job finishes
  ``records.parquet``, ``summary.json``  derived at the end (see :mod:`harness.analysis.metrics`)
  ``workers/``       each worker's stderr (engine warnings, native crash messages)

A published run folder (``results/published/<run-id>/``, what docs/results.md is built
from) keeps ``run.json``, ``summary.json`` and its records compressed as
``records.jsonl.gz`` (and what its summary reads beside them:
:data:`harness.analysis.finalize.PUBLISHED_INPUTS`): it is read in place and never resumed.

Writes are single-writer (the runner process) and one ``write`` per line, so a run
killed at any moment leaves at most one torn last line; :meth:`RunStore.open` skips it
with a warning and truncates it away before appending again.

Formats: ``run.json`` and each record carry a ``format`` number (:data:`RUN_FORMAT`,
:data:`RECORD_FORMAT`; ``summary.json`` carries :data:`SUMMARY_FORMAT`; their shapes are
:mod:`harness.records`). Files without one
are version 1, as written before versions existed; a reader refuses a version it does not
know with a one-line error. Record version 1 kept the case id under ``schema_id``; it is
read as ``case_id``.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import io
import json
import os
import platform
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

from harness.records import (RECORD_FORMAT, RUN_FORMAT, SUMMARY_FORMAT, Record, RecordError,
                             RunMeta, check_record)

__all__ = ["RECORD_FORMAT", "RUN_FORMAT", "SUMMARY_FORMAT", "Record", "RunStore", "StoreError",
           "check_format", "upgrade_record"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]

#: The records of a published run folder (``results/published/<run-id>/``): gzip-compressed
#: ``records.jsonl``, read in place by :meth:`RunStore.open_readonly`.
PUBLISHED_RECORDS = "records.jsonl.gz"

class StoreError(Exception):
    """A run folder that cannot be created, read or written (one-line message)."""


def check_format(version: Any, known: int, path: Path | str) -> None:
    """Raise :class:`StoreError` unless ``version`` is an integer from 1 to ``known``."""
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= known:
        raise StoreError(f"{path}: format version {version!r} is not one this harness reads "
                         f"(1 to {known}); read it with the harness version that wrote it")


def upgrade_record(record: Record, path: Path | str = "records.jsonl") -> Record:
    """A record in the current format (:data:`RECORD_FORMAT`); version 1 kept the case id
    under ``schema_id``."""
    version = record.get("format", 1)
    check_format(version, RECORD_FORMAT, path)
    if version == 1:
        record = {"format": RECORD_FORMAT, **record}
        if "schema_id" in record and "case_id" not in record:
            record["case_id"] = record.pop("schema_id")
    return record


def new_run_id(suite: str) -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{re.sub(r'[^A-Za-z0-9_.-]', '_', suite)}"


#: How the harness's own entry points appear as ``argv[0]``: the console script, ``python -m
#: harness.cli`` (its ``__main__.py``) and an in-process ``-c`` launcher.
_HARNESS_PROGRAMS = ("harness", "__main__.py", "-c")


def command_line(argv: list[str], cwd: Path | None = None) -> list[str]:
    """``argv`` as the user typed it, for ``run.json``: the program as ``harness`` when it
    is one of the harness's own entry points (the console script by any path,
    ``python -m harness.cli``, an in-process ``-c`` launcher), and every absolute path
    below ``cwd`` (default: the current folder) made relative to it, so that no machine's
    folders reach a record or a published document."""
    here = Path(cwd or os.getcwd()).resolve()

    def rel(arg: str) -> str:
        name, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if not value.startswith("/"):
            return arg
        try:
            value = str(Path(value).resolve().relative_to(here)) or "."
        except (ValueError, OSError):
            return arg
        return f"{name}{eq}{value}"

    if not argv:
        return []
    prog = str(argv[0])
    head = ["harness"] if Path(prog).name in _HARNESS_PROGRAMS else [rel(prog)]
    return head + [rel(str(a)) for a in argv[1:]]


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_total_kib"] = int(f.readline().split()[1])
    except OSError:
        pass
    return info


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT,
                             capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


class RunStore:
    """A run folder: metadata, the append-only records file and derived tables."""

    #: Records are fsynced together (group commit) at most this often, seconds: each is
    #: written to the file at once, so a killed run keeps every finished record; only a
    #: machine crash could lose the last ones, which a resume runs again.
    SYNC_INTERVAL_S = 0.05

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.records_path = self.path / "records.jsonl"
        if not self.records_path.exists() and (self.path / PUBLISHED_RECORDS).is_file():
            # a published run folder (results/published/): its records compressed, read only
            self.records_path = self.path / PUBLISHED_RECORDS
        self.meta_path = self.path / "run.json"
        self._fh: io.FileIO | None = None
        self._synced_at = 0.0
        self._unsynced = False

    # -- creation / opening -------------------------------------------------------
    @classmethod
    def create(cls, root: Path, run_id: str, meta: RunMeta) -> "RunStore":
        store = cls(Path(root) / run_id)
        try:
            store.path.mkdir(parents=True, exist_ok=False)
            (store.path / "workers").mkdir()
        except OSError as e:
            raise StoreError(f"{store.path}: cannot create run folder: {e.strerror or e}") from None
        store.write_meta(meta)
        store.records_path.touch()
        return store

    @property
    def published(self) -> bool:
        """True when the records are the compressed ``records.jsonl.gz`` of a published run
        folder, which is read only (never resumed or repaired)."""
        return self.records_path.name == PUBLISHED_RECORDS

    @classmethod
    def open(cls, path: Path) -> "RunStore":
        """Open a run folder to continue it: a torn tail is repaired (see :meth:`repair`)."""
        store = cls.open_readonly(path)
        if store.published:
            raise StoreError(f"{store.records_path}: a published run folder is read only: "
                             "copy it out and decompress records.jsonl.gz to continue it")
        (store.path / "workers").mkdir(exist_ok=True)
        store.repair()
        return store

    @classmethod
    def open_readonly(cls, path: Path) -> "RunStore":
        """Open a run folder for reading only: never repairs or truncates, so it is safe
        on a run that is still going (a torn last line is simply not read)."""
        store = cls(Path(path))
        if not store.path.is_dir():
            raise StoreError(f"{store.path}: no such run folder")
        if not store.meta_path.is_file():
            raise StoreError(f"{store.path}: not a run folder (no run.json)")
        if not store.records_path.is_file():
            raise StoreError(f"{store.records_path}: missing (the run's source of truth)")
        return store

    def read_meta(self) -> RunMeta:
        """``run.json``. Raises :class:`StoreError` if it is unreadable or of a format
        version this harness does not know."""
        try:
            meta = json.loads(self.meta_path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise StoreError(f"{self.meta_path}: unreadable run metadata: {e}") from None
        check_format(meta.get("format", 1) if isinstance(meta, dict) else None, RUN_FORMAT,
                     self.meta_path)
        return meta

    def write_meta(self, meta: RunMeta) -> None:
        """Replace ``run.json`` atomically (a full disk leaves the old one in place)."""
        tmp = self.meta_path.with_suffix(".json.tmp")
        try:
            tmp.write_text(json.dumps({"format": RUN_FORMAT, **meta}, indent=2, default=str))
            os.replace(tmp, self.meta_path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise StoreError(f"{self.meta_path}: cannot write run metadata "
                             f"({e.strerror or e}); free space and retry") from None

    # -- records ----------------------------------------------------------------
    def repair(self) -> int:
        """Drop torn or corrupt lines (a crash mid-write); return how many were dropped.

        Good lines are kept in order; the file is rewritten atomically only when
        something was dropped, so later appends start on a fresh line.
        """
        if not self.records_path.exists():
            self.records_path.touch()
            return 0
        data = self.records_path.read_bytes()
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        good, bad = [], 0
        for line in lines:
            try:
                json.loads(line)
                good.append(line)
            except ValueError:
                bad += 1
        if tail:
            bad += 1
        if bad:
            warnings.warn(
                f"{self.records_path}: skipped {bad} corrupt line(s) (a run killed "
                "mid-write); those jobs will run again",
                stacklevel=2,
            )
            tmp = self.records_path.with_suffix(".jsonl.tmp")
            tmp.write_bytes(b"".join(l + b"\n" for l in good))
            os.replace(tmp, self.records_path)
        return bad

    def records(self) -> Iterator[Record]:
        """All complete records, in the order they finished, in the current format
        (version 1 records read as version 2), each job once: a job recorded twice (a
        runner that ran it again) counts by its first record, with a warning. Raises
        :class:`StoreError` on a record of a format version this harness does not know."""
        opener = gzip.open if self.published else open
        seen: set[tuple[str, str]] = set()
        again = 0
        with opener(self.records_path, "rb") as f:
            for line in f:
                if line.endswith(b"\n"):
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    key = (record.get("engine"), record.get("case_id"))
                    if key in seen:
                        again += 1
                        continue
                    seen.add(key)
                    yield upgrade_record(record, self.records_path)
        if again:
            warnings.warn(f"{self.records_path}: {again} job(s) recorded twice: each counts "
                          "by its first record", stacklevel=2)

    def finished(self) -> set[tuple[str, str]]:
        """(engine label, case id) of every job already recorded."""
        return {(r["engine"], r["case_id"]) for r in self.records()}

    def append(self, record: Record) -> None:
        """Append one record, stamped with :data:`RECORD_FORMAT`: one ``write`` of the whole
        line (a killed process keeps it), fsynced with the records of the last
        :attr:`SYNC_INTERVAL_S` (group commit; :meth:`sync` and :meth:`close` fsync the
        rest). Raises :class:`StoreError` when the line cannot be written (a full disk) or
        is not a record (:func:`harness.records.check_record`), leaving the earlier records
        whole."""
        try:
            check_record(record)
        except RecordError as e:
            raise StoreError(f"{self.records_path}: not written: {e}") from None
        record = {"format": RECORD_FORMAT, **record}
        line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
        start = None
        try:
            if self._fh is None:
                self._fh = open(self.records_path, "ab", buffering=0)
            start = self._fh.seek(0, os.SEEK_END)
            written = self._fh.write(line)
            if written != len(line):  # a short write: the disk filled up mid-line
                raise OSError(28, os.strerror(28))
            self._unsynced = True
            now = time.monotonic()
            if now - self._synced_at >= self.SYNC_INTERVAL_S:
                os.fsync(self._fh.fileno())
                self._synced_at, self._unsynced = now, False
        except OSError as e:
            # cut the partial line away: earlier records stay whole (start set: _fh is open)
            if start is not None and self._fh is not None:
                try:
                    self._fh.truncate(start)
                except OSError:
                    pass  # a torn last line is still repaired on --resume
            raise StoreError(
                f"{self.records_path}: cannot append a record ({e.strerror or e}); "
                "earlier records are intact, resume with --resume after fixing it"
            ) from None

    def sync(self) -> None:
        """fsync the records written since the last fsync."""
        if self._fh is not None and self._unsynced:
            try:
                os.fsync(self._fh.fileno())
            except OSError as e:
                raise StoreError(f"{self.records_path}: cannot sync records "
                                 f"({e.strerror or e}); resume with --resume") from None
            self._synced_at, self._unsynced = time.monotonic(), False

    def close(self) -> None:
        if self._fh is not None:
            try:
                self.sync()
            finally:
                self._fh.close()
                self._fh = None

    def worker_log(self, slot: int) -> Path:
        return self.path / "workers" / f"worker-{slot}.log"
