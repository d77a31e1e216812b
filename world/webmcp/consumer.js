// What the agent driver (world/webmcp/driver.py) reads in every page, whichever WebMCP the page has:
// window.__webmcpMakeConsumer(kind, {list, call}) gives the page its one __webmcpConsumer, which
// native.js builds on the browser's document.modelContext and polyfill.js on its own. Run as the
// first init script of every document, before any page script.
//
// Shared by both, so that a call reads the same in either mode:
// - an answer comes back as the browser's executeTool gives it (a string as it is, undefined as
//   "undefined", anything else as JSON) and is read back the same way;
// - a document says which one it is (`document`, new on every load) and whether it is leaving
//   (the Navigation API's navigate event, fired when a navigation to another document begins),
//   so the driver neither runs a call in a page that is going away nor misses the one that comes;
// - a call that takes longer than the driver's limit is aborted (the browser fires toolcancel);
// - WebRTC is refused and reported (its STUN packets would leave past any route the driver sets).
(() => {
  if (window.__webmcpMakeConsumer) return;
  const documentId = (crypto.randomUUID && crypto.randomUUID()) || String(Math.random()).slice(2);
  let leaving = null;           // the URL of a navigation to another document, once one began
  // the driver's bindings (world/webmcp/driver.py): what was refused, and that the tools or the
  // document changed (so the driver reads the list again only then)
  const report = what => { try { window.__webmcpRefused?.(what); } catch { /* the driver went */ } };
  const changed = () => { try { window.__webmcpChanged?.(); } catch { /* the driver went */ } };
  window.navigation?.addEventListener("navigate", event => {
    if (!event.destination.sameDocument) { leaving = event.destination.url; changed(); }
  });

  for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection"]) {
    if (!(name in window)) continue;
    Object.defineProperty(window, name, {configurable: false, writable: false, value: function refused(config) {
      const servers = (config?.iceServers || []).flatMap(server => [].concat(server?.urls ?? server?.url ?? []));
      report(`webrtc:${servers.map(String).join(" ") || location.origin}`);
      throw new DOMException("WebRTC is refused in the agent's browser.", "NotAllowedError");
    }});
  }

  const asBrowserSends = value => (typeof value === "string" ? value : value === undefined ? "undefined"
                                                                      : JSON.stringify(value));
  const asDriverReads = text => {
    if (text === "undefined" || text === undefined) return null;
    try { return JSON.parse(text); } catch { return text; }
  };
  const message = error => String((error && error.message) || error).slice(0, 500);

  const leftAt = new Map();      // tool name -> `leaving` when its execute settled
  Object.defineProperty(window, "__webmcpMakeConsumer", {configurable: false, writable: false, value: (kind, {list, call}) => {
    let changes = 0;
    const consumer = {
      kind, document: documentId,
      get changes() { return changes; },
      toolsChanged() { changes += 1; changed(); },      // the page's toolchange
      get leaving() { return leaving; },
      stay() { leaving = null; },           // the navigation was refused (another origin): this document stays
      list,
      // {value, left} or {__webmcp: kind, message}; "leaving": not run, the document is going away.
      // `left`: where the document was going when the tool's own execute settled (script tools; the
      // implementations note it with settled()), so an answer that comes back before or after the
      // page goes reads the same.
      async call(name, input, ms = 10000) {
        if (leaving) return {__webmcp: "leaving", url: leaving};
        const abort = new AbortController();
        let timer;
        const late = new Promise(resolve => { timer = setTimeout(() => { abort.abort(); resolve({__webmcp: "timeout"}); }, ms); });
        try { return await Promise.race([call(name, input, abort.signal), late]); }
        finally { clearTimeout(timer); }
      },
      settled(name) { leftAt.set(name, leaving); },
      left(name) { const at = leftAt.get(name); leftAt.delete(name); return at; },
      asBrowserSends, asDriverReads, message,
    };
    Object.defineProperty(window, "__webmcpConsumer", {configurable: false, writable: false, value: consumer});
    changed();                                          // a new document
    return consumer;
  }});
})();
