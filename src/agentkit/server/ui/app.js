// The web UI of `agentkit serve`: sign in, then a view per hash route.
//
//   #/conversations[/ID]   conversations and the chat view (conversations.js)
//   #/runs[/ID]            the run inspector (runs.js)
//   #/rooms[/ID]           rooms: log, publish, workers, delegations (rooms.js)
//   #/agents               the machine's agents

import { ApiError, api, setToken, token } from "./api.js";
import { conversationsView } from "./conversations.js";
import { fill, h, message } from "./dom.js";
import { roomsView } from "./rooms.js";
import { runsView } from "./runs.js";

const view = document.getElementById("view");
const signInSection = document.getElementById("sign-in");
const signInForm = document.getElementById("sign-in-form");
const signInError = document.getElementById("sign-in-error");
let me = null;
let leave = null; // the open view's cleanup (its streams and timers)

const SOURCES = {
  builtin: "built-in",
  machine: "API (created by an owner)",
  configured: "configured (a Markdown definition or an app)",
};

async function agentsView(root) {
  const { agents } = await api("GET", "/v1/agents");
  const rows = agents.map((agent) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, agent.name),
      h("td", {}, h("span", { class: `badge source-${agent.source}` }, SOURCES[agent.source] ?? agent.source)),
      h("td", {}, agent.description),
      h("td", {}, agent.tools.length ? agent.tools.join(", ") : "default"),
      h("td", {}, agent.instructions ? h("details", {}, h("summary", {}, "Instructions"), h("pre", {}, agent.instructions)) : ""),
    ),
  );
  fill(
    root,
    h("h1", {}, "Agents"),
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "agents" },
        h("caption", { class: "visually-hidden" }, "The machine's agents"),
        h("thead", {}, h("tr", {}, ["Name", "Source", "Description", "Tools", "Instructions"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows),
      ),
    ),
  );
}

function route() {
  const [name = "conversations", id = null] = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  return { name: name || "conversations", id };
}

async function show() {
  if (!me) return;
  leave?.();
  leave = null;
  const { name, id } = route();
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.getAttribute("href") === `#/${name}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const root = h("div", { class: `view view-${name}` });
  fill(view, root);
  const context = { me, root };
  try {
    if (name === "conversations") leave = await conversationsView(root, id, context);
    else if (name === "runs") leave = await runsView(root, id, context);
    else if (name === "rooms") leave = await roomsView(root, id, context);
    else if (name === "agents") await agentsView(root);
    else fill(root, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/conversations" }, "Conversations")));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return;
    fill(root, h("h1", {}, "Something went wrong"), h("p", { class: "error", role: "alert" }, message(error)));
  }
}

function signedIn(member) {
  me = member;
  signInSection.hidden = true;
  document.getElementById("nav").hidden = false;
  document.getElementById("who").hidden = false;
  document.getElementById("who-name").textContent = `${member.name} (${member.role})`;
  if (!location.hash) location.replace("#/conversations");
  show();
}

function signedOut(reason = "") {
  leave?.();
  leave = null;
  me = null;
  setToken(null);
  fill(view);
  document.getElementById("nav").hidden = true;
  document.getElementById("who").hidden = true;
  signInSection.hidden = false;
  signInError.textContent = reason;
  document.getElementById("token").focus();
}

signInForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("token");
  setToken(input.value.trim());
  signInError.textContent = "";
  try {
    const member = await api("GET", "/v1/me");
    input.value = "";
    signedIn(member);
  } catch (error) {
    setToken(null);
    signInError.textContent =
      error instanceof ApiError && error.status === 401
        ? "That token is not a member's: check it and try again."
        : `Could not sign in: ${message(error)}`;
    input.select();
  }
});

document.getElementById("sign-out").addEventListener("click", () => signedOut());
window.addEventListener("agentkit:unauthorized", () => {
  if (me) signedOut("Your token is no longer accepted: sign in again.");
});
window.addEventListener("hashchange", () => {
  show();
  document.getElementById("main").focus({ preventScroll: true });
});

if (token()) {
  api("GET", "/v1/me").then(signedIn, () => signedOut("Your token is no longer accepted: sign in again."));
} else {
  signedOut();
}
