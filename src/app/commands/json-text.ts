/**
 * JSON.stringify, but without its recursion limit: `data` may legally be nested thousands of levels
 * deep within 16 KiB, where V8's recursive stringify throws RangeError. The iterative path runs only
 * then, so ordinary data costs one native call.
 */
export function toJsonText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return stringifyIteratively(value);
  }
}

/**
 * How deeply arrays and objects nest in `value` (a scalar is 0, `[]` is 1), counted without recursion
 * and only up to `limit + 1`, so that any input costs at most its size.
 */
export function jsonDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const pending: { readonly value: unknown; readonly depth: number }[] = [{ value, depth: 0 }];
  while (pending.length > 0) {
    const { value: item, depth } = pending.pop()!;
    if (item === null || typeof item !== "object") continue;
    const inner = depth + 1;
    if (inner > deepest) deepest = inner;
    if (deepest > limit) return deepest;
    for (const child of Object.values(item)) pending.push({ value: child, depth: inner });
  }
  return deepest;
}

type Frame = { readonly close: string; readonly items: Iterator<[string | undefined, unknown]>; first: boolean };

function stringifyIteratively(root: unknown): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  const open = (value: unknown): void => {
    if (Array.isArray(value)) {
      out.push("[");
      stack.push({ close: "]", items: value.map((v): [undefined, unknown] => [undefined, v])[Symbol.iterator](), first: true });
    } else if (value !== null && typeof value === "object") {
      out.push("{");
      stack.push({ close: "}", items: Object.entries(value)[Symbol.iterator](), first: true });
    } else {
      // Leaves: JSON.parse produced only strings, finite-or-not numbers, booleans and null.
      out.push(JSON.stringify(value) ?? "null");
    }
  };
  open(root);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const next = frame.items.next();
    if (next.done === true) {
      out.push(frame.close);
      stack.pop();
      continue;
    }
    if (!frame.first) out.push(",");
    frame.first = false;
    const [key, value] = next.value;
    if (key !== undefined) out.push(`${JSON.stringify(key)}:`);
    open(value);
  }
  return out.join("");
}
