// "Go to source": a source link's jump to the notebook cell (In [N]) or the file line.
//
// The viewer does not know its front-end. It dispatches a cancelable, bubbling
// `jaxscope:source` event from its element with `detail = {file, line, cell}`; a
// front-end that can do better (the JupyterLab plugin: select the cell through the
// notebook model, open the file with the document manager) handles it, calls
// preventDefault() and writes `detail.result`, the sentence the viewer shows. Where
// none does, the viewer finds the cell on the page by its prompt ("[N]:" in Lab,
// "In [N]:" in Notebook 6 and nbconvert's pages), scrolls to it and marks it; a file
// line is shown as text to copy (a page cannot open files).

export const SOURCE_EVENT = "jaxscope:source";

/** The execution count N of a cell's file name "In [N]", else null. */
export function cellNumber(file) {
  const m = /^In \[(\d+)\]$/.exec(file || "");
  return m ? Number(m[1]) : null;
}

/** Whether a prompt's text ("[3]:", "In [3]:", "In\u00a0[3]:") is cell N's. */
export function isPrompt(text, n) {
  const m = /^\s*(?:In\s*)?\[\s*(\d+)\s*\]:?\s*$/.exec(text || "");
  return m !== null && Number(m[1]) === n;
}

// Input prompts: JupyterLab and its nbconvert template, Notebook 6 and its template;
// and the input area around one (what is scrolled to and marked).
const PROMPTS = ".jp-InputPrompt, .input_prompt";
const INPUTS = ".jp-Cell-inputWrapper, .jp-InputArea, .input";
const FLASH_MS = 2000;

/** The input area of the cell whose prompt says N in `doc`, else null. */
export function findCell(doc, n) {
  for (const p of doc.querySelectorAll(PROMPTS)) {
    if (isPrompt(p.textContent, n)) return p.closest(INPUTS) || p;
  }
  return null;
}

/**
 * Ask the front-end to go to `file:line`, else do what the page allows. Returns
 * `{text, copy}`: the sentence saying what happened (shown in the toolbar) and, for a
 * file the page cannot open, the "file:line" to offer for copying.
 */
export function goToSource(host, file, line) {
  const cell = cellNumber(file);
  const detail = { file, line, cell, result: "" };
  const ev = new CustomEvent(SOURCE_EVENT, { bubbles: true, cancelable: true, composed: true, detail });
  if (!host.dispatchEvent(ev)) return { text: detail.result || `went to ${file}:${line}`, copy: "" };
  if (cell === null) return { text: "open it in your editor: the path is in the panel, selected", copy: `${file}:${line}` };
  const found = findCell(host.ownerDocument || document, cell);
  if (found === null) return { text: `${file} is not on this page`, copy: "" };
  found.scrollIntoView({ block: "center" });
  found.style.outline = "2px solid #f5a000";
  setTimeout(() => { found.style.outline = ""; }, FLASH_MS);
  return { text: `scrolled to ${file} (line ${line})`, copy: "" };
}
