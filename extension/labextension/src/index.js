// JupyterLab plugin for jaxscope's stepper output (application/vnd.jaxscope.stepper+json).
//
// The live stepper is an ipywidget; its output also holds a static transcript
// (text/html). JupyterLab's widget renderer shows "Error displaying widget: model not
// found" once the kernel that owned the model is gone and never falls back to the
// HTML. This renderer ranks just ahead of it in each notebook: it hands the output to
// the widget renderer and shows its view once there is one, and the transcript when
// that renderer finds no model or is still loading after a grace period, or when the
// output is untrusted (where Lab would not run a widget either). While the transcript
// shows, fresh widget renderers are tried for a while: after a page reload the live
// kernel's models come back a moment later, and the stepper with them.
import { Panel, Widget } from "@lumino/widgets";

// The event of ../../src/graph/goto.js (not imported: that would bundle the viewer's
// package into this plugin's chunk); extension/tests/goto.test.mjs checks they agree.
export const SOURCE_EVENT = "jaxscope:source";

export const STEPPER_MIME = "application/vnd.jaxscope.stepper+json";
const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
// ipywidgets' widget renderer ranks -10 (@jupyter-widgets/jupyterlab-manager).
const RANK = -20;

// How long a widget may say "Loading widget..." before the transcript shows instead;
// a reopened notebook's widget manager may never settle, and a live one is quicker.
const GRACE_MS = 1500;
// After a page reload with the kernel alive, ipywidgets restores the kernel's models a
// moment after the outputs render, and a renderer that looked too early keeps saying
// "model not found": a fresh one is tried after each of these delays (about half a
// minute in all) while the transcript shows; a kernel that is really gone costs a few
// hidden attempts.
const RETRY_MS = [1000, 2000, 3000, 5000, 8000, 12000];

function widgetGone(inner) {
  return inner.isDisposed || inner.isHidden || /^\s*Error displaying widget/.test(inner.node.textContent || "");
}

function widgetShown(inner) {
  // The widget renderer replaces its "Loading widget..." text with the view's element.
  return !widgetGone(inner) && inner.node.children.length > 0;
}

class StepperRenderer extends Panel {
  constructor(options, rendermime) {
    super();
    this.addClass("jaxscope-lab-stepper");
    this._sanitizer = options.sanitizer;
    this._rendermime = rendermime;
    this._transcript = new Widget();
    this._transcript.addClass("jaxscope-stepper-transcript");
    this._transcript.hide();
    this.addWidget(this._transcript);
    this._inner = null;
    this._modelId = null;
    this._observer = null;
    this._timer = null;
    this._retry = null;
  }

  async renderModel(model) {
    this._clearRetry();
    this._fillTranscript(model);
    const view = model.data[WIDGET_MIME];
    const modelId = view && view.model_id;
    const live = model.trusted && modelId && this._rendermime.getFactory(WIDGET_MIME);
    if (!live) {
      this._dropInner();
      this._transcript.show();
      return;
    }
    if (this._inner !== null && this._modelId === modelId && !widgetGone(this._inner)) return;
    await this._attach(model, modelId, 0);
  }

  async _attach(model, modelId, attempt) {
    this._retry = null;
    this._dropInner();
    const inner = this._rendermime.createRenderer(WIDGET_MIME);
    this._inner = inner;
    this._modelId = modelId;
    inner.node.style.display = "none"; // until it shows the live view
    this.insertWidget(0, inner);
    this._transcript.hide();
    let graceOver = false;
    const retry = () => {
      if (this._retry === null && attempt < RETRY_MS.length && !this.isDisposed) {
        this._retry = setTimeout(() => this._attach(model, modelId, attempt + 1), RETRY_MS[attempt]);
      }
    };
    const update = () => {
      if (this._inner !== inner) return;
      if (widgetGone(inner)) {
        this._dropInner();
        this._transcript.show();
        retry();
      } else if (widgetShown(inner)) {
        inner.node.style.display = "";
        this._transcript.hide();
        this._clearRetry();
      } else if (graceOver) {
        this._transcript.show();
        retry();
      }
    };
    this._timer = setTimeout(() => {
      graceOver = true;
      update();
    }, GRACE_MS);
    // The widget renderer tells a missing model only in its text, once ipywidgets has
    // restored the kernel's widgets; watch it.
    this._observer = new MutationObserver(update);
    this._observer.observe(inner.node, { childList: true, characterData: true, subtree: true, attributes: true });
    await inner.renderModel(model);
    update();
  }

  _clearRetry() {
    if (this._retry !== null) clearTimeout(this._retry);
    this._retry = null;
  }

  _dropInner() {
    if (this._observer !== null) this._observer.disconnect();
    if (this._timer !== null) clearTimeout(this._timer);
    this._observer = null;
    this._timer = null;
    if (this._inner !== null && !this._inner.isDisposed) this._inner.dispose();
    this._inner = null;
    this._modelId = null;
  }

  _fillTranscript(model) {
    const node = this._transcript.node;
    node.textContent = "";
    const note = document.createElement("div");
    note.className = "jaxscope-stepper-note";
    note.style.cssText = "font-size:11px;color:var(--jp-ui-font-color2,#777);margin-bottom:2px";
    note.textContent =
      "jaxscope stepper, as it was displayed (its live session ended with its kernel; run the cell again to step)";
    node.appendChild(note);
    const body = document.createElement("div");
    const html = model.data["text/html"];
    if (typeof html === "string") body.innerHTML = this._sanitizer.sanitize(html);
    else body.textContent = String(model.data["text/plain"] || "");
    node.appendChild(body);
  }

  dispose() {
    this._clearRetry();
    this._dropInner();
    super.dispose();
  }
}

function addStepperRenderer(rendermime) {
  if (!rendermime || rendermime.getFactory(STEPPER_MIME)) return;
  rendermime.addFactory(
    { safe: true, mimeTypes: [STEPPER_MIME], createRenderer: (options) => new StepperRenderer(options, rendermime) },
    RANK,
  );
}

const plugin = {
  id: "jaxscope:stepper",
  description: "Shows a jaxscope stepper's transcript when its widget model is gone.",
  autoStart: true,
  activate: (app) => {
    // Each notebook clones the rendermime registry and ipywidgets adds its renderer
    // to that clone, so the stepper renderer (which delegates to it) goes there too.
    const hooked = new WeakSet();
    const hook = (factory) => {
      if (!factory || hooked.has(factory) || !factory.widgetCreated) return;
      hooked.add(factory);
      factory.widgetCreated.connect((_, panel) => addStepperRenderer(panel.content && panel.content.rendermime));
    };
    hook(app.docRegistry.getWidgetFactory("Notebook"));
    app.docRegistry.changed.connect((_, change) => {
      if (change.type === "widgetFactory" && change.change === "added") hook(app.docRegistry.getWidgetFactory(change.name));
    });
  },
};

// The graph viewer's source links ("go to the cell", "open the file") dispatch
// SOURCE_EVENT from the output (../../src/graph/goto.js); in Lab they select the cell
// whose execution count is N in the notebook holding the output, and open a file
// under the server's root with the document manager at the line. Anything else is
// left to the viewer (it scrolls to a prompt on the page or shows the path to copy).

function notebookHolding(app, target) {
  for (const w of app.shell.widgets("main")) {
    const nb = w.content;
    if (w.node.contains(target) && nb && nb.widgets && "activeCellIndex" in nb) return w;
  }
  return null;
}

function selectCell(app, panel, n, line) {
  const nb = panel.content;
  const index = nb.widgets.findIndex((c) => c.model.type === "code" && c.model.executionCount === n);
  if (index < 0) return false;
  const cell = nb.widgets[index];
  app.shell.activateById(panel.id);
  nb.mode = "command";
  nb.activeCellIndex = index;
  if (nb.deselectAll) nb.deselectAll();
  if (cell.editor && line > 0) cell.editor.setCursorPosition({ line: line - 1, column: 0 });
  if (nb.scrollToCell) nb.scrollToCell(cell, "center");
  else cell.node.scrollIntoView({ block: "center" });
  return true;
}

/** `file` relative to the server's root (page config `serverRoot`), else null. */
export function underRoot(file, root) {
  if (!root || !file.startsWith("/")) return null;
  const base = root.endsWith("/") ? root : root + "/";
  return file.startsWith(base) ? file.slice(base.length) : null;
}

function serverRoot() {
  const node = document.getElementById("jupyter-config-data");
  try {
    return node ? JSON.parse(node.textContent || "{}").serverRoot || "" : "";
  } catch {
    return "";
  }
}

function openFile(app, path, line) {
  return app.commands.execute("docmanager:open", { path }).then((w) => {
    const editor = w && w.content && w.content.editor;
    if (!editor || !(line > 0)) return;
    const go = () => {
      editor.setCursorPosition({ line: line - 1, column: 0 });
      if (editor.revealPosition) editor.revealPosition({ line: line - 1, column: 0 });
    };
    (w.context && w.context.ready ? w.context.ready : Promise.resolve()).then(go, () => {});
  });
}

const sourceLinks = {
  id: "jaxscope:source-links",
  description: "Takes the graph viewer's source links to the notebook cell or the file.",
  autoStart: true,
  activate: (app) => {
    document.addEventListener(SOURCE_EVENT, (ev) => {
      const { file, line, cell } = ev.detail || {};
      if (typeof file !== "string") return;
      if (cell !== null && cell !== undefined) {
        const panel = notebookHolding(app, ev.target);
        if (panel && selectCell(app, panel, cell, line)) {
          ev.preventDefault();
          ev.detail.result = `selected ${file} (line ${line})`;
        }
        return;
      }
      const path = underRoot(file, serverRoot());
      if (path === null) return;
      ev.preventDefault();
      ev.detail.result = `opened ${path} at line ${line}`;
      openFile(app, path, line).catch(() => {});
    });
  },
};

export default [plugin, sourceLinks];
