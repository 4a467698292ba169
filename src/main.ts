import { runTimerService } from "./composition/run-timer-service.js";

await runTimerService();
