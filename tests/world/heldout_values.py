"""The check that a task and its world use held-out entity values only."""

from __future__ import annotations

from world import entities


def assert_heldout_values(task, world) -> None:
    ids = [("product", world.products), ("customer", world.customers), ("invoice", world.invoices),
           ("course", world.courses), ("activity", world.activities)]
    assert all(entities.split_of(kind, i) == "heldout" for kind, table in ids for i in table), task["id"]
    slots = task["slots"]
    for key in ("name", "address"):
        if key in slots:
            assert entities.split_of(key, slots[key]) == "heldout", task["id"]
    if "size" in slots:
        assert entities.split_of("combo", f"{slots['color']}|{slots['size']}") == "heldout", task["id"]
