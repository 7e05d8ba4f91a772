/**
 * Bytes and CPU per streamed chunk on the provider's path, Fleet's per-chunk cost measured apart from its pace:
 * `node --expose-gc --import tsx src/chunkProbe.ts [options]` (from `packages/bench`) runs agents whose turns stream
 * `--tokens` text deltas each through Harness's chat-completions provider (`@harness/llm` over
 * `NodeHttpClient.layerUndici`, as the CLI builds it) from a loopback SSE server in this process, and prints one
 * JSON line: bytes allocated, CPU µs and collections per streamed chunk over the measured turns.
 *
 * The server writes a response's frames one at a time in lockstep with the agent (the bytes of the bench's own
 * server, `SseServer.sseBody`): the role frame and the first delta, then the next delta once the agent has published
 * the previous one as an `assistant/chunk` event (a subscriber's fiber sees it), then the finish, usage and `[DONE]`
 * frames. So every delta arrives in a network read of its own and passes through the whole path on its own — as at
 * Fleet's pace, where 50 tokens a second never share a read — without a timer, so the figures do not depend on
 * the machine's load. The server, the subscriber and the driver are in the figures; they are the same before and after a change.
 *
 * Bytes allocated are exact: V8's heap size before each collection less its size after the one before (`v8.GCProfiler`),
 * plus the growth since the last one. `--sample` adds a window under V8's sampling heap profiler (collected objects
 * included) and prints its bytes per chunk by cause and by allocating function (run from source for that: a bundle
 * merges the files the causes are read from).
 *
 *   --tokens N   text deltas per turn, default 200 (Fleet's)
 *   --turns N    measured turns per agent, default 20
 *   --warm N     warm-up turns per agent, default 20
 *   --agents N   agents streaming at once, default 1
 *   --sample     also attribute the allocations (another `--turns` turns per agent)
 *
 * Under `valgrind --tool=callgrind` (instruction counts do not move with the machine's load), run a bundle of this
 * file (`docs/performance.md` has the commands) at two `--turns` and divide the difference of the totals by the
 * difference of the chunks: start-up and warm-up cancel.
 */
import type { HttpClient } from "@effect/platform"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Agent } from "@harness/agent"
import { Message } from "@harness/domain"
import { ChatCompletions } from "@harness/llm"
import { Effect, Exit, Layer, Queue, Scope } from "effect"
import { createServer, type ServerResponse } from "node:http"
import { Session } from "node:inspector/promises"
import type { AddressInfo } from "node:net"
import { parseArgs } from "node:util"
import { GCProfiler } from "node:v8"
import { collectGarbage, prompts } from "./Measure.js"
import { allocationSites, type HeapNode } from "./Profile.js"
import { tokens } from "./Runtime.js"
import { sseBody } from "./SseServer.js"

/** One response being written: the frames still to send, and the response. */
interface Pending {
  readonly frames: Array<string>
  readonly response: ServerResponse
}

/**
 * The lockstep server: `advance(agent)` writes the agent's next delta frame, and the closing frames with its last
 * one. Requests name their agent by their path (`/<agent>/v1/chat/completions`).
 */
const startServer = async (count: number) => {
  // The bench server's own bytes, one frame each: role, the deltas, finish, usage, `[DONE]`.
  const frames = sseBody({ _tag: "text", tokens: tokens(count) }).split(/(?<=\n\n)/)
  const tail = frames.slice(count + 1).join("")
  const pending = new Map<number, Pending>()
  const server = createServer((request, response) => {
    const agent = Number(/^\/(\d+)\//.exec(request.url ?? "")?.[1])
    request.resume()
    request.on("end", () => {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      response.write(frames[0]! + frames[1]!)
      pending.set(agent, { frames: frames.slice(2, count + 1), response })
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo // a TCP server's address
  const advance = (agent: number) => {
    const open = pending.get(agent)
    if (open === undefined) return
    const next = open.frames.shift()
    if (next !== undefined) open.response.write(next)
    else {
      pending.delete(agent)
      open.response.end(tail)
    }
  }
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return { url: (agent: number) => `http://127.0.0.1:${port}/${agent}/v1`, advance, close }
}

/** An agent on its own provider (its own path on the server), with a subscriber that advances the server. */
const makeAgent = (
  http: Layer.Layer<HttpClient.HttpClient>,
  url: string,
  onDelta: () => void
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const model = yield* Layer.buildWithScope(
      ChatCompletions.layer({ baseUrl: url, model: "bench" }).pipe(Layer.provide(http)),
      scope
    )
    const agent = yield* Agent.make({}).pipe(Effect.provide(model), Scope.extend(scope))
    const events = yield* Scope.extend(agent.subscribe, scope)
    yield* Queue.takeBetween(events, 1, Number.MAX_SAFE_INTEGER).pipe(
      Effect.map((batch) => {
        for (const event of batch) {
          if (event.type === "session/event" && event.event.type === "assistant/chunk") {
            const chunk = event.event.data.chunk
            if (typeof chunk === "object" && chunk !== null && "type" in chunk && chunk.type === "text-delta") onDelta()
          }
        }
      }),
      Effect.forever,
      Effect.forkIn(scope)
    )
    return {
      turn: (text: string) => Effect.runPromise(Effect.zipRight(agent.followup(Message.make(text)), agent.whenIdle)),
      dispose: () => Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

/** Exact bytes allocated over a profiler's window: each collection's heap before it less the heap after the last. */
const allocatedBytes = (startUsed: number, result: ReturnType<GCProfiler["stop"]>, endUsed: number) => {
  let bytes = 0
  let after = startUsed
  let scavenges = 0
  let full = 0
  let pauseUs = 0
  for (const gc of result?.statistics ?? []) {
    bytes += gc.beforeGC.heapStatistics.usedHeapSize - after
    after = gc.afterGC.heapStatistics.usedHeapSize
    pauseUs += gc.cost
    if (gc.gcType === "Scavenge") scavenges++
    else full++
  }
  return { bytes: bytes + endUsed - after, scavenges, full, pauseUs }
}

const usedHeap = () => process.memoryUsage().heapUsed

const main = async () => {
  const { values } = parseArgs({
    options: {
      tokens: { type: "string", default: "200" },
      turns: { type: "string", default: "20" },
      warm: { type: "string", default: "20" },
      agents: { type: "string", default: "1" },
      sample: { type: "boolean", default: false }
    }
  })
  const [count, turns, warm, agentCount] = [values.tokens, values.turns, values.warm, values.agents].map(Number)
  for (const n of [count, turns, agentCount]) {
    if (!Number.isInteger(n) || n! < 1) throw new Error("--tokens, --turns and --agents must be positive integers")
  }
  const server = await startServer(count!)
  const http = NodeHttpClient.layerUndici
  const agents = await Promise.all(
    Array.from(
      { length: agentCount! },
      (_, i) => Effect.runPromise(makeAgent(http, server.url(i), () => server.advance(i)))
    )
  )
  // Each agent's turns one after another, the agents at once.
  const run = (prefix: string, n: number) =>
    Promise.all(agents.map(async (agent, i) => {
      for (const text of prompts(`${prefix}${i}-`, n)) await agent.turn(text)
    }))
  await run("warm-", warm!)
  await collectGarbage()
  const chunks = turns! * count! * agentCount!
  const profiler = new GCProfiler()
  const startUsed = usedHeap()
  const cpu = process.cpuUsage()
  profiler.start()
  await run("probe-", turns!)
  const result = profiler.stop()
  const used = process.cpuUsage(cpu)
  const allocated = allocatedBytes(startUsed, result, usedHeap())
  let sampled: object | undefined
  if (values.sample) {
    await collectGarbage()
    const session = new Session()
    session.connect()
    await session.post("HeapProfiler.enable")
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 256,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true
    })
    await run("sample-", turns!)
    const { profile } = await session.post("HeapProfiler.stopSampling")
    session.disconnect()
    const sites = allocationSites(profile.head as HeapNode) // V8's SamplingHeapProfileNode, typed loosely by @types/node
    const perChunk = (bytes: number) => Math.round(bytes / chunks)
    sampled = {
      bytesPerChunk: perChunk(sites.totalBytes),
      byCause: Object.fromEntries(sites.byCause.map(([cause, bytes]) => [cause, perChunk(bytes)])),
      topSites: sites.topFunctions.map((site) => `${perChunk(site.bytes)} B ${site.name}`)
    }
  }
  for (const agent of agents) await agent.dispose()
  await server.close()
  process.stdout.write(
    `${
      JSON.stringify({
        tokens: count,
        turns,
        agents: agentCount,
        chunks,
        bytesPerChunk: Math.round(allocated.bytes / chunks),
        cpuUsPerChunk: Number(((used.user + used.system) / chunks).toFixed(2)),
        scavengesPer1000Chunks: Number(((1000 * allocated.scavenges) / chunks).toFixed(2)),
        fullGcs: allocated.full,
        gcPauseUsPerChunk: Number((allocated.pauseUs / chunks).toFixed(2)),
        ...(sampled === undefined ? {} : { sampled })
      })
    }\n`
  )
}

// A failure ends the process with its error (status 1); success exits at once, whatever sockets are still open.
await main()
process.exit(0)
