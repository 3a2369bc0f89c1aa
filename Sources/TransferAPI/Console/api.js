// The /v1 API as the page calls it: the token from sessionStorage on every request, replies
// parsed, and problem documents (RFC 9457) turned into errors a person can read.

const TOKEN_KEY = "transferd.token";

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** A reply of 400 or more: the problem document's title and detail, and its stable code. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.title = problem.title || `HTTP ${status}`;
    this.detail = problem.detail || "";
    this.code = problem.code || "";
  }
}

/** Called when the server refuses the token, so the page can ask for another. */
let onUnauthorized = () => {};
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export function headers(extra = {}) {
  const value = token.get();
  return value ? { Authorization: `Bearer ${value}`, ...extra } : { ...extra };
}

/** `method path` with an optional JSON body; resolves to the parsed reply (null when empty). */
export async function call(method, path, { body, signal } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method,
      signal,
      headers: headers(body === undefined ? { Accept: "application/json" }
        : { Accept: "application/json", "Content-Type": "application/json" }),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, { title: "Server unreachable", detail: String(error.message || error) });
  }
  return reply(response);
}

/** The parsed reply of a response, or the ApiError it carries. */
export async function reply(response) {
  const text = await response.text();
  let parsed = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { title: response.statusText, detail: text.slice(0, 200) };
    }
  }
  if (response.ok) return parsed;
  const error = new ApiError(response.status, parsed || { title: response.statusText });
  if (response.status === 401) onUnauthorized(error);
  throw error;
}

export const get = (path, options) => call("GET", path, options);
export const post = (path, body, options) => call("POST", path, { ...options, body });

/** `/v1/sessions/{id}…` with the identifier escaped. */
export function sessionPath(identifier, rest = "") {
  return `/v1/sessions/${encodeURIComponent(identifier)}${rest}`;
}

/** A query string from the parameters that have a value. */
export function query(parameters) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== null && value !== undefined && value !== "") search.set(name, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}
