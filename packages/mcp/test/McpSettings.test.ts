import { assert, describe, it } from "@effect/vitest"
import { McpSettings } from "@harness/mcp"
import { Either } from "effect"

describe("the --mcp flag", () => {
  it("a URL is a Streamable HTTP server; anything else is a command line, split as a shell would", () => {
    assert.deepStrictEqual(
      McpSettings.parseFlag("web=http://127.0.0.1:3000/mcp"),
      Either.right(["web", { url: "http://127.0.0.1:3000/mcp" }] as const)
    )
    assert.deepStrictEqual(
      McpSettings.parseFlag(`fs=npx -y server "/my dir" it\\'s 'a b'`),
      Either.right(["fs", { command: "npx", args: ["-y", "server", "/my dir", "it's", "a b"] }] as const)
    )
  })

  it("refuses what it cannot use, naming the value and the forms it takes", () => {
    for (const bad of ["noequals", "bad name=x", "x=", "x=\"unbalanced"]) {
      const parsed = McpSettings.parseFlag(bad)
      assert.isTrue(Either.isLeft(parsed), bad)
      if (Either.isLeft(parsed)) {
        assert.strictEqual(parsed.left.reason, "InvalidConfig")
        assert.include(parsed.left.message, "--mcp <name>=<command line> or <name>=<url>")
      }
    }
  })
})

describe("the mcpServers settings", () => {
  it("decodes both kinds with their defaults; a misspelt key or a bad value names the entry", () => {
    const decoded = McpSettings.decodeServers({ a: { command: "node", args: ["s.js"] }, b: { url: "https://x/mcp" } })
    assert.isTrue(Either.isRight(decoded))
    if (Either.isRight(decoded)) {
      assert.deepStrictEqual(decoded.right.a, { command: "node", args: ["s.js"], approval: "required", tools: {} })
    }
    const misspelt = McpSettings.decodeServers({ a: { comand: "node" } })
    assert.isTrue(Either.isLeft(misspelt) && misspelt.left.server === "a")
    const badUrl = McpSettings.decodeServers({ b: { url: "ftp://x" } })
    assert.isTrue(Either.isLeft(badUrl) && badUrl.left.message.includes("mcpServers.b"))
    const badTimeout = McpSettings.decodeServers({ c: { command: "x", timeout: "soon" } })
    assert.isTrue(Either.isLeft(badTimeout) && badTimeout.left.message.includes("timeout"))
  })
})
