/**
 * The `harness` command line and its offline model.
 *
 * @since 0.0.0
 */

/** @since 0.0.0 */
export * as Cli from "./Cli.js"
/** @since 0.0.0 */
export * as CliError from "./CliError.js"
/** @since 0.0.0 */
export * as OfflineModel from "./OfflineModel.js"
/** @since 0.0.0 */
export * as RunEvent from "./RunEvent.js"
/** @since 0.0.0 */
export * as Settings from "./Settings.js"
