// Conversations: the list, a new one, and the chat view.
//
// A prompt's answer streams over the run's events (SSE). What has been rendered of a
// running run (its parts and the offset of the last event) is kept in session storage,
// so a reload shows the saved turns and resumes the stream after that offset: the live
// output continues where it was, with nothing repeated. A run started elsewhere (another
// tab, another member) is shown live through the conversation's watch stream instead.

import { api, follow, upload } from "./api.js";
import { Approvals } from "./approvals.js";
import { announce, errorLine, field, fill, h, message, pretty, when } from "./dom.js";
import { forkButton } from "./fork.js";

const FINAL = new Set(["completed", "cancelled", "error"]);
const LIVE_KEY = (id) => `agentkit.live.${id}`;

// --- parts ---------------------------------------------------------------------------------

/** A saved or live part as an element. */
export function renderPart(part) {
  switch (part.type) {
    case "text":
      return h("div", { class: "part text" }, part.text);
    case "tool_call":
      return h(
        "details",
        { class: "part tool-call" },
        h("summary", {}, "Tool call ", h("code", {}, part.tool)),
        h("pre", { class: "json" }, pretty(part.input)),
      );
    case "tool_result":
      return h(
        "details",
        { class: `part tool-result${part.isError ? " is-error" : ""}` },
        h("summary", {}, part.isError ? "Tool error " : "Tool result ", h("code", {}, part.tool)),
        h("pre", { class: "json" }, pretty(part.output)),
      );
    case "json":
      return h(
        "figure",
        { class: "part json-part" },
        h("figcaption", {}, "Structured output"),
        h("pre", { class: "json" }, pretty(part.value)),
      );
    case "permission_request":
      return h(
        "details",
        { class: "part permission-request" },
        h("summary", {}, "Asked to allow ", h("code", {}, part.tool)),
        h("pre", { class: "json" }, pretty(part.input)),
      );
    case "permission_decision":
      return h(
        "div",
        { class: `part permission-decision decision-${part.decision}` },
        h("span", { class: "badge" }, part.decision === "allow" ? "Allowed" : "Denied"),
        part.rule ? [" always: ", h("code", {}, part.rule)] : null,
        part.message ? ` · ${part.message}` : null,
      );
    case "question":
      return h(
        "details",
        { class: "part question" },
        h("summary", {}, "Asked: ", (part.questions ?? []).map((q) => q.question).join(" · ")),
        h("pre", { class: "json" }, pretty(part.questions)),
      );
    case "answer":
      return h(
        "details",
        { class: "part answer" },
        h("summary", {}, part.error ? `Not answered: ${part.error}` : "Answered"),
        h("pre", { class: "json" }, pretty(part.answers)),
      );
    case "attachment":
      return h("div", { class: "part attachment" }, h("span", { class: "badge" }, "Attachment"), " ", h("code", {}, part.path));
    default:
      return h("pre", { class: "part json" }, pretty(part));
  }
}

function renderTurn(turn, agentName, fork = null) {
  const user = turn.role === "user";
  return h(
    "li",
    { class: `turn ${turn.role} status-${turn.status}`, "data-run": turn.runId },
    h(
      "div",
      { class: "turn-head" },
      h("span", { class: "who" }, user ? "You" : agentName),
      !user && turn.status !== "completed" ? h("span", { class: `badge status-${turn.status}` }, turn.status) : null,
      !user ? h("a", { href: `#/runs/${encodeURIComponent(turn.runId)}`, class: "inspect" }, "Inspect run") : null,
      fork,
      h("time", {}, when(turn.createdAt)),
    ),
    turn.parts.map(renderPart),
    turn.error ? h("p", { class: "error" }, turn.error) : null,
  );
}

// --- the live output of a run --------------------------------------------------------------

/** A running run's output as it arrives: parts with live text merged (as `watch` shows it). */
class LiveOutput {
  constructor(container, saved) {
    this.container = container;
    this.parts = saved?.parts ?? [];
    this.live = saved?.live ?? false; // whether the last part is text still streaming
    this.offset = saved?.offset ?? null;
    fill(container, this.parts.map(renderPart));
  }

  add(part) {
    if (part.type === "text_delta") {
      if (this.live) {
        this.parts[this.parts.length - 1].text += part.text;
        this.container.lastElementChild.append(part.text);
      } else {
        this.parts.push({ type: "text", text: part.text });
        this.container.append(renderPart({ type: "text", text: part.text }));
        this.live = true;
      }
      return;
    }
    if (part.type === "text" && this.live) {
      this.parts[this.parts.length - 1] = part; // the complete text replaces its deltas
      this.container.lastElementChild.replaceWith(renderPart(part));
    } else {
      this.parts.push(part);
      this.container.append(renderPart(part));
    }
    this.live = false;
  }

  /** Replace everything (a watch view holds the whole output so far). */
  replace(parts) {
    this.parts = parts;
    fill(this.container, parts.map(renderPart));
  }

  state(runId) {
    return { runId, offset: this.offset, parts: this.parts, live: this.live };
  }
}

// --- the view ------------------------------------------------------------------------------

export async function conversationsView(root, id, { me }) {
  const controller = new AbortController();
  const canWrite = me.role !== "viewer";
  const [{ conversations }, { agents }] = await Promise.all([
    api("GET", "/v1/conversations"),
    api("GET", "/v1/agents"),
  ]);
  const list = h(
    "ul",
    { class: "conversation-list", "aria-label": "Conversations" },
    conversations.map((c) =>
      h(
        "li",
        { class: c.id === id ? "current" : null },
        h("a", { href: `#/conversations/${encodeURIComponent(c.id)}`, "aria-current": c.id === id ? "page" : null }, c.name),
        " ",
        h("span", { class: `badge visibility-${c.visibility}` }, c.visibility),
        c.isRunning ? h("span", { class: "badge running" }, "running") : null,
        h("small", { class: "agent" }, c.agent),
      ),
    ),
  );
  if (!conversations.length) list.append(h("li", { class: "empty" }, "No conversation yet."));
  const aside = h("aside", { class: "sidebar", "aria-labelledby": "conversations-title" }, h("h1", { id: "conversations-title" }, "Conversations"));
  if (canWrite) aside.append(createForm(agents));
  aside.append(list);
  const chat = h("section", { class: "chat", "aria-label": "Conversation" });
  fill(root, h("div", { class: "split" }, aside, chat));
  if (id) await chatView(chat, id, { me, agents, signal: controller.signal });
  else fill(chat, h("p", { class: "placeholder" }, canWrite ? "Create a conversation or open one." : "Open a shared conversation."));
  return () => controller.abort();
}

function createForm(agents) {
  const agent = h("select", { id: "new-agent", name: "agent" }, agents.map((a) => h("option", { value: a.name }, a.name)));
  const name = h("input", { id: "new-name", name: "name", placeholder: "New conversation" });
  const visibility = h(
    "select",
    { id: "new-visibility", name: "visibility" },
    h("option", { value: "private" }, "private (only you)"),
    h("option", { value: "shared" }, "shared (every member)"),
  );
  const error = errorLine("new-error");
  const form = h(
    "form",
    { class: "create", "aria-labelledby": "new-title" },
    h("h2", { id: "new-title" }, "New conversation"),
    field("Agent", agent),
    field("Name", name),
    field("Visibility", visibility),
    h("button", { type: "submit" }, "Create"),
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = { agent: agent.value, visibility: visibility.value };
      if (name.value.trim()) body.name = name.value.trim();
      const created = await api("POST", "/v1/conversations", body);
      announce(`Created ${created.name}`);
      location.hash = `#/conversations/${encodeURIComponent(created.id)}`;
    } catch (failure) {
      error.textContent = message(failure);
    }
  });
  return form;
}

async function chatView(chat, id, { me, signal }) {
  let details;
  try {
    details = await api("GET", `/v1/conversations/${encodeURIComponent(id)}`);
  } catch (failure) {
    fill(chat, h("h2", {}, "Conversation not found"), h("p", { class: "error", role: "alert" }, message(failure)));
    return;
  }
  const base = `/v1/conversations/${encodeURIComponent(id)}`;
  const canWrite = me.role !== "viewer";
  const title = h("h2", { id: "chat-title", tabindex: "-1" }, details.name);
  const turns = h("ol", { class: "turns", "aria-label": "Turns" });
  const error = errorLine("chat-error");
  const prompt = h("textarea", { id: "prompt", name: "prompt", rows: 3, required: true, disabled: !canWrite });
  const attachments = h("input", { id: "attachments", name: "attachments", placeholder: "/space/notes.md", disabled: !canWrite });
  const files = h("input", { id: "upload", name: "upload", type: "file", multiple: true, disabled: !canWrite });
  const send = h("button", { type: "submit", disabled: !canWrite }, "Send");
  const cancel = h("button", { type: "button", class: "secondary", disabled: true }, "Cancel run");
  // While a run is going, a prompt can wait its turn: `ifBusy: enqueue`.
  const queue = h("button", { type: "button", class: "secondary", disabled: true }, "Queue");
  const queued = h("ol", { class: "queued", "aria-label": "Queued prompts" });
  // What a waiting run asks the members: approval cards and questionnaires.
  const approvals = new Approvals(base, canWrite);
  let liveTurn = null; // the <li> of the running run's output, while there is one
  let following = null; // the AbortController of the stream of the running run

  function renderTurns() {
    let kept = 0; // the agent turns so far: "Fork from here" keeps that many prompts with their answers
    const forkHere = (turn) => {
      if (turn.role !== "agent") return null;
      kept += 1;
      const onError = (text) => (error.textContent = text);
      return canWrite ? forkButton(id, { turn: kept, label: "Fork from here", onError }) : null;
    };
    fill(turns, details.turns.map((turn) => renderTurn(turn, details.agent, forkHere(turn))));
    if (!details.turns.length) turns.append(h("li", { class: "empty" }, "No turn yet: send a prompt."));
  }

  /** The prompts waiting for the running run to end, each with its cancel button. */
  function renderQueued(list) {
    fill(
      queued,
      list.map((item) => {
        const remove = h(
          "button",
          { type: "button", class: "secondary", disabled: !canWrite, "aria-label": `Cancel queued prompt: ${item.prompt}` },
          item.status === "dropped" ? "Dismiss" : "Cancel",
        );
        remove.addEventListener("click", async () => {
          remove.disabled = true;
          try {
            await api("DELETE", `${base}/queue/${encodeURIComponent(item.id)}`);
            announce("Queued prompt cancelled");
            await reload();
          } catch (failure) {
            error.textContent = message(failure);
            remove.disabled = !canWrite;
          }
        });
        return h(
          "li",
          { class: `queued-prompt status-${item.status}`, "data-queued": item.id },
          h("span", { class: `badge ${item.status}` }, item.status),
          h("span", { class: "queued-text" }, item.prompt),
          h("span", { class: "meta" }, ` · ${item.member} · ${when(item.createdAt)}`, item.error ? ` · ${item.error}` : ""),
          remove,
        );
      }),
    );
    queued.hidden = !list.length;
  }

  async function reload() {
    details = await api("GET", base);
    title.textContent = details.name;
    renderTurns();
    renderQueued(details.queued ?? []);
    approvals.show(details.pendingRequests ?? []);
  }

  function startLive(runId, saved) {
    liveTurn?.remove();
    const output = h("div", { class: "live-output", "aria-live": "polite", "aria-atomic": "false", "aria-relevant": "additions text" });
    liveTurn = h(
      "li",
      { class: "turn agent status-running live", "data-run": runId, "aria-busy": "true" },
      h(
        "div",
        { class: "turn-head" },
        h("span", { class: "who" }, details.agent),
        h("span", { class: "badge running" }, "running"),
        h("a", { href: `#/runs/${encodeURIComponent(runId)}`, class: "inspect" }, "Inspect run"),
      ),
      output,
    );
    turns.querySelector(".empty")?.remove();
    turns.append(liveTurn);
    cancel.disabled = !canWrite;
    queue.disabled = !canWrite;
    send.disabled = true;
    return new LiveOutput(output, saved);
  }

  async function ended(final) {
    sessionStorage.removeItem(LIVE_KEY(id));
    following = null;
    liveTurn?.remove();
    liveTurn = null;
    cancel.disabled = true;
    queue.disabled = true;
    send.disabled = !canWrite;
    await reload();
    if (final) announce(`The run ${final.status === "completed" ? "completed" : `ended: ${final.status}`}`);
    if (details.isRunning && details.activeRunId) watchRun(details.activeRunId);
    else if (details.queued?.some((item) => item.status === "queued")) awaitNext();
  }

  /** Prompts are queued but their run has not started yet: watch until one does. */
  async function awaitNext() {
    const stream = new AbortController();
    following = stream;
    signal.addEventListener("abort", () => stream.abort());
    let next = null;
    await follow(`${base}/watch`, {
      signal: stream.signal,
      onError: (failure) => (error.textContent = message(failure)),
      onEvent: ({ data: view }) => {
        if (view.loading) return false;
        renderQueued(view.queued ?? []);
        if (view.isRunning && view.activeRunId) next = view.activeRunId;
        return Boolean(next) || Boolean(view.error) || !(view.queued ?? []).some((item) => item.status === "queued");
      },
    });
    if (signal.aborted || following !== stream) return;
    following = null;
    if (next) watchRun(next);
    else await reload();
  }

  /** Follow a run's events from `saved` (what was rendered before a reload) onwards. */
  async function followRun(runId, saved = null) {
    const output = startLive(runId, saved);
    const stream = new AbortController();
    following = stream;
    signal.addEventListener("abort", () => stream.abort());
    let final = null;
    await follow(`${base}/runs/${encodeURIComponent(runId)}/events`, {
      after: output.offset,
      signal: stream.signal,
      endsByItself: false,
      onError: (failure) => (error.textContent = message(failure)),
      onEvent: ({ data }) => {
        if (data.type === "final" || FINAL.has(data.status)) {
          final = data;
          return true;
        }
        output.offset = data.offset;
        output.add(data.part);
        approvals.add(runId, data.part);
        sessionStorage.setItem(LIVE_KEY(id), JSON.stringify(output.state(runId)));
        return false;
      },
    });
    if (!signal.aborted && following === stream) await ended(final);
  }

  /** Show a run this page did not start, through the conversation's watch. */
  async function watchRun(runId) {
    const output = startLive(runId, null);
    const stream = new AbortController();
    following = stream;
    signal.addEventListener("abort", () => stream.abort());
    await follow(`${base}/watch`, {
      signal: stream.signal,
      onError: (failure) => (error.textContent = message(failure)),
      onEvent: ({ data: view }) => {
        if (view.loading) return false;
        if (view.error) {
          error.textContent = view.error;
          return true;
        }
        if (view.isRunning && view.activeRunId === runId) {
          output.replace(view.output.map((part) => ({ ...part })));
          renderQueued(view.queued ?? []);
          approvals.show(view.pendingRequests ?? []);
          return false;
        }
        return true;
      },
    });
    if (!signal.aborted && following === stream) await ended(null);
  }

  const composer = h(
    "form",
    { class: "composer", "aria-label": "Send a prompt" },
    field("Prompt", prompt, canWrite ? "Ctrl+Enter sends." : "Viewers read; they do not prompt."),
    field("Attachments", attachments, "Paths under an attachment root, separated by commas (optional)."),
    field("Upload files", files, "Each is stored in your upload folder and its path added to the attachments."),
    h("div", { class: "buttons" }, send, queue, cancel),
    error,
  );
  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });
  files.addEventListener("change", async () => {
    error.textContent = "";
    files.disabled = true;
    try {
      for (const file of [...files.files]) {
        const stored = await upload(file);
        const paths = attachments.value.split(",").map((p) => p.trim()).filter(Boolean);
        attachments.value = [...paths, stored.path].join(", ");
        announce(`Uploaded ${stored.name}`);
      }
    } catch (failure) {
      error.textContent = message(failure);
    } finally {
      files.value = "";
      files.disabled = !canWrite;
    }
  });
  /** Send the composer's prompt; `ifBusy` "enqueue" queues it while a run is going. */
  async function submit(ifBusy) {
    error.textContent = "";
    const text = prompt.value.trim();
    if (!text) return;
    const paths = attachments.value.split(",").map((p) => p.trim()).filter(Boolean);
    const button = ifBusy ? queue : send;
    button.disabled = true;
    try {
      const body = { prompt: text };
      if (paths.length) body.attachments = paths;
      if (ifBusy) body.ifBusy = ifBusy;
      const accepted = await api("POST", `${base}/runs`, body);
      prompt.value = "";
      attachments.value = "";
      if (accepted.status === "queued") {
        renderQueued((await api("GET", base)).queued ?? []);
        announce("Queued: it runs once the running run ends");
        queue.disabled = !canWrite;
        return;
      }
      following?.abort();
      await reload();
      followRun(accepted.runId);
    } catch (failure) {
      button.disabled = !canWrite;
      error.textContent = message(failure);
    }
  }
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(null);
  });
  queue.addEventListener("click", () => submit("enqueue"));
  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      await api("POST", `${base}/cancel`);
      announce("Cancelled");
    } catch (failure) {
      error.textContent = message(failure);
    }
  });

  fill(chat, h("header", { class: "chat-head" }, title, settings()), turns, approvals.element, queued, composer);
  renderTurns();
  renderQueued(details.queued ?? []);
  approvals.show(details.pendingRequests ?? []);

  function settings() {
    const meta = h("p", { class: "meta" }, `Agent ${details.agent} · created by ${details.creator} · `, h("span", { class: `badge visibility-${details.visibility}` }, details.visibility));
    if (!canWrite) return meta;
    const name = h("input", { id: "rename", name: "name", value: details.name, required: true });
    const rename = h("form", { class: "inline" }, field("Name", name), h("button", { type: "submit" }, "Rename"));
    rename.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await api("PATCH", base, { name: name.value.trim() });
        announce("Renamed");
        location.reload();
      } catch (failure) {
        error.textContent = message(failure);
      }
    });
    const visibility = h(
      "select",
      { id: "visibility", name: "visibility" },
      ["private", "shared"].map((v) => h("option", { value: v, selected: v === details.visibility }, v)),
    );
    visibility.addEventListener("change", async () => {
      try {
        await api("PATCH", base, { visibility: visibility.value });
        announce(`Now ${visibility.value}`);
        location.reload();
      } catch (failure) {
        error.textContent = message(failure);
      }
    });
    const remove = h("button", { type: "button", class: "danger" }, "Delete");
    remove.addEventListener("click", async () => {
      if (!confirm(`Delete “${details.name}” with its turns and runs?`)) return;
      try {
        await api("DELETE", base);
        sessionStorage.removeItem(LIVE_KEY(id));
        announce("Deleted");
        location.hash = "#/conversations";
      } catch (failure) {
        error.textContent = message(failure);
      }
    });
    const fork = forkButton(id, { onError: (text) => (error.textContent = text) });
    return h("div", { class: "settings" }, meta, rename, h("div", { class: "inline" }, field("Visibility", visibility)), fork, remove);
  }

  if (details.isRunning && details.activeRunId) {
    const saved = JSON.parse(sessionStorage.getItem(LIVE_KEY(id)) ?? "null");
    if (saved?.runId === details.activeRunId) followRun(saved.runId, saved);
    else watchRun(details.activeRunId);
  } else {
    sessionStorage.removeItem(LIVE_KEY(id));
    if (details.queued?.some((item) => item.status === "queued")) awaitNext();
  }
}
