/** Account areas that take API keys only: characters (and the catalog chat checks slugs against), billing usage. */
export { listCharacters, getCharacter, CHARACTER_SORTS, type Character, type ListCharactersOptions } from "./characters.js";
export { characterCatalog, CharacterCatalog } from "./character-catalog.js";
export {
  getUsage,
  modelOfSku,
  usageByModel,
  USAGE_CURRENCIES,
  type UsageCurrency,
  type UsageRange,
  type UsageEntry,
  type ModelUsage,
  type UsageReport,
} from "./billing.js";
