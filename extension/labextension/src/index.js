// JupyterLab plugin for jaxscope's stepper output (application/vnd.jaxscope.stepper+json).
//
// The live stepper is an ipywidget; its output also holds a static transcript
// (text/html). JupyterLab's widget renderer shows "Error displaying widget: model not
// found" once the kernel that owned the model is gone and never falls back to the
// HTML. This renderer ranks just ahead of it in each notebook: it hands the output to
// the widget renderer, and shows the transcript when that renderer finds no model,
// or when the output is untrusted (where Lab would not run a widget either).
import { Panel, Widget } from "@lumino/widgets";

export const STEPPER_MIME = "application/vnd.jaxscope.stepper+json";
const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
// ipywidgets' widget renderer ranks -10 (@jupyter-widgets/jupyterlab-manager).
const RANK = -20;

function widgetGone(inner) {
  return inner.isDisposed || inner.isHidden || /^Error displaying widget/.test(inner.node.textContent || "");
}

class StepperRenderer extends Panel {
  constructor(options, rendermime) {
    super();
    this.addClass("jaxscope-lab-stepper");
    this._sanitizer = options.sanitizer;
    this._rendermime = rendermime;
    this._inner = null;
    this._modelId = null;
    this._observer = null;
  }

  async renderModel(model) {
    const view = model.data[WIDGET_MIME];
    const modelId = view && view.model_id;
    const live = model.trusted && modelId && this._rendermime.getFactory(WIDGET_MIME);
    if (!live) {
      this._showTranscript(model);
      return;
    }
    if (this._inner !== null && this._modelId === modelId && !widgetGone(this._inner)) return;
    this._clear();
    const inner = this._rendermime.createRenderer(WIDGET_MIME);
    this._inner = inner;
    this._modelId = modelId;
    this.addWidget(inner);
    // The widget renderer reports a missing model only in its text (it may first wait
    // for the kernel's widgets to be restored), so watch it.
    const check = () => {
      if (this._inner === inner && widgetGone(inner)) this._showTranscript(model);
    };
    this._observer = new MutationObserver(check);
    this._observer.observe(inner.node, { childList: true, characterData: true, subtree: true, attributes: true });
    await inner.renderModel(model);
    check();
  }

  _clear() {
    if (this._observer !== null) this._observer.disconnect();
    this._observer = null;
    if (this._inner !== null) this._inner.dispose();
    this._inner = null;
    this._modelId = null;
    this.node.textContent = "";
  }

  _showTranscript(model) {
    this._clear();
    const html = model.data["text/html"];
    const box = new Widget();
    box.addClass("jaxscope-stepper-transcript");
    const note = document.createElement("div");
    note.className = "jaxscope-stepper-note";
    note.style.cssText = "font-size:11px;color:var(--jp-ui-font-color2,#777);margin-bottom:2px";
    note.textContent = "jaxscope stepper, as it was displayed (its live session ended with its kernel; run the cell again to step)";
    box.node.appendChild(note);
    const body = document.createElement("div");
    if (typeof html === "string") body.innerHTML = this._sanitizer.sanitize(html);
    else body.textContent = String(model.data["text/plain"] || "");
    box.node.appendChild(body);
    this.addWidget(box);
  }

  dispose() {
    if (this._observer !== null) this._observer.disconnect();
    this._observer = null;
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
