/**
 * The CLI's errors as one union (the error-family shape of ADR 0018): each member comes back from JSON as the class
 * it was, with the setting or reason it names.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { CliError, CommandError, SettingsError } from "../src/CliError.js"

const roundTrip = (error: CliError): CliError =>
  Schema.decodeUnknownSync(CliError)(JSON.parse(JSON.stringify(Schema.encodeSync(CliError)(error))))

describe("CliError", () => {
  it("a SettingsError keeps the setting it names", () => {
    const back = roundTrip(new SettingsError({ setting: "--store", message: "use sqlite:<file>" }))
    assert.instanceOf(back, SettingsError)
    assert.strictEqual(back._tag === "SettingsError" && back.setting, "--store")
  })

  it("a CommandError keeps its reason", () => {
    const back = roundTrip(new CommandError({ reason: "SessionNotFound", message: "no session s1" }))
    assert.instanceOf(back, CommandError)
    assert.strictEqual(back._tag === "CommandError" && back.reason, "SessionNotFound")
  })
})
