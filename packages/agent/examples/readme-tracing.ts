import { NodeSdk } from "@effect/opentelemetry"
import { Agent } from "@harness/agent"
import { Message } from "@harness/domain"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect } from "effect"

/** One turn under an OpenTelemetry tracer that exports to memory; returns the spans it exported. */
export const tracedTurn = Effect.gen(function*() {
  const exporter = new InMemorySpanExporter()
  const tracing = NodeSdk.layer(() => ({
    resource: { serviceName: "my-agent" },
    spanProcessor: new SimpleSpanProcessor(exporter)
  }))
  return yield* Effect.gen(function*() {
    yield* Effect.scoped(Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "deepseek-v4-flash" })
      yield* agent.followup(Message.make("hello"))
      yield* agent.whenIdle
    }))
    // Read before the tracing layer closes: shutting the exporter down empties it.
    return exporter.getFinishedSpans()
  }).pipe(Effect.provide(tracing))
})
