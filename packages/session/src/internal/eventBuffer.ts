/**
 * The log's in-memory events: an append-only array shared by the log's successive states, each holding the array
 * and its own length (ADR 0030). Appending to the newest state pushes onto the shared array (amortised O(1), one
 * slot an event); appending to an older state — a batch that was refused after its first events were folded —
 * copies its prefix first, so a state never sees another state's events. A `Chunk` built by `Chunk.append` kept
 * four objects an event (≈ 280 bytes) for as long as the log held it.
 */
import type { SessionEvent } from "@harness/domain"

type Event = SessionEvent.SessionEvent

export interface EventBuffer {
  /** Shared: slots at and after `length` may hold another state's events. */
  readonly array: Array<Event>
  readonly length: number
}

export const empty = (): EventBuffer => ({ array: [], length: 0 })

export const fromArray = (array: ReadonlyArray<Event>): EventBuffer => ({ array: array.slice(), length: array.length })

export const append = (buffer: EventBuffer, event: Event): EventBuffer => {
  const array = buffer.array.length === buffer.length ? buffer.array : buffer.array.slice(0, buffer.length)
  array.push(event)
  return { array, length: buffer.length + 1 }
}

/** The events from index `start` (to `end`), as an array of their own. */
export const slice = (buffer: EventBuffer, start: number, end: number = buffer.length): Array<Event> =>
  buffer.array.slice(Math.max(0, start), Math.min(end, buffer.length))

/** Without the first `count` events, in an array of its own (what the shared one held before is released). */
export const drop = (buffer: EventBuffer, count: number): EventBuffer => fromArray(slice(buffer, count))

export const last = (buffer: EventBuffer): Event | undefined =>
  buffer.length === 0 ? undefined : buffer.array[buffer.length - 1]

/** Whether an event from index `start` on satisfies `predicate`. */
export const someFrom = (buffer: EventBuffer, start: number, predicate: (event: Event) => boolean): boolean => {
  for (let i = Math.max(0, start); i < buffer.length; i++) if (predicate(buffer.array[i]!)) return true
  return false
}
