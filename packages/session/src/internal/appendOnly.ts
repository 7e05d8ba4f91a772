/**
 * An append-only sequence as one JavaScript array shared by a value's successive states, each state holding the
 * array and its own length (ADR 0030): the log's in-memory events, the memory store's records. Appending to the
 * newest state pushes onto the shared array (amortised O(1), one slot an item); appending to an older state — a
 * batch that was refused after its first events were folded — copies its prefix first, so a state never sees
 * another state's items. A `Chunk` built by `Chunk.append` kept four objects an item (≈ 280 bytes) for as long as
 * it was held.
 */
export interface AppendOnly<A> {
  /** Shared: slots at and after `length` may hold another state's items. */
  readonly array: Array<A>
  readonly length: number
}

export const empty = <A>(): AppendOnly<A> => ({ array: [], length: 0 })

/** A state over a copy of `array`. */
export const fromArray = <A>(array: ReadonlyArray<A>): AppendOnly<A> => ({ array: array.slice(), length: array.length })

/**
 * The array a state appends to: the shared one when the state is its newest; a copy of the state's prefix when it is
 * not; a new one for an empty state (an empty state may be a module constant: its array must never fill up).
 */
const writable = <A>(buffer: AppendOnly<A>): Array<A> =>
  buffer.length === 0
    ? []
    : buffer.array.length === buffer.length
    ? buffer.array
    : buffer.array.slice(0, buffer.length)

export const append = <A>(buffer: AppendOnly<A>, item: A): AppendOnly<A> => {
  const array = writable(buffer)
  array.push(item)
  return { array, length: buffer.length + 1 }
}

export const appendAll = <A>(buffer: AppendOnly<A>, items: ReadonlyArray<A>): AppendOnly<A> => {
  const array = writable(buffer)
  for (const item of items) array.push(item)
  return { array, length: buffer.length + items.length }
}

/** The items from index `start` (to `end`), as an array of their own. */
export const slice = <A>(buffer: AppendOnly<A>, start: number, end: number = buffer.length): Array<A> =>
  buffer.array.slice(Math.max(0, start), Math.min(end, buffer.length))

/** Without the first `count` items, in an array of its own (what the shared one held before is released). */
export const drop = <A>(buffer: AppendOnly<A>, count: number): AppendOnly<A> => {
  const array = slice(buffer, count)
  return { array, length: array.length }
}

export const last = <A>(buffer: AppendOnly<A>): A | undefined =>
  buffer.length === 0 ? undefined : buffer.array[buffer.length - 1]

/** Whether an item from index `start` on satisfies `predicate`. */
export const someFrom = <A>(buffer: AppendOnly<A>, start: number, predicate: (item: A) => boolean): boolean => {
  for (let i = Math.max(0, start); i < buffer.length; i++) if (predicate(buffer.array[i]!)) return true
  return false
}
