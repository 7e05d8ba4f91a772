/**
 * Redaction of URLs and text the CLI prints (#37.6), and visible control characters (#37.7): examples at the edges,
 * then properties over generated secrets.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { safe, visible } from "../src/internal/output.js"
import { redactText, redactUrl } from "../src/internal/redact.js"

describe("redactUrl", () => {
  it("redacts the userinfo password and secret query values, keeps the rest", () => {
    assert.strictEqual(
      redactUrl("postgres://user:pw@host:5432/db?sslmode=require&password=zz"),
      "postgres://user:<redacted>@host:5432/db?sslmode=require&password=<redacted>"
    )
    assert.strictEqual(
      redactUrl("https://x.example/v1?api_key=S&model=m"),
      "https://x.example/v1?api_key=<redacted>&model=m"
    )
    assert.strictEqual(redactUrl("http://localhost:8080/v1"), "http://localhost:8080/v1")
    assert.strictEqual(
      redactUrl("https://h/?Key=1&sig=2&X-Amz-Signature=3"),
      "https://h/?Key=<redacted>&sig=<redacted>&X-Amz-Signature=<redacted>"
    )
  })

  it("redacts a password that breaks the URL (unencoded @, / or :)", () => {
    assert.strictEqual(redactUrl("postgres://u:p@ss@h/db"), "postgres://u:<redacted>@h/db")
    assert.strictEqual(redactUrl("postgres://u:pa/ss@host/db"), "postgres://u:<redacted>@host/db")
    assert.notInclude(redactText("--store \"postgres://u:se:cret@h:port/x\" is not a valid URL"), "se:cret")
  })

  it("redacts keyword passwords in free text", () => {
    assert.strictEqual(redactText("host=h password=secret dbname=x"), "host=h password=<redacted> dbname=x")
  })

  const secret = FastCheck.stringMatching(/^[A-Za-z0-9!$%*+,;=~-]{4,24}$/)
  const key = FastCheck.constantFrom("api_key", "key", "token", "access_token", "password", "sig", "secret", "apiKey")

  it.prop(
    "no generated password or secret query value survives, in a URL or in text around one",
    [secret, secret, key],
    ([password, value, name]) => {
      const url = `postgres://user:${password}@db.example:5432/x?sslmode=disable&${name}=${value}`
      const redacted = redactUrl(url)
      const inText = redactText(`cannot open ${url}: connection refused`)
      return [redacted, inText].every((text) => !text.includes(`:${password}@`) && !text.includes(`=${value}`)) &&
        redacted.includes("db.example")
    }
  )
})

describe("visible", () => {
  it("shows escape sequences, bells, carriage returns and bidi overrides as text; keeps newlines and tabs", () => {
    assert.strictEqual(visible("a\x1b]0;title\x07b"), "a\\x1b]0;title\\x07b")
    assert.strictEqual(visible("\x1b[2J\x1b]52;c;aGk=\x07"), "\\x1b[2J\\x1b]52;c;aGk=\\x07")
    assert.strictEqual(visible("over\rwrite"), "over\\rwrite")
    assert.strictEqual(visible("line\r\nnext\tcol"), "line\nnext\tcol")
    assert.strictEqual(visible("\u009b31m \u202egnp.exe"), "\\x9b31m \\u202egnp.exe")
  })

  it.prop(
    "the result holds no control character but newline and tab",
    [FastCheck.string({ unit: "binary" })],
    ([text]) =>
      // eslint-disable-next-line no-control-regex
      !/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/.test(visible(text))
  )
})

describe("safe (errors and diagnostics as printed)", () => {
  it("redacts URL credentials and shows control characters", () => {
    assert.strictEqual(
      safe("\x1b[2J cannot reach https://u:pw@h/v1?api_key=K1 (refused)"),
      "\\x1b[2J cannot reach https://u:<redacted>@h/v1?api_key=<redacted> (refused)"
    )
  })
})
