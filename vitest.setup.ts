// Runs before every test file: `expect(...).toEqual` compares Effect values (Option, Either, Data, HashMap, …) by
// their `Equal` implementation, as Effect's own tests do.
import { addEqualityTesters } from "@effect/vitest"

addEqualityTesters()
