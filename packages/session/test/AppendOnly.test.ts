/**
 * The shared append-only array behind the log's events and the memory store's records (ADR 0030): every state sees
 * exactly its own items, whatever was appended to other states since.
 */
import { assert, describe, it } from "@effect/vitest"
import * as AppendOnly from "../src/internal/appendOnly.js"

const items = <A>(buffer: AppendOnly.AppendOnly<A>) => AppendOnly.slice(buffer, 0)

describe("AppendOnly", () => {
  it("the newest state appends in place; every earlier state keeps its own length", () => {
    const a = AppendOnly.append(AppendOnly.append(AppendOnly.empty<number>(), 1), 2)
    const b = AppendOnly.appendAll(a, [3, 4])
    assert.strictEqual(b.array, a.array)
    assert.deepStrictEqual(items(a), [1, 2])
    assert.deepStrictEqual(items(b), [1, 2, 3, 4])
  })

  it("appending to an older state copies its prefix: the two states never see each other's items", () => {
    const base = AppendOnly.appendAll(AppendOnly.empty<string>(), ["a", "b"])
    const refused = AppendOnly.append(base, "refused")
    const next = AppendOnly.append(base, "c")
    assert.notStrictEqual(next.array, base.array)
    assert.deepStrictEqual(items(next), ["a", "b", "c"])
    assert.deepStrictEqual(items(refused), ["a", "b", "refused"])
    assert.isFalse(AppendOnly.someFrom(next, 0, (s) => s === "refused"))
  })

  it("an empty state shared by many (a module constant) never fills up", () => {
    const shared = AppendOnly.empty<number>()
    const one = AppendOnly.append(shared, 1)
    const two = AppendOnly.appendAll(shared, [2])
    assert.strictEqual(shared.array.length, 0)
    assert.deepStrictEqual([items(one), items(two)], [[1], [2]])
  })

  it("slices, drop and last read only the state's own items; a slice is not changed by later appends", () => {
    const a = AppendOnly.appendAll(AppendOnly.empty<number>(), [1, 2, 3])
    const taken = AppendOnly.slice(a, 1)
    const b = AppendOnly.append(a, 4)
    assert.deepStrictEqual(taken, [2, 3])
    assert.strictEqual(AppendOnly.last(a), 3)
    assert.deepStrictEqual(items(AppendOnly.drop(b, 2)), [3, 4])
    assert.notStrictEqual(AppendOnly.drop(b, 2).array, b.array)
    assert.deepStrictEqual(AppendOnly.slice(b, -5, 99), [1, 2, 3, 4])
  })
})
