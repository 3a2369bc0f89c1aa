// Throughput of the last five minutes, down and up, from /v1/stats (which counts only what the
// principal may see), sampled every two seconds and drawn as SVG by the page itself.

import { get } from "./api.js";
import { h, svg, replace } from "./dom.js";
import { rate } from "./format.js";

const INTERVAL_MS = 2000;
const WINDOW_MS = 5 * 60 * 1000;
const WIDTH = 600;
const HEIGHT = 140;
const TOP = 10;

export class ThroughputChart {
  constructor(context) {
    this.context = context;
    this.samples = [];
    this.plot = svg("svg", {
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img", "aria-labelledby": "chart-title chart-summary",
      preserveAspectRatio: "none",
    });
    this.axis = h("p", { class: "axis", "aria-hidden": "true" });
    this.summary = h("p", { id: "chart-summary", class: "chart-summary" }, "Waiting for the first sample…");
    this.element = h("section", { class: "throughput", "aria-labelledby": "chart-title" },
      h("h2", { id: "chart-title" }, "Throughput, last 5 minutes"),
      this.plot,
      this.axis,
      h("ul", { class: "legend" },
        h("li", { class: "down" }, "Down"),
        h("li", { class: "up" }, "Up")),
      this.summary);
    this.timer = setInterval(() => this.sample(), INTERVAL_MS);
    this.sample();
  }

  stop() {
    clearInterval(this.timer);
  }

  async sample() {
    try {
      const stats = await get("/v1/stats");
      const now = Date.now();
      this.samples.push({ at: now, down: stats.bytes_per_second.down, up: stats.bytes_per_second.up });
      while (this.samples.length > 0 && this.samples[0].at < now - WINDOW_MS) this.samples.shift();
      this.draw(now);
    } catch (error) {
      if (error.status !== 401) this.summary.textContent = `No sample: ${error.message}`;
    }
  }

  draw(now) {
    const peak = Math.max(1, ...this.samples.map((s) => Math.max(s.down, s.up)));
    // Until five minutes were sampled, the samples so far fill the width (a sliver at the right
    // edge says nothing); the axis labels say what span is shown.
    const span = Math.max(INTERVAL_MS * 4, now - this.samples[0].at);
    const x = (at) => WIDTH - ((now - at) / span) * WIDTH;
    // A fifth of headroom above the peak, so a steady rate is not drawn on the frame.
    const y = (value) => HEIGHT - (value / (peak * 1.2)) * (HEIGHT - TOP);
    const line = (key) => this.samples.map((s) => `${x(s.at).toFixed(1)},${y(s[key]).toFixed(1)}`).join(" ");
    const grid = [0.25, 0.5, 0.75].map((f) => svg("line", {
      class: "grid", x1: 0, x2: WIDTH, y1: y(peak * f), y2: y(peak * f),
    }));
    replace(this.plot,
      grid,
      svg("polyline", { class: "down", points: line("down") }),
      svg("polyline", { class: "up", points: line("up") }));
    this.axis.replaceChildren(h("span", {}, `${ago(span)} ago`), h("span", {}, `top ${rate(peak * 1.2)}`), h("span", {}, "now"));
    const last = this.samples[this.samples.length - 1];
    this.summary.textContent = `Now ${rate(last.down)} down, ${rate(last.up)} up; peak ${rate(peak)}.`;
  }
}

function ago(ms) {
  const seconds = Math.round(ms / 1000);
  return seconds < 120 ? `${seconds} s` : `${Math.round(seconds / 60)} min`;
}
