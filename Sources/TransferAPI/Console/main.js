// The console's entry: sign in, then draw the view the URL's fragment names, again on every
// change of it. Each view returns a function that stops what it started (requests, streams,
// timers) before the next one is drawn.

import { get, token, whenUnauthorized, ApiError } from "./api.js";
import { h, replace } from "./dom.js";
import { parse, format } from "./route.js";
import { signIn } from "./sign-in.js";
import { showSessions } from "./sessions-view.js";
import { showSession } from "./session-view.js";
import { ThroughputChart } from "./throughput-chart.js";

const view = document.getElementById("view");
const problem = document.getElementById("problem");
const status = document.getElementById("status");
const principalBox = document.getElementById("principal");
const breadcrumbs = document.getElementById("breadcrumbs");

let principal = null;
let chart = null;
let stopView = () => {};
let refocusId = null;

/** What every view is given: who is signed in, what they may do, and how to tell them things. */
const context = {
  get principal() { return principal; },
  get canChange() { return principal !== null && principal.role !== "read"; },
  get chart() { return chart; },
  announce(text) {
    status.textContent = text;
  },
  showProblem(error) {
    if (error && error.name === "AbortError") return;
    const title = error instanceof ApiError ? error.title : "Error";
    const detail = error instanceof ApiError ? error.detail : String(error && error.message || error);
    replace(problem, h("strong", {}, title), detail ? h("span", {}, ` ${detail}`) : null);
    problem.hidden = false;
  },
  /** A view drew `element`: it takes the focus if it is the control that had it before. */
  offerFocus(element) {
    if (refocusId !== null && element.id === refocusId) {
      refocusId = null;
      element.focus();
    }
  },
  clearProblem() {
    problem.hidden = true;
    problem.replaceChildren();
  },
};

function render({ moveFocus = true } = {}) {
  const focusedId = document.activeElement && document.activeElement.id;
  stopView();
  context.clearProblem();
  const route = parse(location.hash);
  drawBreadcrumbs(route);
  stopView = route.view === "session" ? showSession(view, route, context) : showSessions(view, route, context);
  if (!moveFocus) return;
  // The focus goes to the new content, not back to the top of the page; the control that changed
  // the view (the state filter) gets it back once the new view draws it (`offerFocus`).
  refocusId = focusedId || null;
  document.getElementById("main").focus({ preventScroll: true });
}

function drawBreadcrumbs(route) {
  const items = [h("li", {}, h("a", { href: format({ view: "sessions" }), "aria-current": route.view === "sessions" ? "page" : false }, "Sessions"))];
  if (route.view === "session") {
    items.push(h("li", {}, h("a", { href: format({ view: "session", id: route.id }), "aria-current": "page" }, route.id)));
  }
  replace(breadcrumbs, h("ol", {}, items));
}

async function askForToken(message = "") {
  stopView();
  stopView = () => {};
  principal = null;
  chart?.stop();
  principalBox.hidden = true;
  breadcrumbs.replaceChildren();
  context.clearProblem();
  signedIn(await signIn(view, message));
}

function signedIn(who) {
  principal = who;
  replace(document.getElementById("principal-name"), `${who.name} · `, h("span", { class: "role" }, who.role));
  principalBox.hidden = false;
  chart = new ThroughputChart(context);
  context.announce(`Signed in as ${who.name} (${who.role})`);
  render({ moveFocus: false });
}

whenUnauthorized((error) => {
  if (principal === null) return; // the sign-in form shows its own error
  token.clear();
  askForToken(`${error.title}: ${error.detail}`);
});

document.getElementById("sign-out").addEventListener("click", () => {
  token.clear();
  context.announce("Signed out");
  askForToken();
});

window.addEventListener("hashchange", () => {
  if (principal !== null) render();
});

if (token.get() !== null) {
  get("/v1/whoami").then(signedIn, (error) => {
    token.clear();
    askForToken(error instanceof ApiError ? `${error.title}: ${error.detail}` : "");
  });
} else {
  askForToken();
}
