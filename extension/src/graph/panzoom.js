// Pan and zoom of the graph's SVG viewport (drag, wheel, fit, centre), and the
// resize grip under the viewer.

// Canvas size to assume before the browser has laid the page out.
const DEFAULT_W = 800;
const DEFAULT_H = 480;

export class PanZoom {
  constructor(svg, viewport, canvas) {
    this.svg = svg;
    this.viewport = viewport;
    this.canvas = canvas;
    this.k = 1; this.tx = 0; this.ty = 0; this.minK = 0.02;
    // true right after a drag, so the click that ends it selects nothing
    this.suppressClick = false;
  }

  install() {
    let drag = null;
    this.svg.addEventListener("mousedown", (ev) => {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, tx: this.tx, ty: this.ty, moved: false };
    });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      this.tx = drag.tx + dx; this.ty = drag.ty + dy;
      this.apply();
    });
    window.addEventListener("mouseup", () => {
      if (drag && drag.moved) this.suppressClick = true;
      drag = null;
      setTimeout(() => { this.suppressClick = false; }, 0);
    });
    this.svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = this.svg.getBoundingClientRect();
      const mx = ev.clientX - r.left, my = ev.clientY - r.top;
      this.zoomBy(Math.exp(-ev.deltaY * 0.0015), mx, my);
    }, { passive: false });
  }

  size() {
    return [this.canvas.clientWidth || DEFAULT_W, this.canvas.clientHeight || DEFAULT_H];
  }

  screenCentre() {
    const [w, hgt] = this.size();
    return [w / 2, hgt / 2];
  }

  // Zoom by factor f about the screen point (mx, my) (default: the centre).
  zoomBy(f, mx, my) {
    if (mx === undefined) [mx, my] = this.screenCentre();
    const k = Math.min(4, Math.max(this.minK, this.k * f));
    this.tx = mx - ((mx - this.tx) * k) / this.k;
    this.ty = my - ((my - this.ty) * k) / this.k;
    this.k = k;
    this.apply();
  }

  apply() {
    this.viewport.setAttribute("transform", `translate(${this.tx},${this.ty}) scale(${this.k})`);
  }

  // The whole of a w×h drawing, however small that makes it (zoom in from there).
  fit(lw, lh) {
    const [w, hgt] = this.size();
    const k = Math.min(1.2, (w - 20) / lw, (hgt - 20) / lh);
    this.minK = Math.min(0.02, k / 2);
    this.k = k;
    this.tx = (w - lw * k) / 2;
    this.ty = (hgt - lh * k) / 2;
    this.apply();
  }

  // The whole drawing if that keeps the zoom at `floor` or more; else the zoom
  // `floor`, the drawing's top centred (panning shows the rest).
  fitAtLeast(lw, lh, floor) {
    this.fit(lw, lh);
    if (this.k >= floor) return;
    const [w] = this.size();
    this.k = floor;
    this.tx = (w - lw * floor) / 2;
    this.ty = 10;
    this.apply();
  }

  // Bring a box into view: centred, zoomed out only as far as it needs (a tall box
  // shows its top).
  centreOn(box, zoomToFit) {
    const [w, hgt] = this.size();
    let k = this.k;
    if (zoomToFit) k = Math.min(Math.max(k, 0.8), Math.max(Math.min(0.35, k), Math.min((w - 20) / box.w, (hgt - 20) / box.h)));
    this.k = k;
    this.minK = Math.min(this.minK, k / 2);
    this.tx = w / 2 - (box.x + box.w / 2) * k;
    this.ty = box.h * k > hgt - 20 ? 10 - box.y * k : hgt / 2 - (box.y + box.h / 2) * k;
    this.apply();
  }

  // Centre on a box only if part of it is off screen.
  keepInView(b) {
    const [w, hgt] = this.size();
    const x0 = b.x * this.k + this.tx, y0 = b.y * this.k + this.ty;
    if (x0 < 0 || y0 < 0 || x0 + b.w * this.k > w || y0 + b.h * this.k > hgt) {
      this.tx = w / 2 - (b.x + b.w / 2) * this.k;
      this.ty = hgt / 2 - (b.y + b.h / 2) * this.k;
      this.apply();
    }
  }

  state() {
    return { k: this.k, tx: this.tx, ty: this.ty, minK: this.minK };
  }
}

// Dragging the grip sets the viewer's height (never below minHeight).
export function installResize(root, grip, minHeight) {
  grip.addEventListener("pointerdown", (ev) => {
    ev.preventDefault();
    const y0 = ev.clientY, h0 = root.getBoundingClientRect().height;
    const move = (e) => { root.style.height = Math.max(minHeight, Math.round(h0 + e.clientY - y0)) + "px"; };
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  });
}
