/**
 * Whether the standard variables ask for span export (CONTRACT §13): an OTLP endpoint is set and the
 * SDK is not disabled. Apart from the SDK so that a service without it never loads it.
 */
export function otelExportConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}
