"""The profile: text values, None removes a key."""

from __future__ import annotations

from memory import AsyncStore


async def test_profile_values_are_text_and_none_removes_a_key(store: AsyncStore) -> None:
    assert await store.profile() == {}
    await store.set_profile({"persona": "journal", "latitude": -8.5, "days": 3})
    assert await store.profile() == {"persona": "journal", "latitude": "-8.5", "days": "3"}
    await store.set_profile({"persona": "coach", "days": None, "missing": None})
    assert await store.profile() == {"persona": "coach", "latitude": "-8.5"}
