"""CSV for the record files (``--out``, ``--links``): a file whose name ends in ``.csv`` gets a
header line and one CSV line per record, instead of JSON lines.

One record is one line (a blank that would break it — a newline in an error message — is
written as a space), so that a CSV file is cut and read back by lines as a JSON-lines file is
(``--out``'s resume: :mod:`minicrawl.records.output`). A value is written as in JSON, without
the quotes: null is an empty field, true and false are ``true`` and ``false``; a list (a
record's redirect chain) is its JSON text, compact.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Sequence

_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_BREAKS = str.maketrans({"\r": " ", "\n": " ", "\x0b": " ", "\x0c": " ", "\x1c": " ",
                         "\x1d": " ", "\x1e": " ", "\x85": " ", "\u2028": " ", "\u2029": " "})


def is_csv(path: str | os.PathLike[str]) -> bool:
    """A file named ``….csv`` (any case) is written as CSV."""
    return os.fspath(path).lower().endswith(".csv")


def csv_line(values: Iterable[object]) -> str:
    """One CSV line (without its newline) of ``values``."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(
        "" if value is None else ("true" if value else "false") if isinstance(value, bool)
        else str(value).translate(_BREAKS) if isinstance(value, str)
        else _json(value).translate(_BREAKS) if isinstance(value, list | dict) else value
        for value in values)
    return out.getvalue()


def csv_fields(line: str) -> list[str]:
    """The fields of one CSV line (as :func:`csv_line` wrote them)."""
    return next(csv.reader([line]), [])


def header(names: Sequence[str]) -> str:
    """The header line of a CSV file of records with the fields ``names``."""
    return csv_line(names)
