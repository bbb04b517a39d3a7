// Small helpers to build the page: elements, JSON, times, announcements.

/**
 * An element: `h("a", {href: "#/x", class: "link", onclick: fn}, "text", child, [more])`.
 * Attributes named `on…` are listeners; `null`, `false` and `undefined` are left out.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else if (name === "text") element.textContent = value;
    else if (name in element && typeof value !== "string") element[name] = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

/** Replace an element's children. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/** A value as indented JSON (a string stays as it is). */
export function pretty(value) {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  return JSON.stringify(value, null, 2);
}

/** A time in seconds since the epoch, as local date and time. */
export function when(seconds) {
  if (seconds === null || seconds === undefined) return "";
  return new Date(seconds * 1000).toLocaleString();
}

/** A duration in seconds, short. */
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 120) return `${seconds.toFixed(1)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

/** Say something to screen readers (the page's polite status region). */
export function announce(text) {
  const status = document.getElementById("status");
  status.textContent = "";
  setTimeout(() => {
    status.textContent = text;
  }, 50);
}

/** A labelled form control: `<label for=id>` then the control (given its id). */
export function field(label, control, hint) {
  const wrapper = h("div", { class: "field" }, h("label", { for: control.id }, label), control);
  if (hint) {
    const hintId = `${control.id}-hint`;
    control.setAttribute("aria-describedby", hintId);
    wrapper.append(h("small", { id: hintId, class: "hint" }, hint));
  }
  return wrapper;
}

/** An error line, read out when it appears. */
export function errorLine(id) {
  return h("p", { id, class: "error", role: "alert" });
}

/** The message of an error for a person. */
export function message(error) {
  if (error?.code && error?.message) return `${error.message} (${error.code})`;
  return error?.message ?? String(error);
}
