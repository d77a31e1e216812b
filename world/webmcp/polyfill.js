// WebMCP for a browser without it, and a consumer for the agent driver (world/webmcp/driver.py).
// Run as an init script before any page script. Follows the draft spec (webmachinelearning/webmcp,
// index.bs and declarative-api-explainer.md): document.modelContext is an EventTarget with
// registerTool(tool, {signal}) and a `toolchange` event; navigator.modelContext is the same object,
// with provideContext({tools}) / clearContext() for pages written against the older API; a
// <form toolname tooldescription [toolautosubmit]> is a tool whose schema comes from its controls
// and whose call fills them and submits, the page answering through SubmitEvent.respondWith().
// Where the browser has its own WebMCP and its testing interface, that is used instead.
(() => {
  if (window.__webmcpConsumer) return;
  const JSONable = value => (value === undefined ? null : JSON.parse(JSON.stringify(value)));
  const failure = error => ({__webmcp: "page_error", message: String(error && error.message || error).slice(0, 500)});
  const testing = navigator.modelContextTesting;
  if (document.modelContext && testing && typeof testing.listTools === "function") {
    const parse = text => { try { return typeof text === "string" ? JSON.parse(text) : text; } catch { return text; } };
    window.__webmcpConsumer = {
      kind: "native", changes: 0,
      list: async () => (await testing.listTools()).map(t => ({
        name: t.name, title: t.title ?? null, description: t.description, inputSchema: parse(t.inputSchema) ?? {},
        annotations: {readOnlyHint: !!(t.annotations?.readOnlyHint ?? t.readOnlyHint),
                      untrustedContentHint: !!(t.annotations?.untrustedContentHint ?? t.untrustedContentHint)}})),
      call: async (name, input) => {
        try { return {value: JSONable(parse(await testing.executeTool(name, JSON.stringify(input))))}; }
        catch (error) { return failure(error); }
      },
    };
    document.modelContext.addEventListener?.("toolchange", () => { window.__webmcpConsumer.changes += 1; });
    return;
  }

  const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
  const tools = new Map();            // name -> {title, description, inputSchema (text), execute, annotations, owner}

  class ModelContext extends EventTarget {
    #handler = null;
    get ontoolchange() { return this.#handler; }
    set ontoolchange(fn) {
      if (this.#handler) this.removeEventListener("toolchange", this.#handler);
      this.#handler = typeof fn === "function" ? fn : null;
      if (this.#handler) this.addEventListener("toolchange", this.#handler);
    }

    registerTool(tool, options = {}) {
      return add(tool, options, "script");
    }

    // The older API: the tools given replace those given by an earlier provideContext.
    provideContext({tools: given = []} = {}) {
      for (const [name, entry] of [...tools]) if (entry.owner === "context") tools.delete(name);
      for (const tool of given) add(tool, {}, "context", false).catch(() => {});
      changed();
    }

    clearContext() {
      this.provideContext({tools: []});
    }

    unregisterTool(name) {
      if (tools.delete(name)) changed();
    }
  }

  const invalid = message => Promise.reject(new DOMException(message, "InvalidStateError"));

  function add(tool, {signal} = {}, owner, notify = true) {
    const name = tool?.name;
    if (typeof name !== "string" || !NAME.test(name)) return invalid("A tool name is 1-128 letters, digits, _ - or .");
    if (!tool.description) return invalid("A tool needs a description.");
    if (tools.has(name)) return invalid(`A tool called ${name} is registered already.`);
    if (typeof tool.execute !== "function") return Promise.reject(new TypeError("A tool needs an execute function."));
    let schema = "";
    try { schema = tool.inputSchema === undefined ? "" : JSON.stringify(tool.inputSchema); }
    catch (error) { return Promise.reject(error); }
    if (signal?.aborted) return Promise.reject(signal.reason);
    const entry = {title: tool.title ?? null, description: String(tool.description), inputSchema: schema,
                   execute: tool.execute, owner,
                   annotations: {readOnlyHint: !!tool.annotations?.readOnlyHint,
                                 untrustedContentHint: !!tool.annotations?.untrustedContentHint}};
    tools.set(name, entry);
    signal?.addEventListener("abort", () => { if (tools.get(name) === entry) { tools.delete(name); changed(); } });
    if (notify) changed();
    return new Promise(resolve => setTimeout(resolve, 0));
  }

  const context = new ModelContext();
  let pending = false;
  function changed() {
    if (pending) return;
    pending = true;
    setTimeout(() => { pending = false; window.__webmcpConsumer.changes += 1; context.dispatchEvent(new Event("toolchange")); }, 0);
  }
  Object.defineProperty(Document.prototype, "modelContext", {configurable: true, get: () => context});
  Object.defineProperty(Navigator.prototype, "modelContext", {configurable: true, get: () => context});

  // -- declarative tools: <form toolname tooldescription> -------------------------------------
  const forms = new Map();            // form -> the tool name it registered

  function propertyOf(control) {
    let schema;
    if (control.tagName === "SELECT") schema = {type: "string", enum: [...control.options].map(o => o.value).filter(v => v !== "")};
    else if (control.type === "checkbox") schema = {type: "boolean"};
    else if (control.type === "number" || control.type === "range") {
      schema = {type: control.step === "any" || (control.step && !Number.isInteger(Number(control.step))) ? "number" : "integer"};
      if (control.min !== "") schema.minimum = Number(control.min);
      if (control.max !== "") schema.maximum = Number(control.max);
    } else {
      schema = {type: "string"};
      if (control.minLength > 0) schema.minLength = control.minLength;
      if (control.maxLength >= 0 && control.hasAttribute("maxlength")) schema.maxLength = control.maxLength;
    }
    const description = control.getAttribute("toolparamdescription");
    if (description) schema.description = description;
    return schema;
  }

  // The spec's "synthesize a declarative JSON Schema object" is a TODO; this reads each named
  // control: its kind, its bounds, whether it is required.
  function synthesize(form) {
    const properties = {}, required = [];
    for (const control of form.elements) {
      if (!control.name || ["submit", "button", "reset", "fieldset"].includes(control.type)) continue;
      properties[control.name] = propertyOf(control);
      if (control.required) required.push(control.name);
    }
    return {type: "object", properties, required, additionalProperties: false};
  }

  async function submitForm(form, input) {
    for (const control of form.elements) {
      if (!control.name || !(control.name in input)) continue;
      if (control.type === "checkbox") control.checked = !!input[control.name];
      else control.value = String(input[control.name]);
    }
    if (!form.hasAttribute("toolautosubmit")) {
      form.querySelector("[type=submit], button:not([type])")?.focus();
      return {filled: true, note: "The form is filled; the person submits it."};
    }
    let response = null;
    const event = new SubmitEvent("submit", {bubbles: true, cancelable: true});
    Object.defineProperties(event, {
      agentInvoked: {value: true},
      agentInput: {value: input},      // beyond the draft: the values as given (a text field drops line breaks)
      respondWith: {value: promise => { response = Promise.resolve(promise); }},
    });
    form.dispatchEvent(event);
    if (response) return response;
    if (!event.defaultPrevented) { form.submit(); return {submitted: true}; }
    return {submitted: false};
  }

  function scanForms() {
    for (const [form, name] of [...forms]) {
      if (!form.isConnected || form.getAttribute("toolname") !== name) {
        if (tools.get(name)?.owner === form) { tools.delete(name); changed(); }
        forms.delete(form);
      }
    }
    for (const form of document.querySelectorAll("form[toolname]")) {
      const name = form.getAttribute("toolname");
      const description = form.getAttribute("tooldescription");
      const known = tools.get(name);
      if (forms.get(form) === name && known?.owner === form) {
        const schema = JSON.stringify(synthesize(form));
        if (known.description === description && known.inputSchema === schema) continue;
        tools.delete(name);
      }
      if (!description || (tools.has(name) && tools.get(name).owner !== form)) continue;
      add({name, description, title: form.getAttribute("tooltitle"), inputSchema: synthesize(form),
           execute: input => submitForm(form, input)}, {}, form).catch(() => {});
      forms.set(form, name);
    }
  }

  let scanning = false;
  const observer = new MutationObserver(() => {
    if (scanning) return;
    scanning = true;
    queueMicrotask(() => { scanning = false; scanForms(); });
  });
  const watch = () => {
    observer.observe(document.documentElement, {subtree: true, childList: true, attributes: true,
      attributeFilter: ["toolname", "tooldescription", "toolautosubmit", "name", "required", "minlength", "min", "max"]});
    scanForms();
  };
  if (document.documentElement) watch(); else document.addEventListener("readystatechange", watch, {once: true});

  // -- the consumer the driver calls ------------------------------------------------------------
  window.__webmcpConsumer = {
    kind: "polyfill", changes: 0,
    list: async () => [...tools].map(([name, t]) => ({
      name, title: t.title, description: t.description, inputSchema: t.inputSchema ? JSON.parse(t.inputSchema) : {},
      annotations: {...t.annotations}})),
    call: async (name, input) => {
      const tool = tools.get(name);
      if (!tool) return {__webmcp: "unknown_tool"};
      try { return {value: JSONable(await tool.execute(input))}; }
      catch (error) { return failure(error); }
    },
  };
})();
