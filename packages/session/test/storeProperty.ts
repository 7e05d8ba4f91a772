/**
 * The model-based property of `SessionStore` backends: random sequences of operations on two sessions, each
 * checked against a plain in-test model of what the store must hold. Every backend registers it from its own test
 * file, next to the conformance suite:
 *
 * ```ts
 * import { storeProperty } from "@harness/session/test/storeProperty"
 * storeProperty("sqlite", Effect.map(tempDir, (dir) => SqliteStore.layer({ filename: path.join(dir, "s.db") })))
 * ```
 *
 * `place` makes, in the run's scope, a place for sessions (a temporary directory, a fresh database) and returns a
 * layer that opens a store on it; each build of that layer is a new store instance on the same data (`reopen`).
 * A backend with nothing to reopen (the memory store) returns a layer that gives the same instance each time.
 *
 * Operations: `create` (with or without a first commit), `append` (events and inbox records, `sync` true or
 * false, under the current lease, no lease, or a fenced one; some with events that do not continue the stored
 * seqs), `truncate`, `saveSnapshot` (some at a position the session does not store), `load` with `after`,
 * `lease` (a second lease takes the session over), `release` (of the current or of a fenced lease), `reopen`
 * (the leases released, the store closed and a new instance opened on the same place).
 *
 * Invariants, checked after every operation:
 * 1. an operation succeeds, or fails with the reason the model predicts: `NotFound` (no such session),
 *    `AlreadyExists`, `Busy` (a write that does not carry the session's current lease, when it is leased or the
 *    lease it carries was fenced), `Conflict` (events that do not continue the stored seqs, a snapshot position
 *    the session does not store); a refused operation stores nothing;
 * 2. `load` gives exactly the model's records, as their `JSON.stringify`, at positions 0, 1, 2, … (inbox records
 *    of a commit first); `load` with `after` gives those past `after`;
 * 3. `list` gives every session in creation order with its header and the model's `events`, `turns`,
 *    `lastActivity` (the last record's time, else `createdAt`) and `firstPrompt`; `bytes` grows with a stored
 *    record, shrinks with a dropped one and is otherwise unchanged (reads, refusals, reopen);
 * 4. `loadSnapshot` gives the model's snapshot (dropped by a truncate that drops its record); a head loaded
 *    earlier reads its own body while the store still holds that save, and never another save's body (each head
 *    names its body, as the session's heads do);
 * 5. `hasMessage` answers from the stored records (`inbox/accepted`, `user/message`, `steering/message` ids);
 * 6. the lease tokens a store instance gives for a session grow.
 *
 * @since 0.0.0
 */
import { assert, describe, it } from "@effect/vitest"
import { type Ids, MessageSource, type SessionEvent, Store } from "@harness/domain"
import { ev, messageId as mid, sessionId as sid, stamp } from "@harness/testkit/Events"
import { Context, Effect, Either, ExecutionStrategy, Exit, FastCheck as fc, Layer, Option, Scope } from "effect"
import {
  type Commit,
  type Lease,
  type Service,
  SessionStore,
  type SessionStoreError,
  type SnapshotHead
} from "../src/SessionStore.js"
import { awkward, loadAll, snapshotOf } from "./conformance.js"

/** The two sessions of a run: a plain id and one a careless backend would mangle. */
const ids: ReadonlyArray<Ids.SessionId> = [sid("alpha"), sid("sl/ash ../é \u2028")]

/** Message ids the records draw from (and `hasMessage` asks about). */
const messageIds: ReadonlyArray<string> = ["m0", "m1", "m2", "nul\u0000id", "🚀"]

/** Texts the records draw from: a long one (a preview cuts it), an empty one, awkward characters. */
const textPool: ReadonlyArray<string> = ["hello", "", awkward, "🚀".repeat(120) + "x".repeat(100), "line\nbreak"]

/** How a write is made: under the session's current lease, with none, or under a fenced (released or taken-over) one. */
type Access = "proper" | "none" | "stale"

interface EventSpec {
  readonly kind: "prompt" | "context" | "turn" | "steering"
  readonly text: number
  readonly id: number | undefined
}

interface InboxSpec {
  readonly kind: "accepted" | "settled"
  readonly id: number
  readonly text: number
  readonly placement: Store.InboxRecordPlacement
  readonly fate: Store.InboxFate
}

/** One operation of a run (`s`: the index of its session in {@link ids}). */
type Op =
  | {
    readonly _tag: "create"
    readonly s: number
    readonly createdAt: number
    readonly first: boolean
    readonly events: ReadonlyArray<EventSpec>
    readonly inbox: ReadonlyArray<InboxSpec>
  }
  | {
    readonly _tag: "append"
    readonly s: number
    readonly events: ReadonlyArray<EventSpec>
    readonly inbox: ReadonlyArray<InboxSpec>
    readonly time: number
    readonly sync: boolean
    readonly access: Access
    /** Added to the first event's seq: a non-zero shift is a commit that does not continue the stored events. */
    readonly shift: number
  }
  | { readonly _tag: "truncate"; readonly s: number; readonly at: number; readonly access: Access }
  | {
    readonly _tag: "snapshot"
    readonly s: number
    readonly at: number
    readonly beyond: boolean
    readonly head: number
    readonly body: number
    readonly access: Access
  }
  | { readonly _tag: "load"; readonly s: number; readonly after: number }
  | { readonly _tag: "lease"; readonly s: number }
  | { readonly _tag: "release"; readonly s: number; readonly which: "current" | "stale" }
  | { readonly _tag: "reopen" }

/** A session of an operation: mostly the first (which every run creates first), so that sessions grow. */
const session = fc.constantFrom(0, 0, 0, 1)
const access: fc.Arbitrary<Access> = fc.constantFrom<Access>("proper", "proper", "none", "stale")
const eventSpec: fc.Arbitrary<EventSpec> = fc.record({
  kind: fc.constantFrom("prompt", "prompt", "context", "turn", "steering"),
  text: fc.nat({ max: textPool.length - 1 }),
  id: fc.option(fc.nat({ max: messageIds.length - 1 }), { nil: undefined })
})
const inboxSpec: fc.Arbitrary<InboxSpec> = fc.record({
  kind: fc.constantFrom("accepted", "accepted", "settled"),
  id: fc.nat({ max: messageIds.length - 1 }),
  text: fc.nat({ max: textPool.length - 1 }),
  placement: fc.constantFrom<Store.InboxRecordPlacement>("queued", "steering", "context"),
  fate: fc.constantFrom<Store.InboxFate>("claimed", "drained", "logged", "discarded", "withdrawn")
})

const create = (s: fc.Arbitrary<number>): fc.Arbitrary<Op> =>
  fc.record({
    _tag: fc.constant("create" as const),
    s,
    createdAt: fc.integer({ min: 1_000, max: 1_400 }),
    first: fc.boolean(),
    events: fc.array(eventSpec, { maxLength: 3 }),
    inbox: fc.array(inboxSpec, { maxLength: 2 })
  })

/** One operation; appends most often, so sessions grow. */
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 1, arbitrary: create(session) },
  {
    weight: 8,
    arbitrary: fc.record({
      _tag: fc.constant("append" as const),
      s: session,
      events: fc.array(eventSpec, { maxLength: 3 }),
      inbox: fc.array(inboxSpec, { maxLength: 3 }),
      time: fc.integer({ min: 1_000, max: 1_400 }),
      sync: fc.boolean(),
      access,
      shift: fc.oneof({ weight: 12, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(-1, 1, 2) })
    })
  },
  {
    weight: 3,
    arbitrary: fc.record({
      _tag: fc.constant("truncate" as const),
      s: session,
      // a fraction of the records (past 1: past the end); integers, since fast-check's doubles crowd near 0
      at: fc.integer({ min: 0, max: 120 }).map((n) => n / 100),
      access
    })
  },
  {
    weight: 2,
    arbitrary: fc.record({
      _tag: fc.constant("snapshot" as const),
      s: session,
      at: fc.integer({ min: 0, max: 99 }).map((n) => n / 100),
      beyond: fc.constantFrom(false, false, false, true),
      head: fc.nat({ max: textPool.length - 1 }),
      body: fc.nat({ max: textPool.length - 1 }),
      access
    })
  },
  {
    weight: 2,
    arbitrary: fc.record({ _tag: fc.constant("load" as const), s: session, after: fc.integer({ min: -2, max: 24 }) })
  },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("lease" as const), s: session }) },
  {
    weight: 2,
    arbitrary: fc.record({
      _tag: fc.constant("release" as const),
      s: session,
      which: fc.constantFrom<"current" | "stale">("current", "current", "stale")
    })
  },
  { weight: 1, arbitrary: fc.constant({ _tag: "reopen" as const }) }
)

/** The model of one session. */
interface Model {
  readonly header: Store.SessionHeader
  records: Array<Store.StoreRecord>
  /** The snapshot the store holds, with the number of its save (so a head loaded earlier knows whether it is current). */
  snapshot:
    | { readonly saved: { seq: number; position: number; head: string; body: string }; readonly save: number }
    | undefined
  /** The current lease (the session is leased), if any. */
  current: Lease | undefined
  /** Leases fenced since (released or taken over), with whether their store instance is still open. */
  stale: Array<{ readonly lease: Lease; open: boolean }>
  /** The greatest lease token the open store instance gave. */
  token: number
  /** `bytes` of the last `list`. */
  bytes: number | undefined
  /** Snapshot heads loaded earlier (from the open store instance), with the save they were loaded at. */
  heads: Array<{ readonly head: SnapshotHead; readonly save: number; readonly body: string }>
}

const eventCount = (records: ReadonlyArray<Store.StoreRecord>) =>
  records.reduce((n, r) => Store.isInboxRecord(r) ? n : n + 1, 0)

const eventInput = (spec: EventSpec, turn: number): SessionEvent.SessionEventInput => {
  const text = textPool[spec.text]!
  const id = spec.id === undefined ? undefined : messageIds[spec.id]
  switch (spec.kind) {
    case "prompt":
      return ev.user(text, MessageSource.user, id)
    case "context":
      return ev.user(text, MessageSource.plugin("ctx"), id)
    case "turn":
      return ev.turnStart(turn)
    case "steering":
      return ev.steering(turn, text, id ?? "steer")
  }
}

const inboxRecord = (spec: InboxSpec, time: number): Store.InboxRecord =>
  spec.kind === "accepted"
    ? {
      type: "inbox/accepted",
      time,
      message: {
        id: mid(messageIds[spec.id]!),
        content: [{ type: "text", text: textPool[spec.text]! }],
        source: MessageSource.user
      },
      placement: spec.placement,
      wakeup: spec.placement !== "context"
    }
    : { type: "inbox/settled", time, id: mid(messageIds[spec.id]!), fate: spec.fate }

/** The commit of an append or create spec, its events numbered from `from`. */
const commitOf = (
  events: ReadonlyArray<EventSpec>,
  inbox: ReadonlyArray<InboxSpec>,
  from: number,
  time: number
): Commit => ({
  events: stamp(events.map((e, i) => eventInput(e, from + i + 1)), { start: from, time }),
  inbox: inbox.map((spec, i) => inboxRecord(spec, time + i))
})

/** A summary as the model predicts it (`bytes` apart). */
const expectedSummary = (m: Model) => {
  const previews = m.records.flatMap((r) => {
    const preview = Store.promptPreviewOf(r)
    return preview === undefined ? [] : [preview]
  })
  return {
    header: m.header,
    events: eventCount(m.records),
    turns: m.records.filter((r) => r.type === "turn/start").length,
    lastActivity: m.records.at(-1)?.time ?? m.header.createdAt,
    ...(previews.length === 0 ? {} : { firstPrompt: previews[0] })
  }
}

const summaryView = (s: Store.SessionSummary) => ({
  header: s.header,
  events: s.events,
  turns: s.turns,
  lastActivity: s.lastActivity,
  ...(s.firstPrompt === undefined ? {} : { firstPrompt: s.firstPrompt })
})

const storedOf = (records: ReadonlyArray<Store.StoreRecord>, after = -1) =>
  records.flatMap((r, position) => position > after ? [{ position, text: JSON.stringify(r) }] : [])

/** How `bytes` must have moved since the last check. */
type Growth = "same" | "more" | "less" | "any"

/** Options of the property. */
export interface StorePropertyOptions {
  /** fast-check runs (default 15). */
  readonly numRuns?: number
  /** The most operations in a run (default 30). */
  readonly maxOps?: number
  /** vitest's timeout of the whole property (default 120 s). */
  readonly timeout?: number
}

/**
 * Registers the property for one backend.
 *
 * @since 0.0.0
 */
export const storeProperty = <E>(
  name: string,
  place: Effect.Effect<Layer.Layer<SessionStore, E>, E, Scope.Scope>,
  options: StorePropertyOptions = {}
): void => {
  describe(`SessionStore property: ${name}`, () => {
    it.live.prop(
      "random creates, appends (events and inbox records), truncates, snapshots, loads, leases and reopens agree with the model",
      [create(fc.constant(0)), fc.array(op, { minLength: 5, maxLength: options.maxOps ?? 30, size: "max" })],
      ([first, ops]) => run(place, [first, ...ops]),
      { timeout: options.timeout ?? 120_000, fastCheck: { numRuns: options.numRuns ?? 15 } }
    )
  })
}

/** Plays `ops` against a store on a fresh place, checking the invariants after each. */
const run = <E>(place: Effect.Effect<Layer.Layer<SessionStore, E>, E, Scope.Scope>, ops: ReadonlyArray<Op>) =>
  Effect.gen(function*() {
    const layer = yield* place
    const outer = yield* Effect.scope
    const open = Effect.gen(function*() {
      const scope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
      const context = yield* Layer.buildWithScope(layer, scope)
      return { scope, store: Context.get(context, SessionStore) }
    })
    let instance = yield* open
    const models: Array<Model | undefined> = ids.map(() => undefined)
    /** The sessions' indices in creation order. */
    const order: Array<number> = []
    let saves = 0

    /** The outcome of an operation: its failure's reason, or "ok". */
    const outcome = <A>(effect: Effect.Effect<A, SessionStoreError>) =>
      Effect.map(Effect.either(effect), (r) => Either.isRight(r) ? "ok" as const : r.left.reason)
    const leaseOf = (m: Model | undefined, how: Access): Lease | undefined =>
      m === undefined ? undefined : how === "proper" ? m.current : how === "stale" ? m.stale.at(-1)?.lease : undefined
    /** The reason a write under `lease` must fail with, if it must. */
    const fence = (m: Model | undefined, lease: Lease | undefined) =>
      m === undefined ? "NotFound" : lease !== m.current ? "Busy" : undefined

    const check = (store: Service, step: string, growth: ReadonlyArray<Growth>) =>
      Effect.gen(function*() {
        const listed = yield* store.list
        assert.deepStrictEqual(
          listed.map(summaryView),
          order.map((i) => expectedSummary(models[i]!)),
          `${step}: list`
        )
        for (const [k, i] of order.entries()) {
          const m = models[i]!
          const bytes = listed[k]!.bytes
          const was = m.bytes
          const g = growth[i] ?? "same"
          if (was !== undefined && g !== "any") {
            if (g === "same") assert.strictEqual(bytes, was, `${step}: bytes of ${ids[i]} unchanged`)
            if (g === "more") assert.isAbove(bytes, was, `${step}: bytes of ${ids[i]} grew`)
            if (g === "less") assert.isBelow(bytes, was, `${step}: bytes of ${ids[i]} shrank`)
          }
          m.bytes = bytes
          const id = ids[i]!
          assert.deepStrictEqual(yield* store.header(id), m.header, `${step}: header`)
          assert.deepStrictEqual(yield* loadAll(store, id), storedOf(m.records), `${step}: load ${id}`)
          assert.deepStrictEqual(
            yield* snapshotOf(store, id),
            Option.fromNullable(m.snapshot?.saved),
            `${step}: snapshot of ${id}`
          )
          for (const h of m.heads) {
            const body = yield* h.head.body
            if (m.snapshot?.save === h.save) {
              assert.deepStrictEqual(body, Option.some(h.body), `${step}: a current head reads its body`)
            } else if (Option.isSome(body)) {
              assert.strictEqual(body.value, h.body, `${step}: a replaced head never reads another body`)
            }
          }
          for (const messageId of messageIds) {
            assert.strictEqual(
              yield* store.hasMessage(id, mid(messageId)),
              m.records.some((r) => Store.messageIdOf(r) === messageId),
              `${step}: hasMessage(${JSON.stringify(messageId)}) of ${id}`
            )
          }
        }
        for (const [i, m] of models.entries()) {
          if (m === undefined) {
            assert.strictEqual(yield* outcome(store.header(ids[i]!)), "NotFound", `${step}: ${ids[i]} not created`)
          }
        }
      })

    for (const [index, o] of ops.entries()) {
      const store = instance.store
      const step = `op ${index} ${JSON.stringify(o)}`
      const growth: Array<Growth> = []
      switch (o._tag) {
        case "create": {
          const m = models[o.s]
          const header: Store.SessionHeader = { id: ids[o.s]!, version: 1, createdAt: o.createdAt }
          const commit = o.first ? commitOf(o.events, o.inbox, 0, o.createdAt + 1) : undefined
          const got = yield* outcome(store.create(header, commit))
          assert.strictEqual(got, m === undefined ? "ok" : "AlreadyExists", step)
          if (m === undefined) {
            models[o.s] = {
              header,
              records: commit === undefined ? [] : [...commit.inbox, ...commit.events],
              snapshot: undefined,
              current: undefined,
              stale: [],
              token: -Infinity,
              bytes: undefined,
              heads: []
            }
            order.push(o.s)
          }
          break
        }
        case "append": {
          const m = models[o.s]
          const events = m === undefined ? 0 : eventCount(m.records)
          const shifted = o.shift !== 0 && (events + o.shift >= 0)
          // a refused contiguity or an empty commit is tried under the proper lease (the fence is tested apart)
          const empty = o.events.length === 0 && o.inbox.length === 0
          const how: Access = shifted || empty ? "proper" : o.access
          const specs = shifted && o.events.length === 0
            ? [{ kind: "prompt", text: 0, id: undefined } as const]
            : o.events
          const commit = commitOf(specs, o.inbox, shifted ? events + o.shift : events, o.time)
          const lease = leaseOf(m, how)
          const expected = fence(m, lease) ?? (shifted ? "Conflict" : "ok")
          const got = yield* outcome(store.append(ids[o.s]!, commit, { sync: o.sync, lease }))
          assert.strictEqual(got, expected, step)
          if (expected === "ok" && m !== undefined) {
            m.records.push(...commit.inbox, ...commit.events)
            growth[o.s] = empty ? "same" : "more"
          }
          break
        }
        case "truncate": {
          const m = models[o.s]
          const length = m?.records.length ?? 0
          const position = Math.floor(o.at * (length + 1))
          const lease = leaseOf(m, o.access)
          const expected = fence(m, lease) ?? "ok"
          const got = yield* outcome(store.truncate(ids[o.s]!, position, { lease }))
          assert.strictEqual(got, expected, step)
          if (expected === "ok" && m !== undefined) {
            growth[o.s] = position < m.records.length ? "less" : "same"
            m.records = m.records.slice(0, position)
            if (m.snapshot !== undefined && m.snapshot.saved.position >= position) m.snapshot = undefined
          }
          break
        }
        case "snapshot": {
          const m = models[o.s]
          const length = m?.records.length ?? 0
          const beyond = o.beyond || length === 0
          const position = beyond ? length + Math.floor(o.at * 3) : Math.floor(o.at * length)
          const lease = leaseOf(m, beyond ? "proper" : o.access)
          const saved = {
            // the last event it covers (0 when it covers inbox records only: a seq is never negative)
            seq: Math.max(0, m === undefined ? 0 : eventCount(m.records.slice(0, position + 1)) - 1),
            position,
            // The head names its body, as the session's heads do: a store may tell snapshots apart by their heads.
            head: JSON.stringify({ head: textPool[o.head], body: o.body }),
            body: textPool[o.body]!
          }
          const expected = fence(m, lease) ?? (beyond ? "Conflict" : "ok")
          const got = yield* outcome(store.saveSnapshot(ids[o.s]!, saved, { lease }))
          assert.strictEqual(got, expected, step)
          if (m !== undefined) {
            growth[o.s] = "any"
            if (expected === "ok") m.snapshot = { saved, save: ++saves }
            // keep a head of the current snapshot, to read its body after later operations
            const head = yield* store.loadSnapshot(ids[o.s]!)
            if (Option.isSome(head) && m.snapshot !== undefined) {
              m.heads.push({ head: head.value, save: m.snapshot.save, body: m.snapshot.saved.body })
            }
          }
          break
        }
        case "load": {
          const m = models[o.s]
          if (m === undefined) {
            assert.strictEqual(yield* outcome(loadAll(store, ids[o.s]!, o.after)), "NotFound", step)
          } else {
            assert.deepStrictEqual(yield* loadAll(store, ids[o.s]!, o.after), storedOf(m.records, o.after), step)
          }
          break
        }
        case "lease": {
          const m = models[o.s]
          const got = yield* Effect.either(store.lease(ids[o.s]!))
          if (m === undefined) {
            assert.isTrue(Either.isLeft(got) && got.left.reason === "NotFound", step)
          } else {
            assert.isTrue(Either.isRight(got), `${step}: ${Either.isLeft(got) ? got.left.message : ""}`)
            const lease = Either.getOrThrow(got)
            assert.isAbove(lease.token, m.token, `${step}: tokens grow`)
            m.token = lease.token
            if (m.current !== undefined) m.stale.push({ lease: m.current, open: true })
            m.current = lease
          }
          break
        }
        case "release": {
          const m = models[o.s]
          if (m === undefined) break
          if (o.which === "current" && m.current !== undefined) {
            yield* m.current.release
            m.stale.push({ lease: m.current, open: true })
            m.current = undefined
          } else if (o.which === "stale") {
            // releasing a fenced lease leaves the current one alone
            const last = m.stale.at(-1)
            if (last?.open === true) yield* last.lease.release
          }
          break
        }
        case "reopen": {
          for (const m of models) {
            if (m === undefined) continue
            if (m.current !== undefined) {
              yield* m.current.release
              m.stale.push({ lease: m.current, open: true })
              m.current = undefined
            }
            for (const s of m.stale) s.open = false
            m.heads = []
            // Tokens are compared within one store instance (the JSONL store counts them per instance).
            m.token = -Infinity
          }
          yield* Scope.close(instance.scope, Exit.void)
          instance = yield* open
          break
        }
      }
      yield* check(instance.store, step, growth)
    }
  }).pipe(Effect.scoped)
