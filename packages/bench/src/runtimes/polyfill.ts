/**
 * `Promise.withResolvers` for Node 20, which the reference loop (`@deepseek-ai/dsh-agent-loop` and its peers) calls
 * at run time. Imported only by the reference adapter, so it is applied only in that runtime's bench process; the
 * Harness and pi processes run on Node 20's own `Promise`.
 */

interface Resolvers<T> {
  readonly promise: Promise<T>
  readonly resolve: (value: T | PromiseLike<T>) => void
  readonly reject: (reason?: unknown) => void
}

// ES2023 typings (this repo's `lib`) do not declare the method, hence `Reflect`.
if (typeof Reflect.get(Promise, "withResolvers") !== "function") {
  const withResolvers = <T>(): Resolvers<T> => {
    let resolve: Resolvers<T>["resolve"] = () => undefined
    let reject: Resolvers<T>["reject"] = () => undefined
    const promise = new Promise<T>((res, rej) => {
      resolve = res
      reject = rej
    })
    return { promise, resolve, reject }
  }
  Object.defineProperty(Promise, "withResolvers", { value: withResolvers, writable: true, configurable: true })
}

export {}
