import assert from "node:assert/strict";
import { cronWords } from "./cron_words.ts";

Deno.test("cron words: the common schedules in words, others none", () => {
  const cases: [string, string][] = [
    ["", "Off: no scheduled backups"],
    ["0 3 * * *", "Every day at 03:00 UTC"],
    ["30 2 * * *", "Every day at 02:30 UTC"],
    ["0 0 3 * * *", "Every day at 03:00 UTC"],
    ["0 3,15 * * *", "Every day at 03:00 and 15:00 UTC"],
    ["0 4 * * 1", "Every Monday at 04:00 UTC"],
    ["0 4 * * 0,6", "Every Sunday and Saturday at 04:00 UTC"],
    ["0 4 * * 7", "Every Sunday at 04:00 UTC"],
    ["0 4 * * mon-fri", "Every weekday at 04:00 UTC"],
    ["0 1 1 * *", "On the 1st of every month at 01:00 UTC"],
    ["0 1 2,22 * *", "On the 2nd and 22nd of every month at 01:00 UTC"],
    ["0 * * * *", "Every hour, on the hour"],
    ["15 * * * *", "Every hour at minute 15"],
    ["0 */6 * * *", "Every 6 hours (from 00:00 UTC)"],
    ["*/15 * * * *", "Every 15 minutes"],
    ["@daily", "Every day at 00:00 UTC"],
    ["@weekly", "Every Sunday at 00:00 UTC"],
    // No words: the expression is shown alone.
    ["0 3 * 6 *", ""],
    ["0 3 1 * 1", ""],
    ["5 0 3 * * *", ""],
    ["0 25 * * *", ""],
    ["1-5 3 * * *", ""],
    ["@nonsense", ""],
    ["* *", ""],
  ];
  for (const [cron, words] of cases) {
    assert.equal(cronWords(cron), words, cron);
  }
});
