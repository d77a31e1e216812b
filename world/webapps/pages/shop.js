// The shop: a catalogue with search and filters, a product view, the cart with its total, a guest
// checkout form and the order confirmation. Every change goes through the tools of the server's
// registry; an agent's call (WebMCP) takes the same path as a person's click, so the page shows
// what the agent did. The checkout form is the declarative tool checkout_guest
// (<form toolname tooldescription>), present on every view with the cart beside it, so an empty
// cart gets the world's own "cart is empty".
import {api, buildFields, el, fetchTools, fillFields, flash, money, offerStartOver, params, problems, readFields,
        registerTools, row, sessionId, showPageError} from "./webmcp-page.js";

const $ = id => document.getElementById(id);
const state = {session: "", tools: {}, products: {}, orders: {}, lastSearch: null};

// One round trip: the tool's answer and the page's state after it.
async function call(name, input) {
  const {answer, state: world} = await api(`s/${state.session}/call?state=shop`, {name, arguments: input});
  draw(world);
  return answer;
}

function draw(world) {
  state.products = Object.fromEntries(world.products.map(p => [p.id, p]));
  state.orders = Object.fromEntries(world.orders.map(o => [o.id, o]));
  drawCart(world.cart);
  if (!state.lastSearch) drawBrowse();
  route();
}

function show(view) {
  for (const id of ["catalogue", "product", "confirmation"]) $(id).hidden = id !== view;
}

function describe(product) {
  return product ? `${product.color} ${product.style}` : "unknown product";
}

// -- catalogue ---------------------------------------------------------------------------------
function resultRow(item, style) {
  const quantity = el("input");
  Object.assign(quantity, {type: "number", min: 1, max: 9, value: 1, className: "qty"});
  quantity.setAttribute("aria-label", `quantity of ${item.id} in ${item.size}`);
  const add = el("button", "Add", "small");
  add.type = "button";
  add.addEventListener("click", () => addToCart({product_id: item.id, size: item.size,
                                                  quantity: Number.parseInt(quantity.value, 10) || 1}));
  const link = el("a", item.id);
  link.href = `#/product/${encodeURIComponent(item.id)}`;
  return row([style, item.color, item.size, link, money(item.price), quantity, add]);
}

function drawBrowse() {
  // no search yet: every product in stock, filtered by the colour and size chosen
  const form = $("search");
  const color = form.elements.namedItem("color").value, size = form.elements.namedItem("size").value;
  const body = $("results").tBodies[0];
  body.replaceChildren();
  for (const product of Object.values(state.products)) {
    if (color && product.color !== color) continue;
    for (const stocked of Object.keys(product.stock)) {
      if (size && stocked !== size) continue;
      body.append(resultRow({id: product.id, color: product.color, size: stocked, price: product.price}, product.style));
    }
  }
  $("search-status").textContent = `${body.rows.length} in stock (product and size). Search by style to find one.`;
}

async function searchProducts(input) {
  fillFields($("search"), input);
  location.hash = "#/";
  show("catalogue");
  const found = await call("search_products", input);
  state.lastSearch = input;
  const body = $("results").tBodies[0];
  body.replaceChildren();
  if (Array.isArray(found)) {
    for (const item of found) body.append(resultRow(item, state.products[item.id]?.style ?? ""));
    $("search-status").textContent = found.length ? `${found.length} found for "${input.query}".`
                                                  : `Nothing found for "${input.query}".`;
  } else {
    $("search-status").textContent = found.error;
  }
  flash($("results"));
  return found;
}

// -- product view ------------------------------------------------------------------------------
function drawProduct(id) {
  const product = state.products[id];
  $("product-title").textContent = product ? describe(product) : `No product ${id}`;
  $("product-facts").textContent = product
    ? `${id} · ${money(product.price)} · in stock: ${Object.entries(product.stock).map(([s, n]) => `${s} ${n}`).join(", ")}`
    : "This product is not in the catalogue.";
  $("add").elements.namedItem("product_id").value = id;
  show("product");
}

async function addToCart(input) {
  location.hash = `#/product/${encodeURIComponent(input.product_id)}`;
  drawProduct(input.product_id);
  fillFields($("add"), input);
  const answer = await call("add_to_cart", input);
  $("add-status").textContent = answer.error ? `Not added: ${answer.error}.`
    : `Added ${input.quantity} x ${describe(state.products[input.product_id])} in size ${input.size}.`;
  flash($("cart-panel"));
  return answer;
}

// -- cart and checkout -------------------------------------------------------------------------
function drawCart(cart) {
  const body = $("cart-lines").tBodies[0];
  body.replaceChildren(...cart.items.map(line => {
    const product = state.products[line.id];
    return row([`${describe(product)} (${line.id})`, line.size, line.qty, product ? money(product.price * line.qty) : "-"]);
  }));
  const count = cart.items.reduce((sum, line) => sum + line.qty, 0);
  $("cart-count").textContent = String(count);
  $("cart-badge-total").textContent = money(cart.total);
  $("cart-total").textContent = money(cart.total);
}

async function viewCart() {
  location.hash = "#/cart";
  const cart = await call("view_cart", {});
  drawCart(cart);
  flash($("cart-panel"));
  return cart;
}

async function checkout(input) {
  const form = $("checkout");
  fillFields(form, input);
  const found = problems(state.tools.checkout_guest.inputSchema, input);
  if (found.length) {
    $("checkout-status").textContent = found.join("; ") + ".";
    return {error: "invalid input", problems: found};
  }
  const answer = await call("checkout_guest", input);
  if (answer.error) {
    $("checkout-status").textContent = `Not placed: ${answer.error}.`;
  } else {
    $("checkout-status").textContent = "";
    // emptied, not reset: a form reset cancels the agent's call of this form (WebMCP), answer and all
    for (const control of form.elements) if (control.name) control.value = "";
    $("confirmation-text").textContent =
      `Thank you, ${input.name}. Order ${answer.order} is placed: ${money(answer.total)}, to ${input.address}. ` +
      `A confirmation goes to ${input.email}.`;
    location.hash = `#/order/${encodeURIComponent(answer.order)}`;
    show("confirmation");
  }
  return answer;
}

// -- views -------------------------------------------------------------------------------------
function route() {
  const [, view, id] = location.hash.split("/");
  if (view === "product" && id) drawProduct(decodeURIComponent(id));
  else if (view === "order") {
    // opened on an order (a reload, or the playground's frame after an agent's checkout): the
    // confirmation says what the world holds of it, when this page did not just place it
    const order = state.orders[decodeURIComponent(id || "")];
    if (order && !$("confirmation-text").textContent.includes(order.id)) {
      $("confirmation-text").textContent = `Order ${order.id} is placed: ${money(order.total)}.`;
    }
    show("confirmation");
  }
  else show("catalogue");
  // this page's own scroll only: scrollIntoView would also scroll a page that frames this one
  if (view === "cart") window.scrollTo(0, $("cart-panel").getBoundingClientRect().top + window.scrollY - 8);
}

// Another session's world, drawn as a fresh load draws it: no search, empty forms and notes
// (`fetch` false: the next tool call's answer brings the world, and draws it).
async function startOver(session, fetch = true) {
  state.session = session;
  state.lastSearch = null;
  $("to-office").href = `/apps/office/?${params}`;
  for (const id of ["search", "add", "checkout"]) $(id).reset();
  for (const id of ["add-status", "checkout-status", "confirmation-text", "product-title", "product-facts"])
    $(id).textContent = "";
  if (fetch) draw(await api(`s/${session}/state?app=shop`));
}

async function main() {
  state.session = await sessionId();
  $("to-office").href = `/apps/office/?${params}`;
  // the tools and the world at once: neither needs the other
  const [definitions, world] = await Promise.all([fetchTools("shop"), api(`s/${state.session}/state?app=shop`)]);
  state.tools = Object.fromEntries(definitions.map(d => [d.name, d]));
  buildFields($("search"), state.tools.search_products.inputSchema, {labels: {query: "style", color: "colour"}});
  buildFields($("add"), state.tools.add_to_cart.inputSchema, {labels: {product_id: "product"}});
  const form = $("checkout");
  buildFields(form, state.tools.checkout_guest.inputSchema);
  $("add").elements.namedItem("product_id").readOnly = true;
  // the declarative tool: its schema is what the browser reads from these controls
  form.setAttribute("tooldescription", state.tools.checkout_guest.description);
  form.setAttribute("toolname", "checkout_guest");

  $("search").addEventListener("submit", event => {
    event.preventDefault();
    const input = readFields(event.target, state.tools.search_products.inputSchema);
    if (!input.query) { state.lastSearch = null; drawBrowse(); return; }
    searchProducts(input).catch(showPageError);
  });
  $("search").addEventListener("change", () => { if (!state.lastSearch) drawBrowse(); });
  $("add").addEventListener("submit", event => {
    event.preventDefault();
    const input = readFields(event.target, state.tools.add_to_cart.inputSchema);
    const found = problems(state.tools.add_to_cart.inputSchema, input);
    if (found.length) { $("add-status").textContent = found.join("; ") + "."; return; }
    addToCart(input).catch(showPageError);
  });
  form.addEventListener("submit", event => {
    event.preventDefault();
    const input = readFields(form, state.tools.checkout_guest.inputSchema);    // filled by the agent or typed
    const placed = checkout(input);
    if (event.agentInvoked && typeof event.respondWith === "function") event.respondWith(placed);
    placed.catch(showPageError);
  });
  window.addEventListener("hashchange", route);
  registerTools(definitions, {search_products: searchProducts, add_to_cart: addToCart, view_cart: viewCart});
  draw(world);
  offerStartOver(startOver);
  document.body.dataset.ready = "true";
}

main().catch(showPageError);
