// A Server-Sent Events reader over fetch. EventSource cannot send an Authorization header, so the
// page reads the text/event-stream body itself, parsed as the WHATWG HTML standard's "event stream
// interpretation" (§9.2.6): lines of `field: value`, a blank line dispatches, `id` sets the last
// event ID, `retry` the reconnection delay. When the stream ends or breaks it reconnects, sending
// the last id seen in `Last-Event-ID`, so no journaled event is missed or shown twice; the delay
// doubles on each failure in a row up to 30 s. A refusal (4xx) stops it: retrying cannot help.

import { headers, reply } from "./api.js";

const MAX_DELAY_MS = 30_000;

/**
 * Opens `url` and calls `onEvent({type, id, data})` for every event (data parsed as JSON),
 * `onState("open" | "reconnecting" | "closed", error?)` as the connection comes and goes.
 * Returns a function that closes the stream for good.
 */
export function openEventStream(url, { lastEventId = null, onEvent, onState = () => {} }) {
  const controller = new AbortController();
  let lastId = lastEventId;
  let retryMs = 1000;
  let failures = 0;

  async function connect() {
    while (!controller.signal.aborted) {
      try {
        const extra = { Accept: "text/event-stream" };
        if (lastId !== null) extra["Last-Event-ID"] = String(lastId);
        const response = await fetch(url, { headers: headers(extra), signal: controller.signal });
        if (!response.ok) {
          await reply(response); // throws the problem document
        }
        failures = 0;
        onState("open");
        await read(response.body, (event) => {
          if (event.id !== null) lastId = event.id;
          if (event.retry !== null) retryMs = event.retry;
          if (event.type !== null) onEvent(event);
        });
      } catch (error) {
        if (controller.signal.aborted) return;
        if (error.status >= 400 && error.status < 500) {
          onState("closed", error);
          return;
        }
        failures += 1;
      }
      if (controller.signal.aborted) return;
      onState("reconnecting");
      const delay = Math.min(MAX_DELAY_MS, retryMs * 2 ** Math.max(0, failures - 1));
      await sleep(delay, controller.signal);
    }
  }

  connect();
  return () => controller.abort();
}

/** Reads the body to its end, calling `dispatch` for each complete event block. */
async function read(body, dispatch) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = blankEvent();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    // Lines end with CRLF, LF or CR; a trailing CR may be half of a CRLF still on its way.
    const lines = buffer.split(/\r\n|\n|\r(?!$)/);
    buffer = lines.pop();
    for (const line of lines) {
      if (line === "") {
        if (event.dataLines.length > 0 || event.id !== null || event.retry !== null) dispatch(finish(event));
        event = blankEvent();
      } else {
        takeField(event, line);
      }
    }
  }
}

function blankEvent() {
  return { type: null, dataLines: [], id: null, retry: null };
}

function takeField(event, line) {
  if (line.startsWith(":")) return; // a comment: the server's keep-alive
  const colon = line.indexOf(":");
  const name = colon < 0 ? line : line.slice(0, colon);
  let value = colon < 0 ? "" : line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  if (name === "event") event.type = value;
  else if (name === "data") event.dataLines.push(value);
  else if (name === "id" && !value.includes("\0")) event.id = value;
  else if (name === "retry" && /^\d+$/.test(value)) event.retry = Number(value);
}

function finish(event) {
  const text = event.dataLines.join("\n");
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  const type = event.dataLines.length > 0 ? event.type || "message" : null;
  return { type, id: event.id, retry: event.retry, data };
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
