"""``companion`` moves what start-up made out of the garbage collector's reach before it
serves (``app.ui.freeze_startup_objects``): a full collection then scans only what turns
made since, not the 300,000 objects of the modules, the UI and the clients."""

from __future__ import annotations

import gc

from app.ui import freeze_startup_objects


def test_what_start_up_made_is_in_no_generation_a_collection_scans() -> None:
    kept = [[n] for n in range(20_000)]  # long-lived containers, like start-up's
    try:
        freeze_startup_objects()
        assert gc.get_freeze_count() >= len(kept)
        scanned = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
        assert not any(id(item) in scanned for item in kept)
        made_later = [[0]]
        again = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
        assert id(made_later[0]) in again
    finally:
        gc.unfreeze()  # the test process goes on: give the collector its objects back
    assert gc.get_freeze_count() == 0
