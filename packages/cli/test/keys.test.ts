/**
 * The chat's interrupt keys as decisions over virtual time (`internal/keys.ts`): what Esc, Ctrl-C and Ctrl-D do at
 * each boundary of the double-press window, and how long a claimed prompt waits after a Ctrl-C (#37.2, #46).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Keys from "../src/internal/keys.js"

const window = 1000

/** Presses `keys` at the given times from an idle, empty chat; returns each action. */
const presses = (
  keys: ReadonlyArray<readonly ["esc" | "ctrl-c", number]>,
  state: { readonly running: boolean; readonly pending: number } = { running: false, pending: 0 }
) => {
  let lastCtrlC: number | undefined = undefined
  return keys.map(([key, at]) => {
    const decided = Keys.interrupt(key, { lastCtrlC, running: state.running, pending: state.pending }, at, window)
    lastCtrlC = decided.lastCtrlC
    return decided.action
  })
}

describe("chat keys", () => {
  it("two Ctrl-C within the window: exit when idle with nothing pending, discard otherwise", () => {
    assert.deepStrictEqual(presses([["ctrl-c", 5000], ["ctrl-c", 5999]]), ["hint", "exit"])
    assert.deepStrictEqual(presses([["ctrl-c", 5000], ["ctrl-c", 5999]], { running: true, pending: 0 }), [
      "cancel",
      "discard"
    ])
    assert.deepStrictEqual(presses([["ctrl-c", 5000], ["ctrl-c", 5999]], { running: false, pending: 2 }), [
      "hint",
      "discard"
    ])
  })

  it("a second Ctrl-C at or after the window's end is a first press again", () => {
    assert.deepStrictEqual(presses([["ctrl-c", 5000], ["ctrl-c", 6000]]), ["hint", "hint"])
    assert.deepStrictEqual(presses([["ctrl-c", 5000], ["ctrl-c", 6000]], { running: true, pending: 1 }), [
      "cancel",
      "cancel"
    ])
  })

  it("Esc then Ctrl-C within the window is not a double press (#46): Esc records no Ctrl-C", () => {
    assert.deepStrictEqual(presses([["esc", 5000], ["ctrl-c", 5100]]), ["nothing", "hint"])
    assert.deepStrictEqual(presses([["esc", 5000], ["ctrl-c", 5100]], { running: true, pending: 1 }), [
      "cancel",
      "cancel"
    ])
    // Nor does Esc between two Ctrl-C break a double press.
    assert.deepStrictEqual(
      presses([["ctrl-c", 5000], ["esc", 5050], ["ctrl-c", 5100]], { running: true, pending: 1 }),
      [
        "cancel",
        "cancel",
        "discard"
      ]
    )
  })

  it("the first Ctrl-C at time 0 still counts (no sentinel time)", () => {
    assert.deepStrictEqual(presses([["ctrl-c", 0], ["ctrl-c", 10]]), ["hint", "exit"])
  })

  it("Ctrl-D leaves only from an empty prompt that is not editing a queued item (#46)", () => {
    assert.isTrue(Keys.ctrlDLeaves({ buffer: "", editing: false }))
    assert.isFalse(Keys.ctrlDLeaves({ buffer: "draft", editing: false }))
    assert.isFalse(Keys.ctrlDLeaves({ buffer: "", editing: true }))
    assert.isFalse(Keys.ctrlDLeaves({ buffer: "queued item", editing: true }))
  })

  it("after a Ctrl-C, a claimed prompt waits until the window closes; without one it does not wait (#37.2)", () => {
    assert.strictEqual(Keys.holdFor(undefined, 5000, window), 0)
    assert.strictEqual(Keys.holdFor(5000, 5000, window), 1000)
    assert.strictEqual(Keys.holdFor(5000, 5999, window), 1)
    assert.strictEqual(Keys.holdFor(5000, 6000, window), 0)
    assert.strictEqual(Keys.holdFor(5000, 9000, window), 0)
  })

  it("the window in words", () => {
    assert.strictEqual(Keys.windowWords(1000), "a second")
    assert.strictEqual(Keys.windowWords(2500), "2.5 seconds")
  })
})
