// A person in the loop: the requests a waiting run puts to the conversation's members.
//
// A permission request is an approval card (the call's tool and input, shown as text,
// never run here) with Allow, Deny and Always allow; a question is a form (radio buttons
// or checkboxes for options, a text field for a free answer). Each goes away once it is
// decided, here or anywhere else (the watch view, or the run's events, say so).

import { api } from "./api.js";
import { announce, errorLine, fill, h, message, pretty } from "./dom.js";

/** The requests from a run's parts so far: each request part adds one, its decision
 * (or answer) removes it. */
export function pendingOf(runId, pending, part) {
  if (part.type === "permission_request") {
    const request = { requestId: part.requestId, runId, kind: "permission", tool: part.tool, input: part.input, effect: part.effect };
    return [...pending.filter((p) => p.requestId !== part.requestId), request];
  }
  if (part.type === "question") {
    const request = { requestId: part.requestId, runId, kind: "question", tool: "questionnaire", questions: part.questions };
    return [...pending.filter((p) => p.requestId !== part.requestId), request];
  }
  if (part.type === "permission_decision" || part.type === "answer") {
    return pending.filter((p) => p.requestId !== part.requestId);
  }
  return pending;
}

/** A list of cards, one per pending request, for the conversation at `base`. */
export class Approvals {
  constructor(base, canWrite) {
    this.base = base;
    this.canWrite = canWrite;
    this.pending = [];
    this.element = h("div", { class: "approvals", "aria-label": "Requests waiting for you" });
    this.element.hidden = true;
  }

  /** Show exactly `pending` (the cards already shown for the same requests stay). */
  show(pending) {
    const same = pending.length === this.pending.length && pending.every((p, i) => p.requestId === this.pending[i].requestId);
    if (same) return;
    this.pending = pending;
    fill(this.element, pending.map((request) => this.card(request)));
    this.element.hidden = !pending.length;
  }

  /** The current list after a part of run `runId`. */
  add(runId, part) {
    this.show(pendingOf(runId, this.pending, part));
  }

  card(request) {
    return request.kind === "question" ? this.questionnaire(request) : this.approval(request);
  }

  async send(request, route, body, error, controls) {
    for (const control of controls) control.disabled = true;
    try {
      await api("POST", `${this.base}/runs/${encodeURIComponent(request.runId)}/${route}`, { requestId: request.requestId, ...body });
      announce(route === "answers" ? "Answered" : body.decision === "allow" ? "Allowed" : "Denied");
      this.show(this.pending.filter((p) => p.requestId !== request.requestId));
    } catch (failure) {
      if (failure?.code === "request_decided") {
        this.show(this.pending.filter((p) => p.requestId !== request.requestId));
        announce("Decided already");
        return;
      }
      error.textContent = message(failure);
      for (const control of controls) control.disabled = !this.canWrite;
    }
  }

  approval(request) {
    const error = errorLine(`approval-error-${request.requestId}`);
    const allow = h("button", { type: "button", class: "allow", disabled: !this.canWrite }, "Allow");
    const always = h("button", { type: "button", class: "secondary always", disabled: !this.canWrite }, "Always allow");
    const deny = h("button", { type: "button", class: "secondary deny", disabled: !this.canWrite }, "Deny");
    const controls = [allow, always, deny];
    allow.addEventListener("click", () => this.send(request, "decisions", { decision: "allow" }, error, controls));
    always.addEventListener("click", () => this.send(request, "decisions", { decision: "allow", remember: true }, error, controls));
    deny.addEventListener("click", () => this.send(request, "decisions", { decision: "deny" }, error, controls));
    return h(
      "section",
      { class: "approval-card", "data-request": request.requestId, "aria-label": `Permission request: ${request.tool}` },
      h("h3", {}, "Allow ", h("code", { class: "tool" }, request.tool), request.effect ? h("span", { class: "badge" }, request.effect) : null, "?"),
      h("pre", { class: "json call-input" }, pretty(request.input ?? {})),
      this.canWrite ? h("div", { class: "buttons" }, allow, always, deny) : h("p", { class: "meta" }, "A member who may prompt decides."),
      error,
    );
  }

  questionnaire(request) {
    const error = errorLine(`question-error-${request.requestId}`);
    const submit = h("button", { type: "submit", disabled: !this.canWrite }, "Answer");
    const fields = (request.questions ?? []).map((question, index) => {
      const key = String(question.id ?? `q${index + 1}`);
      const name = `${request.requestId}-${key}`;
      const options = question.options ?? [];
      if (!options.length) {
        const input = h("input", { id: name, name, disabled: !this.canWrite });
        return { key, read: () => input.value, element: h("div", { class: "field" }, h("label", { for: name }, question.question), input) };
      }
      const kind = question.multiple ? "checkbox" : "radio";
      const boxes = options.map((option, at) => h("input", { type: kind, id: `${name}-${at}`, name, value: String(option), disabled: !this.canWrite }));
      const read = () => {
        const chosen = boxes.filter((box) => box.checked).map((box) => box.value);
        return question.multiple ? chosen : (chosen[0] ?? "");
      };
      return {
        key,
        read,
        element: h(
          "fieldset",
          { class: "question" },
          h("legend", {}, question.question),
          boxes.map((box, at) => h("label", { for: box.id, class: "option" }, box, " ", String(options[at]))),
        ),
      };
    });
    const form = h(
      "form",
      { class: "question-card", "data-request": request.requestId, "aria-label": "Questions for you" },
      h("h3", {}, "Questions"),
      fields.map((f) => f.element),
      this.canWrite ? h("div", { class: "buttons" }, submit) : h("p", { class: "meta" }, "A member who may prompt answers."),
      error,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const answers = Object.fromEntries(fields.map((f) => [f.key, f.read()]));
      const controls = [submit, ...form.querySelectorAll("input")];
      this.send(request, "answers", { answers }, error, controls);
    });
    return form;
  }
}
