"""What memory_search may show the model: how many turns and characters in all.

The budget is shared by both backends (``recall(..., turns=TURN_BUDGET)``) and by the
tool's formatting (``CHAR_BUDGET``, ``TURN_CHARS``). Facts come first, then turns, then
segments, until the characters run out.
"""

from __future__ import annotations

TURN_BUDGET = 12  # turns shown, neighbours included (recall returns this many hits)
CHAR_BUDGET = 4000  # characters of everything the model reads from one search
TURN_CHARS = 400  # one turn's text at most (a neighbour's: NEIGHBOUR_CHARS)
NEIGHBOUR_CHARS = 160
SEGMENT_CHARS = 240  # one segment's summary at most
