/** What the `harness mcp` tests do with an MCP SDK client, over stdio or Streamable HTTP alike. */
import { assert } from "@effect/vitest"
import { SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Effect, Schema } from "effect"

/** Calls a tool and parses its JSON answer; `isError` comes back beside it. */
export const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.promise(async () => {
    const result = await client.callTool({ name, arguments: args })
    const content = result.content as ReadonlyArray<{ readonly type: string; readonly text: string }>
    return { isError: result.isError === true, value: JSON.parse(content[0]!.text) as unknown }
  })

/** The `inbox` tool's answer as `[id, placement]` pairs, in the inbox's order. */
export const inboxPlacements = (client: Client) =>
  Effect.map(
    call(client, "inbox"),
    ({ value }) =>
      (value as ReadonlyArray<{ readonly id: string; readonly placement: string }>).map((item) => [
        item.id,
        item.placement
      ])
  )

/** The violations of the session-log rules in the events the `events` tool answered (from the start). */
export const wellFormed = (events: unknown) =>
  LogCheck.checkLog(Schema.decodeUnknownSync(Schema.Array(SessionEvent.SessionEvent))(events))

/** A user's text message, as a tool's `message` argument. */
export const message = (text: string) => ({ content: [{ type: "text", text }], source: { kind: "user" } })

/** Asks for the status until it is `wanted` (each ask is a round trip to the server; bounded). */
export const statusBecomes = (client: Client, wanted: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 2000; attempt++) {
      const { value } = yield* call(client, "status")
      if ((value as { readonly status: string }).status === wanted) return
    }
    assert.fail(`the status never became ${wanted}`)
  })
