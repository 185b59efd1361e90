"""``companion`` sets the garbage collector as a serving process wants it before it serves
(``graph.setup.collect_less``): a full collection then scans only what turns made since,
not the 300,000 objects of the modules, the UI and the clients, and the young generation
is collected every ``COLLECT_EVERY`` new containers. ``collecting_less`` undoes it after
its block (benches run in test processes)."""

from __future__ import annotations

import gc

from graph.setup import COLLECT_EVERY, collect_less, collecting_less


def test_what_start_up_made_is_in_no_generation_a_collection_scans() -> None:
    before = gc.get_threshold()
    kept = [[n] for n in range(20_000)]  # long-lived containers, like start-up's
    try:
        collect_less()
        assert gc.get_freeze_count() >= len(kept)
        scanned = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
        assert not any(id(item) in scanned for item in kept)
        made_later = [[0]]
        again = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
        assert id(made_later[0]) in again
        assert gc.get_threshold() == (COLLECT_EVERY, *before[1:])
    finally:
        gc.unfreeze()  # the test process goes on: give the collector its objects back
        gc.set_threshold(*before)
    assert gc.get_freeze_count() == 0


def test_collecting_less_gives_the_collector_back_as_it_was() -> None:
    before = gc.get_threshold()
    with collecting_less():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == COLLECT_EVERY != before[0]
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
