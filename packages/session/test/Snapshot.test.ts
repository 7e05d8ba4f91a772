/**
 * Log snapshots (ADR 0022): a session opened from its snapshot is the same log as a full replay (state, history,
 * pending inbox and approvals, cursors, events, the next request's header), a snapshot that does not decode or
 * disagrees with the log is ignored, and the events after the snapshot are replayed and repaired (R106).
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, MessageSource, type SessionEvent } from "@harness/domain"
import { block, ev, goodLogs, promptTurn, sessionId, stamp, toolTurn } from "@harness/testkit/Events"
import { Chunk, Effect, FastCheck as fc, Option, Ref, Stream } from "effect"
import * as History from "../src/History.js"
import * as history from "../src/internal/history.js"
import * as snapshot from "../src/internal/snapshot.js"
import * as snapshotBody from "../src/internal/snapshotBody.js"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"
import { assertConsistent } from "./fixtures.js"
import { accepted, settled, turnKinds } from "./historyResume.js"

const sid = sessionId("snap-1")

/** A store that counts where loads start, so a test can tell an open from a snapshot from a full replay. */
const observed = (store: SessionStore.Service) =>
  Effect.map(Ref.make<ReadonlyArray<number>>([]), (starts) => ({
    starts: Ref.get(starts),
    store: {
      ...store,
      load: (id: Ids.SessionId, options?: SessionStore.LoadOptions) =>
        Stream.unwrap(Effect.as(Ref.update(starts, (s) => [...s, options?.after ?? -1]), store.load(id, options)))
    } satisfies SessionStore.Service
  }))

/** The same store with snapshots hidden: `open` replays the whole log. */
const withoutSnapshots = (store: SessionStore.Service): SessionStore.Service => ({
  ...store,
  loadSnapshot: () => Effect.succeed(Option.none()),
  saveSnapshot: () => Effect.void
})

/** Everything a caller can see of an opened log (the next request is built from `history` and `state.header`). */
const view = (log: SessionLog.Service) =>
  Effect.gen(function*() {
    return {
      events: yield* log.events,
      state: yield* log.state,
      messages: History.messages(yield* log.history),
      pending: log.pendingInbox,
      approvals: yield* log.pendingApprovals,
      cursors: yield* log.cursors
    }
  })

const openWith = (store: SessionStore.Service, options?: SessionLog.OpenOptions) =>
  SessionLog.open(sid, options).pipe(Effect.provideService(SessionStore.SessionStore, store))

/** One step of a random session: a whole turn, idle context, inbox records, or a turn cut short by a crash. */
type Step =
  | { readonly _tag: "turn"; readonly kind: number; readonly acceptFirst: boolean }
  | { readonly _tag: "idle" }
  | { readonly _tag: "inbox"; readonly settle: boolean }
  | { readonly _tag: "approval"; readonly answer: boolean }
  | { readonly _tag: "crash"; readonly kind: number; readonly cut: number }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ _tag: fc.constant("turn" as const), kind: fc.nat(5), acceptFirst: fc.boolean() })
  },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("idle" as const) }) },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("inbox" as const), settle: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("approval" as const), answer: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("crash" as const), kind: fc.nat(5), cut: fc.nat(20) }) }
)

/**
 * A log over the memory store posing as durable and write-behind, as SQLite, JSONL and PostgreSQL are (so the writer
 * snapshots and drops covered events from memory), with the store's loads observed.
 */
const durableLog = (every: number) =>
  Effect.gen(function*() {
    const memory = yield* SessionStore.makeMemory
    const { starts, store } = yield* observed(memory)
    const durable: SessionStore.Service = { ...store, volatile: false, commitMode: "write-behind" }
    const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: every } }).pipe(
      Effect.provideService(SessionStore.SessionStore, durable)
    )
    return { memory, starts, durable, log }
  })

/** Builds a session on `store` by the steps; a crash step ends it inside a turn. */
const build = (store: SessionStore.Service, steps: ReadonlyArray<Step>, every: number) =>
  Effect.gen(function*() {
    const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: every } }).pipe(
      Effect.provideService(SessionStore.SessionStore, store)
    )
    let turn = 0
    let extra = 0
    for (const step of steps) {
      switch (step._tag) {
        case "turn": {
          turn++
          // The prompt of a turn accepted into the inbox first, then logged by the turn (a derived claim, ADR 0017).
          if (step.acceptFirst) yield* log.recordInbox([accepted(`prompt-${turn}`)])
          yield* log.appendAll(turnKinds[step.kind]!(turn))
          break
        }
        case "idle":
          yield* log.append(ev.user(`idle ${extra++}`, MessageSource.plugin("p")))
          break
        case "inbox": {
          const id = `held-${extra++}`
          yield* log.recordInbox([accepted(id)])
          if (step.settle) yield* log.recordInbox([settled(id)])
          break
        }
        case "approval": {
          // A call of the last turn asked about (pending across later turns and snapshots), maybe answered.
          const callId = Ids.ToolCallId.make(`ask-${extra++}`)
          yield* log.recordInbox([{
            type: "approval/requested",
            callId,
            turn: Math.max(turn, 1),
            step: 1,
            name: "sh",
            arguments: "{}"
          }])
          if (step.answer) {
            yield* log.recordInbox([{ type: "approval/answered", callId, decision: "deny", by: "person" }])
          }
          break
        }
        case "crash": {
          turn++
          const inputs = turnKinds[step.kind]!(turn)
          // At least the turn/start, never the turn/end: the log ends inside the turn.
          const cut = 2 + (step.cut % (inputs.length - 2))
          for (const input of inputs.slice(0, cut)) yield* log.append(input)
          yield* log.flush
          return
        }
      }
    }
    yield* log.flush
  })

/** Writes the store directly as the session's writer: takes its lease over (ADR 0044), writes, releases it. */
const asWriter = <A, E>(
  store: SessionStore.Service,
  write: (lease: SessionStore.Lease) => Effect.Effect<A, E>
): Effect.Effect<A, E | SessionStore.SessionStoreError> =>
  Effect.acquireUseRelease(store.lease(sid), write, (lease) => lease.release)

describe("SessionLog snapshots (ADR 0022)", () => {
  it.effect(
    "property: opened from its snapshot, a random session is the log a full replay gives",
    () =>
      Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            fc.array(stepArb, { minLength: 1, maxLength: 14 }),
            fc.integer({ min: 1, max: 40 }),
            (steps, every) =>
              Effect.runPromise(Effect.gen(function*() {
                const memory = yield* SessionStore.makeMemory
                yield* build(memory, steps, every)
                const saved = yield* memory.loadSnapshot(sid)
                const { starts, store } = yield* observed(memory)
                // From the snapshot first (it repairs a crashed turn durably), then a full replay of what it left.
                const fromSnapshot = yield* view(yield* openWith(store, { commit: { snapshotEvery: 0 } }))
                if (Option.isSome(saved)) {
                  assert.deepStrictEqual((yield* starts)[0], saved.value.position - 1, "open did not start from it")
                }
                const replayed = yield* view(yield* openWith(withoutSnapshots(memory)))
                assert.deepStrictEqual(fromSnapshot, replayed)
                assert.deepStrictEqual(fromSnapshot.messages, History.deriveMessages(replayed.events))
              }))
          ),
          { numRuns: 60 }
        )
      ),
    { timeout: 120_000 }
  )

  it.effect("the log snapshots at a turn/end once `snapshotEvery` events were committed, and open starts there", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: 10 } }).pipe(
        Effect.provideService(SessionStore.SessionStore, memory)
      )
      yield* log.appendAll(promptTurn(1, "One", "1")) // seqs 0–7: fewer than 10, no snapshot yet
      assert.isTrue(Option.isNone(yield* memory.loadSnapshot(sid)))
      yield* log.appendAll(promptTurn(2, "Two", "2")) // seqs 8–15: the turn/end at 15 is due
      const first = yield* memory.loadSnapshot(sid)
      assert.deepStrictEqual(Option.map(first, (s) => [s.seq, s.position]), Option.some([15, 15]))
      yield* log.recordInbox([accepted("waiting")])
      yield* log.appendAll([...promptTurn(3, "Three", "3"), ev.user("after", MessageSource.plugin("p"))])
      yield* log.flush
      const { starts, store } = yield* observed(memory)
      const reopened = yield* openWith(store)
      assert.deepStrictEqual(yield* starts, [14], "open loads from the snapshot's last record on")
      const events = yield* log.events
      assert.deepStrictEqual(yield* reopened.events, events)
      assert.deepStrictEqual(History.messages(yield* reopened.history), History.messages(yield* log.history))
      assert.deepStrictEqual(reopened.pendingInbox.map((r) => r.message.id), [Ids.AgentMessageId.make("waiting")])
      yield* assertConsistent(reopened)
      // and it continues
      assert.strictEqual((yield* reopened.append(ev.turnStart(4))).seq, events.length)
    }))

  it.effect("a snapshot that does not decode, or whose head disagrees with the log, is ignored: full replay", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: 1 } }).pipe(
        Effect.provideService(SessionStore.SessionStore, memory)
      )
      yield* log.appendAll(promptTurn(1, "One", "1"))
      const good = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      assert.deepStrictEqual([good.seq, good.position], [7, 7])
      const body = Option.getOrThrow(yield* good.body)
      yield* log.appendAll(promptTurn(2, "Two", "2"))
      const expected = yield* view(yield* openWith(withoutSnapshots(memory)))
      const parsed = JSON.parse(good.head) as Record<string, unknown>
      const bad: ReadonlyArray<readonly [string, string]> = [
        ["not a snapshot", "garbage"],
        ["a torn head", good.head.slice(0, 20)],
        ["an unknown version", JSON.stringify({ ...parsed, version: 99 })],
        // the first format: head line and body in one text
        ["a version-1 snapshot", `${JSON.stringify({ ...parsed, version: 1, bodyLength: undefined })}\n${body}`],
        ["another last record", JSON.stringify({ ...parsed, last: "{}" })],
        // a state the records after it contradict: the next turn would be 2 again
        ["a wrong turn number", JSON.stringify({ ...parsed, lastTurn: 0 })]
      ]
      for (const [what, head] of bad) {
        // At the first turn/end, so records follow it (the wrong turn number is then a broken rule).
        yield* asWriter(memory, (lease) => memory.saveSnapshot(sid, { seq: 7, position: 7, head, body }, { lease }))
        const { starts, store } = yield* observed(memory)
        const opened = yield* view(yield* openWith(store, { commit: { snapshotEvery: 0 } }))
        assert.deepStrictEqual(opened, expected, what)
        assert.include(yield* starts, -1, `${what}: replayed from the start`)
      }
    }))

  it.effect("a snapshot whose history is damaged derives the history from the stored events instead", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: 1 } }).pipe(
        Effect.provideService(SessionStore.SessionStore, memory)
      )
      yield* log.appendAll([...promptTurn(1, "One", "1"), ...promptTurn(2, "Two", "2")])
      const good = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      // The head agrees with the log; the history array does not match its message count.
      yield* asWriter(memory, (lease) => memory.saveSnapshot(sid, { ...good, body: "[]" }, { lease }))
      const { starts, store } = yield* observed(memory)
      const opened = yield* openWith(store, { commit: { snapshotEvery: 0 } })
      assert.deepStrictEqual(yield* starts, [good.position - 1])
      assert.deepStrictEqual(History.messages(yield* opened.history), History.messages(yield* log.history))
      yield* assertConsistent(opened)
    }))

  it.effect("R106 from a snapshot: a torn tail after it is truncated and an open turn closed durably", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: 1 } }).pipe(
        Effect.provideService(SessionStore.SessionStore, memory)
      )
      yield* log.appendAll(promptTurn(1, "One", "1"))
      yield* log.appendAll([
        ev.user("Run", MessageSource.user, "p2"),
        ev.turnStart(2),
        ev.stepStart(2, 1),
        ev.assistant(2, 1, [block.toolCall("ran", "sh", "{}")]),
        ev.toolCall(2, 1, "ran", "sh")
      ])
      const torn = "{\"seq\":13,\"time\":0,\"type\":\"tool/res"
      const raw: SessionStore.Service = {
        ...memory,
        load: (id, options) =>
          Stream.concat(
            memory.load(id, options),
            Stream.fromEffect(Effect.map(memory.header(id), () => ({ position: 13, text: torn }))).pipe(
              Stream.filter(() => (options?.after ?? -1) < 13)
            )
          )
      }
      const { starts, store } = yield* observed(raw)
      const opened = yield* openWith(store, { commit: { snapshotEvery: 0 } })
      assert.deepStrictEqual((yield* starts)[0], 6, "from the snapshot at the first turn/end")
      const events = yield* opened.events
      assert.deepStrictEqual(events.slice(13).map((e) => e.type), ["tool/result", "step/end", "turn/end"])
      assert.deepStrictEqual(
        Chunk.toReadonlyArray(yield* Stream.runCollect(memory.load(sid))).map((r) => r.text),
        events.map((e) => JSON.stringify(e))
      )
      yield* assertConsistent(opened)
    }))

  it.effect("open takes a snapshot after a long replay, so the next open does not replay again", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const log = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, memory))
      for (let turn = 1; turn <= 5; turn++) yield* log.appendAll(promptTurn(turn, `P${turn}`, `A${turn}`))
      assert.isTrue(Option.isNone(yield* memory.loadSnapshot(sid)), "the memory store takes none by default")
      yield* openWith(memory, { commit: { snapshotEvery: 20 } })
      const saved = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      assert.deepStrictEqual([saved.seq, saved.position], [39, 39])
      const { starts, store } = yield* observed(memory)
      const again = yield* openWith(store)
      assert.deepStrictEqual(yield* starts, [38])
      assert.deepStrictEqual(yield* again.events, yield* log.events)
      yield* assertConsistent(again)
    }))

  it.effect("over a durable store the writer snapshots after its commits; memory keeps only the tail", () =>
    Effect.gen(function*() {
      const { durable, log, memory, starts } = yield* durableLog(16)
      const all: Array<SessionEvent.SessionEvent> = []
      for (let turn = 1; turn <= 6; turn++) {
        all.push(...(yield* log.appendAll(promptTurn(turn, `P${turn}`, `A${turn}`))))
        yield* log.flush
      }
      // The writer takes a snapshot after the commit it covers, before its next commit: one more commit orders it.
      all.push(yield* log.append(ev.user("idle", MessageSource.plugin("p"))))
      yield* log.flush
      const saved = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      assert.strictEqual(saved.seq, 47, "every 16 events at a turn/end: 15, 31, 47")
      assert.deepStrictEqual(yield* starts, [], "appending never reads the store")
      // `events` still holds every event, but the covered ones were dropped from memory: they come from the store.
      assert.deepStrictEqual(yield* log.events, all)
      assert.deepStrictEqual(yield* starts, [-1])
      // read back once: they stay in memory until the next snapshot, so reading again does not touch the store
      assert.deepStrictEqual(yield* log.events, all)
      assert.deepStrictEqual(yield* starts, [-1])
      const reopened = yield* openWith(durable)
      assert.deepStrictEqual((yield* starts)[1], 46)
      assert.deepStrictEqual(yield* reopened.events, all)
      yield* assertConsistent(reopened)
    }))
})

describe("the last turn after a snapshot (R227, ADR 0068)", () => {
  it.effect("lastTurn reads the store from the last turn's record on, never the whole session", () =>
    Effect.gen(function*() {
      const { durable, log, memory, starts } = yield* durableLog(8)
      for (let turn = 1; turn <= 4; turn++) {
        yield* log.recordInbox([accepted(`held-${turn}`)])
        yield* log.appendAll(
          toolTurn(turn, `T${turn}`, [{ id: `c${turn}`, name: "sh", args: "{}", result: "ok" }], ".")
        )
        yield* log.flush
      }
      yield* log.append(ev.user("idle", MessageSource.plugin("p")))
      yield* log.flush
      yield* log.close
      const all = yield* (yield* openWith(withoutSnapshots(memory), { readOnly: true })).events
      const start = all.findLastIndex((event) => event.type === "turn/start")
      const reopened = yield* openWith(durable, { commit: { snapshotEvery: 8 } })
      const before = (yield* starts).length
      assert.deepStrictEqual(yield* reopened.lastTurn, all.slice(start))
      const loads = (yield* starts).slice(before)
      assert.strictEqual(loads.length, 1)
      assert.isAbove(loads[0]!, 0, "from the turn's record, not from the start")
      // A head written before heads named the record: the whole session is read, and the answer is the same.
      const saved = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      const head = JSON.parse(saved.head) as Record<string, unknown>
      assert.isDefined(head["turnStart"])
      const body = Option.getOrThrow(yield* saved.body)
      yield* asWriter(
        memory,
        (lease) =>
          memory.saveSnapshot(sid, { ...saved, head: JSON.stringify({ ...head, turnStart: undefined }), body }, {
            lease
          })
      )
      const old = yield* openWith(durable, { readOnly: true })
      const oldBefore = (yield* starts).length
      assert.deepStrictEqual(yield* old.lastTurn, all.slice(start))
      assert.include((yield* starts).slice(oldBefore), -1)
    }))

  it.effect("after a crash, open repairs the last turn and snapshots past it: lastTurn reads that turn from its record", () =>
    Effect.gen(function*() {
      const { durable, log, memory, starts } = yield* durableLog(1000)
      yield* log.appendAll([...promptTurn(1, "One", "1"), ...promptTurn(2, "Two", "2")])
      // Turn 3 is cut by a crash after its tool call: open closes it (R106) and, past `snapshotEvery`, snapshots.
      const cut = toolTurn(3, "Run", [{ id: "c3", name: "sh", args: "{}", result: "ok" }], ".").slice(0, 5)
      yield* log.appendAll(cut)
      yield* log.flush
      const reopened = yield* openWith(durable, { commit: { snapshotEvery: 4 } })
      const saved = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      const all = yield* (yield* openWith(withoutSnapshots(memory), { readOnly: true })).events
      assert.strictEqual(saved.seq, all.length - 1, "open snapshotted where the repaired log ends")
      assert.strictEqual(all.at(-1)!.type, "turn/end")
      const before = (yield* starts).length
      const turn = yield* reopened.lastTurn
      assert.deepStrictEqual(turn, all.slice(all.findLastIndex((event) => event.type === "turn/start")))
      assert.deepStrictEqual(turn.map((event) => event.type).slice(-3), ["tool/result", "step/end", "turn/end"])
      assert.isAbove((yield* starts).slice(before)[0]!, 0, "from the turn's record, not from the start")
    }))

  it.effect("lastTurn is empty on a log without turns, and the seed's last turn on a seeded one", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const empty = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, memory))
      yield* empty.append(ev.user("idle", MessageSource.plugin("p")))
      assert.deepStrictEqual(yield* empty.lastTurn, [])
      const seed = stamp([...promptTurn(1, "One", "1"), ...promptTurn(2, "Two", "2")])
      const seeded = yield* SessionLog.make({ id: sessionId("seeded"), seed, commit: { snapshotEvery: 1 } }).pipe(
        Effect.provideService(SessionStore.SessionStore, { ...memory, volatile: false })
      )
      const events = yield* seeded.events
      assert.deepStrictEqual(yield* seeded.lastTurn, events.slice(events.findLastIndex((e) => e.type === "turn/start")))
    }))
})

describe("snapshot bodies (ADR 0027)", () => {
  it.effect("a body the log cannot read or rebuild skips the next snapshot; appends go on", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: 1 } }).pipe(
        Effect.provideService(SessionStore.SessionStore, memory)
      )
      yield* log.appendAll([...promptTurn(1, "One", "1"), ...promptTurn(2, "Two", "2")])
      const before = Option.getOrThrow(yield* memory.loadSnapshot(sid)).seq
      const io = new SessionStore.SessionStoreError({ reason: "Io", message: "the disk is gone" })
      // The body fails, and so does a load from the start (the rebuild from the log); a load after a position works.
      const broken: SessionStore.Service = {
        ...memory,
        loadSnapshot: (id) =>
          Effect.map(memory.loadSnapshot(id), Option.map((head) => ({ ...head, body: Effect.fail(io) }))),
        load: (id, options) => options?.after === undefined ? Stream.fail(io) : memory.load(id, options)
      }
      const opened = yield* openWith(broken, { commit: { snapshotEvery: 1 } })
      yield* opened.appendAll(promptTurn(3, "Three", "3"))
      yield* opened.flush
      assert.strictEqual((yield* opened.state).lastTurn, 3)
      assert.strictEqual(Option.getOrThrow(yield* memory.loadSnapshot(sid)).seq, before, "no snapshot was taken")
    }))

  const bodyOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) => {
    const { added, text } = snapshot.appendHistoryText("", events)
    return { body: text, messages: added }
  }
  /** A version-2 body (ADR 0027): a JSON array of the events' entries. */
  const bodyOf2 = (events: ReadonlyArray<SessionEvent.SessionEvent>) => {
    const entries = events.flatMap((event) => snapshot.entryOf(event) ?? [])
    return { body: JSON.stringify(entries), messages: entries.length }
  }
  const decode = (body: string, messages: number, version: 2 | 3 = 3) =>
    snapshot.decodeBody(body, { version, messages, bodyLength: body.length })
  const all = goodLogs.flatMap(({ inputs }) => stamp(inputs))

  it("a body decodes to the messages the events give, for every kind of history event", () => {
    const { body, messages } = bodyOf(all)
    const decoded = decode(body, messages)
    assert.isTrue(decoded._tag === "Right")
    if (decoded._tag !== "Right") return
    assert.deepStrictEqual(History.messages(decoded.right.history), History.deriveMessages(all))
    assert.strictEqual(decoded.right.historyText, body)
    assert.isAbove(messages, 20)
    // each entry is what the history keeps of its event, no more
    for (const event of all) {
      const entry = snapshot.entryOf(event)
      assert.strictEqual(entry !== undefined, history.contributes(event), event.type)
    }
  })

  it("ADR 0080: a version-2 body still decodes, and its entries come back as version 3 for the next snapshot", () => {
    const { body, messages } = bodyOf2(all)
    const decoded = decode(body, messages, 2)
    assert.isTrue(decoded._tag === "Right")
    if (decoded._tag !== "Right") return
    assert.deepStrictEqual(History.messages(decoded.right.history), History.deriveMessages(all))
    assert.strictEqual(decoded.right.historyText, bodyOf(all).body)
    // and a version-3 text is not read as version 2, nor the other way round
    assert.strictEqual(decode(bodyOf(all).body, messages, 2)._tag, "Left")
    assert.strictEqual(decode(body, messages, 3)._tag, "Left")
  })

  it("property: any texts, ids, names, arguments and provenance round-trip through a version-3 body (ADR 0080)", () => {
    // Every UTF-16 code unit, lone surrogates, digits, `:` and `;` included.
    const unit = fc.oneof(
      fc.constantFrom(":", ";", "0", "9", "u", "a", "t", "\uD800", "\uDC00", "\u0000"),
      fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code))
    )
    const text = fc.string({ unit, maxLength: 12 })
    const id = fc.string({ unit, minLength: 1, maxLength: 6 })
    const provenance = fc.record({
      model: text,
      provider: text,
      reportedModel: text,
      replayState: fc.dictionary(
        fc.string({ maxLength: 3 }).filter((key) => key !== "__proto__"),
        fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null))
      )
    }, { requiredKeys: ["model"] })
    const block = fc.oneof(
      fc.record({ type: fc.constantFrom("text" as const, "reasoning" as const), text }),
      fc.record({ type: fc.constant("tool-call" as const), id, name: text, arguments: text })
    )
    const entry = fc.oneof(
      fc.record({ k: fc.constant("u" as const), t: fc.array(text, { minLength: 1, maxLength: 3 }) }),
      fc.record({ k: fc.constant("a" as const), c: fc.array(block, { minLength: 1, maxLength: 3 }), p: provenance }),
      fc.record({ k: fc.constant("t" as const), i: id, n: text, e: fc.boolean(), r: text })
    )
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 6 }), (entries) => {
        let body = ""
        const expected = entries.map((e) => {
          switch (e.k) {
            case "u":
              body += snapshotBody.userEntry(e.t)
              return history.userMessageOf(e.t)
            case "a": {
              const blocks = e.c.map((b) => b.type === "tool-call" ? { ...b, id: Ids.ToolCallId.make(b.id) } : b)
              body += snapshotBody.assistantEntry(blocks, e.p)
              return history.assistantMessageOf(blocks, e.p)
            }
            case "t":
              body += snapshotBody.toolEntry(e.i, e.n, e.e, e.r)
              return history.toolMessageOf(e.i, e.n, e.e, e.r)
          }
        })
        const read = snapshotBody.readEntries(body)
        assert.isTrue(read._tag === "Right", body)
        if (read._tag === "Right") assert.deepStrictEqual(read.right, expected)
      }),
      { numRuns: 500 }
    )
  })

  it("a version-3 body that is torn, of an unknown kind, or with a field its schema refuses is refused", () => {
    const events = stamp(toolTurn(1, "Hi", [{ id: "c1", name: "read", args: "{}", result: "ok" }], "Done."))
    const { body, messages } = bodyOf(events)
    assert.strictEqual(decode(body, messages)._tag, "Right")
    // Torn anywhere (the head's count then disagrees at an entry's end).
    for (let end = 0; end < body.length; end++) {
      assert.strictEqual(decode(body.slice(0, end), messages)._tag, "Left", `torn at ${end}`)
    }
    const provenance = (p: string) => `a${p.length}:${p}1;x2:ok`
    const refused: ReadonlyArray<readonly [string, string]> = [
      ["an unknown kind", "z1;2:hi"],
      ["a user entry without text", "u0;"],
      ["an assistant entry without blocks", `${provenance("{\"model\":\"m\"}").slice(0, -7)}0;`],
      ["an unknown block", `${provenance("{\"model\":\"m\"}").slice(0, -7)}1;y2:ok`],
      ["a provenance that is not JSON", provenance("{model}")],
      ["a provenance with an extra key", provenance(JSON.stringify({ model: "m", extra: 1 }))],
      ["a provenance of the wrong type", provenance(JSON.stringify({ model: 1 }))],
      ["a tool call without id", `${provenance("{\"model\":\"m\"}").slice(0, -7)}1;c0:4:read2:{}`],
      ["a tool result without id", "t0:4:read2:ok"],
      ["a length past the end", "u1;9:hi"],
      ["a length with a leading zero", "u1;02:hi"],
      ["a length of ten digits", "u1;0000000002:hi"],
      ["a count without its end", "u1"]
    ]
    for (const [what, text] of refused) assert.strictEqual(decode(text, 1)._tag, "Left", what)
    assert.strictEqual(decode(provenance(JSON.stringify({ model: "m" })), 1)._tag, "Right", "the refusals' base")
  })

  it("property: the common-form entry check accepts nothing the entry's schema refuses (ADR 0068)", () => {
    const value = fc.oneof(
      fc.string({ maxLength: 3 }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string({ maxLength: 2 }), { maxLength: 2 }),
      fc.dictionary(fc.constantFrom("x", "model"), fc.string({ maxLength: 2 }), { maxKeys: 2 })
    )
    const blockArb = fc.oneof(
      fc.record({ type: fc.constantFrom("text", "reasoning", "tool-call", "x"), text: value }, { requiredKeys: [] }),
      fc.record(
        { type: fc.constantFrom("tool-call", "text"), id: value, name: value, arguments: value },
        { requiredKeys: ["type"] }
      )
    )
    const provenanceArb = fc.oneof(
      fc.record({ model: value, provider: value, reportedModel: value, replayState: value }, { requiredKeys: [] }),
      value
    )
    const entryArb = fc.oneof(
      fc.record({ k: fc.constantFrom("u", "a", "x"), t: fc.oneof(fc.array(value, { maxLength: 3 }), value) }, {
        requiredKeys: ["k"]
      }),
      fc.record({ k: fc.constantFrom("a", "u"), c: fc.array(blockArb, { maxLength: 3 }), p: provenanceArb }, {
        requiredKeys: ["k"]
      }),
      fc.record({ k: fc.constantFrom("t", "a"), i: value, n: value, e: value, r: value }, { requiredKeys: ["k"] })
    )
    // Entries in their common form, so the check's acceptance is exercised as often as its refusals.
    const text = fc.string({ maxLength: 3 })
    const common = fc.oneof(
      fc.record({ k: fc.constant("u"), t: fc.array(text, { minLength: 1, maxLength: 2 }) }),
      fc.record({
        k: fc.constant("a"),
        c: fc.array(
          fc.oneof(
            fc.record({ type: fc.constantFrom("text", "reasoning"), text }),
            fc.record({ type: fc.constant("tool-call"), id: text, name: text, arguments: text })
          ),
          { minLength: 1, maxLength: 2 }
        ),
        p: fc.record({ model: text, provider: text, reportedModel: text }, { requiredKeys: ["model"] })
      }),
      fc.record({ k: fc.constant("t"), i: text, n: text, e: fc.boolean(), r: text })
    )
    const withExtra = fc.oneof(
      entryArb,
      common,
      fc.tuple(common, fc.constantFrom("k", "x", "t", "c", "p", "i", "e"), value).map(([entry, key, v]) => ({
        ...entry,
        [key]: v
      })),
      fc.tuple(entryArb, fc.constantFrom("k", "x", "t", "c", "__proto__"), value).map(([entry, key, v]) => ({
        ...entry,
        [key]: v
      }))
    )
    let accepted = 0
    fc.assert(
      fc.property(withExtra, (entry) => {
        // As the body holds it: JSON text, parsed.
        const parsed: unknown = JSON.parse(JSON.stringify(entry))
        if (!snapshot.isCommonEntry(parsed)) return
        accepted++
        assert.isTrue(snapshot.isEntryBySchema(parsed), JSON.stringify(parsed))
      }),
      { numRuns: 3000 }
    )
    assert.isAbove(accepted, 300, "the generator reaches the common forms")
    // Every entry the log writes is in its common form (the fast check is the one that runs).
    for (const event of goodLogs.flatMap(({ inputs }) => stamp(inputs))) {
      const entry = snapshot.entryOf(event)
      if (entry !== undefined) assert.isTrue(snapshot.isCommonEntry(JSON.parse(JSON.stringify(entry))), event.type)
    }
  })

  it("a version-2 entry with a missing, wrong or extra key is refused, and so is the body", () => {
    const events = stamp(toolTurn(1, "Hi", [{ id: "c1", name: "read", args: "{}", result: "ok" }], "Done."))
    const { body, messages } = bodyOf2(events)
    assert.strictEqual(decode(body, messages, 2)._tag, "Right")
    const entries = JSON.parse(body) as Array<Record<string, unknown>>
    const variants: ReadonlyArray<readonly [string, (e: Record<string, unknown>) => Record<string, unknown>]> = [
      ["an extra key", (e) => ({ ...e, extra: 1 })],
      ["a missing key", ({ k, ...rest }) => (void k, rest)],
      ["an unknown kind", (e) => ({ ...e, k: "x" })],
      ["a wrong type", (e) => Object.fromEntries(Object.entries(e).map(([key, v]) => [key, key === "k" ? v : 42]))]
    ]
    for (const [index] of entries.entries()) {
      for (const [what, change] of variants) {
        const damaged = entries.map((e, i) => (i === index ? change(e) : e))
        const text = JSON.stringify(damaged)
        assert.strictEqual(decode(text, messages, 2)._tag, "Left", `entry ${index}: ${what}`)
      }
    }
    assert.strictEqual(decode(`[${JSON.stringify({ k: "u", t: [] })}]`, 1, 2)._tag, "Left", "a user entry without text")
    assert.strictEqual(decode(`[${JSON.stringify({ k: "a", c: [], p: { model: "m" } })}]`, 1, 2)._tag, "Left", "empty")
  })
})
