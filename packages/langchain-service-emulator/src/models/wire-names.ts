/** The live search-documents tool call's wire names: its id and function name (the client reads the same two). */
export const SEARCH_DOCUMENTS_CALL_ID = "web_search_call";
export const SEARCH_DOCUMENTS_CALL_NAME = "web_search";
