/**
 * Where a runtime spends its time and memory per turn, grouped by cause. Profiles are taken in-process with the
 * V8 inspector (the same profilers as `node --cpu-prof` and `--heap-prof`), only around the measured turns:
 *
 * - CPU: sampled self time of W1-style turns, each sample attributed to a cause by walking its stack (see
 *   {@link classify});
 * - allocation: V8's sampling heap profiler with collected objects included, so it counts every byte allocated
 *   per turn, not only what survives, attributed the same way;
 * - retention: heap snapshots before and after creating idle agents (W3), the new objects grouped by type.
 */
import { Session } from "node:inspector/promises"
import { collectGarbage, nowUs, prompts, sequentialTurns } from "./Measure.js"
import type { BenchRuntime } from "./Runtime.js"
import { servedText } from "./Runtime.js"

/** The CPU sampling interval: finer sampling slows the turns it measures. */
const samplingUs = 250

/** A V8 call frame. */
interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}

/** A node of a CPU profile (`Profiler.stop`). */
interface CpuNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

/** A CPU profile as V8 returns it (and `--cpu-prof` writes it). */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<CpuNode>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** A node of a sampling heap profile. */
export interface HeapNode {
  readonly callFrame: CallFrame
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapNode>
}

/** The causes a sample is attributed to, in report order. */
const causes = [
  "Effect interpreter / fiber runtime",
  "Effect Stream / Channel machinery",
  "Schema decode/validate run by the interpreter",
  "@effect/ai LanguageModel (request building, part decoding)",
  "@effect/ai Prompt / Response / Tool schemas",
  "session append / validation / history",
  "agent: turn, driver, lock, publish",
  "domain schemas and constructors",
  "provider: HTTP client, SSE and chunk decoding",
  "model script and bench driver",
  "Effect data structures and utilities",
  "Node / V8 builtins and promises",
  "GC",
  "program (V8 native, unattributed)",
  "idle"
] as const
type Cause = (typeof causes)[number]

const interpreterFiles =
  /\/effect\/dist\/esm\/internal\/(fiberRuntime|core|core-effect|runtime|scheduler|fiber|fiberRefs|fiberScope|effectable|deferred|queue|pubsub|ref|synchronizedRef|effect\/circular|layer|context|clock)\.js$/
const streamFiles = /\/effect\/dist\/esm\/internal\/(stream|core-stream|channel|sink|take|stream\/.*|channel\/.*)\.js$/
const schemaFiles = /\/effect\/dist\/esm\/(Schema|ParseResult|SchemaAST|internal\/schema\/.*)\.js$/

const areaOf = (frame: CallFrame): Cause | "interpreter" | "pass" => {
  const url = frame.url
  if (url.includes("/packages/session/")) return "session append / validation / history"
  if (url.includes("/packages/agent/")) return "agent: turn, driver, lock, publish"
  if (url.includes("/packages/domain/")) return "domain schemas and constructors"
  if (
    url.includes("/packages/llm/") || url.includes("/@effect/platform") || url.includes("/@effect/experimental/") ||
    url.includes("/undici/")
  ) return "provider: HTTP client, SSE and chunk decoding"
  if (url.includes("/packages/bench/") || url.includes("/packages/testkit/")) return "model script and bench driver"
  if (url.includes("/@effect/ai/")) {
    return /\/LanguageModel\.js$/.test(url)
      ? "@effect/ai LanguageModel (request building, part decoding)"
      : "@effect/ai Prompt / Response / Tool schemas"
  }
  if (interpreterFiles.test(url)) return "interpreter"
  return "pass"
}

/**
 * Attributes a stack (leaf first) to a cause: the nearest frame from a known area (Harness's packages, @effect/ai,
 * the bench) wins; when the walk reaches the Effect interpreter first, nobody in user land called the leaf
 * directly, so the leaf's own file decides (Schema work, Stream machinery, data structures or the interpreter).
 */
const classify = (stack: ReadonlyArray<CallFrame>): Cause => {
  const leaf = stack[0]
  if (leaf === undefined) return "program (V8 native, unattributed)"
  if (leaf.functionName === "(garbage collector)") return "GC"
  if (leaf.functionName === "(idle)") return "idle"
  if (leaf.functionName === "(program)") return "program (V8 native, unattributed)"
  for (const frame of stack) {
    const area = areaOf(frame)
    if (area === "pass") continue
    if (area !== "interpreter") return area
    break
  }
  const url = leaf.url
  if (schemaFiles.test(url)) return "Schema decode/validate run by the interpreter"
  if (streamFiles.test(url)) return "Effect Stream / Channel machinery"
  if (interpreterFiles.test(url)) return "Effect interpreter / fiber runtime"
  if (url.includes("/effect/dist/")) return "Effect data structures and utilities"
  return "Node / V8 builtins and promises"
}

/** Self time per cause (µs) and the top functions by self time. */
interface CpuBreakdown {
  readonly totalUs: number
  readonly byCause: ReadonlyArray<readonly [Cause, number]>
  readonly topFunctions: ReadonlyArray<{ readonly name: string; readonly cause: Cause; readonly us: number }>
}

const frameName = (frame: CallFrame): string => {
  const file = frame.url.replace(/^.*\/node_modules\//, "").replace(/^.*\/packages\//, "packages/").replace(
    /^file:\/\//,
    ""
  )
  return `${frame.functionName === "" ? "(anonymous)" : frame.functionName} ${file}:${frame.lineNumber + 1}`
}

/** Attributes a CPU profile's self time. */
const cpuBreakdown = (profile: CpuProfile): CpuBreakdown => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const stackOf = (id: number): Array<CallFrame> => {
    const stack: Array<CallFrame> = []
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at)
      if (node !== undefined && node.callFrame.functionName !== "(root)") stack.push(node.callFrame)
    }
    return stack
  }
  const self = new Map<number, number>()
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const byCause = new Map<Cause, number>()
  const byFunction = new Map<string, { name: string; cause: Cause; us: number }>()
  let totalUs = 0
  for (const [id, us] of self) {
    const stack = stackOf(id)
    // The profiler's own work (serialising the profile at `Profiler.stop`) is not the runtime's.
    if (stack.some((frame) => frame.url === "node:inspector")) continue
    const cause = classify(stack)
    totalUs += us
    byCause.set(cause, (byCause.get(cause) ?? 0) + us)
    const name = stack[0] === undefined ? "(root)" : frameName(stack[0])
    const entry = byFunction.get(name) ?? { name, cause, us: 0 }
    entry.us += us
    byFunction.set(name, entry)
  }
  return {
    totalUs,
    byCause: causes.flatMap((cause) => (byCause.has(cause) ? [[cause, byCause.get(cause)!] as const] : [])),
    topFunctions: [...byFunction.values()].sort((a, b) => b.us - a.us).slice(0, 25)
  }
}

/** Bytes allocated per cause in a sampling heap profile, and the functions that allocated most (self bytes). */
export const allocationSites = (
  root: HeapNode
): {
  readonly totalBytes: number
  readonly byCause: ReadonlyArray<readonly [Cause, number]>
  readonly topFunctions: ReadonlyArray<{ readonly name: string; readonly cause: Cause; readonly bytes: number }>
} => {
  const byCause = new Map<Cause, number>()
  const byFunction = new Map<string, { name: string; cause: Cause; bytes: number }>()
  let totalBytes = 0
  const visit = (node: HeapNode, stack: ReadonlyArray<CallFrame>) => {
    const here = node.callFrame.functionName === "(root)" ? stack : [node.callFrame, ...stack]
    if (node.selfSize > 0) {
      const cause = classify(here)
      byCause.set(cause, (byCause.get(cause) ?? 0) + node.selfSize)
      totalBytes += node.selfSize
      const name = here[0] === undefined ? "(root)" : frameName(here[0])
      const entry = byFunction.get(name) ?? { name, cause, bytes: 0 }
      entry.bytes += node.selfSize
      byFunction.set(name, entry)
    }
    for (const child of node.children) visit(child, here)
  }
  visit(root, [])
  return {
    totalBytes,
    byCause: causes.flatMap((cause) => (byCause.has(cause) ? [[cause, byCause.get(cause)!] as const] : [])),
    topFunctions: [...byFunction.values()].sort((a, b) => b.bytes - a.bytes).slice(0, 30)
  }
}

/** Objects a heap snapshot holds that an earlier one did not, grouped by type and constructor. */
interface RetainedBreakdown {
  readonly totalBytes: number
  readonly totalObjects: number
  readonly byType: ReadonlyArray<{ readonly name: string; readonly bytes: number; readonly count: number }>
}

interface Snapshot {
  readonly snapshot: {
    readonly meta: { readonly node_fields: ReadonlyArray<string>; readonly node_types: ReadonlyArray<unknown> }
  }
  readonly nodes: ReadonlyArray<number>
  readonly strings: ReadonlyArray<string>
}

const takeSnapshot = async (session: Session): Promise<Snapshot> => {
  const chunks: Array<string> = []
  const onChunk = (message: { readonly params: { readonly chunk: string } }) => void chunks.push(message.params.chunk)
  session.on("HeapProfiler.addHeapSnapshotChunk", onChunk)
  await session.post("HeapProfiler.takeHeapSnapshot", { reportProgress: false })
  session.off("HeapProfiler.addHeapSnapshotChunk", onChunk)
  return JSON.parse(chunks.join("")) as Snapshot // V8's documented heap snapshot format
}

const snapshotNodes = function*(snapshot: Snapshot) {
  const fields = snapshot.snapshot.meta.node_fields
  const types = snapshot.snapshot.meta.node_types[0]
  const typeNames: ReadonlyArray<string> = Array.isArray(types) ? types.map(String) : []
  const width = fields.length
  const [typeAt, nameAt, idAt, sizeAt] = ["type", "name", "id", "self_size"].map((f) => fields.indexOf(f))
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    yield {
      type: typeNames[snapshot.nodes[i + typeAt!]!] ?? "?",
      name: snapshot.strings[snapshot.nodes[i + nameAt!]!] ?? "?",
      id: snapshot.nodes[i + idAt!]!,
      size: snapshot.nodes[i + sizeAt!]!
    }
  }
}

/**
 * Native and synthetic nodes (backing stores, roots) carry ids derived from addresses, not from the profiler's
 * counter; they are left out of the comparison.
 */
const ordinary = (type: string): boolean => type !== "native" && type !== "synthetic"

/** The highest object id in a snapshot. V8 numbers objects in the order the heap profiler first sees them. */
const maxId = (snapshot: Snapshot): number => {
  let max = 0
  for (const node of snapshotNodes(snapshot)) if (ordinary(node.type)) max = Math.max(max, node.id)
  return max
}

/**
 * Objects in `after` with ids above `knownUpTo` (created after the first snapshot). Only the first snapshot's
 * highest id is kept, so the first snapshot itself is garbage by the time the second is taken.
 */
const retainedBreakdown = (knownUpTo: number, after: Snapshot): RetainedBreakdown => {
  const groups = new Map<string, { name: string; bytes: number; count: number }>()
  let totalBytes = 0
  let totalObjects = 0
  for (const node of snapshotNodes(after)) {
    if (!ordinary(node.type) || node.id <= knownUpTo || node.size === 0) continue
    const name = node.type === "object" || node.type === "closure"
      ? node.type === "closure" ? `closure ${node.name === "" ? "(anonymous)" : node.name}` : node.name
      : `(${node.type})`
    const group = groups.get(name) ?? { name, bytes: 0, count: 0 }
    group.bytes += node.size
    group.count++
    groups.set(name, group)
    totalBytes += node.size
    totalObjects++
  }
  return { totalBytes, totalObjects, byType: [...groups.values()].sort((a, b) => b.bytes - a.bytes).slice(0, 20) }
}

/** Everything one profile run found. */
export interface ProfileResult {
  readonly runtime: string
  readonly turns: number
  readonly agents: number
  readonly usPerTurnProfiled: number
  readonly cpu: CpuBreakdown
  readonly allocation: {
    readonly turns: number
    readonly totalBytes: number
    readonly byCause: ReadonlyArray<readonly [Cause, number]>
  }
  readonly retained: RetainedBreakdown
}

/**
 * Profiles `runtime`: CPU over `turns` sequential turns, allocation over `turns / 4` more, and the heap of
 * `agents` idle agents. Returns the breakdowns and the raw CPU profile (for DevTools).
 */
export const profile = async (
  runtime: BenchRuntime,
  options: { readonly turns: number; readonly agents: number; readonly log: (line: string) => void }
): Promise<{ readonly result: ProfileResult; readonly cpuProfile: CpuProfile }> => {
  const session = new Session()
  session.connect()

  options.log(`cpu: ${options.turns} turns`)
  const cpuAgent = await runtime.createAgent(servedText)
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: samplingUs })
  await collectGarbage()
  const start = nowUs()
  await session.post("Profiler.start")
  await sequentialTurns(cpuAgent, prompts("cpu-", options.turns))
  const { profile: cpuProfile } = await session.post("Profiler.stop")
  const usPerTurnProfiled = (nowUs() - start) / options.turns
  await cpuAgent.dispose()
  await session.post("Profiler.disable")

  const allocationTurns = Math.max(1, Math.floor(options.turns / 4))
  options.log(`allocation: ${allocationTurns} turns`)
  const allocAgent = await runtime.createAgent(servedText)
  await collectGarbage()
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  })
  await sequentialTurns(allocAgent, prompts("alloc-", allocationTurns))
  const { profile: heapProfile } = await session.post("HeapProfiler.stopSampling")
  await allocAgent.dispose()
  // V8's SamplingHeapProfileNode, typed loosely by @types/node
  const { byCause, totalBytes } = allocationSites(heapProfile.head as HeapNode)

  options.log(`retention: ${options.agents} idle agents`)
  await collectGarbage()
  const knownUpTo = maxId(await takeSnapshot(session))
  const agents = []
  for (let i = 0; i < options.agents; i++) {
    const agent = await runtime.createAgent(servedText)
    await agent.followUp(`agent ${i}`)
    await agent.waitIdle()
    agents.push(agent)
  }
  await collectGarbage()
  const after = await takeSnapshot(session)
  const retained = retainedBreakdown(knownUpTo, after)
  for (const agent of agents) await agent.dispose()
  await session.post("HeapProfiler.disable")
  session.disconnect()

  return {
    result: {
      runtime: runtime.name,
      turns: options.turns,
      agents: options.agents,
      usPerTurnProfiled,
      cpu: cpuBreakdown(cpuProfile as CpuProfile), // @types/node's Profiler.Profile, the same shape
      allocation: { turns: allocationTurns, totalBytes, byCause },
      retained
    },
    cpuProfile: cpuProfile as CpuProfile
  }
}
