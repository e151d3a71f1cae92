// Long work split into tasks the page can breathe between: the work is a generator
// that checks `due()` where it may pause and yields there; `runSliced` resumes it in a
// new task once SLICE_MS of the current one are spent (the page paints, handles input
// and keeps no main-thread task long), `runSync` runs it through in one go (small
// graphs, node's tests). Pure: no DOM.

/** The longest a slice of work runs before it yields to the page (ms). */
export const SLICE_MS = 16;

const now = () => (typeof performance !== "undefined" ? performance.now() : Date.now());
let deadline = Infinity;

/** Whether the running slice is spent (never, under `runSync`). */
export function due() {
  return deadline !== Infinity && now() >= deadline;
}

/** Run a generator through, ignoring its pauses; returns its return value. */
export function runSync(steps) {
  const saved = deadline;
  deadline = Infinity;
  try {
    for (;;) {
      const r = steps.next();
      if (r.done) return r.value;
    }
  } finally {
    deadline = saved;
  }
}

/** A new task (the page may paint and handle input before it), without setTimeout's
 * clamping to 4 ms once timers nest. */
export function nextTask() {
  const s = globalThis.scheduler;
  if (s && typeof s.postTask === "function") return s.postTask(() => {}, { priority: "user-visible" });
  if (typeof MessageChannel === "function") {
    return new Promise((resolve) => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => { ch.port1.close(); resolve(); };
      ch.port2.postMessage(0);
    });
  }
  return new Promise((resolve) => setTimeout(resolve));
}

/**
 * Run a generator in slices of at most `ms` between its pauses, a new task for each
 * (the first too: the caller's task may have run a while); resolves to its return
 * value. `onPause` (tests) is called at each pause.
 */
export async function runSliced(steps, ms = SLICE_MS, onPause) {
  await nextTask();
  for (;;) {
    deadline = now() + ms;
    let r;
    try {
      r = steps.next();
    } finally {
      deadline = Infinity;
    }
    if (r.done) return r.value;
    if (onPause) onPause();
    await nextTask();
  }
}
