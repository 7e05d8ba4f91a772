/**
 * What the W6 benches write, in one place: this package's `w6.ts` (every store) and the bench package's W6 (the
 * agent's write path on SQLite). A realistic turn of 14 events (a prompt, a tool step, a text step), and raw
 * better-sqlite3 writing the store's rows, the physical limit both compare the stores with.
 */
import { Content, Ids, MessageSource, type SessionEvent } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import Database from "better-sqlite3"

/** The events of one turn. */
export const eventsPerTurn = 14

/**
 * The events of turn `turn` (a tool step, then a text step), grouped as the agent commits them: the claim with its
 * prompt, each streamed chunk, a step's message with its calls, the tool's result closing the step and opening the
 * next, the last message closing the step and the turn.
 */
export const turnSections = (turn: number): ReadonlyArray<ReadonlyArray<SessionEvent.SessionEventInput>> => {
  const callId = Ids.ToolCallId.make(`call_${turn}`)
  const text = (t: string) => Content.text(t)
  const provenance = { model: "deepseek-chat", provider: "deepseek" }
  const args = `{"path":"src/module${turn}.ts"}`
  return [
    [
      {
        type: "user/message",
        data: {
          messageId: Ids.AgentMessageId.make(`prompt-${turn}`),
          content: [text(`Please look at src/module${turn}.ts and tell me what the exported function does.`)],
          source: MessageSource.user
        }
      },
      { type: "turn/start", data: { turn, trigger: { kind: "message", source: MessageSource.user } } },
      { type: "request/header", data: { header: { config: provenance }, reason: "initial" } },
      { type: "step/start", data: { turn, step: 1 } }
    ],
    [{ type: "assistant/chunk", data: { turn, step: 1, chunk: { type: "text-delta", id: "0", delta: "Reading." } } }],
    [
      {
        type: "assistant/message",
        data: {
          turn,
          step: 1,
          content: [text("Reading."), { type: "tool-call", id: callId, name: "read", arguments: args }],
          provenance,
          finishReason: "tool-calls",
          usage: { inputTokens: 1200, outputTokens: 40 }
        }
      },
      { type: "tool/call", data: { turn, step: 1, callId, name: "read", arguments: args } }
    ],
    [
      {
        type: "tool/result",
        data: {
          turn,
          step: 1,
          callId,
          name: "read",
          content: [text(`export const f${turn} = (xs: ReadonlyArray<number>) => xs.filter((x) => x > 0)\n`)],
          isError: false
        }
      },
      { type: "step/end", data: { turn, step: 1 } },
      { type: "step/start", data: { turn, step: 2 } }
    ],
    [{
      type: "assistant/chunk",
      data: { turn, step: 2, chunk: { type: "text-delta", id: "1", delta: "It keeps the positive numbers." } }
    }],
    [
      {
        type: "assistant/message",
        data: {
          turn,
          step: 2,
          content: [text(`f${turn} keeps the positive numbers of a list.`)],
          provenance,
          finishReason: "stop",
          usage: { inputTokens: 1400, outputTokens: 25 }
        }
      },
      { type: "step/end", data: { turn, step: 2 } },
      { type: "turn/end", data: { turn, reason: { kind: "completed" } } }
    ]
  ]
}

/** Turn `turn`'s events as stored, numbered from `seq`. */
export const turnEvents = (turn: number, seq: number): ReadonlyArray<SessionEvent.SessionEvent> =>
  turnSections(turn).flat().map((input, i) =>
    // Adding seq and time to an input gives the event of its type; TypeScript cannot follow the union.
    ({ ...input, seq: seq + i, time: 1_700_000_000_000 + seq + i }) as SessionEvent.SessionEvent
  )

/**
 * Raw better-sqlite3 on a new database file `filename`: WAL, `synchronous` as given, one table shaped like the
 * store's records. `commit` writes one commit's encoded records (numbered from `base`) in one transaction: the
 * store's work per commit without the store. The caller closes `db`.
 */
export const rawDatabase = (
  filename: string,
  synchronous: "NORMAL" | "FULL"
): {
  readonly db: Database.Database
  readonly commit: (records: ReadonlyArray<SessionStore.EncodedRecord>, base: number) => void
} => {
  const db = new Database(filename)
  db.pragma("journal_mode = WAL")
  db.pragma(`synchronous = ${synchronous}`)
  db.exec(`CREATE TABLE records (session INTEGER NOT NULL, position INTEGER NOT NULL, kind INTEGER NOT NULL,
    time INTEGER NOT NULL, message_id TEXT, text TEXT NOT NULL, PRIMARY KEY (session, position))`)
  const insert = db.prepare("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?)")
  const commit = db.transaction((records: ReadonlyArray<SessionStore.EncodedRecord>, base: number) => {
    for (const r of records) {
      insert.run(
        1,
        base + r.position,
        r.kind === "inbox" ? 0 : r.kind === "turn" ? 2 : 1,
        r.time,
        r.messageId === undefined ? null : JSON.stringify(r.messageId),
        r.text
      )
    }
  })
  return { db, commit }
}
