/**
 * Measuring instruments shared by the workloads: a clock in microseconds, forced garbage collection and heap
 * readings, percentiles and medians, small promise gates for scripts that must wait for the workload, and a model
 * that streams at a set pace.
 */
import { setImmediate as nextMacrotask } from "node:timers/promises"
import type { AgentOptions, BenchAgent, BenchRuntime, Reply, Transcript } from "./Runtime.js"
import { servedText, tokens } from "./Runtime.js"

/** The current time in microseconds (monotonic, sub-microsecond resolution). */
export const nowUs = (): number => performance.now() * 1000

/** The CPU time this process has used so far (user + system), in microseconds. */
export const cpuUs = (): number => {
  const { system, user } = process.cpuUsage()
  return user + system
}

/**
 * Collects garbage until the heap stops shrinking (at most 6 rounds), letting pending callbacks run in between.
 *
 * Contract: fails when the process was not started with `--expose-gc`; memory figures without a forced collection
 * would measure the collector's schedule, not what the runtime retains.
 */
export const collectGarbage = async (): Promise<void> => {
  const gc = globalThis.gc
  if (gc === undefined) throw new Error("run the bench process with node --expose-gc")
  let previous = Number.POSITIVE_INFINITY
  for (let round = 0; round < 6; round++) {
    await nextMacrotask()
    gc()
    const used = process.memoryUsage().heapUsed
    if (used >= previous) return
    previous = used
  }
}

/** Heap used and resident set size after a forced collection, in bytes. */
export const memoryAfterGc = async (): Promise<{ readonly heap: number; readonly rss: number }> => {
  await collectGarbage()
  const usage = process.memoryUsage()
  return { heap: usage.heapUsed, rss: usage.rss }
}

/** The `q`-quantile (0..1) of `values`, by nearest rank. */
export const quantile = (values: ReadonlyArray<number>, q: number): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

/** The median of `values` (the mean of the middle two for an even count). */
export const median = (values: ReadonlyArray<number>): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The arithmetic mean of `values`. */
export const mean = (values: ReadonlyArray<number>): number =>
  values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length

/** The mean per-turn cost over the first and over the last 10 % of a session's turns, and the last ÷ the first. */
export const tenths = (
  durations: ReadonlyArray<number>
): { readonly first: number; readonly last: number; readonly growth: number } => {
  const tenth = Math.max(1, Math.floor(durations.length / 10))
  const first = mean(durations.slice(0, tenth))
  const last = mean(durations.slice(-tenth))
  return { first, last, growth: last / first }
}

/** A promise with its resolver, opened from outside. */
export interface Gate {
  readonly promise: Promise<void>
  readonly open: () => void
}

/** A gate that is closed until `open()` is called. */
export const gate = (): Gate => {
  let open: () => void = () => undefined
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

/**
 * A new promise that never settles: a model that never answers, until the request is cancelled. New per request, as a
 * real request's promise is: a callback attached to a promise is released only with the promise, so one shared
 * never-settling promise kept every cancelled request's continuation — and the fiber or closure behind it — for the
 * rest of the run (6 KB per cancel on Harness, 2.9 KB on pi, 2026-12-04).
 */
export const never = (): Promise<void> => new Promise<void>(() => undefined)

/** The prompt texts `prefix0 … prefix{n-1}`. */
export const prompts = (prefix: string, n: number): ReadonlyArray<string> =>
  Array.from({ length: n }, (_, i) => `${prefix}${i}`)

/**
 * Runs `n` sequential turns on a throwaway agent built with the workload's options, so the measured code runs
 * JIT-compiled from its first turn (the 10 % figures of W1 would otherwise measure the compiler).
 */
export const warmUp = async (
  runtime: BenchRuntime,
  options: AgentOptions = servedText,
  n = 300
): Promise<void> => {
  const agent = await runtime.createAgent(options)
  for (let i = 0; i < n; i++) {
    await agent.followUp(`warm-up ${i}`)
    await agent.waitIdle()
  }
  await agent.dispose()
}

/** Runs one follow-up to idle per text, returning each turn's duration in µs. */
export const sequentialTurns = async (agent: BenchAgent, texts: ReadonlyArray<string>): Promise<Array<number>> => {
  const durations: Array<number> = []
  for (const text of texts) {
    const start = nowUs()
    await agent.followUp(text)
    await agent.waitIdle()
    durations.push(nowUs() - start)
  }
  return durations
}

/** Runs `f`: its value, and the wall time and the process's CPU time it took (µs). */
export const timed = async <A>(f: () => Promise<A>) => {
  const cpuStart = cpuUs()
  const start = nowUs()
  const value = await f()
  const elapsedUs = nowUs() - start
  return { value, elapsedUs, cpuUs: cpuUs() - cpuStart }
}

/** Reads `agent`'s transcript, then disposes of it. */
export const finish = async (agent: BenchAgent): Promise<Transcript> => {
  const transcript = await agent.transcript()
  await agent.dispose()
  return transcript
}

/**
 * Resolves once `condition()` holds, checking after each macrotask; resolves anyway after `timeoutMs` (the caller's
 * check then reports what is missing). For observations that arrive after the runtime reports idle, as events
 * delivered through a subscriber's own fiber do.
 */
export const waitUntil = async (condition: () => boolean, timeoutMs = 2000): Promise<void> => {
  const deadline = nowUs() + timeoutMs * 1000
  while (!condition() && nowUs() < deadline) await nextMacrotask()
}

/** Resolves at `atUs` on the {@link nowUs} clock (at once when that time has passed). */
export const sleepUntil = (atUs: number): Promise<void> =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, (atUs - nowUs()) / 1000)))

/**
 * A reply of `count` tokens streamed at `tokensPerSecond`, the schedule drift-free from its first token, and the
 * model's clock: `start` when the first token was asked for, `end` when the last one was due (µs, 0 until then).
 */
export const pacedReply = (
  count: number,
  tokensPerSecond: number
): { readonly reply: Reply; readonly model: { start: number; end: number } } => {
  const model = { start: 0, end: 0 }
  const reply: Reply = {
    _tag: "text",
    tokens: tokens(count),
    wait: (k) => {
      if (k === 0) {
        model.start = nowUs()
        return undefined
      }
      const due = sleepUntil(model.start + (k * 1e6) / tokensPerSecond)
      return k === count - 1 ? due.then(() => void (model.end = nowUs())) : due
    }
  }
  return { reply, model }
}
