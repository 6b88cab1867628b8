/** The signal and deadline matrix (matrix.ts), the second half of the entry points. */
import { ENTRIES } from "./entries.js";
import { defineMatrix } from "./matrix.js";

defineMatrix(ENTRIES.slice(13));
