// A session's tasks, one page at a time (the API's `limit`/`after`), filtered by state, with live
// progress bars and rates. Only a page of rows is ever in the document, so a session of ten
// thousand tasks draws as fast as one of ten; progress from the event stream is applied once per
// animation frame; a task whose state changed is read again.

import { get, post, query, sessionPath } from "./api.js";
import { h, replace, table } from "./dom.js";
import { bytes, fraction, moved, rate } from "./format.js";
import { go, pager } from "./route.js";
import { ProgressBatch } from "./progress-batch.js";

const PAGE = 100;
const STATES = ["running", "suspended", "canceling", "completed"];
const ACTIONS = [
  { name: "Suspend", path: "suspend", when: ["running"], done: "suspended" },
  { name: "Resume", path: "resume", when: ["suspended"], done: "resumed" },
  { name: "Cancel", path: "cancel", when: ["running", "suspended"], done: "cancelled" },
];

export function showTasks(panel, route, context, session) {
  const controller = new AbortController();
  const rows = new Map();
  const progress = new ProgressBatch((id, value) => rows.get(id)?.showProgress(value));
  // Tasks whose state may have changed, read again together once per frame.
  const reread = new ProgressBatch((id) => readTask(id));
  let created = 0;
  const notice = h("p", { class: "notice", hidden: true });
  const body = h("div", {}, h("p", { class: "muted" }, "Loading tasks…"));
  const filter = stateFilter(route);
  panel.append(filter, notice, body);
  context.offerFocus(filter.querySelector("select"));

  async function readTask(id) {
    try {
      const task = await get(sessionPath(session.identifier, `/tasks/${encodeURIComponent(id)}`), { signal: controller.signal });
      rows.get(id)?.show(task);
    } catch (error) {
      if (error.status !== 404) context.showProblem(error);
    }
  }

  async function act(task, action) {
    try {
      const reply = await post(sessionPath(session.identifier, `/tasks/${encodeURIComponent(task.id)}/${action.path}`), undefined,
        { signal: controller.signal });
      rows.get(task.id)?.show(reply);
      context.clearProblem();
      context.announce(`Task ${task.id} ${action.done}`);
    } catch (error) {
      rows.get(task.id)?.show(task);
      context.showProblem(error);
    }
  }

  async function load() {
    try {
      const page = await get(sessionPath(session.identifier, `/tasks${query({ limit: PAGE, after: route.after, state: route.state })}`),
        { signal: controller.signal });
      rows.clear();
      const trs = page.tasks.map((task) => {
        const row = new TaskRow(task, context.canChange ? act : null);
        rows.set(task.id, row);
        return row.element;
      });
      const caption = `Tasks${route.state ? ` in state ${route.state}` : ""}: ${page.tasks.length} shown`;
      const headers = ["Task", "Kind", "State", "Phase", "Progress", "Transferred", "Rate", "URL"];
      if (context.canChange) headers.push("Actions");
      replace(body, page.tasks.length ? table(caption, headers, trs) : h("p", {}, "No tasks here."), pager("Pages of tasks", route, page.next));
      context.announce(`${page.tasks.length} tasks shown`);
    } catch (error) {
      context.showProblem(error);
    }
  }

  load();
  return {
    onEvent(event) {
      const task = event.data && event.data.task;
      if (event.type === "task.progress") {
        if (rows.has(task)) progress.push(task, event.data.data);
      } else if (event.type === "task.created" && !rows.has(task)) {
        created += 1;
        replace(notice, `${created} new task${created === 1 ? "" : "s"} since this page was shown. `,
          h("button", { type: "button", onclick: () => { created = 0; notice.hidden = true; load(); } }, "Show new tasks"));
        notice.hidden = false;
      } else if (task && rows.has(task)) {
        reread.push(task, true);
      }
    },
    stop() {
      controller.abort();
      progress.cancel();
      reread.cancel();
    },
  };
}

/** One task's row; `act(task, action)` runs an action, or null for a principal that may not. */
class TaskRow {
  constructor(task, act) {
    this.act = act;
    this.idCell = h("th", { scope: "row", id: `task-${task.id}` }, task.id);
    this.kind = h("td", {}, task.kind);
    this.state = h("td", { class: "state" });
    this.phase = h("td", {});
    this.bar = h("progress", { max: 1, "aria-label": `Progress of ${task.id}` });
    this.percent = h("span", { class: "percent" });
    this.transferred = h("td", { class: "num" });
    this.rate = h("td", { class: "num rate" });
    this.url = h("td", { class: "url" });
    this.actions = act ? h("td", { class: "actions" }) : null;
    this.element = h("tr", { "data-task": task.id },
      this.idCell, this.kind, this.state, this.phase, h("td", { class: "progress" }, this.bar, this.percent),
      this.transferred, this.rate, this.url, this.actions);
    this.show(task);
  }

  show(task) {
    this.task = task;
    this.state.textContent = task.state;
    this.state.dataset.state = task.state;
    this.phase.textContent = task.phase + (task.error ? ` (${task.error.code})` : "");
    const url = task.current_url || (task.request && task.request.url) || "";
    this.url.textContent = url;
    this.url.title = url;
    this.showProgress(task.progress);
    if (this.actions) this.drawActions(task);
  }

  showProgress(progress) {
    const done = fraction(progress);
    if (done === null && this.task.state === "running") {
      this.bar.removeAttribute("value"); // indeterminate: moving, towards a total not known
      this.percent.textContent = "";
    } else if (done === null) {
      this.bar.value = 0;
      this.percent.textContent = "";
    } else {
      this.bar.value = done;
      this.percent.textContent = `${Math.floor(done * 100)}%`;
    }
    this.transferred.textContent = bytes(moved(progress));
    this.rate.textContent = this.task.state === "running" ? rate(progress && progress.bytes_per_second) : "–";
  }

  drawActions(task) {
    const buttons = ACTIONS.filter((action) => action.when.includes(task.state)).map((action) => h("button", {
      type: "button", class: action.path, "aria-describedby": this.idCell.id,
      onclick: (event) => {
        event.currentTarget.disabled = true;
        this.act(task, action);
      },
    }, action.name));
    replace(this.actions, buttons);
  }
}

function stateFilter(route) {
  const select = h("select", { id: "state-filter" },
    h("option", { value: "" }, "All states"),
    STATES.map((state) => h("option", { value: state, selected: state === route.state }, state)));
  select.addEventListener("change", () => go({ ...route, state: select.value, after: "" }));
  return h("div", { class: "filter" }, h("label", { for: "state-filter" }, "State"), select);
}
