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

export default plugin;
