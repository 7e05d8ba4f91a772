import { Tool } from "@effect/ai"
import { AgentTool } from "@harness/agent"
import { Effect, Schema } from "effect"
import { readFile } from "node:fs/promises"

/** Reads the README; a failed read is the tool's typed failure, which the model reads as an error result. */
export const readme = AgentTool.make(
  Tool.make("read_readme", { description: "Reads the README", success: Schema.String, failure: Schema.String }),
  {
    handler: () =>
      Effect.tryPromise({
        try: () => readFile("README.md", "utf8"),
        catch: (error) => `cannot read README.md: ${String(error)}`
      }),
    parallel: true
  }
)
