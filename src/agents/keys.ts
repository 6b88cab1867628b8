/**
 * The names the spend-limit middleware writes, apart from it: a UI that reads `spend.warning` events or the
 * marker on messages imports them from the main entry without loading `@langchain/langgraph`.
 */

/** the custom event the middleware dispatches once a run passes its warning threshold */
export const SPEND_WARNING_EVENT = "spend.warning";
/** the key our own messages carry in `additional_kwargs` (refusals and the final message) */
export const SPEND_LIMIT_KEY = "spend_limit";
