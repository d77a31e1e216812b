"""How a person words a request that leans on the earlier turns of a conversation: "add it",
"two more", "and what do I owe now?", "no, size M", "now invoice her for $40", "thanks!".
Data only; world/conversations.py picks a frame and fills it.

Each follow-up intent has training frames and held-out frames (sentence shapes never in
training: the conversation benchmark's follow-ups are worded with these only). Slots:
{qty} a count ("two", "2"), {size}, {color}, {amount} ("$40"), {description}, {name}, {course},
{activity}, {status} ("unpaid", "paid"), {value} and {label} (the detail a missing-information
request asked for), {obj} / {subj} / {pos} (a pronoun for the customer or student: "her", "she", "her").
WIDER holds more training frames, which only the grammar's `train` wording draws.
"""

from __future__ import annotations

# intent -> (training frames, held-out frames)
FRAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "follow_add": ((
        "Add it to my cart.", "Great, add it.", "Put it in the cart.", "I'll take it.",
        "Add {qty} of those.", "Ok, add {qty} of them to my cart.", "Perfect. I want {qty}.",
        "Add that one, please.", "Yes, add it to the cart.", "Get me {qty} of that one.",
        "Nice, put {qty} in my cart.", "Add the same one to the cart.",
    ), (
        "Sounds good, I'd like {qty} of it in the cart.", "That works for me, so into the cart with it.",
        "Then please drop {qty} of that into my basket.", "Lovely, I'm buying that one: cart it.",
    )),
    "follow_add_more": ((
        "Add {qty} more.", "{qty} more, please.", "Actually make it {qty} more.", "And {qty} more of the same.",
        "Add another {qty}.", "Can you add {qty} more of those?", "I need {qty} more of that one.",
        "Put {qty} more in the cart.",
    ), (
        "On second thought I want an extra {qty} of it.", "Let's throw in {qty} extra of the same item.",
        "Could I get {qty} additional ones?",
    )),
    "follow_cart_total": ((
        "And what do I owe now?", "What's the total now?", "How much is my cart now?", "What does that come to?",
        "And the total?", "So what is my cart total?", "How much do I owe for all of it?",
        "What's in my cart, and how much?",
    ), (
        "Where does that leave my bill?", "Okay, and how much does everything cost together?",
        "Right, so what am I paying in total at this point?",
    )),
    "follow_size": ((
        "No, size {size}.", "Sorry, I meant size {size}.", "Actually I need it in {size}.", "What about size {size}?",
        "Do you have it in {size}?", "No, in size {size} please.", "And in size {size}?", "Make that size {size}.",
    ), (
        "Hmm, my size is really {size}, is there one?", "Wrong size, I wear {size}: anything there?",
        "Is the same thing around in a {size}?",
    )),
    "follow_checkout": ((
        "My {label} is {value}.", "Sorry: {label} {value}.", "{value}", "It's {value}.", "Oh right, {label}: {value}.",
        "Here it is: {value}.", "Use {value}.", "My {label}: {value}. Go ahead.",
    ), (
        "Oops, forgot that, the {label} would be {value}.", "You can reach me at {value}, that's the {label}.",
        "Fine, {value} then, and place the order.",
    )),
    "follow_invoice": ((
        "Now invoice {obj} for {amount} for {description}.", "Bill {obj} {amount} for {description}.",
        "Create an invoice for {obj}: {amount}, {description}.", "Ok, invoice {obj} {amount} for {description}.",
        "Make a {amount} invoice for {obj} for {description}.", "Great. Now bill {obj} {amount} ({description}).",
        "Charge {obj} {amount} for {description}.", "Send {obj} an invoice for {description}, {amount}.",
    ), (
        "While we're at it, {subj} needs an invoice, {amount} for the {description}.",
        "Right, so put {amount} of {description} on a new invoice to {obj}.",
        "And {subj} should get a bill from us: {description}, {amount}.",
    )),
    "follow_invoice_amount": ((
        "{amount}", "It's {amount}.", "The amount is {amount}.", "Make it {amount}.", "{amount}, please.",
        "Sorry, {amount}.", "Oh, {amount}.", "Bill {amount}.",
    ), (
        "Forgot that, it comes to {amount}.", "Put it down as {amount} total.", "We agreed on {amount} with them.",
    )),
    "follow_course_code": ((
        "{course}", "Course {course}.", "It's {course}.", "The code is {course}.", "Sorry, {course}.",
        "{course}, please.", "Put {obj} on {course}.",
    ), (
        "That would be the {course} one.", "Oh yes, sign {obj} onto {course} then.", "Go with {course} for {obj}.",
    )),
    "follow_find_invoices": ((
        "And {pos} invoices?", "Now list {pos} invoices.", "Which invoices does {subj} have?",
        "Show me {pos} {status} invoices.", "Any {status} invoices for {obj}?", "What invoices are there for {obj}?",
        "Which of {pos} invoices are {status}?", "List {pos} {status} invoices, please.",
    ), (
        "Pull up every invoice on file for {obj}, would you?", "Next, does {subj} have anything {status} on record?",
        "And the bills we sent {obj}, which are they?",
    )),
    "follow_unpaid_total": ((
        "What does {subj} owe?", "How much does {subj} owe us?", "And {pos} unpaid total?",
        "Add up {pos} unpaid invoices.", "How much is unpaid for {obj}?", "What is {pos} unpaid total?",
    ), (
        "Tally up what {subj} still hasn't paid.", "So in total, how much is outstanding from {obj}?",
    )),
    "follow_sum_those": ((
        "What do those add up to?", "Add those up.", "And the sum of those?", "Total them, please.",
        "What's the total of those invoices?", "Sum them up.", "How much is that together?",
    ), (
        "Give me one figure for all of them combined.", "Combined, what does that list come to?",
    )),
    "follow_course": ((
        "Register {obj} for {course}.", "Now sign {obj} up for {course}.", "Also enroll {obj} in {course}.",
        "Put {obj} on the {course} course.", "Book {obj} a place on {course}.", "And register {obj} for {course} too.",
    ), (
        "One more thing, {subj} wants a seat on {course}.", "Could {subj} also join {course}?",
    )),
    "follow_course_same": ((
        "And {name} too.", "Same course for {name}.", "Register {name} for it as well.", "Also sign up {name}.",
        "Now {name}, same course.", "Put {name} on it too.",
    ), (
        "{name} would like to come along to that one.", "Please add {name} to the same class.",
    )),
    "follow_activity": ((
        "And {activity}?", "What about {activity}?", "Now check {activity}.", "And the status of {activity}?",
        "Same for {activity}.", "How about activity {activity}?",
    ), (
        "Then {activity}, how is that one doing?", "One more to check, {activity}.",
    )),
    "closing": ((
        "Thanks!", "Thank you, that's all.", "Great, thanks.", "That's everything, bye!", "Perfect, thank you!",
        "Thanks a lot.", "Ok thanks, bye.", "Cheers, that's all for now.",
    ), (
        "Much appreciated, I'm done here.", "Brilliant, nothing else from me.", "You've been a big help, take care.",
    )),
}
FOLLOW_INTENTS = tuple(FRAMES)

# More training frames, for the grammar's `train` wording only (the templates' wording, which the
# office-six chains use, keeps FRAMES' first tuple alone, so that committed set stays as drawn):
# the widened lessons of issue 49 in everyday and casual register ("add {qty} pls", "thx, that's it").
# None shares five words in a row with a held-out frame (tests/world/test_conversations.py).
_WIDER_V12: dict[str, tuple[str, ...]] = {
    "follow_add": ("ok add it", "Yes please, add {qty}.", "That one. Add it to my bag.", "I want it, add it please.",
        "Go ahead and add {qty} to my cart.", "add {qty} pls", "Sure, I'll have {qty} of those.", "Add it, thanks."),
    "follow_add_more": ("Make that {qty} more.", "Can I have {qty} more?", "plus {qty} more pls",
        "Add {qty} more of that one.", "I'll take {qty} more of it.", "Another {qty}, please.",
        "Give me {qty} more of that."),
    "follow_cart_total": ("how much now?", "What's my total?", "Tell me the cart total.", "What's the damage?",
        "Can you check my cart total?", "What does it all cost?", "What do I pay now?", "Show me the total, please."),
    "follow_size": ("Can I get it in {size} instead?", "{size} please, not that one.", "Got it in {size}?",
        "Try size {size}.", "I need a {size}.", "Check size {size} instead.", "Is it in stock in {size}?"),
    "follow_checkout": ("{label}: {value}", "my {label} is {value} thx", "Sure, it's {value}.", "Right, {value}.",
        "The {label} is {value}, go on.", "Here you go, {value}.", "{value} is my {label}.", "Ah sorry, {value}."),
    "follow_invoice": ("Invoice {obj}: {amount} for {description}.", "pls bill {obj} {amount} for {description}",
        "Can you invoice {obj} {amount} for {description}?",
        "Also an invoice for {obj}, {amount}, for {description}.",
        "Raise an invoice for {obj}: {amount}, {description}.",
        "Issue {obj} an invoice of {amount} for {description}."),
    "follow_invoice_amount": ("That's {amount}.", "Amount: {amount}.", "Use {amount}.", "Should be {amount}.",
        "{amount} for that one.", "{amount} in all."),
    "follow_course_code": ("Code {course}.", "{course} is the one.", "Use {course}.", "Course code: {course}.",
        "Enroll {obj} in {course}.", "Make it {course}."),
    "follow_find_invoices": ("Show {pos} invoices.", "list invoices for {obj}",
        "Has {subj} got any {status} invoices?", "Can you find {pos} invoices?", "Get {pos} {status} invoices.",
        "Find the {status} ones for {obj}.", "Check {pos} invoices, please."),
    "follow_unpaid_total": ("What is {subj} owing?", "What's {pos} unpaid balance?",
        "Total of {pos} unpaid invoices?", "Sum {pos} unpaid invoices.", "What's left unpaid for {obj}?",
        "What does {subj} still owe?"),
    "follow_sum_those": ("Add them up.", "Sum those, please.", "What's the sum?", "Total?", "And all together?",
        "What do they come to?", "How much do those make together?"),
    "follow_course": ("Can you register {obj} for {course}?", "Get {obj} a spot in {course}.",
        "Book {obj} into {course}, please.", "{course} for {obj}, thanks."),
    "follow_course_same": ("{name} as well, please.", "Also {name}, same one.", "Register {name} too.",
        "And sign up {name} for that course.", "Can {name} join it too?", "Enroll {name} in it too."),
    "follow_activity": ("{activity}?", "Check {activity} too.", "What's the status of {activity}?",
        "Look up {activity} as well.", "And {activity}, please.", "Status of {activity}?"),
    "closing": ("thx, that's it", "That's all, thank you.", "Awesome, thanks!", "No, that's all.",
        "All good, thanks.", "Nothing more, thanks.", "Cool, thanks a bunch.", "Great, that's it for today.",
        # goodbyes with no "thanks" in them: stage 4's BD twin read "nothing else from me" as a
        # request it could not serve and refused it (models/README.md, stage 4)
        "Excellent, I'm all set.", "Superb, we're finished.", "Nope, that covers it.", "I'm good now, bye.",
        "Wonderful, no more questions.", "Fantastic, that's me sorted.", "You helped a lot, goodbye.",
        "Appreciate it, all done."),
}

# Corpus v14 (issue 49, after stage 6): a second round of everyday wording, each lesson about
# doubled. Stage 6's BD twin failed 33 of 65 held-out follow-ups and half the held-out goodbyes
# while its validation loss still fell: it had read each lesson in ~15 shapes, too few to carry
# one it had not read. Written fresh, not from the held-out frames (the five-word test holds).
# Corpus v15 rewords two invoice frames of v14 that completed the 4-grams of two hand-written
# requests (tests/training/test_handwritten_excluded.py).
_WIDER_V14: dict[str, tuple[str, ...]] = {
    "follow_add": ("Looks good, add {qty} to the cart.", "Stick it in my basket.", "Yep, that one goes in the cart.",
        "I'd like that, add it.", "Alright, {qty} of those into the cart please.", "Ok then, cart {qty} of it.",
        "Grab me {qty} of that.", "Into the basket it goes.", "Fine, I'll buy it: add {qty}."),
    "follow_add_more": ("Bump it up by {qty}.", "Throw {qty} more in.", "I want {qty} more of them.",
        "Add {qty} extra, please.", "Let me have {qty} more.", "Up it by {qty}, please.",
        "{qty} more of the same thing, thanks."),
    "follow_cart_total": ("What's the cart at now?", "How much am I spending so far?", "And what's my bill now?",
        "Total so far?", "Give me the total for my cart.", "What will all of that cost me?",
        "How much is everything in the cart?", "So how much do I pay?"),
    "follow_size": ("That won't fit, I need {size}.", "I'm a {size}, do you have that?", "Same one in {size}?",
        "My size is {size}, not that one.", "Could you look for a {size} instead?", "Is there a {size} of it?",
        "Size {size} would fit me better."),
    "follow_checkout": ("{value}, that's my {label}.", "For the {label}, use {value}.",
        "Sorry, the {label} is {value}.", "Put {value} as the {label}.", "Of course: {value}.", "ok {value}",
        "Yes, {value}. Please go on."),
    "follow_invoice": ("Next, an invoice to {obj}, {description}, amount {amount}.",
        "Let's bill {obj} {amount} (that's {description}).",
        "I also need a {amount} invoice to {obj}, for {description}.",
        "Please put {amount} for {description} on an invoice for {obj}.",
        "Time to invoice {obj}: {description}, {amount}.",
        "Could you bill {obj} for the {description}? It's {amount}."),
    "follow_invoice_amount": ("{amount} is the figure.", "Charge {amount}.", "The total is {amount}.",
        "Go with {amount}.", "Let's say {amount}.", "{amount} on the invoice."),
    "follow_course_code": ("The course is {course}.", "{course} for {obj}.", "It should be {course}.",
        "Sign {obj} up for {course}.", "Ah, {course}.", "Let's go with {course}."),
    "follow_find_invoices": ("What has {subj} been invoiced?", "Look up {pos} invoices.", "Bring up {pos} bills.",
        "Which bills have we sent {obj}?", "All of {pos} invoices, please.", "Does {subj} have {status} invoices?",
        "Get me every invoice {subj} has."),
    "follow_unpaid_total": ("How much is {subj} behind?", "What's the outstanding amount for {obj}?",
        "What does {subj} owe in total?", "Total up {pos} unpaid bills.", "How much has {subj} not paid yet?",
        "Sum what {subj} owes.", "What's {pos} open balance?"),
    "follow_sum_those": ("Sum it all up.", "What's the grand total?", "Add all of those together.",
        "One total for those, please.", "Together, how much is that?", "What's the combined amount?",
        "Total those up for me.", "All in, what's the sum?"),
    "follow_course": ("Enrol {obj} in {course} as well.", "Also put {obj} down for {course}.", "Add {obj} to {course}.",
        "Get {obj} onto {course} too.", "I'd like {obj} registered for {course}.", "Next, {course} for {obj}."),
    "follow_course_same": ("{name} wants that course too.", "Same class for {name}, please.",
        "Book {name} on it as well.", "{name} should join that one too.", "Put {name} in that course too.",
        "Add {name} to it as well."),
    "follow_activity": ("Next up, {activity}.", "Check on {activity} now.", "What about the {activity} one?",
        "How's {activity} going?", "{activity} too, please.", "Where is {activity} at?"),
    "closing": ("Super, that's everything from me.", "Great, I'll leave it there.", "That does it, thanks so much.",
        "Thanks, you've been great.", "Cheers, bye for now.", "That's all I needed, goodbye.",
        "Perfect, I'm finished.", "You were very helpful, bye.", "Alright, no more for today.", "Many thanks, see you.",
        "Terrific, nothing further.", "Splendid, that's the lot."),
}

# Corpus v18 (issue 49, after stage 8): a third round for the lessons the BD twin still misses most
# on the held-out conversations (stage 8: the same course for someone else 2 / 9, where the AR twin
# has 9 / 9; a total of the listed amounts 5 / 10; an earlier customer's invoices 0 / 4), and more
# shapes for the size, "more of it" and another course. In most of those misses the twin asked for
# what the request had given or the history held ("Please give the student name."): each frame
# here names the new person or leans on "it", "those", "them" so that the answer is a call, never
# a question. Written fresh; the five-word test and the near-copy check hold.
_WIDER_V18: dict[str, tuple[str, ...]] = {
    "follow_course_same": ("{name} is keen on the same course.", "Could you fit {name} into it as well?",
        "{name} wants in on that one too.", "Enrol {name} on the same one, please.",
        "{name} asked to be signed up for it too.", "Sign {name} up as well, same code.",
        "One more student for that course: {name}.", "{name} needs a spot on it too.",
        "Can we squeeze {name} in there as well?", "Another one for it: {name}."),
    "follow_sum_those": ("Add the lot up for me.", "Can I get a single total for those?", "How much is that all told?",
        "Put those together, what's the sum?", "What's the figure if you add them?", "Those amounts - total please.",
        "Sum that list for me.", "Now a total of those, thanks."),
    "follow_find_invoices": ("Are there any {status} bills for {obj}?", "Bring up {pos} {status} invoices too.",
        "Show everything we've billed {obj}.", "I'd like to see {pos} invoices now.",
        "Anything {status} under {pos} name?", "Let me see the invoices for {obj}.",
        "Which {status} invoices belong to {obj}?", "Now over to {pos} invoices."),
    "follow_unpaid_total": ("What's the unpaid sum for {obj}?", "What money is owed by {obj}?",
        "Work out {pos} outstanding total.", "What's left for {obj} to pay?", "And {pos} balance due?",
        "How much is still open for {obj}?"),
    "follow_size": ("Too small for me, is there a {size}?", "Check for a {size} one, please.",
        "Any chance of a {size}?", "{size} is what I wear, look again.", "Hmm, what if I go for {size}?",
        "Is a {size} available?"),
    "follow_add_more": ("Add {qty} more to that, please.", "Let's have {qty} more.", "Put in another {qty} of it.",
        "I'll need {qty} further ones.", "Top it up with {qty} more."),
    "follow_course": ("Can {subj} take {course} too?", "{course} for {obj} too, if you would.",
        "Put {obj} into {course} next.", "Please enrol {obj} for {course}."),
}

# Corpus v19 (issue 49, after stage 10): a fourth round for the lessons stage 10's BD twin missed
# most on the held-out conversations: the same course for someone else (2 / 9: it asked "Please
# give the course code." though the history held it, when the request said "class" or opened with
# the name), a total of the listed amounts (3 / 10: "Give me ..." read as a customer called Give),
# the unpaid total of an earlier customer (1 / 5: read as the cart's total, or as the paid
# invoices when the request said "hasn't paid"), and that customer's invoices (2 / 4). Each frame
# here is a call the history answers, in the words that misled it ("class", "join", "give me",
# "in total", "hasn't paid", "on file"), in shapes of their own. Written fresh; the five-word test
# and the near-copy check hold.
_WIDER_V19: dict[str, tuple[str, ...]] = {
    "follow_course_same": ("{name} wants to join that class too.", "Could {name} join the same class?",
        "Add {name} to that class as well.", "{name} would like a seat in that class too.",
        "Put {name} in the same class, please.", "{name} also wants that class.", "Enrol {name} in that class too.",
        "{name} is coming to that class as well.", "Same class for one more: {name}.",
        "{name} will join too, same class.", "Let {name} join it as well.", "Can {name} come to that one too?"),
    "follow_sum_those": ("Give me the total of them.", "Give me a single number for those.",
        "Give me the sum of all of them.", "One number for all of those, please.", "All of them combined, how much?",
        "Tell me what those come to.", "Work out the total of that list.", "What's that list worth in total?",
        "Total that list, please.", "Let me have one sum for them all.", "What do they all come to together?"),
    "follow_unpaid_total": ("In total, what does {subj} still have to pay?", "So how much is {subj} behind in total?",
        "What's outstanding from {obj} in total?", "Tally what {subj} owes us.",
        "Add up everything {subj} hasn't paid.", "Sum up what {subj} hasn't paid yet.",
        "How much does {subj} owe us altogether?", "So what is {subj} still owing in all?",
        "Give me {pos} unpaid total."),
    "follow_find_invoices": ("Does {subj} have any {status} ones on file?", "Is there anything {status} for {obj}?",
        "What's on file for {obj}?", "Check which {status} invoices {subj} has.", "Any bills on record for {obj}?",
        "Next, what invoices has {subj} got?", "Give me {pos} {status} invoices."),
    "follow_add_more": ("Could I have {qty} extra?", "Could you add {qty} more?", "I'd like {qty} extra ones.",
        "Could I get {qty} of them on top?", "Give me {qty} more of those."),
    "follow_checkout": ("Oh, I forgot: the {label} is {value}.", "My {label} should be {value}.",
        "Forgot to say, {label} {value}.", "Missed that: {value} is the {label}."),
    "closing": ("Brilliant, I'm done.", "That's all from me.", "Lovely, nothing more needed.",
        "Great, no further requests.", "Marvellous, that will do."),
}
WIDER: dict[str, tuple[str, ...]] = {intent: frames + _WIDER_V14[intent] + _WIDER_V18.get(intent, ())
                                     + _WIDER_V19.get(intent, ())
                                     for intent, frames in _WIDER_V12.items()}

# what a pronoun frame may say for a customer or a student: (object, subject, possessive)
PRONOUNS = (("her", "she", "her"), ("him", "he", "his"), ("them", "they", "their"))
# a short thanks that may open a request after an answer ("Thanks! Now ...")
THANKS_OPENERS = ("", "", "", "", "", "Thanks! ", "Great, thanks. ", "Thank you. ", "Perfect. ", "Ok. ")
# more of them, for the grammar's `train` wording only (corpus v14), as the wider frames are
WIDER_THANKS_OPENERS = ("Nice, thanks. ", "Awesome. ", "Cheers! ", "Super, thank you. ", "Good stuff. ",
                        "Thanks a lot. ", "Brill. ", "Ta. ")
HELDOUT_THANKS_OPENERS = ("", "", "", "Lovely, cheers. ", "Nice one. ")
