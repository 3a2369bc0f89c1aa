// The sessions the principal may see, with their task counts, a page at a time; refreshed every
// few seconds while shown.

import { get, query } from "./api.js";
import { h, replace, replaceKeepingFocus, table } from "./dom.js";
import { format, pager } from "./route.js";

const PAGE = 50;
const REFRESH_MS = 3000;

export function showSessions(container, route, context) {
  const controller = new AbortController();
  const body = h("div", { class: "sessions-body" }, h("p", { class: "muted" }, "Loading sessions…"));
  replace(container,
    h("h1", {}, "Sessions"),
    body,
    context.chart.element);

  let last = null;
  async function load() {
    try {
      const page = await get(`/v1/sessions${query({ limit: PAGE, after: route.after })}`, { signal: controller.signal });
      const shown = JSON.stringify(page);
      if (shown === last) return;
      last = shown;
      replaceKeepingFocus(body, sessionsTable(page.sessions), pager("Pages of sessions", route, page.next));
    } catch (error) {
      context.showProblem(error);
    }
  }

  load();
  const timer = setInterval(load, REFRESH_MS);
  return () => {
    clearInterval(timer);
    controller.abort();
  };
}

function sessionsTable(sessions) {
  if (sessions.length === 0) return h("p", {}, "No sessions this token may see.");
  const rows = sessions.map((s) => h("tr", {},
    h("th", { scope: "row" }, h("a", { href: format({ view: "session", id: s.identifier }) }, s.identifier)),
    h("td", {}, s.mode),
    h("td", {}, s.state),
    h("td", { class: "num" }, s.tasks.running),
    h("td", { class: "num" }, s.tasks.suspended),
    h("td", { class: "num" }, s.tasks.canceling),
    h("td", { class: "num" }, s.tasks.completed),
    h("td", { class: "num" }, s.tasks.total),
    h("td", { class: "num" }, s.pending_events)));
  return table("Sessions and their tasks by state",
    ["Session", "Mode", "State", "Running", "Suspended", "Canceling", "Completed", "Total", "Pending events"], rows);
}
