// One session: its task counts, then one of three tabs (tasks, event log, deliveries), all fed by
// one Server-Sent Events stream of the session opened at its latest event, so the page shows
// what happens from now on without replaying the session's history.

import { get, sessionPath } from "./api.js";
import { h, replace } from "./dom.js";
import { openEventStream } from "./event-stream.js";
import { format, TABS } from "./route.js";
import { showTasks } from "./tasks-table.js";
import { showEventLog } from "./event-log.js";
import { showDeliveries } from "./deliveries-table.js";

const TAB_NAMES = { tasks: "Tasks", events: "Event log", deliveries: "Deliveries" };
const TABS_BY_NAME = { tasks: showTasks, events: showEventLog, deliveries: showDeliveries };
const COUNTS_REFRESH_MS = 1000;

export function showSession(container, route, context) {
  const controller = new AbortController();
  const counts = h("dl", { class: "counts" });
  const connection = h("p", { class: "connection muted" }, "Live updates: connecting…");
  const panel = h("section", { class: "tab-panel", "aria-labelledby": "tab-title" },
    h("h2", { id: "tab-title" }, TAB_NAMES[route.tab]));
  replace(container,
    h("h1", {}, h("span", { class: "muted" }, "Session "), route.id),
    counts,
    connection,
    h("nav", { class: "tabs", "aria-label": "Session views" }, h("ul", {}, TABS.map((tab) => h("li", {},
      h("a", { href: format({ view: "session", id: route.id, tab }), "aria-current": tab === route.tab ? "page" : false },
        TAB_NAMES[tab]))))),
    panel,
    context.chart.element);

  let tab = null;
  let closeStream = () => {};
  let countsDue = false;

  async function refreshCounts() {
    const session = await get(sessionPath(route.id), { signal: controller.signal });
    drawCounts(counts, session);
    return session;
  }

  function onEvent(event) {
    tab?.onEvent(event);
    if (event.id !== null) countsDue = true; // a journaled event may have changed a state
  }

  function onState(state, error) {
    connection.textContent = state === "open" ? "Live updates: connected"
      : state === "reconnecting" ? "Live updates: reconnecting…" : "Live updates: stopped";
    if (error) context.showProblem(error);
  }

  refreshCounts().then((session) => {
    tab = TABS_BY_NAME[route.tab](panel, route, context, session);
    closeStream = openEventStream(sessionPath(route.id, "/events"), {
      // The seq of the session's latest event: events are numbered without gaps, and those not
      // acknowledged yet are counted as pending.
      lastEventId: session.acked_through + session.pending_events,
      onEvent,
      onState,
    });
  }, (error) => {
    connection.textContent = "";
    context.showProblem(error);
  });

  const timer = setInterval(() => {
    if (!countsDue) return;
    countsDue = false;
    refreshCounts().catch((error) => context.showProblem(error));
  }, COUNTS_REFRESH_MS);

  return () => {
    clearInterval(timer);
    controller.abort();
    closeStream();
    tab?.stop();
  };
}

function drawCounts(element, session) {
  const entries = [
    ["State", session.state], ["Mode", session.mode],
    ["Running", session.tasks.running], ["Suspended", session.tasks.suspended],
    ["Completed", session.tasks.completed], ["Total", session.tasks.total],
    ["Pending events", session.pending_events],
  ];
  replace(element, entries.map(([term, value]) => h("div", {}, h("dt", {}, term), h("dd", {}, value))));
}
