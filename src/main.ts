import { runTimerService } from "./run-timer-service.js";

await runTimerService();
