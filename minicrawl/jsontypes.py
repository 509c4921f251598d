"""Types of JSON data: what ``json.dumps`` writes and ``json.loads`` reads back.

``JSON`` is a JSON object: the stats a crawl ends with, ``--redis --status``, the configuration a
``--state`` directory is bound to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

#: A JSON value. Arrays and objects are read-only views (``Sequence``, ``Mapping``) so that a
#: ``list[str]`` or a ``dict[str, int]`` is one too; ``json.loads`` gives lists and dicts.
JSONValue: TypeAlias = (
    "str | int | float | bool | None | Sequence[JSONValue] | Mapping[str, JSONValue]")
#: A JSON object, as built or read: a dict of JSON values.
JSON: TypeAlias = dict[str, JSONValue]
