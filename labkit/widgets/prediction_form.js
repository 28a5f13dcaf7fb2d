// The prediction form: one control per question, Seal, and Answer again once sealed.
// Python checks and seals (seal_requested); this file only draws and reports answers.
const DEAD = "The kernel behind this form has restarted or stopped, so it can no longer seal " +
  "or answer again: re-run this cell for a live form (a sealed prediction comes back from " +
  "your learner store).";
function control(q, answers, onChange) {
  const row = document.createElement("div");
  row.className = "question";
  const label = document.createElement("span");
  label.className = "name";
  label.textContent = q.name;
  row.appendChild(label);
  const value = answers[q.name];
  const menu = (choices, current, set) => {
    const s = document.createElement("select");
    for (const c of ["", ...choices]) {
      const o = document.createElement("option");
      o.value = c;
      o.textContent = c === "" ? "(choose)" : c;
      if (c === (current ?? "")) o.selected = true;
      s.appendChild(o);
    }
    s.addEventListener("change", () => set(s.value));
    return s;
  };
  if (q.kind === "choice") {
    row.appendChild(menu(q.choices, value, (v) => onChange(q.name, v)));
  } else if (q.kind === "bool") {
    row.appendChild(menu(["True", "False"], value, (v) => onChange(q.name, v)));
  } else if (q.kind === "groups") {
    const chosen = new Set(value || []);
    for (const c of q.choices) {
      const box = document.createElement("label");
      const input = document.createElement("input");
      input.type = "checkbox";
      input.checked = chosen.has(c);
      input.addEventListener("change", () => {
        if (input.checked) chosen.add(c); else chosen.delete(c);
        onChange(q.name, q.choices.filter((x) => chosen.has(x)));
      });
      box.append(input, " " + c + " ");
      row.appendChild(box);
    }
  } else if (q.kind === "roles") {
    const roles = { ...(value || {}) };
    for (const k of q.keys) {
      const part = document.createElement("label");
      part.append(" " + k + ": ");
      part.appendChild(menu(q.choices, roles[k], (v) => {
        roles[k] = v;
        onChange(q.name, { ...roles });
      }));
      row.appendChild(part);
    }
  } else {
    const input = document.createElement(q.kind === "text" ? "textarea" : "input");
    input.value = value || "";
    if (q.kind === "text") input.rows = 2;
    input.addEventListener("input", () => onChange(q.name, input.value));
    row.appendChild(input);
  }
  return row;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "labkit-prediction";
  el.appendChild(root);
  const draw = () => {
    root.innerHTML = "";
    const sealed = model.get("sealed");
    root.classList.toggle("is-sealed", sealed);
    const answers = model.get("answers") || {};
    const onChange = (name, v) => {
      model.set("answers", { ...model.get("answers"), [name]: v });
      model.save_changes();
    };
    for (const q of model.get("spec")) {
      const row = control(q, answers, onChange);
      for (const input of row.querySelectorAll("input, select, textarea")) input.disabled = sealed;
      root.appendChild(row);
    }
    const seal = document.createElement("button");
    seal.className = "labkit-seal";
    seal.textContent = sealed ? "Sealed" : "Seal";
    seal.disabled = sealed;
    seal.addEventListener("click", () => {
      model.set("seal_requested", model.get("seal_requested") + 1);
      model.save_changes();
    });
    root.appendChild(seal);
    if (sealed) {
      const again = document.createElement("button");
      again.className = "labkit-again";
      again.textContent = "Answer again";
      again.addEventListener("click", () => {
        model.set("again_requested", model.get("again_requested") + 1);
        model.save_changes();
      });
      root.appendChild(again);
    }
    const status = document.createElement("div");
    status.className = "status";
    status.textContent = model.get("message");
    root.appendChild(status);
    if (dead()) {  // no kernel behind this view: nothing here can seal or unseal any more
      for (const c of root.querySelectorAll("input, select, textarea, button")) c.disabled = true;
      status.textContent = DEAD;
      root.classList.add("is-dead");
    }
  };
  // A view whose kernel restarted or died holds a model with no kernel behind it: the
  // kernel's own status says so, and ipywidgets marks a view whose comm it closed.
  let gone = false;
  const kernel = model.widget_manager && model.widget_manager.kernel;
  const onStatus = (_, state) => {
    if (["restarting", "autorestarting", "dead"].includes(state)) {
      gone = true;
      draw();
    }
  };
  if (kernel && kernel.statusChanged) kernel.statusChanged.connect(onStatus);
  const dead = () => gone || !!el.closest(".jupyter-widgets-disconnected");
  const events = ["change:sealed", "change:message", "change:spec"];
  events.forEach((e) => model.on(e, draw));
  draw();
  // Tell the kernel a front end shows this form: the cell may then wait for the Seal.
  model.set("rendered", model.get("rendered") + 1);
  model.save_changes();
  return () => {
    events.forEach((e) => model.off(e, draw));
    if (kernel && kernel.statusChanged) kernel.statusChanged.disconnect(onStatus);
  };
}

export default { render };
