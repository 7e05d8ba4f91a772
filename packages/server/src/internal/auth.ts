/**
 * Bearer tokens, their scopes, and a token bucket per token on the `Clock`.
 */
import { Clock, Effect, Redacted, Ref } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import type { Scope } from "../ServerError.js"

/** A token the server accepts; with `sessions`, it reaches those sessions only (a per-session grant). */
export interface Token {
  readonly name: string
  readonly secret: Redacted.Redacted
  readonly scopes: ReadonlyArray<Scope>
  readonly sessions?: ReadonlyArray<string> | undefined
}

/** A token bucket: `burst` requests at once, refilled at `perSecond`. */
export interface RateLimit {
  readonly burst: number
  readonly perSecond: number
}

const rank: Record<Scope, number> = { read: 0, send: 1, admin: 2 }

/** Whether `scopes` grant `needed` (each scope includes the ones before it: read < send < admin). */
export const grants = (scopes: ReadonlyArray<Scope>, needed: Scope): boolean =>
  scopes.some((scope) => rank[scope] >= rank[needed])

/** Whether `token` may reach session `id`: every session, unless the token is granted some only. */
export const reaches = (token: { readonly sessions?: ReadonlyArray<string> | undefined }, id: string): boolean =>
  token.sessions === undefined || token.sessions.includes(id)

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest()

/** Finds the token whose secret is `presented`, comparing digests in constant time. */
export const lookup = (tokens: ReadonlyArray<Token>) => {
  const table = tokens.map((token) => ({ token, digest: digest(Redacted.value(token.secret)) }))
  return (presented: string): Token | undefined => {
    if (presented === "") return undefined
    const wanted = digest(presented)
    let found: Token | undefined
    for (const entry of table) {
      if (timingSafeEqual(entry.digest, wanted)) found = entry.token
    }
    return found
  }
}

interface Bucket {
  readonly tokens: number
  readonly at: number
}

/**
 * A token bucket per key. `take(key)` answers 0 when the request may go (and counts it), else how many milliseconds
 * until one more is allowed. Contract: time is `Clock`'s, so `TestClock` drives it; a key starts full.
 */
export const makeLimiter = (limit: RateLimit) =>
  Effect.map(Ref.make(new Map<string, Bucket>()), (buckets) => ({
    take: (key: string): Effect.Effect<number> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Ref.modify(buckets, (map) => {
          const bucket = map.get(key) ?? { tokens: limit.burst, at: now }
          const tokens = Math.min(limit.burst, bucket.tokens + ((now - bucket.at) * limit.perSecond) / 1000)
          const next = new Map(map)
          if (tokens >= 1) {
            next.set(key, { tokens: tokens - 1, at: now })
            return [0, next] as const
          }
          next.set(key, { tokens, at: now })
          return [Math.ceil(((1 - tokens) * 1000) / limit.perSecond), next] as const
        }))
  }))
