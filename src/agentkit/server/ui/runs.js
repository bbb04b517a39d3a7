// The run inspector: any run's stored events as a timeline (GET /v1/runs/{id}), and the
// recent runs the member may read (GET /v1/runs).

import { api, pause } from "./api.js";
import { duration, errorLine, field, fill, h, message, pretty, when } from "./dom.js";

export async function runsView(root, id, context) {
  const controller = new AbortController();
  if (id) await runView(root, id, controller.signal);
  else await runList(root, context);
  return () => controller.abort();
}

async function runList(root) {
  const params = new URLSearchParams(location.search);
  const session = h("input", { id: "run-session", name: "session", value: params.get("session") ?? "" });
  const runId = h("input", { id: "run-id", name: "run", required: true });
  const open = h(
    "form",
    { class: "inline", "aria-label": "Open a run" },
    field("Run id", runId, "A run of any kind: a conversation's, a room agent's, or one of agentkit run on this database."),
    h("button", { type: "submit" }, "Open"),
  );
  open.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/runs/${encodeURIComponent(runId.value.trim())}`;
  });
  const table = h("div", { class: "table-wrap" });
  const error = errorLine("runs-error");
  const filter = h(
    "form",
    { class: "inline", "aria-label": "Filter runs" },
    field("Session", session, "A conversation's id or any session (room-agent:ROOM:AGENT); empty: every run you may read."),
    h("button", { type: "submit" }, "Show"),
  );
  async function load() {
    error.textContent = "";
    const query = session.value.trim() ? `?session=${encodeURIComponent(session.value.trim())}` : "";
    try {
      const { runs } = await api("GET", `/v1/runs${query}`);
      fill(table, runsTable(runs));
    } catch (failure) {
      error.textContent = message(failure);
    }
  }
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    load();
  });
  fill(root, h("h1", {}, "Runs"), open, filter, error, table);
  await load();
}

function runsTable(runs) {
  if (!runs.length) return h("p", { class: "empty" }, "No run to show.");
  return h(
    "table",
    { class: "runs" },
    h("caption", { class: "visually-hidden" }, "Runs, most recent first"),
    h("thead", {}, h("tr", {}, ["Run", "Session", "Agent", "Status", "Started", "Took"].map((t) => h("th", { scope: "col" }, t)))),
    h(
      "tbody",
      {},
      runs.map((run) =>
        h(
          "tr",
          {},
          h("th", { scope: "row" }, h("a", { href: `#/runs/${encodeURIComponent(run.id)}` }, run.id)),
          h("td", {}, h("code", {}, run.sessionId)),
          h("td", {}, run.agentId),
          h("td", {}, h("span", { class: `badge status-${run.status}` }, run.status)),
          h("td", {}, when(run.createdAt)),
          h("td", {}, run.finishedAt ? duration(run.finishedAt - run.createdAt) : ""),
        ),
      ),
    ),
  );
}

async function runView(root, id, signal) {
  const body = h("div", { class: "run" });
  const refresh = h("button", { type: "button", class: "secondary" }, "Refresh");
  fill(root, h("p", {}, h("a", { href: "#/runs" }, "← Runs")), h("h1", {}, "Run ", h("code", {}, id)), refresh, body);
  async function load() {
    let details;
    try {
      details = await api("GET", `/v1/runs/${encodeURIComponent(id)}`);
    } catch (failure) {
      fill(body, h("p", { class: "error", role: "alert" }, message(failure)));
      return null;
    }
    fill(body, summary(details), timeline(details.events));
    return details;
  }
  refresh.addEventListener("click", load);
  let details = await load();
  // A running run: read it again now and then until it ends.
  (async () => {
    while (details?.run.status === "running" && !signal.aborted) {
      await pause(1000, signal);
      if (!signal.aborted) details = await load();
    }
  })();
}

/** The run's record and what it consumed, per model. */
function summary({ run, events }) {
  const final = [...events].reverse().find((e) => e.event.type === "result" || e.event.type === "error");
  const end = events.find((e) => e.event.type === "turn_end");
  const accounting = final?.event.accounting;
  const took = run.finishedAt ? run.finishedAt - run.createdAt : null;
  const facts = [
    ["Status", h("span", { class: `badge status-${run.status}` }, run.status)],
    ["Session", h("code", {}, run.sessionId)],
    ["Agent", run.agentId],
    ["Started", when(run.createdAt)],
    ["Finished", when(run.finishedAt)],
    ["Took", end ? duration(end.event.durationMs / 1000) : duration(took)],
  ];
  if (accounting) {
    facts.push(["Model calls", String(accounting.modelCalls ?? 0)]);
    facts.push(["Tool calls", String(accounting.toolCalls ?? 0)]);
    if (accounting.permissionDenials) facts.push(["Permission denials", String(accounting.permissionDenials)]);
    facts.push(["Cost", accounting.costUsd === undefined || accounting.costUsd === null ? "unknown" : `$${accounting.costUsd.toFixed(6)}`]);
  }
  if (run.error) facts.push(["Error", h("span", { class: "error" }, run.error)]);
  const models = Object.entries(accounting?.models ?? {});
  return h(
    "section",
    { class: "run-summary", "aria-label": "Summary" },
    h("dl", { class: "facts" }, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
    models.length
      ? h(
          "table",
          { class: "usage" },
          h("caption", {}, "Tokens per model"),
          h("thead", {}, h("tr", {}, ["Model", "Input", "Output", "Cache read", "Cache write", "Reasoning"].map((t) => h("th", { scope: "col" }, t)))),
          h(
            "tbody",
            {},
            models.map(([model, usage]) =>
              h(
                "tr",
                {},
                h("th", { scope: "row" }, model),
                [usage.inputTokens, usage.outputTokens, usage.cacheReadTokens, usage.cacheWriteTokens, usage.reasoningTokens].map((n) => h("td", {}, String(n ?? 0))),
              ),
            ),
          ),
        )
      : null,
  );
}

const LABELS = {
  turn_start: "Turn started",
  session_init: "Session",
  thinking: "Thinking",
  text: "Text",
  tool_use: "Tool call",
  tool_result: "Tool result",
  structured_output: "Structured output",
  result: "Result",
  error: "Error",
  turn_end: "Turn ended",
};

/** The stored events in order: one entry each, tool calls with their inputs and outputs. */
function timeline(events) {
  const results = new Map(events.filter((e) => e.event.type === "tool_result").map((e) => [e.event.toolUseId, e]));
  return h(
    "section",
    { "aria-labelledby": "timeline-title" },
    h("h2", { id: "timeline-title" }, "Timeline"),
    h("ol", { class: "timeline" }, events.map((entry) => timelineItem(entry, results))),
  );
}

function folded(summary, value, open = false) {
  return h("details", { open }, h("summary", {}, summary), h("pre", { class: "json" }, pretty(value)));
}

function timelineItem({ offset, event }, results) {
  const body = [];
  switch (event.type) {
    case "turn_start":
      body.push(h("p", { class: "prompt" }, event.userPrompt));
      break;
    case "session_init":
      if (event.systemPrompt) body.push(folded("System prompt", event.systemPrompt));
      break;
    case "thinking":
      body.push(folded("Reasoning", event.content));
      break;
    case "text":
      body.push(h("p", { class: "text" }, event.content));
      break;
    case "tool_use": {
      const result = results.get(event.id);
      body.push(h("p", {}, h("code", {}, event.tool), " ", h("small", {}, event.id)));
      body.push(folded("Input", event.input, true));
      if (result) body.push(h("p", {}, h("a", { href: `#offset-${result.offset}` }, `Result at offset ${result.offset}`)));
      break;
    }
    case "tool_result":
      body.push(h("p", {}, h("code", {}, event.tool), " ", h("small", {}, event.toolUseId), event.isError ? h("span", { class: "badge status-error" }, "error") : null));
      body.push(folded("Output", event.output, true));
      break;
    case "structured_output":
      body.push(h("pre", { class: "json" }, pretty(event.payload)));
      break;
    case "result":
      body.push(h("p", { class: "text" }, event.content));
      break;
    case "error":
      body.push(h("p", { class: "error" }, event.error));
      break;
    case "turn_end":
      body.push(h("p", {}, `${event.status} after ${duration(event.durationMs / 1000)}`));
      break;
    default:
      body.push(folded("Event", event));
  }
  return h(
    "li",
    { class: `event type-${event.type}`, id: `offset-${offset}` },
    h("div", { class: "event-head" }, h("span", { class: "offset" }, `#${offset}`), h("strong", {}, LABELS[event.type] ?? event.type), event.agent ? h("span", { class: "badge" }, `sub-agent ${event.agent}`) : null),
    body,
  );
}
