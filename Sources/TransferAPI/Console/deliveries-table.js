// A session's webhook delivery attempts (event, attempt, status, error, next try), a page at a
// time, with Redeliver for a principal that may change things. Attempts make no events of their
// own, so the page is read again every few seconds while shown.

import { get, post, query, sessionPath } from "./api.js";
import { h, replaceKeepingFocus, table } from "./dom.js";
import { time } from "./format.js";
import { pager } from "./route.js";

const PAGE = 100;
const REFRESH_MS = 2000;

export function showDeliveries(panel, route, context, session) {
  const controller = new AbortController();
  const body = h("div", {}, h("p", { class: "muted" }, "Loading deliveries…"));
  const delegate = session.delegate
    ? h("p", {}, "Delegate: ", h("code", {}, session.delegate.url))
    : h("p", {}, "This session has no delegate: nothing is delivered by webhook.");
  panel.append(delegate, body);
  let last = null;

  async function redeliver(attempt) {
    try {
      await post(sessionPath(session.identifier, `/events/${encodeURIComponent(attempt.event)}/redeliver`), undefined,
        { signal: controller.signal });
      context.clearProblem();
      context.announce(`Event ${attempt.seq} queued for redelivery`);
      load();
    } catch (error) {
      context.showProblem(error);
    }
  }

  async function load() {
    try {
      const page = await get(sessionPath(session.identifier, `/deliveries${query({ limit: PAGE, after: route.after })}`),
        { signal: controller.signal });
      const shown = JSON.stringify(page);
      if (shown === last) return;
      last = shown;
      const headers = ["Event", "Seq", "Attempt", "At", "Status", "Error", "Next attempt"];
      if (context.canChange) headers.push("Actions");
      const rows = page.deliveries.map((attempt, index) => {
        const id = `delivery-${index}`;
        return h("tr", { "data-event": attempt.event },
          h("th", { scope: "row", id }, attempt.event),
          h("td", { class: "num" }, attempt.seq),
          h("td", { class: "num" }, attempt.attempt),
          h("td", {}, h("time", { datetime: attempt.at }, time(attempt.at))),
          h("td", { class: "num", "data-outcome": outcome(attempt) }, attempt.status ?? "–"),
          h("td", { "data-outcome": outcome(attempt) }, attempt.error ?? ""),
          h("td", {}, attempt.next_attempt_at ? time(attempt.next_attempt_at) : "–"),
          context.canChange ? h("td", {}, h("button", {
            type: "button", "aria-describedby": id, onclick: () => redeliver(attempt),
          }, "Redeliver")) : null);
      });
      replaceKeepingFocus(body,
        rows.length ? table("Webhook delivery attempts", headers, rows) : h("p", {}, "No delivery attempts yet."),
        pager("Pages of deliveries", route, page.next));
    } catch (error) {
      context.showProblem(error);
    }
  }

  load();
  const timer = setInterval(load, REFRESH_MS);
  return {
    onEvent() {},
    stop() {
      clearInterval(timer);
      controller.abort();
    },
  };
}

/** "delivered", "failed", or null while the attempt has no answer yet. */
function outcome(attempt) {
  if (attempt.status !== null && attempt.status >= 200 && attempt.status < 300) return "delivered";
  return attempt.error || attempt.status !== null ? "failed" : null;
}
