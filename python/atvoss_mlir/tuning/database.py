"""The tuning database: every measured trial, in one SQLite file (the standard
library's sqlite3, not Optuna's storage: the records are keyed by op and
target, exported as JSON lines, and read by the compiler without Optuna).

Tables:
  meta(key, value)   schema_version
  trials(op_key, target_hash, candidate, measured_cycles, estimated_cycles,
         dram_bytes, sram_peak_bytes, strategy, op_label, created)
         one row per measured candidate, unique per (op_key, target_hash,
         candidate)

  choices(op_key, target_hash, candidate, reason)
         the schedule compile takes when it is not the best trial: the
         heuristic's, when the best trial made the whole model slower
         (`atvoss tune` checks the model after tuning its ops)

The record compile takes for an op and a target is its choice, else its
trial with the fewest measured cycles. Each trial is committed on its own,
so an interrupted run keeps every finished trial and a new run skips them.
Two runs may write one file at once: WAL journalling, a busy timeout and
retries on a locked database.

A file that is not a database, or one of another schema version, is an error
naming it; it is never written.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass

from ..diagnostics import Diagnostic, DiagnosticError, SourcePosition
from .space import Candidate

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    op_key TEXT NOT NULL, target_hash TEXT NOT NULL, candidate TEXT NOT NULL,
    measured_cycles INTEGER NOT NULL, estimated_cycles INTEGER,
    dram_bytes INTEGER, sram_peak_bytes INTEGER, strategy TEXT, op_label TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (op_key, target_hash, candidate));
CREATE TABLE IF NOT EXISTS choices (
    op_key TEXT NOT NULL, target_hash TEXT NOT NULL, candidate TEXT NOT NULL,
    reason TEXT, PRIMARY KEY (op_key, target_hash));
"""
FIELDS = ("op_key", "target_hash", "candidate", "measured_cycles", "estimated_cycles",
          "dram_bytes", "sram_peak_bytes", "strategy", "op_label", "created")
CHOICE_FIELDS = ("op_key", "target_hash", "candidate", "reason")


def default_path() -> str:
    """$ATVOSS_TUNING_DB, else tuning.db in the user's cache directory."""
    if os.environ.get("ATVOSS_TUNING_DB"):
        return os.environ["ATVOSS_TUNING_DB"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "atvoss-mlir", "tuning.db")


def _error(path: str, message: str) -> DiagnosticError:
    return DiagnosticError([Diagnostic("error", f"tuning database '{path}': {message}",
                                       position=SourcePosition(path, 1, 1))])


@dataclass(frozen=True)
class TunedSchedule:
    """The best measured schedule of an op, as npu-tile takes it."""
    candidate: Candidate
    measured_cycles: int | None
    op_key: str = ""

    def write(self, op) -> None:
        from mlir import ir
        from ..passes.npu_tile import STAGES_ATTR
        from ..recipes.problem import DATAFLOW_ATTR, LOOP_ORDER_ATTR, TILE_SIZES_ATTR
        c = self.candidate
        op.attributes[TILE_SIZES_ATTR] = ir.DenseI64ArrayAttr.get(list(c.tiles))
        op.attributes[LOOP_ORDER_ATTR] = ir.DenseI64ArrayAttr.get(list(c.order))
        op.attributes[STAGES_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), c.stages)
        if c.dataflow:
            op.attributes[DATAFLOW_ATTR] = ir.StringAttr.get(c.dataflow)

    def fits(self, problem, target) -> bool:
        """Whether the schedule fits the SRAM the op has where it is compiled."""
        from ..passes.tile_cost import working_set
        from ..passes.tile_candidates import reads_resident_whole
        c = self.candidate
        if len(c.tiles) != len(problem.dims) or sorted(c.order) != list(range(len(c.tiles))):
            return False
        return reads_resident_whole(problem, c.tiles) and working_set(
            problem, c.tiles, c.order, c.stages, target.sram_alignment) <= target.max_sram_bytes

    def describe(self) -> str:
        if self.measured_cycles is None:
            return "the heuristic's schedule, kept by the whole-model check"
        return f"measured {self.measured_cycles} cycles on the simulator"


class TuningDatabase:
    def __init__(self, path: str, create: bool = True):
        self.path = path
        if os.path.isdir(path):
            raise _error(path, "is a directory")
        if not os.path.exists(path):
            if not create:
                raise _error(path, "no such file")
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        elif not _is_sqlite(path):
            raise _error(path, "not a tuning database (not an SQLite file); it was left as it is")
        else:  # read it without writing a byte before it is known to be ours
            self._check_schema(path, create)
        self.connection = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        try:
            self._retry(lambda: self.connection.execute("PRAGMA journal_mode=WAL"))
            self._retry(self._create)  # every table exists (IF NOT EXISTS)
        except sqlite3.DatabaseError as error:
            self.connection.close()
            raise _error(path, f"cannot be read: {error}; it was left as it is") from None

    @staticmethod
    def _check_schema(path: str, create: bool) -> None:
        """Refuse an existing file that is not ours: other tables, or another
        schema version (an empty SQLite file is taken)."""
        try:
            connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
        except sqlite3.DatabaseError as error:
            raise _error(path, f"cannot be read: {error}; it was left as it is") from None
        try:
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            if "meta" not in tables:
                if tables:
                    raise _error(path, "not a tuning database (other tables: "
                                       f"{', '.join(sorted(tables))}); it was left as it is")
                if not create:
                    raise _error(path, "holds no tuning records")
                return
            row = connection.execute(
                "SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as error:
            raise _error(path, f"cannot be read: {error}; it was left as it is") from None
        finally:
            connection.close()
        version = int(row[0]) if row and str(row[0]).isdigit() else row
        if version != SCHEMA_VERSION:
            raise _error(path, f"schema version {version}, this atvoss-mlir reads version "
                               f"{SCHEMA_VERSION}; it was left as it is")

    def _create(self):
        with self.connection:
            self.connection.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.strip().split(";"):
                if statement.strip():
                    self.connection.execute(statement)
            self.connection.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                                    (str(SCHEMA_VERSION),))

    @staticmethod
    def _retry(work, attempts: int = 50):
        for attempt in range(attempts):
            try:
                return work()
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) and "busy" not in str(error) \
                        or attempt == attempts - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def close(self) -> None:
        self.connection.close()

    # -- records ---------------------------------------------------------------
    def record(self, op_key: str, target_hash: str, candidate: Candidate, measured,
               strategy: str, op_label: str) -> None:
        row = (op_key, target_hash, candidate.key(), measured.cycles, measured.estimated_cycles,
               measured.dram_bytes, measured.sram_peak_bytes, strategy, op_label, time.time())
        self._insert([row])

    def _insert(self, rows) -> None:
        def work():
            with self.connection:
                self.connection.execute("BEGIN IMMEDIATE")
                self.connection.executemany(
                    f"INSERT OR REPLACE INTO trials ({', '.join(FIELDS)}) VALUES "
                    f"({', '.join('?' * len(FIELDS))})", rows)
        self._retry(work)

    def trials(self, op_key: str, target_hash: str) -> dict:
        """Candidate -> (measured cycles, estimated cycles) of an op's finished trials."""
        rows = self._retry(lambda: self.connection.execute(
            "SELECT candidate, measured_cycles, estimated_cycles FROM trials "
            "WHERE op_key=? AND target_hash=?", (op_key, target_hash)).fetchall())
        return {Candidate.from_key(key): (measured, estimated)
                for key, measured, estimated in rows}

    def choose(self, op_key: str, target_hash: str, candidate: Candidate, reason: str) -> None:
        def work():
            with self.connection:
                self.connection.execute("BEGIN IMMEDIATE")
                self.connection.execute("INSERT OR REPLACE INTO choices VALUES (?, ?, ?, ?)",
                                        (op_key, target_hash, candidate.key(), reason))
        self._retry(work)

    def clear_choice(self, op_key: str, target_hash: str) -> None:
        def work():
            with self.connection:
                self.connection.execute("BEGIN IMMEDIATE")
                self.connection.execute("DELETE FROM choices WHERE op_key=? AND target_hash=?",
                                        (op_key, target_hash))
        self._retry(work)

    def best(self, op_key: str, target_hash: str) -> TunedSchedule | None:
        chosen = self._retry(lambda: self.connection.execute(
            "SELECT c.candidate, t.measured_cycles FROM choices c LEFT JOIN trials t ON "
            "t.op_key=c.op_key AND t.target_hash=c.target_hash AND t.candidate=c.candidate "
            "WHERE c.op_key=? AND c.target_hash=?", (op_key, target_hash)).fetchone())
        if chosen:
            return TunedSchedule(Candidate.from_key(chosen[0]), chosen[1], op_key)
        row = self._retry(lambda: self.connection.execute(
            "SELECT candidate, measured_cycles FROM trials WHERE op_key=? AND target_hash=? "
            "ORDER BY measured_cycles, candidate LIMIT 1", (op_key, target_hash)).fetchone())
        return TunedSchedule(Candidate.from_key(row[0]), row[1], op_key) if row else None

    # -- JSON lines ---------------------------------------------------------------
    def export(self, stream) -> int:
        """Trials, then choices (`"choice": true`), one JSON object a line."""
        rows = self.connection.execute(
            f"SELECT {', '.join(FIELDS)} FROM trials ORDER BY op_key, target_hash, candidate")
        count = 0
        for row in rows:
            stream.write(json.dumps(dict(zip(FIELDS, row)), sort_keys=True) + "\n")
            count += 1
        for row in self.connection.execute("SELECT op_key, target_hash, candidate, reason "
                                           "FROM choices ORDER BY op_key, target_hash"):
            stream.write(json.dumps(dict(zip(CHOICE_FIELDS, row), choice=True),
                                    sort_keys=True) + "\n")
            count += 1
        return count

    def import_(self, stream, source: str = "-") -> int:
        rows, choices = [], []
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                Candidate.from_key(record["candidate"])
                if record.get("choice"):
                    choices.append(tuple(record[name] for name in CHOICE_FIELDS))
                    continue
                row = tuple(record[name] for name in FIELDS)
                if not isinstance(row[3], int):
                    raise ValueError("measured_cycles is not an integer")
            except (ValueError, KeyError, TypeError) as error:
                raise DiagnosticError([Diagnostic(
                    "error", f"{source}:{number}: not a tuning record: {error}")]) from None
            rows.append(row)
        self._insert(rows)
        for choice in choices:
            self.choose(choice[0], choice[1], Candidate.from_key(choice[2]), choice[3])
        return len(rows) + len(choices)


def tuned_lookup(db: TuningDatabase, target):
    """problem -> its best TunedSchedule for `target`, or None (npu-tile's hook)."""
    from .space import op_key, target_hash
    thash = target_hash(target)
    return lambda problem: db.best(op_key(problem), thash)


def _is_sqlite(path: str) -> bool:
    with open(path, "rb") as handle:
        header = handle.read(16)
    return header == b"SQLite format 3\x00" or header == b""
