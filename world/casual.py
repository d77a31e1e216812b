"""Everyday wording of one request, as people type it rather than as the frames of phrasebook.py
set it out: asides and a second sentence, a "don't check out yet" after an add, a price check that
must not buy, "all of them, paid or not", a name straight after "Has" or "Could", a casual
register. Written from the lessons of the hand-written set's misses (models/README.md, stage 7),
never from its sentences. Data only; grammar.instruction draws these beside a group's training
frames, in the `train` wording only (corpus v16), so the held-out and `words` sets stay as drawn.

Patterns are the grammar's (`<family>` a word, `{slot}` a value). A group here is a frame group of
phrasebook.FRAMES, or "outside.<kind>" for OUTSIDE; "find_invoices_all" words a request for every
invoice of a customer, drawn only when the request has no status.
"""

from __future__ import annotations

CASUAL: dict[str, tuple[str, ...]] = {
    "find": (
        "Only browsing today - is there a {color} {style} {sizep}?",
        "Price check: {color} {style}, {size}. Nothing more.",
        "Is a {color} {style} {sizep} a thing you have? I only want to know.",
        "Curious about the {color} {styles} {sizep}. What's there and what do they cost?",
        "Not shopping yet. Any {color} {style} {sizep}?",
        "I'm comparing prices: what does a {color} {style} cost {sizep}?",
        "<look> a {color} {style} {sizep}, but leave my <cart> alone.",
        "Quick question, no order: do you stock a {color} {style} in {size}?",
        "Has the shop got a {color} {style} {sizep}? Just tell me the id and price.",
        "does a {color} {style} {sizep} exist here? thats all",
    ),
    "add": (
        "<add> {item} {sizep} <into> my <cart>, but don't <checkout> yet.",
        "{item}, {size}, for my <cart> please - no order yet.",
        "I've picked {item} {sizep}. Into the <cart> it goes, don't buy it yet.",
        "Pop {item} {sizep} <into> the <cart> and stop there.",
        "My <cart> should have {item} {sizep} in it.",
        "Put {item} {sizep} aside in my <cart>, I'll pay another day.",
        "{item} {sizep}: <cart> only, no checkout.",
        "ok so {item} {sizep} goes in the <cart> pls",
        "Can {item} {sizep} be put in my <cart>? It's a present.",
        "I'll grab {item} {sizep}. Just <add> it <into> my <cart> and leave it there.",
    ),
    "checkout": (
        "That's all I'm buying. {details}.",
        "I'm finished - send the order off. {details}.",
        "Ready to pay. {name} here, {email}; ship it all to {address}.",
        "Close out my order please, {details}.",
        "Everything in my <cart> please, delivered to {address}. Name {name}, mail {email}.",
        "Let's pay for the lot: {details}.",
        "ok all done, order it. {name} / {email} / {address}",
        "Order my <cart> for {name} ({email}); the address is {address}.",
    ),
    "cart_total": (
        "What am I spending so far?",
        "How much is everything in my <cart> right now?",
        "Running total of my <cart>, please. I'm not paying yet.",
        "What's my <cart> at, money-wise?",
        "so how much do I owe for what's in the <cart>",
        "Give me the <total> for my <cart>, no checkout.",
        "What would I pay if I bought my <cart> now?",
        "Count up my <cart> for me.",
    ),
    "customer": (
        "Is {name} in our <customer> list? The id and email, if so.",
        "Have we got {name} on file? Tell me their id.",
        "What email do we hold for {name}?",
        "I'm about to write to {name}, which email should I use?",
        "Does {name} have a <customer> number?",
        "Could {name} be one of our customers? Check for me.",
        "{name} rang earlier. Who are they in the system?",
        "id and email for {name} please",
        "Has {name} got a <customer> <record>? Show it.",
    ),
    "invoice": (
        "Could {who} get an <invoice>? {amount} <for> {description}.",
        "Has {who} been billed for {description} yet? If not, <charge> them {amount}.",
        "{who} still has to pay for {description}: put {amount} on an <invoice>.",
        "Time to bill {who}. It's {amount}, for {description}.",
        "<charge> {who} {amount}; the reason is {description}.",
        "an <invoice> for {who} please, {amount}, {description}",
    ),
    "find_invoices": (
        "Are there {which}<invoice>s for {name} at all?",
        "Did we ever send {name} {which}<invoice>s? List them.",
        "Which {which}<invoice>s are on {name}'s account?",
        "Could you see what {which}<invoice>s {name} has?",
        "{name} asked about their {which}<invoice>s. Which are they?",
        "Show {name}'s {which}<invoice>s please.",
    ),
    "find_invoices_all": (
        "Every <invoice> of {name}, paid and unpaid.",
        "All of {name}'s <invoice>s please, whatever the status.",
        "List each <invoice> we have for {name}, settled or not.",
        "What has {name} ever been invoiced? Every one.",
        "{name}: the whole list of <invoice>s, not only the open ones.",
        "Which <invoice>s exist for {name}? All of them.",
    ),
    "unpaid": (
        "Has {name} paid everything? If not, how much is left?",
        "How far behind is {name}, in money?",
        "What's still owed by {name}?",
        "Does {name} have a balance with us? Give me the amount.",
        "Could {name} still owe us money? How much?",
        "{name} - what's left for them to pay, all told?",
        "Money check on {name}: the <unpaid> total.",
    ),
    "sum": (
        "What do I get when {amounts} are added?",
        "Add these together: {amounts}.",
        "Could you do the maths on {amounts}?",
        "{amounts} - what's that in total?",
        "I spent {amounts} this week. All together?",
        "Total of {amounts}, quick.",
    ),
    "course": (
        "Can {name} join {course}? Enrol them please.",
        "Could {name} get a seat on {course}?",
        "There's space on {course}, I think: <register> {name}.",
        "{name} should take {course}. Please <register> them.",
        "Has {name} got a place on {course}? If not, <register> them.",
        "Please get {name} onto the {course} <course>.",
        "I'd like {name} enrolled in {course}.",
    ),
    "activity": (
        "How's {activity} coming along?",
        "Has {activity} finished, or is it still going?",
        "Any word on {activity}?",
        "What stage is {activity} at?",
        "Did {activity} complete?",
        "Can you peek at {activity} for me?",
        "{activity} - still going?",
    ),
    "buy": (
        "Order me {item} {sizep}, nothing else. {details}.",
        "I'd like {item} {sizep} bought and shipped: {details}.",
        "Grab {item} {sizep} and pay for it <guest>. {details}.",
        "Please get {item} {sizep} to me, {details}.",
        "{item} {sizep}, and check it out straight away for me: {details}.",
    ),
}

# requests outside the world, by kind (phrasebook.OUTSIDE_FRAMES), as people type them (corpus v17):
# the hand-written set's misses here were money, accounts, calls and trivia the frames never named
OUTSIDE: dict[str, tuple[str, ...]] = {
    "greeting": ("hey hey", "Morning!", "hello?? anybody", "Hi :) how's your day", "evening all"),
    "about": ("Is anyone actually reading this?", "Am I chatting with a program?", "What's your job here?",
              "Is there a human behind this chat?", "Do you have a name?", "Which assistant is this?",
              "What are you able to help with?"),
    "general": ("How tall is Mount Everest?", "When did the Second World War end?", "Who invented the telephone?",
                "Which team won the last football World Cup?", "How many planets are in the solar system?",
                "Why is the sky blue?", "What's a good recipe for pancakes?", "Who is the richest person alive?",
                "What's the square root of 144?", "Tell me something interesting about {country}."),
    "unsupported": ("Send $50 to my sister.", "Top up my phone credit.", "Close my bank account.",
                    "Remove my profile from the website.", "Ring my dentist and move my appointment.",
                    "Phone the pizza place for me.", "Renew my library card.", "Post this on my social media.",
                    "Wire 100 euros to my brother.", "Reset my password please.",
                    "Get me tickets for a concert in {city}."),
}


def frames_for(group: str, slots: dict) -> tuple[str, ...]:
    """The everyday patterns that may word a request of `group` with these slots."""
    if group.startswith("outside."):
        return OUTSIDE[group.removeprefix("outside.")]
    if group == "find_invoices" and not slots.get("status"):
        return CASUAL["find_invoices"] + CASUAL["find_invoices_all"]
    return CASUAL.get(group, ())
