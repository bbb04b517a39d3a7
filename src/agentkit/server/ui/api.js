// The server's JSON and SSE API, with the member token of this tab.
//
// EventSource cannot send an Authorization header, so event streams are read with
// fetch and a stream reader; `Last-Event-ID` resumes a stream after what was seen.

const TOKEN_KEY = "agentkit.token";

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** An error answer of the API: `{"error": {"code", "message"}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${token() ?? ""}`, ...extra };
}

async function failure(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status says enough
  }
  const error = body?.error ?? {};
  const failed = new ApiError(
    response.status,
    error.code ?? "error",
    error.message ?? `${response.status} ${response.statusText}`,
  );
  if (response.status === 401) window.dispatchEvent(new CustomEvent("agentkit:unauthorized"));
  return failed;
}

/** One JSON call: the answer's body (`null` for 204); an `ApiError` otherwise. */
export async function api(method, path, body) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null;
  const text = await response.text(); // a 202 of a decision has no body
  return text ? JSON.parse(text) : null;
}

/**
 * Upload a file of this computer (`POST /v1/files`, the file as the body): the stored
 * file's `{path, name, size}`, whose path a prompt attaches; an `ApiError` otherwise.
 */
export async function upload(file) {
  const path = `/v1/files?filename=${encodeURIComponent(file.name)}`;
  const init = { method: "POST", headers: headers({ "Content-Type": "application/octet-stream" }), body: file };
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * The events of an SSE route as `{id, event, data}` (data parsed as JSON), until the
 * server ends the stream or `signal` aborts it. `lastEventId` resumes after that id.
 */
export async function* sse(path, { lastEventId = null, signal } = {}) {
  const extra = { Accept: "text/event-stream" };
  if (lastEventId !== null && lastEventId !== undefined) extra["Last-Event-ID"] = String(lastEventId);
  const response = await fetch(path, { headers: headers(extra), signal, cache: "no-store" });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = { id: null, event: "message", data: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (line === "") {
          if (event.data.length) {
            yield { id: event.id, event: event.event, data: JSON.parse(event.data.join("\n")) };
          }
          event = { id: null, event: "message", data: [] };
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "data") event.data.push(text);
          else if (field === "id") event.id = Number(text);
          else if (field === "event") event.event = text;
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** Wait `ms`, or less when `signal` aborts. */
export function pause(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Follow an SSE route that may drop: reconnect after a pause, resuming after the last id
 * handled, until `onEvent` returns true (done), the server ends it with `endsByItself`,
 * or `signal` aborts. `onError` hears about refusals (an `ApiError`: then it stops).
 */
export async function follow(path, { after = null, signal, onEvent, onError, endsByItself = false }) {
  let last = after;
  let delay = 250;
  while (!signal.aborted) {
    try {
      for await (const event of sse(path, { lastEventId: last, signal })) {
        delay = 250;
        if (event.id !== null) last = event.id;
        if (onEvent(event)) return last;
      }
      if (endsByItself) return last;
    } catch (error) {
      if (signal.aborted) return last;
      if (error instanceof ApiError) {
        onError?.(error);
        return last;
      }
    }
    await pause(delay, signal);
    delay = Math.min(delay * 2, 5000);
  }
  return last;
}
