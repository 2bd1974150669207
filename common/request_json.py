"""A request body's JSON, read with limits a hostile client cannot push into a server error.

Python's decoder recurses once per level of nesting: a body of 100,000 "[" ends in RecursionError (a 500
where nothing catches it), and a body a few thousand levels deep, though decoded, makes every later walk
over it (serializers, the answers' checks) as deep. No request of this app nests its JSON more than a few
levels, so a body nested deeper than MAX_DEPTH is refused as a whole, like one that is not JSON.
"""

import json

MAX_DEPTH = 32  # levels of arrays and objects; an answer with its reasons nests 4


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def loads(raw: bytes | str) -> object:
    """The JSON value of `raw`; ValueError naming what is wrong (not UTF-8, not JSON, NaN or Infinity,
    nested deeper than MAX_DEPTH)."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw  # UnicodeDecodeError is a ValueError
    if text.count("[") + text.count("{") > MAX_DEPTH:  # could nest too deeply (most bodies cannot)
        try:
            value = json.loads(text, parse_constant=_no_constant)
        except RecursionError:
            raise ValueError(f"is nested more than {MAX_DEPTH} levels deep") from None
        if _depth(value) > MAX_DEPTH:
            raise ValueError(f"is nested more than {MAX_DEPTH} levels deep")
        return value
    return json.loads(text, parse_constant=_no_constant)


def _depth(value: object) -> int:
    """How many levels of arrays and objects `value` nests, walked without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        pending.extend((child, level + 1) for child in children)
    return deepest
