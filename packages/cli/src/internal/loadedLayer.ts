/** A layer whose module is loaded when the layer is built: how the store and provider tables keep start-up small. */
import { Effect, Layer } from "effect"

/** The layer `build` makes of the module `load` imports, imported when the layer is built. */
export const loadedLayer = <M, A, E, R>(
  load: () => Promise<M>,
  build: (module: M) => Layer.Layer<A, E, R>
): Layer.Layer<A, E, R> => Layer.unwrapEffect(Effect.map(Effect.promise(load), build))
