import { HttpApiSchema } from "@effect/platform"
import type { Schema } from "effect"

const problemJson: HttpApiSchema.Encoding = { kind: "Json", contentType: "application/problem+json" }

/**
 * A refusal's annotations: its HTTP status (and description, for the OpenAPI document), and its body sent as problem
 * details (RFC 9457): the media type `application/problem+json`, the error's own fields (`_tag`, `message`, …) as
 * the extension members, no `type` (so `about:blank`: the status says what happened). The typed client decodes the
 * body by its schema whatever the media type.
 */
export const problem = <A>(
  options: { readonly status?: number | undefined; readonly description?: string }
): Schema.Annotations.Schema<A> => ({
  ...HttpApiSchema.annotations<A>(options),
  [HttpApiSchema.AnnotationEncoding]: problemJson
})
