// The office: customers, invoices paid and unpaid, adding up amounts, courses and registrations,
// activities. One form per tool, built from the registry's schema; a person's submit and an
// agent's WebMCP call run the same `run(name, input)`: the form shows the input, the server runs
// the tool, the result and the tables show what changed.
import {api, buildFields, el, fetchTools, fillFields, flash, money, offerStartOver, params, problems, readFields,
        registerTools, row, sessionId, showPageError} from "./webmcp-page.js";

const $ = id => document.getElementById(id);
const state = {session: "", tools: {}};

function form(name) {
  return document.querySelector(`form[data-tool="${name}"]`);
}

function say(name, text) {
  const box = document.querySelector(`[data-result="${name}"]`);
  box.textContent = text;
  flash(box);
}

// What a tool's answer reads as, one sentence; errors as the world words them.
const SENTENCES = {
  get_customer: (input, a) => `${input.name}: ${a.id}, ${a.email}`,
  create_invoice: (input, a) => `Invoice ${a.id} created: ${money(input.amount)} for ${input.description}, unpaid.`,
  find_invoices: (input, a) => `${a.length} invoice(s) of ${input.customer_id}${input.status ? ` (${input.status})` : ""}.`,
  sum_amounts: (input, a) => `The sum is ${a.sum}.`,
  register_course: input => `${input.student_name} is registered for ${input.course_code}.`,
  get_activity_status: (input, a) => `Activity ${input.activity_id} is ${a.status}.`,
};

async function run(name, input) {
  fillFields(form(name), input);
  const {answer, state: world} = await api(`s/${state.session}/call?state=office`, {name, arguments: input});
  say(name, answer && answer.error ? `${answer.error}.` : SENTENCES[name](input, answer));
  if (name === "find_invoices") drawInvoiceResults(input, answer);
  draw(world);
  form(name).closest("section").scrollIntoView({block: "nearest"});
  return answer;
}

function drawInvoiceResults(input, answer) {
  const body = $("invoice-results").tBodies[0];
  body.replaceChildren();
  if (!Array.isArray(answer)) return;
  for (const invoice of answer) body.append(row([invoice.id, money(invoice.amount), invoice.status ?? input.status]));
  if (answer.length) {
    const add = el("button", "Add up these amounts", "small");
    add.type = "button";
    add.addEventListener("click", () => run("sum_amounts", {amounts: answer.map(i => i.amount)}).catch(showPageError));
    const cell = document.createElement("td");
    cell.colSpan = 3;
    cell.append(add);
    const tr = document.createElement("tr");
    tr.append(cell);
    body.append(tr);
  }
  flash($("invoice-results"));
}

function draw(world) {
  const names = Object.fromEntries(world.customers.map(c => [c.id, c.name]));
  $("customer-list").tBodies[0].replaceChildren(...world.customers.map(c => {
    const open = el("button", "Invoices", "small");
    open.type = "button";
    open.addEventListener("click", () => run("find_invoices", {customer_id: c.id}).catch(showPageError));
    return row([c.name, c.email, c.id, open]);
  }));
  $("invoice-list").tBodies[0].replaceChildren(...world.invoices.map(
    v => row([v.id, `${names[v.customer] ?? ""} (${v.customer})`, money(v.amount), v.status, v.description])));
  $("course-list").tBodies[0].replaceChildren(...world.courses.map(c => row([c.code, c.seats])));
  $("registration-list").tBodies[0].replaceChildren(...world.registrations.map(r => row(r)));
  $("activity-list").tBodies[0].replaceChildren(...world.activities.map(a => row([a.id, a.status])));
}

// Another session's world, drawn as a fresh load draws it: empty forms, no results (`fetch`
// false: the next tool call's answer brings the world, and draws it).
async function startOver(session, fetch = true) {
  state.session = session;
  $("to-shop").href = `/apps/shop/?${params}`;
  for (const tool of document.querySelectorAll("form[data-tool]")) tool.reset();
  for (const box of document.querySelectorAll("[data-result]")) box.textContent = "";
  $("invoice-results").tBodies[0].replaceChildren();
  if (fetch) draw(await api(`s/${session}/state?app=office`));
}

async function main() {
  state.session = await sessionId();
  $("to-shop").href = `/apps/shop/?${params}`;
  // the tools and the world at once: neither needs the other
  const [definitions, world] = await Promise.all([fetchTools("office"), api(`s/${state.session}/state?app=office`)]);
  const handlers = {};
  for (const definition of definitions) {
    const name = definition.name;
    state.tools[name] = definition;
    buildFields(form(name), definition.inputSchema);
    form(name).addEventListener("submit", event => {
      event.preventDefault();
      const input = readFields(event.target, definition.inputSchema);
      const found = problems(definition.inputSchema, input);
      if (found.length) { say(name, found.join("; ") + "."); return; }
      run(name, input).catch(showPageError);
    });
    handlers[name] = input => run(name, input);
  }
  registerTools(definitions, handlers);
  draw(world);
  offerStartOver(startOver);
  document.body.dataset.ready = "true";
}

main().catch(showPageError);
