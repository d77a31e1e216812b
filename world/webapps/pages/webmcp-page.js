// The page side of WebMCP, shared by the shop and the office: the session in the URL, the JSON
// API, the app's tools fetched from the server's one registry, each input checked against its
// schema, and the tools registered with document.modelContext (navigator.modelContext and
// provideContext for older consumers). Tool results are data: callers show them with
// textContent only.

export const params = new URLSearchParams(location.search);

export async function api(path, body) {
  const init = body === undefined ? {} : {method: "POST", headers: {"content-type": "application/json"},
                                          body: JSON.stringify(body)};
  const response = await fetch(`/apps/api/${path}`, init);
  const value = await response.json();
  if (!response.ok) throw new Error(value.error || `The server answered ${response.status}.`);
  return value;
}

// The session id from ?session=, or a new session put into the URL (so a reload keeps the world).
export async function sessionId() {
  let id = params.get("session");
  if (!id) {
    id = (await api("sessions", {})).session;
    params.set("session", id);
    history.replaceState(null, "", `${location.pathname}?${params}${location.hash}`);
  }
  return id;
}

// Going to another session of this page without a reload (the benchmark's next task in the same
// tab): window.startOver(url) puts url's query in the address, drops the #fragment (the start
// view), and has `reset(session)` redraw the page as a fresh load on that session would show it.
// The tools stay registered: they are the same for every session. A url of another page answers
// false, and the caller loads it instead. {draw: false}: the session's world is not fetched, the
// caller's next tool call brings it (every call answers with the page's state) and draws it.
export function offerStartOver(reset) {
  window.startOver = async (href, {draw = true} = {}) => {
    const next = new URL(href, location.href);
    if (next.origin !== location.origin || next.pathname !== location.pathname || !next.searchParams.get("session"))
      return false;
    for (const key of [...params.keys()]) params.delete(key);
    for (const [key, value] of next.searchParams) params.set(key, value);
    history.replaceState(null, "", `${location.pathname}?${params}`);
    document.getElementById("page-error").hidden = true;
    // the last task's highlights (a load has none)
    for (const node of document.querySelectorAll(".flash")) node.classList.remove("flash");
    await reset(params.get("session"), draw);
    window.scrollTo(0, 0);
    return true;
  };
}

export async function fetchTools(app) {
  return (await api(`tools?app=${encodeURIComponent(app)}`)).tools;
}

// The JSON Schema keywords the registry uses (world/tools.py), checked as the server checks
// them: a list of sentences, empty when the value fits.
export function problems(schema, value, where = "input") {
  const out = [];
  const type = schema.type;
  const isType = {
    object: v => v !== null && typeof v === "object" && !Array.isArray(v),
    array: Array.isArray, string: v => typeof v === "string", boolean: v => typeof v === "boolean",
    number: v => typeof v === "number" && Number.isFinite(v), integer: Number.isInteger,
  };
  if (type && !isType[type](value)) return [`${where} must be ${type === "integer" ? "an" : "a"} ${type}`];
  if (schema.enum && !schema.enum.includes(value)) out.push(`${where} must be one of ${schema.enum.join(", ")}`);
  if (type === "string" && schema.minLength !== undefined && [...value].length < schema.minLength)
    out.push(`${where} must have at least ${schema.minLength} character(s)`);
  if (type === "number" || type === "integer") {
    if (schema.minimum !== undefined && value < schema.minimum) out.push(`${where} must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) out.push(`${where} must be at most ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum)
      out.push(`${where} must be more than ${schema.exclusiveMinimum}`);
  }
  if (type === "array") {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      out.push(`${where} must hold at least ${schema.minItems} item(s)`);
    value.forEach((item, i) => out.push(...problems(schema.items || {}, item, `${where}[${i}]`)));
  }
  if (type === "object") {
    const properties = schema.properties || {};
    for (const key of schema.required || []) if (!(key in value)) out.push(`${key} is required`);
    for (const [key, item] of Object.entries(value)) {
      if (key in properties) out.push(...problems(properties[key], item, key));
      else if (schema.additionalProperties === false) out.push(`${key} is not an argument of this tool`);
    }
  }
  return out;
}

export function modelContext() {
  return document.modelContext || navigator.modelContext || null;
}

// Register `definitions` (from fetchTools) whose names have a handler; each handler gets the
// checked input and returns the server's response. Returns an AbortController: abort() withdraws
// them (registerTool's signal; provideContext is given the tools left).
export function registerTools(definitions, handlers) {
  const context = modelContext();
  const controller = new AbortController();
  if (!context) return controller;
  const tools = definitions.filter(d => handlers[d.name]).map(d => ({
    name: d.name, title: d.title, description: d.description, inputSchema: d.inputSchema,
    annotations: d.annotations,
    execute: async input => {
      const found = problems(d.inputSchema, input ?? {});
      return found.length ? {error: "invalid input", problems: found} : handlers[d.name](input ?? {});
    },
  }));
  if (typeof context.registerTool === "function") {
    for (const tool of tools) context.registerTool(tool, {signal: controller.signal}).catch(() => {});
  } else if (typeof context.provideContext === "function") {
    context.provideContext({tools});
    controller.signal.addEventListener("abort", () => context.provideContext({tools: []}));
  }
  return controller;
}

// A form's controls, one per schema property, built from the registry's schema (never typed here).
export function buildFields(form, schema, {labels = {}, skip = []} = {}) {
  const box = form.querySelector(".fields") || form;
  for (const [key, property] of Object.entries(schema.properties)) {
    if (skip.includes(key)) continue;
    const label = document.createElement("label");
    label.textContent = labels[key] || key.replaceAll("_", " ");
    let control;
    if (property.enum) {
      control = document.createElement("select");
      const any = new Option(schema.required.includes(key) ? "choose" : "any", "");
      control.append(any, ...property.enum.map(v => new Option(v, v)));
    } else {
      control = document.createElement("input");
      control.type = property.type === "integer" || property.type === "number" ? "number" : "text";
      if (property.type === "number") control.step = "any";
      if (property.minimum !== undefined) control.min = property.minimum;
      if (property.maximum !== undefined) control.max = property.maximum;
      if (property.minLength) control.minLength = property.minLength;
      if (property.type === "array") control.placeholder = "comma separated";
    }
    control.name = key;
    control.required = schema.required.includes(key);
    // a declarative tool's parameter description (the browser puts it in the schema it synthesizes)
    if (property.description) control.setAttribute("toolparamdescription", property.description);
    label.append(control);
    box.append(label);
  }
}

// The arguments a person typed into a form built by buildFields (empty optional fields left out).
export function readFields(form, schema) {
  const out = {};
  for (const [key, property] of Object.entries(schema.properties)) {
    const control = form.elements.namedItem(key);
    if (!control || control.value === "") continue;
    const text = control.value;
    if (property.type === "integer") out[key] = Number.parseInt(text, 10);
    else if (property.type === "number") out[key] = Number(text);
    else if (property.type === "array") out[key] = text.split(",").map(s => s.trim()).filter(Boolean).map(Number);
    else out[key] = text;
  }
  return out;
}

// Show an agent's input in the form it would have typed into, so a person sees the same form.
export function fillFields(form, input) {
  for (const control of form.elements) {
    if (!control.name) continue;
    const value = input[control.name];
    control.value = value === undefined ? "" : Array.isArray(value) ? value.join(", ") : String(value);
  }
}

export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

export function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = document.createElement("td");
    if (cell instanceof Node) td.append(cell); else td.textContent = String(cell);
    tr.append(td);
  }
  return tr;
}

export function money(amount) {
  return `$${amount}`;
}

// A short highlight on what just changed, for a person watching an agent.
export function flash(node) {
  node.classList.remove("flash");
  void node.offsetWidth;
  node.classList.add("flash");
}

export function showPageError(error) {
  const box = document.getElementById("page-error");
  box.textContent = error instanceof Error ? error.message : String(error);
  box.hidden = false;
}
