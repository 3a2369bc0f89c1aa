// Builds elements from plain data: text always goes in as text (never as HTML), so nothing an
// API response holds (a URL, an error message) can become markup.

/** `h("td", {class: "num"}, "42", child)`: an element with attributes and children. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  append(element, children);
  return element;
}

/** The same for SVG, which lives in its own namespace. */
export function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
  setAttributes(element, attributes);
  append(element, children);
  return element;
}

function setAttributes(element, attributes) {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces everything inside `element` with `children`. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

/** A table with a caption and header cells (`scope="col"`), its body filled with `rows`. */
export function table(caption, headers, rows) {
  return h("table", {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((text) => h("th", { scope: "col" }, text)))),
    h("tbody", {}, rows));
}

/**
 * `replace`, for content redrawn while a person may be on it (a refreshed table): the control
 * that had the keyboard focus gets it back in the new content, found by what it is and says.
 */
export function replaceKeepingFocus(element, ...children) {
  const active = document.activeElement;
  const key = active && element.contains(active) ? focusKey(active) : null;
  replace(element, ...children);
  if (key === null) return;
  const again = [...element.querySelectorAll("a, button, select, input")].find((e) => focusKey(e) === key);
  again?.focus();
}

function focusKey(element) {
  return [element.tagName, element.getAttribute("href"), element.getAttribute("aria-describedby"),
    element.id, element.textContent].join("\u0000");
}
