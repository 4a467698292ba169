#!/usr/bin/env node
// Committed, so npm links the command even before dist/ is built (npm ci links bins before `prepare` builds).
import "../dist/cli.js";
