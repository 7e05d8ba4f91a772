/**
 * Tokens, scopes, body size and rate over real HTTP: each refusal is the typed error with its documented status,
 * and the OpenAPI document lists them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, Message } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Effect, Either, Redacted, TestClock } from "effect"
import { request } from "node:http"
import { Server, ServerError } from "../src/index.js"
import { serve, tokens } from "./support.js"

/** A raw request (no typed client): status, media type and body text. */
const raw = (
  url: string,
  init: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: string } = {}
) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, type: response.headers.get("content-type"), body: await response.text() }
  })

/**
 * A POST whose body is sent chunked (no Content-Length): `size` bytes of JSON. Its status, or the error that ended
 * the request.
 */
const chunked = (url: string, token: string, size: number) =>
  Effect.async<number | string>((resume) => {
    const req = request(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "transfer-encoding": "chunked" }
    }, (res) => {
      res.resume()
      resume(Effect.succeed(res.statusCode ?? 0))
    })
    req.on("error", (e) => resume(Effect.succeed(e.message)))
    req.write(JSON.stringify({ title: "x".repeat(size) }))
    req.end()
  })

describe("auth and limits", () => {
  it.live("no token or an unknown one is 401; a token without the scope is 403", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory)
      const reader = yield* server.client("read-secret")
      const sender = yield* server.client("send-secret")
      const stranger = yield* server.client("who-knows")
      const { id } = yield* sender.sessions.create({ payload: {} })

      const none = yield* raw(`${server.baseUrl}/sessions`)
      assert.strictEqual(none.status, 401)
      assert.strictEqual(none.type, "application/problem+json")
      assert.strictEqual(JSON.parse(none.body)._tag, "Unauthorized")
      const unknown = yield* Effect.flip(stranger.sessions.list())
      assert.strictEqual(unknown._tag, "Unauthorized")
      assert.isTrue(ServerError.isServerError(unknown)) // the typed client decodes the refusal into its marked class

      // read: lists and shows, cannot send
      assert.strictEqual((yield* reader.sessions.list()).length, 1)
      const refused = yield* Effect.flip(
        reader.agent.followup({ path: { id }, payload: { message: Message.make("hello") } })
      )
      assert.strictEqual(refused._tag, "Forbidden")
      assert.ok(refused._tag === "Forbidden" && refused.needed === "send")
      const create = yield* Effect.flip(reader.sessions.create({ payload: {} }))
      assert.strictEqual(create._tag, "Forbidden")
      // send: cannot remove a session; admin can
      const remove = yield* Effect.flip(sender.sessions.remove({ path: { id } }))
      assert.ok(remove._tag === "Forbidden" && remove.needed === "admin")
      const admin = yield* server.client("admin-secret")
      yield* admin.sessions.remove({ path: { id } })
      assert.deepStrictEqual(yield* reader.sessions.list(), [])

      // a browser's EventSource cannot set headers: the token may come as ?access_token=
      const { id: other } = yield* sender.sessions.create({ payload: {} })
      const viaQuery = yield* raw(`${server.baseUrl}/sessions/${other}/snapshot?access_token=read-secret`)
      assert.strictEqual(viaQuery.status, 200)
      assert.strictEqual(JSON.parse(viaQuery.body).lastSeq, -1)
    }).pipe(Effect.scoped))

  it.live("a body over the limit is 413 when declared, cut off when sent chunked; nothing is accepted", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [], { maxBodyBytes: 4096 })
      const sender = yield* server.client()
      const { id } = yield* sender.sessions.create({ payload: { id: Ids.SessionId.make("s") } })
      const big = yield* Effect.flip(
        sender.agent.followup({ path: { id }, payload: { message: Message.make("x".repeat(5000)) } })
      )
      assert.strictEqual(big._tag, "PayloadTooLarge")
      assert.ok(big._tag === "PayloadTooLarge" && big.limit === 4096)
      // the connection is closed under the request (socket hang up, or a reset while it still writes)
      assert.isString(yield* chunked(`${server.baseUrl}/sessions`, "send-secret", 5000))
      assert.strictEqual(yield* chunked(`${server.baseUrl}/sessions`, "send-secret", 100), 201)
      assert.deepStrictEqual(yield* sender.agent.inbox({ path: { id } }), [])
      assert.strictEqual((yield* sender.sessions.list()).length, 2)
      const snapshot = yield* sender.sessions.snapshot({ path: { id }, urlParams: {} })
      assert.deepStrictEqual(snapshot.events, [])
    }).pipe(Effect.scoped))

  it.scoped("a token over its rate is 429 until the clock refills its bucket (TestClock)", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [], { rateLimit: { burst: 2, perSecond: 1 } })
      const reader = yield* server.client("read-secret")
      const sender = yield* server.client("send-secret")
      yield* reader.sessions.list()
      yield* reader.sessions.list()
      const third = yield* Effect.flip(reader.sessions.list())
      assert.ok(third._tag === "TooManyRequests" && third.retryAfterMillis === 1000)
      // another token has its own bucket
      yield* sender.sessions.list()
      yield* TestClock.adjust("999 millis")
      assert.strictEqual((yield* Effect.flip(reader.sessions.list()))._tag, "TooManyRequests")
      yield* TestClock.adjust("1 millis")
      yield* reader.sessions.list()
      assert.strictEqual((yield* Effect.flip(reader.sessions.list()))._tag, "TooManyRequests")
      yield* TestClock.adjust("10 seconds")
      yield* reader.sessions.list()
      yield* reader.sessions.list()
      assert.strictEqual((yield* Effect.flip(reader.sessions.list()))._tag, "TooManyRequests")
    }))

  it.live("/openapi.json lists every route and the refusals with their statuses; /docs serves a page", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory)
      const spec = JSON.parse((yield* raw(`${server.baseUrl}/openapi.json`)).body)
      const routes = Object.entries(spec.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)
      ).sort()
      assert.deepStrictEqual(routes, [
        "DELETE /sessions/{id}",
        "DELETE /sessions/{id}/goal",
        "GET /sessions",
        "GET /sessions/{id}",
        "GET /sessions/{id}/approvals",
        "GET /sessions/{id}/events",
        "GET /sessions/{id}/goal",
        "GET /sessions/{id}/inbox",
        "GET /sessions/{id}/records",
        "GET /sessions/{id}/snapshot",
        "POST /sessions",
        "POST /sessions/{id}/approve",
        "POST /sessions/{id}/batch",
        "POST /sessions/{id}/cancel",
        "POST /sessions/{id}/compact",
        "POST /sessions/{id}/demote",
        "POST /sessions/{id}/edit",
        "POST /sessions/{id}/followup",
        "POST /sessions/{id}/fork",
        "POST /sessions/{id}/goal/pause",
        "POST /sessions/{id}/goal/resume",
        "POST /sessions/{id}/inject",
        "POST /sessions/{id}/move",
        "POST /sessions/{id}/promote",
        "POST /sessions/{id}/receipt",
        "POST /sessions/{id}/retry",
        "POST /sessions/{id}/send",
        "POST /sessions/{id}/steer",
        "POST /sessions/{id}/withdraw",
        "PUT /sessions/{id}/goal"
      ])
      const followup = spec.paths["/sessions/{id}/followup"].post
      for (const status of ["200", "400", "401", "403", "404", "409", "413", "429", "500", "503"]) {
        assert.ok(status in followup.responses, `followup documents ${status}`)
      }
      assert.deepStrictEqual(Object.keys(spec.components.securitySchemes), ["bearer"])
      const docs = yield* raw(`${server.baseUrl}/docs`)
      assert.strictEqual(docs.status, 200)
      assert.include(docs.body, "swagger")
    }).pipe(Effect.scoped))

  it.live("a token granted some sessions reaches those only: others are 403 naming the session, lists hide them, it cannot make sessions (R244)", () =>
    Effect.gen(function*() {
      const granted = Ids.SessionId.make("granted")
      const other = Ids.SessionId.make("other")
      const server = yield* serve(SessionStore.layerMemory, [], {
        tokens: [...tokens, {
          name: "kiosk",
          scopes: ["send"],
          secret: Redacted.make("kiosk-secret"),
          sessions: [granted]
        }]
      })
      const admin = yield* server.client("admin-secret")
      yield* admin.sessions.create({ payload: { id: granted } })
      yield* admin.sessions.create({ payload: { id: other } })
      const kiosk = yield* server.client("kiosk-secret")

      // its own session: read and send as its scope allows
      assert.deepStrictEqual((yield* kiosk.sessions.list()).map((s) => s.id), [granted])
      assert.strictEqual((yield* kiosk.sessions.show({ path: { id: granted } })).id, granted)
      const sent = yield* kiosk.agent.inject({ path: { id: granted }, payload: { message: Message.make("context") } })
      assert.deepStrictEqual(
        yield* kiosk.agent.receipt({ path: { id: granted }, payload: { id: sent } }).pipe(
          Effect.map((r) => r._tag)
        ),
        "applied"
      )

      // another session: every kind of route refuses it with the session named, and nothing reaches that session
      const refusals = yield* Effect.all([
        Effect.flip(kiosk.sessions.show({ path: { id: other } })),
        Effect.flip(kiosk.sessions.snapshot({ path: { id: other }, urlParams: {} })),
        Effect.flip(kiosk.agent.followup({ path: { id: other }, payload: { message: Message.make("hello") } })),
        Effect.flip(kiosk.agent.inbox({ path: { id: other } })),
        Effect.flip(kiosk.goal.status({ path: { id: other } }))
      ])
      for (const refused of refusals) {
        assert.ok(refused._tag === "Forbidden" && refused.session === other, JSON.stringify(refused))
      }
      const events = yield* raw(`${server.baseUrl}/sessions/${other}/events?access_token=kiosk-secret`)
      assert.strictEqual(events.status, 403)
      assert.strictEqual(JSON.parse(events.body).session, other)
      assert.deepStrictEqual(yield* admin.agent.inbox({ path: { id: other } }), [])
      assert.strictEqual((yield* admin.sessions.snapshot({ path: { id: other }, urlParams: {} })).lastSeq, -1)

      // it cannot make a session (it could not reach one it made)
      const create = yield* Effect.flip(kiosk.sessions.create({ payload: {} }))
      assert.ok(create._tag === "Forbidden" && create.session === undefined)
      const fork = yield* Effect.flip(kiosk.sessions.fork({ path: { id: granted }, payload: {} }))
      assert.strictEqual(fork._tag, "Forbidden")
      assert.strictEqual((yield* admin.sessions.list()).length, 2)
    }).pipe(Effect.scoped))

  it("HARNESS_SERVER_TOKENS is name:scope:secret, comma or space separated; a bad entry names its position", () => {
    const ok = Server.parseTokens(Redacted.make("web:send:abc:def, ops:admin:xyz kiosk:read@s1+s2:k"))
    assert.ok(Either.isRight(ok))
    assert.deepStrictEqual(
      ok.right.map((t) => [t.name, t.scopes, Redacted.value(t.secret), t.sessions]),
      [["web", ["send"], "abc:def", undefined], ["ops", ["admin"], "xyz", undefined], ["kiosk", ["read"], "k", [
        "s1",
        "s2"
      ]]]
    )
    assert.deepStrictEqual(
      Server.parseTokens(Redacted.make("kiosk:read@:k")),
      Either.left("token 1 (kiosk) grants an empty session id: use scope@id+id")
    )
    assert.deepStrictEqual(
      Server.parseTokens(Redacted.make("web:write:abc")),
      Either.left(
        "token 1 (web) has scope \"write\": use read, send or admin"
      )
    )
    assert.deepStrictEqual(
      Server.parseTokens(Redacted.make("a:read:x b:read")),
      Either.left(
        "token 2 is not name:scope:secret"
      )
    )
    assert.deepStrictEqual(
      Server.parseTokens(Redacted.make("a:read:x a:send:y")),
      Either.left(
        "token name a is given twice"
      )
    )
  })

  it.live("every refusal is problem details: the server's own (404) and the agent's (409) as application/problem+json", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory)
      const sender = yield* server.client("send-secret")
      const { id } = yield* sender.sessions.create({ payload: {} })
      const post = (path: string, body: unknown) =>
        raw(`${server.baseUrl}${path}`, {
          method: "POST",
          headers: { authorization: "Bearer send-secret", "content-type": "application/json" },
          body: JSON.stringify(body)
        })
      const missing = yield* post(`/sessions/${Ids.SessionId.make("no-such-session")}/followup`, {
        message: Message.make("hi")
      })
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.type, "application/problem+json")
      assert.strictEqual(JSON.parse(missing.body)._tag, "SessionNotFound")
      const refused = yield* post(`/sessions/${id}/edit`, { id: "nobody", message: Message.make("x") })
      assert.strictEqual(refused.status, 409, refused.body)
      assert.strictEqual(refused.type, "application/problem+json")
      assert.deepInclude(JSON.parse(refused.body), { _tag: "InboxChangeError", id: "nobody", reason: "unknown" })
      const invalid = yield* post(`/sessions/${id}/followup`, { message: { content: [] } })
      assert.strictEqual(invalid.status, 400)
      // the one exception (README): the platform's own decode refusal
      assert.strictEqual(invalid.type, "application/json")
      assert.strictEqual(JSON.parse(invalid.body)._tag, "HttpApiDecodeError")
      // the typed client reads the same bodies back into its classes
      const typed = yield* Effect.flip(
        sender.agent.edit({
          path: { id },
          payload: { id: Ids.AgentMessageId.make("nobody"), message: Message.make("x") }
        })
      )
      assert.strictEqual(typed._tag, "InboxChangeError")
    }).pipe(Effect.scoped))
})
