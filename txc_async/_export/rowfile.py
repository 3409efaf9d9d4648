"""Reward rows in one JSON-lines or CSV file: encoding, appending durably, reading back, and
repairing a last line that an interruption cut. Rows are the wire's strings: no ``Decimal``."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Literal

import msgspec
from msgspec.structs import astuple

from .._backfill.walk import WireReward
from .._errors import TxcError

__all__ = [
    "CSV_COLUMNS",
    "LEGACY_CSV_COLUMNS",
    "OutputFileError",
    "RowFile",
    "count_lines",
    "cut_torn_tail",
    "encode_csv",
    "encode_jsonl",
    "ends_whole",
    "fsync_directory",
    "legacy_rows",
    "read_lines",
    "read_rows",
    "replace_file",
]

#: The columns of outputs written before rewards' status and payouts were read.
LEGACY_CSV_COLUMNS = (
    "miningAccountName", "totalReward", "reward", "fee", "fppsRate", "hashRate", "date",
)
#: The CSV columns: the earlier seven where they were (a reader by position keeps working),
#: then the fields that settle, in the documentation's order of meaning: the status first.
CSV_COLUMNS = (
    *LEGACY_CSV_COLUMNS, "status", "rewardCurrency", "payoutDestination",
    "payoutTransactionHash", "payoutAddress", "payoutTime",
)
CSV_HEADER = (",".join(CSV_COLUMNS) + "\n").encode()
#: How every output begins: the CSV header, or a JSON row's first field.
_OUTPUT_START = {
    "csv": CSV_HEADER,
    "jsonl": b'{"miningAccountName":',
}
_encode_lines = msgspec.json.Encoder().encode_lines
_decode_row = msgspec.json.Decoder(WireReward).decode


class OutputFileError(TxcError):
    """The output cannot be resumed (another backfill, another format, or unreadable rows)."""


def encode_jsonl(rows: Sequence[WireReward]) -> bytes:
    """Rows as JSON lines, each ending with a newline."""
    return _encode_lines(rows)


def _refuse_line_breaks(rows: Sequence[WireReward]) -> None:
    for r in rows:
        for name, text in zip(CSV_COLUMNS, astuple(r), strict=True):
            if isinstance(text, str) and ("\n" in text or "\r" in text):
                # A CSV output is one row per line: that is how it resumes and is verified.
                raise OutputFileError(
                    f"a reward's {name} ({text!r}) holds a line break, which a CSV row cannot "
                    "hold on one line: use --format jsonl or parquet"
                )


def encode_csv(rows: Sequence[WireReward]) -> bytes:
    """Rows as CSV lines (no header), each ending with a newline; a null is an empty field."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    # A WireReward's fields are in CSV_COLUMNS' order, and the csv module writes None as "".
    writer.writerows(map(astuple, rows))
    data = buffer.getvalue().encode()
    # One line a row, unless a field held a line break (quoted by the csv module): then the
    # slow search names it.
    if data.count(b"\n") != len(rows) or b"\r" in data:
        _refuse_line_breaks(rows)
    return data


class RowFile:
    """Appends rows to a JSONL or CSV file, every job's rows to the one file in the order they
    come; ``sync`` (or ``finish``) makes what was written durable."""

    def __init__(self, path: Path, fmt: Literal["jsonl", "csv"]) -> None:
        self._encode = encode_jsonl if fmt == "jsonl" else encode_csv
        if fmt == "csv" and (not path.exists() or path.stat().st_size == 0):
            path.write_bytes(CSV_HEADER)
        self._handle: BinaryIO = path.open("ab")

    def write(self, job: int, rows: Sequence[WireReward]) -> None:
        """Rows of ``job`` (the file does not need to know which)."""
        self._handle.write(self._encode(rows))

    def finish(self, job: int) -> None:
        """Every row written so far, ``job``'s included, reaches the disk."""
        self.sync()

    def sync(self) -> None:
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self.sync()
        self._handle.close()


def ends_whole(path: Path) -> bool:
    """Whether the file is empty or its last line ends with a newline."""
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return True
        handle.seek(size - 1)
        return handle.read(1) == b"\n"


def cut_torn_tail(path: Path) -> None:
    """Cut the last line that an interruption left without its newline. Only once the whole
    lines before it were read as reward rows (``read_rows(..., torn=True)``): any other file is
    refused by that reading and left as it is."""
    with path.open("rb+") as handle:
        pos = handle.seek(0, os.SEEK_END)
        while pos > 0:
            step = min(65536, pos)
            handle.seek(pos - step)
            cut = handle.read(step).rfind(b"\n")
            if cut >= 0:
                handle.truncate(pos - step + cut + 1)
                break
            pos -= step
        else:
            handle.truncate(0)
        handle.flush()
        os.fsync(handle.fileno())


def _whole_lines(handle: BinaryIO, path: Path, fmt: Literal["jsonl", "csv"]) -> Iterator[bytes]:
    """The lines of a file whose last line was cut, less that line; a file of that line alone
    must begin as an output begins (the CSV header, or a JSON row's first field)."""
    for number, line in enumerate(handle, 1):
        if line.endswith(b"\n"):
            yield line
        elif number == 1 and not _OUTPUT_START[fmt].startswith(line[: len(_OUTPUT_START[fmt])]):
            raise OutputFileError(
                f"{path}: its one line (without a newline) is not the start of a reward output"
            )


def read_rows(
    path: Path, fmt: Literal["jsonl", "csv"], *, torn: bool = False
) -> Iterator[WireReward]:
    """The rows of the file, one at a time (the file may hold millions); ``torn``: its last
    line was cut (see `ends_whole`), and is left out."""
    with path.open("rb") as handle:
        yield from _rows(path, fmt, _whole_lines(handle, path, fmt) if torn else handle)


def _rows(path: Path, fmt: Literal["jsonl", "csv"], lines: Iterable[bytes]
          ) -> Iterator[WireReward]:
    for _line, row in _lines_and_rows(path, fmt, lines):
        yield row


def _lines_and_rows(path: Path, fmt: Literal["jsonl", "csv"], lines: Iterable[bytes]
                    ) -> Iterator[tuple[bytes, WireReward]]:
    """Each row line as it is in the file, and the row it holds (a CSV header is neither)."""
    if fmt == "jsonl":
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                yield line, _decode_row(line)
            except msgspec.MsgspecError:
                raise OutputFileError(f"{path}: line {number} is not a reward row") from None
        return
    # A CSV output holds one row per line (a line break in a field is refused when written).
    numbered = enumerate(lines, 1)
    width = 0
    for number, line in numbered:
        fields = _csv_line(path, number, line)
        if number == 1:
            if tuple(fields) not in (CSV_COLUMNS, LEGACY_CSV_COLUMNS):
                raise OutputFileError(f"{path}: the first line is not the reward CSV header")
            width = len(fields)
            continue
        if len(fields) != width:
            raise OutputFileError(f"{path}: line {number} is not a reward row")
        yield line, _csv_row(path, number, fields)


def _csv_line(path: Path, number: int, line: bytes) -> list[str]:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise OutputFileError(f"{path}: line {number} is not UTF-8 text") from None
    return next(csv.reader((text,)), [])


def _csv_row(path: Path, number: int, fields: list[str]) -> WireReward:
    try:
        account, total, reward, fee, rate, hashrate, date, *settling = fields
        if not settling:
            return WireReward(account, total, reward, fee, rate, hashrate, int(date))
        status, currency, destination, tx_hash, address, paid = settling
        return WireReward(
            account, total, reward, fee, rate, hashrate, int(date), status or None,
            currency or None, destination or None, tx_hash or None, address or None,
            int(paid) if paid else None,
        )
    except ValueError:
        raise OutputFileError(f"{path}: line {number} is not a reward row") from None


def read_lines(path: Path, fmt: Literal["jsonl", "csv"]) -> Iterator[tuple[bytes, WireReward]]:
    """Each row of a whole file (no cut last line) with its line as written."""
    with path.open("rb") as handle:
        yield from _lines_and_rows(path, fmt, handle)


def legacy_rows(path: Path, fmt: Literal["jsonl", "csv"]) -> bool:
    """Whether the file was written before rewards' status and payouts were read: a CSV header
    of the seven earlier columns, or a first JSON row without ``status``."""
    with path.open("rb") as handle:
        first = handle.readline()
    if fmt == "csv":
        return first.rstrip(b"\r\n") == ",".join(LEGACY_CSV_COLUMNS).encode()
    if not first.strip():
        return False
    try:
        keys = msgspec.json.decode(first, type=dict[str, object])
    except msgspec.MsgspecError:
        return False
    return "status" not in keys


def replace_file(path: Path, chunks: Iterable[bytes]) -> None:
    """Replace ``path`` by ``chunks`` atomically: written to a temporary file beside it, made
    durable, then renamed over it, so a reader (or a crash) sees the old file or the new one."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with temporary.open("wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def count_lines(path: Path) -> int:
    lines = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines
