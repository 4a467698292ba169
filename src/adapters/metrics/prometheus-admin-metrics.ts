import { Counter, type Registry } from "prom-client";
import { ADMIN_ACTIONS, type AdminAction, type AdminActionMetrics } from "../../app/admin/operator-actions.js";

/** `timer_admin_actions_total{action}` (CONTRACT §14), on the service's registry. */
export class PrometheusAdminMetrics implements AdminActionMetrics {
  readonly #actions: Counter<"action">;

  constructor(registry: Registry) {
    this.#actions = new Counter({
      name: "timer_admin_actions_total",
      help: "Operator actions taken over HTTP, by action (retry, cancel, retry_bulk, cancel_prefix).",
      labelNames: ["action"] as const,
      registers: [registry],
    });
    for (const action of ADMIN_ACTIONS) this.#actions.inc({ action }, 0);
  }

  actionTaken(action: AdminAction): void {
    this.#actions.inc({ action });
  }
}
