/**
 * Heap measurement for the memory bench and the memory tests: a full GC when V8 lets us force one
 * (`--expose-gc` set at run time), the heap in use, and the heap once finalizers have run.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** V8's `gc()`, or undefined where it cannot be had (measurements are then noisier). */
export const gc: (() => void) | undefined = (() => {
  try {
    setFlagsFromString("--expose-gc");
    return runInNewContext("gc") as () => void;
  } catch {
    return undefined;
  }
})();

/** The heap in use after a full GC. */
export function heapUsed(): number {
  gc?.();
  return process.memoryUsage().heapUsed;
}

/** The heap after full GCs with turns between them: finalizers run, then what they freed is collected too. */
export async function settledHeap(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc?.();
    await new Promise<void>((r) => setTimeout(r, 5));
  }
  return heapUsed();
}
