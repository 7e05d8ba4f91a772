/**
 * The small interface every workload drives, and every runtime adapter implements: create an agent over a scripted
 * model, queue turns, steer, cancel, wait for idle, and read back what the agent recorded so the workload can check
 * it. Workloads never touch a runtime's own API; adapters use each runtime's public API the way its documentation
 * intends.
 *
 * The interface is Promise-based because two of the three runtimes are; the Harness adapter runs each call as an
 * Effect program, which is what an async JavaScript caller of Harness pays too.
 */

/** The runtimes the bench compares. */
export const runtimeNames = ["reference", "pi", "harness"] as const
export type RuntimeName = (typeof runtimeNames)[number]

/**
 * The shape's ceiling (`src/runtimes/ceiling.ts`, ADR 0057): the leanest implementation of Harness's fixed shape,
 * with nothing of Harness in it. Not a peer, so not in `runtimeNames`: `npm run ceiling` measures it beside pi and
 * Harness.
 */
export const ceilingName = "ceiling"

/** Harness at another commit (`npm run bench -- --baseline <rev>`, `Baseline.ts`). */
export const baselineName = "baseline"

/**
 * Harness on its secondary model paths (ADR 0057): `harness-standard` through `LanguageModel.streamText` (the
 * provider's `LanguageModel` alone, as any other `@effect/ai` provider), `harness-pull` the scripted `ModelStream`
 * with `pullText` (only a replayed or cached model offers it). `harness` itself is the provider's streaming path.
 */
export const harnessPaths = ["harness-standard", "harness-pull"] as const
export type HarnessPath = (typeof harnessPaths)[number]

/** The `BENCH_HARNESS_MODEL` of each Harness boot name. */
export const harnessModelOf: Readonly<Record<"harness" | HarnessPath, string>> = {
  harness: "provider",
  "harness-standard": "standard",
  "harness-pull": "pull"
}

/** Every runtime a worker can boot. */
export type BootName = RuntimeName | HarnessPath | typeof ceilingName | typeof baselineName

/** What the model sees in one request, computed only when a script asks. */
interface RequestView {
  /** 0-based index of the request among this agent's requests. */
  readonly index: number
  /** The text of every user-role text message in the request, in order (tool results excluded). */
  readonly userTexts: () => ReadonlyArray<string>
}

/**
 * One scripted model reply: a text block streamed token by token, or one tool call.
 *
 * Contract: with no `wait`, the adapter emits the whole reply without yielding to a timer (an instant model).
 * `wait(k)` is asked before token `k` (and before the tool call, as `k = 0`); a returned promise delays that token.
 * A cancelled request stops waiting at once.
 */
export type Reply =
  | {
    readonly _tag: "text"
    readonly tokens: ReadonlyArray<string>
    readonly wait?: ((k: number) => Promise<void> | undefined) | undefined
  }
  | {
    readonly _tag: "tool-call"
    readonly name: string
    /** The raw JSON argument text. */
    readonly arguments: string
    readonly wait?: ((k: number) => Promise<void> | undefined) | undefined
  }

/** Decides each request's reply. Called once per model request, in request order. */
export type Script = (request: RequestView) => Reply

/** A live observation, reported as it happens (the listener takes the time). */
export type Observed =
  /** The agent took a queued prompt to run it (Harness `agent/inbox/dequeue`, reference `agent/inbox/claimed`, pi the prompt's `message_start`). */
  | { readonly _tag: "dequeued"; readonly text: string }
  /** A turn ended (Harness/reference `turn/end` in the log; pi: `turn_end` of an assistant message that ends the run or was aborted). */
  | { readonly _tag: "turn-ended"; readonly aborted: boolean }

/** What an agent recorded, read back from its own log or state. */
export interface Transcript {
  /** Turns the runtime recorded as completed (pi: assistant replies that ended with `stop`). */
  readonly completedTurns: number
  /** Turns recorded as aborted (pi: assistant messages with `stopReason: "aborted"`). */
  readonly abortedTurns: number
  /** The text of each user prompt, in log order (steering and tool results excluded). */
  readonly prompts: ReadonlyArray<string>
  /** Every prompt and steering text written by the user, in log order. */
  readonly userTexts: ReadonlyArray<string>
  /** The text of each steering message, in log order (pi logs steering as user messages: empty there). */
  readonly steering: ReadonlyArray<string>
  /** Assistant messages with non-empty text content. */
  readonly textReplies: number
  /**
   * The text of each of those messages, in log order. Absent from a `--baseline` commit's adapter written before
   * ADR 0077: read it through {@link repliesOf}.
   */
  readonly replies?: ReadonlyArray<string>
  /** Tool results recorded. */
  readonly toolResults: number
  /** Entries retained in the log or state (Harness/reference: durable events; pi: messages). */
  readonly entries: number
  /** Harness and the ceiling: the type of every log entry, in order (what the ceiling's test compares). */
  readonly types?: ReadonlyArray<string> | undefined
}

/** A transcript being read from a runtime's log or state: each runtime's reader counts into one, entry by entry. */
export interface Tally {
  completedTurns: number
  abortedTurns: number
  textReplies: number
  toolResults: number
  readonly replies: Array<string>
  readonly prompts: Array<string>
  readonly steering: Array<string>
  readonly userTexts: Array<string>
}

/** An empty tally. */
export const tally = (): Tally => ({
  completedTurns: 0,
  abortedTurns: 0,
  textReplies: 0,
  toolResults: 0,
  replies: [],
  prompts: [],
  steering: [],
  userTexts: []
})

/** Counts an assistant message's text into `t` as a reply (a message without text is none). */
export const countReply = (t: Tally, text: string): void => {
  if (text === "") return
  t.textReplies++
  t.replies.push(text)
}

/** The text blocks of a message's content, joined (a plain string is its own text). */
export const textOf = (content: string | ReadonlyArray<{ readonly type: string; readonly text?: string }>): string =>
  typeof content === "string"
    ? content
    : content.flatMap((block) => (block.type === "text" && block.text !== undefined ? [block.text] : [])).join("")

/** One agent under test. */
export interface BenchAgent {
  /**
   * Queues `text` as its own turn and wakes the agent. Resolves once the runtime accepted it.
   * pi: `prompt()` when idle (its `followUp()` does not wake an idle agent), `followUp()` while running.
   */
  readonly followUp: (text: string) => Promise<void>
  /** Queues every text as its own turn in one synchronous burst (Harness: one Effect program). */
  readonly followUpAll: (texts: ReadonlyArray<string>) => Promise<void>
  /** Steers the running turn. */
  readonly steer: (text: string) => Promise<void>
  /** Cancels the running turn (and discards pending input where the runtime does that by default). */
  readonly cancel: () => Promise<void>
  /** Resolves when the agent has nothing left to do. */
  readonly waitIdle: () => Promise<void>
  /** Reads back the log or state. */
  readonly transcript: () => Promise<Transcript>
  /** Reports live observations to `listener` until the returned function is called. */
  readonly observe: (listener: (event: Observed) => void) => Promise<() => void>
  readonly dispose: () => Promise<void>
}

/** Options of one agent. */
export interface AgentOptions {
  readonly script: Script
  /** Registers the no-op tool `noop` (no parameters, returns "ok"). */
  readonly tools?: boolean | undefined
  /**
   * The script is one the loopback server serves, so an adapter with an OpenAI-compatible client takes the replies
   * from the server as SSE (the provider path, ADR 0057) instead of from `script`: `true` for the server's fixed
   * script (`SseServer.answerFor`: five tokens, or with tools a `noop` call then five tokens), a {@link Pacing} for
   * a text reply the server streams at that pace (Pace, Fleet: ADR 0077), whose `script` must be the same reply.
   */
  readonly served?: boolean | Pacing | undefined
}

/** A text reply of `tokens` tokens (`tokens(n)`) streamed at `tokensPerSecond`, the first at once. */
export interface Pacing {
  readonly tokens: number
  readonly tokensPerSecond: number
}

/** One runtime, booted in this process. */
export interface BenchRuntime {
  readonly name: BootName
  /** The peer's package and version, or Harness's commit, for the report. */
  readonly version: string
  readonly createAgent: (options: AgentOptions) => Promise<BenchAgent>
  /** A durable store (SQLite) for W6 and W7: only Harness has one; a runtime without it skips those workloads. */
  readonly store?: StoreBench | undefined
  readonly close: () => Promise<void>
}

/** What one W6 writer did: `turns` turns of {@link storeTurnEvents} events each, one durable commit per turn. */
export interface WriteRun {
  /** Wall µs per turn (the writes wait for the disk: wall, not CPU, is the figure). */
  readonly usPerTurn: number
  /** CPU µs per turn of this process over the same span. */
  readonly cpuUsPerTurn: number
  /** Events found in the file afterwards, read back by a fresh connection. */
  readonly stored: number
  /** Problems found reading the log back (`checkLog`, seq gaps), empty when none. */
  readonly problems: ReadonlyArray<string>
}

/** The events of one W6 / W7 turn: prompt, turn start, header, a tool step and a text step, turn end. */
export const storeTurnEvents = 14

/** The W6 writers, all on one SQLite file each, in WAL mode. */
export type Writer = "log" | "store" | "raw-normal" | "raw-full"

/** What a resumed W7 agent did. */
export interface Resumed {
  /** µs from the start of `open` to the agent built (the session log opened from its snapshot). */
  readonly openUs: number
  /** µs from the follow-up's send to the model's first request arriving. */
  readonly firstRequestUs: number
  /** µs from the start of `open` to the model's first request. */
  readonly totalUs: number
  /** CPU µs of this process over the open (and the agent's build), and from the send to the first request. */
  readonly openCpuUs: number
  readonly firstRequestCpuUs: number
  /** User texts in the first request (the whole history's prompts and the new one). */
  readonly requestUserTexts: number
  /** The last user text of the first request. */
  readonly lastUserText: string
  /** Whether the resumed turn completed. */
  readonly completed: boolean
  /** Whether the log was opened from a snapshot. */
  readonly fromSnapshot: boolean
}

/** The durable-store benches (W6, W7). */
export interface StoreBench {
  /** Writes `turns` W6 turns through `writer` into a new file in `dir`, then reads the file back. */
  readonly write: (writer: Writer, dir: string, turns: number) => Promise<WriteRun>
  /** Writes a session of `events` events (whole W6 turns) to a new SQLite file and opens it once (the snapshot). */
  readonly prepareLong: (file: string, events: number) => Promise<{ readonly turns: number }>
  /** Opens the session in `file` with a fresh store, builds an agent on it, sends `text`; times the first request. */
  readonly resume: (file: string, text: string) => Promise<Resumed>
}

/** The name of the tool every runtime registers when asked for tools. */
export const noopToolName = "noop"

/** The text of a reply with `n` tokens: "tok0 tok1 …". */
export const tokens = (n: number): ReadonlyArray<string> => Array.from({ length: n }, (_, k) => `tok${k} `)

/** The standard instant reply: 5 streamed tokens. */
export const fiveTokens: Reply = { _tag: "text", tokens: tokens(5) }

/** The instant text script, served by the loopback server on the provider path (`AgentOptions.served`). */
export const servedText: AgentOptions = { script: () => fiveTokens, served: true }

/** Waits for `promise`, or rejects with an abort error as soon as `signal` aborts. */
export const raceAbort = (promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> => {
  if (signal === undefined) return promise
  if (signal.aborted) return Promise.reject(abortError(signal))
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal))
    signal.addEventListener("abort", onAbort, { once: true })
    promise.then(
      () => {
        signal.removeEventListener("abort", onAbort)
        resolve()
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort)
        reject(error)
      }
    )
  })
}

const abortError = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new Error("aborted", { cause: signal.reason })

/** A transcript's replies; none from an adapter that does not record them (a baseline before ADR 0077). */
export const repliesOf = (transcript: Transcript): ReadonlyArray<string> => transcript.replies ?? []
