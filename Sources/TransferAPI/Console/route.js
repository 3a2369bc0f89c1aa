// The page's state lives in the URL's fragment, so a view can be linked to and the back button
// walks through views:
//   #/                                   sessions
//   #/sessions/{id}?state=running&after=…  a session's tasks (filter and page)
//   #/sessions/{id}/events                 its event log
//   #/sessions/{id}/deliveries?after=…     its webhook deliveries

import { h } from "./dom.js";

export const TABS = ["tasks", "events", "deliveries"];

/** The view a fragment names. */
export function parse(hash) {
  const text = hash.replace(/^#/, "");
  const [path, search = ""] = text.split("?", 2);
  const params = new URLSearchParams(search);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "sessions" && parts[1]) {
    const tab = TABS.includes(parts[2]) ? parts[2] : "tasks";
    return { view: "session", id: parts[1], tab, state: params.get("state") || "", after: params.get("after") || "" };
  }
  return { view: "sessions", after: params.get("after") || "" };
}

/** The fragment of a view: the inverse of `parse`. */
export function format(route) {
  const search = new URLSearchParams();
  if (route.state) search.set("state", route.state);
  if (route.after) search.set("after", route.after);
  const query = search.toString() ? `?${search}` : "";
  if (route.view === "session") {
    const tab = route.tab && route.tab !== "tasks" ? `/${route.tab}` : "";
    return `#/sessions/${encodeURIComponent(route.id)}${tab}${query}`;
  }
  return `#/${query}`;
}

/** Goes to a view: a new history entry, so Back returns to where the person was. */
export function go(route) {
  location.hash = format(route);
}

/** "First page" and "Next page" for a paged list; each page is a view of its own (Back works). */
export function pager(label, route, next) {
  const buttons = [];
  if (route.after) buttons.push(h("button", { type: "button", onclick: () => go({ ...route, after: "" }) }, "First page"));
  if (next) buttons.push(h("button", { type: "button", onclick: () => go({ ...route, after: next }) }, "Next page"));
  return buttons.length ? h("nav", { class: "pager", "aria-label": label }, buttons) : null;
}
