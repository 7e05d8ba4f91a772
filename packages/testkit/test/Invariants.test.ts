/**
 * Each invariant of `Invariants` on small hand-made runs: a good run passes, and each kind of violation is caught at
 * the event that commits it.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AgentEvent, Message, SessionEvent } from "@harness/domain"
import { MessageSource } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { Invariants } from "@harness/testkit"
import { ev, messageId, stamp } from "@harness/testkit/Events"

const msg = (id: string): Message.AgentMessage => ({
  content: [{ type: "text", text: `text of ${id}` }],
  id: messageId(id),
  source: MessageSource.user
})

const live = {
  enqueue: (id: string, placement: Message.InboxPlacement = "queued"): AgentEvent.AgentEvent => ({
    type: "agent/inbox/enqueue",
    message: msg(id),
    placement
  }),
  dequeue: (id: string): AgentEvent.AgentEvent => ({ type: "agent/inbox/dequeue", message: msg(id) }),
  discard: (first: string, ...rest: ReadonlyArray<string>): AgentEvent.AgentEvent => ({
    type: "agent/inbox/discard",
    messages: [msg(first), ...rest.map(msg)]
  }),
  status: (status: AgentEvent.AgentStatus): AgentEvent.AgentEvent => ({ type: "agent/status", status }),
  settled: (turn: number): AgentEvent.AgentEvent => ({ type: "agent/settled", turn, reason: { kind: "completed" } }),
  disposed: { type: "agent/disposed" } satisfies AgentEvent.AgentEvent,
  durable: (event: SessionEvent.SessionEvent): AgentEvent.AgentEvent => ({ type: "session/event", event })
}

/** A log from inputs, and the same events as `session/event`s. */
const logOf = (...inputs: ReadonlyArray<SessionEvent.SessionEventInput>) => stamp(inputs)

/** A canonical completed turn for prompt `id`: its durable events. */
const promptTurn = (turn: number, id: string): ReadonlyArray<SessionEvent.SessionEventInput> => [
  ev.turnStart(turn),
  ev.user(`text of ${id}`, MessageSource.user, id),
  ev.stepStart(turn, 1),
  ev.assistant(turn, 1, [{ type: "text", text: "ok" }]),
  ev.stepEnd(turn, 1),
  ev.turnEnd(turn)
]

/** The live events of one idle follow-up that completes (R89), with its log. */
const goodRun = () => {
  const log = logOf(...promptTurn(1, "m1"))
  const events: Array<AgentEvent.AgentEvent> = [
    live.enqueue("m1"),
    live.status("running"),
    live.dequeue("m1"),
    ...log.map(live.durable),
    live.settled(1),
    live.status("idle"),
    live.disposed
  ]
  return { events, log }
}

const names = (violations: ReadonlyArray<Invariants.Violation>) => violations.map((v) => [v.rule, v.in, v.index])

describe("Invariants", () => {
  it("a canonical run keeps every invariant", () => {
    const { events, log } = goodRun()
    assert.deepStrictEqual(
      Invariants.check({ events, log, accepted: ["m1"], injected: [], final: true, keepInboxOnly: events.length }),
      []
    )
  })

  describe("fifoConservation (R88)", () => {
    it("balanced enqueues, dequeues and discards pass, and the end count is checked", () => {
      const events = [live.enqueue("a"), live.enqueue("b", "steering"), live.dequeue("a"), live.discard("b")]
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 0 }), [])
      assert.deepStrictEqual(Invariants.fifoConservation(events.slice(0, 3), { outstanding: 1 }), [])
    })

    it("catches a dequeue of an id never enqueued, and the negative count", () => {
      const found = Invariants.fifoConservation([live.dequeue("x")])
      assert.deepStrictEqual(names(found), [["fifo-conservation", "events", 0], ["fifo-conservation", "events", 0]])
      assert.match(found[0]!.message, /never enqueued/)
      assert.match(found[1]!.message, /went negative/)
    })

    it("catches a second terminal event for one id (dequeued, then discarded)", () => {
      const found = Invariants.fifoConservation([live.enqueue("a"), live.dequeue("a"), live.discard("a")])
      assert.deepStrictEqual(names(found), [["fifo-conservation", "events", 2], ["fifo-conservation", "events", 2]])
      assert.match(found[0]!.message, /discarded after it was already dequeued/)
    })

    it("catches a discard larger than the outstanding count", () => {
      const found = Invariants.fifoConservation([live.enqueue("a"), live.discard("a", "b")])
      assert.deepStrictEqual(found.map((v) => v.message), [
        "message b was discarded but never enqueued",
        "the outstanding count went negative (-1) at a discard"
      ])
    })

    it("catches an id enqueued twice and an id repeated within one discard", () => {
      const found = Invariants.fifoConservation([live.enqueue("a"), live.enqueue("a"), live.discard("a", "a")])
      assert.deepStrictEqual(found.map((v) => v.index), [1, 2, 2])
      assert.match(found[0]!.message, /enqueued twice/)
      assert.match(found[1]!.message, /twice in one discard/)
    })

    it("catches an item never terminated when the end count must be 0", () => {
      const found = Invariants.fifoConservation([live.enqueue("a"), live.enqueue("b"), live.dequeue("a")], {
        outstanding: 0
      })
      assert.deepStrictEqual(names(found), [["fifo-conservation", "events", 3]])
      assert.match(found[0]!.message, /count is 1 at the end, expected 0 \(still outstanding: b\)/)
    })

    it("catches an injected id in an inbox event (R29)", () => {
      const found = Invariants.fifoConservation([live.enqueue("i"), live.dequeue("i")], { injected: ["i"] })
      assert.deepStrictEqual(found.map((v) => v.index), [0, 1])
      assert.match(found[0]!.message, /injected message i was enqueued/)
      assert.match(found[1]!.message, /injected message i was dequeued/)
    })
  })

  describe("statusTrace (R23)", () => {
    it("running → idle → running → idle passes, and the end status is checked", () => {
      const events = [live.status("running"), live.status("idle"), live.status("running"), live.status("idle")]
      assert.deepStrictEqual(Invariants.statusTrace(events, { end: "idle" }), [])
      const found = Invariants.statusTrace(events.slice(0, 3), { end: "idle" })
      assert.deepStrictEqual(names(found), [["status-trace", "events", 3]])
    })

    it("catches a first status of idle (the agent starts idle)", () => {
      assert.deepStrictEqual(names(Invariants.statusTrace([live.status("idle")])), [["status-trace", "events", 0]])
    })

    it("catches the same status twice in a row", () => {
      const found = Invariants.statusTrace([live.status("running"), live.status("running")])
      assert.deepStrictEqual(names(found), [["status-trace", "events", 1]])
      assert.match(found[0]!.message, /published twice in a row/)
    })

    it("catches a turn that starts or settles while idle, and idle while a turn is open", () => {
      const [start, end] = logOf(ev.turnStart(1), ev.turnEnd(1)).map(live.durable)
      const whileIdle = Invariants.statusTrace([start!, end!, live.settled(1)])
      assert.deepStrictEqual(whileIdle.map((v) => v.index), [0, 2])
      assert.match(whileIdle[0]!.message, /turn 1 started while the status is "idle"/)
      assert.match(whileIdle[1]!.message, /turn 1 settled while the status is "idle"/)
      const idleInTurn = Invariants.statusTrace([live.status("running"), start!, live.status("idle"), end!])
      assert.deepStrictEqual(names(idleInTurn), [["status-trace", "events", 2]])
      assert.match(idleInTurn[0]!.message, /"idle" while turn 1 is open/)
    })
  })

  describe("steeringInOpenTurn", () => {
    it("steering inside its open turn passes", () => {
      const log = logOf(ev.turnStart(1), ev.steering(1, "s"), ev.turnEnd(1))
      assert.deepStrictEqual(Invariants.steeringInOpenTurn(log), [])
    })

    it("catches steering after its turn closed, and steering naming another turn", () => {
      const log = logOf(
        ev.turnStart(1),
        ev.turnEnd(1),
        ev.steering(1, "late"),
        ev.turnStart(2),
        ev.steering(1, "old"),
        ev.turnEnd(2)
      )
      assert.deepStrictEqual(names(Invariants.steeringInOpenTurn(log)), [
        ["steering-in-open-turn", "log", 2],
        ["steering-in-open-turn", "log", 4]
      ])
    })
  })

  describe("steeringJoinsTurn", () => {
    const turn = (reason: "completed" | "aborted", steered: boolean) =>
      logOf(ev.turnStart(1), ...(steered ? [ev.steering(1, "s", "s")] : []), ev.turnEnd(1, { kind: reason })).map(
        live.durable
      )

    it("steering logged before its turn ends passes; a turn that aborts keeps it staged for the next one", () => {
      const [start, steering, end] = turn("completed", true)
      assert.deepStrictEqual(Invariants.steeringJoinsTurn([start!, live.enqueue("s", "steering"), steering!, end!]), [])
      const [aStart, aEnd] = turn("aborted", false)
      assert.deepStrictEqual(Invariants.steeringJoinsTurn([aStart!, live.enqueue("s", "steering"), aEnd!]), [])
    })

    it("catches steering still staged when its turn ends completed", () => {
      const [start, end] = turn("completed", false)
      const found = Invariants.steeringJoinsTurn([start!, live.enqueue("s", "steering"), end!])
      assert.deepStrictEqual(names(found), [["steering-joins-turn", "events", 2]])
      assert.match(found[0]!.message, /steering s \(enqueued at event 1\) is still staged when turn 1 ends completed/)
    })

    it("discarded steering is no longer expected", () => {
      const [start, end] = turn("completed", false)
      assert.deepStrictEqual(
        Invariants.steeringJoinsTurn([start!, live.enqueue("s", "steering"), live.discard("s"), end!]),
        []
      )
    })
  })

  describe("messageFates", () => {
    it("classifies logged, discarded, dropped and pending messages", () => {
      const log = logOf(...promptTurn(1, "logged"))
      const events = [
        live.enqueue("logged"),
        live.enqueue("dropped"),
        live.enqueue("discarded"),
        live.enqueue("pending"),
        live.dequeue("logged"),
        live.dequeue("dropped"),
        live.discard("discarded")
      ]
      const ids = ["logged", "discarded", "dropped", "pending"]
      assert.deepStrictEqual(
        [...Invariants.fates(events, log, ids).values()],
        ["logged", "discarded", "dropped", "pending"]
      )
      assert.deepStrictEqual(Invariants.messageFates(events, log, { accepted: ids }), [])
    })

    it("catches a message with no fate once the run is final", () => {
      const found = Invariants.messageFates([live.enqueue("p")], [], { accepted: ["p"], final: true })
      assert.deepStrictEqual(names(found), [["message-fate", "events", 1]])
      assert.deepStrictEqual(Invariants.messageFates([], [], { accepted: ["never-seen"], final: true }).length, 1)
    })

    it("catches a message both logged and discarded", () => {
      const log = logOf(...promptTurn(1, "m"))
      const found = Invariants.messageFates([live.enqueue("m"), live.dequeue("m"), live.discard("m")], log, {
        accepted: ["m"]
      })
      assert.deepStrictEqual(names(found), [["message-fate", "events", 2]])
      assert.match(found[0]!.message, /more than one fate: logged and discarded/)
    })

    it("catches a message logged twice", () => {
      const log = logOf(ev.user("a", MessageSource.user, "m"), ev.user("a", MessageSource.user, "m"))
      const found = Invariants.messageFates([], log, { accepted: ["m"] })
      assert.deepStrictEqual(names(found), [["message-fate", "log", 1]])
    })

    it("catches steering that was dequeued but never logged (only a prompt can be dropped)", () => {
      const found = Invariants.messageFates([live.enqueue("s", "steering"), live.dequeue("s")], [], { accepted: ["s"] })
      assert.deepStrictEqual(names(found), [["message-fate", "events", 1]])
      assert.match(found[0]!.message, /steering message s was dequeued but never logged/)
    })

    it("catches a FIFO item logged without being dequeued, and a queued prompt logged as steering", () => {
      const log = logOf(ev.turnStart(1), ev.steering(1, "q", "q"), ev.turnEnd(1))
      const found = Invariants.messageFates([live.enqueue("q")], log, { accepted: ["q"] })
      assert.deepStrictEqual(found.map((v) => v.message), [
        "queued message q was logged without being dequeued",
        "queued message q was logged as steering"
      ])
    })
  })

  describe("oneSendOneTurn (R32)", () => {
    it("one queued prompt per turn passes", () => {
      const log = logOf(...promptTurn(1, "a"), ...promptTurn(2, "b"))
      assert.deepStrictEqual(Invariants.oneSendOneTurn([live.enqueue("a"), live.enqueue("b")], log), [])
    })

    it("catches two queued prompts in one turn, and a queued prompt outside any turn", () => {
      const log = logOf(
        ev.turnStart(1),
        ev.user("a", MessageSource.user, "a"),
        ev.user("b", MessageSource.user, "b"),
        ev.turnEnd(1),
        ev.user("c", MessageSource.user, "c")
      )
      const found = Invariants.oneSendOneTurn([live.enqueue("a"), live.enqueue("b"), live.enqueue("c")], log)
      assert.deepStrictEqual(names(found), [["one-send-one-turn", "log", 2], ["one-send-one-turn", "log", 4]])
      assert.match(found[0]!.message, /a and b share turn 1/)
      assert.match(found[1]!.message, /c was logged outside any turn/)
    })
  })

  describe("settledOnce (R57)", () => {
    const durable = (...inputs: ReadonlyArray<SessionEvent.SessionEventInput>) => logOf(...inputs).map(live.durable)

    it("a settled turn, and a failed turn followed at once by its retry turn, pass", () => {
      const [s1, e1, s2, e2] = durable(
        ev.turnStart(1),
        ev.turnEnd(1, { kind: "error", step: 1, message: "boom" }),
        ev.turnStart(2, { kind: "retry" }),
        ev.turnEnd(2)
      )
      assert.deepStrictEqual(Invariants.settledOnce([s1!, e1!, s2!, e2!, live.settled(2)], { final: true }), [])
    })

    it("catches a turn that never settles, one that settles twice, and a settle before the end", () => {
      const [s1, e1, s2, e2] = durable(ev.turnStart(1), ev.turnEnd(1), ev.turnStart(2), ev.turnEnd(2))
      assert.deepStrictEqual(names(Invariants.settledOnce([s1!, e1!, s2!, e2!, live.settled(2)])), [
        ["settled-once", "events", 2]
      ])
      assert.deepStrictEqual(names(Invariants.settledOnce([s1!, e1!, live.settled(1), live.settled(1)])), [
        ["settled-once", "events", 3]
      ])
      assert.deepStrictEqual(names(Invariants.settledOnce([s1!, live.settled(1), e1!])), [[
        "settled-once",
        "events",
        1
      ]])
      assert.deepStrictEqual(names(Invariants.settledOnce([s1!, e1!], { final: true })), [[
        "settled-once",
        "events",
        2
      ]])
    })
  })

  describe("admissionCancel (R80)", () => {
    const cancelRequested: AgentEvent.AgentEvent = { type: "agent/cancel-requested", cause: "user" }
    const turn = () => logOf(...promptTurn(1, "p")).map(live.durable)

    it("a prompt cancelled during admission and never logged passes; a cancel after turn/start is no admission cancel", () => {
      assert.deepStrictEqual(Invariants.admissionCancel([live.enqueue("p"), live.dequeue("p"), cancelRequested]), [])
      const [start, ...rest] = turn()
      assert.deepStrictEqual(
        Invariants.admissionCancel([live.enqueue("p"), live.dequeue("p"), start!, cancelRequested, ...rest]),
        []
      )
    })

    it("catches the prompt's turn opening after a cancel was requested during its admission", () => {
      const found = Invariants.admissionCancel([live.enqueue("p"), live.dequeue("p"), cancelRequested, ...turn()])
      assert.deepStrictEqual(names(found), [["admission-cancel", "events", 4]])
      assert.match(
        found[0]!.message,
        /prompt p was logged in turn 1 although a cancel was requested during its admission/
      )
    })
  })

  describe("admissionOrder (R45)", () => {
    const opening = (steeringFirst: boolean) => {
      const [start, prompt, steering, step] = logOf(
        ev.turnStart(1),
        ev.user("p", MessageSource.user, "p"),
        ev.steering(1, "s", "s"),
        ev.stepStart(1, 1)
      ).map(live.durable)
      return steeringFirst ? [start!, steering!, prompt!, step!] : [start!, prompt!, steering!, step!]
    }

    it("retained steering before the prompt, steering accepted during admission after it, pass", () => {
      const retained = [live.enqueue("p"), live.enqueue("s", "steering"), live.dequeue("p"), ...opening(true)]
      assert.deepStrictEqual(Invariants.admissionOrder(retained), [])
      const during = [live.enqueue("p"), live.dequeue("p"), live.enqueue("s", "steering"), ...opening(false)]
      assert.deepStrictEqual(Invariants.admissionOrder(during), [])
    })

    it("catches steering accepted during the admission logged before the prompt, and the reverse", () => {
      const early = Invariants.admissionOrder([
        live.enqueue("p"),
        live.dequeue("p"),
        live.enqueue("s", "steering"),
        ...opening(true)
      ])
      assert.deepStrictEqual(names(early), [["admission-order", "events", 4]])
      assert.match(early[0]!.message, /accepted during the admission of p, was logged before that prompt/)
      const late = Invariants.admissionOrder([
        live.enqueue("p"),
        live.enqueue("s", "steering"),
        live.dequeue("p"),
        ...opening(false)
      ])
      assert.deepStrictEqual(names(late), [["admission-order", "events", 5]])
      assert.match(late[0]!.message, /staged before p was claimed, was logged after that prompt/)
    })
  })

  describe("injectedContext", () => {
    it("an injected id in the log passes; one still staged passes until the run is final", () => {
      const log = logOf(ev.user("ctx", MessageSource.plugin("p"), "i1"))
      assert.deepStrictEqual(Invariants.injectedContext(log, { injected: ["i1", "i2"] }), [])
      const found = Invariants.injectedContext(log, { injected: ["i1", "i2"], final: true })
      assert.deepStrictEqual(names(found), [["injected-context", "log", 1]])
      assert.match(found[0]!.message, /i2 was lost/)
    })

    it("catches injected context logged twice or as steering", () => {
      const log = logOf(
        ev.user("ctx", MessageSource.plugin("p"), "i"),
        ev.user("ctx", MessageSource.plugin("p"), "i"),
        ev.turnStart(1),
        ev.steering(1, "ctx", "j"),
        ev.turnEnd(1)
      )
      assert.deepStrictEqual(names(Invariants.injectedContext(log, { injected: ["i", "j"], final: true })), [
        ["injected-context", "log", 1],
        ["injected-context", "log", 3]
      ])
    })
  })

  describe("noDiscard and disposedLast", () => {
    it("catches any discard", () => {
      assert.deepStrictEqual(Invariants.noDiscard([live.enqueue("a")]), [])
      assert.deepStrictEqual(names(Invariants.noDiscard([live.enqueue("a"), live.discard("a")])), [[
        "no-discard",
        "events",
        1
      ]])
    })

    it("catches events after agent/disposed, and a missing agent/disposed when required", () => {
      assert.deepStrictEqual(Invariants.disposedLast([live.status("running"), live.disposed]), [])
      assert.deepStrictEqual(names(Invariants.disposedLast([live.disposed, live.status("idle")])), [[
        "disposed-last",
        "events",
        1
      ]])
      assert.deepStrictEqual(Invariants.disposedLast([]), [])
      assert.deepStrictEqual(names(Invariants.disposedLast([], { required: true })), [["disposed-last", "events", 0]])
    })
  })

  describe("logWellFormed", () => {
    it("reports checkLog's violations at their event, an unclosed turn included", () => {
      assert.deepStrictEqual(Invariants.logWellFormed(logOf(...promptTurn(1, "m"))), [])
      const found = Invariants.logWellFormed(logOf(ev.turnStart(1), ev.stepStart(1, 1)))
      assert.deepStrictEqual(names(found), [["unclosed-turn", "log", 1]])
      assert.strictEqual(found[0]!.seq, 1)
      assert.match(found[0]!.message, /ends inside turn 1/)
      // The same shape as LogCheck's own violations: they pass through unchanged.
      assert.deepStrictEqual(found, LogCheck.checkLog(logOf(ev.turnStart(1), ev.stepStart(1, 1))))
    })
  })

  describe("check", () => {
    it("a final run with a message still queued breaks conservation and fates", () => {
      const { events, log } = goodRun()
      const withPending = [live.enqueue("late"), ...events]
      const found = Invariants.check({ events: withPending, log, accepted: ["m1", "late"], final: true })
      assert.deepStrictEqual(found.map((v) => v.rule), ["fifo-conservation", "message-fate"])
      assert.match(Invariants.render(found), /^fifo-conservation @ events\[13\]: /)
    })

    it("one scan finds what every check finds on its own, in the order of the checks, each durable entry with its seq", () => {
      // A run that breaks something of nearly every check: steering outside its turn, two queued prompts in one turn,
      // a turn that never settles, a status left running, a dequeue of an unknown id, an injected id lost.
      const log = logOf(
        ev.turnStart(1),
        ev.user("text of a", MessageSource.user, "a"),
        ev.user("text of b", MessageSource.user, "b"),
        ev.steering(2, "s"),
        ev.stepStart(1, 1),
        ev.stepEnd(1, 1),
        ev.turnEnd(1)
      )
      const events: Array<AgentEvent.AgentEvent> = [
        live.enqueue("a"),
        live.enqueue("b"),
        live.enqueue("s", "steering"),
        live.status("running"),
        live.dequeue("a"),
        live.dequeue("ghost"),
        ...log.map(live.durable),
        live.disposed,
        live.status("idle")
      ]
      const run = { events, log, accepted: ["a", "b", "s"], injected: ["i"], final: true, keepInboxOnly: events.length }
      const found = Invariants.check(run)
      const alone = [
        ...Invariants.fifoConservation(events, { injected: ["i"], outstanding: 0 }),
        ...Invariants.statusTrace(events, { end: "idle" }),
        ...Invariants.steeringInOpenTurn(log),
        ...Invariants.steeringJoinsTurn(events),
        ...Invariants.messageFates(events, log, { accepted: run.accepted, final: true }),
        ...Invariants.oneSendOneTurn(events, log),
        ...Invariants.settledOnce(events, { final: true }),
        ...Invariants.admissionCancel(events),
        ...Invariants.admissionOrder(events),
        ...Invariants.injectedContext(log, { injected: ["i"], final: true }),
        ...Invariants.noDiscard(events),
        ...Invariants.disposedLast(events, { required: true }),
        ...Invariants.logWellFormed(log)
      ]
      assert.deepStrictEqual(found, alone)
      assert.includeMembers(found.map((v) => v.rule), [
        "fifo-conservation",
        "steering-in-open-turn",
        "one-send-one-turn",
        "settled-once",
        "injected-context",
        "disposed-last",
        "wrong-turn"
      ])
      // A live event that republishes a durable one carries its seq; a plain live event and the end of a list do not.
      for (const v of found) {
        const entry = v.in === "log" ? log[v.index] : events[v.index]
        const seq = entry === undefined
          ? undefined
          : "seq" in entry
          ? entry.seq
          : entry.type === "session/event"
          ? entry.event.seq
          : undefined
        assert.strictEqual(v.seq, seq, Invariants.render([v]))
      }
      assert.isTrue(found.some((v) => v.in === "events" && v.seq !== undefined))
    })

    it("keepInboxOnly looks only at the events before disposal", () => {
      const events = [live.enqueue("a"), live.status("running"), live.discard("a"), live.status("idle"), live.disposed]
      assert.deepStrictEqual(Invariants.check({ events, log: [], accepted: ["a"], final: true, keepInboxOnly: 2 }), [])
      assert.deepStrictEqual(
        Invariants.check({ events, log: [], accepted: ["a"], final: true, keepInboxOnly: 3 }).map((v) => v.rule),
        ["no-discard"]
      )
    })
  })
})
