/**
 * The chat's decisions about Esc, Ctrl-C and Ctrl-D as pure functions of what the chat knows (the time on `Clock`,
 * the last Ctrl-C, whether a turn runs, what is pending), so they can be checked at every boundary without a
 * terminal.
 */

/** What the chat knows when an interrupt key arrives. */
export interface InterruptState {
  /** When the last Ctrl-C was pressed (`Clock` millis), or `undefined` before the first. Esc never sets it. */
  readonly lastCtrlC: number | undefined
  readonly running: boolean
  /** How many items are pending in the inbox. */
  readonly pending: number
}

/**
 * What an interrupt key does:
 * - `exit`: a double Ctrl-C on an idle prompt with nothing pending leaves the chat;
 * - `discard`: a double Ctrl-C otherwise cancels the running turn (if any) and discards the inbox;
 * - `cancel`: the first Esc or Ctrl-C while a turn runs cancels it keeping the inbox;
 * - `hint`: a first Ctrl-C on an idle prompt says what a second one would do;
 * - `nothing`: Esc on an idle prompt.
 */
export type InterruptAction = "exit" | "discard" | "cancel" | "hint" | "nothing"

/**
 * Decides what an interrupt key does and the `lastCtrlC` to keep. Contract: a press is a double press only when it
 * is a Ctrl-C and the previous Ctrl-C came less than `window` milliseconds before it; Esc neither makes nor
 * completes a double press.
 */
export const interrupt = (
  key: "esc" | "ctrl-c",
  state: InterruptState,
  now: number,
  window: number
): { readonly action: InterruptAction; readonly lastCtrlC: number | undefined } => {
  if (key === "esc") return { action: state.running ? "cancel" : "nothing", lastCtrlC: state.lastCtrlC }
  const double = state.lastCtrlC !== undefined && now - state.lastCtrlC < window
  const action: InterruptAction = double
    ? state.pending === 0 && !state.running ? "exit" : "discard"
    : state.running
    ? "cancel"
    : "hint"
  return { action, lastCtrlC: now }
}

/**
 * Whether Ctrl-D leaves the chat. Contract: only on an empty prompt that is not editing a queued item (an item
 * taken back with Up is not in the inbox while it is edited: leaving would lose it).
 */
export const ctrlDLeaves = (state: { readonly buffer: string; readonly editing: boolean }): boolean =>
  state.buffer === "" && !state.editing

/**
 * How long a prompt the agent claimed must wait before it may reach the model: after a Ctrl-C, until the
 * double-press window closes, so that a second Ctrl-C inside the window can still stop it. Contract: 0 when no
 * Ctrl-C was pressed within the window.
 */
export const holdFor = (lastCtrlC: number | undefined, now: number, window: number): number =>
  lastCtrlC === undefined ? 0 : Math.max(0, lastCtrlC + window - now)

/** The window in words: `a second`, `2.5 seconds`. */
export const windowWords = (window: number): string =>
  window === 1000 ? "a second" : `${Number((window / 1000).toFixed(1))} seconds`
