"""The parts people build instructions from, as tables: word families, fillers, sentence
frames per intent group, clauses and joiners for two-goal requests, and the outside-the-world
requests. Data only; grammar.py composes them.

A frame is (kind, order, pattern, held_out). kind is the sentence frame (imp: imperative,
q: question, need: statement of need, polite: polite request, terse: terse note, first: the
details first); order is where the entities sit (first, last, paren, colon, mid). In a pattern
`<family>` is a word of a family below and `{slot}` an entity or number (grammar.SLOTS).
Held-out frames (held_out True) never reach training, and within a group no held-out frame
shares its (kind, order) cell with a training frame, so they are new combinations of the
training parts, not new words.
"""

from __future__ import annotations

# -- word families: training words; HELDOUT_WORDS hold the synonyms kept out of training -------
WORDS: dict[str, tuple[str, ...]] = {
    # look, never act: these verbs only ever lead to a search and an answer
    "look": ("find", "show me", "look up", "search for", "check for", "locate", "pull up"),
    "have": ("do you have", "have you got", "is there", "do you sell", "do you stock", "got"),
    "nobuy": ("just looking", "don't add it yet", "no need to buy", "only checking for now",
              "don't put it in the cart", "I just want to know"),
    # act: these put things in the cart
    "add": ("add", "put", "pop", "throw", "stick", "place", "drop"),
    "into": ("to", "into", "in"),
    "cart": ("cart", "bag", "basket", "shopping cart", "shopping bag"),
    "want": ("I want", "I need", "I'd like", "I'll take", "I would like", "give me"),
    "wantto": ("I'd like to", "I want to", "I would like to", "I need to"),
    "checkout": ("check out", "place the order", "complete the order", "finish my order", "pay for the cart",
                 "check me out"),
    "guest": ("as a guest", "as guest", "without an account", "with guest checkout", "no account"),
    "buy": ("buy", "order", "purchase", "get"),
    "ship": ("ship to", "send it to", "deliver to", "address", "shipping address"),
    "total": ("total", "cost", "price", "amount", "sum"),
    "howmuch": ("how much is", "what's the", "what is the", "tell me the", "show me the", "give me the"),
    # office
    "customer": ("customer", "client", "account", "contact"),
    "lookup": ("look up", "find", "pull up", "get", "fetch", "check"),
    "record": ("record", "details", "info", "profile", "entry", "id and email"),
    "invoice": ("invoice", "bill", "charge"),
    "charge": ("invoice", "bill", "charge"),
    "create": ("create", "make", "raise", "issue", "write", "set up"),
    "for": ("for", "covering", "re", "about"),
    "list": ("list", "show", "give me", "find", "pull up", "which are"),
    "unpaid": ("unpaid", "outstanding", "open", "due"),
    "paid": ("paid", "settled", "cleared"),
    "owe": ("owe", "still owe", "have to pay"),
    "sum": ("add up", "sum", "total", "tot up", "work out the total of", "what is the sum of"),
    "register": ("register", "sign up", "enroll", "enrol", "book"),
    "course": ("course", "class", "module", "programme"),
    "activity": ("activity", "task", "job", "process"),
    "status": ("status", "progress", "state"),
    "tellme": ("tell me", "let me know", "report", "give me", "show me"),
    # outside the world
    "hello": ("hi", "hello", "hey", "good morning", "good evening", "hiya", "greetings"),
    "howru": ("how are you", "how's it going", "what's up", "how are things", "anyone there", "are you there",
              "nice to meet you", "how is your day going"),
}

# One to two synonyms per family that training never shows: the "held-out words" split
# measures how far the model reaches beyond its lexicon (reported, not a target).
HELDOUT_WORDS: dict[str, tuple[str, ...]] = {
    "look": ("hunt for", "dig up"),
    "have": ("do you carry",),
    "add": ("chuck", "slip"),
    "cart": ("trolley",),
    "want": ("I'm after",),
    "checkout": ("wrap up the order",),
    "customer": ("patron",),
    "record": ("dossier",),
    "invoice": ("statement",),
    "charge": ("debit",),
    "unpaid": ("unsettled",),
    "sum": ("tally up",),
    "register": ("enlist",),
    "course": ("seminar",),
    "activity": ("workflow",),
    "status": ("standing",),
    "hello": ("howdy",),
}

# Fillers around a frame. An opener ending in a letter or comma lower-cases the frame's
# first word (not an entity).
OPENERS = ("", "", "", "", "Hi, ", "Hello, ", "Hey, ", "Quick one: ", "Ok, ", "Hi there! ",
           "Good morning. ", "Sorry to bother you, ", "Hey there, ", "Urgent: ", "One more thing: ")
CLOSERS = ("", "", "", "", " Thanks!", " Thank you.", " Cheers.", " Please.", " Thanks in advance.",
           " Thx.", " Much appreciated.", " Thanks a lot.", " ASAP please.")

Frame = tuple[str, str, str, bool]
H = True   # held out
T = False  # training

FRAMES: dict[str, tuple[Frame, ...]] = {
    "find": (
        ("imp", "last", "<look> a {color} {style} {sizep}.", T),
        ("imp", "paren", "<look> a {style} ({color}, {size}), <nobuy>.", T),
        ("q", "last", "<have> a {color} {style} {sizep}?", T),
        ("q", "first", "{color} {style}, {sizep}: <have> one?", T),
        ("need", "last", "<wantto> see a {color} {style} {sizep}, <nobuy>.", T),
        ("polite", "last", "Could you <look> a {color} {style} {sizep}?", T),
        ("polite", "mid", "Would you <look> a {color} {style} for me {sizep}? <nobuy>.", T),
        ("terse", "first", "{color} {style} {size}?", T),
        ("terse", "colon", "<look>: {color} {style}, {size}.", T),
        ("first", "first", "{sizep}, {color}, {style}. <have> that?", T),
        ("imp", "mid", "<look> the {color} {style} {sizep} and tell me its price.", T),
        ("q", "paren", "Is there a {style} ({color}, {size}) I could look at?", H),
        ("need", "first", "{color} {style}, {sizep} - I want to know if you have one, <nobuy>.", H),
        ("polite", "colon", "Please <look> this one: {color} {style}, {sizep}. <nobuy>.", H),
        ("terse", "mid", "<have> {color} {size} {styles}", H),
    ),
    "add": (
        ("imp", "last", "<add> {item} <into> my <cart>, {sizep}.", T),
        ("imp", "mid", "<add> {item} {sizep} <into> my <cart>.", T),
        ("imp", "paren", "<add> {item} ({size}) <into> the <cart>.", T),
        ("q", "last", "Can you <add> {item} <into> my <cart>, {sizep}?", T),
        ("q", "mid", "Could you <add> {item} {sizep} <into> the <cart>?", T),
        ("need", "last", "<want> {item} {sizep} <into> my <cart>.", T),
        ("need", "mid", "<want> {item} {sizep}, <into> the <cart> please.", T),
        ("polite", "mid", "Please <add> {item} {sizep} <into> my <cart>.", T),
        ("terse", "colon", "<cart>: {item}, {size}.", T),
        ("terse", "first", "{item} {size} -> <cart>", T),
        ("first", "first", "{item}, {sizep}. <add> that <into> my <cart>.", T),
        ("q", "first", "{item} {sizep} - could you <add> that <into> my <cart>?", H),
        ("need", "paren", "<want> {item} ({size}) <into> my <cart>.", H),
        ("polite", "colon", "Please <add> this <into> my <cart>: {item}, {sizep}.", H),
        ("terse", "mid", "<cart> + {item} {size}", H),
        ("first", "colon", "{sizep}: {item}. <add> <into> <cart>.", H),
    ),
    "checkout": (
        ("imp", "last", "<checkout> <guest>: {details}.", T),
        ("imp", "mid", "<checkout> <guest> for {name}, {email}, <ship> {address}.", T),
        ("q", "last", "Can you <checkout> <guest>? {details}.", T),
        ("need", "last", "I need to <checkout> <guest>. {details}.", T),
        ("polite", "last", "Please <checkout> <guest> with {details}.", T),
        ("terse", "colon", "Checkout, <guest>: {name} / {email} / {address}.", T),
        ("first", "first", "{name}, {email}, {address}. <checkout> <guest>.", T),
        ("imp", "paren", "<checkout> <guest> as {name} ({email}), <ship> {address}.", T),
        ("q", "mid", "Could you <checkout> <guest> for {name} ({email}) and <ship> {address}?", H),
        ("need", "first", "{details} - I need to <checkout> <guest>.", H),
        ("polite", "colon", "Please <checkout> for me <guest>: {details}.", H),
        ("terse", "first", "{name} | {email} | {address} | <checkout> <guest>", H),
    ),
    "checkout_missing": (
        ("imp", "last", "<checkout> <guest>: {details}.", T),
        ("q", "last", "Can you <checkout> <guest>? {details}.", T),
        ("need", "last", "I need to <checkout> <guest>. {details}.", T),
        ("polite", "last", "Please <checkout> <guest> with {details}.", T),
        ("first", "first", "{details}. <checkout> <guest>.", T),
        ("need", "first", "{details} - I need to <checkout> <guest>.", H),
        ("polite", "colon", "Please <checkout> for me <guest>: {details}.", H),
        ("terse", "first", "{details} | <checkout> <guest>", H),
    ),
    "cart_total": (
        ("q", "last", "<howmuch> <total> of my <cart>?", T),
        ("q", "mid", "What does my <cart> come to?", T),
        ("imp", "last", "Tell me my <cart> <total>.", T),
        ("need", "last", "I need to know the <total> of my <cart>.", T),
        ("polite", "last", "Could you tell me what my <cart> <total> is?", T),
        ("terse", "colon", "<cart> <total>?", T),
        ("imp", "mid", "Check my <cart> and tell me the <total>.", T),
        ("q", "first", "My <cart> - <howmuch> <total>?", H),
        ("polite", "colon", "Please check this for me: the <total> of my <cart>.", H),
        ("terse", "first", "<total> of <cart>", H),
    ),
    "buy": (
        ("imp", "last", "<buy> {item} {sizep} <guest>: {details}.", T),
        ("imp", "mid", "<buy> {item} ({size}) for {name}, {email}, <ship> {address}.", T),
        ("q", "last", "Can you <buy> {item} {sizep} <guest>? {details}.", T),
        ("need", "last", "<want> {item} {sizep}. <checkout> <guest>: {details}.", T),
        ("polite", "mid", "Please <add> {item} {sizep} <into> my <cart> and <checkout> <guest>: {details}.", T),
        ("first", "first", "{name}, {email}, {address}. <buy> {item} {sizep} <guest>.", T),
        ("terse", "colon", "<buy> <guest>: {item}, {size}; {details}.", T),
        ("q", "first", "{details} - can you <buy> {item} {sizep} <guest>?", H),
        ("need", "paren", "<want> {item} ({size}) delivered to {address}; <checkout> <guest> as {name} ({email}).", H),
        ("polite", "colon", "Please <buy> this <guest>: {item}, {sizep}. {details}.", H),
    ),
    "customer": (
        ("imp", "last", "<lookup> <customer> {name}.", T),
        ("imp", "mid", "<lookup> the <record> of {name} for me.", T),
        ("q", "last", "What is the <customer> id and email of {name}?", T),
        ("q", "first", "{name}: what are their id and email?", T),
        ("need", "last", "I need the <record> of <customer> {name}.", T),
        ("polite", "last", "Could you <lookup> <customer> {name}?", T),
        ("terse", "colon", "<customer>: {name}?", T),
        ("first", "first", "{name} - <lookup> their <record>.", T),
        ("q", "paren", "Who is the <customer> ({name}) - id and email?", H),
        ("need", "first", "{name}: I need their <customer> <record>.", H),
        ("polite", "colon", "Please <lookup> this <customer>: {name}.", H),
        ("terse", "last", "<record> <customer> {name}", H),
    ),
    "invoice": (
        ("imp", "last", "<create> an <invoice> for {who}: {amount} <for> {description}.", T),
        ("imp", "mid", "<charge> {who} {amount} <for> {description}.", T),
        ("imp", "paren", "<create> a {amount} <invoice> for {who} ({description}).", T),
        ("q", "last", "Can you <charge> {who} {amount} <for> {description}?", T),
        ("need", "last", "I need an <invoice> for {who}, {amount} <for> {description}.", T),
        ("polite", "mid", "Please <charge> {who} {amount} <for> {description}.", T),
        ("terse", "colon", "<invoice>: {who}, {description}, {amount}.", T),
        ("first", "first", "{description}, {amount}: <charge> {who}.", T),
        ("q", "paren", "Could you <create> an <invoice> ({amount}, {description}) for {who}?", H),
        ("need", "first", "{amount} <for> {description} - I need to <charge> {who}.", H),
        ("polite", "colon", "Please <create> this <invoice>: {who}, {amount}, {description}.", H),
        ("terse", "mid", "<charge> {who} {amount} / {description}", H),
    ),
    "find_invoices": (
        ("imp", "last", "<list> the {which}<invoice>s of {name}.", T),
        ("q", "last", "Which {which}<invoice>s does {name} have?", T),
        ("q", "first", "{name}: which {which}<invoice>s are there?", T),
        ("need", "last", "I need the {which}<invoice>s for <customer> {name}.", T),
        ("polite", "last", "Could you <list> the {which}<invoice>s of {name}?", T),
        ("terse", "colon", "{which}<invoice>s: {name}", T),
        ("imp", "mid", "<list> {name}'s {which}<invoice>s for me.", T),
        ("q", "paren", "What {which}<invoice>s are on file (<customer> {name})?", H),
        ("need", "first", "{name} - I need their {which}<invoice>s.", H),
        ("polite", "colon", "Please <list> the {which}<invoice>s of this <customer>: {name}.", H),
    ),
    "sum": (
        ("imp", "last", "<sum> {amounts}.", T),
        ("q", "last", "What do {amounts} add up to?", T),
        ("q", "mid", "What is {amounts} all together?", T),
        ("need", "last", "I need the total of {amounts}.", T),
        ("polite", "last", "Could you <sum> {amounts}?", T),
        ("terse", "colon", "<sum>: {amounts}", T),
        ("first", "first", "{amounts} - <sum> these.", T),
        ("q", "first", "{amounts}: what is the total?", H),
        ("polite", "colon", "Please <sum> these amounts for me: {amounts}.", H),
        ("terse", "last", "<sum> -> {amounts}", H),
    ),
    "unpaid": (
        ("q", "last", "What does {name} <owe> in <unpaid> <invoice>s?", T),
        ("imp", "last", "<sum> the <unpaid> <invoice>s of {name}.", T),
        ("q", "mid", "How much is <unpaid> for {name} right now?", T),
        ("need", "last", "I need the <unpaid> total of {name}.", T),
        ("polite", "last", "Could you tell me how much {name} still owes?", T),
        ("terse", "colon", "<unpaid> total: {name}", T),
        ("first", "first", "{name}: how much do they <owe>?", T),
        ("q", "paren", "How much <unpaid> money is there on the <customer> ({name})?", H),
        ("need", "first", "{name} - I need their <unpaid> total.", H),
        ("polite", "colon", "Please <sum> the <unpaid> <invoice>s of this <customer>: {name}.", H),
    ),
    "course": (
        ("imp", "last", "<register> {name} for {course}.", T),
        ("imp", "mid", "<register> {name} on the {course} <course> please.", T),
        ("q", "last", "Can you <register> {name} for <course> {course}?", T),
        ("need", "last", "I need {name} registered for {course}.", T),
        ("polite", "last", "Could you <register> {name} for {course}?", T),
        ("terse", "colon", "<register>: {name}, {course}.", T),
        ("first", "first", "{name} wants to take {course}. <register> them.", T),
        ("imp", "paren", "<register> {name} ({course}).", T),
        ("q", "first", "{course} - can you <register> {name}?", H),
        ("need", "paren", "I need a place on the <course> ({course}) for {name}.", H),
        ("polite", "colon", "Please <register> this student: {name}, <course> {course}.", H),
        ("terse", "first", "{name} -> {course}", H),
    ),
    "activity": (
        ("q", "last", "What is the <status> of <activity> {activity}?", T),
        ("q", "mid", "Is {activity} done yet?", T),
        ("imp", "last", "Check <activity> {activity}.", T),
        ("imp", "mid", "<tellme> the <status> of {activity} please.", T),
        ("need", "last", "I need the <status> of {activity}.", T),
        ("polite", "last", "Could you check <activity> {activity}?", T),
        ("terse", "colon", "<status>: {activity}?", T),
        ("first", "first", "{activity} - what is its <status>?", T),
        ("q", "paren", "How is the <activity> ({activity}) going?", H),
        ("need", "first", "{activity}: I need to know where it stands.", H),
        ("polite", "colon", "Please check this <activity>: {activity}.", H),
        ("terse", "last", "<status> <activity> {activity}", H),
    ),
    "missing_amount": (
        ("imp", "last", "<create> an <invoice> for {name} <for> {description}.", T),
        ("imp", "mid", "<charge> {name} <for> {description}.", T),
        ("q", "last", "Can you <charge> {name} <for> {description}?", T),
        ("need", "last", "I need an <invoice> for {name} <for> {description}.", T),
        ("terse", "colon", "<invoice>: {name}, {description}.", T),
        ("q", "paren", "Could you <create> an <invoice> ({description}) for {name}?", H),
        ("polite", "colon", "Please <create> this <invoice>: {name}, {description}.", H),
        ("first", "first", "{description} - <charge> {name}.", H),
    ),
    "missing_course": (
        ("imp", "last", "<register> {name} for a <course>.", T),
        ("q", "last", "Can you <register> {name} for a <course>?", T),
        ("need", "last", "I need {name} registered for a <course>.", T),
        ("first", "first", "{name} wants to take a <course>. <register> them.", T),
        ("terse", "colon", "<register>: {name}, some <course>.", T),
        ("q", "first", "{name} - can you <register> them for a <course>?", H),
        ("polite", "colon", "Please <register> this student for a <course>: {name}.", H),
        ("need", "paren", "I need a <course> place for a student ({name}).", H),
    ),
}

# Which frame group phrases an intent (template key -> group; tasks.template_key).
GROUP_OF: dict[str, str] = {
    "shop_find": "find", "shop_add": "add", "shop_near_miss": "add", "shop_out_of_stock": "add",
    "shop_checkout": "checkout", "shop_missing_info": "checkout_missing", "shop_cart_total": "cart_total",
    "shop_buy": "buy", "office_customer": "customer", "office_invoice": "invoice",
    "office_invoice_by_name": "invoice", "office_find_invoices": "find_invoices", "office_sum": "sum",
    "office_unpaid_total": "unpaid", "office_course": "course", "office_activity": "activity",
    "office_missing_info:amount": "missing_amount", "office_missing_info:course code": "missing_course",
}

# -- two goals: a clause per goal, and joiners that put two clauses in one request -----------
CLAUSES: dict[str, tuple[tuple[str, bool], ...]] = {
    "course": (("<register> {name} for {course}", T), ("<register> {name} on <course> {course}", T),
               ("put {name} on {course}", H)),
    "activity": (("<tellme> the <status> of <activity> {activity}", T), ("check <activity> {activity}", T),
                 ("find out how {activity} is going", H)),
    "add": (("<add> {item} {sizep} <into> my <cart>", T), ("<add> {item} ({size}) <into> the <cart>", T),
            ("get {item} {sizep} into my <cart>", H)),
    "cart_total": (("<tellme> my <cart> <total>", T), ("tell me what my <cart> comes to", T),
                   ("let me know the new <total>", H)),
    "invoice": (("<charge> {name} {amount} <for> {description}", T),
                ("<create> a {amount} <invoice> for {name} ({description})", T),
                ("put a {amount} <invoice> on {name}'s <customer> <for> {description}", H)),
    "unpaid": (("<tellme> what {name} owes in <unpaid> <invoice>s", T),
               ("<sum> the <unpaid> <invoice>s of {name}", T), ("work out {name}'s <unpaid> total", H)),
    "customer": (("<lookup> <customer> {name}", T), ("<tellme> the id and email of {name}", T),
                 ("find out who {name} is", H)),
    "sum": (("<sum> {amounts}", T), ("<tellme> what {amounts} add up to", T), ("total up {amounts}", H)),
}
JOINERS: tuple[tuple[str, bool], ...] = (
    ("{A} and {B}.", T),
    ("{A}, then {B}.", T),
    ("Please {A}, and also {B}.", T),
    ("Can you {A} and {B}?", T),
    ("{A}. After that, {B}.", T),
    ("First {A}; then {B}.", T),
    ("Two things: {A}, and {B}.", T),
    ("I need you to {A} and to {B}.", H),
    ("{A} - oh, and {B} too.", H),
    ("Could you {A}? Once done, {B}.", H),
    ("1) {A} 2) {B}", H),
)

# -- outside the world: what it is asked, by kind, and the topics it is asked about -----------
OUTSIDE_FRAMES: dict[str, tuple[tuple[str, bool], ...]] = {
    "greeting": (("<hello>!", T), ("<hello>, <howru>?", T), ("<hello> there.", T), ("<hello> there, <howru>?", T),
                 ("<hello>. <howru>?", T), ("<hello>! <howru>?", T), ("Yo, <hello>.", H),
                 ("<hello> - <howru>, friend?", H), ("<howru>? <hello>!", H)),
    "about": (("Who are you?", T), ("What can you do?", T), ("Are you a person or a bot?", T),
              ("What model are you?", T), ("What are you for?", T), ("Who made you?", T),
              ("What is your name?", T), ("Are you a real person?", T), ("Can you help me?", T),
              ("How do you work?", T), ("What do you know?", T),
              ("Tell me about yourself.", H), ("Are you ChatGPT?", H),
              ("What things can I ask you?", H)),
    "general": (("What is the capital of {country}?", T), ("How far is {city} from here?", T),
                ("Tell me a fact about {country}.", T), ("What language do they speak in {country}?", T),
                ("Who wrote {book}?", T), ("What is the population of {country}?", T), ("How old is {city}?", T),
                ("Who painted the Mona Lisa?", T), ("Explain {science} to me.", T), ("What is {science}?", T),
                ("What time is it in {city}?", H), ("Summarise {book} for me.", H),
                ("Why does {science} matter?", H)),
    "unsupported": (("Book a flight to {city}.", T), ("What's the weather in {city} tomorrow?", T),
                    ("Write a Python function that sorts a list.", T), ("Find me a hotel in {city}.", T),
                    ("Translate {book} into French.", T), ("Order a pizza to my house.", T),
                    ("Write a poem about {science}.", T), ("Set an alarm for 7 am.", T),
                    ("Send an email to my boss.", T), ("Call a taxi to {city}.", T),
                    ("Convert 10 euros to dollars.", T),
                    ("Get me a train ticket to {city}.", H), ("Will it rain in {city} this weekend?", H),
                    ("Debug my JavaScript code.", H), ("Play some music.", H)),
}
# topics: each value belongs to one split by its hash, as the world's entities do
COUNTRIES = ("France", "Japan", "Brazil", "Kenya", "Norway", "Peru", "Canada", "Egypt", "India", "Chile",
             "Spain", "Ghana", "Mexico", "Poland", "Vietnam", "Iceland", "Morocco", "Greece", "Nepal", "Cuba")
CITIES = ("Rome", "Oslo", "Lima", "Cairo", "Tokyo", "Paris", "Madrid", "Dublin", "Vienna", "Prague",
          "Lisbon", "Seoul", "Hanoi", "Quito", "Athens", "Warsaw", "Nairobi", "Sydney", "Boston", "Denver")
BOOKS = ("Hamlet", "Don Quixote", "Moby Dick", "War and Peace", "Dracula", "Emma", "Ulysses", "Beloved",
         "Frankenstein", "Middlemarch", "Jane Eyre", "The Odyssey", "Macbeth", "Persuasion", "Walden")
SCIENCES = ("gravity", "photosynthesis", "black holes", "inflation", "evolution", "magnetism", "volcanoes",
            "tides", "rainbows", "vaccines", "DNA", "entropy", "earthquakes", "lightning", "electricity")

# Which clause group phrases each goal of a two-goal request.
CLAUSE_OF: dict[str, str] = {
    "office_course": "course", "office_activity": "activity", "shop_add": "add", "shop_cart_total": "cart_total",
    "office_invoice_by_name": "invoice", "office_unpaid_total": "unpaid", "office_customer": "customer",
    "office_sum": "sum",
}
