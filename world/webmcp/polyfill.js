// WebMCP for a browser without it (or a page tested against it), and the agent driver's consumer
// on it (world/webmcp/driver.py). Run as an init script after consumer.js, before any page script.
// Follows the draft spec (webmachinelearning/webmcp, index.bs and declarative-api-explainer.md) as
// Chromium 156 implements it, so a page reads the same in either mode: document.modelContext is an
// EventTarget with registerTool(tool, {signal, exposedTo}), getTools(), executeTool(tool, input,
// {signal}) and the toolchange / toolactivated / toolcancel events; annotations readOnlyHint,
// untrustedContentHint and consequentialHint; a <form toolname tooldescription [toolautosubmit]>
// is a tool whose schema comes from its controls (toolparamdescription gives a property's
// description) and whose call fills them and submits, the page answering through
// SubmitEvent.respondWith(). navigator.modelContext with provideContext({tools}) / clearContext()
// is kept for pages written against the older API.
(() => {
  if (window.__webmcpConsumer || !window.__webmcpMakeConsumer) return;
  // as the browser fails a call: a thrown error (its message kept, as the driver's native consumer keeps it)
  const failure = error => ({__webmcp: "page_error", message: String(error && error.message || error).slice(0, 500)});
  const HINTS = ["readOnlyHint", "untrustedContentHint", "consequentialHint"];

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

    // The consumer's side, as the browser offers it: what getTools lists, and a call of one of them.
    async getTools() {
      return ordered().map(([name, t]) => ({name, title: t.title ?? "", description: t.description,
        inputSchema: t.inputSchema ? JSON.parse(t.inputSchema) : undefined,
        ...(t.owner instanceof HTMLFormElement ? {} : {annotations: {...t.annotations}}), window}));
    }

    async executeTool(tool, input, {signal} = {}) {
      if (input === null || typeof input !== "object" || Array.isArray(input))
        throw new TypeError("Failed to execute 'executeTool' on 'ModelContext': invalid input object: value is not an object");
      const entry = tools.get(tool?.name);
      if (!entry) throw new DOMException(`No tool named ${tool?.name}.`, "NotFoundError");
      signal?.addEventListener("abort", () => context.dispatchEvent(Object.assign(new Event("toolcancel"), {toolName: tool.name})));
      context.dispatchEvent(Object.assign(new Event("toolactivated"), {toolName: tool.name}));
      const script = !(entry.owner instanceof HTMLFormElement);
      try { return consumer.asBrowserSends(await entry.execute(input)); }
      finally { if (script) consumer.settled(tool.name); }
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
                   execute: input => tool.execute(input), owner,
                   annotations: Object.fromEntries(HINTS.map(hint => [hint, !!tool.annotations?.[hint]]))};
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
    setTimeout(() => { pending = false; consumer.toolsChanged(); context.dispatchEvent(new Event("toolchange")); }, 0);
  }
  Object.defineProperty(Document.prototype, "modelContext", {configurable: true, get: () => context});
  Object.defineProperty(Navigator.prototype, "modelContext", {configurable: true, get: () => context});

  // -- declarative tools: <form toolname tooldescription> -------------------------------------
  const forms = new Map();            // form -> the tool name it registered

  // As Chromium 156 synthesizes a property from a control (the spec's algorithm is still a TODO):
  // a select is its options as anyOf consts (with their labels) and an enum, the empty one
  // included; a number field is a number with its bounds, multipleOf its step unless "any"; a
  // checkbox a boolean; anything else a string. Only toolparamdescription adds a description.
  function propertyOf(control) {
    let schema;
    if (control.tagName === "SELECT") {
      const options = [...control.options];
      schema = {type: "string", anyOf: options.map(o => ({type: "string", const: o.value, title: o.label})),
                enum: options.map(o => o.value)};
    } else if (control.type === "checkbox") schema = {type: "boolean"};
    else if (control.type === "number" || control.type === "range") {
      schema = {type: "number"};
      if (control.min !== "") schema.minimum = Number(control.min);
      if (control.max !== "") schema.maximum = Number(control.max);
      if (control.step !== "any") schema.multipleOf = control.step === "" ? 1 : Number(control.step);
    } else schema = {type: "string"};
    const description = control.getAttribute("toolparamdescription");
    if (description) schema.description = description;
    return schema;
  }

  function synthesize(form) {
    const properties = {}, required = [];
    for (const control of form.elements) {
      if (!control.name || ["submit", "button", "reset", "fieldset"].includes(control.type)) continue;
      properties[control.name] = propertyOf(control);
      if (control.required) required.push(control.name);
    }
    return {type: "object", properties, required};
  }

  async function submitForm(form, input) {
    const names = new Set([...form.elements].map(control => control.name).filter(Boolean));
    const stranger = Object.keys(input).find(key => !names.has(key));
    if (stranger !== undefined)       // the browser's own words for it
      throw new DOMException(`Input contains a parameter "${stranger}" but there is no such parameter for the tool`,
                             "UnknownError");
    for (const control of form.elements) {
      if (!control.name || !(control.name in input)) continue;
      if (control.type === "checkbox") control.checked = !!input[control.name];
      else control.value = String(input[control.name]);
    }
    // as in the browser, a reset of the form while the call runs cancels it
    let cancel;
    const cancelled = new Promise((_, reject) => { cancel = () => reject(
      new DOMException("Tool execution cancelled by a form reset", "AbortError")); });
    form.addEventListener("reset", cancel, {once: true});
    try { return await Promise.race([submitted(form, form.hasAttribute("toolautosubmit")), cancelled]); }
    finally { form.removeEventListener("reset", cancel); }
  }

  // The call's answer, as the browser gives it: what the page hands respondWith() on the submit
  // (the agent's own with toolautosubmit, else the person's, waited for), null when the submission
  // goes ahead (a navigation), an error when the page prevents it and answers nothing.
  function submitted(form, byAgent) {
    return new Promise((resolve, reject) => {
      const dress = event => {
        let response = null;
        Object.defineProperties(event, {agentInvoked: {value: true},
                                        respondWith: {value: promise => { response = Promise.resolve(promise); }}});
        return () => response;
      };
      const settle = (event, response) => {
        if (response) resolve(response);
        else if (event.defaultPrevented) reject(new DOMException("The site has a programming error: it called " +
          "preventDefault() on the 'submit' event, without also calling respondWith() with the tool result", "UnknownError"));
        else resolve(null);
      };
      if (byAgent) {
        const event = new SubmitEvent("submit", {bubbles: true, cancelable: true});
        const response = dress(event);
        form.dispatchEvent(event);
        if (event.defaultPrevented || response()) return settle(event, response());
        // the submission goes ahead: answered once its navigation has begun (form.submit() plans it
        // for a later task), as the browser answers, so the driver sees the page leave
        const begun = () => { clearTimeout(late); settle(event, null); };
        const late = setTimeout(begun, 1000);
        window.navigation?.addEventListener("navigate", begun, {once: true});
        form.submit();
      } else {
        form.querySelector("[type=submit], button:not([type])")?.focus();
        form.addEventListener("submit", event => {
          const response = dress(event);
          setTimeout(() => settle(event, response()), 0);      // after the page's own listeners
        }, {capture: true, once: true});
      }
    });
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
      attributeFilter: ["toolname", "tooldescription", "toolautosubmit", "toolparamdescription", "name", "required",
                      "min", "max", "step"]});
    scanForms();
  };
  if (document.documentElement) watch(); else document.addEventListener("readystatechange", watch, {once: true});

  // script tools in the order they were registered, then declarative forms in document order
  function ordered() {
    const entries = [...tools];
    const formsInOrder = [...document.querySelectorAll("form[toolname]")];
    const rank = ([, t]) => (t.owner instanceof HTMLFormElement ? 1e9 + formsInOrder.indexOf(t.owner) : 0);
    return entries.map((entry, i) => [entry, rank(entry) || i]).sort((a, b) => a[1] - b[1]).map(([entry]) => entry);
  }

  // -- the consumer the driver calls, through the same getTools / executeTool a page could use ---
  const consumer = window.__webmcpMakeConsumer("polyfill", {
    list: async () => (await context.getTools()).map(t => ({
      name: t.name, title: t.title || null, description: t.description, inputSchema: t.inputSchema ?? {},
      annotations: Object.fromEntries(HINTS.map(hint => [hint, !!t.annotations?.[hint]]))})),
    call: async (name, input, signal) => {
      if (!tools.has(name)) return {__webmcp: "unknown_tool"};
      try { return {value: consumer.asDriverReads(await context.executeTool({name}, input, {signal}))}; }
      catch (error) { return failure(error); }
    },
  });
})();
