/**
 * The store table as the settings use it: every store a `--store` names is shown so that the same `--store` finds
 * it again (what a printed follow-up command relies on), each store is recognised by its own syntax only, and a
 * `--store` no row recognises is refused with every store's example.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Redacted } from "effect"
import * as Settings from "../src/Settings.js"

const parse = (text: string) =>
  Settings.parseStore(text, "/work/project", "--store").pipe(Effect.provide(NodeContext.layer))

/** A location as plain data (a PostgreSQL URL's text instead of its `Redacted`). */
const plain = (location: Settings.StoreLocation) =>
  location._tag === "postgres" ? { ...location, url: Redacted.value(location.url) } : location

describe("settings: the store table", () => {
  it.effect("each store is recognised by its own syntax, and shown so that the same --store finds it again", () =>
    Effect.gen(function*() {
      const texts = ["sqlite:data/s.db", "jsonl:/var/sessions", "postgres://harness@db.example:5432/sessions", "memory"]
      const locations = yield* Effect.forEach(texts, parse)
      assert.deepStrictEqual(locations.map(plain), [
        { _tag: "sqlite", filename: "/work/project/data/s.db" },
        { _tag: "jsonl", directory: "/var/sessions" },
        { _tag: "postgres", url: "postgres://harness@db.example:5432/sessions" },
        { _tag: "memory" }
      ])
      const again = yield* Effect.forEach(locations, (location) => parse(Settings.showStore(location)))
      assert.deepStrictEqual(again.map(plain), locations.map(plain))
    }))

  it.effect("a --store no row recognises, or one a row cannot use, is refused with every store's example", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.forEach(
        ["mysql://x", "sqlite:", "jsonl: ", "postgres://bad host"],
        (text) =>
          Effect.map(Effect.either(parse(text)), Either.match({ onLeft: (e) => e.message, onRight: () => "parsed" }))
      )
      const help = "use sqlite:<file>, jsonl:<directory>, postgres://user:password@host:port/database, or memory"
      assert.deepStrictEqual(refused, [
        `--store "mysql://x" is not a store: ${help}`,
        `--store "sqlite:" names no file: ${help}`,
        `--store "jsonl: " names no directory: ${help}`,
        `--store "postgres://bad host" is not a valid URL: ${help}`
      ])
    }))
})
