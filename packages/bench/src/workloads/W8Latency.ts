/**
 * W8 latency, as an observer of the runtime's own events sees it:
 * - send → dequeue on an idle agent (the follow-up is taken to run);
 * - turn end → dequeue of a follow-up queued behind a running turn (the hand-off between turns);
 * - cancel → `turn/end { aborted }` while the model has not answered yet;
 * - cancel → `turn/end { aborted }` while the model streams (one token per millisecond).
 *
 * Measured in steady state, the same way on every runtime: before the measured agent, each phase runs
 * `warmRepetitions` times on a throwaway agent of its own (so the measured session is as long as without a warm-up).
 * The W1-style warm-up never runs a cancel, and V8 optimises a function only once it has run often enough: a cancel
 * path of many small functions, each run once per cancel, is still being compiled after hundreds of cancels, and
 * compiles finished on the main thread (or compiler threads competing with it for two cores) stall single cancels for
 * milliseconds. The waiting cancels of the first warm-up agent, before any warm-up of their own, are reported as
 * "cold", so what the warm-up hides stays visible.
 */
import { type Gate, gate, never, nowUs, quantile, waitUntil, warmUp } from "../Measure.js"
import type { BenchAgent, BenchRuntime, Observed, Reply } from "../Runtime.js"
import { fiveTokens, tokens } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { checkEqual } from "../Workload.js"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

type Phase = "idle" | "handoff" | "hanging" | "streaming"
const phases: ReadonlyArray<Phase> = ["idle", "handoff", "hanging", "streaming"]

/** Unmeasured repetitions of each phase before the measured ones (see the module's comment). */
const warmRepetitions = { full: 1000, quick: 300, smoke: 0 } as const

/** One agent with the W8 script and an observer; `run` plays a phase `n` times and returns its samples (µs). */
const session = async (runtime: BenchRuntime) => {
  let phase: Phase = "idle"
  let started: Gate = gate()
  let release: Gate = gate()
  let hold = false
  const streaming: Reply = {
    _tag: "text",
    tokens: tokens(10_000),
    wait: (k) => {
      if (k === 3) started.open()
      return k === 0 ? undefined : sleep(1)
    }
  }
  const agent: BenchAgent = await runtime.createAgent({
    script: () => {
      switch (phase) {
        case "idle":
          return fiveTokens
        case "handoff":
          // The held turn's request waits for the workload; the queued turn's request is instant.
          if (!hold) return fiveTokens
          hold = false
          return { ...fiveTokens, wait: (k) => (k === 0 ? (started.open(), release.promise) : undefined) }
        case "hanging":
          return { ...fiveTokens, wait: (k) => (k === 0 ? (started.open(), never()) : undefined) }
        case "streaming":
          return streaming
      }
    }
  })
  const dequeued = new Map<string, number>()
  const turnEnds: Array<{ readonly at: number; readonly aborted: boolean }> = []
  const stop = await agent.observe((event: Observed) => {
    const at = nowUs()
    if (event._tag === "dequeued") dequeued.set(event.text, at)
    else turnEnds.push({ at, aborted: event.aborted })
  })
  const run = async (which: Phase, n: number): Promise<Array<number>> => {
    phase = which
    const samples: Array<number> = []
    for (let i = 0; i < n; i++) {
      switch (which) {
        case "idle": {
          const text = `idle ${i}`
          const sent = nowUs()
          await agent.followUp(text)
          await agent.waitIdle()
          await waitUntil(() => dequeued.has(text))
          samples.push((dequeued.get(text) ?? Number.NaN) - sent)
          break
        }
        case "handoff": {
          started = gate()
          release = gate()
          hold = true
          await agent.followUp(`held ${i}`)
          await started.promise
          const next = `queued ${i}`
          await agent.followUp(next)
          const ends = turnEnds.length
          release.open()
          await agent.waitIdle()
          await waitUntil(() => dequeued.has(next) && turnEnds.length > ends)
          const heldEnd = turnEnds[ends]
          samples.push((dequeued.get(next) ?? Number.NaN) - (heldEnd?.at ?? Number.NaN))
          break
        }
        case "hanging":
        case "streaming": {
          started = gate()
          await agent.followUp(`${which} ${i}`)
          await started.promise
          const ends = turnEnds.length
          const cancelled = nowUs()
          await agent.cancel()
          await agent.waitIdle()
          await waitUntil(() => turnEnds.slice(ends).some((e) => e.aborted))
          const end = turnEnds.slice(ends).find((e) => e.aborted)
          samples.push((end?.at ?? Number.NaN) - cancelled)
          break
        }
      }
    }
    return samples
  }
  const close = async () => {
    stop()
    const transcript = await agent.transcript()
    await agent.dispose()
    return transcript
  }
  return { run, close }
}

export const W8: Workload = {
  id: "W8",
  title: "latency",
  description: "p50/p99 of send → dequeue (idle), turn end → next dequeue (busy), cancel → turn/end aborted",
  sizes: { full: 300, quick: 100, smoke: 3 },
  metrics: [
    { id: "dequeueIdleP50", label: "send → dequeue, idle, p50", unit: "µs", better: "lower", headline: true },
    { id: "dequeueIdleP99", label: "send → dequeue, idle, p99", unit: "µs", better: "lower" },
    { id: "handoffP50", label: "turn end → next dequeue, busy, p50", unit: "µs", better: "lower" },
    { id: "handoffP99", label: "turn end → next dequeue, busy, p99", unit: "µs", better: "lower" },
    { id: "cancelWaitingP50", label: "cancel → turn/end aborted, model waiting, p50", unit: "µs", better: "lower" },
    {
      id: "cancelWaitingP99",
      label: "cancel → turn/end aborted, model waiting, p99",
      unit: "µs",
      better: "lower",
      headline: true
    },
    { id: "cancelStreamingP50", label: "cancel → turn/end aborted, streaming, p50", unit: "µs", better: "lower" },
    { id: "cancelStreamingP99", label: "cancel → turn/end aborted, streaming, p99", unit: "µs", better: "lower" },
    {
      id: "cancelWaitingColdP99",
      label: "cancel → turn/end aborted, model waiting, p99, cold (before its warm-up)",
      unit: "µs",
      better: "lower"
    }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const warm = warmRepetitions[size]
    // The first N waiting cancels of the warm-up, in the order an unwarmed run would meet them (after the idle and
    // hand-off phases); at the smoke size, the measured ones.
    let cold: ReadonlyArray<number> = []
    if (warm > 0) {
      for (const phase of phases) {
        const throwaway = await session(runtime)
        const samples = await throwaway.run(phase, warm)
        if (phase === "hanging") cold = samples.slice(0, n)
        await throwaway.close()
      }
    }
    const measuredSession = await session(runtime)
    const idle = await measuredSession.run("idle", n)
    const handoff = await measuredSession.run("handoff", n)
    const cancelWaiting = await measuredSession.run("hanging", n)
    const cancelStreaming = await measuredSession.run("streaming", n)
    const transcript = await measuredSession.close()
    if (warm === 0) cold = cancelWaiting
    const measured = (samples: ReadonlyArray<number>) => samples.filter(Number.isFinite).length
    return {
      figures: {
        dequeueIdleP50: quantile(idle, 0.5),
        dequeueIdleP99: quantile(idle, 0.99),
        handoffP50: quantile(handoff, 0.5),
        handoffP99: quantile(handoff, 0.99),
        cancelWaitingP50: quantile(cancelWaiting, 0.5),
        cancelWaitingP99: quantile(cancelWaiting, 0.99),
        cancelStreamingP50: quantile(cancelStreaming, 0.5),
        cancelStreamingP99: quantile(cancelStreaming, 0.99),
        cancelWaitingColdP99: quantile(cold, 0.99)
      },
      checks: [
        checkEqual("idle dequeues observed", measured(idle), n),
        checkEqual("hand-offs observed", measured(handoff), n),
        checkEqual("aborted turn ends observed (model waiting)", measured(cancelWaiting), n),
        checkEqual("aborted turn ends observed (streaming)", measured(cancelStreaming), n),
        checkEqual("aborted turns in the log", transcript.abortedTurns, 2 * n),
        checkEqual("completed turns in the log", transcript.completedTurns, 3 * n)
      ]
    }
  }
}
