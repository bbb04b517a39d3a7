// Forking a conversation: a button that makes a new conversation, private to you, holding
// the first turns of this one (all ended turns, or up to a chosen agent turn), and opens it.

import { api } from "./api.js";
import { announce, h, message } from "./dom.js";

/**
 * A button forking the conversation `id`: with `turn`, keeping that many prompts with
 * their answers ("fork from here"); without, every ended turn. `onError` shows a failure.
 */
export function forkButton(id, { turn = null, label = "Fork", onError }) {
  const button = h(
    "button",
    {
      type: "button",
      class: "secondary fork",
      title: turn === null ? "A private copy of this conversation" : `A private copy of the first ${turn} turns`,
    },
    label,
  );
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const body = turn === null ? {} : { turn };
      const fork = await api("POST", `/v1/conversations/${encodeURIComponent(id)}/fork`, body);
      announce(`Forked as ${fork.name}`);
      location.hash = `#/conversations/${encodeURIComponent(fork.id)}`;
    } catch (failure) {
      button.disabled = false;
      onError(message(failure));
    }
  });
  return button;
}
