"""Asking for what is missing, then using it: how a person words a request that leaves out what
its tool needs ("put a red cap in my cart", no size), and how they give the detail when the answer
asks for it ("L, please"). Data only; world/conversations.py draws them.

Training wording only (the grammar's `train` phrasing, corpus v16): the hand-written set
(world/handwritten.py) holds the only held-out requests of this kind, and the near-copy check
(tests/training/test_handwritten_excluded.py) keeps these frames from repeating its sentences.

Patterns are the grammar's (world/grammar.py render): `<family>` is a word of a family, `{slot}`
a value of the request the person had in mind. An ASK pattern never names what is missing
(conversations.MISSING: the size, the guest's details, the customer, the amounts, the student,
the activity); a SUPPLY pattern names exactly that.
"""

from __future__ import annotations

# asked intent -> requests that leave its missing detail out
ASK: dict[str, tuple[str, ...]] = {
    "shop_find": (
        "<have> a {color} {style}?", "Does the shop have a {color} {style}?", "<look> a {color} {style}.",
        "I'm curious whether you stock a {color} {style}, <nobuy>.", "What would a {color} {style} cost me?",
        "Any {color} {styles} around at the moment?", "Price of a {color} {style}?",
        "Could you see if a {color} {style} is there? Not buying.", "{color} {style} - in stock?",
        "wondering about {color} {styles}. got any", "Search the shop for a {color} {style} please.",
    ),
    "shop_add": (
        "<add> {item} <into> my <cart>.", "Could you <add> {item} <into> the <cart>?", "{item} for the <cart>, cheers.",
        "I'll buy {item} later; for now it can sit in my <cart>.", "<want> {item} in my <cart>.",
        "Stick {item} in my <cart> when you get a moment.", "Can {item} go in my <cart>?",
        "Into my <cart> with {item}, please.", "<cart>: {item}.", "I'd love to have {item} in my <cart>.",
        "please add {item}, no checkout yet",
    ),
    "shop_buy": (
        "<buy> {item} for me, <guest>: {details}.", "I want to <buy> {item}. {details}.",
        "{details} - please order {item} and check me out.", "Can you <buy> {item}? Send it: {details}.",
        "Order {item} for me and pay <guest>. {details}.", "Get {item} shipped to me, {details}.",
    ),
    "shop_checkout": (
        "I'm ready to <checkout>.", "Let's <checkout> now.", "Time to pay for my <cart>.",
        "Can I <checkout> <guest>?", "Please <checkout>, that's everything.", "Done shopping, ring it up.",
        "I'd like to pay now, <guest>.", "Finish the order for me please.", "I'm all set, <checkout> now please.",
        "Go ahead, <checkout> now.", "Could you order what I have in the <cart>?",
    ),
    "office_customer": (
        "Find me a <customer>'s <record>, please.", "I need someone's id and email.",
        "Can you find a <customer> <record>?", "Who's that <customer> again? I need the <record>.",
        "Please pull up a <customer>.", "I want a <customer>'s email address.", "<customer> lookup, please.",
        "Could you search the <customer> list for someone?", "find me a client's id",
    ),
    "office_invoice_by_name": (
        "<create> an <invoice> of {amount} <for> {description}.",
        "Put {amount} <for> {description} on an <invoice>, please.",
        "An <invoice> is needed: {amount}, {description}.", "There's {amount} to bill <for> {description}.",
        "Can you <create> an <invoice> <for> {description}? It's {amount}.",
        "{description} came to {amount}, invoice that please.", "New <invoice>: {amount} <for> {description}.",
        "We did {description} for {amount}; raise the <invoice>.",
    ),
    "office_find_invoices": (
        "<list> a <customer>'s {which}<invoice>s.", "Which {which}<invoice>s are there for my <customer>?",
        "I want to see a <customer>'s {which}<invoice>s.", "Could you pull up some {which}<invoice>s for me?",
        "{which}<invoice>s for a <customer>, please.", "Show the {which}<invoice>s on one of our accounts.",
        "Can I get a list of {which}<invoice>s for someone?",
    ),
    "office_unpaid_total": (
        "What does my <customer> <owe> us in total?", "What's the <unpaid> total for a <customer>?",
        "Tell me what a <customer> still owes us.", "Could you <sum> a <customer>'s <unpaid> <invoice>s?",
        "I need to know how much someone owes.", "What is a client behind on?",
        "Work out an <unpaid> balance for me, please.",
    ),
    "office_sum": (
        "<sum> a few amounts for me.", "I've got some numbers to add up.", "Can you total a list for me?",
        "Could you do a sum for me?", "I need a total of some figures.", "Help me add a few prices together.",
        "Add some numbers up, please.",
    ),
    "office_course": (
        "Put me down for {course}.", "Please <register> a student for {course}.", "Can you put someone on {course}?",
        "I want a place on {course}.", "{course} - <register> a student, please.", "Could you <register> for {course}?",
        "Enrol a person on {course} for me.", "Someone wants {course}; sign them up.",
    ),
    "office_activity": (
        "Where is my <activity> at?", "Is my <activity> finished?", "Look into an <activity> for me.",
        "How is my <activity> getting on?", "Can you look at an <activity>'s <status>?",
        "I want to know if the <activity> has finished.", "<tellme> how the <activity> is going.",
    ),
}

# asked intent -> how the person gives what the answer asked for
SUPPLY: dict[str, tuple[str, ...]] = {
    "shop_find": ("{size}", "In {size}.", "Size {size}, sorry.", "I wear {size}.", "{size} would be right.",
                  "Oh, a {size}.", "Make it {size}.", "It should be {size}."),
    "shop_add": ("{size}", "In {size}, please.", "Size {size}.", "A {size} one.", "I'm a {size}.",
                 "{size} fits me.", "Oh yes, {size}.", "Go with {size}."),
    "shop_buy": ("{size}", "Size {size}, please.", "In {size}.", "{size} is my size.", "Oh, {size}."),
    "shop_checkout": ("{name}, {email}, {address}", "Sure. {details}.", "{details}",
                      "Name {name}, email {email}, send it to {address}.", "It's {name} ({email}), {address}.",
                      "I'm {name}; {email}; {address}.", "Here: {name} / {email} / {address}."),
    "office_customer": ("{name}", "The name is {name}.", "It's {name}.", "{name}, thanks.", "Oh, {name}.",
                        "That would be {name}.", "Sorry, {name}.", "The customer is {name}."),
    "office_invoice_by_name": ("{name}", "It's for {name}.", "The customer is {name}.", "Bill {name}.",
                               "Send it to {name}.", "Oh, {name}.", "{name}, please."),
    "office_find_invoices": ("{name}", "The customer is {name}.", "It's {name}.", "Oh, {name}.",
                             "That's {name}."),
    "office_unpaid_total": ("{name}", "It's {name}.", "The customer is {name}.", "{name}, please.",
                            "Oh, I mean {name}."),
    "office_sum": ("{amounts}", "Here they are: {amounts}.", "The figures: {amounts}.", "Sure, {amounts}.",
                   "{amounts}, please.", "They're {amounts}."),
    "office_course": ("{name}", "The student is {name}.", "It's {name}.", "Me, {name}.",
                      "Put {name} down.", "Oh, {name}."),
    "office_activity": ("{activity}", "The id is {activity}.", "Activity {activity}.",
                        "Oh, {activity}.", "That's {activity}."),
}
