// Rooms: the room's ordered log live (filtered by type patterns), publishing, each
// agent's worker (state, cursor, lag, failures) and the delegations read from the log.

import { api, follow, pause } from "./api.js";
import { announce, errorLine, field, fill, h, message, pretty, when } from "./dom.js";

export async function roomsView(root, id, { me }) {
  const controller = new AbortController();
  if (id) await roomView(root, id, controller.signal);
  else await roomList(root, me);
  return () => controller.abort();
}

async function roomList(root, me) {
  const { rooms } = await api("GET", "/v1/rooms");
  const list = h(
    "ul",
    { class: "room-list" },
    rooms.map((room) =>
      h("li", {}, h("a", { href: `#/rooms/${encodeURIComponent(room.id)}` }, room.name), " ", h("small", {}, `${room.id} · ${room.head} events`)),
    ),
  );
  if (!rooms.length) list.append(h("li", { class: "empty" }, "No room you can see."));
  fill(root, h("h1", {}, "Rooms"), list);
  if (me.role === "viewer") return;
  const name = h("input", { id: "room-name", name: "name", required: true });
  const error = errorLine("room-error");
  const form = h("form", { class: "inline", "aria-label": "New room" }, field("New room", name), h("button", { type: "submit" }, "Create"), error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const room = await api("POST", "/v1/rooms", { name: name.value.trim() });
      location.hash = `#/rooms/${encodeURIComponent(room.id)}`;
    } catch (failure) {
      error.textContent = message(failure);
    }
  });
  root.append(form);
}

async function roomView(root, id, signal) {
  const base = `/v1/rooms/${encodeURIComponent(id)}`;
  const room = await api("GET", base);
  const log = h("ol", { class: "log", "aria-label": "Events", "aria-live": "polite", "aria-relevant": "additions" });
  const patterns = h("input", { id: "log-types", name: "types", placeholder: "chat.*, measurements.*" });
  const filter = h("form", { class: "inline", "aria-label": "Filter the log" }, field("Type patterns", patterns, "Comma-separated: a type, prefix.* or *. Empty: every type you may read."), h("button", { type: "submit" }, "Filter"));
  const workers = h("div", { class: "table-wrap" });
  const delegations = h("div", { class: "table-wrap" });
  const logError = errorLine("log-error");
  fill(
    root,
    h("p", {}, h("a", { href: "#/rooms" }, "← Rooms")),
    h("h1", {}, room.name, " ", h("small", {}, room.id)),
    h(
      "div",
      { class: "split room" },
      h("section", { "aria-labelledby": "log-title", class: "room-log" }, h("h2", { id: "log-title" }, "Log"), filter, logError, log),
      h(
        "div",
        { class: "room-side" },
        publishForm(base),
        h("section", { "aria-labelledby": "workers-title" }, h("h2", { id: "workers-title" }, "Agents"), workers),
        h("section", { "aria-labelledby": "delegations-title" }, h("h2", { id: "delegations-title" }, "Delegations"), delegateForm(base), delegations),
      ),
    ),
  );

  // The log: replayed from the start, then live; a new filter restarts it.
  let stream = null;
  function subscribe() {
    stream?.abort();
    stream = new AbortController();
    signal.addEventListener("abort", () => stream.abort());
    fill(log);
    logError.textContent = "";
    const types = patterns.value.split(",").map((p) => p.trim()).filter(Boolean).join(",");
    const query = types ? `?types=${encodeURIComponent(types)}` : "";
    follow(`${base}/events/stream${query}`, {
      after: 0,
      signal: stream.signal,
      onError: (failure) => (logError.textContent = message(failure)),
      onEvent: ({ data }) => {
        log.append(eventItem(data));
        return false;
      },
    });
  }
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    subscribe();
  });
  subscribe();

  // Workers and delegations: read again every second while the room is open.
  const known = new Map();
  let after = 0;
  (async () => {
    while (!signal.aborted) {
      try {
        const { agents } = await api("GET", `${base}/agents`);
        fill(workers, workersTable(agents));
        for (;;) {
          const { events } = await api("GET", `${base}/events?types=delegation.*&after=${after}&limit=1000`);
          for (const event of events) {
            after = event.position;
            const record = known.get(event.payload.id) ?? { id: event.payload.id, agent: event.payload.agent };
            known.set(record.id, { ...record, ...event.payload, status: event.type.slice("delegation.".length), updated: event.createdAt });
          }
          if (events.length < 1000) break;
        }
        fill(delegations, delegationsTable([...known.values()]));
      } catch (failure) {
        fill(workers, h("p", { class: "error" }, message(failure)));
      }
      await pause(1000, signal);
    }
  })();
}

function eventItem(event) {
  return h(
    "li",
    { class: `room-event type-${event.type.replaceAll(".", "-")}`, "data-position": event.position },
    h(
      "div",
      { class: "event-head" },
      h("span", { class: "offset" }, `#${event.position}`),
      h("strong", { class: "type" }, event.type),
      h("span", { class: "author" }, event.author),
      h("time", {}, when(event.createdAt)),
    ),
    h("pre", { class: "json payload" }, pretty(event.payload)),
  );
}

function publishForm(base) {
  const type = h("input", { id: "publish-type", name: "type", required: true, placeholder: "chat.message" });
  const payload = h("textarea", { id: "publish-payload", name: "payload", rows: 3, placeholder: '{"text": "hello"}' });
  const error = errorLine("publish-error");
  const form = h(
    "form",
    { class: "publish", "aria-labelledby": "publish-title" },
    h("h2", { id: "publish-title" }, "Publish"),
    field("Type", type),
    field("Payload (JSON)", payload, "Within your publish grants; empty: null."),
    h("button", { type: "submit" }, "Publish"),
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    let value = null;
    try {
      value = payload.value.trim() ? JSON.parse(payload.value) : null;
    } catch (failure) {
      error.textContent = `The payload is not JSON: ${failure.message}`;
      payload.focus();
      return;
    }
    try {
      const { positions } = await api("POST", `${base}/events`, { type: type.value.trim(), payload: value });
      announce(`Published at position ${positions.join(", ")}`);
      payload.value = "";
    } catch (failure) {
      error.textContent = message(failure);
    }
  });
  return form;
}

function delegateForm(base) {
  const agent = h("input", { id: "delegate-agent", name: "agent", required: true, placeholder: "answerer" });
  const task = h("input", { id: "delegate-task", name: "task", required: true });
  const error = errorLine("delegate-error");
  const form = h("form", { class: "inline", "aria-label": "Delegate a task" }, field("Agent", agent), field("Task", task), h("button", { type: "submit" }, "Delegate"), error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    try {
      const record = await api("POST", `${base}/delegations`, { agent: agent.value.trim(), task: task.value });
      announce(`Delegation ${record.id} is ${record.status}`);
      task.value = "";
    } catch (failure) {
      error.textContent = message(failure);
    }
  });
  return form;
}

function workersTable(agents) {
  if (!agents.length) return h("p", { class: "empty" }, "No agent works in this room on this server.");
  return h(
    "table",
    { class: "workers" },
    h("caption", { class: "visually-hidden" }, "Each agent's worker"),
    h("thead", {}, h("tr", {}, ["Agent", "State", "Start", "Cursor", "Lag", "Handling", "Failures", "Last error"].map((t) => h("th", { scope: "col" }, t)))),
    h(
      "tbody",
      {},
      agents.map((w) =>
        h(
          "tr",
          { "data-agent": w.agent },
          h("th", { scope: "row" }, w.agent),
          // A degraded worker retries by itself; its fault says what the store answered.
          h("td", {}, h("span", { class: `badge state-${w.state}`, title: w.fault ?? "" }, w.state), w.fault ? h("div", { class: "error fault" }, w.fault) : null),
          h("td", {}, w.start),
          h("td", {}, `${w.cursor} / ${w.head ?? "?"}`),
          h("td", {}, String(w.lag)),
          h("td", {}, w.handling ?? ""),
          h("td", { class: w.failures ? "error" : null }, String(w.failures)),
          h("td", {}, w.lastError ?? ""),
        ),
      ),
    ),
  );
}

function delegationsTable(records) {
  if (!records.length) return h("p", { class: "empty" }, "No delegation you can read.");
  return h(
    "table",
    { class: "delegations" },
    h("caption", { class: "visually-hidden" }, "Delegations, from the log's delegation events"),
    h("thead", {}, h("tr", {}, ["Delegation", "Agent", "Status", "Task", "Result or error"].map((t) => h("th", { scope: "col" }, t)))),
    h(
      "tbody",
      {},
      records.map((d) =>
        h(
          "tr",
          {},
          h("th", { scope: "row" }, h("code", {}, d.id)),
          h("td", {}, d.agent ?? ""),
          h("td", {}, h("span", { class: `badge status-${d.status}` }, d.status)),
          h("td", {}, d.task === undefined ? "" : pretty(d.task)),
          h("td", {}, d.error ? h("span", { class: "error" }, d.error) : d.result === undefined ? "" : h("pre", { class: "json" }, pretty(d.result))),
        ),
      ),
    ),
  );
}
