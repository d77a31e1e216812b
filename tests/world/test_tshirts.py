"""T-shirts in the shop (issue 49): a style of the catalogue that people write several ways, asked
for by a task that names it, held out as a check set of its own (world/heldout_tshirts.json), and
the seed's demo in its own words. Random worlds and the committed sets draw from the ten older
styles, so they are as they were."""

import json
import random

import pytest

from engine.trace import GenerationConfig
from tests.world.heldout_values import assert_heldout_values
from world import entities, grammar, phrasebook
from world.agent import run_episode
from world.oracle import OracleModel
from world.start import world_for
from world.state import World
from world.task_sets import (
    TSHIRTS_PATH,
    load_heldout_tasks,
    make_heldout_set,
    make_tshirt_set,
    seed_demo_task,
    tshirt_validation_tasks,
    validation_tasks,
)
from world.tasks import STYLED_INTENTS, build_task, make_task
from world.tools import search_products

FRAMES_OF_BUY = [pattern for _, _, pattern, _ in phrasebook.FRAMES["buy"]]


def shop(*styles: str) -> World:
    world = World(seed=0, split="train")
    for k, style in enumerate(styles):
        world.products[f"P{k + 1}A0"] = {"style": style, "color": "black", "price": 20 + k, "stock": {"L": 2}}
    return world


@pytest.mark.parametrize("query", ["t-shirt", "T-shirt", "T-SHIRTS", "tee", "tees", "t shirt", "tshirt"])
def test_every_spelling_finds_the_t_shirts_and_no_shirt(query):
    world = shop("shirt", "t-shirt")
    assert [row["id"] for row in search_products(world, query, "black", "L")] == ["P2A0"]


@pytest.mark.parametrize("query", ["shirt", "shirts", "tee-shirt", "steel"])
def test_other_words_find_no_t_shirt(query):
    world = shop("shirt", "t-shirt")
    assert "P2A0" not in [row["id"] for row in search_products(world, query, "black", "L")]


def test_a_style_without_spellings_draws_nothing_from_the_stream():
    rng, untouched = random.Random(5), random.Random(5)
    assert entities.style_said("hoodie", rng) == "hoodie"
    assert rng.random() == untouched.random()
    said = {entities.style_said("t-shirt", random.Random(k)) for k in range(60)}
    assert said == {"t-shirt", *entities.STYLE_SPELLINGS["t-shirt"]}


@pytest.mark.parametrize("intent", STYLED_INTENTS)
@pytest.mark.parametrize("phrasing", ["template", "train"])
def test_a_named_style_is_the_seeds_task_about_t_shirts_and_the_oracle_solves_it(intent, phrasing):
    plain = make_task(intent, "train", 7, phrasing)
    task = make_task(intent, "train", 7, phrasing, style="t-shirt")
    assert task["id"] == plain["id"] + "-t-shirt" and task["slots"]["style"] == "t-shirt"
    for key in ("color", "size", "qty"):                     # the same draws, another style
        assert task["slots"][key] == plain["slots"][key]
    assert task["gold_actions"][0] == {"name": "search_products", "arguments": {
        "query": "t-shirt", "color": task["slots"]["color"], "size": task["slots"]["size"]}}
    assert all(p["style"] == "t-shirt" for p in task["world"]["setup"]["products"].values())
    assert run_episode(None, task, GenerationConfig(), generate_fn=OracleModel(task)).success


def test_a_style_is_refused_where_the_request_names_none_or_the_shop_has_none():
    with pytest.raises(ValueError, match="names no style"):
        build_task("office_customer", "train", 1, style="t-shirt")
    with pytest.raises(ValueError, match="Unknown style 'raincoat'"):
        build_task("shop_add", "train", 1, style="raincoat")


def test_random_worlds_and_the_benchmark_draw_no_t_shirt():
    tasks = make_heldout_set() + validation_tasks(40)
    assert all(p["style"] != "t-shirt" for t in tasks for p in world_for(t).products.values())


def test_the_check_set_is_what_the_code_makes_and_is_held_out():
    committed = load_heldout_tasks(TSHIRTS_PATH)
    demo, tasks = committed[0], committed[1:]
    assert demo == json.loads(json.dumps(seed_demo_task()))
    assert tasks == json.loads(json.dumps(make_tshirt_set()))
    assert len(tasks) == 20 and len({t["id"] for t in committed}) == 21
    assert {t["intent"] for t in tasks} == set(STYLED_INTENTS)
    matcher = grammar.heldout_matcher()
    worded = [t for t in tasks if "phrasing" in t]
    assert len(worded) == 10 and all(t["phrasing"]["split"] == "heldout" for t in worded)
    assert sum(bool(matcher.search(t["instruction"])) for t in worded) >= 8   # typos aside, held-out frames
    for task in committed:
        assert task["split"] == "heldout" and task["slots"]["style"] == "t-shirt"
        assert_heldout_values(task, world_for(task))
        assert run_episode(None, task, GenerationConfig(), generate_fn=OracleModel(task)).success, task["id"]


def test_the_seed_demo_is_the_seeds_sentence_about_one_black_t_shirt_in_l():
    demo = seed_demo_task()
    slots = demo["slots"]
    assert demo["instruction"] == ("Find me a black T-shirt in size L, add it to the cart, and check out as a "
                                   f"guest: {slots['name']}, {slots['email']}, {slots['address']}.")
    assert (slots["color"], slots["size"], slots["qty"]) == ("black", "L", 1)
    assert [a["name"] for a in demo["gold_actions"]] == ["search_products", "add_to_cart", "checkout_guest", "finish"]
    world = world_for(demo)
    rows = [r for r in search_products(world, "T-shirt", "black", "L") if (r["color"], r["size"]) == ("black", "L")]
    assert len(rows) == 1 and world.products[rows[0]["id"]]["stock"]["L"] >= 1


def test_the_training_wording_says_the_seeds_sentence():
    frame = "Find me {item} {sizep}, add it to the cart, and check out as a guest: {details}."
    said = [make_task("shop_buy", "train", seed, "train", style="t-shirt") for seed in range(400)]
    seen = [t["instruction"] for t in said if t["phrasing"]["frame"] == "buy." + str(FRAMES_OF_BUY.index(frame))]
    assert seen, f"no training request used the frame {frame!r} in 400 draws"
    assert all("find me " in text.lower() and "add it to the cart, and check out as a guest: " in text.lower()
               for text in seen), seen[:3]


def test_the_validation_draws_are_t_shirts_and_none_of_the_check_sets_tasks():
    tasks = tshirt_validation_tasks(30)
    assert len(tasks) == 30 and all(t["slots"]["style"] == "t-shirt" for t in tasks)
    assert not {t["id"] for t in tasks} & {t["id"] for t in load_heldout_tasks(TSHIRTS_PATH)}
