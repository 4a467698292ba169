/**
 * A NATS header value must be printable ASCII on one line. The service's own messages use a few
 * typographic signs; they are spelled out in ASCII so that the header still reads right (a format
 * hint `±hh:mm` must not become `?hh:mm`). Anything else outside printable ASCII (a requester's
 * member name, say) becomes `?`. The JSON body carries the full text.
 */

const ASCII_SPELLING: Readonly<Record<string, string>> = {
  "±": "+/-",
  "…": "...",
  "−": "-",
  "–": "-",
  "—": "-",
  "≤": "<=",
  "≥": ">=",
  "→": "->",
  "×": "x",
  "‘": "'",
  "’": "'",
  "“": '"',
  "”": '"',
};

/** The longest header value written: an error message is a sentence, not a document. */
const MAX_HEADER_CHARS = 512;

export function headerText(text: string): string {
  return text.replace(/[^\x20-\x7E]/gu, (character) => ASCII_SPELLING[character] ?? "?").slice(0, MAX_HEADER_CHARS);
}
