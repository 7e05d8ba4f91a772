/**
 * A server on loopback for the tests: `Server.layer` over Node's HTTP server on port 0, a session store, a
 * scripted model, and typed clients for the tokens below.
 */
import type { LanguageModel } from "@effect/ai"
import { HttpServer } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import type { SessionStore } from "@harness/session"
import { ScriptedModel } from "@harness/testkit"
import { Context, Effect, Layer, Redacted } from "effect"
import type { Scope } from "effect"
import { Client, Server } from "../src/index.js"

/** The tokens every test server accepts: one per scope. */
export const tokens: ReadonlyArray<Server.Token> = [
  { name: "reader", scopes: ["read"], secret: Redacted.make("read-secret") },
  { name: "sender", scopes: ["send"], secret: Redacted.make("send-secret") },
  { name: "root", scopes: ["admin"], secret: Redacted.make("admin-secret") }
]

export interface Running {
  readonly baseUrl: string
  readonly port: number
  readonly model: ScriptedModel.Service
  /** A typed client with the given token (default: the `send` one). */
  readonly client: (token?: string) => Effect.Effect<Client.Client>
}

/** The HTTP client the tests use (Node's `http`). */
export const httpClient = NodeHttpClient.layer

/** The loopback address of the server in `context`. */
export const addressOf = (context: Context.Context<HttpServer.HttpServer>) => {
  const server = Context.get(context, HttpServer.HttpServer)
  const port = server.address._tag === "TcpAddress" ? server.address.port : 0
  return { baseUrl: `http://127.0.0.1:${port}`, port }
}

/**
 * Serves on 127.0.0.1:0 in the current scope over `store`, with `replies` scripted.
 */
export const serve = (
  store: Layer.Layer<SessionStore.SessionStore, unknown>,
  replies: ReadonlyArray<ScriptedModel.Reply> = [],
  options: Partial<Server.Options<LanguageModel.LanguageModel>> = {}
): Effect.Effect<Running, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      Server.layer({ tokens, ...options }).pipe(
        Layer.provideMerge(Server.layerNode()),
        Layer.provideMerge(ScriptedModel.layer(replies)),
        Layer.provide(store)
      )
    )
    const { baseUrl, port } = addressOf(context)
    return {
      baseUrl,
      port,
      model: Context.get(context, ScriptedModel.ScriptedModel),
      client: (token = "send-secret") => Client.make({ baseUrl, token }).pipe(Effect.provide(httpClient))
    }
  })
