// The agent driver's consumer on the browser's own WebMCP (Chromium 156 with
// --enable-features=WebMCP): document.modelContext.getTools() lists what the page registered,
// script tools and <form toolname> alike, and executeTool(tool, input, {signal}) runs the page's
// own execute. Run as an init script after consumer.js. Two things are added around the browser's,
// neither of which changes what it runs:
// - registerTool keeps the order the page registered its tools in (getTools lists them by name)
//   and the message a tool's execute throws (executeTool rejects with one generic UnknownError);
// - navigator.modelContext.provideContext / clearContext, the older API, for pages written
//   against it: their tools are registered with the browser's registerTool.
(() => {
  const context = document.modelContext;
  if (!context || typeof context.getTools !== "function" || typeof context.executeTool !== "function") return;
  if (window.__webmcpConsumer || !window.__webmcpMakeConsumer) return;
  const proto = Object.getPrototypeOf(context);
  const getTools = proto.getTools, executeTool = proto.executeTool, register = proto.registerTool;
  const registered = new Map();       // name -> its place in the order the page registered tools
  const thrown = new Map();           // name -> what its execute threw last
  let count = 0;

  proto.registerTool = function registerTool(tool, options) {
    if (tool && typeof tool.name === "string" && typeof tool.execute === "function") {
      const original = tool, {name, execute} = tool;
      registered.set(name, count++);
      tool = {...original, execute(input) {
        return Promise.resolve().then(() => execute.call(original, input)).then(value => {
          consumer.settled(name);
          return value;
        }, error => {
          consumer.settled(name);
          thrown.set(name, error);
          throw error;
        });
      }};
    }
    return register.call(this, tool, options);
  };

  if (!("modelContext" in navigator)) {
    let given = new AbortController();
    const older = {
      provideContext({tools = []} = {}) {
        given.abort();
        given = new AbortController();
        for (const tool of tools) proto.registerTool.call(context, tool, {signal: given.signal}).catch(() => {});
      },
      clearContext() { older.provideContext({tools: []}); },
    };
    Object.defineProperty(Navigator.prototype, "modelContext", {configurable: true, get: () => older});
  }

  const own = async () => (await getTools.call(context)).filter(t => !("window" in t) || t.window === window);
  const hints = annotations => ({readOnlyHint: !!annotations?.readOnlyHint,
                                 untrustedContentHint: !!annotations?.untrustedContentHint,
                                 consequentialHint: !!annotations?.consequentialHint});
  const consumer = window.__webmcpMakeConsumer("native", {
    // script tools in the order the page registered them, then declarative forms in document order
    list: async () => {
      const forms = [...document.querySelectorAll("form[toolname]")].map(form => form.getAttribute("toolname"));
      const rank = tool => (registered.has(tool.name) ? registered.get(tool.name) : 1e9 + forms.indexOf(tool.name));
      return (await own()).sort((a, b) => rank(a) - rank(b)).map(tool => ({
        name: tool.name, title: tool.title || null, description: tool.description,
        inputSchema: (typeof tool.inputSchema === "string" ? consumer.asDriverReads(tool.inputSchema) : tool.inputSchema) ?? {},
        annotations: hints(tool.annotations)}));
    },
    call: async (name, input, signal) => {
      const tool = (await own()).find(t => t.name === name);
      if (!tool) return {__webmcp: "unknown_tool"};
      thrown.delete(name);
      try {
        return {value: consumer.asDriverReads(await executeTool.call(context, tool, input, {signal}))};
      } catch (error) {
        return {__webmcp: "page_error", message: consumer.message(thrown.get(name) ?? error)};
      }
    },
  });
  context.addEventListener("toolchange", () => consumer.toolsChanged());
})();
