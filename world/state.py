"""The world an agent acts on: a shop (products, cart, orders) and a back office
(customers, invoices, courses, activities), generated deterministically from a seed.

`make_world(seed, split)` builds the background; a task adds its own scenario entities
with `World.apply(setup)` (see tasks.py), so `world_for(task)` rebuilds the exact starting
state from the task's JSON. Only values of the world's split are ever drawn.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from world import entities

BACKGROUND = {"products": 8, "customers": 6, "courses": 5, "activities": 5}


@dataclass
class World:
    seed: int
    split: str
    products: dict[str, dict[str, Any]] = field(default_factory=dict)   # id -> style, color, price, stock{size: n}
    customers: dict[str, dict[str, str]] = field(default_factory=dict)  # id -> name, email
    invoices: dict[str, dict[str, Any]] = field(default_factory=dict)   # id -> customer, amount, status, description
    courses: dict[str, int] = field(default_factory=dict)               # code -> seats left
    activities: dict[str, str] = field(default_factory=dict)            # id -> status
    cart: list[list[Any]] = field(default_factory=list)                 # [product_id, size, quantity]
    orders: list[dict[str, Any]] = field(default_factory=list)
    registrations: list[list[str]] = field(default_factory=list)        # [student_name, course_code]
    _id_rngs: dict[str, random.Random] = field(default_factory=dict, repr=False)

    # -- ids ---------------------------------------------------------------------------------
    def used_ids(self, kind: str) -> set[str]:
        if kind == "product":
            return set(self.products)
        if kind == "customer":
            return set(self.customers)
        if kind == "invoice":
            return set(self.invoices)
        if kind == "order":
            return {o["id"] for o in self.orders}
        if kind == "activity":
            return set(self.activities)
        if kind == "course":
            return set(self.courses)
        raise KeyError(kind)

    def new_id(self, kind: str) -> str:
        """The next free id of a kind: a per-kind seeded stream, skipping ids in use, so the
        same sequence of creations always yields the same ids."""
        rng = self._id_rngs.get(kind)
        if rng is None:
            rng = self._id_rngs[kind] = random.Random(f"id:{self.seed}:{self.split}:{kind}")
        return entities.pick(rng, kind, self.split, avoid=self.used_ids(kind))

    # -- scenario ----------------------------------------------------------------------------
    def apply(self, setup: dict[str, Any]) -> World:
        """Add a task's scenario entities. Scenario products replace every background product
        of their style, and scenario customers every background customer of their name, so the
        task alone decides what a search or a lookup finds."""
        products = setup.get("products", {})
        styles = {p["style"] for p in products.values()}
        self.products = {k: v for k, v in self.products.items() if v["style"] not in styles}
        self.products.update(copy.deepcopy(products))
        customers = setup.get("customers", {})
        names = {c["name"] for c in customers.values()}
        dropped = {k for k, v in self.customers.items() if v["name"] in names}
        self.customers = {k: v for k, v in self.customers.items() if k not in dropped}
        self.invoices = {k: v for k, v in self.invoices.items() if v["customer"] not in dropped}
        self.customers.update(copy.deepcopy(customers))
        self.invoices.update(copy.deepcopy(setup.get("invoices", {})))
        self.courses.update(setup.get("courses", {}))
        self.activities.update(setup.get("activities", {}))
        self.cart.extend(copy.deepcopy(setup.get("cart", [])))
        return self

    # -- what the grader compares ------------------------------------------------------------
    def end_state(self) -> dict[str, Any]:
        """The mutable part of the world: what actions change."""
        return {
            "cart": sorted(tuple(line) for line in self.cart),
            "orders": copy.deepcopy(self.orders),
            "invoices": copy.deepcopy(self.invoices),
            "registrations": sorted(tuple(r) for r in self.registrations),
        }

    def clone(self) -> World:
        """An independent copy, id streams included (so it allocates the same next ids)."""
        world = World(
            seed=self.seed, split=self.split,
            products={k: {**v, "stock": dict(v["stock"])} for k, v in self.products.items()},
            customers={k: dict(v) for k, v in self.customers.items()},
            invoices={k: dict(v) for k, v in self.invoices.items()},
            courses=dict(self.courses), activities=dict(self.activities),
            cart=[list(line) for line in self.cart], orders=copy.deepcopy(self.orders),
            registrations=[list(r) for r in self.registrations])
        for kind, rng in self._id_rngs.items():
            twin = world._id_rngs[kind] = random.Random.__new__(random.Random)  # unseeded: setstate follows
            twin.setstate(rng.getstate())
        return world

    def cart_total(self) -> int:
        return sum(self.products[pid]["price"] * qty for pid, _, qty in self.cart)


def random_product(rng: random.Random, split: str, style: str, color: str, sizes: tuple[str, ...]) -> dict[str, Any]:
    return {"style": style, "color": color, "price": rng.randint(9, 149),
            "stock": {s: rng.randint(1, 6) for s in sizes}}


def make_world(seed: int, split: str) -> World:
    """The background world of a seed: a few products, customers with invoices, courses and
    activities, every value drawn from `split`. A fresh copy each call."""
    return _background(seed, split).clone()


@lru_cache(maxsize=8)  # a task builds its world, then the oracle and the grader rebuild it
def _background(seed: int, split: str) -> World:
    rng = random.Random(f"world:{seed}:{split}")
    world = World(seed=seed, split=split)
    for _ in range(BACKGROUND["products"]):
        color = rng.choice(entities.COLORS)
        options = entities.sizes_for(color, split)
        chosen = rng.sample(options, min(len(options), rng.randint(1, 3)))
        sizes = tuple(s for s in entities.SIZES if s in chosen)
        style = rng.choice(entities.DRAWN_STYLES)
        world.products[world.new_id("product")] = random_product(rng, split, style, color, sizes)
    names: set[str] = set()
    for _ in range(BACKGROUND["customers"]):
        name = entities.pick(rng, "name", split, avoid=names)
        names.add(name)
        cid = world.new_id("customer")
        world.customers[cid] = {"name": name, "email": entities.email_for(name)}
        for _ in range(rng.randint(0, 2)):
            world.invoices[world.new_id("invoice")] = {
                "customer": cid, "amount": rng.randint(20, 990),
                "status": rng.choice(entities.INVOICE_STATUSES), "description": rng.choice(entities.DESCRIPTIONS)}
    for _ in range(BACKGROUND["courses"]):
        world.courses[world.new_id("course")] = rng.randint(1, 30)
    for _ in range(BACKGROUND["activities"]):
        world.activities[world.new_id("activity")] = rng.choice(entities.ACTIVITY_STATUSES)
    return world
