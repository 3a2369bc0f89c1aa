// The token form: asked once, kept in sessionStorage (gone when the tab closes), checked against
// /v1/whoami before the page uses it.

import { get, token, ApiError } from "./api.js";
import { h, replace } from "./dom.js";

/** Shows the form in `container`; resolves with the principal once a token is accepted. */
export function signIn(container, message = "") {
  return new Promise((resolve) => {
    const input = h("input", {
      id: "token", name: "token", type: "password", autocomplete: "off", spellcheck: "false",
      "aria-describedby": "token-help",
    });
    const error = h("p", { id: "token-error", class: "error", role: "alert" }, message);
    const form = h("form", { class: "sign-in", "aria-labelledby": "sign-in-title" },
      h("h1", { id: "sign-in-title" }, "Sign in"),
      h("label", { for: "token" }, "Token"),
      input,
      h("p", { id: "token-help", class: "muted" },
        "The bearer token of a transferd principal (empty for a transferd without tokens). "
        + "It stays in this browser tab only."),
      error,
      h("button", { type: "submit" }, "Sign in"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      token.set(input.value.trim());
      try {
        resolve(await get("/v1/whoami"));
      } catch (failure) {
        token.clear();
        error.textContent = failure instanceof ApiError ? `${failure.title}: ${failure.detail}` : String(failure);
        input.focus();
      }
    });
    replace(container, form);
    input.focus();
  });
}
