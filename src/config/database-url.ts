/**
 * TIMER_DATABASE_URL as it may be logged: user, host, port and database kept, the password and any
 * query parameter that may carry one (`?password=`, `sslpassword`, `sslkey`) replaced by `***`.
 * Text that is not a URL is not quoted at all: it might be a password pasted in the wrong place.
 */
export function redactDatabaseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "(not a URL)";
  }
  if (url.password !== "") url.password = "***";
  for (const key of [...url.searchParams.keys()]) {
    if (/pass|key|secret|token/i.test(key)) url.searchParams.set(key, "***");
  }
  return url.toString();
}
