// Lint and format gate, offline. Formatting is Effect's own: the `@effect/dprint` rule embeds the dprint
// TypeScript formatter (no downloads) with the settings of Effect-TS/effect's eslint config. The rule set stays
// close to Effect's; `npm run lint:fix` applies the formatter and every other autofix.
import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import sortDestructureKeys from "eslint-plugin-sort-destructure-keys"
import tseslint from "typescript-eslint"

export default tseslint.config(
  {
    ignores: [
      "**/node_modules",
      "**/dist",
      "**/build",
      "**/coverage",
      "scratchpad/**",
      "**/*.md",
      "packages/*/docs/**",
      "packages/bench/.bundle/**",
      "packages/bench/.baseline/**"
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    plugins: {
      "sort-destructure-keys": sortDestructureKeys
    },
    languageOptions: {
      parser: tseslint.parser,
      ecmaVersion: 2022,
      sourceType: "module"
    },
    linterOptions: {
      reportUnusedDisableDirectives: "error"
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      "sort-imports": "off",
      // tsc (noUnusedLocals / noUnusedParameters) already reports unused bindings.
      "no-unused-vars": "off",
      "@typescript-eslint/no-unused-vars": "off",
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "sort-destructure-keys/sort-destructure-keys": "error",
      "@typescript-eslint/array-type": ["error", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@typescript-eslint/no-wrapper-object-types": "off",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/explicit-function-return-type": "off",
      "@typescript-eslint/explicit-module-boundary-types": "off",
      "@typescript-eslint/no-array-constructor": "off",
      "@typescript-eslint/no-use-before-define": "off",
      "@typescript-eslint/no-namespace": "off",
      "@effect/dprint": [
        "error",
        {
          config: {
            indentWidth: 2,
            lineWidth: 120,
            semiColons: "asi",
            quoteStyle: "alwaysDouble",
            trailingCommas: "never",
            operatorPosition: "maintain",
            "arrowFunction.useParentheses": "force"
          }
        }
      ]
    }
  },
  {
    files: ["packages/*/src/**/*"],
    rules: {
      "no-console": "error",
      // Spreading a large array into `push` overflows the stack. Only in src: the selector cannot tell
      // `Array.push` from other `push` methods (tests call `ScriptedModel.push(...replies)`), and tests push
      // a handful of items.
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.property.name='push'] > SpreadElement.arguments",
          message: "Do not use spread arguments in Array.push"
        }
      ]
    }
  },
  {
    // The agent and the session log run their code per turn and per append. A generator function created per call
    // (`(x) => Effect.gen(function*() {...})`) costs V8 a new map on its first run and keeps everything it captures
    // alive through every minor GC until the next full one (ADR 0036): write `Effect.fnUntraced(function*(x) {...})`
    // once, at module level.
    files: ["packages/agent/src/**/*", "packages/session/src/**/*"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.property.name='push'] > SpreadElement.arguments",
          message: "Do not use spread arguments in Array.push"
        },
        {
          selector: ":function CallExpression[callee.object.name='Effect'][callee.property.name='gen']",
          message: "A generator function per call: use Effect.fnUntraced(function*(...) {...}) at module level"
        }
      ]
    }
  },
  {
    // The bench is a command-line program: it prints its tables.
    files: ["packages/bench/src/**/*"],
    rules: { "no-console": "off", "no-restricted-syntax": "off" }
  },
  {
    // Plain JavaScript config files: no TypeScript-only rules.
    files: ["**/*.mjs", "**/*.js", "**/*.cjs"],
    ...tseslint.configs.disableTypeChecked
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs", globals: { module: "writable", require: "readonly" } }
  }
)
