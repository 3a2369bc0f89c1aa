// A session's event log: its last events as the journal holds them, newest first, and every
// journaled event the stream brings after that. Progress events are not journaled and not listed.

import { get, query, sessionPath } from "./api.js";
import { h, replace, table } from "./dom.js";
import { time } from "./format.js";

const SHOWN = 100;
const KEPT = 500;

export function showEventLog(panel, route, context, session) {
  const controller = new AbortController();
  const latest = session.acked_through + session.pending_events;
  const tbody = h("tbody", {});
  const body = h("div", {}, h("p", { class: "muted" }, "Loading events…"));
  panel.append(body);

  function add(event, { atTop }) {
    const row = h("tr", {},
      h("td", { class: "num" }, event.seq),
      h("td", {}, h("time", { datetime: event.at }, time(event.at))),
      h("th", { scope: "row" }, event.type),
      h("td", {}, event.task ?? "–"),
      h("td", { class: "details" }, summary(event)));
    if (atTop) tbody.prepend(row); else tbody.append(row);
    while (tbody.rows.length > KEPT) tbody.lastElementChild.remove();
  }

  get(sessionPath(session.identifier, `/events${query({ after: Math.max(0, latest - SHOWN), limit: SHOWN })}`),
    { signal: controller.signal }).then((page) => {
    for (const event of page.events.slice().reverse()) add(event, { atTop: false });
    const events = table("Events, newest first", ["Seq", "Time", "Type", "Task", "Details"], []);
    events.tBodies[0].replaceWith(tbody);
    replace(body, events);
  }, (error) => context.showProblem(error));

  return {
    onEvent(event) {
      if (event.id !== null && event.data) add(event.data, { atTop: true });
    },
    stop() {
      controller.abort();
    },
  };
}

/** What an event says, in a few words. */
function summary(event) {
  const data = event.data || {};
  switch (event.type) {
    case "task.completed": {
      const task = data.task || data;
      return task.error ? `failed: ${task.error.code}` : `completed${task.response ? `, HTTP ${task.response.status}` : ""}`;
    }
    case "task.finished_downloading":
      return `${data.size ?? "?"} bytes`;
    case "task.response_received":
      return data.status ? `HTTP ${data.status}` : "";
    case "task.redirected":
      return data.location || data.url || "";
    default:
      return "";
  }
}
