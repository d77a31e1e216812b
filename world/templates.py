"""Paraphrase templates of every intent (what the user says) and the one answer template
of each (what `finish` says). Data only; tasks.py fills the slots.

Slots: item ("a blue hoodie" / "2 blue hoodies"), style, color, size, qty, name, email,
address, details ("name X, email Y"), customer_id, amount, description, which ("unpaid " or
""), amounts ("120, 45 and 300"), course, activity, and for documents role, company, years,
skills, title, heading, text, items, href, label.
"""

from __future__ import annotations

SHOP_ITEM = (
    "Add {item} in size {size} to my cart.",
    "Put {item}, size {size}, in the cart.",
    "I want {item} in {size}. Add to my cart.",
    "Please add {item} in size {size} to the cart.",
    "Get me {item} in size {size}.",
    "Add to cart: {item}, size {size}.",
    "Can you add {item} in size {size} to my cart?",
)
CHECKOUT_DETAILS = (
    "Check out as a guest: {details}.",
    "Guest checkout please. {details}.",
    "Place my order as a guest with {details}.",
    "Buy what is in my cart: {details}.",
)

INSTRUCTIONS: dict[str, tuple[str, ...]] = {
    "shop_find": (
        "Find a {color} {style} in size {size}.",
        "Do you have a {color} {style} in {size}?",
        "I'm looking for a {style}, {color}, size {size}. Which one is it?",
        "Which {style} comes in {color} and size {size}?",
        "Show me the {color} {style} in size {size} and its price.",
        "Is there a size {size} {style} in {color}?",
        "Look up a {color} {style}, size {size}.",
    ),
    "shop_add": SHOP_ITEM,
    "shop_near_miss": SHOP_ITEM,
    "shop_out_of_stock": SHOP_ITEM,
    "shop_checkout": CHECKOUT_DETAILS + (
        "Check out as a guest: {name}, {email}, {address}.",
        "Place my order as guest {name} ({email}), shipping to {address}.",
        "I'm {name}, email {email}. Send the cart to {address}.",
        "Order the cart for {name} at {address}; email {email}.",
    ),
    "shop_missing_info": CHECKOUT_DETAILS + (
        "Order the cart. My {details}.",
        "Check out my cart as a guest, {details}.",
    ),
    "shop_cart_total": (
        "What is my cart total?",
        "How much is my cart?",
        "Show me my cart total.",
        "What do I owe for the cart?",
        "Tell me the total of my cart.",
    ),
    "shop_buy": (
        "Buy {item} in size {size} as a guest: {name}, {email}, {address}.",
        "Order {item} ({size}) for {name}, {email}, shipping to {address}.",
        "Add {item} in {size} to the cart and check out as {name} ({email}), {address}.",
        "I'm {name} ({email}). Buy {item} in size {size} and send to {address}.",
        "Get {item}, size {size}, and check out as guest {name}, {email}, {address}.",
    ),
    "office_customer": (
        "Look up customer {name}.",
        "What is the customer id and email of {name}?",
        "Find {name} in the customer list.",
        "Who is {name}? Give me their id and email.",
        "Get the customer record for {name}.",
        "I need the customer id of {name}.",
    ),
    "office_invoice": (
        "Create an invoice for customer {customer_id}: ${amount} for {description}.",
        "Bill {customer_id} ${amount} for {description}.",
        "Invoice customer {customer_id} for {description}, amount ${amount}.",
        "Make a ${amount} invoice for {customer_id} ({description}).",
        "New invoice: customer {customer_id}, {description}, ${amount}.",
    ),
    "office_invoice_by_name": (
        "Create an invoice for {name}: ${amount} for {description}.",
        "Bill {name} ${amount} for {description}.",
        "Invoice {name} for {description}, amount ${amount}.",
        "Make a ${amount} invoice for {name} ({description}).",
        "New invoice: customer {name}, {description}, ${amount}.",
    ),
    "office_find_invoices": (
        "List the {which}invoices of {name}.",
        "Which {which}invoices does {name} have?",
        "Show the {which}invoices for {name}.",
        "Find {which}invoices for customer {name}.",
        "What {which}invoices are there for {name}?",
    ),
    "office_sum": (
        "Add up {amounts}.",
        "What is the sum of {amounts}?",
        "Sum these amounts: {amounts}.",
        "Total of {amounts}, please.",
        "How much is {amounts} together?",
    ),
    "office_unpaid_total": (
        "What does {name} owe in unpaid invoices?",
        "Sum the unpaid invoices of {name}.",
        "How much is unpaid for {name}?",
        "What is the unpaid total of {name}?",
        "Add up every unpaid invoice of {name}.",
    ),
    "office_course": (
        "Register {name} for {course}.",
        "Sign {name} up for course {course}.",
        "Enroll {name} in {course}.",
        "Please put {name} on the {course} course.",
        "{name} wants to take {course}. Register them.",
        "Book a place on {course} for {name}.",
    ),
    "office_activity": (
        "What is the status of activity {activity}?",
        "Is {activity} done yet?",
        "Check activity {activity}.",
        "Status of {activity}?",
        "How is activity {activity} going?",
        "Tell me where {activity} stands.",
    ),
    # the missing-information office case, one table per missing field
    "office_missing_info:amount": (
        "Create an invoice for {name} for {description}.",
        "Bill {name} for {description}.",
        "Invoice {name} for {description}, please.",
        "Make an invoice for {name} ({description}).",
        "New invoice: customer {name}, {description}.",
    ),
    "office_missing_info:course code": (
        "Register {name} for a course.",
        "Sign {name} up for a course.",
        "Enroll {name} in a course, please.",
        "{name} wants to take a course. Register them.",
        "Book a course place for {name}.",
    ),
    "doc_resume": (
        "Write a LaTeX resume for {name} ({email}): {role} at {company}, {years}. Skills: {skills}.",
        "LaTeX resume please. {name}, {email}, {role} at {company} {years}, skills {skills}.",
        "Make a short LaTeX CV: {name}, {email}; {role}, {company}, {years}; skills: {skills}.",
        "Resume in LaTeX for {name} <{email}>. Job: {role} at {company} ({years}). Skills: {skills}.",
        "Typeset a resume: {name}, email {email}, {role} at {company} {years}, skilled in {skills}.",
    ),
    "doc_html": (
        "Make an HTML page titled {title} with heading {heading}, the text {text} "
        "a list of {items} and a link {label} to {href}.",
        "HTML page: title {title}; h1 {heading}; paragraph {text} list {items}; link {label} -> {href}.",
        "Write a web page called {title}. Heading: {heading}. Text: {text} Items: {items}. Link: {label} ({href}).",
        "Build a small HTML page ({title}) with a {heading} heading, {text} "
        "a list {items} and a link to {href} named {label}.",
        "Page spec: title {title}, heading {heading}, text {text} list {items}, link {label} at {href}. Give the HTML.",
    ),
}

# What `finish` says; one per intent so the answer is regular.
ANSWERS: dict[str, str] = {
    "shop_find": "Found {id} for ${price}.",
    "shop_add": "Added {qty} x {id} in size {size}.",
    "shop_near_miss": "Sorry, a {color} {style} in size {size} is not available.",
    "shop_out_of_stock": "Added {qty} x {id} in size {size}.",
    "shop_checkout": "Order {order} placed, total ${total}.",
    "shop_missing_info": "Please give your {missing}.",
    "shop_cart_total": "Your cart total is ${total}.",
    "shop_buy": "Order {order} placed, total ${total}.",
    "office_customer": "{name} is {id}, {email}.",
    "office_invoice": "Created invoice {invoice} for {customer_id}.",
    "office_invoice_by_name": "Created invoice {invoice} for {customer_id}.",
    "office_find_invoices": "Invoices: {ids}.",
    "office_find_invoices:none": "No {which}invoices found.",
    "office_sum": "The total is {sum}.",
    "office_unpaid_total": "{name} owes ${sum}.",
    "office_course": "Registered {name} for {course}.",
    "office_activity": "{activity} is {status}.",
    "office_missing_info": "Please give the {missing}.",
    # outside the world: one honest sentence, what Sprout is and what it can do (no tool call)
    "outside_greeting": "Hello! I am Sprout, a small shop and office agent: I can find and buy products and look "
                        "up customers, invoices, courses and activities.",
    "outside_about": "I am Sprout, a small shop and office agent: I can find and buy products and look up "
                     "customers, invoices, courses and activities.",
    "outside_general": "Sorry, I cannot answer that: I am Sprout, a small agent for this shop and office only.",
    "outside_unsupported": "Sorry, I cannot do that: I am Sprout, a small agent for this shop and office only.",
}
# what an outside-the-world answer must say, by kind
OUTSIDE_OUTPUTS: dict[str, tuple[str, ...]] = {
    "greeting": ("Sprout", "shop", "office"), "about": ("Sprout", "shop", "office"),
    "general": ("Sprout", "cannot", "shop", "office"), "unsupported": ("Sprout", "cannot", "shop", "office"),
}
