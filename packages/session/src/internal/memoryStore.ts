/**
 * The memory backend of `SessionStore` and the fault injector. Each session's rows live in a persistent `Chunk`
 * inside one `Ref`, so an append is O(log n) and never copies stored rows.
 */
import type { Ids } from "@harness/domain"
import { Chunk, Effect, HashMap, Option, Ref } from "effect"
import type { Faults, Service, StoredEvent } from "../SessionStore.js"
import { SessionStoreError } from "../SessionStoreError.js"

interface Sessions {
  readonly order: Chunk.Chunk<Ids.SessionId>
  readonly rows: HashMap.HashMap<Ids.SessionId, Chunk.Chunk<StoredEvent>>
}

const notFound = (id: Ids.SessionId) =>
  new SessionStoreError({ reason: "NotFound", message: `session ${JSON.stringify(id)} is not stored` })

/**
 * Checks that `rows` continue a session of `count` stored rows without a gap. Returns the problem, if any.
 */
export const contiguityIssue = (count: number, rows: ReadonlyArray<StoredEvent>): string | undefined => {
  for (let i = 0; i < rows.length; i++) {
    const expected = count + i
    if (rows[i]!.seq !== expected) {
      return `row ${i} of the append has seq ${
        rows[i]!.seq
      } but the session needs seq ${expected} (it stores ${count} rows)`
    }
  }
  return undefined
}

export const makeMemory: Effect.Effect<Service> = Effect.map(
  Ref.make<Sessions>({ order: Chunk.empty(), rows: HashMap.empty() }),
  (ref): Service => ({
    create: (id) =>
      Ref.modify(
        ref,
        (sessions): readonly [Effect.Effect<void, SessionStoreError>, Sessions] =>
          HashMap.has(sessions.rows, id)
            ? [
              Effect.fail(
                new SessionStoreError({
                  reason: "AlreadyExists",
                  message: `session ${JSON.stringify(id)} already exists`
                })
              ),
              sessions
            ]
            : [Effect.void, {
              order: Chunk.append(sessions.order, id),
              rows: HashMap.set(sessions.rows, id, Chunk.empty())
            }]
      ).pipe(
        Effect.flatten
      ),
    append: (id, rows) =>
      Ref.modify(ref, (sessions): readonly [Effect.Effect<void, SessionStoreError>, Sessions] => {
        const stored = HashMap.get(sessions.rows, id)
        if (Option.isNone(stored)) return [Effect.fail(notFound(id)), sessions]
        const issue = contiguityIssue(stored.value.length, rows)
        if (issue !== undefined) {
          return [Effect.fail(new SessionStoreError({ reason: "Conflict", message: issue })), sessions]
        }
        if (rows.length === 0) return [Effect.void, sessions]
        // Copy the rows: the caller keeps its objects, the store keeps its own.
        const copies = Chunk.fromIterable(
          rows.map(({ json, seq, time, type }): StoredEvent => ({ seq, type, time, json }))
        )
        return [Effect.void, {
          ...sessions,
          rows: HashMap.set(sessions.rows, id, Chunk.appendAll(stored.value, copies))
        }]
      }).pipe(Effect.flatten),
    load: (id) =>
      Effect.flatMap(Ref.get(ref), (sessions) =>
        Option.match(HashMap.get(sessions.rows, id), {
          onNone: () => Effect.fail(notFound(id)),
          onSome: (rows) => Effect.succeed(Chunk.toReadonlyArray(rows))
        })),
    list: Effect.map(Ref.get(ref), (sessions) => Chunk.toReadonlyArray(sessions.order))
  })
)

export const withFaults = (store: Service): Effect.Effect<readonly [Service, Faults]> =>
  Effect.map(Ref.make(Option.none<(row: StoredEvent) => boolean>()), (predicate) => {
    const faults: Faults = {
      failWhen: (when) => Ref.set(predicate, Option.some(when)),
      clear: Ref.set(predicate, Option.none())
    }
    const wrapped: Service = {
      ...store,
      append: (id, rows) =>
        Effect.flatMap(Ref.get(predicate), (when) =>
          Option.isSome(when) && rows.some(when.value)
            ? Effect.fail(
              new SessionStoreError({
                reason: "Injected",
                message: `injected failure of an append of ${rows.length} row(s) to session ${JSON.stringify(id)}`
              })
            )
            : store.append(id, rows))
    }
    return [wrapped, faults] as const
  })
