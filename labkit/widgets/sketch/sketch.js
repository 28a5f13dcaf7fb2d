// SketchForecast front end: an SVG chart you draw your expected loss curve on.
// It only edits synced state (points, shape, nan_step, seal_requested);
// Python checks, seals and saves. No build step: plain ES module for anywidget.

const NS = "http://www.w3.org/2000/svg";
const W = 520, H = 300;
const PAD = { l: 58, r: 16, t: 16, b: 44 };
const PW = W - PAD.l - PAD.r, PH = H - PAD.t - PAD.b;
const SHAPES = ["flat", "descending", "diverging", "spiky", "nan"];
const DEAD = "The kernel behind this sketch has restarted or stopped, so it can no longer seal " +
  "or draw again: re-run this cell for a live sketch.";
const hint = (model) => `Drag across the chart to draw the ${model.get("y_label") || "loss"} ` +
  "you expect (mouse, touch or pen). A preset gives a starting curve to redraw.";

function el(tag, attrs, parent, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  parent.appendChild(node);
  return node;
}

function html(tag, attrs, parent, text) {
  const node = document.createElement(tag);
  Object.assign(node, attrs);
  if (text !== undefined) node.textContent = text;
  parent.appendChild(node);
  return node;
}

// Map steps and losses to pixels (and back) for the current axes.
function scales(model) {
  const last = Math.max(model.get("steps") - 1, 1);
  const top = model.get("loss_max");
  const log = model.get("log_scale");
  const zero = model.get("zero_below");  // a band read as "zero" (a collapsed norm), if any
  const floor = zero ? Math.min(zero / 10, top / 1000) : top / 1000;  // the lowest value shown; > 0
  const f = (v) => (log ? Math.log(Math.max(v, floor)) : v);
  const y0 = log ? f(floor) : 0, y1 = f(top);
  const clamp = (v) => Math.min(Math.max(v, 0), 1);
  return {
    last, top, log, floor, zero,
    x: (s) => PAD.l + (s / last) * PW,
    y: (v) => PAD.t + (1 - clamp((f(Math.min(v, top)) - y0) / (y1 - y0))) * PH,
    step: (px) => Math.round(clamp((px - PAD.l) / PW) * last),
    loss: (py) => {
      const v = y0 + clamp(1 - (py - PAD.t) / PH) * (y1 - y0);
      return Math.max(log ? Math.exp(v) : v, floor);
    },
  };
}

// Round tick positions: multiples of 1, 2 or 5 times a power of ten, about 4 to 6 of them.
function niceTicks(top) {
  const raw = top / 4, p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  const ticks = [];
  for (let v = 0; v <= top + 1e-9; v += step) ticks.push(Number(v.toPrecision(6)));
  return ticks;
}

function yTicks(sc) {
  if (!sc.log) return niceTicks(sc.top);
  const ticks = [];
  for (let p = Math.ceil(Math.log10(sc.floor)); 10 ** p <= sc.top; p++) ticks.push(10 ** p);
  return ticks;
}

const fmt = (v) => (v >= 100 || v === 0 ? v.toFixed(0) : Number(v.toPrecision(2)).toString());

function draw(svg, model, stroke, cursor = null) {
  svg.replaceChildren();
  const sc = scales(model);
  el("rect", { x: PAD.l, y: PAD.t, width: PW, height: PH, class: "plot-bg" }, svg);
  for (const s of niceTicks(sc.last)) {
    const x = sc.x(s);
    el("line", { x1: x, x2: x, y1: PAD.t, y2: PAD.t + PH, class: "grid" }, svg);
    el("text", { x, y: PAD.t + PH + 16, class: "tick", "text-anchor": "middle" }, svg, String(s));
  }
  for (const v of yTicks(sc)) {
    const y = sc.y(v);
    el("line", { x1: PAD.l, x2: PAD.l + PW, y1: y, y2: y, class: "grid" }, svg);
    el("text", { x: PAD.l - 6, y: y + 4, class: "tick", "text-anchor": "end" }, svg, fmt(v));
  }
  el("text", { x: PAD.l + PW / 2, y: H - 6, class: "axis-label", "text-anchor": "middle" }, svg, "step");
  el("text", { x: 14, y: PAD.t + PH / 2, class: "axis-label", "text-anchor": "middle",
    transform: `rotate(-90 14 ${PAD.t + PH / 2})` }, svg,
    (model.get("y_label") || "loss") + (sc.log ? " (log)" : ""));
  if (sc.zero) {  // the bottom band: drawn there, a curve reads as zero
    const y = sc.y(sc.zero);
    el("rect", { x: PAD.l, y, width: PW, height: PAD.t + PH - y, class: "zero-band" }, svg);
    el("text", { x: PAD.l + PW - 4, y: PAD.t + PH - 4, class: "reference-label",
      "text-anchor": "end" }, svg, `zero (collapsed): below ${fmt(sc.zero)}`);
  }
  const ref = model.get("reference");
  if (ref !== null && ref <= sc.top) {
    const y = sc.y(ref);
    el("line", { x1: PAD.l, x2: PAD.l + PW, y1: y, y2: y, class: "reference" }, svg);
    el("text", { x: PAD.l + PW - 4, y: y - 5, class: "reference-label", "text-anchor": "end" }, svg,
      model.get("reference_label") || `reference ${fmt(ref)}`);
  }
  const nan = model.get("nan_step");
  if (nan !== null) {
    const x = sc.x(nan);
    el("line", { x1: x, x2: x, y1: PAD.t, y2: PAD.t + PH, class: "nan-line" }, svg);
    el("text", { x: x + 4, y: PAD.t + 12, class: "nan-label" }, svg, `NaN from step ${nan}`);
  }
  const colours = model.get("colours") || [];
  for (const o of model.get("others") || []) {  // the other series, fainter, not editable here
    const op = o.points.filter(([s]) => o.nan_step === null || s < o.nan_step);
    el("polyline", { points: op.map(([s, v]) => `${sc.x(s)},${sc.y(v)}`).join(" "),
      class: "other", stroke: colours[o.index] || "#888" }, svg);
  }
  const colour = colours[model.get("active")] || "#e8710a";
  const pts = model.get("points").filter(([s]) => nan === null || s < nan);
  const line = pts.map(([s, v]) => `${sc.x(s)},${sc.y(v)}`).join(" ");
  el("polyline", { points: line, class: "forecast", stroke: colour }, svg);
  for (const [s, v] of pts) el("circle", { cx: sc.x(s), cy: sc.y(v), r: 3, class: "point", fill: colour }, svg);
  if (cursor !== null) {
    const x = sc.x(cursor);
    el("line", { x1: x, x2: x, y1: PAD.t, y2: PAD.t + PH, class: "cursor" }, svg);
  }
  if (stroke.length) {
    el("polyline", { points: stroke.map(([s, v]) => `${sc.x(s)},${sc.y(v)}`).join(" "), class: "stroke" }, svg);
  }
  if (model.get("sealed")) {
    el("text", { x: PAD.l + 8, y: PAD.t + PH - 8, class: "sealed-label" }, svg, "sealed");
  }
}

// Turn one stroke into points: it replaces the points in the step range it covers.
function commit(model, stroke) {
  const byStep = new Map();
  for (const [s, v] of stroke) byStep.set(s, v);  // where the pen passed a step twice, the last wins
  const drawn = [...byStep.entries()].sort((a, b) => a[0] - b[0]);
  const last = model.get("steps") - 1, edge = Math.max(1, Math.round(last * 0.05));
  // A stroke that starts or ends near an edge of the chart carries on to it, so no old
  // point is left stranded at step 0 or the last step.
  if (drawn[0][0] <= edge && drawn[0][0] > 0) drawn.unshift([0, drawn[0][1]]);
  const tail = drawn[drawn.length - 1];
  if (last - tail[0] <= edge && tail[0] < last) drawn.push([last, tail[1]]);
  const lo = drawn[0][0], hi = drawn[drawn.length - 1][0];
  const gap = Math.max(1, Math.round(model.get("steps") / 40));  // at most ~40 points a stroke
  const thin = [];
  for (const p of drawn) if (!thin.length || p[0] - thin[thin.length - 1][0] >= gap) thin.push(p);
  if (thin[thin.length - 1] !== drawn[drawn.length - 1]) thin.push(drawn[drawn.length - 1]);
  const kept = model.get("points").filter(([s]) => s < lo || s > hi);
  const next = kept.concat(thin).sort((a, b) => a[0] - b[0])
    .map(([s, v]) => [s, Number(v.toPrecision(4))]);
  model.set("points", next);
  model.save_changes();
}

// Save the active series' points (for Undo) before a change the learner made.
function remember(history, model) {
  const key = model.get("active");
  (history[key] = history[key] || []).push(JSON.stringify([model.get("points"), model.get("nan_step")]));
  if (history[key].length > 50) history[key].shift();
}

function render({ model, el: host }) {
  const root = html("div", { className: "labkit-sketch" }, host);
  const legend = html("div", { className: "legend", role: "radiogroup",
    ariaLabel: "which curve you are drawing" }, root);
  const bar = html("div", { className: "toolbar" }, root);
  const label = html("label", {}, bar, "preset ");
  const preset = html("select", { className: "preset", title: "fill the chart with a shape to adjust" }, label);
  for (const name of ["", ...SHAPES]) html("option", { value: name }, preset, name || "(choose)");
  const nanButton = html("button", { className: "nan-mode", type: "button" }, bar, "Mark NaN step");
  const undo = html("button", { className: "undo", type: "button", title: "Ctrl+Z" }, bar, "Undo");
  const clear = html("button", { className: "clear", type: "button" }, bar, "Clear");
  const logLabel = html("label", { className: "log-toggle" }, bar);
  const logBox = html("input", { type: "checkbox", className: "log-y" }, logLabel);
  logLabel.append(" log y");
  const seal = html("button", { className: "labkit-seal", type: "button" }, bar, "Seal");
  const again = html("button", { className: "labkit-redraw", type: "button",
    title: "unseal for a new attempt; the sealed one stays in your store" }, bar, "Draw again");
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", tabindex: "0",
    "aria-label": "forecast chart: step on the x axis, the predicted value on the y axis. " +
      "Keys: left and right move the cursor, up and down move the curve there, Delete removes " +
      "the point there, Ctrl+Z undoes." }, root);
  const status = html("div", { className: "status" }, root);

  let stroke = [];
  let nanMode = false;
  let cursor = null;  // the step the keyboard edits
  let switching = false;  // a legend click waits for Python's swap of the curves
  const undoStack = {};  // per series index: earlier [points, nan_step] states
  const toData = (e) => {
    const box = svg.getBoundingClientRect();
    const sc = scales(model);
    const px = ((e.clientX - box.left) * W) / box.width, py = ((e.clientY - box.top) * H) / box.height;
    return [sc.step(px), sc.loss(py)];
  };
  const setState = (points, nan) => {
    model.set("points", points);
    model.set("nan_step", nan);
    model.save_changes();
  };
  const drawLegend = () => {
    legend.replaceChildren();
    const names = model.get("series_names") || [];
    if (names.length < 2) return;
    const colours = model.get("colours") || [];
    names.forEach((name, i) => {
      const b = html("button", { type: "button", className: "series" + (i === model.get("active") ? " active" : ""),
        role: "radio", ariaChecked: String(i === model.get("active")), title: `draw ${name}` }, legend);
      const swatch = html("span", { className: "swatch" }, b);
      swatch.style.background = colours[i] || "#888";
      b.append(name);
      b.addEventListener("click", () => {
        if (i === model.get("active") || model.get("sealed")) return;
        // Python swaps the curves and answers with a new `others`; until then a stroke
        // would land on the old curve, so drawing waits (see `switching`).
        switching = true;
        root.classList.add("is-switching");
        model.set("active", i);
        model.save_changes();
      });
    });
  };
  const update = () => {
    const sealed = model.get("sealed");
    draw(svg, model, stroke, sealed ? null : cursor);
    drawLegend();
    preset.value = model.get("shape");
    logBox.checked = model.get("log_scale");
    for (const c of [preset, nanButton, clear, undo]) c.disabled = sealed;
    undo.disabled = sealed || !(undoStack[model.get("active")] || []).length;
    seal.disabled = sealed || (model.get("points").length === 0 && model.get("nan_step") !== 0);
    seal.textContent = sealed ? "Sealed \u2713" : "Seal";  // the hash: once, in the message
    again.hidden = !sealed;
    nanButton.textContent = nanMode ? "Click where NaN starts"
      : model.get("nan_step") === null ? "Mark NaN step" : "Remove NaN step";
    status.textContent = model.get("message") || hint(model);
    root.classList.toggle("is-sealed", sealed);
    if (dead()) {  // no kernel behind this view: nothing here can seal or unseal any more
      for (const c of [preset, nanButton, clear, undo, seal, again, logBox]) c.disabled = true;
      status.textContent = DEAD;
      root.classList.add("is-dead");
    }
  };
  // A view whose kernel restarted or died holds a model with no kernel behind it: the
  // kernel's own status says so (JupyterLab's and Notebook 7's widget manager), and
  // ipywidgets marks a view whose comm it closed with this class.
  let gone = false;
  const kernel = model.widget_manager && model.widget_manager.kernel;
  const onStatus = (_, status) => {
    if (["restarting", "autorestarting", "dead"].includes(status)) {
      gone = true;
      update();
    }
  };
  if (kernel && kernel.statusChanged) kernel.statusChanged.connect(onStatus);
  const dead = () => gone || !!host.closest(".jupyter-widgets-disconnected");

  svg.addEventListener("pointerdown", (e) => {
    if (model.get("sealed") || switching || e.button > 0) return;
    e.preventDefault();
    svg.focus();
    if (nanMode) {
      nanMode = false;
      remember(undoStack, model);
      setState(model.get("points"), toData(e)[0]);
      return update();
    }
    svg.setPointerCapture(e.pointerId);
    stroke = [toData(e)];
    update();
  });
  svg.addEventListener("pointermove", (e) => {
    if (!stroke.length) return;
    const events = e.getCoalescedEvents ? e.getCoalescedEvents() : [e];
    for (const ev of events.length ? events : [e]) stroke.push(toData(ev));
    draw(svg, model, stroke);
  });
  const finish = () => {
    if (!stroke.length) return;
    const done = stroke;
    stroke = [];
    remember(undoStack, model);
    commit(model, done);
    update();
  };
  svg.addEventListener("pointerup", finish);
  svg.addEventListener("pointercancel", finish);

  // Keyboard: a cursor step; up/down set the curve there, Delete removes that point.
  svg.addEventListener("keydown", (e) => {
    if (model.get("sealed") || switching) return;
    const sc = scales(model);
    const last = sc.last, jump = Math.max(1, Math.round(last / 20));
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "z") { undo.click(); e.preventDefault(); return; }
    if (cursor === null) cursor = 0;
    const pts = model.get("points");
    const at = pts.find(([s]) => s === cursor);
    const here = at ? at[1] : (pts.length ? interp(pts, cursor) : (model.get("reference") || sc.top / 2));
    if (e.key === "ArrowRight") cursor = Math.min(last, cursor + jump);
    else if (e.key === "ArrowLeft") cursor = Math.max(0, cursor - jump);
    else if (e.key === "ArrowUp" || e.key === "ArrowDown") {
      const factor = e.key === "ArrowUp" ? 1 : -1;
      const next = sc.log ? here * Math.exp(0.1 * factor) : here + factor * sc.top / 40;
      const v = Number(Math.min(Math.max(next, sc.floor), sc.top).toPrecision(4));
      remember(undoStack, model);
      setState(pts.filter(([s]) => s !== cursor).concat([[cursor, v]]).sort((a, b) => a[0] - b[0]),
        model.get("nan_step"));
    } else if (e.key === "Delete" || e.key === "Backspace") {
      if (at) { remember(undoStack, model); setState(pts.filter(([s]) => s !== cursor), model.get("nan_step")); }
    } else return;
    e.preventDefault();
    update();
  });

  preset.addEventListener("change", () => {
    remember(undoStack, model);
    model.set("shape", preset.value);
    model.save_changes();
  });
  nanButton.addEventListener("click", () => {
    if (model.get("nan_step") !== null) {
      remember(undoStack, model);
      setState(model.get("points"), null);
    } else {
      nanMode = !nanMode;
    }
    update();
  });
  undo.addEventListener("click", () => {
    const stack = undoStack[model.get("active")] || [];
    if (!stack.length || model.get("sealed")) return;
    const [points, nan] = JSON.parse(stack.pop());
    model.set("shape", "");
    setState(points, nan);
    update();
  });
  clear.addEventListener("click", () => {
    remember(undoStack, model);
    model.set("points", []);
    model.set("nan_step", null);
    model.set("shape", "");
    model.save_changes();
  });
  logBox.addEventListener("change", () => {
    model.set("log_scale", logBox.checked);
    model.save_changes();
  });
  seal.addEventListener("click", () => {
    model.set("seal_requested", model.get("seal_requested") + 1);
    model.save_changes();
  });
  again.addEventListener("click", () => {
    model.set("redraw_requested", model.get("redraw_requested") + 1);
    model.save_changes();
  });

  const names = ["points", "steps", "loss_max", "log_scale", "reference", "reference_label",
    "shape", "nan_step", "sealed", "sealed_hash", "message", "active", "others", "series_names",
    "colours", "y_label"];
  const swapped = () => {
    switching = false;
    root.classList.remove("is-switching");
  };
  for (const n of names) model.on(`change:${n}`, update);
  model.on("change:others", swapped);
  model.on("comm_live_update", update);
  update();
  setTimeout(update, 0);  // ipywidgets sets the disconnected mark after the first render
  // Tell the kernel a front end shows this widget: a run cell may then wait for the Seal.
  model.set("rendered", model.get("rendered") + 1);
  model.save_changes();
  return () => {
    for (const n of names) model.off(`change:${n}`, update);
    model.off("change:others", swapped);
    model.off("comm_live_update", update);
    if (kernel && kernel.statusChanged) kernel.statusChanged.disconnect(onStatus);
  };
}

// The drawn curve at `step`, by straight lines between points (flat past the ends).
function interp(points, step) {
  for (let i = 1; i < points.length; i++) {
    const [s0, v0] = points[i - 1], [s1, v1] = points[i];
    if (s0 <= step && step <= s1) return v0 + ((v1 - v0) * (step - s0)) / (s1 - s0);
  }
  return step < points[0][0] ? points[0][1] : points[points.length - 1][1];
}

export default { render };
